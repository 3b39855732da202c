/*
 * The debug check (MARK_EVENTHANDLER_DEBUG) against dlclose on another
 * thread (found by a review).
 *
 * The check called dladdr(), which takes the dynamic loader's lock, inside
 * the invocation's read-side section.  dlclose holds that lock while the
 * unloaded object's EVENTHANDLER_DEFINE destructor waits for a grace
 * period - which waits for that section: the invoking thread and the
 * unloading one waited for each other for ever.  Two threads invoke a list
 * while the main thread loads and unloads an object with a DEFINE handler
 * on it, 200 times; in a child bounded to 10 s (liburcu blocks every
 * signal while it waits, so only SIGKILL ends a hang).  Run with
 * MARK_EVENTHANDLER_DEBUG=1 (tests/eventhandler.cmake).
 */
#define _GNU_SOURCE
#include <mark/eventhandler.h>
#include "testutil.h"
#include "testutil_wait.h"

#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

typedef void (*eh_oom_fn)(void *arg, int *calls);
EVENTHANDLER_DECLARE(eh_oom, eh_oom_fn);

#define ROUNDS 200

static int stop;   /* atomic */
static long with_plugin;   /* atomic: invocations that called the plugin's handler */

static void *invoker(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		int calls = 0;
		EVENTHANDLER_INVOKE(eh_oom, &calls);
		if (calls != 0 && calls != 1000)
			abort();   /* only the plugin's handler is registered */
		if (calls)
			__atomic_fetch_add(&with_plugin, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static int scenario(void)
{
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, invoker, NULL) != 0)
			return 2;
	for (int round = 0; round < ROUNDS; round++) {
		void *plugin = dlopen(EH_OOM_PLUGIN, RTLD_NOW);
		if (!plugin) {
			fprintf(stderr, "dlopen %s: %s\n", EH_OOM_PLUGIN, dlerror());
			return 1;
		}
		for (int spin = 0; spin < 200 && __atomic_load_n(&with_plugin, __ATOMIC_RELAXED) == 0; spin++)
			usleep(100);
		if (dlclose(plugin) != 0)
			return 1;
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("%ld invocations called the loaded object's handler\n",
	       __atomic_load_n(&with_plugin, __ATOMIC_RELAXED));
	return __atomic_load_n(&with_plugin, __ATOMIC_RELAXED) > 0 ? 0 : 3;
}

int main(void)
{
	int st = 0;
	double secs = 0;
	if (!testutil_run_bounded(scenario, 10, &st, &secs)) {
		fprintf(stderr, "%d dlopen/dlclose rounds against 2 invoking threads with the debug check did "
				"not end within 10 s (dlclose waiting for a grace period, an invocation waiting "
				"in dladdr for the loader's lock)\n", ROUNDS);
		return 1;
	}
	printf("the rounds ended in %.2f s, status 0x%x\n", secs, st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	TEST_DONE();
}
