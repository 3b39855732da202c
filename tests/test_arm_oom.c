/*
 * mark_arm() and mark_disarm() when memory runs out: all or nothing.
 *
 * Each round forks a child that makes its Kth allocation from now on fail
 * (this program's malloc, calloc and realloc come before libc's, on the
 * calling thread only), calls mark_arm("*"), then loads a shared object
 * with a marker.  Either the call fails with a message and changed
 * nothing (the local marker and the loaded one stay disarmed), or it
 * succeeded and both are armed: the rule holds for objects loaded later.
 * Then the same for mark_disarm("*") from everything armed.  Rounds go on
 * until a call needs no more than K allocations.
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
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

/* Allocations left before they fail, on this thread; -1: never fail. */
static __thread long allocations_left = -1;

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

static int local_armed(void)
{
	MARK(oom_local, "%d", 1);
	return MARK_ENABLED(oom_local) ? 1 : 0;
}

/* The shared object's marker, armed or not (dl_rx_hit returns it). */
static int loaded_armed(void)
{
	void *h = dlopen(DL_MARKERS_PATH, RTLD_NOW);
	if (!h) {
		fprintf(stderr, "FAIL: dlopen %s: %s\n", DL_MARKERS_PATH, dlerror());
		_exit(3);
	}
	int (*hit)(int, const char *) = (int (*)(int, const char *))dlsym(h, "dl_rx_hit");
	return hit ? hit(1, "oom") : -1;
}

/*
 * One round in a child: exit 0 = consistent and the call failed at
 * allocation k, 10 = consistent and the call needed at most k allocations,
 * 1 = inconsistent (printed).  mark_arm/mark_disarm return how many
 * markers changed, or -errno.
 */
static int child(bool arm, long k)
{
	if (!arm && mark_arm("*") < 0) {
		fprintf(stderr, "FAIL: the first mark_arm(\"*\") failed: %s\n", mark_last_error());
		return 1;
	}
	allocations_left = k;
	int r = arm ? mark_arm("*") : mark_disarm("*");
	long left = allocations_left;
	allocations_left = -1;
	const char *err = r < 0 ? mark_last_error() : "";
	int local = local_armed(), loaded = loaded_armed();
	int want = r >= 0 ? arm : !arm;   /* success: the new state; failure: the old one */
	if (local != want || loaded != want) {
		fprintf(stderr, "FAIL: %s(\"*\") with allocation %ld failing returned %d (%s): the local marker is "
			"%s and a marker loaded afterwards is %s; both should be %s\n", arm ? "mark_arm" : "mark_disarm",
			k, r, err, local ? "armed" : "disarmed", loaded ? "armed" : "disarmed",
			want ? "armed" : "disarmed");
		return 1;
	}
	if (r < 0 && (r != -ENOMEM || !err[0])) {
		fprintf(stderr, "FAIL: %s failed with %d and message \"%s\" (expected -ENOMEM and a message)\n",
			arm ? "mark_arm" : "mark_disarm", r, err);
		return 1;
	}
	return r >= 0 && left > 0 ? 10 : 0;
}

int main(void)
{
	const char *san = getenv("MARK_TEST_SANITIZER");
	if (san && san[0]) {
		printf("SKIP: this test replaces malloc, which the %s sanitizer replaces too\n", san);
		return 77;
	}
	int failures = 0;
	for (int arm = 1; arm >= 0; arm--) {
		long k;
		for (k = 0; k < 1000; k++) {
			fflush(stdout);
			pid_t p = fork();
			if (p == 0)
				_exit(child(arm, k));
			int st;
			waitpid(p, &st, 0);
			if (!WIFEXITED(st) || (WEXITSTATUS(st) != 0 && WEXITSTATUS(st) != 10)) {
				failures++;
				break;
			}
			if (WEXITSTATUS(st) == 10)
				break;
		}
		printf("%s(\"*\"): consistent with each of its first %ld allocations failing\n",
		       arm ? "mark_arm" : "mark_disarm", k);
	}
	if (failures)
		return 1;
	printf("ok\n");
	return 0;
}
