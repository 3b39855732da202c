/* libmark's read-side sections: see mark_read_lock_slow() in probes.c. */
#ifndef MARK_CORE_RCU_H
#define MARK_CORE_RCU_H
#include "core/internal.h"
#include <urcu-bp.h>

/*
 * liburcu-bp's per-thread reader pointer, NULL while this thread is not
 * registered: its exported TLS symbol urcu_bp_reader, which its inline
 * read side reads too (part of liburcu-bp.so.8's ABI).  Declared under a
 * name of ours so that this works with and without _LGPL_SOURCE (the event
 * handlers call liburcu-bp out of line under ASan+UBSan).  Only compared
 * with NULL here: the record it points to may be misaligned for its
 * declared type (see eventhandler.c), so nothing here dereferences it.
 */
#ifdef _LGPL_SOURCE
/* liburcu-bp's own declaration: the compiler merges this load with those of
 * the inlined urcu_bp_read_lock() (one TLS access in mark__fire). */
#define MARK_URCU_BP_READER() URCU_TLS(urcu_bp_reader)
#else
struct urcu_bp_reader;
extern __thread struct urcu_bp_reader *mark_urcu_bp_reader __asm__("urcu_bp_reader");
#define MARK_URCU_BP_READER() mark_urcu_bp_reader
#endif

/* Enter: the inline liburcu-bp section, or (unregistered thread) the slow path. */
static inline void mark_read_lock(void)
{
	if (__builtin_expect(MARK_URCU_BP_READER() == NULL, 0))
		mark_read_lock_slow();
	else
		urcu_bp_read_lock();
}
static inline void mark_read_unlock(void)
{
	if (__builtin_expect(__atomic_load_n(&mark_fallback_depth, __ATOMIC_RELAXED) != 0, 0))
		mark_read_unlock_fallback();
	else
		urcu_bp_read_unlock();
}

#endif
