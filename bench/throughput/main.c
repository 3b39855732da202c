/*
 * bench/throughput/main.c - table 6: tracer throughput, events/s with zero
 * loss, block mode (the producer waits rather than drop), written to disk,
 * with 1 and 2 producer threads.  A sample is one whole session: start,
 * every thread records N "%d %p" events as fast as it can, stop (which
 * flushes every buffer to the stream files).  The rate counts the flush;
 * the sample is rejected (and the run fails) if any event was lost.
 *
 * --arg DIR: where the trace goes (default: $TMPDIR or /tmp).
 */
#define _GNU_SOURCE
#include "bench.h"

#include <limits.h>
#include <mark/mark.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef BENCH_HAVE_TRACER
#include <mark/tracer.h>

static uint64_t per_thread;
static pthread_barrier_t go;

static void *producer(void *arg)
{
	int id = (int)(intptr_t)arg;
	pthread_barrier_wait(&go);
	for (uint64_t i = 0; i < per_thread; i++)
		MARK(bench_throughput, "%d %p", id, (void *)(uintptr_t)i);
	return NULL;
}
#endif

int main(int argc, char **argv)
{
	struct bench_opts o;
	bench_parse_opts(argc, argv, &o);
	bench_init(argv[0]);
	bench_pin(-2);
#ifndef BENCH_HAVE_TRACER
	bench_skip("t6", "t1", "not measured: src/tracer/ had no tracer sources when bench/ was configured");
	bench_skip("t6", "t2", "not measured: src/tracer/ had no tracer sources when bench/ was configured");
	return 0;
#else
	const char *base = o.arg ? o.arg : (getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	per_thread = (uint64_t)(2000000 * o.scale) + 1000;
	int failed = 0;
	for (int threads = 1; threads <= 2; threads++) {
		double v[o.reps];
		uint64_t bytes = 0;
		for (int r = 0; r < o.reps; r++) {
			char dir[PATH_MAX];
			snprintf(dir, sizeof(dir), "%s/bench-throughput-XXXXXX", base);
			if (!mkdtemp(dir)) {
				perror("mkdtemp");
				return 1;
			}
			const char *globs[] = { "bench_throughput", NULL };
			struct mark_trace_config cfg = { 0 };
			cfg.directory = dir;
			cfg.mode = MARK_TRACE_BLOCK;
			cfg.globs = globs;
			pthread_t th[2];
			pthread_barrier_init(&go, NULL, (unsigned)threads + 1);
			for (int t = 0; t < threads; t++)
				pthread_create(&th[t], NULL, producer, (void *)(intptr_t)t);
			if (mark_tracer_start(&cfg) < 0) {
				bench_skip("t6", threads == 1 ? "t1" : "t2", "mark_tracer_start failed: %s",
					   mark_last_error());
				pthread_barrier_wait(&go);
				for (int t = 0; t < threads; t++)
					pthread_join(th[t], NULL);
				return 0;
			}
			uint64_t t0 = bench_ns();
			pthread_barrier_wait(&go);
			for (int t = 0; t < threads; t++)
				pthread_join(th[t], NULL);
			struct mark_trace_stats st;
			mark_tracer_get_stats(&st);
			mark_tracer_stop();
			uint64_t t1 = bench_ns();
			struct mark_trace_stats fin;
			mark_tracer_get_stats(&fin);
			pthread_barrier_destroy(&go);
			uint64_t expect = per_thread * (uint64_t)threads;
			uint64_t got = fin.events > st.events ? fin.events : st.events;
			uint64_t lost = fin.lost > st.lost ? fin.lost : st.lost;
			if (got != expect || lost) {
				fprintf(stderr, "bench_throughput: %d threads: recorded %llu of %llu events, lost %llu\n",
					threads, (unsigned long long)got, (unsigned long long)expect,
					(unsigned long long)lost);
				failed = 1;
			}
			bytes = fin.bytes_written > st.bytes_written ? fin.bytes_written : st.bytes_written;
			v[r] = (double)expect / ((double)(t1 - t0) / 1e9);
			char cmd[PATH_MAX + 16];
			snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
			if (system(cmd) != 0)
				fprintf(stderr, "bench_throughput: could not remove %s\n", dir);
		}
		bench_result_unit("t6", threads == 1 ? "t1" : "t2", "rate", "events/s", v, o.reps);
		bench_info("throughput_bytes", "%d threads: %llu events, %llu bytes written per session", threads,
			   (unsigned long long)(per_thread * (uint64_t)threads), (unsigned long long)bytes);
	}
	if (failed)
		bench_info("note", "tracer throughput: events were lost or miscounted in block mode (see stderr)");
	return 0;
#endif
}
