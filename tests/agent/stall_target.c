/*
 * A program with 1000 markers with long names, so that one LIST reply
 * (about 300 KiB) is more than the kernel buffers of a Unix socket hold:
 * a client that sends LIST and does not read leaves the agent with a reply
 * it cannot send at once (tests/agent/test_control.sh, case stalled_client).
 *
 *   stall_target [MAX_DISPATCH_MS]
 *
 * Prints "ready PID" once its agent listens, runs until SIGTERM/SIGINT,
 * then prints "done PID turns N" and exits 0.
 *
 * Built twice.  As stall_target the agent runs on its own thread and the
 * loop only sleeps.  As loop_stall_target (STALL_EVENT_LOOP) the program
 * serves the agent from its loop (MARK_AGENT_EVENT_LOOP): it polls
 * mark_agent_fd() and times every mark_agent_dispatch() call; at exit it
 * prints "dispatches N worst W ms" and exits 2 if any call took longer than
 * MAX_DISPATCH_MS (default 100): dispatch runs on the program's own thread
 * and must never wait for a client.  Both print the longest time between
 * two turns of the loop (what a stalled loop would show).
 *
 * SIGUSR1 makes the program take every free descriptor (RLIMIT_NOFILE
 * lowered to 64, then /dev/null opened until EMFILE; prints "filled N"),
 * SIGUSR2 gives them back ("released"): the agent cannot accept a
 * connection meanwhile and must not spin on its readable listening socket
 * (case accept_emfile).
 */
#define _GNU_SOURCE
#include <mark/mark.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#ifdef STALL_EVENT_LOOP
MARK_AGENT_EVENT_LOOP;
#endif

/* 1000 distinct markers: stall_m000_... to stall_m999_... */
#define STALL_M(p) MARK(stall_##p##_with_a_long_name_so_that_the_list_reply_is_large, "%d %s", v, "x");
#define STALL_D10(p) STALL_M(p##0) STALL_M(p##1) STALL_M(p##2) STALL_M(p##3) STALL_M(p##4) \
	STALL_M(p##5) STALL_M(p##6) STALL_M(p##7) STALL_M(p##8) STALL_M(p##9)
#define STALL_D100(p) STALL_D10(p##0) STALL_D10(p##1) STALL_D10(p##2) STALL_D10(p##3) STALL_D10(p##4) \
	STALL_D10(p##5) STALL_D10(p##6) STALL_D10(p##7) STALL_D10(p##8) STALL_D10(p##9)

static void markers_0(int v) { STALL_D100(m0) }
static void markers_1(int v) { STALL_D100(m1) }
static void markers_2(int v) { STALL_D100(m2) }
static void markers_3(int v) { STALL_D100(m3) }
static void markers_4(int v) { STALL_D100(m4) }
static void markers_5(int v) { STALL_D100(m5) }
static void markers_6(int v) { STALL_D100(m6) }
static void markers_7(int v) { STALL_D100(m7) }
static void markers_8(int v) { STALL_D100(m8) }
static void markers_9(int v) { STALL_D100(m9) }

static volatile sig_atomic_t stop, fill, release;

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		fill = 1;
	else if (sig == SIGUSR2)
		release = 1;
	else
		stop = 1;
}

static int held[64], nheld;
static struct rlimit saved_nofile;

static void take_descriptors(void)
{
	struct rlimit low = { 64, 64 };
	if (getrlimit(RLIMIT_NOFILE, &saved_nofile) != 0)
		return perror("getrlimit");
	low.rlim_max = saved_nofile.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &low) != 0)
		return perror("setrlimit");
	while (nheld < 64 && (held[nheld] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
		nheld++;
	printf("filled %d\n", nheld);
	fflush(stdout);
}

static void give_back_descriptors(void)
{
	while (nheld > 0)
		close(held[--nheld]);
	setrlimit(RLIMIT_NOFILE, &saved_nofile);
	printf("released\n");
	fflush(stdout);
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
#ifdef STALL_EVENT_LOOP
	int fd = mark_agent_fd();
	if (fd < 0) {
		fprintf(stderr, "mark_agent_fd: %s\n", mark_last_error());
		return 1;
	}
	double limit = argc > 1 ? atof(argv[1]) : 100;
	unsigned long dispatches = 0;
	double worst = 0;
#else
	(void)argc;
	(void)argv;
#endif
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	unsigned long turns = 0;
	double last_turn = now_ms(), longest_gap = 0;
	int status = 0;
	while (!stop) {
		if (fill) {
			fill = 0;
			take_descriptors();
		}
		if (release) {
			release = 0;
			give_back_descriptors();
		}
		int v = (int)(turns++ & 1);
		markers_0(v), markers_1(v), markers_2(v), markers_3(v), markers_4(v);
		markers_5(v), markers_6(v), markers_7(v), markers_8(v), markers_9(v);
		double t = now_ms();
		if (t - last_turn > longest_gap)
			longest_gap = t - last_turn;
		last_turn = t;
#ifdef STALL_EVENT_LOOP
		/* The program's event loop: its own work would be polled here too. */
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		if (poll(&pf, 1, 10) > 0) {
			double t0 = now_ms();
			if (mark_agent_dispatch() != 0) {
				fprintf(stderr, "mark_agent_dispatch: %s\n", mark_last_error());
				return 1;
			}
			double d = now_ms() - t0;
			dispatches++;
			if (d > worst)
				worst = d;
			if (d > limit) {
				fprintf(stderr, "mark_agent_dispatch() took %.1f ms (limit %.0f ms)\n", d, limit);
				status = 2;
			}
		}
#else
		struct timespec ts = { 0, 10000000 };
		nanosleep(&ts, NULL);
#endif
	}
#ifdef STALL_EVENT_LOOP
	printf("dispatches %lu worst %.1f ms\n", dispatches, worst);
#endif
	printf("done %d turns %lu longest gap %.1f ms\n", (int)getpid(), turns, longest_gap);
	return status;
}
