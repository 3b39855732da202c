/*
 * tests/process/fork_faults.c - page faults per fork of a single-threaded
 * program: ROUNDS rounds of fork(), _exit(0) in the child, waitpid() in the
 * parent, after a warm-up.  Built twice from this source: with libmark
 * linked (one site, nothing armed) and compiled out (-DMARK_DISABLE,
 * libmark not linked); test_fork_faults.sh compares the two.
 *
 *   fork_faults_{linked,out,loop} [ROUNDS]   prints "PARENT CHILD" minor faults per round
 *
 * fork_faults_loop is built with FORK_FAULTS_EVENT_LOOP: the program serves
 * the agent from its event loop (MARK_AGENT_EVENT_LOOP), so the agent is on
 * (its socket exists: mark_agent_fd() is called first) but has no thread.
 *
 * PARENT counts the parent's own minor faults (RUSAGE_SELF): after a fork
 * every private page is write-protected in the parent, so each page the
 * parent writes afterwards (its fork handlers included) is one fault.
 * These counts do not depend on the machine's load.
 */
#define _GNU_SOURCE
#include <mark/mark.h>

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef FORK_FAULTS_EVENT_LOOP
MARK_AGENT_EVENT_LOOP;
#endif

static int round_trip(int i)
{
	pid_t p = fork();
	if (p == 0) {
		MARK(fork_faults_child, "%d", i);
		_exit(0);
	}
	if (p < 0) {
		perror("fork_faults: fork");
		return -1;
	}
	int st;
	if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "fork_faults: child %d did not exit cleanly\n", (int)p);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 200;
	if (rounds < 10)
		rounds = 10;
#ifdef FORK_FAULTS_EVENT_LOOP
	if (mark_agent_fd() < 0) {
		fprintf(stderr, "fork_faults: mark_agent_fd: %s\n", mark_last_error());
		return 1;
	}
#endif
	/* Warm-up: the first forks fault in what every later one reuses. */
	for (int i = 0; i < 20; i++)
		if (round_trip(i) < 0)
			return 1;
	struct rusage s0, c0, s1, c1;
	getrusage(RUSAGE_SELF, &s0);
	getrusage(RUSAGE_CHILDREN, &c0);
	for (int i = 0; i < rounds; i++)
		if (round_trip(i) < 0)
			return 1;
	getrusage(RUSAGE_SELF, &s1);
	getrusage(RUSAGE_CHILDREN, &c1);
	printf("%.2f %.2f\n", (double)(s1.ru_minflt - s0.ru_minflt) / rounds,
	       (double)(c1.ru_minflt - c0.ru_minflt) / rounds);
	return 0;
}
