/*
 * LTTng-UST tracepoint provider for the comparison rows: the same payload as
 * MARK(subsys_mark1, "%d %p", 1, NULL), an int and a pointer.
 */
#undef TRACEPOINT_PROVIDER
#define TRACEPOINT_PROVIDER bench_lttng

#undef TRACEPOINT_INCLUDE
#define TRACEPOINT_INCLUDE "./bench_tp.h"

#if !defined(BENCH_TP_H) || defined(TRACEPOINT_HEADER_MULTI_READ)
#define BENCH_TP_H

#include <stdint.h>
#include <lttng/tracepoint.h>

TRACEPOINT_EVENT(bench_lttng, subsys_mark1,
	TP_ARGS(int, value, void *, ptr),
	TP_FIELDS(
		ctf_integer(int, value, value)
		ctf_integer_hex(uintptr_t, ptr, (uintptr_t)ptr)
	)
)

#endif

#include <lttng/tracepoint-event.h>
