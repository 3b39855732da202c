/*
 * bench/usdt/loops.c - seed 003's loop, one variant per object:
 *
 *   none      for (v = 0; v < n; v++) ;                       (no probe)
 *   sdt_sem   if (semaphore) STAP_PROBE1(bench, loop0, v);     (dtrace -G style)
 *   sdt       STAP_PROBE1(bench, loop0, v);                    (plain sys/sdt.h)
 *   jump      MARK(loop0, "%d", v);                            (mark jump site)
 *   enabled   if (MARK_ENABLED(loop0)) MARK(loop0, "%d", v);   (check + probe)
 *   generic   MARK(loop0, "%d", v) with MARK_SITE=generic      (flag = semaphore)
 *
 * Compiled with -DUSDT_VARIANT=<name> and -O0 or -O2 (-DUSDT_OPT=O0|O2 names
 * the function).  Every variant keeps the empty asm that makes v live in a
 * register each iteration: without it -O2 deletes the probe-less loop (the
 * seed's "experiment 8"), and with it the loops differ only by the probe.
 */
#include <mark/mark.h>
#include <stdint.h>

#define CAT3_(a, b, c) a##_##b##_##c
#define CAT3(a, b, c) CAT3_(a, b, c)
#define FN CAT3(usdt_loop, USDT_VARIANT, USDT_OPT)

#define V_none 1
#define V_sdt_sem 2
#define V_sdt 3
#define V_jump 4
#define V_enabled 5
#define V_generic 6
#define VCAT_(x) V_##x
#define VCAT(x) VCAT_(x)
#define VARIANT VCAT(USDT_VARIANT)

#if VARIANT == V_sdt_sem
/* What `dtrace -h/-G` generate: the note names the semaphore, which lives
 * in section .probes (static here: one copy per -O level in one program). */
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>
__extension__ static unsigned short bench_loop0_semaphore __attribute__((unused, section(".probes")));
#elif VARIANT == V_sdt
#include <sys/sdt.h>
#endif

void FN(int n);

void FN(int n)
{
	for (int v = 0; v < n; v++) {
#if VARIANT == V_sdt_sem
		if (__builtin_expect(bench_loop0_semaphore, 0))
			STAP_PROBE1(bench, loop0, v);
#elif VARIANT == V_sdt
		STAP_PROBE1(bench, loop0, v);
#elif VARIANT == V_jump || VARIANT == V_generic
		MARK(loop0, "%d", v);
#elif VARIANT == V_enabled
		if (MARK_ENABLED(loop0))
			MARK(loop0, "%d", v);
#endif
		__asm__ volatile("" : : "r"(v));
	}
}
