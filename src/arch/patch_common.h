/*
 * What the code patchers of the architectures share (src/arch/common/):
 * the core sync, page protections read once per batch and restored
 * exactly, and the batch driver mark_arch_patch() (patch.h), which checks
 * every site (mark_arch_check_batch() among the rest), makes its pages
 * writable and calls the architecture's mark_arch_write_batch().  Callers
 * hold the registry lock: one batch at a time.
 */
#ifndef MARK_ARCH_PATCH_COMMON_H
#define MARK_ARCH_PATCH_COMMON_H

#include "patch.h"

/*
 * Make every thread of the process execute a context-synchronising
 * instruction before this returns (membarrier SYNC_CORE, or the plain
 * expedited command, whose return to user space by exception return is
 * itself context-synchronising on x86 (iret) and aarch64 (eret)), so that
 * no core keeps executing instructions fetched before the sync.  0, or
 * -errno with mark_last_error() saying why (membarrier unavailable).
 */
int mark_arch_sync_cores(void);

/* ---- provided by each architecture's patch.c ---- */

/* Bytes a site of this kind occupies (at most sizeof(mark_patch.old)). */
size_t mark_arch_site_len(const struct mark_patch *p);

/*
 * Refuse a batch the architecture cannot write safely (-errno with
 * mark_last_error() saying why), before any page is made writable: a
 * refused batch never touches page protections.  0 to go on.
 */
int mark_arch_check_batch(const struct mark_patch *p, size_t count);

/*
 * Write the batch (sorted by address, checked by mark_arch_check_batch,
 * every site checked valid, its original bytes in ->old, its pages
 * writable) with the architecture's
 * protocol, syncing with mark_arch_sync_cores().  All or nothing: on a
 * failed sync, every site gets its original bytes back and -errno is
 * returned.
 */
int mark_arch_write_batch(struct mark_patch *p, size_t count);

#endif
