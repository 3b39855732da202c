/*
 * A tag deregistered twice is -ENOENT, also after later registrations
 * (found by a review).
 *
 * The tag was the address of the handler's record, freed after the grace
 * period of its deregistration; the next registration's record was often
 * allocated at the same address, so a second EVENTHANDLER_DEREGISTER of
 * the old tag (a double cleanup path, a retry) returned 0 and removed the
 * new handler, which belonged to someone else: it was never called again.
 * Rounds of register A, deregister A, register B, deregister A again.
 */
#include <mark/eventhandler.h>
#include "testutil.h"

#include <errno.h>

typedef void (*ev_fn)(void *arg);
EVENTHANDLER_DECLARE(ehst_reload, ev_fn);
EVENTHANDLER_DECLARE(ehst_other, ev_fn);

static int calls_b;
static void handler_a(void *arg)
{
	(void)arg;
}
static void handler_b(void *arg)
{
	(void)arg;
	calls_b++;
}

int main(void)
{
	int reused = 0;
	for (int round = 0; round < 200; round++) {
		eventhandler_tag a = EVENTHANDLER_REGISTER(ehst_reload, handler_a, NULL, EVENTHANDLER_PRI_ANY);
		CHECK(a != NULL);
		CHECK_EQ(EVENTHANDLER_DEREGISTER(ehst_reload, a), 0);
		eventhandler_tag b = EVENTHANDLER_REGISTER(ehst_reload, handler_b, NULL, EVENTHANDLER_PRI_ANY);
		CHECK(b != NULL);
		reused += a == b;
		int again = EVENTHANDLER_DEREGISTER(ehst_reload, a);
		if (again != -ENOENT) {
			fprintf(stderr, "round %d: deregistering an already deregistered tag returned %d, not "
					"-ENOENT (the new handler's tag is %s)\n", round, again,
				a == b ? "the same: it was removed" : "another");
			testutil_failures++;
			break;
		}
		CHECK(b != a);   /* a tag is never handed out twice */
		int before = calls_b;
		EVENTHANDLER_INVOKE(ehst_reload);
		CHECK_EQ(calls_b, before + 1);
		CHECK_EQ(mark_eventhandler_count("ehst_reload"), 1);
		/* A tag of another list, and a NULL-tag sweep of an empty list. */
		CHECK_EQ(EVENTHANDLER_DEREGISTER(ehst_other, b), -ENOENT);
		CHECK_EQ(EVENTHANDLER_DEREGISTER(ehst_reload, b), 0);
		CHECK_EQ(EVENTHANDLER_DEREGISTER(ehst_reload, b), -ENOENT);
		CHECK_EQ(mark_eventhandler_count("ehst_reload"), 0);
	}
	printf("tags equal to a freed tag: %d of 200 rounds\n", reused);
	TEST_DONE();
}
