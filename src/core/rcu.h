/* libmark's read-side sections: see mark_read_lock_slow() in probes.c. */
#ifndef MARK_CORE_RCU_H
#define MARK_CORE_RCU_H
#ifndef _LGPL_SOURCE
#error "define _LGPL_SOURCE before including core/rcu.h (inline urcu-bp read side)"
#endif
#include "core/internal.h"
#include <urcu-bp.h>

/* Enter: the inline liburcu-bp section, or (unregistered thread) the slow path. */
static inline void mark_read_lock(void)
{
	if (__builtin_expect(URCU_TLS(urcu_bp_reader) == NULL, 0))
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
