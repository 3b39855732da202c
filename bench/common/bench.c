/*
 * bench/common/bench.c - clock selection and calibration, result output.
 * See bench.h for the output format.  Single-threaded set-up: bench_init()
 * runs before any benchmark thread starts.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

static int use_tsc;
static double tsc_ghz;

uint64_t bench_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int tsc_invariant(void)
{
#if defined(__x86_64__)
	unsigned a, b, c, d;
	if (!__get_cpuid(0x80000000, &a, &b, &c, &d) || a < 0x80000007)
		return 0;
	if (!__get_cpuid(0x80000007, &a, &b, &c, &d))
		return 0;
	return (d >> 8) & 1;
#else
	return 0;
#endif
}

#if defined(__x86_64__)
/* TSC ticks per ns over `ms` milliseconds of CLOCK_MONOTONIC. */
static double calibrate(unsigned ms)
{
	uint64_t n0 = bench_ns(), t0 = bench_rdtsc_start();
	uint64_t n1, t1;
	do {
		n1 = bench_ns();
		t1 = bench_rdtsc_stop();
	} while (n1 - n0 < (uint64_t)ms * 1000000u);
	return (double)(t1 - t0) / (double)(n1 - n0);
}
#endif

void bench_pin(int cpu)
{
	cpu_set_t set;
	if (cpu == -2) {   /* every CPU: threads created afterwards may run anywhere */
		CPU_ZERO(&set);
		for (int i = 0; i < CPU_SETSIZE; i++)
			CPU_SET(i, &set);
		sched_setaffinity(0, sizeof(set), &set);
		return;
	}
	if (cpu < 0)
		cpu = sched_getcpu();
	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

void bench_init(const char *program)
{
	const char *force = getenv("MARK_BENCH_CLOCK");   /* "monotonic" forces the fallback */
	use_tsc = tsc_invariant() && !(force && strcmp(force, "monotonic") == 0);
#if defined(__x86_64__)
	if (use_tsc) {
		/* Three 50 ms calibrations; keep the median so one preemption
		 * does not skew the rate. */
		double r[3];
		for (int i = 0; i < 3; i++)
			r[i] = calibrate(50);
		for (int i = 0; i < 2; i++)
			for (int j = i + 1; j < 3; j++)
				if (r[j] < r[i]) {
					double t = r[i];
					r[i] = r[j];
					r[j] = t;
				}
		tsc_ghz = r[1];
	}
#endif
	bench_pin(-1);
	/* Spin 200 ms so the core leaves any idle frequency before the first
	 * measurement (the first repetitions otherwise run slow). */
	for (uint64_t t0 = bench_ns(); bench_ns() - t0 < 200000000u;)
		__asm__ volatile("");
	bench_info("program", "%s", program);
	bench_info("clock", "%s", use_tsc ? "rdtsc (invariant TSC, CPUID 0x80000007 EDX bit 8)"
					  : "CLOCK_MONOTONIC (no invariant TSC)");
	if (use_tsc)
		bench_info("tsc_ghz", "%.4f", tsc_ghz);
}

int bench_use_tsc(void) { return use_tsc; }
const char *bench_unit(void) { return use_tsc ? "cycles" : "ns"; }
double bench_tsc_ghz(void) { return tsc_ghz; }

uint64_t bench_start(void)
{
#if defined(__x86_64__)
	if (use_tsc)
		return bench_rdtsc_start();
#endif
	return bench_ns();
}

uint64_t bench_stop(void)
{
#if defined(__x86_64__)
	if (use_tsc)
		return bench_rdtsc_stop();
#endif
	return bench_ns();
}

void bench_parse_opts(int argc, char **argv, struct bench_opts *opts)
{
	opts->reps = 5;
	opts->scale = 1.0;
	opts->only = NULL;
	opts->arg = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
			opts->reps = atoi(argv[++i]);
		else if (strcmp(argv[i], "--scale") == 0 && i + 1 < argc)
			opts->scale = atof(argv[++i]);
		else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
			opts->only = argv[++i];
		else if (strcmp(argv[i], "--arg") == 0 && i + 1 < argc)
			opts->arg = argv[++i];
		else {
			fprintf(stderr, "%s: unknown argument '%s'\n"
					"usage: %s [--reps N (>=5)] [--scale S] [--only PART] [--arg VALUE]\n",
				argv[0], argv[i], argv[0]);
			exit(2);
		}
	}
	if (opts->reps < 5)
		opts->reps = 5;   /* the tables promise medians over at least 5 */
	if (opts->scale <= 0)
		opts->scale = 1.0;
}

void bench_result(const char *table, const char *row, const char *col, const double *values, int n)
{
	bench_result_unit(table, row, col, bench_unit(), values, n);
}

void bench_result_unit(const char *table, const char *row, const char *col, const char *unit,
		       const double *values, int n)
{
	printf("R %s %s %s %s", table, row, col, unit);
	for (int i = 0; i < n; i++)
		printf(" %.6g", values[i]);
	printf("\n");
	fflush(stdout);
}

void bench_skip(const char *table, const char *row, const char *fmt, ...)
{
	va_list ap;
	printf("S %s %s ", table, row);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

void bench_info(const char *key, const char *fmt, ...)
{
	va_list ap;
	printf("I %s ", key);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}
