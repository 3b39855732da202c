/*
 * Threads with names, for the thread-name tests of the exports
 * (test_export_perfetto.py case names, test_export_otlp.py case names).
 *
 *   names_target run     the main thread (named by its program, as the
 *                        kernel does) fires names_tick "%u" 100 times;
 *                        then, one after another:
 *                          "worker-0", "worker-1": name themselves, then
 *                            fire 200 names_tick each;
 *                          a thread named "early" fires 50 names_tick,
 *                            renames itself "late", waits 1.2 s (the
 *                            tracer reads a thread's name again at most
 *                            once a second: docs/tracer.md) and fires 50
 *                            more;
 *                          a thread named "\x1b[31mred\xff" (an escape
 *                            sequence and a byte that is not UTF-8) fires
 *                            10.
 *   names_target kill    the same without the rename, then SIGKILL:
 *                        the trace is recovered from the buffers.
 * Each thread names itself before its first event.
 */
#define _GNU_SOURCE
#include <mark/mark.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int renaming = 1;

static void ticks(unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		MARK(names_tick, "%u", i);
}

static void *worker(void *arg)
{
	const char *name = arg;
	pthread_setname_np(pthread_self(), name);
	if (strcmp(name, "early") == 0) {
		ticks(50);
		if (renaming) {
			pthread_setname_np(pthread_self(), "late");
			nanosleep(&(struct timespec){ 1, 200000000 }, NULL);
		}
		ticks(50);
	} else {
		ticks(strncmp(name, "worker", 6) == 0 ? 200 : 10);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 2 || (strcmp(argv[1], "run") != 0 && strcmp(argv[1], "kill") != 0)) {
		fprintf(stderr, "usage: %s run|kill\n", argv[0]);
		return 2;
	}
	renaming = strcmp(argv[1], "run") == 0;
	ticks(100);
	static char *const names[] = { "worker-0", "worker-1", "early", "\x1b[31mred\xff" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, worker, names[i]) != 0) {
			perror("pthread_create");
			return 1;
		}
		pthread_join(t, NULL);
	}
	if (!renaming)
		raise(SIGKILL);
	return 0;
}
