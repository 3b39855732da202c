/*
 * bench/enabled/enabled.c - table 3: cost of an enabled marker, per loop
 * iteration of `site_once(1, NULL)` (the seeds' MARK(subsys_mark1, "%d %p",
 * 1, NULL) in a function of its own), for each way of consuming it:
 *
 *   rdtsc            a bare timestamp read (the unit of the goals)
 *   clock_gettime    CLOCK_MONOTONIC through the vDSO, for reference
 *   disarmed         the site disarmed (the loop and call overhead)
 *   armed_noprobe    armed, no probe connected
 *   va_empty         varargs probe that does nothing
 *   va_read          varargs probe that reads its two arguments
 *   va_parse         varargs probe registered with fmt NULL that parses the format
 *   fast             mark's compile-time-layout probe, reading both slots
 *   tracer           the built-in tracer recording the event (overwrite mode ring buffer)
 *   tracer_filter_reject  the tracer with --filter "value == 2": the event
 *                    (value 1) is judged and dropped (goal: <= 1.5x rdtsc)
 *   tracer_filter_accept  the tracer with --filter "value == 1": judged and
 *                    recorded (its extra cost over `tracer`)
 *   uprobe_tracefs   kernel uprobe on the site's NOP, recorded by ftrace (uprobe_events)
 *   uprobe_bpftrace  bpftrace uprobe on site_once's entry, empty action
 *
 * And the "cost against argument count" sweep (sites with 0..12 ints) for
 * the fast probe and the tracer.
 *
 * Every row: set up, warm up, then --reps timed repetitions, each the
 * best of BENCH_SUBRUNS runs of N/BENCH_SUBRUNS iterations.  Rows run one after another (arming, registering probes,
 * attaching uprobes is too slow to interleave per repetition).
 */
#define _GNU_SOURCE
#include "bench.h"
#include "enabled.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <mark/mark.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef BENCH_HAVE_TRACER
#include <mark/tracer.h>
#endif

static struct bench_opts opts;

/* ------------------------------------------------------------------ */
/* Probes.  The sinks are volatile so reading the arguments is not      */
/* optimised away; nothing else is done with them.                      */

static volatile int sink_int;
static void *volatile sink_ptr;
static volatile uint64_t sink_u64;

static void probe_va_empty(const struct mark_marker *m, void *priv, const char *fmt, va_list *args)
{
	(void)m, (void)priv, (void)fmt, (void)args;
}

static void probe_va_read(const struct mark_marker *m, void *priv, const char *fmt, va_list *args)
{
	(void)m, (void)priv, (void)fmt;
	sink_int = va_arg(*args, int);
	sink_ptr = va_arg(*args, void *);
}

/*
 * The seeds' "var args probe, format string processing": walk the format,
 * and fetch each argument with the va_arg type its conversion names.  A
 * small vprintf-style parser: flags, width, precision, length modifiers.
 */
static void probe_va_parse(const struct mark_marker *m, void *priv, const char *fmt, va_list *args)
{
	(void)m, (void)priv;
	for (const char *p = fmt; *p; p++) {
		if (*p != '%')
			continue;
		p++;
		if (*p == '%')
			continue;
		while (*p && strchr("-+ #0", *p))
			p++;
		while (*p >= '0' && *p <= '9')
			p++;
		if (*p == '.')
			for (p++; *p >= '0' && *p <= '9'; p++)
				;
		int longs = 0, size_t_mod = 0;
		for (;; p++) {
			if (*p == 'l')
				longs++;
			else if (*p == 'z' || *p == 'j' || *p == 't')
				size_t_mod = 1;
			else if (*p != 'h')
				break;
		}
		switch (*p) {
		case 'd': case 'i': case 'u': case 'x': case 'X': case 'o': case 'c':
			if (longs || size_t_mod)
				sink_u64 = va_arg(*args, unsigned long);
			else
				sink_int = va_arg(*args, int);
			break;
		case 'p':
			sink_ptr = va_arg(*args, void *);
			break;
		case 's':
			sink_ptr = va_arg(*args, char *);
			break;
		case 'f': case 'e': case 'g': case 'a':
			sink_u64 = (uint64_t)va_arg(*args, double);
			break;
		default:
			return;   /* unknown conversion: stop, as vprintf would misbehave */
		}
		if (!*p)
			return;
	}
}

static void probe_fast(const struct mark_marker *m, void *priv, const uint64_t *args)
{
	(void)m, (void)priv;
	sink_int = (int)args[0];
	sink_ptr = (void *)(uintptr_t)args[1];
}

/* Sweep: read every slot, the count coming from the descriptor. */
static void probe_fast_all(const struct mark_marker *m, void *priv, const uint64_t *args)
{
	(void)priv;
	uint64_t s = 0;
	unsigned n = mark_marker_nargs(m);
	for (unsigned i = 0; i < n; i++)
		s += args[i];
	sink_u64 = s;
}

/* ------------------------------------------------------------------ */

static uint64_t loops_site(void) { return (uint64_t)(400000 * opts.scale) + 1000; }

/* Best of BENCH_SUBRUNS runs of n/BENCH_SUBRUNS calls (see disabled/main.c). */
static double run_site(uint64_t n)
{
	double best = 1e300;
	n = n / BENCH_SUBRUNS + 1;
	for (int s = 0; s < BENCH_SUBRUNS; s++) {
		uint64_t t0 = bench_start();
		for (uint64_t i = 0; i < n; i++)
			site_once(1, NULL);
		uint64_t t1 = bench_stop();
		double x = (double)(t1 - t0) / (double)n;
		best = x < best ? x : best;
	}
	return best;
}

static void measure_site(const char *row, uint64_t n)
{
	double v[opts.reps];
	run_site(n / 10 + 1);   /* warm-up */
	for (int r = 0; r < opts.reps; r++)
		v[r] = run_site(n);
	bench_result("t3", row, "event", v, opts.reps);
}

static void fail(const char *what)
{
	fprintf(stderr, "bench_enabled: %s failed: %s\n", what, mark_last_error());
	exit(1);
}

static void with_va_probe(const char *row, const char *fmt, mark_probe_fn fn)
{
	if (mark_probe_register("subsys_mark1", fmt, fn, NULL) < 0)
		fail("mark_probe_register");
	if (mark_arm("subsys_mark1") < 0)
		fail("mark_arm");
	measure_site(row, loops_site());
	mark_disarm("subsys_mark1");
	mark_probe_unregister("subsys_mark1", fn, NULL);
	mark_synchronize();
}

/* ---------------- timestamp baselines ------------------------------ */

static void measure_rdtsc(void)
{
#if defined(__x86_64__)
	uint64_t n = (uint64_t)(2000000 * opts.scale) + 1000;
	double v[opts.reps];
	n = n / BENCH_SUBRUNS + 1;
	for (int r = -1; r < opts.reps; r++) {
		double best = 1e300;
		for (int s = 0; s < BENCH_SUBRUNS; s++) {
			uint64_t acc = 0;
			uint64_t t0 = bench_start();
			for (uint64_t i = 0; i < n; i++)
				acc ^= bench_rdtsc_bare();
			uint64_t t1 = bench_stop();
			sink_u64 = acc;
			double x = (double)(t1 - t0) / (double)n;
			best = x < best ? x : best;
		}
		if (r >= 0)
			v[r] = best;
	}
	bench_result("t3", "rdtsc", "event", v, opts.reps);
#else
	bench_skip("t3", "rdtsc", "not x86-64");
#endif
}

static void measure_clock_gettime(void)
{
	uint64_t n = (uint64_t)(1000000 * opts.scale) + 1000;
	double v[opts.reps];
	n = n / BENCH_SUBRUNS + 1;
	for (int r = -1; r < opts.reps; r++) {
		double best = 1e300;
		for (int s = 0; s < BENCH_SUBRUNS; s++) {
			struct timespec ts;
			uint64_t acc = 0;
			uint64_t t0 = bench_start();
			for (uint64_t i = 0; i < n; i++) {
				clock_gettime(CLOCK_MONOTONIC, &ts);
				acc ^= (uint64_t)ts.tv_nsec;
			}
			uint64_t t1 = bench_stop();
			sink_u64 = acc;
			double x = (double)(t1 - t0) / (double)n;
			best = x < best ? x : best;
		}
		if (r >= 0)
			v[r] = best;
	}
	bench_result("t3", "clock_gettime", "event", v, opts.reps);
}

/* ---------------- the tracer --------------------------------------- */

#ifdef BENCH_HAVE_TRACER
static char trace_dir[PATH_MAX];

static int tracer_begin(const char *glob)
{
	const char *globs[] = { glob, NULL };
	struct mark_trace_config cfg = { 0 };
	snprintf(trace_dir, sizeof(trace_dir), "%s/bench-trace-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(trace_dir))
		return -errno;
	cfg.directory = trace_dir;
	cfg.mode = MARK_TRACE_OVERWRITE;
	cfg.buffer_size = 0;
	cfg.globs = globs;
	return mark_tracer_start(&cfg);
}

static void tracer_end(const char *row, uint64_t expected)
{
	struct mark_trace_stats st;
	mark_tracer_get_stats(&st);
	mark_tracer_stop();
	bench_info("tracer_stats", "%s events=%llu lost/overwritten=%llu expected>=%llu", row,
		   (unsigned long long)st.events, (unsigned long long)st.lost,
		   (unsigned long long)expected);
	if (st.events + st.lost < expected)
		bench_info("note", "tracer row %s: the tracer counted fewer events than sites hit", row);
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", trace_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "bench_enabled: could not remove %s\n", trace_dir);
}
#endif

static void measure_tracer(void)
{
#ifdef BENCH_HAVE_TRACER
	if (tracer_begin("subsys_mark1") < 0) {
		bench_skip("t3", "tracer", "mark_tracer_start failed: %s", mark_last_error());
		return;
	}
	uint64_t n = loops_site();
	measure_site("tracer", n);
	tracer_end("tracer", n * (uint64_t)opts.reps);
	/* The filter rows: one comparison on the site's first argument
	 * (`value`, as the trace names it), rejecting and accepting. */
	static const struct { const char *row, *expr; } rows[] = {
		{ "tracer_filter_reject", "value == 2" },
		{ "tracer_filter_accept", "value == 1" },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		if (tracer_begin("subsys_mark1") < 0 || mark_tracer_set_filter(rows[i].expr) < 0) {
			bench_skip("t3", rows[i].row, "cannot start the tracer with --filter \"%s\": %s",
				   rows[i].expr, mark_last_error());
			mark_tracer_stop();
			continue;
		}
		measure_site(rows[i].row, n);
		tracer_end(rows[i].row, i == 0 ? 0 : n * (uint64_t)opts.reps);
	}
#else
	bench_skip("t3", "tracer", "not measured: src/tracer/ had no tracer sources when bench/ was configured");
#endif
}

/* ---------------- argument-count sweep ----------------------------- */

static const unsigned sweep_counts[] = { 0, 1, 2, 4, 8, 12 };

static double run_sweep(unsigned nargs, uint64_t n)
{
	double best = 1e300;
	n = n / BENCH_SUBRUNS + 1;
	for (int s = 0; s < BENCH_SUBRUNS; s++) {
		uint64_t t0 = bench_start();
		for (uint64_t i = 0; i < n; i++)
			sweep_once(nargs, 1);
		uint64_t t1 = bench_stop();
		double x = (double)(t1 - t0) / (double)n;
		best = x < best ? x : best;
	}
	return best;
}

static void measure_sweep_one(const char *row, unsigned nargs, uint64_t n)
{
	double v[opts.reps];
	char col[16];
	run_sweep(nargs, n / 10 + 1);
	for (int r = 0; r < opts.reps; r++)
		v[r] = run_sweep(nargs, n);
	snprintf(col, sizeof(col), "a%u", nargs);
	bench_result("t3sweep", row, col, v, opts.reps);
}

static void measure_sweep(void)
{
	uint64_t n = loops_site() / 2 + 1000;
	for (size_t k = 0; k < sizeof(sweep_counts) / sizeof(sweep_counts[0]); k++)
		measure_sweep_one("disarmed", sweep_counts[k], n);
	if (mark_probe_register_fast("sweep_a*", probe_fast_all, NULL) < 0)
		fail("mark_probe_register_fast");
	mark_arm("sweep_a*");
	for (size_t k = 0; k < sizeof(sweep_counts) / sizeof(sweep_counts[0]); k++)
		measure_sweep_one("fast", sweep_counts[k], n);
	mark_disarm("sweep_a*");
	mark_probe_unregister_fast("sweep_a*", probe_fast_all, NULL);
	mark_synchronize();
#ifdef BENCH_HAVE_TRACER
	if (tracer_begin("sweep_a*") < 0) {
		bench_skip("t3sweep", "tracer", "mark_tracer_start failed: %s", mark_last_error());
		return;
	}
	for (size_t k = 0; k < sizeof(sweep_counts) / sizeof(sweep_counts[0]); k++)
		measure_sweep_one("tracer", sweep_counts[k], n);
	tracer_end("sweep", 0);
#else
	bench_skip("t3sweep", "tracer", "not measured: no tracer sources");
#endif
}

/* ---------------- uprobes ------------------------------------------ */

static const char *tracefs(void)
{
	static const char *dirs[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	char p[256];
	for (int i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "%s/uprobe_events", dirs[i]);
		if (access(p, W_OK) == 0)
			return dirs[i];
	}
	/* Not mounted yet: try to mount it (needs root). */
	if (mount("nodev", dirs[0], "tracefs", 0, NULL) == 0) {
		snprintf(p, sizeof(p), "%s/uprobe_events", dirs[0]);
		if (access(p, W_OK) == 0)
			return dirs[0];
	}
	return NULL;
}

static int write_file(const char *path, const char *text, int append)
{
	int fd = open(path, O_WRONLY | (append ? O_APPEND : O_TRUNC));
	if (fd < 0)
		return -errno;
	ssize_t w = write(fd, text, strlen(text));
	int err = w < 0 ? -errno : 0;
	close(fd);
	return err;
}

/* File offset of a code address of this process: from /proc/self/maps. */
static int file_offset_of(const void *addr, char *path, size_t pathlen, unsigned long *off)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[PATH_MAX + 128];
	int found = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, pgoff;
		char perms[8], file[PATH_MAX];
		file[0] = 0;
		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %4095s", &lo, &hi, perms, &pgoff, file) < 4)
			continue;
		if ((uintptr_t)addr >= lo && (uintptr_t)addr < hi && file[0] == '/') {
			*off = (uintptr_t)addr - lo + pgoff;
			snprintf(path, pathlen, "%s", file);
			found = 1;
			break;
		}
	}
	fclose(f);
	return found;
}

static int site_address_cb(const struct mark_site_info *s, void *arg)
{
	if (s->kind == MARK_KIND_JUMP && !s->is_enabled_test) {
		*(const void **)arg = s->address;
		return 1;
	}
	return 0;
}

static int marker_cb(const struct mark_marker *m, void *arg)
{
	mark_marker_sites(m, site_address_cb, arg);
	return *(const void **)arg != NULL;
}

static void measure_uprobe_tracefs(void)
{
	const char *tfs = tracefs();
	if (!tfs) {
		bench_skip("t3", "uprobe_tracefs", "no writable tracefs uprobe_events (needs root and CONFIG_UPROBE_EVENTS)");
		return;
	}
	const void *site = NULL;
	mark_list("subsys_mark1", marker_cb, &site);
	char path[PATH_MAX], def[PATH_MAX + 128], p[512];
	unsigned long off;
	if (!site || !file_offset_of(site, path, sizeof(path), &off)) {
		bench_skip("t3", "uprobe_tracefs", "could not locate the site's file offset");
		return;
	}
	char ev[64];
	snprintf(ev, sizeof(ev), "site%d", (int)getpid());
	snprintf(def, sizeof(def), "p:bench_mark/%s %s:0x%lx\n", ev, path, off);
	snprintf(p, sizeof(p), "%s/uprobe_events", tfs);
	int err = write_file(p, def, 1);
	if (err) {
		bench_skip("t3", "uprobe_tracefs", "writing uprobe_events failed: %s", strerror(-err));
		return;
	}
	snprintf(p, sizeof(p), "%s/events/bench_mark/%s/enable", tfs, ev);
	err = write_file(p, "1", 0);
	if (err) {
		bench_skip("t3", "uprobe_tracefs", "enabling the uprobe failed: %s", strerror(-err));
	} else {
		uint64_t n = loops_site() / 20 + 1000;   /* each hit is microseconds */
		measure_site("uprobe_tracefs", n);
		write_file(p, "0", 0);
		/* Proof that the probe fired: uprobe_profile counts hits. */
		char prof[512], line[1024];
		snprintf(prof, sizeof(prof), "%s/uprobe_profile", tfs);
		FILE *f = fopen(prof, "r");
		unsigned long long expect = (unsigned long long)(n / BENCH_SUBRUNS + 1) * BENCH_SUBRUNS *
					    (unsigned long long)opts.reps;
		while (f && fgets(line, sizeof(line), f))
			if (strstr(line, ev)) {
				line[strcspn(line, "\n")] = 0;
				const char *last = strrchr(line, ' ');
				unsigned long long hits = last ? strtoull(last + 1, NULL, 10) : 0;
				bench_info("uprobe_profile", "%s (expected hits >= %llu)", line, expect);
				if (hits < expect)
					bench_info("note", "uprobe_tracefs: the kernel counted %llu hits, fewer than the "
							   "%llu site calls measured", hits, expect);
			}
		if (f)
			fclose(f);
	}
	/* Remove the probe.  Its events stay in the ftrace ring buffer (which
	 * overwrites itself): clearing it would also clear other users' data. */
	snprintf(def, sizeof(def), "-:bench_mark/%s\n", ev);
	snprintf(p, sizeof(p), "%s/uprobe_events", tfs);
	write_file(p, def, 1);
}

static void measure_uprobe_bpftrace(void)
{
	char exe[PATH_MAX], prog[PATH_MAX + 64];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len <= 0) {
		bench_skip("t3", "uprobe_bpftrace", "cannot read /proc/self/exe");
		return;
	}
	exe[len] = 0;
	snprintf(prog, sizeof(prog), "uprobe:%s:site_once { }", exe);
	double base = run_site(loops_site() / 20 + 1000);
	int pipefd[2];
	if (pipe(pipefd) < 0) {
		bench_skip("t3", "uprobe_bpftrace", "pipe: %s", strerror(errno));
		return;
	}
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(pipefd[1], 1);
		dup2(pipefd[1], 2);
		close(pipefd[0]);
		close(pipefd[1]);
		execlp("bpftrace", "bpftrace", "-e", prog, (char *)NULL);
		printf("exec bpftrace: %s\n", strerror(errno));
		_exit(127);
	}
	close(pipefd[1]);
	/* Wait (at most 30 s) for "Attaching N probe(s)...". */
	char out[4096];
	size_t used = 0;
	int attached = 0;
	uint64_t deadline = bench_ns() + 30000000000ull;
	while (!attached && bench_ns() < deadline) {
		struct pollfd pfd = { pipefd[0], POLLIN, 0 };
		if (poll(&pfd, 1, 200) <= 0)
			continue;
		ssize_t r = read(pipefd[0], out + used, sizeof(out) - 1 - used);
		if (r <= 0)
			break;
		used += (size_t)r;
		out[used] = 0;
		attached = strstr(out, "Attaching") != NULL;
		if (used >= sizeof(out) - 1)
			break;
	}
	if (attached) {
		usleep(300000);   /* bpftrace prints before the last attach completes */
		/* A probe that did not fire would leave the loop at its disarmed
		 * cost: compare with the baseline measured before attaching. */
		uint64_t n = loops_site() / 20 + 1000;
		double hit = run_site(n);
		if (hit < base + 50)
			bench_skip("t3", "uprobe_bpftrace", "bpftrace attached but site_once() ran at %.1f %s per call "
				   "(%.1f without it): the probe did not fire", hit, bench_unit(), base);
		else
			measure_site("uprobe_bpftrace", n);
	} else {
		out[strcspn(out, "\n")] = 0;
		bench_skip("t3", "uprobe_bpftrace", "bpftrace did not attach: %s", used ? out : "no output");
	}
	kill(pid, SIGINT);
	int status;
	uint64_t stop_deadline = bench_ns() + 10000000000ull;
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (bench_ns() > stop_deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			break;
		}
		/* drain so bpftrace never blocks on a full pipe while exiting */
		struct pollfd pfd = { pipefd[0], POLLIN, 0 };
		if (poll(&pfd, 1, 50) > 0 && read(pipefd[0], out, sizeof(out)) <= 0)
			usleep(10000);
	}
	close(pipefd[0]);
}

int main(int argc, char **argv)
{
	bench_parse_opts(argc, argv, &opts);
	bench_init(argv[0]);
	const char *only = opts.only ? opts.only : "all";
	int all = strcmp(only, "all") == 0;

	if (all || strcmp(only, "local") == 0) {
		measure_rdtsc();
		measure_clock_gettime();
		measure_site("disarmed", loops_site());
		if (mark_arm("subsys_mark1") < 0)
			fail("mark_arm");
		measure_site("armed_noprobe", loops_site());
		mark_disarm("subsys_mark1");
		with_va_probe("va_empty", "%d %p", probe_va_empty);
		with_va_probe("va_read", "%d %p", probe_va_read);
		with_va_probe("va_parse", NULL, probe_va_parse);
		if (mark_probe_register_fast("subsys_mark1", probe_fast, NULL) < 0)
			fail("mark_probe_register_fast");
		mark_arm("subsys_mark1");
		measure_site("fast", loops_site());
		mark_disarm("subsys_mark1");
		mark_probe_unregister_fast("subsys_mark1", probe_fast, NULL);
		mark_synchronize();
		measure_tracer();
		measure_sweep();
	}
	if (all || strcmp(only, "uprobe") == 0) {
		measure_uprobe_tracefs();
		measure_uprobe_bpftrace();
	}
	return 0;
}
