/*
 * bench/lttng/enabled.c - table 3's LTTng-UST row: cycles per
 * lttng_once(1, NULL) while bench/run.sh holds an LTTng session with the
 * event enabled (snapshot mode: an overwriting ring buffer in memory, the
 * counterpart of the mark tracer's overwrite mode).  Exits with a skip line
 * when the tracepoint is not enabled, i.e. no session reached this process.
 * With --arg MODE: table 3b's row lttng_MODE (whole timed runs, issue 14).
 */
#include "bench.h"
#include "lttng_site.h"

#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct bench_opts o;
	bench_parse_opts(argc, argv, &o);
	bench_init(argv[0]);
	/* liblttng-ust's constructor waits for the session daemon
	 * (LTTNG_UST_REGISTER_TIMEOUT); allow a little more for the enable. */
	for (int i = 0; i < 50 && !lttng_site_enabled(); i++)
		usleep(100000);
	char srow[64];
	snprintf(srow, sizeof(srow), "lttng_%s", o.arg ? o.arg : "");
	if (!lttng_site_enabled()) {
		bench_skip(o.arg ? "t3s" : "t3", o.arg ? srow : "lttng", "the LTTng-UST tracepoint was not enabled: no session reached the process "
					  "(lttng-sessiond not running or refused)");
		return 0;
	}
	double v[o.reps];
	if (o.arg) {
		/* Table 3b (issue 14), --arg MODE: each sample is one timed run of
		 * >= 5 s (x scale) in the session run.sh created (discard channel
		 * streamed by lttng-consumerd, or snapshot), as bench_streaming
		 * measures mark: no best-of-sub-runs. */
		const uint64_t ns = (uint64_t)((5.0 * o.scale < 1.0 ? 1.0 : 5.0 * o.scale) * 1e9);
		uint64_t total = 0;
		for (int r = 0; r < o.reps; r++) {
			uint64_t calls = 0;
			const uint64_t w0 = bench_ns();
			const uint64_t t0 = bench_start();
			do {
				for (int i = 0; i < 4096; i++)
					lttng_once(1, NULL);
				calls += 4096;
			} while (bench_ns() - w0 < ns);
			v[r] = (double)(bench_stop() - t0) / (double)calls;
			total += calls;
		}
		bench_result("t3s", srow, "event", v, o.reps);
		bench_info("lttng_events_emitted", "%s %llu", srow, (unsigned long long)total);
		return 0;
	}
	uint64_t n = (uint64_t)(400000 * o.scale) + 1000;
	/* Each repetition: best of BENCH_SUBRUNS runs, as bench_enabled does. */
	uint64_t sub = n / BENCH_SUBRUNS + 1;
	for (int r = -1; r < o.reps; r++) {
		double best = 1e300;
		for (int s = 0; s < BENCH_SUBRUNS; s++) {
			uint64_t t0 = bench_start();
			for (uint64_t i = 0; i < sub; i++)
				lttng_once(1, NULL);
			uint64_t t1 = bench_stop();
			double x = (double)(t1 - t0) / (double)sub;
			best = x < best ? x : best;
		}
		if (r >= 0)
			v[r] = best;
	}
	bench_result("t3", "lttng", "event", v, o.reps);
	bench_info("lttng_events_emitted", "%llu", (unsigned long long)(sub * BENCH_SUBRUNS * (uint64_t)(o.reps + 1)));
	return 0;
}
