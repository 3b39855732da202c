/*
 * bench/streaming/main.c - table 3b (issue 14): what one recorded event
 * costs in the recordings users actually run, and how fast block mode
 * streams to the disk.
 *
 *   bench_streaming [--reps N] [--scale S] [--only CASES] --arg DIR
 *
 * DIR is a directory on the file system the traces go to (the build tree:
 * the machine's disk).  CASES is a comma-separated list of
 *
 *   cost    rows of table t3s, cycles per loop of site_once(1, NULL)
 *           (MARK(subsys_mark1, "%d %p", ...), as table 3), interleaved
 *           per repetition so that a change of the machine's load hits
 *           every row alike:
 *             rdtsc            a bare rdtsc loop (the unit of the goals)
 *             discard_disk     discard mode, default buffer, the consumer
 *                              writing the stream file into DIR; one
 *                              session of >= 5 s (x scale) per repetition
 *             overwrite_cache  overwrite mode, 256 KB ring (fits in L2),
 *                              the consumer thread idle
 *             overwrite_64m    overwrite mode, 64 MB ring
 *             discard_2t       discard_disk with 2 producer threads (per
 *                              event of one thread; both threads' samples)
 *           Each sample is one whole timed session (no best-of-sub-runs).
 *   drop    dropped: one event a full discard ring drops, its consumer
 *           stalled (the drop path alone), beside rdtsc_drop
 *   first   first_event / first_1000: a freshly started thread's first
 *           event (ring claim or creation) and its first 1000 events'
 *           mean, discard mode to DIR
 *   block   block mode sustained for >= 10 s (x scale) to DIR and to
 *           /dev/shm: events/s, MB/s with and without the final syncfs,
 *           the page cache's share (Dirty + Writeback in /proc/meminfo at
 *           the end of the session), and dd writing the same number of
 *           bytes to the same file system with conv=fdatasync
 *   norseq  the cost rows again, named *_norseq: run.sh runs this case
 *           under GLIBC_TUNABLES=glibc.pthread.rseq=0 (the fallback
 *           without rseq; prints whether glibc registered rseq)
 */
#define _GNU_SOURCE
#include "bench.h"
#include "../enabled/enabled.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <mark/mark.h>
#include <mark/tracer.h>
#include "tracer/tracer_internal.h"   /* tracer_thread_slow_events() */
#include "core/internal.h"            /* mark_registry_lock(): stalls the consumer */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#if __has_include(<sys/rseq.h>)
#include <sys/rseq.h>
#endif

static struct bench_opts opts;
static const char *base_dir;
static char trace_dir[PATH_MAX];
static int pinned_cpu;   /* the CPU bench_init() pinned the main thread to */

static void die(const char *what)
{
	fprintf(stderr, "bench_streaming: %s failed: %s\n", what, mark_last_error());
	exit(1);
}

static void remove_trace(void)
{
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", trace_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "bench_streaming: could not remove %s\n", trace_dir);
}

static void start(const char *dir, enum mark_trace_mode mode, size_t buffer)
{
	const char *globs[] = { "subsys_mark1", NULL };
	struct mark_trace_config cfg = { 0 };
	snprintf(trace_dir, sizeof(trace_dir), "%s/stream-XXXXXX", dir);
	if (!mkdtemp(trace_dir)) {
		perror("bench_streaming: mkdtemp");
		exit(1);
	}
	cfg.directory = trace_dir;
	cfg.mode = mode;
	cfg.buffer_size = buffer;
	cfg.globs = globs;
	/* The consumer thread inherits the affinity of the thread that starts
	 * the session: unpin first, so that it runs where the scheduler puts
	 * it (as in a traced program), then pin the producer again. */
	bench_pin(-2);
	if (mark_tracer_start(&cfg) < 0)
		die("mark_tracer_start");
	bench_pin(pinned_cpu);
}

/* Run site_once() until `seconds` have passed; returns cycles per call. */
static double loop_for(double seconds, uint64_t *calls)
{
	const uint64_t ns = (uint64_t)(seconds * 1e9);
	uint64_t n = 0;
	const uint64_t w0 = bench_ns();
	const uint64_t t0 = bench_start();
	do {
		for (int i = 0; i < 4096; i++)
			site_once(1, NULL);
		n += 4096;
	} while (bench_ns() - w0 < ns);
	const uint64_t t1 = bench_stop();
	*calls = n;
	return (double)(t1 - t0) / (double)n;
}

static double rdtsc_for(double seconds)
{
#if defined(__x86_64__)
	const uint64_t ns = (uint64_t)(seconds * 1e9);
	uint64_t n = 0, acc = 0;
	const uint64_t w0 = bench_ns();
	const uint64_t t0 = bench_start();
	do {
		for (int i = 0; i < 4096; i++)
			acc ^= bench_rdtsc_bare();
		n += 4096;
	} while (bench_ns() - w0 < ns);
	const uint64_t t1 = bench_stop();
	BENCH_KEEP(acc);
	return (double)(t1 - t0) / (double)n;
#else
	(void)seconds;
	return 0;
#endif
}

struct worker {
	pthread_t th;
	int cpu;
	double seconds;
	double cycles;
	uint64_t calls;
	uint64_t slow;   /* events that took the probe's slow path */
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	bench_pin(w->cpu);
	const uint64_t slow0 = tracer_thread_slow_events();
	w->cycles = loop_for(w->seconds, &w->calls);
	w->slow = tracer_thread_slow_events() - slow0;
	return NULL;
}

/*
 * One session: mode, buffer, `threads` producers (1: this thread; 2: two
 * new threads pinned to CPUs 0 and 1).  Appends the per-thread cycles to
 * v[] and returns how many it appended.
 */
static int session(enum mark_trace_mode mode, size_t buffer, int threads, double seconds, double *v,
		   const char *row)
{
	uint64_t calls = 0;
	start(base_dir, mode, buffer);
	struct rusage ru0, ru1;
	getrusage(RUSAGE_SELF, &ru0);
	int n = 0;
	uint64_t slow = 0;
	if (threads == 1) {
		const uint64_t slow0 = tracer_thread_slow_events();
		v[n++] = loop_for(seconds, &calls);
		slow = tracer_thread_slow_events() - slow0;
	} else {
		struct worker w[2];
		for (int i = 0; i < 2; i++) {
			w[i] = (struct worker){ .cpu = i % (int)sysconf(_SC_NPROCESSORS_ONLN), .seconds = seconds };
			if (pthread_create(&w[i].th, NULL, worker_main, &w[i]) != 0) {
				fprintf(stderr, "bench_streaming: pthread_create failed\n");
				exit(1);
			}
		}
		for (int i = 0; i < 2; i++) {
			pthread_join(w[i].th, NULL);
			v[n++] = w[i].cycles;
			calls += w[i].calls;
			slow += w[i].slow;
		}
	}
	getrusage(RUSAGE_SELF, &ru1);
	struct mark_trace_stats st;
	mark_tracer_get_stats(&st);
	if (mark_tracer_stop() < 0)
		die("mark_tracer_stop");
	/* Page faults and context switches of the whole process (producers
	 * and consumer) during the timed part: the explanation of the cost. */
	bench_info("stream_stats", "%s calls=%llu slow=%llu events=%llu lost=%llu bytes_written=%llu minflt=%ld "
		   "majflt=%ld nvcsw=%ld nivcsw=%ld", row,
		   (unsigned long long)calls, (unsigned long long)slow, (unsigned long long)st.events, (unsigned long long)st.lost,
		   (unsigned long long)st.bytes_written, ru1.ru_minflt - ru0.ru_minflt, ru1.ru_majflt - ru0.ru_majflt,
		   ru1.ru_nvcsw - ru0.ru_nvcsw, ru1.ru_nivcsw - ru0.ru_nivcsw);
	remove_trace();
	return n;
}

#define ROWS 5
static void cost_rows(const char *suffix)
{
	const double secs = 5.0 * opts.scale < 1.0 ? 1.0 : 5.0 * opts.scale;
	const double ow_secs = secs / 5 < 0.5 ? 0.5 : secs / 5;
	static const char *names[ROWS] = { "rdtsc", "discard_disk", "overwrite_cache", "overwrite_64m",
					    "discard_2t" };
	double *v[ROWS];
	int count[ROWS] = { 0 };
	for (int k = 0; k < ROWS; k++)
		v[k] = calloc((size_t)opts.reps * 2, sizeof(double));
	/* Warm-up: page in the code, create the file system's directory blocks. */
	session(MARK_TRACE_DISCARD, 0, 1, 0.2, v[1], "warmup");
	char row[ROWS][64];
	for (int k = 0; k < ROWS; k++)
		snprintf(row[k], sizeof(row[k]), "%s%s", names[k], suffix);
	for (int r = 0; r < opts.reps; r++) {
		v[0][count[0]++] = rdtsc_for(0.2);
		count[1] += session(MARK_TRACE_DISCARD, 0, 1, secs, v[1] + count[1], row[1]);
		count[2] += session(MARK_TRACE_OVERWRITE, 256 << 10, 1, ow_secs, v[2] + count[2], row[2]);
		count[3] += session(MARK_TRACE_OVERWRITE, 64 << 20, 1, ow_secs, v[3] + count[3], row[3]);
		count[4] += session(MARK_TRACE_DISCARD, 0, 2, secs, v[4] + count[4], row[4]);
	}
	for (int k = 0; k < ROWS; k++) {
		bench_result("t3s", row[k], "event", v[k], count[k]);
		free(v[k]);
	}
}

/* ---------------- what one dropped event costs -------------------- */

/*
 * Discard mode with the consumer stalled (its loop starts every pass by
 * taking the registry lock, which this thread holds), so that after the
 * 64 KB ring fills every event is dropped: the cost of one exactly
 * counted drop, without the disk's timing.  The rdtsc row interleaved.
 */
static void drop_rows(void)
{
	double v[opts.reps], t[opts.reps];
	const uint64_t n = (uint64_t)(2000000 * opts.scale) + 4096;
	for (int r = 0; r < opts.reps; r++) {
		t[r] = rdtsc_for(0.1);
		start(base_dir, MARK_TRACE_DISCARD, 64 << 10);
		site_once(1, NULL);
		mark_registry_lock();
		for (int i = 0; i < 4096; i++)   /* fill the ring */
			site_once(1, NULL);
		const uint64_t t0 = bench_start();
		for (uint64_t i = 0; i < n; i++)
			site_once(1, NULL);
		const uint64_t t1 = bench_stop();
		mark_registry_unlock();
		struct mark_trace_stats st;
		mark_tracer_get_stats(&st);
		if (mark_tracer_stop() < 0)
			die("mark_tracer_stop");
		remove_trace();
		v[r] = (double)(t1 - t0) / (double)n;
		if (st.lost < n)
			bench_info("note", "drop row: %llu lost, fewer than the %llu events timed",
				   (unsigned long long)st.lost, (unsigned long long)n);
	}
	bench_result("t3s", "rdtsc_drop", "event", t, opts.reps);
	bench_result("t3s", "dropped", "event", v, opts.reps);
}

/* ---------------- a fresh thread's first events -------------------- */

struct first {
	double first, thousand;
};

static void *first_main(void *arg)
{
	struct first *f = arg;
	uint64_t t0 = bench_start();
	site_once(1, NULL);
	uint64_t t1 = bench_stop();
	for (int i = 0; i < 999; i++)
		site_once(1, NULL);
	uint64_t t2 = bench_stop();
	f->first = (double)(t1 - t0);
	f->thousand = (double)(t2 - t0) / 1000.0;
	return NULL;
}

static void first_rows(void)
{
	double a[opts.reps], b[opts.reps];
	start(base_dir, MARK_TRACE_DISCARD, 0);
	for (int r = -1; r < opts.reps; r++) {
		struct first f;
		pthread_t th;
		if (pthread_create(&th, NULL, first_main, &f) != 0)
			exit(1);
		pthread_join(th, NULL);
		if (r >= 0)
			a[r] = f.first, b[r] = f.thousand;
	}
	mark_tracer_stop();
	remove_trace();
	bench_result("t3s", "first_event", "event", a, opts.reps);
	bench_result("t3s", "first_1000", "event", b, opts.reps);
}

/* ---------------- block mode, sustained ---------------------------- */

static uint64_t meminfo_kb(const char *key)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	uint64_t v = 0;
	size_t kl = strlen(key);
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl) && line[kl] == ':')
			v = strtoull(line + kl + 1, NULL, 10);
	if (f)
		fclose(f);
	return v;
}

static uint64_t dir_bytes;

static int add_size(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)path, (void)ftw;
	if (type == FTW_F && S_ISREG(sb->st_mode))
		dir_bytes += (uint64_t)sb->st_size;
	return 0;
}

static int sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = syncfs(fd);
	close(fd);
	return rc;
}

/* dd of `bytes` (whole MB) into dir with conv=fdatasync; MB/s, or 0. */
static double dd_rate(const char *dir, uint64_t bytes)
{
	char cmd[PATH_MAX * 2 + 128], path[PATH_MAX + 16];
	snprintf(path, sizeof(path), "%s/dd-bench.bin", dir);
	snprintf(cmd, sizeof(cmd), "dd if=/dev/zero of='%s' bs=1M count=%llu conv=fdatasync status=none", path,
		 (unsigned long long)(bytes >> 20) + 1);
	sync_dir(dir);
	uint64_t t0 = bench_ns();
	int rc = system(cmd);
	uint64_t t1 = bench_ns();
	unlink(path);
	if (rc != 0)
		return 0;
	return (double)(((bytes >> 20) + 1) << 20) / 1e6 / ((double)(t1 - t0) * 1e-9);
}

static void block_case(const char *fs, const char *dir)
{
	const double secs = 10.0 * opts.scale < 2.0 ? 2.0 : 10.0 * opts.scale;
	double ev[opts.reps], mb[opts.reps], mbs[opts.reps], dd[opts.reps], cache[opts.reps];
	for (int r = 0; r < opts.reps; r++) {
		uint64_t calls;
		sync_dir(dir);
		const uint64_t dirty0 = (meminfo_kb("Dirty") + meminfo_kb("Writeback")) << 10;
		start(dir, MARK_TRACE_BLOCK, 0);
		uint64_t w0 = bench_ns();
		loop_for(secs, &calls);
		struct mark_trace_stats st;
		mark_tracer_get_stats(&st);   /* events and lost; the stop resets them */
		if (mark_tracer_stop() < 0)
			die("mark_tracer_stop");
		uint64_t w1 = bench_ns();
		/* Bytes written, flush included: the files the session left. */
		dir_bytes = 0;
		nftw(trace_dir, add_size, 16, FTW_PHYS);
		st.bytes_written = dir_bytes;
		/* What the page cache holds of the run at its end: the growth of
		 * Dirty + Writeback (machine-wide; others' writes add noise). */
		uint64_t dirty1 = (meminfo_kb("Dirty") + meminfo_kb("Writeback")) << 10;
		uint64_t dirty = dirty1 > dirty0 ? dirty1 - dirty0 : 0;
		sync_dir(trace_dir);
		uint64_t w2 = bench_ns();
		if (st.lost != 0 || st.events < calls)
			bench_info("note", "block %s: lost=%llu events=%llu calls=%llu (block mode must lose nothing)", fs,
				   (unsigned long long)st.lost, (unsigned long long)st.events,
				   (unsigned long long)calls);
		ev[r] = (double)calls / ((double)(w1 - w0) * 1e-9);
		mb[r] = (double)st.bytes_written / 1e6 / ((double)(w1 - w0) * 1e-9);
		mbs[r] = (double)st.bytes_written / 1e6 / ((double)(w2 - w0) * 1e-9);
		cache[r] = st.bytes_written ? 100.0 * (double)(dirty < st.bytes_written ? dirty : st.bytes_written) /
						      (double)st.bytes_written
					    : 0;
		remove_trace();
		dd[r] = dd_rate(dir, st.bytes_written);
	}
	char row[32];
	snprintf(row, sizeof(row), "block_%s", fs);
	bench_result_unit("t6s", row, "events", "events/s", ev, opts.reps);
	bench_result_unit("t6s", row, "mbs", "MB/s", mb, opts.reps);
	bench_result_unit("t6s", row, "mbs_synced", "MB/s", mbs, opts.reps);
	bench_result_unit("t6s", row, "dd", "MB/s", dd, opts.reps);
	bench_result_unit("t6s", row, "cached", "%", cache, opts.reps);
	bench_info("block_secs", "%s %.1f s sessions", fs, secs);
}

int main(int argc, char **argv)
{
	bench_parse_opts(argc, argv, &opts);
	bench_init(argv[0]);
	if (!opts.arg) {
		fprintf(stderr, "usage: bench_streaming [--reps N] [--scale S] [--only cost,first,drop,block,norseq] --arg DIR\n");
		return 2;
	}
	base_dir = opts.arg;
	pinned_cpu = sched_getcpu();
	const char *only = opts.only ? opts.only : "cost,first,drop,block";
	/* bench_init pinned us to one CPU; the 2-thread row pins its own. */
	if (strstr(only, "norseq")) {
#if __has_include(<sys/rseq.h>)
		tracer_cpu_init();   /* what a session here chooses */
		static const char *const source[] = {
			[CPU_RSEQ] = "the rseq area", [CPU_RDTSCP] = "rdtscp (timestamp and CPU in one)",
			[CPU_GETCPU] = "sched_getcpu() (slow path)", [CPU_RDPID] = "rdpid beside rdtsc",
		};
		bench_info("rseq", "glibc rseq registration: %s (__rseq_size %u); the CPU number from %s",
			   __rseq_size ? "on" : "off", (unsigned)__rseq_size, source[tracer_cpu_source]);
#endif
		cost_rows("_norseq");
	}
	if (strstr(only, "cost"))
		cost_rows("");
	if (strstr(only, "first"))
		first_rows();
	if (strstr(only, "drop"))
		drop_rows();
	if (strstr(only, "block")) {
		block_case("disk", base_dir);
		block_case("tmpfs", "/dev/shm");
	}
	return 0;
}
