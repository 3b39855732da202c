/*
 * A traced program with known events, driven by tests/tracer/run_tracer_test.py.
 * The tracer is configured from the environment (MARK_TRACE, MARK_MODE, ...),
 * as for any program; each scenario fires markers with values the checker
 * can predict.  Usage: tracer_prog SCENARIO [N] [T]
 */
#define _GNU_SOURCE
#include <mark/mark.h>
#include <mark/tracer.h>

#include <dirent.h>
#include <errno.h>
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct req {
	int len;
	unsigned flags;
};

/*
 * `dlopen_killed`: the process dies (SIGKILL) while the tracer's consumer
 * rewrites the metadata for the dlopen()ed marker, with the new text
 * complete in its temporary file and not yet renamed over `metadata`.
 * libmark's renameat() resolves to this one (the executable comes first in
 * symbol lookup), which passes every call through until the flag is set.
 */
static int kill_at_metadata_rename;

/*
 * `longjmp N`: a probe of marker t_jump raises a signal whose handler
 * leaves with siglongjmp, so the probe's RCU read-side section is never
 * closed; then N t_seq events, and exit.  The exit stops the tracer, whose
 * wait for a grace period waited for that section forever (with every
 * signal blocked: only SIGKILL ended the process).
 */
static void fire_seq(long n);
static sigjmp_buf jump_env;

static void jump_out(int sig)
{
	(void)sig;
	siglongjmp(jump_env, 1);
}

static void raise_in_probe(const struct mark_marker *m, void *priv, const uint64_t *args)
{
	(void)m, (void)priv, (void)args;
	raise(SIGUSR1);
}

static int leave_probe_by_longjmp(long n)
{
	struct sigaction sa = { .sa_handler = jump_out };
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) != 0 || mark_probe_register_fast("t_jump", raise_in_probe, NULL) != 0 ||
	    mark_arm("t_jump") < 0)
		return fprintf(stderr, "set-up: %s\n", mark_last_error()), 1;
	if (sigsetjmp(jump_env, 1) == 0) {
		MARK(t_jump, "%d", 1);
		fprintf(stderr, "the probe did not leave by longjmp\n");
		return 1;
	}
	fire_seq(n);
	printf("left the probe by longjmp\n");
	return 0;
}

/*
 * `cancel`: a thread is cancelled while its first event creates its buffer
 * file.  The program defines fallocate() (libmark's call resolves to it:
 * the executable comes first), which, for the thread that asks for it,
 * cancels that thread and reaches a cancellation point: as a
 * pthread_cancel() from elsewhere during the (long) fallocate of a large
 * buffer would.  The buffer file must not stay open, nor stay behind.
 */
static __thread bool cancel_in_fallocate;

int fallocate(int fd, int mode, off_t offset, off_t len)
{
	if (cancel_in_fallocate) {
		pthread_cancel(pthread_self());
		pthread_testcancel();
	}
	return (int)syscall(SYS_fallocate, fd, mode, offset, len);
}

static void *cancelled_thread(void *unused)
{
	(void)unused;
	cancel_in_fallocate = true;
	MARK(t_cancel, "%d", 1);
	pthread_testcancel();
	return NULL;
}

/* Descriptors open on a buffer file (.mark-ring-N): the tracer closes each
 * one once the file is mapped. */
static int ring_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char link[300], target[4096];
		snprintf(link, sizeof(link), "/proc/self/fd/%s", e->d_name);
		ssize_t len = readlink(link, target, sizeof(target) - 1);
		if (len > 0) {
			target[len] = '\0';
			n += strstr(target, "/.mark-ring-") != NULL;
		}
	}
	if (d)
		closedir(d);
	return n;
}

static int cancel_while_creating(void)
{
	const long i = -1;   /* named i, as fire_seq() names t_seq's argument */
	MARK(t_seq, "%ld", i);   /* the main thread's buffer exists */
	const int before = ring_fds();
	pthread_t th;
	if (pthread_create(&th, NULL, cancelled_thread, NULL) != 0)
		return perror("pthread_create"), 1;
	void *ret;
	pthread_join(th, &ret);
	const int after = ring_fds();
	printf("cancelled %d descriptors %d %d\n", ret == PTHREAD_CANCELED, before, after);
	return 0;
}

/*
 * `noring N`: a thread fires N events while the process has no free
 * descriptor (its buffer file cannot be created), then, descriptors back,
 * a new thread fires N.  The first failure must not use up ring indices or
 * be retried and reported on every event.
 */
static void *fire_seq_thread(void *n)
{
	for (long i = 0; i < (long)(intptr_t)n; i++)
		MARK(t_seq, "%ld", i);
	return NULL;
}

/*
 * Open /dev/null until no descriptor is left (RLIMIT_NOFILE lowered to 64
 * by the caller), into fds[] (room for 64).  The consumer may hold a
 * descriptor of its own for a moment (the metadata it rewrites, a file it
 * creates), and the one it closes afterwards would give the next thread
 * its buffer after all (1 run in 7 of noring_killed recorded all 6001
 * events, losing none): take again what comes free until nothing has for
 * two rounds of 20 ms (the consumer wakes every 10 ms).
 */
static void take_every_descriptor(int *fds, int *nfds)
{
	for (int quiet = 0, rounds = 0; quiet < 2 && rounds < 100; rounds++) {
		int before = *nfds;
		while (*nfds < 64 && (fds[*nfds] = open("/dev/null", O_RDONLY)) >= 0)
			++*nfds;
		quiet = *nfds == before ? quiet + 1 : 0;
		usleep(20000);
	}
}

static int no_descriptor_then_back(long n)
{
	const long i = -1;   /* named i, as fire_seq() names t_seq's argument */
	MARK(t_seq, "%ld", i);   /* the main thread's buffer exists */
	/* ...and its stream file, which the consumer creates when it first
	 * drains it: without a descriptor it could not (those events are
	 * counted lost, a case of its own). */
	char stream[4096];
	snprintf(stream, sizeof(stream), "%s/pid-%d/stream-0", getenv("MARK_TRACE") ? getenv("MARK_TRACE") : ".",
		 (int)getpid());
	struct stat st;
	for (int i = 0; i < 500 && stat(stream, &st) != 0; i++)
		usleep(10000);
	struct rlimit old, low = { 64, 64 };
	if (getrlimit(RLIMIT_NOFILE, &old) != 0 || setrlimit(RLIMIT_NOFILE, &low) != 0)
		return perror("rlimit"), 1;
	int fds[64], nfds = 0;
	take_every_descriptor(fds, &nfds);
	pthread_t th;
	for (int phase = 0; phase < 2; phase++) {
		if (pthread_create(&th, NULL, fire_seq_thread, (void *)(intptr_t)n) != 0)
			return perror("pthread_create"), 1;
		pthread_join(th, NULL);
		while (nfds > 0)
			close(fds[--nfds]);
		setrlimit(RLIMIT_NOFILE, &old);
	}
	return 0;
}

/*
 * `noring_killed N`: N t_seq events with no buffer (no descriptor for its
 * file), then, once the consumer has written them to stream-4096, N more
 * the same way and SIGKILL at once: the consumer writes that stream at
 * most every 100 ms, so the second N are counted only in .mark-stats
 * (by the recording thread) when the process dies.  Prints "written"
 * when the consumer had written the first N, else "not written".
 */
static int no_descriptor_then_killed(long n)
{
	const long i = -1;
	MARK(t_seq, "%ld", i);
	const char *dir = getenv("MARK_TRACE") ? getenv("MARK_TRACE") : ".";
	char stream[4096], loss[4096];
	snprintf(stream, sizeof(stream), "%s/pid-%d/stream-0", dir, (int)getpid());
	snprintf(loss, sizeof(loss), "%s/pid-%d/stream-4096", dir, (int)getpid());
	struct stat st;
	for (int k = 0; k < 500 && stat(stream, &st) != 0; k++)
		usleep(10000);
	struct rlimit old;
	if (getrlimit(RLIMIT_NOFILE, &old) != 0)
		return perror("rlimit"), 1;
	for (int burst = 0; burst < 2; burst++) {
		struct rlimit low = { 64, old.rlim_max < 64 ? old.rlim_max : 64 };
		if (setrlimit(RLIMIT_NOFILE, &low) != 0)
			return perror("rlimit"), 1;
		int fds[64], nfds = 0;
		take_every_descriptor(fds, &nfds);
		pthread_t th;
		if (pthread_create(&th, NULL, fire_seq_thread, (void *)(intptr_t)n) != 0)
			return perror("pthread_create"), 1;
		pthread_join(th, NULL);
		if (burst == 1)
			raise(SIGKILL);
		while (nfds > 0)
			close(fds[--nfds]);
		setrlimit(RLIMIT_NOFILE, &old);
		/* Until its last packet (104 bytes; events_discarded at 72)
		 * reports the N. */
		bool written = false;
		for (int k = 0; k < 2500 && !written; k++) {   /* 5 s */
			uint64_t reported = 0;
			int fd = open(loss, O_RDONLY);
			if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size >= 104 && st.st_size % 104 == 0 &&
			    pread(fd, &reported, sizeof(reported), st.st_size - 104 + 72) == sizeof(reported))
				written = reported == (uint64_t)n;
			if (fd >= 0)
				close(fd);
			if (!written)
				usleep(2000);
		}
		printf("%s\n", written ? "written" : "not written");
		fflush(stdout);
	}
	return 1;
}

/*
 * `nostream N`: the consumer cannot create stream files (EMFILE) for the
 * first 300 ms while the main thread fires N t_seq events over about
 * 600 ms: the events wait in the buffer and all reach the trace (they
 * were counted lost at the first failure).  libmark's openat() resolves
 * to this one, as renameat() below.
 */
static uint64_t refuse_streams_until_ns;   /* CLOCK_MONOTONIC; 0: never */
static long streams_refused;

static uint64_t monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int openat(int dirfd, const char *path, int flags, ...)
{
	unsigned mode = 0;
	if (flags & (O_CREAT | __O_TMPFILE)) {
		va_list ap;
		va_start(ap, flags);
		mode = va_arg(ap, unsigned);
		va_end(ap);
	}
	if (strncmp(path, "stream-", 7) == 0 &&
	    monotonic_ns() < __atomic_load_n(&refuse_streams_until_ns, __ATOMIC_ACQUIRE)) {
		__atomic_fetch_add(&streams_refused, 1, __ATOMIC_RELAXED);
		errno = EMFILE;
		return -1;
	}
	return (int)syscall(SYS_openat, dirfd, path, flags, mode);
}

static int stream_refused_for_a_while(long n)
{
	__atomic_store_n(&refuse_streams_until_ns, monotonic_ns() + 300000000u, __ATOMIC_RELEASE);
	for (long i = 0; i < n; i++) {
		MARK(t_seq, "%ld", i);
		if (i % (n / 60 + 1) == 0)
			usleep(10000);
	}
	printf("refused %ld\n", __atomic_load_n(&streams_refused, __ATOMIC_RELAXED));
	return 0;
}

int renameat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath)
{
	if (__atomic_load_n(&kill_at_metadata_rename, __ATOMIC_ACQUIRE) && strcmp(newpath, "metadata") == 0)
		raise(SIGKILL);
	return (int)syscall(SYS_renameat, olddirfd, oldpath, newdirfd, newpath);
}

static void fire_types(long n)
{
	char longstr[1000];
	memset(longstr, 'x', sizeof(longstr) - 1);
	longstr[sizeof(longstr) - 1] = '\0';
	struct req r = { 0, 0 };
	struct req *req = &r;
	for (long i = 0; i < n; i++) {
		int count = (int)i - 5;
		unsigned u = (unsigned)i * 3u;
		unsigned hexv = 0xabc0u + (unsigned)i;
		void *ptr = (void *)(uintptr_t)(0x1000 + i);
		double d = (double)i + 0.5;
		long big = -1000000000000L * (i + 1);
		signed char small = (signed char)(-(int)i);
		unsigned short us = (unsigned short)(60000 + i);
		req->len = (int)i * 7;
		MARK(t_types, "%d %u %x %p %f %ld %hhd %hu", count, u, hexv, ptr, d, big, small, us);
		char letter = (char)('a' + i % 26);
		unsigned long mask = 0xfedcba9876543210UL ^ (unsigned long)i;
		size_t len = (size_t)i * 1000;
		long long neg = -(long long)i * 3;
		float ratio = (float)i / 4;
		unsigned oct = 0755;
		MARK(t_more, "%c %lx %zu %lld %g %o", letter, mask, len, neg, ratio, oct);
		/* Argument names that are not valid or unique CTF field names as they are. */
		int event = (int)i, _under = 2 * (int)i, dup = 3 * (int)i, x = 4 * (int)i, _x = 5 * (int)i;
		MARK(t_names, "%d %d %d %d %d %d %d", event, _under, dup, dup, event + 1, x, _x);
		char name[32];
		snprintf(name, sizeof(name), "name-%ld", i);
		/* Empty strings are the "strings" scenario's (strings_thread). */
		MARK(t_strings, "%s %d %s %s", name, req->len, i % 2 ? longstr : "-", (const char *)NULL);
	}
}

static long pause_ns;  /* sleep after each burst of t_seq events (argv[3] of "seq") */
static long burst = 1; /* events per burst (argv[4] of "seq") */

/*
 * For the discard scenario: make "a burst outruns the consumer" a fact
 * rather than a race.  The consumer thread ("mark-consumer") and this one
 * share one CPU, and the consumer runs at SCHED_IDLE, so it gets the CPU
 * only while this thread sleeps between bursts (it never preempts a
 * burst).  Needs no privilege: a thread may lower its own process's
 * threads' priority.  Returns 0, or -1 with the reason on stderr.
 */
static int starve_consumer_during_bursts(void)
{
	cpu_set_t mine, one;
	if (sched_getaffinity(0, sizeof(mine), &mine) != 0)
		return perror("sched_getaffinity"), -1;
	CPU_ZERO(&one);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &mine)) {
			CPU_SET(c, &one);
			break;
		}
	if (sched_setaffinity(0, sizeof(one), &one) != 0)
		return perror("sched_setaffinity"), -1;
	/* The consumer names itself as it starts: give it up to 2 s. */
	for (int tries = 0; tries < 2000; tries++) {
		DIR *d = opendir("/proc/self/task");
		struct dirent *e;
		pid_t consumer = 0;
		while (d && (e = readdir(d)) != NULL) {
			char path[300], comm[32] = "";
			snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
			FILE *f = fopen(path, "r");
			if (f && fgets(comm, sizeof(comm), f) && strcmp(comm, "mark-consumer\n") == 0)
				consumer = atoi(e->d_name);
			if (f)
				fclose(f);
		}
		if (d)
			closedir(d);
		if (consumer) {
			struct sched_param none = { 0 };
			if (sched_setaffinity(consumer, sizeof(one), &one) != 0)
				return perror("sched_setaffinity(consumer)"), -1;
			if (sched_setscheduler(consumer, SCHED_IDLE, &none) != 0)
				return perror("sched_setscheduler(consumer, SCHED_IDLE)"), -1;
			return 0;
		}
		usleep(1000);
	}
	fprintf(stderr, "no thread named mark-consumer (is MARK_TRACE set?)\n");
	return -1;
}

/* "seq_sizes": even events are t_seq6, records of 64 bytes, odd ones
 * t_seq of 24: after a big event is dropped, a small one still fits
 * under the fast path's limit, and must not take it (the hole before it
 * is noted on the slow path). */
static bool seq_sizes;

static void fire_seq(long n)
{
	for (long i = 0; i < n; i++) {
		if (seq_sizes && i % 2 == 0) {
			const long b = 1, c = 2, d = 3, e = 4, f = 5;
			MARK(t_seq6, "%ld %ld %ld %ld %ld %ld", i, b, c, d, e, f);
		} else {
			MARK(t_seq, "%ld", i);
		}
		if (pause_ns && (i + 1) % burst == 0) {
			/*
			 * The consumer at SCHED_IDLE gets our CPU only when nothing
			 * else wants it: on a loaded machine (ctest -j, qemu) it may
			 * not have run in any pause.  Before the last burst, wait
			 * (up to 10 s) until it has drained the ring: the burst just
			 * ended left records in it, so it has once it wrote more than
			 * before the pause.  (Waiting only for a first write passed
			 * on a drain long before, and under qemu on 2 busy cores the
			 * last burst once found the ring still full: 256 events kept,
			 * all from the first burst.)
			 */
			const bool last_pause = i + 1 == n - burst;
			struct mark_trace_stats before = { 0 }, st;
			if (last_pause)
				mark_tracer_get_stats(&before);
			struct timespec ts = { pause_ns / 1000000000L, pause_ns % 1000000000L };
			nanosleep(&ts, NULL);
			int waited = 0;
			for (; last_pause && waited < 10000; waited++) {
				mark_tracer_get_stats(&st);
				if (st.bytes_written > before.bytes_written)
					break;
				usleep(1000);
			}
			if (waited == 10000)
				fprintf(stderr, "tracer_prog: the consumer wrote nothing in 10 s before the last burst\n");
		}
	}
}

/*
 * `paced N PAUSE_NS`: N t_seq events (argument i), a sleep of PAUSE_NS
 * after each, with the consumer left alone: many of these started at once
 * write events that interleave in time (test_pairs_many_traces.py).  Not
 * `seq` with a pause, which pins the process to one CPU and starves its
 * consumer for the discard scenario: 320 of them waited for their
 * consumers on that one CPU for about 30 s.
 */
static void fire_paced(long n, long pause)
{
	struct timespec ts = { pause / 1000000000L, pause % 1000000000L };
	for (long i = 0; i < n; i++) {
		MARK(t_seq, "%ld", i);
		nanosleep(&ts, NULL);
	}
}

/*
 * Records of very different sizes in one sequence: most are 24 bytes, some
 * carry a string of up to 1500 bytes (the tracer keeps 253, or 252 and
 * "..."), so a record
 * can be longer than an overwrite chunk of a 4 KiB ring (256 bytes) and
 * some chunks have no record starting in them.
 * Every event carries its index i.
 */
static void fire_mixed(long n)
{
	static char text[1600];
	memset(text, 'm', sizeof(text) - 1);
	for (long i = 0; i < n; i++) {
		if (i % 5 == 3) {
			size_t len = (size_t)(i * 37 % 1500);
			text[len] = '\0';
			MARK(t_mixed, "%ld %s", i, text);
			text[len] = 'm';
		} else {
			MARK(t_seq, "%ld", i);
		}
	}
}

struct thread_arg {
	int idx;
	long n;
};

static void *thread_main(void *p)
{
	struct thread_arg *a = p;
	for (long i = 0; i < a->n; i++)
		MARK(t_thread, "%d %ld", a->idx, i);
	return NULL;
}

static int run_threads(int nthreads, long n)
{
	pthread_t th[64];
	struct thread_arg args[64];
	if (nthreads > 64)
		nthreads = 64;
	for (int t = 0; t < nthreads; t++) {
		args[t].idx = t;
		args[t].n = n;
		if (pthread_create(&th[t], NULL, thread_main, &args[t]) != 0)
			return 1;
	}
	for (int t = 0; t < nthreads; t++)
		pthread_join(th[t], NULL);
	return 0;
}

/* Many short-lived threads, `batch` alive at a time. */
static int run_many_threads(int total, long n)
{
	const int batch = 8;
	pthread_t th[8];
	struct thread_arg args[8];
	for (int base = 0; base < total; base += batch) {
		int k = total - base < batch ? total - base : batch;
		for (int t = 0; t < k; t++) {
			args[t].idx = base + t;
			args[t].n = n;
			if (pthread_create(&th[t], NULL, thread_main, &args[t]) != 0)
				return 1;
		}
		for (int t = 0; t < k; t++)
			pthread_join(th[t], NULL);
	}
	return 0;
}

static volatile sig_atomic_t handler_calls;

static void on_signal(int sig)
{
	(void)sig;
	long k = handler_calls;
	MARK(t_sig, "%ld", k);
	handler_calls = k + 1;
}

static int run_signals(long n)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = { { 0, 50 }, { 0, 50 } };
	setitimer(ITIMER_REAL, &it, NULL);
	for (long i = 0; i < n; i++)
		MARK(t_outer, "%ld %ld", i, i * 2);
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &off, NULL);
	printf("handler_calls %ld\n", (long)handler_calls);
	return 0;
}

/*
 * fork N: parent and child fire their markers (t_parent before and after).
 * fork_exec N (exec_self set): the child fires N t_child events, then execs
 * this program again ("seq N": N t_seq events) with the same environment
 * (MARK_TRACE): the events of the image before exec must reach the trace.
 * fork_exec_full N: the same, with DIR/pid-CHILD.1 .. .999 made by the
 * child before it execs: the new image cannot set the old trace aside.
 */
static int run_fork(long n, const char *exec_self, bool fill_kept)
{
	for (long i = 0; !exec_self && i < n; i++)
		MARK(t_parent, "%ld", i);
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		for (long i = 0; i < n; i++)
			MARK(t_child, "%ld", i);
		const char *dir = getenv("MARK_TRACE");
		for (int k = 1; fill_kept && dir && k < 1000; k++) {
			char path[4096];
			snprintf(path, sizeof(path), "%s/pid-%d.%d", dir, (int)getpid(), k);
			if (mkdir(path, 0700) != 0)
				_exit(126);
		}
		if (exec_self) {
			char num[32];
			snprintf(num, sizeof(num), "%ld", n);
			execl(exec_self, exec_self, "seq", num, (char *)NULL);
			_exit(127);
		}
		exit(0);
	}
	int status;
	waitpid(pid, &status, 0);
	for (long i = 0; !exec_self && i < n; i++)
		MARK(t_parent, "%ld", n + i);
	printf("child %d\nparent %d\n", (int)pid, (int)getpid());
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

/* Fire n events, say so, then wait to be killed (or crash). */
static __attribute__((noreturn)) void run_die(long n, int how)
{
	run_threads(2, n / 2);
	fire_seq(n - 2 * (n / 2));
	printf("ready\n");
	fflush(stdout);
	if (how == 1) {
		/* An unmapped, non-NULL address: a real SIGSEGV (UBSan would stop a NULL store first). */
		volatile uintptr_t addr = 16;
		*(volatile int *)addr = 1;
	}
	for (;;)
		pause();
}

/*
 * The strings scenario: T threads, each firing N events whose %s cycles
 * through "", one byte, 253 bytes (the longest kept whole), "" again and
 * 1000 bytes (kept as its first 252 bytes and "...", tagged cut).
 * Consecutive events of one class alternate empty and non-empty strings,
 * which is what a reader that reuses event objects gets wrong (issue 16,
 * item 1).
 */
static void *strings_thread(void *arg)
{
	long n = (long)(intptr_t)arg;
	char s253[254], s1000[1001];
	memset(s253, 'm', 253);
	s253[253] = '\0';
	memset(s1000, 'z', 1000);
	s1000[1000] = '\0';
	const char *vals[5] = { "", "b", s253, "", s1000 };
	int tid = (int)gettid();
	for (long i = 0; i < n; i++) {
		const char *s = vals[i % 5], *next = vals[(i + 1) % 5];
		MARK(t_str, "%d %ld %s %s", tid, i, s, next);
	}
	return NULL;
}

/* Run fn(n) in t threads (at most 64) and wait for them. */
static int run_in_threads(void *(*fn)(void *), int t, long n)
{
	pthread_t th[64];
	if (t > 64)
		t = 64;
	for (int k = 0; k < t; k++)
		if (pthread_create(&th[k], NULL, fn, (void *)(intptr_t)n) != 0)
			return perror("pthread_create"), 1;
	for (int k = 0; k < t; k++)
		pthread_join(th[k], NULL);
	return 0;
}

/*
 * The values scenario (issue 16, items 4, 6, 7): doubles whose shortest
 * round-trip text the checker knows (Python's repr), every %c byte, and
 * field names taken from the format or the argument expression.
 */
static void fire_values(long n)
{
	static const double fixed[] = { 0.876, 0.8759999999999999, 0.1, 1.0 / 3, 1e300, 5e-324, -0.0, 123456789012345678.0,
					2.5, 100, 1e-7, 0.30000000000000004, 1.7976931348623157e308 };
	uint64_t x = 88172645463325252ULL;
	for (long i = 0; i < n; i++) {
		double d;
		if (i < (long)(sizeof(fixed) / sizeof(fixed[0]))) {
			d = fixed[i];
		} else {
			/* xorshift64: any bit pattern that is a finite double */
			do {
				x ^= x << 13;
				x ^= x >> 7;
				x ^= x << 17;
				memcpy(&d, &x, sizeof(d));
			} while (d != d || d - d != 0);
			if (i % 2)   /* and many of the short decimals people record */
				d = (double)(x % 100000) / 1000;
		}
		MARK(t_dbl, "%f", d);
	}
	for (int c = 0; c < 256; c++) {
		char ch = (char)c;
		MARK(t_chr, "%c", ch);
	}
	int proc = 42, fd = 7, *ip = &fd;
	unsigned len = 9;
	struct req r = { 3, 4 }, *rp = &r;
	const char *cmd = "prog";
	MARK(t_fmt_names, "pid %d comm %s", proc, cmd);   /* the format's words win */
	MARK(t_eq_names, "fd=%d len: %u", 1 + fd, len * 2);
	MARK(t_expr_names, "%p %d %d %d %p %d", (void *)rp, *ip, rp->len, (int)(r.flags), &r, fd + 1);
	/* Operators that change the value name nothing: -fd is not fd. */
	MARK(t_op_names, "%d %d %u %d %d", -fd, !fd, ~len, +fd, -(int)len);
}

/*
 * The pairs scenario (mark export's slices): per thread, an end whose begin
 * is missing (as after a loss), N well nested req/io slices, a req whose
 * io end is missing, and a last req that never ends.
 */
static void *pairs_thread(void *arg)
{
	long n = (long)(intptr_t)arg;
	long i = -1;
	MARK(t_req_end, "%ld", i);
	for (i = 0; i < n; i++) {
		MARK(t_req_begin, "%ld", i);
		MARK(t_io_begin, "%ld", i);
		MARK(t_io_end, "%ld", i);
		MARK(t_req_end, "%ld", i);
	}
	MARK(t_req_begin, "%ld", i);
	MARK(t_io_begin, "%ld", i);
	MARK(t_req_end, "%ld", i);
	i++;
	MARK(t_req_begin, "%ld", i);
	return NULL;
}

/*
 * forkfaults N: N rounds of fork, one t_forked event in the child, _exit;
 * prints the children's mean page faults, minor and major (wait4's rusage), which a
 * traced child pays for setting up its trace: the scenario compares it
 * with the same run untraced.
 */
static int run_forkfaults(long n)
{
	long faults = 0;
	for (long i = 0; i < n; i++) {
		pid_t pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			MARK(t_forked, "%ld", i);
			_exit(0);
		}
		int status;
		struct rusage ru;
		if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr, "child %d failed\n", (int)pid);
			return 1;
		}
		faults += ru.ru_minflt + ru.ru_majflt;
	}
	printf("child_faults %.1f\n", (double)faults / (double)n);
	return 0;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "types";
	long n = argc > 2 ? atol(argv[2]) : 10;
	int t = argc > 3 ? atoi(argv[3]) : 4;   /* threads (not for dlopen) */
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(what, "types") == 0)
		fire_types(n);
	else if (strcmp(what, "seq") == 0 || strcmp(what, "seq_sizes") == 0) {
		seq_sizes = what[3] == '_';
		pause_ns = argc > 3 ? atol(argv[3]) : 0;
		burst = argc > 4 && atol(argv[4]) > 0 ? atol(argv[4]) : 1;
		if (pause_ns && starve_consumer_during_bursts() != 0)
			return 3;
		fire_seq(n);
	}
	else if (strcmp(what, "paced") == 0)
		fire_paced(n, argc > 3 ? atol(argv[3]) : 0);
	else if (strcmp(what, "mixed") == 0)
		fire_mixed(n);
	else if (strcmp(what, "threads") == 0)
		return run_threads(t, n);
	else if (strcmp(what, "pairs") == 0)
		return run_in_threads(pairs_thread, t, n);
	else if (strcmp(what, "values") == 0)
		fire_values(n);
	else if (strcmp(what, "strings") == 0)
		return run_in_threads(strings_thread, t, n);
	else if (strcmp(what, "many") == 0)
		return run_many_threads(t, n);
	else if (strcmp(what, "signals") == 0)
		return run_signals(n);
	else if (strcmp(what, "fork") == 0)
		return run_fork(n, NULL, false);
	else if (strcmp(what, "forkfaults") == 0)
		return run_forkfaults(n);
	else if (strcmp(what, "fork_exec") == 0 || strcmp(what, "fork_exec_full") == 0)
		return run_fork(n, argv[0], what[9] == '_');
	else if (strcmp(what, "kill") == 0)
		run_die(n, 0);
	else if (strcmp(what, "killseq") == 0) {
		/* All N events from the main thread, then wait to be killed: in
		 * overwrite mode with a small buffer, its ring has wrapped. */
		fire_seq(n);
		printf("ready\n");
		fflush(stdout);
		for (;;)
			pause();
	}
	else if (strcmp(what, "segv") == 0)
		run_die(n, 1);
	else if (strcmp(what, "noring") == 0)
		return no_descriptor_then_back(n);
	else if (strcmp(what, "noring_killed") == 0)
		return no_descriptor_then_killed(n);
	else if (strcmp(what, "nostream") == 0)
		return stream_refused_for_a_while(n);
	else if (strcmp(what, "longjmp") == 0)
		return leave_probe_by_longjmp(n);
	else if (strcmp(what, "cancel") == 0)
		return cancel_while_creating();
	else if (strcmp(what, "exec_at_once") == 0) {
		/* exec_at_once N: N t_early events as soon as main() runs, then
		 * exec this program ("seq 1"), before the consumer's first round
		 * could describe t_early in the metadata. */
		for (long i = 0; i < n; i++)
			MARK(t_early, "%ld", i);
		/* exec_chdir (run_tracer_test.py): a relative MARK_TRACE, and
		 * the program changes directory before it execs. */
		const char *to = getenv("TRACER_PROG_CHDIR");
		if (to && chdir(to) != 0)
			return perror("chdir"), 1;
		execl(argv[0], argv[0], "seq", "1", (char *)NULL);   /* absolute in the tests */
		return 127;
	}
	else if ((strcmp(what, "dlopen") == 0 || strcmp(what, "dlopen_killed") == 0) && argc > 3) {
		/* tracer_prog dlopen N PATH: a marker that did not exist at start.
		 * dlopen_killed: killed while its metadata is rewritten (above). */
		fire_seq(n);
		struct timespec settle = { 0, 100000000 };
		if (what[6] == '_') {
			nanosleep(&settle, NULL);   /* the first metadata is written */
			__atomic_store_n(&kill_at_metadata_rename, 1, __ATOMIC_RELEASE);
		}
		void *h = dlopen(argv[3], RTLD_NOW);
		if (!h) {
			fprintf(stderr, "dlopen: %s\n", dlerror());
			return 1;
		}
		void (*fire)(long) = (void (*)(long))dlsym(h, "tracer_dso_fire");
		if (!fire)
			return 1;
		fire(n);
		fire_seq(n);
		if (what[6] == '_')
			for (;;)
				pause();   /* until the consumer's rename kills it */
	} else if (strcmp(what, "closefds") == 0 && argc > 3) {
		/* tracer_prog closefds N FILE: a daemon closing every descriptor,
		 * then reusing the numbers for files of its own. */
		fire_seq(n);
		struct timespec ts = { 0, 30000000 };
		nanosleep(&ts, NULL);   /* the consumer has opened its stream file */
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
		FILE *f[8];
		for (int k = 0; k < 8; k++)
			f[k] = fopen(argv[3], "a");
		fire_seq(n);
		nanosleep(&ts, NULL);
		for (int k = 0; k < 8; k++)
			if (f[k]) {
				fputs("mine\n", f[k]);
				fclose(f[k]);
			}
	} else if (strcmp(what, "wait") == 0) {
		/* tracer_prog wait N: the session is set up (MARK_TRACE); print
		 * "ready", wait for a line on stdin (a test plants files in the
		 * trace directory meanwhile), then fire N t_seq events. */
		printf("ready\n");
		char line[16];
		if (!fgets(line, sizeof(line), stdin))
			return 1;
		fire_seq(n);
	} else if (strcmp(what, "waitkill") == 0) {
		/* tracer_prog waitkill N: as wait, then print "fired" and wait to
		 * be killed, its events still in its buffers (a recording that
		 * `mark record --pid` started from outside, for recovery). */
		printf("ready\n");
		fflush(stdout);
		char line[16];
		if (!fgets(line, sizeof(line), stdin))
			return 1;
		fire_seq(n);
		printf("fired\n");
		fflush(stdout);
		for (;;)
			pause();
	} else if (strcmp(what, "none") == 0)
		printf("untraced run ok\n");
	else {
		fprintf(stderr, "unknown scenario %s\n", what);
		return 2;
	}
	return 0;
}
