/*
 * The application's own SIGTRAP handler keeps working: its traps
 * (raise(SIGTRAP), an int3 in the program) reach it while a thread runs a
 * site through arming and disarming, and after it re-installs its handler.
 * (mark installs no SIGTRAP handler any more; this guards against one
 * coming back.)
 */
#include <mark/mark.h>
#include "testutil.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

static volatile sig_atomic_t app_traps;
static void app_handler(int sig)
{
	(void)sig;
	app_traps++;
}

static atomic_int stop;
static void *hammer(void *arg)
{
	(void)arg;
	for (int i = 0; !atomic_load_explicit(&stop, memory_order_relaxed); i++)
		MARK(chain_site, "%d", i);
	return NULL;
}

static void program_int3(void)
{
#if defined(__x86_64__)
	__asm__ volatile("int3");
#else
	raise(SIGTRAP);
#endif
}

int main(void)
{
	signal(SIGTRAP, app_handler);
	pthread_t t;
	pthread_create(&t, NULL, hammer, NULL);
	for (int i = 0; i < 200; i++) {
		CHECK(mark_arm("chain_site") >= 0);
		CHECK(mark_disarm("chain_site") >= 0);
	}
	raise(SIGTRAP);
	program_int3();
	CHECK_EQ(app_traps, 2);

	/* The application installs its handler again; more batches follow. */
	signal(SIGTRAP, app_handler);
	for (int i = 0; i < 200; i++) {
		CHECK(mark_arm("chain_site") >= 0);
		CHECK(mark_disarm("chain_site") >= 0);
	}
	program_int3();
	raise(SIGTRAP);
	CHECK_EQ(app_traps, 4);
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	TEST_DONE();
}
