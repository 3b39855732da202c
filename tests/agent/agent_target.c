/*
 * A program with markers for the agent tests: fires its markers in a loop
 * until SIGTERM/SIGINT (exit status 0) or --exit-after MS.
 *
 *   agent_target [--fork] [--exit-after MS] [--exec-sleep-after MS]
 *
 * Prints "ready PID" (and "child PID" with --fork) on stdout once running.
 * With --fork the child runs the same loop; the parent waits for it at exit.
 * --fork-agent: as --fork, and the child calls mark_agent_start() (a forked
 * child has no agent otherwise).
 * --exec-sleep-after MS: exec `sleep 30` after MS (the agent's socket is left
 * behind, as after any exec; `mark ps` must remove it).
 * --close-fds-after MS: close every descriptor above 2 after MS, as some
 * daemons do (the agent must notice and stop, not spin or misbehave).
 * --fork-after MS: fork a child after MS that runs the same loop (prints
 * "child PID"); the parent ends it at exit.
 * --spawn-exec: fork a child that execs `sleep 2` at once (prints "spawned PID").
 * Exit status 0 means the loop ran and the markers kept working.
 */
#define _GNU_SOURCE
#include <mark/mark.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void work(unsigned i)
{
	MARK(agent_tick, "%u", i);
	if (i % 4 == 0)
		MARK(agent_net_rx, "%u %s", i * 3, "packet");
	if (i % 16 == 0)
		MARK(agent_other, "%p", (void *)&i);
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
	long exit_after = -1, exec_after = -1, close_after = -1, fork_after = -1;
	int do_fork = 0, spawn_exec = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--fork") == 0)
			do_fork = 1;
		else if (strcmp(argv[i], "--fork-agent") == 0)
			do_fork = 2;
		else if (strcmp(argv[i], "--spawn-exec") == 0)
			spawn_exec = 1;
		else if (strcmp(argv[i], "--exit-after") == 0 && i + 1 < argc)
			exit_after = atol(argv[++i]);
		else if (strcmp(argv[i], "--close-fds-after") == 0 && i + 1 < argc)
			close_after = atol(argv[++i]);
		else if (strcmp(argv[i], "--exec-sleep-after") == 0 && i + 1 < argc)
			exec_after = atol(argv[++i]);
		else if (strcmp(argv[i], "--fork-after") == 0 && i + 1 < argc)
			fork_after = atol(argv[++i]);
	}
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	pid_t child = 0;
	if (spawn_exec) {
		fflush(stdout);
		pid_t p = fork();
		if (p == 0) {
			execlp("sleep", "sleep", "2", (char *)NULL);
			_exit(127);
		}
		printf("spawned %d\n", (int)p);
	}
	if (do_fork) {
		fflush(stdout);
		child = fork();
		if (child < 0) {
			perror("fork");
			return 1;
		}
	}
	if (child > 0)
		printf("child %d\n", (int)child);
	if (child == 0 && do_fork == 2 && mark_agent_start() != 0) {
		fprintf(stderr, "mark_agent_start: %s\n", mark_last_error());
		return 1;
	}
	if (child == 0 && do_fork)
		printf("forked %d\n", (int)getpid());
	else
		printf("ready %d\n", (int)getpid());
	fflush(stdout);
	long long start = now_ms();
	unsigned i = 0;
	while (!stop) {
		work(i++);
		if ((i & 255) == 0) {
			struct timespec ts = { 0, 1000000 };   /* ~1 ms per 256 iterations */
			nanosleep(&ts, NULL);
		}
		if (exit_after >= 0 && now_ms() - start >= exit_after)
			break;
		if (close_after >= 0 && now_ms() - start >= close_after) {
			for (int fd = 3; fd < 1024; fd++)
				close(fd);
			close_after = -1;
			printf("closed\n");
			fflush(stdout);
		}
		if (fork_after >= 0 && now_ms() - start >= fork_after) {
			/* A child forked while the process is being recorded: it
			 * goes on firing the same markers. */
			fork_after = -1;
			fflush(stdout);
			pid_t p = fork();
			if (p > 0) {
				child = p;
				printf("child %d\n", (int)p);
				fflush(stdout);
			}
		}
		if (exec_after >= 0 && now_ms() - start >= exec_after) {
			execlp("sleep", "sleep", "30", (char *)NULL);
			perror("exec sleep");
			return 1;
		}
	}
	if (child > 0) {
		kill(child, SIGTERM);
		int st;
		waitpid(child, &st, 0);
	}
	printf("done %d iterations %u\n", (int)getpid(), i);
	return i > 0 ? 0 : 1;
}
