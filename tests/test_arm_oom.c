/*
 * Arming and probes when memory runs out: all or nothing.
 *
 * Each round forks a child that makes its Kth allocation from now on fail
 * (this program's malloc, calloc and realloc come before libc's, on the
 * calling thread only), makes one call (mark_arm("*"), mark_disarm("*"),
 * mark_probe_register("*", ...), mark_probe_unregister("*", ...)), then
 * loads a shared object with a marker.  Either the call fails with
 * -ENOMEM and a message and changed nothing, for the local marker and for
 * the loaded one, or it succeeded for both: what it asks holds for objects
 * loaded later too.  Rounds go on until the call needs no more than K
 * allocations.
 *
 * Found by a review: the rule was allocated after the sites were patched,
 * and an allocation failure there was ignored (mark_arm returned 0, and
 * markers loaded afterwards were not armed); the "*" rule also freed the
 * older rules before it could fail.
 */
#define _GNU_SOURCE
#include <mark/mark.h>

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The sanitizers replace malloc themselves (ASan aborts before main if
 * this program's comes first): there the test only says it skips. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define REPLACES_MALLOC 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define REPLACES_MALLOC 0
#endif
#endif
#ifndef REPLACES_MALLOC
#define REPLACES_MALLOC 1
#endif

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

/* Allocations left before they fail, on this thread; -1: never fail. */
static __thread long allocations_left = -1;

#if REPLACES_MALLOC
static bool allocation_fails(void)
{
	if (allocations_left < 0)
		return false;
	if (allocations_left == 0) {
		errno = ENOMEM;
		return true;
	}
	allocations_left--;
	return false;
}

void *malloc(size_t n)
{
	return allocation_fails() ? NULL : __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
	return allocation_fails() ? NULL : __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
	return allocation_fails() ? NULL : __libc_realloc(p, n);
}
#endif

static long probe_calls;

static void count_probe(const struct mark_marker *m, void *priv, const char *fmt, va_list *args)
{
	(void)m, (void)priv, (void)fmt, (void)args;
	probe_calls++;
}

/* The local marker: armed (arming cases) or its probe called (probe cases). */
static int local_state(bool probes)
{
	long before = probe_calls;
	MARK(oom_local, "%d", 1);
	return probes ? probe_calls > before : MARK_ENABLED(oom_local) ? 1 : 0;
}

/* The same for a marker of a shared object loaded now (dl_rx_hit fires it
 * and returns whether it is armed). */
static int loaded_state(bool probes)
{
	void *h = dlopen(DL_MARKERS_PATH, RTLD_NOW);
	if (!h) {
		fprintf(stderr, "FAIL: dlopen %s: %s\n", DL_MARKERS_PATH, dlerror());
		_exit(3);
	}
	int (*hit)(int, const char *) = (int (*)(int, const char *))dlsym(h, "dl_rx_hit");
	long before = probe_calls;
	int armed = hit ? hit(1, "oom") : -1;
	return probes ? probe_calls > before : armed;
}

enum op { ARM, DISARM, PROBE_REGISTER, PROBE_UNREGISTER };
static const char *const op_names[] = { "mark_arm", "mark_disarm", "mark_probe_register",
					"mark_probe_unregister" };

/* The call; its state before is the opposite of what it asks. */
static int prepare(enum op op)
{
	int r = 0;
	if (op != ARM)
		r = mark_arm("*");
	if (r >= 0 && op == PROBE_UNREGISTER)
		r = mark_probe_register("*", NULL, count_probe, NULL);
	return r;
}

static int call(enum op op)
{
	switch (op) {
	case ARM:
		return mark_arm("*");
	case DISARM:
		return mark_disarm("*");
	case PROBE_REGISTER:
		return mark_probe_register("*", NULL, count_probe, NULL);
	case PROBE_UNREGISTER:
		return mark_probe_unregister("*", count_probe, NULL);
	}
	return -EINVAL;
}

/*
 * One round in a child: exit 0 = consistent and the call failed at
 * allocation k, 10 = consistent and the call needed at most k allocations,
 * 1 = inconsistent (printed).  The calls return a count or 0 on success,
 * -errno on failure.
 */
static int child(enum op op, long k)
{
	if (prepare(op) < 0) {
		fprintf(stderr, "FAIL: preparing %s failed: %s\n", op_names[op], mark_last_error());
		return 1;
	}
	allocations_left = k;
	int r = call(op);
	long left = allocations_left;
	allocations_left = -1;
	const char *err = r < 0 ? mark_last_error() : "";
	const bool probes = op == PROBE_REGISTER || op == PROBE_UNREGISTER;
	const int asks = op == ARM || op == PROBE_REGISTER;   /* armed / probe called */
	int local = local_state(probes), loaded = loaded_state(probes);
	int want = r >= 0 ? asks : !asks;   /* success: the new state; failure: the old one */
	const char *yes = probes ? "called" : "armed", *no = probes ? "not called" : "disarmed";
	if (local != want || loaded != want) {
		fprintf(stderr, "FAIL: %s(\"*\") with allocation %ld failing returned %d (%s): the local marker is "
			"%s and a marker loaded afterwards is %s; both should be %s\n", op_names[op], k, r, err,
			local ? yes : no, loaded ? yes : no, want ? yes : no);
		return 1;
	}
	if (r < 0 && (r != -ENOMEM || !err[0])) {
		fprintf(stderr, "FAIL: %s failed with %d and message \"%s\" (expected -ENOMEM and a message)\n",
			op_names[op], r, err);
		return 1;
	}
	return r >= 0 && left > 0 ? 10 : 0;
}

int main(void)
{
	if (!REPLACES_MALLOC) {
		printf("SKIP: this test replaces malloc, which the sanitizer of this build replaces too\n");
		return 77;
	}
	int failures = 0;
	for (enum op op = ARM; op <= PROBE_UNREGISTER; op++) {
		long k;
		for (k = 0; k < 1000; k++) {
			fflush(stdout);
			pid_t p = fork();
			if (p == 0)
				_exit(child(op, k));
			int st;
			waitpid(p, &st, 0);
			if (!WIFEXITED(st) || (WEXITSTATUS(st) != 0 && WEXITSTATUS(st) != 10)) {
				failures++;
				break;
			}
			if (WEXITSTATUS(st) == 10)
				break;
		}
		printf("%s(\"*\"): consistent with each of its first %ld allocations failing\n", op_names[op], k);
	}
	if (failures)
		return 1;
	printf("ok\n");
	return 0;
}
