/*
 * The first run of an armed EVENTHANDLER_INVOKE site inside a signal
 * handler, while the interrupted thread is inside libmark holding the
 * registry lock (here in mark_eventhandler_count).
 *
 * Before the fix the site's first run looked its list up under the
 * registry lock, and the thread waited for itself for ever.  400 invoke
 * sites, each run for the first time from a 500 us SIGALRM handler while
 * main calls mark_eventhandler_count in a loop; it hung every time.  The
 * scenario runs in a child, bounded to 20 s.
 */
#define _GNU_SOURCE
#include <mark/eventhandler.h>
#include "testutil.h"
#include "testutil_wait.h"

#include <signal.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef void (*ev_fn)(void *arg, int x);
EVENTHANDLER_DECLARE(ehs_ev, ev_fn);
static volatile sig_atomic_t count;
static void h(void *arg, int x)
{
	(void)arg;
	(void)x;
	count++;
}

#define SITES 400
/* SITES distinct invoke sites (each expansion is one site). */
#define S1(n) case (n): EVENTHANDLER_INVOKE(ehs_ev, (n)); break;
#define S5(n) S1(5 * (n)) S1(5 * (n) + 1) S1(5 * (n) + 2) S1(5 * (n) + 3) S1(5 * (n) + 4)
#define S25(n) S5(5 * (n)) S5(5 * (n) + 1) S5(5 * (n) + 2) S5(5 * (n) + 3) S5(5 * (n) + 4)
#define S100(n) S25(4 * (n)) S25(4 * (n) + 1) S25(4 * (n) + 2) S25(4 * (n) + 3)

static volatile sig_atomic_t next;
static void on_alarm(int sig)
{
	(void)sig;
	switch (next++) {
		S100(0) S100(1) S100(2) S100(3)
	default:
		break;
	}
}

static void child(void)
{
	if (!EVENTHANDLER_REGISTER(ehs_ev, h, NULL, 0))
		_exit(2);
	signal(SIGALRM, on_alarm);
	struct itimerval it = { { 0, 500 }, { 0, 500 } };
	setitimer(ITIMER_REAL, &it, NULL);
	while (next < SITES)
		(void)mark_eventhandler_count("ehs_ev");
	it.it_value.tv_usec = 0;
	it.it_interval.tv_usec = 0;
	setitimer(ITIMER_REAL, &it, NULL);
	_exit(count == SITES ? 0 : 3);
}

int main(void)
{
	pid_t p = fork();
	if (p == 0)
		child();
	int st = 0;
	double secs;
	if (!testutil_wait_bounded(p, 20, &st, &secs)) {
		fprintf(stderr, "the first invocations from a signal handler hung for 20 s\n");
		CHECK(!"hung");
		TEST_DONE();
	}
	printf("%d sites run from a signal handler in %.3f s, child status %d\n", SITES, secs,
	       WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	TEST_DONE();
}
