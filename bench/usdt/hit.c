/*
 * bench/usdt/hit.c - the cost of one enabled hit.  One loop of N hits of one
 * probe; prints the wall-clock nanoseconds per iteration.  bench/usdt/run.sh
 * runs it three ways and subtracts the disabled loop:
 *
 *   -DMARK_SITE=jump     with MARK_TRACE=DIR MARK_ENABLE=loop0: one hit
 *                        recorded by mark's built-in tracer (ring buffer)
 *   -DMARK_SITE=generic  under `bpftrace -e 'usdt:BIN:mark:loop0 {@ = count()}'`:
 *                        bpftrace enables the site through the semaphore;
 *                        one hit = the uprobe trap + the BPF program
 *   -DHIT_SDT            the same with a plain sys/sdt.h probe (what
 *                        bpftrace users pay today)
 *
 * usage: bench_usdt_hit_* N
 */
#ifdef HIT_SDT
#include <sys/sdt.h>
#else
#include <mark/mark.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static __attribute__((noinline)) void loop(int n)
{
	for (int v = 0; v < n; v++) {
#ifdef HIT_SDT
		STAP_PROBE1(mark, loop0, v);
#else
		MARK(loop0, "%d", v);
#endif
		__asm__ volatile("" : : "r"(v));
	}
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1000000;
	loop(n / 10);   /* warm up (and let a tracer finish attaching its consumer) */
	double t0 = now_ns();
	loop(n);
	double t1 = now_ns();
	printf("ns_per_iter %.3f\n", (t1 - t0) / n);
	return 0;
}
