/*
 * bench/common/site_variant.h - SITE(): the marker statement of one
 * benchmark variant, chosen by -DBENCH_VARIANT=NAME (one translation unit
 * per variant).  Used by table 1 (disabled/loops.c) and table 4
 * (size/site.c) so both measure the very same statement:
 *
 *   out        MARK() with -DMARK_DISABLE: compiled out
 *   generic    MARK() with -DMARK_SITE=generic
 *   immediate  MARK() with -DMARK_SITE=immediate
 *   jump       MARK() with -DMARK_SITE=jump
 *   sdt        sys/sdt.h probe behind its semaphore test (dtrace -h/-G)
 *   lttng      LTTng-UST tracepoint
 *   nop5       five one-byte NOPs
 *   nop2       two NOPs: 66 66 90 66 90
 *   nopl       one NOP with ModRM: 0f 1f 44 00 00
 *
 * The marker is the seeds' MARK(subsys_mark1, "%d %p", 1, NULL).
 */
#ifndef BENCH_SITE_VARIANT_H
#define BENCH_SITE_VARIANT_H

#define BENCH_V_out 1
#define BENCH_V_generic 2
#define BENCH_V_immediate 3
#define BENCH_V_jump 4
#define BENCH_V_sdt 5
#define BENCH_V_lttng 6
#define BENCH_V_nop5 7
#define BENCH_V_nop2 8
#define BENCH_V_nopl 9
#define BENCH_CAT_(a, b) a##b
#define BENCH_CAT(a, b) BENCH_CAT_(a, b)
#define BENCH_V BENCH_CAT(BENCH_V_, BENCH_VARIANT)
#define FN(base) BENCH_CAT(base, BENCH_VARIANT)

#if BENCH_V >= BENCH_V_out && BENCH_V <= BENCH_V_jump
#include <mark/mark.h>
#define SITE() MARK(subsys_mark1, "%d %p", 1, NULL)
#elif BENCH_V == BENCH_V_sdt
#include "bench_sdt.h"
#define SITE()                                      \
	do {                                        \
		if (BENCH_SUBSYS_MARK1_ENABLED())   \
			BENCH_SUBSYS_MARK1(1, NULL); \
	} while (0)
#elif BENCH_V == BENCH_V_lttng
#include "bench_tp.h"
#define SITE() tracepoint(bench_lttng, subsys_mark1, 1, NULL)
#elif BENCH_V == BENCH_V_nop5
#define SITE() __asm__ volatile(".byte 0x90, 0x90, 0x90, 0x90, 0x90")
#elif BENCH_V == BENCH_V_nop2
#define SITE() __asm__ volatile(".byte 0x66, 0x66, 0x90, 0x66, 0x90")
#elif BENCH_V == BENCH_V_nopl
#define SITE() __asm__ volatile(".byte 0x0f, 0x1f, 0x44, 0x00, 0x00")
#else
#error "unknown BENCH_VARIANT"
#endif

#endif
