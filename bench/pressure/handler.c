/*
 * bench/pressure/handler.c - table 2 (seed 002): a handler with 4 markers
 * between two timestamp reads, compiled once per kind (BENCH_VARIANT =
 * out | generic | immediate | jump, with -DMARK_DISABLE or -DMARK_SITE),
 * and a control (BENCH_VARIANT=nopl, -DBENCH_HANDLER_NOPL): four bare
 * 5-byte NOPs in place of the markers.
 * The seed put them in handle_IRQ_event(); here it is a plain function
 * the driver calls right after dirtying 1 MB, so the generic flags (one
 * descriptor cache line each) and the handler's code are cache-cold.
 */
#include <mark/mark.h>
#include <stdint.h>

#include "bench.h"

#define BENCH_CAT_(a, b) a##b
#define BENCH_CAT(a, b) BENCH_CAT_(a, b)
#define FN(base) BENCH_CAT(base, BENCH_VARIANT)

uint64_t FN(handler_)(void);

uint64_t FN(handler_events_);

__attribute__((noinline, aligned(64))) uint64_t FN(handler_)(void)
{
	uint64_t t0 = bench_rdtsc_start();
#ifdef BENCH_HANDLER_NOPL
	/* Control row: the jump kind's four 5-byte NOPs with no marker around
	 * them (no descriptor, no out-of-line block, no frame for one). */
	__asm__ volatile(".byte 0x0f, 0x1f, 0x44, 0x00, 0x00");
	__asm__ volatile(".byte 0x0f, 0x1f, 0x44, 0x00, 0x00");
	__asm__ volatile(".byte 0x0f, 0x1f, 0x44, 0x00, 0x00");
	__asm__ volatile(".byte 0x0f, 0x1f, 0x44, 0x00, 0x00");
#else
	MARK(irq_entry, "%d %p", 1, NULL);
	MARK(irq_handler, "%d %p", 2, NULL);
	MARK(irq_softirq, "%d %p", 3, NULL);
	MARK(irq_exit, "%d %p", 4, NULL);
#endif
	uint64_t t1 = bench_rdtsc_stop();
	FN(handler_events_)++;   /* the seed's "number of events logged" */
	return t1 - t0;
}
