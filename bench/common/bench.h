/*
 * bench/common/bench.h - the clock and the result format shared by every
 * benchmark program.
 *
 * Clock: rdtsc when the CPU says its TSC is invariant (CPUID 0x80000007
 * EDX bit 8: constant rate in every P-/C-state), calibrated against
 * CLOCK_MONOTONIC; otherwise CLOCK_MONOTONIC itself and the unit becomes
 * nanoseconds.  The seeds used rdtsc; "cycles" below are TSC cycles, i.e.
 * reference cycles at the calibrated TSC rate, not core cycles under turbo.
 *
 * Results go to stdout, one line each, parsed by bench/report.py:
 *   R <table> <row> <column> <unit> <v1> <v2> ...   one value per repetition
 *   S <table> <row> <reason...>                      row skipped, and why
 *   I <key> <value...>                               information (clock, notes)
 * Row and column keys are identifiers; report.py maps them to labels.
 */
#ifndef MARK_BENCH_H
#define MARK_BENCH_H

#include <stdint.h>
#include <stdio.h>

#if defined(__x86_64__)
/* Serialising reads: lfence before rdtsc keeps earlier instructions from
 * drifting past the start stamp; rdtscp + lfence keeps later ones from
 * starting before the stop stamp (Intel's recommended pairing). */
static inline uint64_t bench_rdtsc_start(void)
{
	uint32_t lo, hi;
	__asm__ volatile("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi) : : "memory");
	return ((uint64_t)hi << 32) | lo;
}
static inline uint64_t bench_rdtsc_stop(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtscp\n\tlfence" : "=a"(lo), "=d"(hi) : : "rcx", "memory");
	return ((uint64_t)hi << 32) | lo;
}
/* A bare timestamp read, as a tracer does it: no fences. */
static inline uint64_t bench_rdtsc_bare(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}
#endif

/* Set up the clock (detect and calibrate the TSC) and pin this thread to
 * the CPU it runs on, so a measurement never migrates.  Prints I lines. */
void bench_init(const char *program);
/* 1 when the clock is the TSC. */
int bench_use_tsc(void);
/* "cycles" or "ns". */
const char *bench_unit(void);
/* TSC cycles per nanosecond (0 when the TSC is not used). */
double bench_tsc_ghz(void);
/* Start/stop stamps in the unit above. */
uint64_t bench_start(void);
uint64_t bench_stop(void);
/* Wall-clock nanoseconds (CLOCK_MONOTONIC). */
uint64_t bench_ns(void);
/* Pin the calling thread to one CPU (-1: the one it is on now; -2: unpin). */
void bench_pin(int cpu);

/* Command-line: --reps N (>= 5), --scale S (multiplies loop counts). */
struct bench_opts {
	int reps;
	double scale;
	const char *only;   /* --only KEY: run one part of a multi-part program */
	const char *arg;    /* --arg VALUE: program-specific */
};
void bench_parse_opts(int argc, char **argv, struct bench_opts *opts);

/* Output. */
void bench_result(const char *table, const char *row, const char *col, const double *values, int n);
/* Same, with an explicit unit ("ms", "events/s", "bytes", ...). */
void bench_result_unit(const char *table, const char *row, const char *col, const char *unit,
		       const double *values, int n);
void bench_skip(const char *table, const char *row, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void bench_info(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A repetition of a loop benchmark is the best of this many sub-runs
 * (see disabled/main.c for why). */
#define BENCH_SUBRUNS 5

/* Keep a value alive without emitting code for it. */
#define BENCH_KEEP(x) __asm__ volatile("" : : "r"(x))
#define BENCH_BARRIER() __asm__ volatile("" : : : "memory")

#endif
