/*
 * bench/fork/fork_loop.c - what a fork costs a program: ROUNDS rounds of
 * fork(), _exit(0) in the child, waitpid() in the parent.  Built twice from
 * this source: compiled out (-DMARK_DISABLE, libmark not linked) and with
 * libmark linked (one marker, nothing armed unless the environment arms
 * it).  bench/fork/run.sh runs the variants alternately and prints the R
 * lines.
 *
 *   bench_fork_{out,linked,loop} ROUNDS [thread]   prints "WALL_US CPU_US FAULTS" per round
 *
 * bench_fork_loop (FORK_BENCH_EVENT_LOOP) serves the control agent from its
 * loop (MARK_AGENT_EVENT_LOOP): the agent is on, with its socket, but has no
 * thread; each round polls the agent's descriptor without waiting, as an
 * event loop would, and dispatches when it is readable.
 *
 * `thread`: first start one thread that sleeps in poll() for good, as the
 * control agent does: what any multi-threaded program pays per fork.
 *
 * CPU_US is the user + system time of the parent and its children per
 * round, which a loaded machine disturbs less than the wall-clock time.
 * FAULTS is the number of page faults (minor and major) of the parent and its children
 * per round: nearly independent of the machine's load, it counts what a
 * fork makes the kernel do afterwards (a copy-on-write fault for each
 * private page written by the parent or a child, a fault for each page of
 * a file mapping a child touches, as fork copies no page tables for those).
 */
#define _GNU_SOURCE
#include <mark/mark.h>

#include "fork_usage.h"

#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef FORK_BENCH_EVENT_LOOP
MARK_AGENT_EVENT_LOOP;
static int agent_fd = -1;
#endif

static void *sleeper(void *arg)
{
	(void)arg;
	for (;;)
		poll(NULL, 0, -1);
	return NULL;
}

static int round_trip(int i)
{
#ifdef FORK_BENCH_EVENT_LOOP
	struct pollfd pf = { .fd = agent_fd, .events = POLLIN };
	if (poll(&pf, 1, 0) > 0)
		mark_agent_dispatch();
#endif
	pid_t p = fork();
	if (p == 0) {
		/* What a child that records would do: one site (armed only when
		 * the environment arms it, e.g. MARK_TRACE). */
		MARK(bench_fork_child, "%d", i);
		_exit(0);
	}
	if (p < 0) {
		perror("bench_fork: fork");
		return -1;
	}
	int st;
	if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "bench_fork: child %d did not exit cleanly\n", (int)p);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 1000;
	if (rounds < 10)
		rounds = 10;
#ifdef FORK_BENCH_EVENT_LOOP
	if ((agent_fd = mark_agent_fd()) < 0) {
		fprintf(stderr, "bench_fork: mark_agent_fd: %s\n", mark_last_error());
		return 1;
	}
#endif
	pthread_t t;
	if (argc > 2 && strcmp(argv[2], "thread") == 0 && pthread_create(&t, NULL, sleeper, NULL) != 0) {
		fprintf(stderr, "bench_fork: cannot start the sleeping thread\n");
		return 1;
	}
	/* Warm-up: page tables, the allocator, the first fork handlers. */
	for (int i = 0; i < 20; i++)
		if (round_trip(i) < 0)
			return 1;
	double f0, f1;
	double c0 = fork_cpu_us(&f0), t0 = fork_now_us();
	for (int i = 0; i < rounds; i++)
		if (round_trip(i) < 0)
			return 1;
	double t1 = fork_now_us(), c1 = fork_cpu_us(&f1);
	printf("%.2f %.2f %.1f\n", (t1 - t0) / rounds, (c1 - c0) / rounds, (f1 - f0) / rounds);
	return 0;
}
