/* fork: the child inherits the armed state and arms and disarms its own markers. */
#include <mark/mark.h>
#include "testutil.h"

#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

/* Under TSan, the child sees the parent's running thread as never joined. */
#if defined(__SANITIZE_THREAD__)
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
	return "report_thread_leaks=0";
}
#endif

static int hits_a, hits_b;
static void probe(const struct mark_marker *m, void *priv, const uint64_t *args)
{
	(void)priv;
	(void)args;
	if (strcmp(mark_marker_name(m), "fork_a") == 0)
		hits_a++;
	else
		hits_b++;
}

static void fire(void)
{
	MARK(fork_a, "%d", 1);
	MARK(fork_b, "%d", 2);
}

static void *spin(void *arg)
{
	for (int i = 0; i < 100000; i++)
		MARK(fork_spin, "%d", i);
	return arg;
}

int main(void)
{
	CHECK_EQ(mark_probe_register_fast("fork_*", probe, NULL), 0);
	/* Site counts depend on how often the compiler inlined fire(). */
	CHECK(mark_arm("fork_a") >= 1);
	pthread_t t;
	pthread_create(&t, NULL, spin, NULL);   /* a thread is running across the fork */
	pid_t pid = fork();
	if (pid == 0) {
		int bad = 0;
		fire();
		bad += hits_a != 1 || hits_b != 0;
		bad += mark_disarm("fork_a") < 1;
		bad += mark_arm("fork_b") < 1;
		bad += mark_arm("fork_spin") < 1;
		fire();
		bad += hits_a != 1 || hits_b != 1;
		spin(NULL);
		_exit(bad ? 10 + bad : 0);
	}
	int status = 0;
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status));
	CHECK_EQ(WEXITSTATUS(status), 0);
	pthread_join(t, NULL);
	/* The parent's state is its own. */
	fire();
	CHECK_EQ(hits_a, 1);
	CHECK_EQ(hits_b, 0);
	CHECK(mark_disarm("fork_*") >= 1);
	fire();
	CHECK_EQ(hits_a, 1);
	CHECK_EQ(mark_probe_unregister_fast("fork_*", probe, NULL), 0);
	TEST_DONE();
}
