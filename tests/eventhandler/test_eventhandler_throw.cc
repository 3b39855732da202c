// A C++ handler that throws out of EVENTHANDLER_INVOKE (found by a review).
//
// The invocation enters an RCU read-side section before the first handler
// and leaves it after the last.  A handler's exception unwound through the
// invoking code past the exit: the thread stayed inside the section for
// ever, so every EVENTHANDLER_DEREGISTER (on any thread) waited for it
// for ever, and on the throwing thread itself DEREGISTER believed it was
// inside a handler and returned without waiting.  The scenario runs in a
// child bounded to 10 s (liburcu blocks every signal while it waits, so
// only SIGKILL ends a hang).
#include <mark/eventhandler.h>
#include "testutil.h"
#include "testutil_wait.h"

#include <pthread.h>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>

typedef void (*req_fn)(void *arg, int request);
EVENTHANDLER_DECLARE(eh_throw_request, req_fn);

static int calls;

static void reject(void *, int request)
{
	calls++;
	if (request < 0)
		throw std::invalid_argument("negative request");
}

static void *deregister_all(void *)
{
	// On another thread: must not wait for the thread that caught the exception.
	EVENTHANDLER_DEREGISTER(eh_throw_request, NULL);
	return NULL;
}

static int scenario()
{
	eventhandler_tag t = EVENTHANDLER_REGISTER(eh_throw_request, reject, NULL, EVENTHANDLER_PRI_ANY);
	CHECK(t != nullptr);
	bool caught = false;
	try {
		EVENTHANDLER_INVOKE(eh_throw_request, -1);
	} catch (const std::invalid_argument &) {
		caught = true;
	}
	CHECK(caught);
	CHECK_EQ(calls, 1);
	// The invocation has ended: this thread is in no read-side section.
	CHECK_EQ(mark_synchronize(), 0);
	EVENTHANDLER_INVOKE(eh_throw_request, 1);
	CHECK_EQ(calls, 2);
	pthread_t th;
	CHECK_EQ(pthread_create(&th, NULL, deregister_all, NULL), 0);
	pthread_join(th, NULL);
	CHECK_EQ(mark_eventhandler_count("eh_throw_request"), 0);
	EVENTHANDLER_INVOKE(eh_throw_request, 1);
	CHECK_EQ(calls, 2);
	return testutil_failures ? 1 : 0;
}

int main()
{
	int st = 0;
	double secs = 0;
	if (!testutil_run_bounded(scenario, 10, &st, &secs)) {
		fprintf(stderr, "EVENTHANDLER_DEREGISTER on another thread did not return within 10 s after a "
				"handler threw out of EVENTHANDLER_INVOKE (the invocation's read-side section "
				"was never left)\n");
		return 1;
	}
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	TEST_DONE();
}
