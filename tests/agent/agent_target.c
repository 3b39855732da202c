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
 * --busy: fire without the ~1 ms pause per 256 iterations (a busy server).
 * Exit status 0 means the loop ran and the markers kept working.
 *
 * Built a second time as loop_target (AGENT_TARGET_EVENT_LOOP): the program
 * serves the agent from its loop (MARK_AGENT_EVENT_LOOP, no agent thread),
 * polling mark_agent_fd() where agent_target sleeps and calling
 * mark_agent_dispatch() when it is readable.  A child forked with --fork
 * polls the inherited descriptor without an agent (it must not be woken by
 * the parent's controllers: the loop fails on a busy loop); with
 * --fork-agent it calls mark_agent_start(), which must give it an agent of
 * its own on the same descriptor number.
 */
#define _GNU_SOURCE
#include <mark/mark.h>

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef AGENT_TARGET_EVENT_LOOP
MARK_AGENT_EVENT_LOOP;
#endif

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
	int do_fork = 0, spawn_exec = 0, busy = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--fork") == 0)
			do_fork = 1;
		else if (strcmp(argv[i], "--fork-agent") == 0)
			do_fork = 2;
		else if (strcmp(argv[i], "--spawn-exec") == 0)
			spawn_exec = 1;
		else if (strcmp(argv[i], "--busy") == 0)
			busy = 1;
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
#ifdef AGENT_TARGET_EVENT_LOOP
	int agent_fd = mark_agent_fd();
	if (agent_fd < 0) {
		fprintf(stderr, "mark_agent_fd: %s\n", mark_last_error());
		return 1;
	}
	unsigned long idle_polls = 0, wakeups = 0;
#endif
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
#ifdef AGENT_TARGET_EVENT_LOOP
	if (child == 0 && do_fork == 2 && mark_agent_fd() != agent_fd) {
		fprintf(stderr, "the forked child's agent descriptor is not %d\n", agent_fd);
		return 1;
	}
#endif
	if (child == 0 && do_fork)
		printf("forked %d\n", (int)getpid());
	else
		printf("ready %d\n", (int)getpid());
	fflush(stdout);
	long long start = now_ms();
	unsigned i = 0;
	while (!stop) {
		work(i++);
		if (busy && (i & 65535) == 0) {
			/* A system call now and then: ThreadSanitizer delivers
			 * a signal (SIGTERM, the end) only at one it intercepts. */
			struct timespec ts = { 0, 0 };
			nanosleep(&ts, NULL);
		}
		if ((i & 255) == 0 && !busy) {
#ifdef AGENT_TARGET_EVENT_LOOP
			/* The event loop's wait: up to 1 ms per 256 iterations. */
			struct pollfd pf = { .fd = agent_fd, .events = POLLIN };
			if (poll(&pf, 1, 1) <= 0) {
				idle_polls++;
			} else if (pf.revents & POLLNVAL) {
				fprintf(stderr, "the agent's descriptor %d is not open\n", agent_fd);
				return 1;
			} else if (mark_agent_dispatch() != 0) {
				fprintf(stderr, "mark_agent_dispatch: %s\n", mark_last_error());
				return 1;
			} else if (++wakeups > 1000 && wakeups > 4 * idle_polls) {
				/* Readable on almost every round: something
				 * dispatch does not consume. */
				fprintf(stderr, "%lu wake-ups against %lu idle polls: a busy loop\n", wakeups,
					idle_polls);
				return 1;
			}
#else
			struct timespec ts = { 0, 1000000 };   /* ~1 ms per 256 iterations */
			nanosleep(&ts, NULL);
#endif
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
#ifdef AGENT_TARGET_EVENT_LOOP
	printf("done %d iterations %u wakeups %lu\n", (int)getpid(), i, wakeups);
#else
	printf("done %d iterations %u\n", (int)getpid(), i);
#endif
	return i > 0 ? 0 : 1;
}
