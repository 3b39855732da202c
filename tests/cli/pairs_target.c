/*
 * The program `mark record` runs in the pair tests (tests/cli/test_pairs.py).
 * THREADS threads each run ROUNDS rounds of nested begin/end pairs in every
 * naming convention `mark stats` pairs automatically, then leave a few
 * halves unmatched, so the expected counts are known exactly:
 *
 *   per round (i = 0..ROUNDS-1):
 *     req_begin(id, lock)                      _begin/_end, lock one of 3 names
 *       pg:q-start(i)                          -start/-done (provider "pg")
 *         io__start(i) io__done(i)             __start/__done
 *       pg:q-done(i)
 *       pg:t-start(i) pg:t-end(i)              -start/-end
 *       custom_a(i) custom_b(i)                no convention: --pair custom_a,custom_b
 *     req_end(id)
 *   then once per thread:
 *     io__done(-1)                             an end without a begin
 *     req_begin(-1, "x") pg:q-start(-1) req_end(-1)
 *                                              q-start given up (inner, no end)
 *     pg:t-start(-2)                           open at the end of the trace
 *     lonely_end(0)                            no lonely_begin declared: no pair
 *
 * `pairs_target N spins` instead fires N spin_begin/spin_end pairs (no
 * arguments) on the main thread only: a large trace of small events, for
 * the memory test.
 *
 * `pairs_target K keys` fires 64 pairs p00_begin(k)/p00_end(k) ...
 * p77_begin(k)/p77_end(k) (two octal digits) for k = 0..K-1 (k-major: every pair's k, then
 * k + 1): with `mark stats --by k`, 64 * K rows wanted, for the memory test
 * of --by (the review's many_pairs.c).
 */
#include <mark/mark.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 2

static int rounds = 100;
static const char *const locks[] = { "BufferContent", "WALWrite", "ProcArray" };

#define KEY_PAIR(n) do { MARK(p##n##_begin, "%d", k); MARK(p##n##_end, "%d", k); } while (0)
#define KEY_PAIRS8(t) do { KEY_PAIR(t##0); KEY_PAIR(t##1); KEY_PAIR(t##2); KEY_PAIR(t##3); \
			   KEY_PAIR(t##4); KEY_PAIR(t##5); KEY_PAIR(t##6); KEY_PAIR(t##7); } while (0)

static void keyed_pairs(int keys)
{
	for (int k = 0; k < keys; k++) {
		KEY_PAIRS8(0); KEY_PAIRS8(1); KEY_PAIRS8(2); KEY_PAIRS8(3);
		KEY_PAIRS8(4); KEY_PAIRS8(5); KEY_PAIRS8(6); KEY_PAIRS8(7);
	}
}

static void *worker(void *arg)
{
	int base = (int)(long)arg * 1000000;
	for (int i = 0; i < rounds; i++) {
		int id = base + i;
		const char *lock = locks[i % 3];
		MARK(req_begin, "%d %s", id, lock);
		MARK__SITE(pg, "q-start", "q__start", 0, "i", "%d", i);
		MARK(io__start, "%d", i);
		MARK(io__done, "%d", i);
		MARK__SITE(pg, "q-done", "q__done", 0, "i", "%d", i);
		MARK__SITE(pg, "t-start", "t__start", 0, "i", "%d", i);
		MARK__SITE(pg, "t-end", "t__end", 0, "i", "%d", i);
		MARK(custom_a, "%d", i);
		MARK(custom_b, "%d", i);
		MARK(req_end, "%d", id);
	}
	MARK(io__done, "%d", -1);
	const char *lock = "x";
	MARK(req_begin, "%d %s", -1, lock);
	MARK__SITE(pg, "q-start", "q__start", 0, "i", "%d", -1);
	MARK(req_end, "%d", -1);
	MARK__SITE(pg, "t-start", "t__start", 0, "i", "%d", -2);
	MARK(lonely_end, "%d", 0);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		rounds = atoi(argv[1]);
	if (argc > 2 && strcmp(argv[2], "keys") == 0) {
		keyed_pairs(rounds);
		return 0;
	}
	if (argc > 2) {
		for (int i = 0; i < rounds; i++) {
			MARK(spin_begin, "");
			MARK(spin_end, "");
		}
		return 0;
	}
	pthread_t th[THREADS];
	for (long t = 0; t < THREADS; t++)
		if (pthread_create(&th[t], NULL, worker, (void *)t) != 0) {
			perror("pthread_create");
			return 1;
		}
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	return 0;
}
