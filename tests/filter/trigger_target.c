/*
 * A request loop for the snapshot-trigger tests (test_trigger.py): THREADS
 * threads each serve REQUESTS requests; request `id` of thread `thread`
 * fails with status 500 when (id + thread * 37337) % PERIOD == PERIOD - 1
 * (PERIOD 100000 unless given: one in 10^5, at other times in each
 * thread), else it has status 200.  Each
 * request fires
 *   trig_req   "%d %u %d"  thread, id, status
 * and every 16th request also
 *   trig_note  "%u %s"     id, what   (what = "note"; a string: slow path)
 * The main thread fires trig_tick "%u" (n) between joins.
 *
 *   trigger_target run THREADS REQUESTS [PERIOD [PAUSE]]
 *       (PAUSE: a thread sleeps 30 ms PAUSE requests after each of its
 *       failing requests, which lets a consumer that shares its CPU run)
 *   trigger_target serve READY GO THREADS REQUESTS
 *       (for `mark record --pid`: writes READY once running, waits until
 *       the file GO exists -- at most 120 s -- then runs as `run`)
 * Prints "failed N" (the number of status-500 requests) and exits 0.
 */
#define _GNU_SOURCE
#include <mark/mark.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static unsigned requests, period = 100000, pause_after;

static void *serve(void *arg)
{
	const int thread = (int)(long)arg;
	long failed = 0;
	unsigned last_failed = 0;
	for (unsigned id = 0; id < requests; id++) {
		int status = (id + (unsigned)thread * 37337u) % period == period - 1 ? 500 : 200;
		failed += status == 500;
		if (status == 500)
			last_failed = id;
		else if (pause_after && failed && id == last_failed + pause_after)
			nanosleep(&(struct timespec){ 0, 30000000 }, NULL);
		MARK(trig_req, "%d %u %d", thread, id, status);
		if (id % 16 == 0) {
			const char *what = "note";
			MARK(trig_note, "%u %s", id, what);
		}
	}
	return (void *)failed;
}

int main(int argc, char **argv)
{
	int arg = 1;
	if (argc == 6 && strcmp(argv[1], "serve") == 0) {
		FILE *f = fopen(argv[2], "w");
		if (!f || fputs("ready\n", f) < 0 || fclose(f) != 0) {
			perror(argv[2]);
			return 1;
		}
		for (int i = 0; i < 12000 && access(argv[3], F_OK) != 0; i++)
			nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
		arg = 4;
	} else if (argc < 4 || argc > 6 || strcmp(argv[1], "run") != 0) {
		fprintf(stderr, "usage: %s run THREADS REQUESTS [PERIOD [PAUSE]] | serve READY GO THREADS REQUESTS\n",
			argv[0]);
		return 2;
	} else {
		arg = 2;
		if (argc >= 5)
			period = (unsigned)strtoul(argv[4], NULL, 10);
		if (argc == 6)
			pause_after = (unsigned)strtoul(argv[5], NULL, 10);
	}
	if (period < 2) {
		fprintf(stderr, "PERIOD must be at least 2\n");
		return 2;
	}
	int threads = atoi(argv[arg]);
	requests = (unsigned)strtoul(argv[arg + 1], NULL, 10);
	if (threads < 1 || threads > 64) {
		fprintf(stderr, "THREADS must be 1 to 64\n");
		return 2;
	}
	pthread_t t[64];
	for (int i = 0; i < threads; i++)
		if (pthread_create(&t[i], NULL, serve, (void *)(long)i) != 0) {
			perror("pthread_create");
			return 1;
		}
	long failed = 0;
	for (int i = 0; i < threads; i++) {
		void *r;
		pthread_join(t[i], &r);
		failed += (long)r;
		unsigned n = (unsigned)i;
		MARK(trig_tick, "%u", n);
	}
	printf("failed %ld\n", failed);
	return 0;
}
