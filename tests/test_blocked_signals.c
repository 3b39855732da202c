/*
 * Arming must never kill a program, whatever its signal masks: threads that
 * execute a site while it is being patched may have every signal blocked.
 * (With an int3 guard the kernel turns a blocked SIGTRAP into the default
 * action and the whole process dies with "Trace/breakpoint trap".)
 *
 * Three programs, each in its own child process (this program run again,
 * not a fork: mark's agent thread already runs, and ThreadSanitizer forbids
 * starting threads after a multi-threaded fork) so that a death is
 * reported with its signal rather than ending the test:
 *   1. workers created with all signals blocked run a site in a loop while
 *      the main thread arms and disarms it 10,000 times;
 *   2. a site inside a signal handler installed with a full sa_mask, the
 *      signal sent to a worker over and over while arming happens;
 *   3. a thread that blocks SIGTRAP (and SIGUSR2) to read them with
 *      signalfd, running a site in a loop while arming happens.
 * Each checks that the armed site really ran (a fast probe counts hits).
 * MARK_BLOCKED_CYCLES overrides the number of arm/disarm cycles.
 */
#define _GNU_SOURCE
#include <mark/mark.h>
#include "testutil.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

static atomic_long hits;
static atomic_int stop;
static atomic_long loops;

static void count(const struct mark_marker *m, void *priv, const uint64_t *args)
{
	(void)m, (void)priv, (void)args;
	atomic_fetch_add_explicit(&hits, 1, memory_order_relaxed);
}

static void run_site(int i)
{
	MARK(blocked_site, "%d", i);
	if (MARK_ENABLED(blocked_site))
		atomic_fetch_add_explicit(&hits, 1, memory_order_relaxed);
}

static void block_all(void)
{
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
}

static void *blocked_worker(void *arg)
{
	(void)arg;
	block_all();
	for (int i = 0; !atomic_load_explicit(&stop, memory_order_relaxed); i++) {
		run_site(i);
		atomic_fetch_add_explicit(&loops, 1, memory_order_relaxed);
	}
	return NULL;
}

/* Scenario 2: the handler runs with every signal blocked (full sa_mask). */
static atomic_long handled;
static void usr1_handler(int sig)
{
	(void)sig;
	for (int i = 0; i < 64; i++)
		run_site(i);
	atomic_fetch_add_explicit(&handled, 1, memory_order_relaxed);
}

static void *handler_worker(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		atomic_fetch_add_explicit(&loops, 1, memory_order_relaxed);
	return NULL;
}

static void *signaller(void *arg)
{
	pthread_t target = *(pthread_t *)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		pthread_kill(target, SIGUSR1);
		sched_yield();
	}
	return NULL;
}

/* Scenario 3: SIGTRAP blocked so that signalfd can read it. */
static atomic_int signalfd_failed;
static void *signalfd_worker(void *arg)
{
	(void)arg;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTRAP);
	sigaddset(&set, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	int fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0) {
		atomic_store(&signalfd_failed, errno);
		return NULL;
	}
	for (int i = 0; !atomic_load_explicit(&stop, memory_order_relaxed); i++) {
		run_site(i);
		atomic_fetch_add_explicit(&loops, 1, memory_order_relaxed);
		if ((i & 1023) == 0) {
			struct signalfd_siginfo si;
			(void)!read(fd, &si, sizeof(si));   /* EAGAIN: nothing pending */
		}
	}
	close(fd);
	return NULL;
}

static int arm_cycles(long cycles)
{
	for (long c = 0; c < cycles; c++) {
		int a = mark_arm("blocked_site");
		int d = mark_disarm("blocked_site");
		if (a < 0 || d < 0) {
			fprintf(stderr, "cycle %ld: arm %d disarm %d: %s\n", c, a, d, mark_last_error());
			return 1;
		}
	}
	return 0;
}

/* Arm once and keep it armed until `hits` moves: the site really ran armed. */
static int check_ran_armed(void)
{
	long before = atomic_load(&hits);
	if (mark_arm("blocked_site") < 0)
		return 1;
	for (int i = 0; i < 2000 && atomic_load(&hits) == before; i++)
		usleep(1000);
	mark_disarm("blocked_site");
	if (atomic_load(&hits) == before) {
		fprintf(stderr, "the armed site never ran\n");
		return 1;
	}
	return 0;
}

static int scenario(int which, long cycles)
{
	if (mark_probe_register_fast("blocked_site", count, NULL) != 0) {
		fprintf(stderr, "probe: %s\n", mark_last_error());
		return 1;
	}
	pthread_t t[2];
	int n = 0, bad = 0;
	if (which == 1) {
		for (n = 0; n < 2; n++)
			pthread_create(&t[n], NULL, blocked_worker, NULL);
	} else if (which == 2) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = usr1_handler;
		sigfillset(&sa.sa_mask);
		sa.sa_flags = SA_RESTART;
		sigaction(SIGUSR1, &sa, NULL);
		pthread_create(&t[n++], NULL, handler_worker, NULL);
		pthread_create(&t[n++], NULL, signaller, &t[0]);
	} else {
		pthread_create(&t[n++], NULL, signalfd_worker, NULL);
	}
	while (atomic_load(&loops) == 0 && !atomic_load(&signalfd_failed))
		sched_yield();
	bad |= arm_cycles(cycles);
	bad |= check_ran_armed();
	atomic_store(&stop, 1);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	if (atomic_load(&signalfd_failed)) {
		fprintf(stderr, "signalfd: %s\n", strerror(atomic_load(&signalfd_failed)));
		return 1;
	}
	if (which == 2 && atomic_load(&handled) == 0) {
		fprintf(stderr, "the handler never ran\n");
		bad = 1;
	}
	printf("scenario %d: %ld cycles, %ld hits%s\n", which, cycles, atomic_load(&hits),
	       which == 2 ? " (in the handler)" : "");
	return bad;
}

int main(int argc, char **argv)
{
	long cycles = 10000;
	const char *env = getenv("MARK_BLOCKED_CYCLES");
	if (env)
		cycles = atol(env);
	static const char *const names[] = { "", "all-signals-blocked workers",
					     "site in a handler with a full sa_mask",
					     "SIGTRAP blocked for signalfd" };
	if (argc == 2) {
		int which = atoi(argv[1]);
		return scenario(which, which == 1 ? cycles : cycles / 2);
	}
	for (int which = 1; which <= 3; which++) {
		char arg[2] = { (char)('0' + which), 0 };
		char *child_argv[] = { argv[0], arg, NULL };
		pid_t pid;
		int err = posix_spawn(&pid, "/proc/self/exe", NULL, NULL, child_argv, environ);
		if (err) {
			fprintf(stderr, "cannot run /proc/self/exe: %s\n", strerror(err));
			testutil_failures++;
			continue;
		}
		int status;
		CHECK(waitpid(pid, &status, 0) == pid);
		if (WIFSIGNALED(status)) {
			fprintf(stderr, "scenario %d (%s): killed by signal %d (%s)\n", which, names[which],
				WTERMSIG(status), strsignal(WTERMSIG(status)));
			testutil_failures++;
		} else if (WEXITSTATUS(status) != 0) {
			fprintf(stderr, "scenario %d (%s): failed\n", which, names[which]);
			testutil_failures++;
		}
	}
	TEST_DONE();
}
