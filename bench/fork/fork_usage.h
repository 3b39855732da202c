/*
 * bench/fork/fork_usage.h - what the fork benchmarks measure, shared by
 * fork_loop.c and fork_server.c: wall-clock time, and the CPU time and
 * minor page faults of the process and its waited-for children.
 */
#ifndef MARK_BENCH_FORK_USAGE_H
#define MARK_BENCH_FORK_USAGE_H

#include <sys/resource.h>
#include <time.h>

static inline double fork_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static inline double fork_tv_us(struct timeval tv)
{
	return (double)tv.tv_sec * 1e6 + (double)tv.tv_usec;
}

/* User + system µs of this process and its waited-for children; *faults
 * gets their page faults, minor and major (a traced child's first store
 * into a page of its fresh buffer file, mapped without read-ahead, is a
 * major fault: the kernel zero-fills the page as if reading it). */
static inline double fork_cpu_us(double *faults)
{
	struct rusage self, children;
	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &children);
	*faults = (double)self.ru_minflt + (double)self.ru_majflt + (double)children.ru_minflt +
		  (double)children.ru_majflt;
	return fork_tv_us(self.ru_utime) + fork_tv_us(self.ru_stime) + fork_tv_us(children.ru_utime) +
	       fork_tv_us(children.ru_stime);
}

#endif
