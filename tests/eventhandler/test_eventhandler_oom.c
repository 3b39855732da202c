/*
 * Deregistration when memory is short (found by a review).
 *
 * A deregistration publishes a new, smaller array of handlers.  When that
 * array could not be allocated, EVENTHANDLER_DEREGISTER returned -ENOMEM
 * and left the handler registered - and EVENTHANDLER_DEFINE's destructor,
 * which cannot report anything, left it registered at dlclose: the next
 * invocation jumped into the unmapped object (SIGSEGV).  Now such a
 * handler is removed in place.
 *
 * The scenario, in a child (a crash is the old failure): a list with many
 * handlers (its array is larger than malloc's mmap threshold, fixed with
 * mallopt), a dlopen'ed object with an EVENTHANDLER_DEFINE handler on it,
 * then RLIMIT_AS just above the process's size, so that no array of that
 * size can be mapped.  A registration must fail then (else nothing is short
 * and the test says SKIP); an explicit deregistration and the dlclose must
 * work, and the next invocation must call the remaining handlers.
 */
#define _GNU_SOURCE
#include <mark/eventhandler.h>
#include "testutil.h"
#include "testutil_wait.h"

#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define EH_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define EH_SANITIZED 1
#endif
#endif

typedef void (*eh_oom_fn)(void *arg, int *calls);
EVENTHANDLER_DECLARE(eh_oom, eh_oom_fn);

#define HANDLERS 20000   /* an array of 160 KB, beyond the 64 KB threshold */

static void exe_handler(void *arg, int *calls)
{
	(void)arg;
	*calls += 1;
}

static long vm_size_bytes(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmSize: %ld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb * 1024;
}

/* 0: as expected; 1: a check failed; 77: memory was not short. */
static int scenario(void)
{
	if (mallopt(M_MMAP_THRESHOLD, 64 * 1024) != 1)
		return 77;
	eventhandler_tag first = NULL;
	for (int i = 0; i < HANDLERS; i++) {
		eventhandler_tag t = EVENTHANDLER_REGISTER(eh_oom, exe_handler, NULL, EVENTHANDLER_PRI_LAST);
		if (!t) {
			fprintf(stderr, "registration %d failed: %s\n", i, mark_last_error());
			return 1;
		}
		if (!first)
			first = t;
	}
	void *plugin = dlopen(EH_OOM_PLUGIN, RTLD_NOW);
	if (!plugin) {
		fprintf(stderr, "dlopen %s: %s\n", EH_OOM_PLUGIN, dlerror());
		return 1;
	}
	CHECK_EQ(mark_eventhandler_count("eh_oom"), HANDLERS + 1);
	int calls = 0;
	EVENTHANDLER_INVOKE(eh_oom, &calls);
	CHECK_EQ(calls, HANDLERS + 1000);

	malloc_trim(0);
	struct rlimit old, tight;
	getrlimit(RLIMIT_AS, &old);
	tight = old;
	tight.rlim_cur = (rlim_t)vm_size_bytes() + 64 * 1024;
	if (setrlimit(RLIMIT_AS, &tight) != 0)
		return 77;
	/* The precondition: no array of the list's size can be allocated. */
	eventhandler_tag probe = EVENTHANDLER_REGISTER(eh_oom, exe_handler, NULL, EVENTHANDLER_PRI_LAST);
	if (probe) {
		setrlimit(RLIMIT_AS, &old);
		printf("a registration succeeded under RLIMIT_AS: memory was not short\n");
		return 77;
	}
	int r = EVENTHANDLER_DEREGISTER(eh_oom, first);
	int unloaded = dlclose(plugin);
	setrlimit(RLIMIT_AS, &old);
	if (r != 0)
		fprintf(stderr, "EVENTHANDLER_DEREGISTER with memory short returned %d (%s)\n", r,
			mark_last_error());
	CHECK_EQ(r, 0);
	CHECK_EQ(unloaded, 0);
	CHECK_EQ(EVENTHANDLER_DEREGISTER(eh_oom, first), -ENOENT);
	unsigned count = mark_eventhandler_count("eh_oom");
	if (count != HANDLERS - 1)
		fprintf(stderr, "after the dlclose with memory short the list has %u handlers, want %d (the "
				"unloaded object's handler is still registered); invoking\n", count, HANDLERS - 1);
	CHECK_EQ(count, HANDLERS - 1);
	fflush(stderr);
	calls = 0;
	EVENTHANDLER_INVOKE(eh_oom, &calls);   /* the old code jumped into the unmapped object */
	CHECK_EQ(calls, HANDLERS - 1);
	/* The list's next change drops what was removed in place. */
	eventhandler_tag again = EVENTHANDLER_REGISTER(eh_oom, exe_handler, NULL, EVENTHANDLER_PRI_FIRST);
	CHECK(again != NULL);
	CHECK_EQ(mark_eventhandler_count("eh_oom"), HANDLERS);
	calls = 0;
	EVENTHANDLER_INVOKE(eh_oom, &calls);
	CHECK_EQ(calls, HANDLERS);
	CHECK_EQ(EVENTHANDLER_DEREGISTER(eh_oom, NULL), 0);
	CHECK_EQ(mark_eventhandler_count("eh_oom"), 0);
	return testutil_failures ? 1 : 0;
}

int main(void)
{
#ifdef EH_SANITIZED
	TEST_SKIP("a sanitizer's allocator ignores mallopt and needs far more than RLIMIT_AS leaves");
#endif
	int st = 0;
	double secs = 0;
	if (!testutil_run_bounded(scenario, 15, &st, &secs)) {
		fprintf(stderr, "the scenario did not end within 15 s\n");
		return 1;
	}
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
		TEST_SKIP("memory could not be made short enough to refuse a new array here");
	if (WIFSIGNALED(st))
		fprintf(stderr, "the scenario died of signal %d (%s)\n", WTERMSIG(st), strsignal(WTERMSIG(st)));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	TEST_DONE();
}
