/*
 * exit() while another thread is inside an event handler that blocks.
 *
 * EVENTHANDLER_DEFINE's destructor deregisters its handler.  Before the
 * fix it waited for a grace period, in _dl_fini, for the blocked handler
 * to return: exit() never returned.  Nothing is unmapped at exit, so the
 * destructor need not wait then (a dlclose still does:
 * test_eventhandler_dl_*).  The scenario runs in a child, bounded to 20 s
 * (liburcu blocks signals while it waits, so only SIGKILL ends a hang).
 * Twice: exit(0), and a return from main.
 */
#define _GNU_SOURCE
#include <mark/eventhandler.h>
#include "testutil.h"
#include "testutil_wait.h"

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef void (*ev_fn)(void *arg, int fd);
EVENTHANDLER_DECLARE(ehx_conn_open, ev_fn);

static int pipefd[2];
static int entered;   /* atomic */

/* A handler that blocks (reads a request from a client that never writes). */
static void serve(void *arg, int fd)
{
	(void)arg;
	__atomic_store_n(&entered, 1, __ATOMIC_RELEASE);
	char c;
	(void)!read(fd, &c, 1);
}
EVENTHANDLER_DEFINE(ehx_conn_open, serve, NULL, EVENTHANDLER_PRI_ANY);

static void *worker(void *arg)
{
	(void)arg;
	EVENTHANDLER_INVOKE(ehx_conn_open, pipefd[0]);
	return NULL;
}

/* Under TSan: the child exits with its worker still running, on purpose. */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
	return "report_thread_leaks=0";
}

static int run(int how)
{
	fflush(stdout);
	pid_t p = fork();
	if (p == 0) {
		if (pipe(pipefd) != 0)
			_exit(2);
		pthread_t t;
		pthread_create(&t, NULL, worker, NULL);
		while (!__atomic_load_n(&entered, __ATOMIC_ACQUIRE))
			usleep(1000);
		usleep(20 * 1000);
		if (how == 0)
			exit(0);   /* should end the process at once, whatever the worker does */
		return -1;         /* main returns 0 */
	}
	int st = 0;
	double secs;
	if (!testutil_wait_bounded(p, 20, &st, &secs)) {
		fprintf(stderr, "%s: the process did not exit within 20 s (a thread is inside a handler)\n",
			how == 0 ? "exit(0)" : "return from main");
		return 0;
	}
	printf("%s: exited in %.3f s, status %d\n", how == 0 ? "exit(0)" : "return from main", secs,
	       WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

int main(void)
{
	CHECK_EQ(run(0), 1);
	int r = run(1);
	if (r < 0)
		return 0;   /* the child: return from main */
	CHECK_EQ(r, 1);
	TEST_DONE();
}
