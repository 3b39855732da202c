/*
 * The program `mark record` runs in the CLI tests.  It fires a known set of
 * events, then ends the way argv[1] says:
 *   exit N   return N from main (tracer stopped by libmark at exit)
 *   kill     fire 1000 more cli_tick on the main thread, then raise(SIGKILL)
 *            at once: those events are still in the buffer, and the trace
 *            must be recovered from it
 *   fork     after the events, fork a child that fires cli_tick 500 times
 *            (its own sub-trace) and exits 0; the parent waits, exits 0
 *   fork_kill  as fork, but the child (pid printed as "child PID") kills
 *            itself with SIGKILL after its events; the parent exits 0
 *   kill_busy  two more threads fire cli_tick without end; after 300 ms
 *            raise(SIGKILL) while they record (the consumer is writing)
 *   wait     fire cli_tick until SIGTERM arrives, then exit 42; on SIGINT,
 *            wait 300 ms more (to count any duplicate SIGINT), then exit
 *            50 + the number of SIGINTs received
 *            (writes "ready" to the file argv[2] once the handlers are in)
 *
 * Events with THREADS = 2 and ITERATIONS = 1000 (per thread):
 *   cli_req_begin  "%d %p %s"  id, ptr, name    2000
 *   cli_req_end    "%d"        id               2000
 *   cli_tick       "%u"        i                2000  (wait mode: more)
 *   cli_once       "%x %f"     flags, ratio        1  (main thread: flags=0xbeef ratio=0.25)
 */
#include <mark/mark.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS 2
#define ITERATIONS 1000

static volatile sig_atomic_t terminate, interrupts;

static void on_term(int sig)
{
	(void)sig;
	terminate = 1;
}

static void on_int(int sig)
{
	(void)sig;
	interrupts++;
}

static void *worker(void *arg)
{
	int base = (int)(long)arg * ITERATIONS;
	for (int i = 0; i < ITERATIONS; i++) {
		int id = base + i;
		void *ptr = (void *)(0x1000ul + (unsigned long)id);
		char name[32];
		snprintf(name, sizeof(name), "req%d", id);
		MARK(cli_req_begin, "%d %p %s", id, ptr, name);
		MARK(cli_req_end, "%d", id);
		unsigned tick = (unsigned)i;
		MARK(cli_tick, "%u", tick);
	}
	return NULL;
}

static void *busy_worker(void *arg)
{
	(void)arg;
	for (unsigned tick = 0;; tick++) {
		MARK(cli_tick, "%u", tick);
		if (tick % 64 == 0)
			usleep(10);   /* about 10^6 events/s: not a full buffer in block mode */
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: record_target exit N | kill | wait READYFILE\n");
		return 2;
	}
	unsigned flags = 0xbeef;
	double ratio = 0.25;
	MARK(cli_once, "%x %f", flags, ratio);
	pthread_t t[THREADS];
	for (long i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);

	if (strcmp(argv[1], "exit") == 0)
		return argc > 2 ? atoi(argv[2]) : 0;
	if (strcmp(argv[1], "fork") == 0) {
		pid_t pid = fork();
		if (pid == 0) {
			for (unsigned tick = 0; tick < 500; tick++)
				MARK(cli_tick, "%u", tick);
			exit(0);
		}
		int status = 1;
		if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
			return 3;
		return 0;
	}
	if (strcmp(argv[1], "fork_kill") == 0) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			for (unsigned tick = 0; tick < 500; tick++)
				MARK(cli_tick, "%u", tick);
			raise(SIGKILL);
			_exit(99);   /* not reached */
		}
		int status = 0;
		if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFSIGNALED(status))
			return 3;
		printf("child %d\n", (int)pid);
		return 0;
	}
	if (strcmp(argv[1], "kill") == 0) {
		for (unsigned tick = 10000; tick < 11000; tick++)
			MARK(cli_tick, "%u", tick);
		raise(SIGKILL);
		return 99;   /* not reached */
	}
	if (strcmp(argv[1], "kill_busy") == 0) {
		/* Killed while two threads still record: the consumer is
		 * writing packets at that moment. */
		pthread_t busy[2];
		for (long i = 0; i < 2; i++)
			pthread_create(&busy[i], NULL, busy_worker, NULL);
		usleep(300 * 1000);
		raise(SIGKILL);
		return 99;   /* not reached */
	}
	if (strcmp(argv[1], "wait") == 0 && argc > 2) {
		signal(SIGTERM, on_term);
		signal(SIGINT, on_int);
		FILE *f = fopen(argv[2], "w");
		if (f) {
			fputs("ready\n", f);
			fclose(f);
		}
		for (unsigned tick = 0; !terminate && !interrupts; tick++) {
			MARK(cli_tick, "%u", tick);
			usleep(1000);
		}
		if (interrupts) {
			usleep(300 * 1000);
			return 50 + interrupts;
		}
		return 42;
	}
	fprintf(stderr, "record_target: unknown mode %s\n", argv[1]);
	return 2;
}
