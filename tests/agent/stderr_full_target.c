/*
 * A program whose stderr is a pipe nobody reads (full), that takes every
 * descriptor its limit allows, and forks when asked (SIGUSR1): for
 * tests/agent/test_stderr_full.py.  A controller's connection then fails
 * to be accepted (EMFILE), the agent logs that once on stderr, and the
 * write blocks.  The program's fork() must not wait for it.
 *
 * Prints "ready" once every descriptor is taken, then "fork took S s" and
 * exits 0.  Output goes to stdout (a file the test reads).
 *
 * `stderr_full_target dlopen LIB`: the same, except that the warning comes
 * from libmark's registry: a thread named "dlopener" loads LIB (a library
 * whose marker descriptor has a wrong ABI) once every descriptor but one
 * is taken, and libmark warns about it.
 */
#define _GNU_SOURCE
#include <mark/mark.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t fork_now;

static void on_usr1(int sig)
{
	(void)sig;
	fork_now = 1;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *dlopener(void *lib)
{
	pthread_setname_np(pthread_self(), "dlopener");
	/* The warning's write blocks (stderr is full); the handle is never
	 * used: the test only needs the load to have run. */
	(void)!dlopen(lib, RTLD_NOW);
	return NULL;
}

int main(int argc, char **argv)
{
	MARK(stderr_full_tick, "%d", 1);
	struct sigaction sa = { .sa_handler = on_usr1 };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	struct rlimit rl = { 64, 64 };
	setrlimit(RLIMIT_NOFILE, &rl);
	/* The agent thread creates its socket meanwhile (the test checks it
	 * exists before it connects). */
	sleep(1);
	int taken = 0;
	if (argc > 2 && strcmp(argv[1], "dlopen") == 0) {
		pthread_t t;
		if (pthread_create(&t, NULL, dlopener, argv[2]) != 0)
			return 1;
		pthread_detach(t);
		printf("ready dlopen\n");
	} else {
		while (open("/dev/null", O_RDONLY | O_CLOEXEC) >= 0)
			taken++;
		printf("ready %d\n", taken);
	}
	fflush(stdout);
	while (!fork_now)
		pause();
	double t0 = now();
	pid_t p = fork();
	if (p == 0)
		_exit(0);
	printf("fork took %.3f s\n", now() - t0);
	fflush(stdout);
	waitpid(p, NULL, 0);
	return 0;
}
