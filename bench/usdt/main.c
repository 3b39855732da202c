/*
 * bench/usdt/main.c - seed 003's experiment: cycles (or ns) per iteration of
 * the loop of loops.c for each variant at -O0 and -O2, every probe disabled.
 * Repetition-major (each variant once per repetition) so that drifts of the
 * machine spread over every row.  Output: bench/common/bench.h's R lines,
 * table "usdt", row "<variant>_<O0|O2>", column "per_iter".
 *
 * usage: bench_usdt [--reps N] [--scale S]
 */
#include "bench.h"

#define DECL(v, o) void usdt_loop_##v##_##o(int n);
#define VARIANTS(X)                                                                        \
	X(none, O0) X(sdt_sem, O0) X(sdt, O0) X(jump, O0) X(enabled, O0) X(generic, O0)   \
	X(none, O2) X(sdt_sem, O2) X(sdt, O2) X(jump, O2) X(enabled, O2) X(generic, O2)
VARIANTS(DECL)

struct variant {
	const char *name;
	void (*fn)(int);
};
#define ENTRY(v, o) { #v "_" #o, usdt_loop_##v##_##o },
static const struct variant variants[] = { VARIANTS(ENTRY) };
#define NV (sizeof(variants) / sizeof(variants[0]))

int main(int argc, char **argv)
{
	struct bench_opts o;
	bench_parse_opts(argc, argv, &o);
	bench_init(argv[0]);
	int n = (int)(100000000 * o.scale);   /* seed 003 used 2^30; 1e8 keeps a run in seconds */
	if (n < 1000)
		n = 1000;
	double results[NV][64];
	int reps = o.reps > 64 ? 64 : o.reps;
	for (unsigned v = 0; v < NV; v++)
		variants[v].fn(n / 10);   /* warm up: page in, train predictors */
	for (int r = 0; r < reps; r++) {
		for (unsigned v = 0; v < NV; v++) {
			uint64_t t0 = bench_start();
			variants[v].fn(n);
			uint64_t t1 = bench_stop();
			results[v][r] = (double)(t1 - t0) / n;
		}
	}
	for (unsigned v = 0; v < NV; v++)
		bench_result("usdt", variants[v].name, "per_iter", results[v], reps);
	return 0;
}
