/* bench/lttng/lttng_site.c - the LTTng-UST tracepoint of table 3, in a
 * function of its own like mark's site_once(). */
#include "bench_tp.h"
#include "lttng_site.h"

__attribute__((noinline)) void lttng_once(int value, void *ptr)
{
	tracepoint(bench_lttng, subsys_mark1, value, ptr);
}

int lttng_site_enabled(void)
{
	return tracepoint_enabled(bench_lttng, subsys_mark1) ? 1 : 0;
}
