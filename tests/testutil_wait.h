/* Waiting for a child with a bound, for the tests of hangs (POSIX: kept
 * apart from testutil.h, which strict C99/C11 tests include). */
#ifndef MARK_TESTUTIL_WAIT_H
#define MARK_TESTUTIL_WAIT_H

#include <signal.h>
#include <stdio.h>
#include <stdbool.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/*
 * Wait for child `pid` at most `seconds`: true with its wait status in
 * *status, or false after it was killed (SIGKILL) and reaped.  *elapsed
 * (may be NULL) gets the seconds waited.  For the tests of hangs: liburcu
 * blocks every signal while it waits for a grace period, so a timer in the
 * child itself cannot end it.
 */
static inline bool testutil_wait_bounded(pid_t pid, int seconds, int *status, double *elapsed)
{
	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	bool exited = false;
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (waitpid(pid, status, WNOHANG) == pid) {
			exited = true;
			break;
		}
		if (now.tv_sec - start.tv_sec > seconds) {
			kill(pid, SIGKILL);
			waitpid(pid, status, 0);
			break;
		}
		struct timespec step = { 0, 5 * 1000 * 1000 };
		nanosleep(&step, NULL);
	}
	if (elapsed)
		*elapsed = (double)(now.tv_sec - start.tv_sec) + (double)(now.tv_nsec - start.tv_nsec) / 1e9;
	return exited;
}

/*
 * Run scenario() in a forked child (its return value the exit status) and
 * wait for it as testutil_wait_bounded() does.  Output is flushed first,
 * so the child does not write the parent's buffered lines again.
 */
static inline bool testutil_run_bounded(int (*scenario)(void), int seconds, int *status, double *elapsed)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0)
		_exit(scenario());
	*status = 0;
	if (elapsed)
		*elapsed = 0;
	if (pid < 0)
		return false;
	return testutil_wait_bounded(pid, seconds, status, elapsed);
}

#endif
