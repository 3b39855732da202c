/*
 * Blocking deregistration racing with invocations on 4 threads.
 *
 * Each round registers a handler with a fresh context, waits until the
 * invoking threads have called it, deregisters it (EVENTHANDLER_DEREGISTER)
 * and only then marks the context "deregistered".  A call that finds the
 * mark set started after DEREGISTER returned: a violation.  Since the
 * handler is the list's only one, every round also arms and disarms the
 * invoke site while the 4 threads execute it.  Contexts are never reused,
 * so a late call cannot hide behind a reset; under ASan a late call
 * through a freed handler is reported as well.
 */
#include <mark/eventhandler.h>
#include "testutil.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#define THREADS 4
#define ROUNDS 60

typedef void (*race_fn)(void *arg, unsigned thread);
EVENTHANDLER_DECLARE(eh_race, race_fn);

struct round_ctx {
	int calls;           /* atomic */
	int deregistered;    /* atomic */
	int late_calls;      /* atomic: calls that saw deregistered */
};
static struct round_ctx rounds[ROUNDS];
static int stop;            /* atomic */
static unsigned long invocations[THREADS];

static void race_handler(void *arg, unsigned thread)
{
	struct round_ctx *c = (struct round_ctx *)arg;
	(void)thread;
	if (__atomic_load_n(&c->deregistered, __ATOMIC_ACQUIRE))
		__atomic_add_fetch(&c->late_calls, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&c->calls, 1, __ATOMIC_RELAXED);
}

/* A second, long-lived handler on some rounds: deregistering then does not disarm. */
static unsigned long background_calls;
static void background_handler(void *arg, unsigned thread)
{
	(void)arg;
	(void)thread;
	__atomic_add_fetch(&background_calls, 1, __ATOMIC_RELAXED);
}

static void *invoker(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		EVENTHANDLER_INVOKE(eh_race, id);
		invocations[id]++;
	}
	return NULL;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(void)
{
	pthread_t threads[THREADS];
	for (unsigned i = 0; i < THREADS; i++)
		CHECK_EQ(pthread_create(&threads[i], NULL, invoker, (void *)(uintptr_t)i), 0);

	int rounds_with_calls = 0;
	/* At least 10 rounds however slow the machine; more while time allows
	 * (sanitizers make each round several times slower). */
	double deadline = now() + 6;
	int done = 0;
	for (int r = 0; r < ROUNDS && (r < 10 || now() < deadline); r++, done++) {
		struct round_ctx *c = &rounds[r];
		eventhandler_tag bg = NULL;
		if (r % 3 == 2)
			bg = EVENTHANDLER_REGISTER(eh_race, background_handler, NULL, EVENTHANDLER_PRI_LAST);
		eventhandler_tag t = EVENTHANDLER_REGISTER(eh_race, race_handler, c, EVENTHANDLER_PRI_ANY);
		CHECK(t != NULL);
		/* The race is real only if the handler runs before it is
		 * deregistered: wait for a first call (30 s bounds a starved
		 * machine, it is no timing assumption), then give the other
		 * invokers half a second to join. */
		double until = now() + 30;
		while (__atomic_load_n(&c->calls, __ATOMIC_RELAXED) < 1 && now() < until)
			sched_yield();
		until = now() + 0.5;
		while (__atomic_load_n(&c->calls, __ATOMIC_RELAXED) < THREADS && now() < until)
			sched_yield();
		CHECK_EQ(EVENTHANDLER_DEREGISTER(eh_race, t), 0);
		__atomic_store_n(&c->deregistered, 1, __ATOMIC_RELEASE);
		rounds_with_calls += __atomic_load_n(&c->calls, __ATOMIC_RELAXED) > 0;
		if (bg)
			CHECK_EQ(EVENTHANDLER_DEREGISTER(eh_race, bg), 0);
		/* Give late calls, if any, a chance to happen before we look. */
		for (int i = 0; i < 20; i++)
			sched_yield();
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < THREADS; i++)
		pthread_join(threads[i], NULL);

	int late = 0;
	for (int r = 0; r < done; r++)
		late += __atomic_load_n(&rounds[r].late_calls, __ATOMIC_RELAXED);
	unsigned long total = 0;
	for (unsigned i = 0; i < THREADS; i++)
		total += invocations[i];
	printf("%d rounds (%d saw calls), %lu invocations, %lu background calls, %d late calls\n", done,
	       rounds_with_calls, total, background_calls, late);
	CHECK_EQ(late, 0);
	CHECK(done >= 10);
	/* The race was real: the handler ran concurrently in most rounds. */
	CHECK(rounds_with_calls >= done / 2);
	CHECK_EQ(mark_eventhandler_count("eh_race"), 0);
	TEST_DONE();
}
