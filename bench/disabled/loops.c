/*
 * bench/disabled/loops.c - table 1: the loops of seeds 000/001, compiled
 * once per variant (each kind in its own translation unit):
 *
 *   BENCH_VARIANT=out        -DMARK_DISABLE: the marker is compiled out
 *   BENCH_VARIANT=generic    -DMARK_SITE=generic
 *   BENCH_VARIANT=immediate  -DMARK_SITE=immediate
 *   BENCH_VARIANT=jump       -DMARK_SITE=jump
 *   BENCH_VARIANT=sdt        sys/sdt.h probe behind its semaphore test (dtrace -h/-G)
 *   BENCH_VARIANT=lttng      LTTng-UST tracepoint (not enabled)
 *   BENCH_VARIANT=nop5       five one-byte NOPs
 *   BENCH_VARIANT=nop2       two NOPs: 66 66 90 66 90
 *   BENCH_VARIANT=nopl       one NOP with ModRM: 0f 1f 44 00 00
 *
 * The marker is the seeds' MARK(subsys_mark1, "%d %p", 1, NULL).  The
 * empty asm volatile statements keep the compiler from deleting or
 * collapsing the loops: their bodies are exactly the site plus what the
 * seeds had (nothing, or one 4096-byte memcpy).
 */
#include <stdint.h>
#include <string.h>

#include "site_variant.h"

void FN(loop_empty_)(uint64_t n);
void FN(loop_memcpy_)(uint64_t n, char *dst, const char *src);

__attribute__((noinline, aligned(64))) void FN(loop_empty_)(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		SITE();
		__asm__ volatile("");
	}
}

__attribute__((noinline, aligned(64))) void FN(loop_memcpy_)(uint64_t n, char *dst, const char *src)
{
	for (uint64_t i = 0; i < n; i++) {
		SITE();
		memcpy(dst, src, 4096);
		/* dst is read by "someone": the copy cannot be dropped or hoisted. */
		__asm__ volatile("" : : "r"(dst), "r"(src) : "memory");
	}
}
