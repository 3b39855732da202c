/*
 * bench/pressure/main.c - table 2 driver.  For each repetition and each
 * kind: `calls` handler calls on an idle cache (the handler called back to
 * back) and `calls` calls each preceded by a 1 MB buffer write (memory
 * pressure).  A sample is the mean cycles per call of one repetition
 * (slowest 1 % of calls dropped, see trimmed_mean()).
 * Needs the TSC: the handler reads it inline, as the seed did.
 */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

#define KINDS(X) X(out) X(generic) X(immediate) X(jump) X(nopl)
#define DECL(k) uint64_t handler_##k(void);
KINDS(DECL)
struct kind {
	const char *name;
	uint64_t (*handler)(void);
};
#define ENTRY(k) { #k, handler_##k },
static const struct kind kinds[] = { KINDS(ENTRY) };
#define NK (sizeof(kinds) / sizeof(kinds[0]))

#define BUF_BYTES (1u << 20)

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/*
 * Mean of the calls after dropping the slowest 1 %: the seed disabled
 * interrupts around its two timestamp reads; here an interrupt or a
 * preemption landing between them (rare, thousands of cycles) is dropped
 * instead of being averaged in.
 */
static double trimmed_mean(uint64_t *v, uint64_t n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	uint64_t keep = n - n / 100, sum = 0;
	for (uint64_t i = 0; i < keep; i++)
		sum += v[i];
	return (double)sum / (double)keep;
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	bench_parse_opts(argc, argv, &o);
	bench_init(argv[0]);
	if (!bench_use_tsc()) {
		for (size_t k = 0; k < NK; k++)
			bench_skip("t2", kinds[k].name, "needs an invariant TSC (the handler reads it inline)");
		return 0;
	}
	uint64_t calls = (uint64_t)(3000 * o.scale) + 100;
	unsigned char *buf = aligned_alloc(4096, BUF_BYTES);
	memset(buf, 0, BUF_BYTES);
	bench_info("pressure_calls", "%llu", (unsigned long long)calls);

	uint64_t *samples = calloc(calls, sizeof(uint64_t));
	double *idle = calloc(NK * (size_t)o.reps, sizeof(double));
	double *pressure = calloc(NK * (size_t)o.reps, sizeof(double));
	for (int r = -1; r < o.reps; r++) {
		for (size_t i = 0; i < NK; i++) {
			/* Rotate the order each repetition: no kind always runs first. */
			size_t k = (i + (size_t)(r < 0 ? 0 : r)) % NK;
			for (uint64_t c = 0; c < calls; c++)
				samples[c] = kinds[k].handler();
			if (r >= 0)
				idle[k * o.reps + r] = trimmed_mean(samples, calls);
			for (uint64_t c = 0; c < calls; c++) {
				memset(buf, (int)c, BUF_BYTES);
				__asm__ volatile("" : : "r"(buf) : "memory");
				samples[c] = kinds[k].handler();
			}
			if (r >= 0)
				pressure[k * o.reps + r] = trimmed_mean(samples, calls);
		}
	}
	for (size_t k = 0; k < NK; k++) {
		bench_result("t2", kinds[k].name, "idle", &idle[k * o.reps], o.reps);
		bench_result("t2", kinds[k].name, "pressure", &pressure[k * o.reps], o.reps);
	}
	free(idle);
	free(pressure);
	free(buf);
	free(samples);
	return 0;
}
