/*
 * A filter replaced 400 times while 4 threads fire markers without pause
 * (the probe reading the filter that is being replaced and freed: ASan and
 * TSan builds see any use after free), then an exact check: with
 * "phase == 1 && seq & 1 == 1" installed, 4 threads x 1000 events of
 * phase 1 record exactly 2000 events, and a marker lacking `seq` none.
 * No timing assumption: the stress phase ends when every thread has fired
 * at least one event under each of the last filters (counted), however
 * slowly the threads get scheduled.
 */
#include <mark/mark.h>
#include <mark/tracer.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define THREADS 4

static int stop_flag;
static unsigned long fired[THREADS];

static void *worker(void *arg)
{
	const int t = (int)(long)arg;
	for (int seq = 0; !__atomic_load_n(&stop_flag, __ATOMIC_ACQUIRE); seq++) {
		MARK(flt_ev, "phase %d thread %d seq %d", 0, t, seq);
		__atomic_store_n(&fired[t], fired[t] + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void *phase1(void *arg)
{
	const int t = (int)(long)arg;
	for (int seq = 0; seq < 1000; seq++) {
		MARK(flt_ev, "phase %d thread %d seq %d", 1, t, seq);
		MARK(flt_other, "phase %d", 1);   /* no `seq`: never recorded */
	}
	return NULL;
}

static void wait_each_fired(void)
{
	unsigned long seen[THREADS];
	for (int t = 0; t < THREADS; t++)
		seen[t] = __atomic_load_n(&fired[t], __ATOMIC_ACQUIRE);
	for (int t = 0; t < THREADS; t++)
		while (__atomic_load_n(&fired[t], __ATOMIC_ACQUIRE) == seen[t])
			sched_yield();   /* a condition, not a time: the thread fires again */
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "filter-live-trace";
	struct mark_trace_config cfg = { .directory = dir, .mode = MARK_TRACE_DISCARD, .buffer_size = 1 << 22 };
	if (mark_tracer_start(&cfg) < 0) {
		fprintf(stderr, "FAIL: cannot start tracing into %s: %s\n", dir, mark_last_error());
		return 1;
	}
	if (mark_tracer_set_filter("phase = 1") != -22 || !strstr(mark_last_error(), "column 7")) {
		fprintf(stderr, "FAIL: a bad live filter was not refused with its column: %s\n", mark_last_error());
		return 1;
	}
	pthread_t th[THREADS];
	for (long t = 0; t < THREADS; t++)
		pthread_create(&th[t], NULL, worker, (void *)t);
	static const char *const filters[] = { "seq >= 0", "thread == 99", "phase == 0 && seq & 7 == 0", NULL };
	for (int i = 0; i < 400; i++) {
		if (mark_tracer_set_filter(filters[i % 4]) != 0) {
			fprintf(stderr, "FAIL: set_filter %d: %s\n", i, mark_last_error());
			return 1;
		}
		if (i % 40 == 0)
			wait_each_fired();   /* every thread ran the probe under this filter */
	}
	mark_tracer_set_filter("thread == 99");   /* none of the stress events from here on */
	wait_each_fired();
	__atomic_store_n(&stop_flag, 1, __ATOMIC_RELEASE);
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);

	struct mark_trace_stats before, after;
	mark_tracer_get_stats(&before);
	if (mark_tracer_set_filter("phase == 1 && seq & 1 == 1") != 0) {
		fprintf(stderr, "FAIL: %s\n", mark_last_error());
		return 1;
	}
	for (long t = 0; t < THREADS; t++)
		pthread_create(&th[t], NULL, phase1, (void *)t);
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	mark_tracer_get_stats(&after);
	unsigned long long got = (unsigned long long)((after.events + after.lost) - (before.events + before.lost));
	if (mark_tracer_stop() < 0) {
		fprintf(stderr, "FAIL: stop: %s\n", mark_last_error());
		return 1;
	}
	if (got != THREADS * 500) {
		fprintf(stderr, "FAIL: phase 1 recorded %llu events, want %d (filter \"phase == 1 && seq & 1 == 1\")\n",
			got, THREADS * 500);
		return 1;
	}
	printf("ok: 400 live filter replacements under %d firing threads; phase 1 recorded %llu events\n",
	       THREADS, got);
	return 0;
}
