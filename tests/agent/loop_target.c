/*
 * A program that serves the control agent from its own event loop
 * (MARK_AGENT_EVENT_LOOP: libmark starts no agent thread), for
 * test_control.sh's event_loop cases.  It polls mark_agent_fd() with a
 * 20 ms tick, calls mark_agent_dispatch() when that is readable, and fires
 * the same markers as agent_target on every tick, until SIGTERM/SIGINT
 * (exit status 0).
 *
 *   loop_target [--fork | --fork-agent]
 *
 * Prints "ready PID" once its socket exists.  --fork: fork a child that
 * runs the same loop on the inherited descriptor without asking for an
 * agent (it must have none, and must not be woken by the parent's
 * controllers); --fork-agent: the child calls mark_agent_fd() first, which
 * must give it an agent of its own on the same descriptor number.  Prints
 * "child PID"; the parent ends the child at exit.  Each process counts the
 * wake-ups it had with nothing to dispatch for it and fails if they exceed
 * its ticks (a busy loop).
 */
#define _GNU_SOURCE
#include <mark/mark.h>

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

MARK_AGENT_EVENT_LOOP;

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

static int run_loop(int fd, const char *who)
{
	unsigned long ticks = 0, wakeups = 0;
	for (unsigned i = 0; !stop; i++) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int r = poll(&p, 1, 20);
		if (r > 0) {
			wakeups++;
			if (p.revents & POLLNVAL) {
				fprintf(stderr, "loop_target: %s: the agent's descriptor %d is not open\n", who, fd);
				return 1;
			}
			if (mark_agent_dispatch() != 0) {
				fprintf(stderr, "loop_target: %s: mark_agent_dispatch: %s\n", who, mark_last_error());
				return 1;
			}
		} else {
			ticks++;
		}
		work(i);
		/* Readable on almost every round: the loop spins on something
		 * dispatch does not consume. */
		if (wakeups > 1000 && wakeups > 4 * ticks) {
			fprintf(stderr, "loop_target: %s: %lu wake-ups against %lu idle ticks: a busy loop\n", who,
				wakeups, ticks);
			return 1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	int do_fork = 0;
	if (argc > 1 && strcmp(argv[1], "--fork") == 0)
		do_fork = 1;
	else if (argc > 1 && strcmp(argv[1], "--fork-agent") == 0)
		do_fork = 2;
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	int fd = mark_agent_fd();
	if (fd < 0) {
		fprintf(stderr, "loop_target: mark_agent_fd: %s\n", mark_last_error());
		return 1;
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	pid_t child = 0;
	if (do_fork) {
		child = fork();
		if (child < 0) {
			perror("loop_target: fork");
			return 1;
		}
		if (child == 0) {
			if (do_fork == 2) {
				int cfd = mark_agent_fd();
				if (cfd != fd) {
					fprintf(stderr, "loop_target: child: mark_agent_fd gave %d (%s), not %d\n", cfd,
						cfd < 0 ? mark_last_error() : "another number", fd);
					_exit(1);
				}
			}
			printf("child %d\n", (int)getpid());
			fflush(stdout);
			exit(run_loop(fd, "child"));   /* exit: the atexit handler removes its socket */
		}
	}
	int rc = run_loop(fd, "parent");
	if (child > 0) {
		int st;
		kill(child, SIGTERM);
		if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "loop_target: the child did not exit cleanly\n");
			rc = 1;
		}
	}
	return rc;
}
