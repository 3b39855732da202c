/*
 * Code patching, one implementation per architecture.
 *
 * The registry describes what each site must become; the architecture
 * writes the bytes safely while other threads may be executing them.
 * Callers hold the registry lock, so at most one batch is in flight.
 */
#ifndef MARK_ARCH_PATCH_H
#define MARK_ARCH_PATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum mark_patch_kind { MARK_PATCH_JUMP = 1, MARK_PATCH_IMMEDIATE = 2 };

struct mark_patch {
	uint8_t *code;         /* first byte of the site's instruction         */
	uint8_t *target;       /* jump: out-of-line block                       */
	uint8_t kind;          /* enum mark_patch_kind                          */
	bool arm;              /* the state to reach                            */
	uint8_t old[5];        /* filled by mark_arch_patch: the bytes before   */
};

/*
 * Bring every site of `patches` to its requested state.  Either every
 * site is changed or none is: a site whose bytes are not a mark
 * instruction (a debugger's breakpoint) refuses the batch before any
 * write; code pages are made writable before any byte is written, and a
 * refusal (W^X policy, SELinux execmod, seccomp) returns -EACCES or -EPERM;
 * a core sync that fails (membarrier unavailable) puts back the original
 * bytes of every site.  mark_last_error() names the cause.  Each page gets
 * back exactly the protection it had.  Threads may execute the sites
 * meanwhile, with any signal mask: they never trap or wait.
 * Sorts `patches` by address.
 */
int mark_arch_patch(struct mark_patch *patches, size_t count);

/* Whether the site's bytes are what `arm == false` expects (sanity check at load). */
bool mark_arch_site_valid(const uint8_t *code, uint8_t kind);

/* Number of core-serialising syncs issued so far (for tests and benchmarks). */
unsigned long mark_arch_sync_count(void);

#endif
