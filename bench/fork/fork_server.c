/*
 * bench/fork/fork_server.c - a forking TCP server, as a stand-in for "a
 * real forking server" (issue 17 names PostgreSQL under `pgbench -C`, a new
 * backend per connection; building PostgreSQL here is out of scope).  Built
 * twice from this source: compiled out (-DMARK_DISABLE, libmark not linked)
 * and with libmark linked (one site per connection, nothing armed).
 *
 *   bench_forkserver_{out,linked,loop} CONNS   prints "US_PER_CONN CPU_US FAULTS CONN_PER_S"
 *
 * bench_forkserver_loop (FORK_BENCH_EVENT_LOOP) serves the control agent
 * from its accept loop (MARK_AGENT_EVENT_LOOP, no agent thread): it polls
 * the listening socket and the agent's descriptor before each accept, one
 * poll() per connection more than the others, as an event-loop server would.
 *
 * The server listens on 127.0.0.1 (an ephemeral port), forks one client
 * process first (before any connection, so the server stays single-threaded
 * apart from what libmark starts), then accepts CONNS connections one after
 * another: each accept() forks a child that writes one byte to its
 * connection and _exits, and the server reaps it.  The client connects,
 * reads the byte and closes, CONNS times in a row (a bounded loop, like
 * `pgbench -C` with one client).  CPU_US and FAULTS per connection include
 * the server, its children and the client (the client's share is the same
 * in both builds).
 */
#define _GNU_SOURCE
#include <mark/mark.h>

#include "fork_usage.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef FORK_BENCH_EVENT_LOOP
MARK_AGENT_EVENT_LOOP;
#endif

/* The client: CONNS sequential connections, each reading the one byte. */
static int client(const struct sockaddr_in *addr, int conns)
{
	for (int i = 0; i < conns; i++) {
		int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (s < 0 || connect(s, (const struct sockaddr *)addr, sizeof(*addr)) != 0) {
			perror("bench_forkserver: client: connect");
			return 1;
		}
		char b;
		ssize_t r;
		while ((r = read(s, &b, 1)) < 0 && errno == EINTR)
			;
		if (r != 1) {
			fprintf(stderr, "bench_forkserver: client: connection %d: no reply byte\n", i);
			return 1;
		}
		close(s);
	}
	return 0;
}

int main(int argc, char **argv)
{
	int conns = argc > 1 ? atoi(argv[1]) : 1000;
	if (conns < 10)
		conns = 10;
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(addr);
	if (ls < 0 || bind(ls, (struct sockaddr *)&addr, sizeof(addr)) != 0 || listen(ls, 64) != 0 ||
	    getsockname(ls, (struct sockaddr *)&addr, &alen) != 0) {
		perror("bench_forkserver: listen on 127.0.0.1");
		return 1;
	}
	pid_t cl = fork();
	if (cl < 0) {
		perror("bench_forkserver: fork the client");
		return 1;
	}
	if (cl == 0) {
		close(ls);
		_exit(client(&addr, conns));
	}
#ifdef FORK_BENCH_EVENT_LOOP
	int agent_fd = mark_agent_fd();
	if (agent_fd < 0) {
		fprintf(stderr, "bench_forkserver: mark_agent_fd: %s\n", mark_last_error());
		return 1;
	}
#endif
	double f0, f1, c0 = fork_cpu_us(&f0), t0 = fork_now_us();
	for (int i = 0; i < conns; i++) {
#ifdef FORK_BENCH_EVENT_LOOP
		struct pollfd pf[2] = { { .fd = ls, .events = POLLIN }, { .fd = agent_fd, .events = POLLIN } };
		if (poll(pf, 2, -1) < 0 && errno != EINTR) {
			perror("bench_forkserver: poll");
			return 1;
		}
		if (pf[1].revents & POLLIN)
			mark_agent_dispatch();
		if (!(pf[0].revents & POLLIN)) {
			i--;
			continue;
		}
#endif
		int c = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0) {
			if (errno == EINTR) {
				i--;
				continue;
			}
			perror("bench_forkserver: accept");
			return 1;
		}
		pid_t p = fork();
		if (p == 0) {
			/* The backend: one site (armed only if the environment
			 * arms it), one reply byte. */
			MARK(bench_forkserver_conn, "%d", i);
			ssize_t w = write(c, "x", 1);
			_exit(w == 1 ? 0 : 1);
		}
		close(c);
		if (p < 0) {
			perror("bench_forkserver: fork");
			return 1;
		}
		int st;
		if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "bench_forkserver: backend %d did not exit cleanly\n", (int)p);
			return 1;
		}
	}
	int st;
	if (waitpid(cl, &st, 0) != cl || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "bench_forkserver: the client failed\n");
		return 1;
	}
	double t1 = fork_now_us(), c1 = fork_cpu_us(&f1);
	printf("%.2f %.2f %.1f %.0f\n", (t1 - t0) / conns, (c1 - c0) / conns, (f1 - f0) / conns,
	       conns / ((t1 - t0) / 1e6));
	return 0;
}
