/*
 * Fuzz target for crash recovery (src/tracer/recover.c, mark_trace_recover())
 * and the CLI's reader of .mark-stats (cli/liveline.c): the code that root
 * runs on files a traced user controls (issue 10, defects 2 and 3).
 *
 * The input describes a trace directory: a sequence of records
 *
 *     u8 file   which file (below); bit 7: make it a symbolic link to a
 *               file outside the trace instead ("victim")
 *     u32 size  the file's size (at most 1 MiB); bytes past `len` are zero
 *     u16 len   bytes that follow
 *     len bytes the file's start
 *
 * The harness writes those files into a scratch trace directory, runs the
 * readers of `mark record` on it (live_stats_read, live_stats_markers),
 * then mark_trace_recover(), and checks (abort on violation, reported as
 * a crash):
 *   - recovery returns >= 0, or < 0 with an error message;
 *   - the victim outside the trace is byte for byte unchanged, whatever
 *     links point to it.
 * Sanitizers (ASan/UBSan) catch every out-of-bounds access.
 *
 * Built as a libFuzzer-style target (LLVMFuzzerTestOneInput): afl++'s
 * afl-clang-fast -fsanitize=fuzzer links it with afl's persistent-mode
 * driver, clang -fsanitize=fuzzer with libFuzzer.
 *
 * Built with -DMARK_FUZZ_GEN_SEEDS instead, it is a program that writes a
 * seed corpus into the directory given as argument: real traces of child
 * processes killed with SIGKILL while tracing (each mode, a forked
 * grandchild's pid-P sub-trace), recorded by the real tracer and packed in
 * the format above.
 */
#define _GNU_SOURCE
#include "liveline.h"
#include "tracer/trace_format.h"
#include "tracer/tracer.h"
#include "core/internal.h"

#include <mark/mark.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The pid of the sub-trace: above the default pid_max (4194304 is the
 * largest), so never a live process. */
#define CHILD "pid-4194305"
#define CHILD_PID 4194305

static const char *const names[] = {
	".mark-stats", ".mark-ring-0", ".mark-ring-1", "stream-0", "stream-1", "metadata",
	CHILD "/.mark-stats", CHILD "/.mark-ring-0", CHILD "/stream-0", CHILD "/metadata",
};
#define NNAMES (sizeof(names) / sizeof(names[0]))
#define MAX_SIZE (1u << 20)

#ifndef MARK_FUZZ_GEN_SEEDS

static char work[256], trace[300], victim[300];
static const char victim_text[] = "root:secret:0:0:do not change me\n";

static void check(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "invariant violated: %s\n", what);
		abort();
	}
}

/* Remove every file of the trace directory and its sub-directories (two levels). */
static void clean(const char *dir, int depth)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char p[600];
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (e->d_type == DT_DIR && depth < 2) {
			clean(p, depth + 1);
			rmdir(p);
		} else {
			unlink(p);
		}
	}
	closedir(d);
}

static void cleanup(void)
{
	clean(trace, 0);
	rmdir(trace);
	unlink(victim);
	rmdir(work);
}

static void setup(void)
{
	/* run_recover.sh points MARK_FUZZ_SCRATCH at a directory it removes
	 * afterwards: afl kills its processes, which then cannot clean up. */
	const char *base = getenv("MARK_FUZZ_SCRATCH");
	if (!base || !*base)
		base = getenv("TMPDIR");
	if (base && *base)
		mkdir(base, 0700);
	snprintf(work, sizeof(work), "%s/mark-fuzz-recover-XXXXXX", base && *base ? base : "/tmp");
	check(mkdtemp(work) != NULL, "mkdtemp");
	atexit(cleanup);
	snprintf(trace, sizeof(trace), "%s/t", work);
	snprintf(victim, sizeof(victim), "%s/victim", work);
	check(mkdir(trace, 0700) == 0, "mkdir trace");
	int fd = open(victim, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	check(fd >= 0 && write(fd, victim_text, sizeof(victim_text) - 1) == (ssize_t)sizeof(victim_text) - 1,
	      "write victim");
	close(fd);
}

static void write_file(unsigned sel, uint32_t size, const uint8_t *p, size_t len)
{
	const char *name = names[(sel & 0x7f) % NNAMES];
	char path[600];
	if (strchr(name, '/')) {
		snprintf(path, sizeof(path), "%s/" CHILD, trace);
		mkdir(path, 0700);
	}
	snprintf(path, sizeof(path), "%s/%s", trace, name);
	unlink(path);
	if (sel & 0x80) {
		if (symlink(victim, path) != 0) {
			/* best effort: the name may be a directory */
		}
		return;
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	size_t n = len < size ? len : size;
	static uint8_t copy[65536];
	if (n > 40 && strstr(name, MARK_TF_STATS)) {
		/* An odd seqlock sequence only makes the CLI's reader retry for
		 * 100 ms (ctest recover_stats_race covers it): keep it even, or
		 * the fuzzer spends its time sleeping. */
		memcpy(copy, p, n);
		copy[40] &= (uint8_t)~1u;
		p = copy;
	}
	if (write(fd, p, n) != (ssize_t)n || ftruncate(fd, size) != 0) {
		/* a short file is one more case */
	}
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!work[0])
		setup();
	clean(trace, 0);
	size_t off = 0;
	while (off + 7 <= size) {
		unsigned sel = data[off];
		uint32_t fsize;
		uint16_t len;
		memcpy(&fsize, data + off + 1, 4);
		memcpy(&len, data + off + 5, 2);
		off += 7;
		if (len > size - off)
			len = (uint16_t)(size - off);
		write_file(sel, fsize % (MAX_SIZE + 1), data + off, len);
		off += len;
	}
	/* The readers of `mark record`, on the untouched files. */
	struct live_stats ls;
	live_stats_read(trace, &ls);
	struct live_marker_count *m = NULL;
	size_t nm = 0;
	if (live_stats_markers(trace, &m, &nm) == 0)
		free(m);
	int r = mark_trace_recover(trace);
	check(r >= 0 || mark_last_error()[0] != '\0', "a failed recovery says why");
	/* A second run on what the first left: idempotent, never worse. */
	r = mark_trace_recover(trace);
	check(r >= 0 || mark_last_error()[0] != '\0', "a failed second recovery says why");
	char buf[sizeof(victim_text) + 16];
	int fd = open(victim, O_RDONLY | O_CLOEXEC);
	check(fd >= 0, "the victim still exists");
	ssize_t got = read(fd, buf, sizeof(buf));
	close(fd);
	check(got == (ssize_t)sizeof(victim_text) - 1 && memcmp(buf, victim_text, (size_t)got) == 0,
	      "the file behind a planted symlink is unchanged");
	return 0;
}

#else /* MARK_FUZZ_GEN_SEEDS */

static FILE *seed;

static void put(unsigned sel, const char *path, int32_t set_pid)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	struct stat sb;
	fstat(fd, &sb);
	static uint8_t buf[MAX_SIZE];
	ssize_t n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0)
		return;
	if (set_pid && sel % NNAMES == 6 && n >= 28)
		memcpy(buf + 24, &set_pid, 4);   /* struct mark_tf_stats.pid */
	/* Trailing zeros come back from `size`: keeps the seeds small. */
	while (n > 0 && buf[n - 1] == 0)
		n--;
	if (n > 65535)
		n = 65535;
	uint8_t s = (uint8_t)sel;
	uint32_t size = (uint32_t)sb.st_size;
	uint16_t len = (uint16_t)n;
	fwrite(&s, 1, 1, seed);
	fwrite(&size, 4, 1, seed);
	fwrite(&len, 2, 1, seed);
	fwrite(buf, 1, (size_t)n, seed);
}

/* A process that traces into dir and dies by SIGKILL with events in its buffers. */
static pid_t traced_child(const char *dir, enum mark_trace_mode mode, int events, int fork_too)
{
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	const char *globs[] = { "*", NULL };
	struct mark_trace_config cfg = { .directory = dir, .mode = mode, .buffer_size = 4096, .globs = globs };
	if (mark_tracer_start(&cfg) != 0)
		_exit(1);
	if (fork_too && fork() == 0) {
		for (int i = 0; i < events; i++)
			MARK(fz_child, "%d", i);
		raise(SIGKILL);
	}
	for (int i = 0; i < events; i++) {
		MARK(fz_int, "%d %lu", i, (unsigned long)i * 3);
		MARK(fz_str, "%s %d", i % 2 ? "odd" : "even", i);
		if (i == events / 2)
			usleep(30000);   /* the consumer writes some packets */
	}
	usleep(fork_too ? 50000 : 0);
	raise(SIGKILL);
	_exit(2);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: gen_recover_seeds CORPUS_DIR\n");
		return 2;
	}
	mkdir(argv[1], 0700);
	char tmp[] = "/tmp/mark-seed-XXXXXX";
	if (!mkdtemp(tmp))
		return 1;
	static const struct {
		enum mark_trace_mode mode;
		int events, fork_too;
	} runs[] = { { MARK_TRACE_DISCARD, 300, 0 }, { MARK_TRACE_OVERWRITE, 300, 0 }, { MARK_TRACE_BLOCK, 300, 0 },
		     { MARK_TRACE_DISCARD, 5, 0 }, { MARK_TRACE_OVERWRITE, 40, 1 } };
	int made = 0;
	for (size_t k = 0; k < sizeof(runs) / sizeof(runs[0]); k++) {
		char dir[400];
		snprintf(dir, sizeof(dir), "%s/run%zu", tmp, k);
		pid_t pid = traced_child(dir, runs[k].mode, runs[k].events, runs[k].fork_too);
		int st;
		waitpid(pid, &st, 0);
		usleep(100000);   /* a forked grandchild dies too */
		char sp[500], pd[450];
		snprintf(pd, sizeof(pd), "%s/pid-%d", dir, (int)pid);
		snprintf(sp, sizeof(sp), "%s/seed-%zu", argv[1], k);
		seed = fopen(sp, "wb");
		if (!seed)
			return 1;
		for (unsigned sel = 0; sel < 6; sel++) {
			char f[600];
			snprintf(f, sizeof(f), "%s/%s", pd, names[sel]);
			put(sel, f, 0);
		}
		/* The grandchild's trace, as the pid-P sub-trace of this one. */
		DIR *d = opendir(dir);
		struct dirent *e;
		while (d && (e = readdir(d))) {
			if (strncmp(e->d_name, "pid-", 4) || atoi(e->d_name + 4) == pid)
				continue;
			const char *sub[] = { ".mark-stats", ".mark-ring-0", "stream-0", "metadata" };
			for (unsigned i = 0; i < 4; i++) {
				char f[700];
				snprintf(f, sizeof(f), "%s/%s/%s", dir, e->d_name, sub[i]);
				put(6 + i, f, CHILD_PID);
			}
		}
		if (d)
			closedir(d);
		fclose(seed);
		made++;
	}
	char cmd[100];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmp);
	printf("%d seeds from real traces in %s\n", made, argv[1]);
	return 0;
}

#endif
