/*
 * bench/eventhandler/loops.c - the invoke loops, compiled once per site
 * kind (-DMARK_SITE=jump|immediate|generic, BENCH_EH_KIND names the
 * functions) and once as the baselines (BENCH_EH_KIND=base): no call at
 * all, and a hand-written array of function pointers.
 *
 * Each loop body is one EVENTHANDLER_INVOKE(bench_ev, i) (or its hand-written
 * equivalent) plus an empty asm volatile that keeps the loop from being
 * deleted; the loop functions are 64-byte aligned and not inlined.
 */
#include <mark/eventhandler.h>
#include <stdint.h>

#include "eh_bench.h"

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define FN(prefix) CAT(prefix, BENCH_EH_KIND)

#if BENCH_EH_IS_BASE
struct bench_fn_slot bench_array[8];
unsigned bench_array_count;

__attribute__((noinline, aligned(64))) void bench_loop_none(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		__asm__ volatile("");
}

__attribute__((noinline, aligned(64))) void bench_loop_array(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		/* What a hand-written notifier does: a count and an array, both
		 * re-read because a callee may change them. */
		unsigned count = __atomic_load_n(&bench_array_count, __ATOMIC_RELAXED);
		for (unsigned j = 0; j < count; j++)
			bench_array[j].fn(bench_array[j].arg, (int)i);
		__asm__ volatile("");
	}
}
#else
__attribute__((noinline, aligned(64))) void FN(bench_loop_eh_)(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		EVENTHANDLER_INVOKE(bench_ev, (int)i);
		__asm__ volatile("");
	}
}
#endif
