/*
 * A forked child of a mark-linked program must be able to enter a new user
 * namespace (unshare(CLONE_NEWUSER), which the kernel refuses to a
 * multi-threaded process), as sandboxes do right after fork; with the agent
 * on, and with tracing on (MARK_TRACE set by the ctest entry).  The child
 * also records an event first: recording alone must not start a thread.
 *
 * Skips (77) when the kernel denies user namespaces to a plain
 * single-threaded process too: a raw clone() child, which runs no atfork
 * handler, is that plain process.
 */
#define _GNU_SOURCE
#include <mark/mark.h>

#include "testutil.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>


/* Exit status of a child: 0 unshare worked, 1 it failed, 2 not single-threaded. */
static int child_body(int delay_ms, int record)
{
	if (record)
		MARK(unshare_child_event, "%d", (int)getpid());
	if (delay_ms) {
		struct timespec ts = { delay_ms / 1000, (long)(delay_ms % 1000) * 1000000L };
		nanosleep(&ts, NULL);
	}
	int threads = testutil_count_entries("/proc/self/task");
	if (unshare(CLONE_NEWUSER) != 0) {
		fprintf(stderr, "child %d: unshare(CLONE_NEWUSER) failed: %s (%d threads in the child)\n",
			(int)getpid(), strerror(errno), threads);
		return 1;
	}
	if (threads != 1) {
		fprintf(stderr, "child %d: %d threads\n", (int)getpid(), threads);
		return 2;
	}
	return 0;
}

static int wait_status(pid_t p)
{
	int st;
	if (waitpid(p, &st, 0) != p)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(void)
{
	/* Markers armed, as tracing or `mark enable` would: the child inherits armed sites. */
	if (!getenv("MARK_TRACE"))
		mark_arm("unshare_child_event");

	/* A plain single-threaded process: raw clone runs no atfork handler. */
	pid_t plain = (pid_t)syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, NULL);
	if (plain == 0)
		_exit(unshare(CLONE_NEWUSER) == 0 ? 0 : errno > 0 && errno < 100 ? errno : 99);
	int plain_status = plain < 0 ? -1 : wait_status(plain);
	if (plain_status != 0) {
		/* Under qemu-user (the aarch64 build) every process runs qemu's own
		 * thread too, and the kernel refuses a multi-threaded one (EINVAL). */
		printf("SKIP: unshare(CLONE_NEWUSER) is denied even to a single-threaded child cloned "
		       "without mark's fork handlers (%s: EINVAL when it has threads after all, as every "
		       "process under qemu-user has its own; EPERM when this kernel or its sysctls deny it)\n",
		       plain_status > 0 && plain_status < 100 ? strerror(plain_status) : "the child died");
		return 77;
	}

	const struct { int delay_ms, record; } cases[] = { { 0, 0 }, { 0, 1 }, { 300, 0 }, { 300, 1 } };
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		pid_t p = fork();
		if (p == 0)
			_exit(child_body(cases[i].delay_ms, cases[i].record));
		int rc = wait_status(p);
		if (rc != 0) {
			fprintf(stderr, "FAIL: a forked child (%s, unshare %d ms after fork, %s) could not "
				"unshare (status %d)\n", getenv("MARK_TRACE") ? "tracing on" : "agent on",
				cases[i].delay_ms, cases[i].record ? "after recording an event" : "no event", rc);
			testutil_failures++;   /* testutil.h's failure count */
		}
	}
	if (testutil_failures)
		return 1;
	printf("ok: forked children unshare(CLONE_NEWUSER) (%s)\n",
	       getenv("MARK_TRACE") ? "tracing on" : "agent on");
	return 0;
}
