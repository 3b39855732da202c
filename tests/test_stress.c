/*
 * Stress: 4 threads run loops through 100 different markers while another
 * thread arms and disarms random globs (100,000 times by default) and
 * repeatedly unregisters and re-registers a probe.  Checks:
 *  - no crash;
 *  - a probe never sees wrong arguments (each marker passes its own number,
 *    the loop counter and its thread's record, which the probe verifies);
 *  - an unregistered probe never runs after mark_synchronize();
 *  - after the final disarm and mark_synchronize(), no probe runs.
 * MARK_STRESS_OPS overrides the number of arm/disarm operations.
 */
#include <mark/mark.h>
#include "testutil.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#define NTHREADS 4
#define NMARKERS 100

struct worker {
	unsigned magic;
	int counter;
	pthread_t thread;
};

#define MAGIC 0x6d61726bu

static atomic_int stop_workers;
static atomic_long probe_hits;
static atomic_long bad_args;
static atomic_int probes_forbidden;   /* set after the final disarm + synchronize */
static atomic_long hits_after_final;

struct sentinel { atomic_int alive; };
static struct sentinel sentinels[2];
static atomic_long sentinel_violations;

static void check_args(const struct mark_marker *m, int number, int counter, const struct worker *w)
{
	(void)m;
	if (!w || w->magic != MAGIC || counter != w->counter || number < 0 || number >= NMARKERS)
		atomic_fetch_add(&bad_args, 1);
	if (atomic_load(&probes_forbidden))
		atomic_fetch_add(&hits_after_final, 1);
	atomic_fetch_add_explicit(&probe_hits, 1, memory_order_relaxed);
}

static void fast_probe(const struct mark_marker *m, void *priv, const uint64_t *args)
{
	if ((int)args[0] != (int)(intptr_t)priv)
		atomic_fetch_add(&bad_args, 1);
	check_args(m, (int)args[0], (int)args[1], (const struct worker *)(uintptr_t)args[2]);
}

static void va_probe(const struct mark_marker *m, void *priv, const char *fmt, va_list *args)
{
	(void)fmt;
	int number = va_arg(*args, int);
	int counter = va_arg(*args, int);
	const struct worker *w = va_arg(*args, const struct worker *);
	if (number != (int)(intptr_t)priv)
		atomic_fetch_add(&bad_args, 1);
	check_args(m, number, counter, w);
}

static void sentinel_probe(const struct mark_marker *m, void *priv, const uint64_t *args)
{
	(void)m;
	(void)args;
	struct sentinel *s = priv;
	if (!atomic_load(&s->alive))
		atomic_fetch_add(&sentinel_violations, 1);
}

#define SITE(n) MARK(stress_##n, "%d %d %p", n, w->counter, w);
#define SITES10(t) SITE(t##0) SITE(t##1) SITE(t##2) SITE(t##3) SITE(t##4) \
		   SITE(t##5) SITE(t##6) SITE(t##7) SITE(t##8) SITE(t##9)

static void run_all_markers(struct worker *w)
{
	SITE(0) SITE(1) SITE(2) SITE(3) SITE(4) SITE(5) SITE(6) SITE(7) SITE(8) SITE(9)
	SITES10(1) SITES10(2) SITES10(3) SITES10(4) SITES10(5)
	SITES10(6) SITES10(7) SITES10(8) SITES10(9)
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	while (!atomic_load_explicit(&stop_workers, memory_order_relaxed)) {
		w->counter++;
		run_all_markers(w);
	}
	return NULL;
}

/*
 * x86-64 jump sites: at an even address (the 2-byte guard store of the
 * patch protocol must be naturally aligned: instruction fetch tore one at
 * 15 mod 16 into "0f 03", an lsl through address 0, and this test died of
 * SIGSEGV once in ~130 runs) and inside one 64-byte line.  100 sites back
 * to back land at every offset, so a header that misplaces any fails here
 * deterministically, long before the race would show.
 */
struct placement {
	int jump_sites, odd, straddling;
};

static int check_site_placement(const struct mark_site_info *s, void *arg)
{
	struct placement *pl = arg;
	if (s->kind != MARK_KIND_JUMP)
		return 0;
	const uintptr_t a = (uintptr_t)s->address;
	pl->jump_sites++;
#if defined(__x86_64__)
	if (a & 1) {
		pl->odd++;
		fprintf(stderr, "jump site at %p (line %u): odd address\n", s->address, s->line);
	}
	if (a % 64 > 59) {
		pl->straddling++;
		fprintf(stderr, "jump site at %p (line %u) crosses a 64-byte line\n", s->address, s->line);
	}
#else
	(void)a;
#endif
	return 0;
}

static int check_marker_placement(const struct mark_marker *m, void *arg)
{
	return mark_marker_sites(m, check_site_placement, arg);
}

static unsigned next_random(unsigned *state)
{
	*state = *state * 1103515245u + 12345u;
	return *state >> 8;
}

int main(void)
{
	long ops = 100000;
	const char *env = getenv("MARK_STRESS_OPS");
	if (env)
		ops = atol(env);
	char name[32];

	/* Even markers get a varargs probe, odd ones a fast probe; all get the sentinel. */
	for (int i = 0; i < NMARKERS; i++) {
		snprintf(name, sizeof(name), "stress_%d", i);
		int r = (i % 2) ? mark_probe_register_fast(name, fast_probe, (void *)(intptr_t)i)
				: mark_probe_register(name, "%d %d %p", va_probe, (void *)(intptr_t)i);
		CHECK_EQ(r, 0);
	}
	atomic_store(&sentinels[0].alive, 1);
	CHECK_EQ(mark_probe_register_fast("stress_*", sentinel_probe, &sentinels[0]), 0);
	int live_sentinel = 0;

	struct placement pl = { 0, 0, 0 };
	mark_list("stress_*", check_marker_placement, &pl);
	printf("%d jump sites: %d at an odd address, %d crossing a line\n", pl.jump_sites, pl.odd,
	       pl.straddling);
	CHECK_EQ(pl.odd, 0);
	CHECK_EQ(pl.straddling, 0);

	struct worker workers[NTHREADS];
	for (int t = 0; t < NTHREADS; t++) {
		workers[t].magic = MAGIC;
		workers[t].counter = 0;
		pthread_create(&workers[t].thread, NULL, worker_main, &workers[t]);
	}

	static const char *const patterns[] = { "stress_%u", "stress_%u*", "stress_?%u", "stress_*%u",
						"stress_[1-3]%u", "stress_*" };
	unsigned seed = 12345;
	long changed = 0;
	for (long op = 0; op < ops; op++) {
		unsigned r = next_random(&seed);
		char glob[32];
		snprintf(glob, sizeof(glob), patterns[r % 6], (r >> 4) % 10);
		int n = (r >> 12) & 1 ? mark_arm(glob) : mark_disarm(glob);
		if (n < 0) {
			fprintf(stderr, "arm/disarm %s failed: %s\n", glob, mark_last_error());
			testutil_failures++;
			break;
		}
		changed += n;
		if (op % 5000 == 4999) {
			/* Unregister the live sentinel while it may be running, wait for
			 * the grace period, then declare it dead: it must not run again. */
			struct sentinel *old = &sentinels[live_sentinel];
			CHECK_EQ(mark_probe_unregister_fast("stress_*", sentinel_probe, old), 0);
			mark_synchronize();
			atomic_store(&old->alive, 0);
			live_sentinel ^= 1;
			atomic_store(&sentinels[live_sentinel].alive, 1);
			CHECK_EQ(mark_probe_register_fast("stress_*", sentinel_probe, &sentinels[live_sentinel]), 0);
		}
	}

	/* Final disarm: afterwards, no probe may run. */
	CHECK(mark_disarm("*") >= 0);
	mark_synchronize();
	atomic_store(&probes_forbidden, 1);
	long before = atomic_load(&probe_hits);
	for (int t = 0; t < NTHREADS; t++)
		{ (void)0; }
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	nanosleep(&ts, NULL);   /* the workers keep looping meanwhile */
	atomic_store(&stop_workers, 1);
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(workers[t].thread, NULL);

	printf("ops=%ld sites_changed=%ld probe_hits=%ld \n", ops, changed, before);
	CHECK(changed > 0);
	CHECK(before > 0);
	CHECK_EQ(atomic_load(&bad_args), 0);
	CHECK_EQ(atomic_load(&sentinel_violations), 0);
	CHECK_EQ(atomic_load(&hits_after_final), 0);
	CHECK_EQ(atomic_load(&probe_hits), before);

	for (int i = 0; i < NMARKERS; i++) {
		snprintf(name, sizeof(name), "stress_%d", i);
		CHECK_EQ((i % 2) ? mark_probe_unregister_fast(name, fast_probe, (void *)(intptr_t)i)
				 : mark_probe_unregister(name, va_probe, (void *)(intptr_t)i), 0);
	}
	CHECK_EQ(mark_probe_unregister_fast("stress_*", sentinel_probe, &sentinels[live_sentinel]), 0);
	TEST_DONE();
}
