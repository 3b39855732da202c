/*
 * bench/eventhandler/main.c - what an event costs (issue 6, seed 004).
 *
 * Table "eventhandler" (cycles per invocation, median over --reps >= 5):
 *   rows: none (an empty loop: no call at all), array (a hand-written array
 *   of function pointers), eh_jump / eh_immediate / eh_generic
 *   (EVENTHANDLER_INVOKE with each site kind);
 *   columns: h0, h1, h8 = 0, 1 and 8 handlers registered.
 * Table "eventhandler_size" (bytes): text, data and text+data of libmark
 * built with and without src/eventhandler (paths given by CMake), and the
 * difference - the seed's "size increase of around 2k".
 *
 * Prints R/I lines (bench/common/bench.h) on stdout and a readable table
 * of medians on stderr.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "eh_bench.h"

static unsigned long handler_calls;

/* The handler: as small as a handler can be, and not inlinable. */
static __attribute__((noinline)) void bench_handler(void *arg, int value)
{
	__asm__ volatile("" : : "r"(arg), "r"(value) : "memory");
	handler_calls++;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(const double *v, int n)
{
	double *s = malloc((size_t)n * sizeof(*s));
	memcpy(s, v, (size_t)n * sizeof(*s));
	qsort(s, (size_t)n, sizeof(*s), cmp_double);
	double m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	free(s);
	return m;
}

#define MAX_REPS 101
static double medians[5][3];

static void measure(int row, const char *rowname, void (*loop)(uint64_t), int col, const char *colname,
		    uint64_t n, int reps)
{
	double v[MAX_REPS];
	loop(n / 10);   /* warm up: caches, branch predictors, the list lookup */
	for (int r = 0; r < reps; r++) {
		uint64_t t0 = bench_start();
		loop(n);
		uint64_t t1 = bench_stop();
		v[r] = (double)(t1 - t0) / (double)n;
	}
	bench_result("eventhandler", rowname, colname, v, reps);
	medians[row][col] = median(v, reps);
}

static int size_of(const char *path, unsigned long *text, unsigned long *data, unsigned long *bss)
{
	char cmd[4096];
	snprintf(cmd, sizeof(cmd), "size --format=berkeley '%s'", path);
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	char line[1024];
	int ok = 0;
	if (fgets(line, sizeof(line), p) && fgets(line, sizeof(line), p))
		ok = sscanf(line, "%lu %lu %lu", text, data, bss) == 3;
	pclose(p);
	return ok ? 0 : -1;
}

static void measure_size(void)
{
	unsigned long t1, d1, b1, t0, d0, b0;
	if (size_of(BENCH_LIB_WITH, &t1, &d1, &b1) || size_of(BENCH_LIB_WITHOUT, &t0, &d0, &b0)) {
		bench_skip("eventhandler_size", "libmark", "size(1) failed on %s or %s (binutils missing?)",
			   BENCH_LIB_WITH, BENCH_LIB_WITHOUT);
		return;
	}
	if (t1 + d1 <= t0 + d0) {
		/* Not a measurement: the two libraries do not differ by src/eventhandler. */
		bench_skip("eventhandler_size", "libmark",
			   "libmark without src/eventhandler (%lu bytes text+data) is not smaller than "
			   "with it (%lu): the size row's build is wrong, see bench/eventhandler/CMakeLists.txt",
			   t0 + d0, t1 + d1);
		return;
	}
	double v;
	v = (double)t1; bench_result_unit("eventhandler_size", "with", "text", "bytes", &v, 1);
	v = (double)d1; bench_result_unit("eventhandler_size", "with", "data", "bytes", &v, 1);
	v = (double)t0; bench_result_unit("eventhandler_size", "without", "text", "bytes", &v, 1);
	v = (double)d0; bench_result_unit("eventhandler_size", "without", "data", "bytes", &v, 1);
	v = (double)(t1 + d1) - (double)(t0 + d0);
	bench_result_unit("eventhandler_size", "added", "text_data", "bytes", &v, 1);
	fprintf(stderr, "\nlibmark.so size(1)     text     data      bss\n");
	fprintf(stderr, "  with eventhandler %8lu %8lu %8lu\n", t1, d1, b1);
	fprintf(stderr, "  without           %8lu %8lu %8lu\n", t0, d0, b0);
	fprintf(stderr, "  added             %8ld %8ld %8ld   (text+data: %ld bytes)\n", (long)(t1 - t0),
		(long)(d1 - d0), (long)(b1 - b0), (long)((t1 + d1) - (t0 + d0)));
}

int main(int argc, char **argv)
{
	struct bench_opts opts;
	bench_parse_opts(argc, argv, &opts);
	if (opts.reps > MAX_REPS)
		opts.reps = MAX_REPS;
	bench_init(argv[0]);
	uint64_t n = (uint64_t)(2e6 * opts.scale);
	if (n < 1000)
		n = 1000;

	static const char *rows[5] = { "none", "array", "eh_jump", "eh_immediate", "eh_generic" };
	static void (*const loops[5])(uint64_t) = { bench_loop_none, bench_loop_array, bench_loop_eh_jump,
						    bench_loop_eh_immediate, bench_loop_eh_generic };
	static const char *cols[3] = { "h0", "h1", "h8" };
	static const unsigned counts[3] = { 0, 1, 8 };
	static int args[8];
	eventhandler_tag tags[8];
	unsigned registered = 0;

	for (int c = 0; c < 3; c++) {
		/* Same handlers, same arguments, in both the list and the array. */
		while (registered < counts[c]) {
			tags[registered] = EVENTHANDLER_REGISTER(bench_ev, bench_handler, &args[registered],
								 EVENTHANDLER_PRI_ANY);
			if (!tags[registered]) {
				fprintf(stderr, "EVENTHANDLER_REGISTER failed: %s\n", mark_last_error());
				return 1;
			}
			bench_array[registered].fn = bench_handler;
			bench_array[registered].arg = &args[registered];
			registered++;
		}
		__atomic_store_n(&bench_array_count, registered, __ATOMIC_RELAXED);
		for (int r = 0; r < 5; r++) {
			if (r == 0 && c > 0)
				continue;   /* "no call at all" has no handler count */
			handler_calls = 0;
			measure(r, rows[r], loops[r], c, cols[c], n, opts.reps);
			/* The measurement is real only if the handlers ran. */
			uint64_t expect = (uint64_t)counts[c] * (n / 10 + n * (uint64_t)opts.reps);
			if (r > 0 && handler_calls != expect) {
				fprintf(stderr, "%s %s: %lu handler calls, expected %llu\n", rows[r], cols[c],
					handler_calls, (unsigned long long)expect);
				return 1;
			}
		}
	}
	for (unsigned i = 0; i < registered; i++)
		EVENTHANDLER_DEREGISTER(bench_ev, tags[i]);

	fprintf(stderr, "\n%s per invocation (median of %d reps of %llu)\n", bench_unit(), opts.reps,
		(unsigned long long)n);
	fprintf(stderr, "%-14s %8s %8s %8s\n", "", "0", "1", "8 handlers");
	for (int r = 0; r < 5; r++) {
		fprintf(stderr, "%-14s", rows[r]);
		for (int c = 0; c < 3; c++) {
			if (r == 0 && c > 0)
				fprintf(stderr, " %8s", "-");
			else
				fprintf(stderr, " %8.2f", medians[r][c]);
		}
		fprintf(stderr, "\n");
	}
	measure_size();
	return 0;
}
