/*
 * Event handlers and fork(): libmark starts no thread, so a forked child
 * (and, with MARK_AGENT=0, the process itself) stays single-threaded and
 * may unshare(CLONE_NEWUSER) (docs/markers.md, "Namespaces"); and a
 * handler may fork after deregistering a handler with NOWAIT.
 *
 * Before the fix, retired handler arrays and NOWAIT handlers were freed
 * with liburcu's call_rcu: its first use (here the second DEFINE on one
 * list) started a worker thread, liburcu's fork handler started one again
 * in every child, and unshare(CLONE_NEWUSER) failed with EINVAL; a handler
 * that forked after a NOWAIT deregistration deadlocked with that worker.
 *
 * Sanitizer runtimes may have threads of their own: the baseline (thread
 * counts of this process and of a child, and whether such a child may
 * unshare) is taken by a constructor that runs before the DEFINEs'.
 * Runs with MARK_AGENT=0 (it execs itself so if need be).
 */
#define _GNU_SOURCE
#include <mark/eventhandler.h>
#include "testutil.h"
#include "testutil_wait.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef void (*ev_fn)(void *arg, int x);
EVENTHANDLER_DECLARE(ehf_ev, ev_fn);
EVENTHANDLER_DECLARE(ehf_other, ev_fn);
EVENTHANDLER_DECLARE(ehf_reload, ev_fn);

static int base_threads, base_child_threads, base_child_unshare_errno;

/* A child that reports its thread count and unshare's errno (0: it worked). */
static void child_probe(int *threads, int *unshare_errno)
{
	int fds[2];
	if (pipe(fds) != 0) {
		perror("pipe");
		exit(1);
	}
	fflush(stdout);   /* not printed again by the child */
	pid_t p = fork();
	if (p == 0) {
		int out[2];
		out[0] = testutil_count_entries("/proc/self/task");
		out[1] = unshare(CLONE_NEWUSER) == 0 ? 0 : errno;
		(void)!write(fds[1], out, sizeof(out));
		_exit(0);
	}
	close(fds[1]);
	int in[2] = { -1, -1 };
	if (read(fds[0], in, sizeof(in)) != (ssize_t)sizeof(in))
		in[0] = -1;
	close(fds[0]);
	waitpid(p, NULL, 0);
	*threads = in[0];
	*unshare_errno = in[1];
}

/* Before any EVENTHANDLER_DEFINE constructor of this executable (priority). */
static void __attribute__((constructor(101))) baseline(void)
{
	base_threads = testutil_count_entries("/proc/self/task");
	child_probe(&base_child_threads, &base_child_unshare_errno);
}

static int calls;
static void h1(void *arg, int x) { (void)arg; (void)x; calls++; }
static void h2(void *arg, int x) { (void)arg; (void)x; calls++; }
static void nothing(void *arg, int x) { (void)arg; (void)x; }
/* Two handlers on one list, the ordinary way: the second retires an array. */
EVENTHANDLER_DEFINE(ehf_ev, h1, NULL, EVENTHANDLER_PRI_ANY);
EVENTHANDLER_DEFINE(ehf_ev, h2, NULL, EVENTHANDLER_PRI_ANY);

/* "config reloaded": drop an obsolete handler (NOWAIT, allowed in a
 * handler), then restart a worker process. */
static int fork_in_handler_status = -1;
static void on_reload(void *arg, int x)
{
	(void)x;
	CHECK_EQ(EVENTHANDLER_DEREGISTER_NOWAIT(ehf_other, (eventhandler_tag)arg), 0);
	usleep(50 * 1000);
	pid_t p = fork();
	if (p == 0)
		_exit(0);
	int st;
	fork_in_handler_status = waitpid(p, &st, 0) == p && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Runs the fork-in-handler scenario in a child, bounded to 20 s (liburcu
 * blocks signals while it waits, so the child's own alarm could not end a
 * hang: the parent kills it). */
static void fork_in_handler(void)
{
	fflush(stdout);
	pid_t p = fork();
	if (p == 0) {
		int failures_before = testutil_failures;   /* the parent's, inherited */
		eventhandler_tag t = EVENTHANDLER_REGISTER(ehf_other, nothing, NULL, 0);
		eventhandler_tag r = EVENTHANDLER_REGISTER(ehf_reload, on_reload, t, 0);
		EVENTHANDLER_INVOKE(ehf_reload, 1);
		int ok = fork_in_handler_status == 0 && testutil_failures == failures_before;
		EVENTHANDLER_DEREGISTER(ehf_reload, r);
		_exit(ok ? 0 : 1);
	}
	int st = 0;
	if (!testutil_wait_bounded(p, 20, &st, NULL)) {
		fprintf(stderr, "fork() inside a handler after a NOWAIT deregistration hung for 20 s\n");
		CHECK(!"fork in handler hung");
		return;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fprintf(stderr, "the child that forked in a handler: status %#x\n", st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(int argc, char **argv)
{
	(void)argc;
	/* The control agent is a thread of the process: measure without it. */
	const char *agent = getenv("MARK_AGENT");
	if (!agent || strcmp(agent, "0") != 0) {
		setenv("MARK_AGENT", "0", 1);
		execv("/proc/self/exe", argv);
		perror("execv /proc/self/exe");
		return 1;
	}
	if (base_child_unshare_errno == EPERM || base_child_unshare_errno == ENOSPC ||
	    base_child_unshare_errno == ENOSYS)
		TEST_SKIP("this machine denies unshare(CLONE_NEWUSER) (%s)", strerror(base_child_unshare_errno));

	EVENTHANDLER_INVOKE(ehf_ev, 1);
	CHECK_EQ(calls, 2);
	CHECK_EQ(mark_eventhandler_count("ehf_ev"), 2);
	/* More changes that retire memory: a registration on a list with
	 * handlers, a NOWAIT deregistration. */
	eventhandler_tag t = EVENTHANDLER_REGISTER(ehf_ev, h1, NULL, EVENTHANDLER_PRI_FIRST);
	CHECK(t != NULL);
	CHECK_EQ(EVENTHANDLER_DEREGISTER_NOWAIT(ehf_ev, t), 0);
	EVENTHANDLER_INVOKE(ehf_ev, 2);
	CHECK_EQ(calls, 4);

	int n = testutil_count_entries("/proc/self/task");
	printf("threads: %d at start, %d now\n", base_threads, n);
	CHECK_EQ(n, base_threads);

	int child_threads, child_errno;
	child_probe(&child_threads, &child_errno);
	printf("child: %d threads (baseline %d); unshare(CLONE_NEWUSER): %s (baseline %s)\n", child_threads,
	       base_child_threads, child_errno ? strerror(child_errno) : "ok",
	       base_child_unshare_errno ? strerror(base_child_unshare_errno) : "ok");
	CHECK_EQ(child_threads, base_child_threads);
	CHECK_EQ(child_errno, base_child_unshare_errno);

	fork_in_handler();

	/* The process itself, if nothing but libmark could have a thread. */
	if (base_threads == 1) {
		int r = unshare(CLONE_NEWUSER);
		printf("this process: unshare(CLONE_NEWUSER) = %d (%s)\n", r, r ? strerror(errno) : "ok");
		CHECK_EQ(r, 0);
	}
	TEST_DONE();
}
