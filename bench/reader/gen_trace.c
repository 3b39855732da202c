/*
 * The traced program of the trace-reading benchmark (bench/reader/run.sh):
 * T threads, each firing N rounds of four markers shaped like a server's
 * (a request begin/end pair with a string, a counter, a value), so the
 * trace has the mix `mark view/stats/export` meet: integers, hex, a
 * double, strings, begin/end pairs, several streams.
 *
 *     gen_trace N T
 */
#include <mark/mark.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static long rounds;

static void *worker(void *arg)
{
	long idx = (long)(intptr_t)arg;
	static const char *const paths[] = { "/", "/index.html", "/api/v1/items?page=2", "/static/app.js" };
	for (long i = 0; i < rounds; i++) {
		const char *path = paths[(i + idx) & 3];
		MARK(rb_req_begin, "%ld %s", i, path);
		MARK(rb_tick, "%d %u %x", (int)idx, (unsigned)i, (unsigned)(i * 2654435761u));
		MARK(rb_value, "%f %p", (double)i / 7.0, (void *)(uintptr_t)(0x1000 + i));
		MARK(rb_req_end, "%ld %d", i, (int)(200 + (i % 3) * 100));
	}
	return NULL;
}

int main(int argc, char **argv)
{
	rounds = argc > 1 ? atol(argv[1]) : 1000;
	int t = argc > 2 ? atoi(argv[2]) : 4;
	if (t < 1 || t > 64)
		t = 4;
	pthread_t th[64];
	for (int k = 0; k < t; k++)
		if (pthread_create(&th[k], NULL, worker, (void *)(intptr_t)k) != 0) {
			perror("pthread_create");
			return 1;
		}
	for (int k = 0; k < t; k++)
		pthread_join(th[k], NULL);
	return 0;
}
