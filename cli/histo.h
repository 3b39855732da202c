/*
 * A distribution of durations in bounded memory, for `mark stats`.
 *
 * Up to HISTO_EXACT values are kept as they are, so small rows (and every
 * test trace) get true order statistics.  Every value also goes into a
 * log-linear histogram: values below 128 ns have a bucket each (exact);
 * above, each power of two [2^e, 2^(e+1)) is cut into 128 equal buckets.
 * Past HISTO_EXACT values the quantiles come from the histogram: a quantile
 * is its bucket's midpoint, clamped to the exact min and max, so it is off
 * by at most half a bucket, 2^(e-8) for a value >= 2^e: a relative error
 * below 1/256 (0.4%).  count, min, max and total are always exact.
 *
 * Memory: the struct (about 0.5 KiB), the exact values (8 bytes each, in
 * an array grown by doubling from HISTO_EXACT_FIRST, so at most 16 bytes a
 * value and 8 KiB; freed once HISTO_EXACT are exceeded) and 1 KiB per power
 * of two that holds a value (at most 58 of them), whatever the number of
 * values: a histogram of one value takes about 1.6 KiB, of any number at
 * most about 66 KiB.  Not thread-safe: one owner.
 */
#ifndef MARK_CLI_HISTO_H
#define MARK_CLI_HISTO_H

#include <stdbool.h>
#include <stdint.h>

#define HISTO_EXACT 1024
#define HISTO_EXACT_FIRST 8          /* the exact array's first size: doubled as needed */
#define HISTO_SUB_BITS 7
#define HISTO_SUB (1u << HISTO_SUB_BITS)
/* chunk 0: values 0..127; chunk c >= 1: [2^(c+6), 2^(c+7)) */
#define HISTO_CHUNKS (64 - HISTO_SUB_BITS + 1)

struct histo {
	uint64_t count, min, max;
	uint64_t total;              /* saturates at UINT64_MAX (584 years of ns) */
	uint64_t *exact;             /* the values while count <= HISTO_EXACT     */
	uint32_t exact_cap;          /* exact's size in values                    */
	uint64_t *chunk[HISTO_CHUNKS];
	bool oom;                    /* memory ran out: the histogram misses values */
};

/* Add one value.  Returns 0, or -1 when memory ran out (h->oom is set). */
static inline int histo_add(struct histo *h, uint64_t v);
/* histo_add's general case (the first values, a new chunk); callers call histo_add. */
int histo_add_slow(struct histo *h, uint64_t v);

/* Chunk of v, and in *sub its bucket in the chunk: a clz and a shift. */
static inline unsigned histo_chunk_of(uint64_t v, unsigned *sub)
{
	if (v < HISTO_SUB) {
		*sub = (unsigned)v;
		return 0;
	}
	unsigned e = 63u - (unsigned)__builtin_clzll(v);   /* >= HISTO_SUB_BITS */
	*sub = (unsigned)(v >> (e - HISTO_SUB_BITS)) & (HISTO_SUB - 1);
	return e - HISTO_SUB_BITS + 1;
}

/*
 * Inline, as `mark stats` adds a value for nearly every event (the call and
 * the checks of the first values were a tenth of its time): past
 * HISTO_EXACT values, with the value's chunk already there, a value only
 * moves a counter, min, max and total.  The same result as
 * histo_add_slow's, which relies on: once count > HISTO_EXACT, h->exact
 * is NULL (histo_add_slow frees it at the value after the HISTO_EXACT-th,
 * and an allocation failure stops the count before that), and min is set
 * (count > 0).
 */
static inline int histo_add(struct histo *h, uint64_t v)
{
	unsigned sub, c = histo_chunk_of(v, &sub);
	if (__builtin_expect(h->count <= HISTO_EXACT || !h->chunk[c], 0))
		return histo_add_slow(h, v);
	h->chunk[c][sub]++;
	h->min = v < h->min ? v : h->min;
	h->max = v > h->max ? v : h->max;
	uint64_t total;
	h->total = __builtin_add_overflow(h->total, v, &total) ? UINT64_MAX : total;
	h->count++;
	return 0;
}
/* Nearest-rank percentile p (1..100): the smallest value with at least p%
 * of the values at or below it (see above for its error).  0 when empty. */
uint64_t histo_percentile(struct histo *h, unsigned p);
/*
 * The count of values in [2^k, 2^(k+1)) for k >= 0 (k = -1: the value 0),
 * exact whatever the count: bpftrace's hist() buckets.
 */
uint64_t histo_log2_count(const struct histo *h, int k);
void histo_free(struct histo *h);

#endif
