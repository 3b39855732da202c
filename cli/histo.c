/* Durations in bounded memory: see histo.h. */
#include "histo.h"

#include <stdlib.h>
#include <string.h>

int histo_add_slow(struct histo *h, uint64_t v)
{
	unsigned sub, c = histo_chunk_of(v, &sub);
	if (!h->chunk[c] && !(h->chunk[c] = calloc(HISTO_SUB, sizeof(uint64_t)))) {
		h->oom = true;
		return -1;
	}
	h->chunk[c][sub]++;
	if (h->count == 0 || v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	h->total = h->total + v < h->total ? UINT64_MAX : h->total + v;
	if (h->count < HISTO_EXACT) {
		/* Grown by doubling from HISTO_EXACT_FIRST: a row of one value
		 * (stats --by gives many) takes 64 bytes here, not 8 KiB. */
		if (h->count == h->exact_cap) {
			uint32_t cap = h->exact_cap ? h->exact_cap * 2 : HISTO_EXACT_FIRST;
			uint64_t *grown = realloc(h->exact, cap * sizeof(uint64_t));
			if (!grown) {
				h->oom = true;
				return -1;
			}
			h->exact = grown;
			h->exact_cap = cap;
		}
		h->exact[h->count] = v;
	} else if (h->exact) {
		/* from here on the histogram answers: the memory stays bounded */
		free(h->exact);
		h->exact = NULL;
		h->exact_cap = 0;
	}
	h->count++;
	return 0;
}

/*
 * Put the k-th smallest of v[0..n) at v[k] (quickselect).  The pivot is
 * the middle of three values taken at positions from a fixed pseudo-random
 * sequence, so no order of the input (sorted, reversed, crafted) makes it
 * quadratic in practice; the three-way partition keeps runs of equal
 * values linear too.  n <= HISTO_EXACT.
 */
static uint64_t select_kth(uint64_t *v, size_t n, size_t k)
{
	size_t lo = 0, hi = n;
	uint64_t seed = 42;
	while (hi - lo > 1) {
		size_t m = hi - lo;
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t a = v[lo + (seed >> 33) % m], b = v[lo + (seed >> 13) % m], c = v[lo + (seed >> 3) % m];
		uint64_t pivot = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
		/* [lo, lt) < pivot, [lt, i) == pivot, [gt, hi) > pivot */
		size_t lt = lo, i = lo, gt = hi;
		while (i < gt) {
			if (v[i] < pivot) {
				uint64_t t = v[i]; v[i] = v[lt]; v[lt] = t;
				lt++, i++;
			} else if (v[i] > pivot) {
				gt--;
				uint64_t t = v[i]; v[i] = v[gt]; v[gt] = t;
			} else {
				i++;
			}
		}
		if (k < lt)
			hi = lt;
		else if (k >= gt)
			lo = gt;
		else
			return v[k];
	}
	return v[k];
}

uint64_t histo_percentile(struct histo *h, unsigned p)
{
	if (h->count == 0)
		return 0;
	uint64_t rank = (h->count * p + 99) / 100;   /* ceil(n * p / 100), >= 1 */
	if (rank == 0)
		rank = 1;
	if (h->exact)
		return select_kth(h->exact, (size_t)h->count, (size_t)(rank - 1));
	uint64_t seen = 0;
	for (unsigned c = 0; c < HISTO_CHUNKS; c++) {
		if (!h->chunk[c])
			continue;
		for (unsigned s = 0; s < HISTO_SUB; s++) {
			seen += h->chunk[c][s];
			if (seen < rank)
				continue;
			uint64_t lo, width;
			if (c == 0) {
				lo = s;
				width = 1;
			} else {
				unsigned shift = c - 1;   /* e - HISTO_SUB_BITS */
				lo = (uint64_t)(HISTO_SUB | s) << shift;
				width = (uint64_t)1 << shift;
			}
			uint64_t mid = lo + width / 2;
			return mid < h->min ? h->min : mid > h->max ? h->max : mid;
		}
	}
	return h->max;   /* only if the counts missed values (oom) */
}

uint64_t histo_log2_count(const struct histo *h, int k)
{
	if (k < 0)
		return h->chunk[0] ? h->chunk[0][0] : 0;
	uint64_t n = 0;
	if (k < (int)HISTO_SUB_BITS) {
		for (uint64_t v = (uint64_t)1 << k; h->chunk[0] && v < (uint64_t)2 << k; v++)
			n += h->chunk[0][v];
		return n;
	}
	unsigned c = (unsigned)k - HISTO_SUB_BITS + 1;
	for (unsigned s = 0; c < HISTO_CHUNKS && h->chunk[c] && s < HISTO_SUB; s++)
		n += h->chunk[c][s];
	return n;
}

void histo_free(struct histo *h)
{
	free(h->exact);
	for (unsigned c = 0; c < HISTO_CHUNKS; c++)
		free(h->chunk[c]);
	memset(h, 0, sizeof(*h));
}
