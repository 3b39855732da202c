/*
 * bench/disabled/main.c - table 1 driver: cycles per loop for each variant
 * of loops.c, repetition-major (every variant once per repetition) so slow
 * drifts of the machine spread over all rows instead of biasing one.
 *
 * Built twice: bench_disabled (every variant but LTTng) and, with
 * BENCH_LTTNG_ONLY, bench_disabled_lttng (compiled-out baseline + LTTng),
 * so liblttng-ust's threads never run beside the other rows.
 */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

#define DECL(v)                                                \
	void loop_empty_##v(uint64_t n);                       \
	void loop_memcpy_##v(uint64_t n, char *dst, const char *src);

#ifdef BENCH_LTTNG_ONLY
#define VARIANTS(X) X(out) X(lttng)
#else
#define VARIANTS(X) X(out) X(generic) X(immediate) X(jump) X(sdt) X(nop5) X(nop2) X(nopl)
#endif
VARIANTS(DECL)

struct variant {
	const char *name;
	void (*empty)(uint64_t);
	void (*copy)(uint64_t, char *, const char *);
};
#ifdef BENCH_LTTNG_ONLY
/* Rows of this process are keyed apart: its baseline runs beside liblttng-ust. */
#define ENTRY(v) { "lttngproc_" #v, loop_empty_##v, loop_memcpy_##v },
#else
#define ENTRY(v) { #v, loop_empty_##v, loop_memcpy_##v },
#endif
static const struct variant variants[] = { VARIANTS(ENTRY) };
#define NV (sizeof(variants) / sizeof(variants[0]))

int main(int argc, char **argv)
{
	struct bench_opts o;
	bench_parse_opts(argc, argv, &o);
	bench_init(argv[0]);

	uint64_t n_empty = (uint64_t)(10000000 * o.scale);
	uint64_t n_copy = (uint64_t)(200000 * o.scale);
	/* One allocation: source and destination 8 KiB + 256 bytes apart, so the
	 * copy never runs into 4 KiB store-to-load aliasing by accident. */
	char *buf = aligned_alloc(4096, 16384);
	char *src = buf, *dst = buf + 8192 + 256;
	memset(src, 1, 4096);
	memset(dst, 2, 4096);
	bench_info("loops_empty", "%llu", (unsigned long long)n_empty);
	bench_info("loops_memcpy", "%llu", (unsigned long long)n_copy);

	double *res_e = calloc(NV * (size_t)o.reps, sizeof(double));
	double *res_c = calloc(NV * (size_t)o.reps, sizeof(double));

	/* Warm-up: page in code and buffers, let the frequency settle. */
	for (size_t v = 0; v < NV; v++) {
		variants[v].empty(n_empty / 10);
		variants[v].copy(n_copy / 10, dst, src);
	}
	/*
	 * One repetition of a variant = the best of BENCH_SUBRUNS runs of n/SUBRUNS
	 * iterations.  The seeds ran with interrupts disabled; a user-space
	 * process cannot, and one preemption inflates a run several times over
	 * on a shared machine.  The best sub-run is the interrupt-free figure;
	 * every variant is treated the same, and min–max still shows the
	 * spread between repetitions.
	 */
	for (int r = 0; r < o.reps; r++) {
		for (size_t v = 0; v < NV; v++) {
			uint64_t ne = n_empty / BENCH_SUBRUNS, nc = n_copy / BENCH_SUBRUNS;
			double be = 1e300, bc = 1e300;
			for (int s = 0; s < BENCH_SUBRUNS; s++) {
				uint64_t t0 = bench_start();
				variants[v].empty(ne);
				uint64_t t1 = bench_stop();
				double x = (double)(t1 - t0) / (double)ne;
				be = x < be ? x : be;
			}
			for (int s = 0; s < BENCH_SUBRUNS; s++) {
				uint64_t t0 = bench_start();
				variants[v].copy(nc, dst, src);
				uint64_t t1 = bench_stop();
				double x = (double)(t1 - t0) / (double)nc;
				bc = x < bc ? x : bc;
			}
			res_e[v * o.reps + r] = be;
			res_c[v * o.reps + r] = bc;
		}
	}
	for (size_t v = 0; v < NV; v++) {
		bench_result("t1", variants[v].name, "empty", &res_e[v * o.reps], o.reps);
		bench_result("t1", variants[v].name, "memcpy", &res_c[v * o.reps], o.reps);
	}
	free(res_e);
	free(res_c);
	free(buf);
	return 0;
}
