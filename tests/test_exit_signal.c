/*
 * A marker fired by a signal handler that interrupts a thread's exit must
 * not hang the process (found by a review of the tracer).
 *
 * liburcu-bp unregisters an exiting thread from its TSD destructor, then
 * restores the signal mask and takes its init_lock (urcu_bp_exit).  A
 * signal handler that fired an armed marker there made urcu_bp_read_lock()
 * register the thread again, which takes init_lock, held by the same
 * thread: it deadlocked on itself, and every thread whose first marker had
 * to register blocked behind it.
 *
 * Threads that fire one marker and exit, 4 at a time, while a 50 us
 * ITIMER_REAL signal fires a marker in whichever thread it interrupts.  A
 * fast probe counts the events it receives; each marker counts what it
 * produced.  The work runs in a child (forked, then this program exec'd
 * anew) killed after 120 s: a hang fails the test, and so does any
 * difference between produced and delivered events (none is dropped: see
 * docs/markers.md, "Signals and thread exit").  On the old code the child
 * hung within a second or two.  MARK_EXIT_SIGNAL_ROUNDS overrides the
 * number of rounds.
 */
#define _GNU_SOURCE
#include <mark/mark.h>

#include "testutil_wait.h"

#include <pthread.h>
#include <stdint.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static atomic_long produced, delivered;
static pthread_key_t late_key;

static void count(const struct mark_marker *m, void *priv, const uint64_t *args)
{
	(void)m, (void)priv, (void)args;
	atomic_fetch_add_explicit(&delivered, 1, memory_order_relaxed);
}

static void on_alarm(int sig)
{
	if (MARK_ENABLED(exit_sig_handler))
		atomic_fetch_add_explicit(&produced, 1, memory_order_relaxed);
	MARK(exit_sig_handler, "%d", sig);
}

/* A key created after libmark's and liburcu-bp's: its destructor runs after
 * liburcu-bp unregistered the thread.  Its event must be delivered too. */
static void late_destructor(void *v)
{
	if (MARK_ENABLED(exit_sig_key))
		atomic_fetch_add_explicit(&produced, 1, memory_order_relaxed);
	MARK(exit_sig_key, "%ld", (long)(intptr_t)v);
}

static void *worker(void *arg)
{
	pthread_setspecific(late_key, (void *)1);
	if (MARK_ENABLED(exit_sig_thread))
		atomic_fetch_add_explicit(&produced, 1, memory_order_relaxed);
	MARK(exit_sig_thread, "%ld", (long)(intptr_t)arg);
	return NULL;
}

static int child(long rounds)
{
	if (mark_probe_register_fast("exit_sig_*", count, NULL) != 0 ||
	    mark_arm("exit_sig_*") < 0) {
		fprintf(stderr, "register/arm failed: %s\n", mark_last_error());
		return 2;
	}
	pthread_key_create(&late_key, late_destructor);
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = { { 0, 50 }, { 0, 50 } };
	setitimer(ITIMER_REAL, &it, NULL);
	for (long i = 0; i < rounds; i++) {
		pthread_t t[4];
		for (int j = 0; j < 4; j++)
			if (pthread_create(&t[j], NULL, worker, (void *)(intptr_t)i) != 0)
				return 2;
		for (int j = 0; j < 4; j++)
			pthread_join(t[j], NULL);
	}
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &off, NULL);
	long p = atomic_load(&produced), d = atomic_load(&delivered);
	printf("%ld rounds: produced %ld, delivered %ld\n", rounds, p, d);
	if (p != d || p < rounds * 8) {
		fprintf(stderr, "FAIL: produced %ld, delivered %ld\n", p, d);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *r = getenv("MARK_EXIT_SIGNAL_ROUNDS");
	long rounds = r ? atol(r) : 3000;
	if (argc > 1 && strcmp(argv[1], "child") == 0)
		return child(rounds);
	pid_t pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		/* A fresh image, not the forked copy: the parent may have an
		 * agent thread, and qemu-user 7.2 aborts a forked child of a
		 * multi-threaded process that starts threads (tests/CMakeLists.txt). */
		execl(argv[0], argv[0], "child", (char *)NULL);
		_exit(3);
	}
	/* liburcu blocks signals while it waits: SIGKILL, not a timer in the child.
	 * 120 s: qemu-user takes ~25 s, natively ~1 s. */
	int status = 0;
	if (!testutil_wait_bounded(pid, 120, &status, NULL)) {
		fprintf(stderr, "FAIL: the child hung for 120 s (signal handler marker during thread exit)\n");
		return 1;
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	fprintf(stderr, "FAIL: child died of signal %d\n", WTERMSIG(status));
	return 1;
}
