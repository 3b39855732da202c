/*
 * The program `mark record` runs in the OTLP export test
 * (tests/cli/test_export_otlp.py): THREADS threads each run ROUNDS rounds
 * of two nested begin/end pairs with every argument type between them, so
 * spans, their parents, log records and typed attributes are all known:
 *
 *   req_begin(id, name)               a root span: %d %s
 *     io_begin(ptr)                   its child: %p
 *       value(d, c, neg, hex, big, s) a log record inside the child span
 *     io_end(n)                       %u
 *   req_end(id)
 *   then once per thread: tick(i) outside any span, io_end(0) without a
 *   begin (a log record), req_begin(-1, "open") never ended (a span
 *   ended by the export at the thread's last event).
 *
 * `otlp_target ROUNDS fork` runs the same in a forked child too (a second
 * process, its own trace in pid-CHILD/).
 */
#include <mark/mark.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS 2

static int rounds = 20;
/* every escape form JSON has: quote, backslash, control bytes, UTF-8, DEL,
 * a C1 and a bidirectional control (U+0085, U+202E) */
static const char *const names[] = { "plain", "q\"b\\s/\n\t\r\x01\x1f", "caf\xc3\xa9 \xe2\x82\xac \x7f \xc2\x85\xe2\x80\xae", "" };

static void *worker(void *arg)
{
	long t = (long)arg;
	for (int i = 0; i < rounds; i++) {
		int id = (int)t * 1000 + i;
		const char *name = names[i % 4];
		MARK(req_begin, "id %d name %s", id, name);
		void *ptr = (void *)(uintptr_t)(0x7f0000001000u + (unsigned)i * 16u);
		MARK(io_begin, "ptr %p", ptr);
		double d = i / 7.0 - 1.5;
		char c = (char)("a\n\"\\"[i % 4]);
		long neg = -1000000000000L * (i + 1);
		unsigned hex = 0xdead0000u + (unsigned)i;
		unsigned long big = 18446744073709551615UL - (unsigned long)i;
		MARK(value, "d %f c %c neg %ld hex %x big %lu s %s", d, c, neg, hex, big, name);
		unsigned n = (unsigned)i * 3u;
		MARK(io_end, "n %u", n);
		MARK(req_end, "id %d", id);
	}
	MARK(tick, "i %d", (int)t);
	MARK(io_end, "n %u", 0u);
	const char *open = "open";
	MARK(req_begin, "id %d name %s", -1, open);
	return NULL;
}

static int run_threads(void)
{
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

int main(int argc, char **argv)
{
	if (argc > 1)
		rounds = atoi(argv[1]);
	if (argc > 2 && strcmp(argv[2], "fork") == 0) {
		pid_t child = fork();
		if (child < 0) {
			perror("fork");
			return 1;
		}
		if (child == 0)
			_exit(run_threads());
		int st = 0;
		int rc = run_threads();
		if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			return 1;
		return rc;
	}
	return run_threads();
}
