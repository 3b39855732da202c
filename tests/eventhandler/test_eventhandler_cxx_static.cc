// EVENTHANDLER_REGISTER in C++ initialisers outside functions (found by a
// review): a namespace-scope variable and a default member initialiser, both
// common C++ idioms for registering at start-up.  The macro was a GNU
// statement expression, which C++ allows only inside function bodies:
// "statement-expressions are not allowed outside functions nor in
// template-argument lists" (g++), "statement expression not allowed at file
// scope" (clang++).  Also an overloaded handler name (the declared type
// picks the overload) and a captureless lambda.  Compiled by the
// eventhandler_cxx_static_compile test too, so that the compile error shows
// as a test failure of its own.  The header is included inside extern "C",
// as C++ programs often include C headers: its C++ parts say extern "C++".
extern "C" {
#include <mark/eventhandler.h>
}
#include "testutil.h"

typedef void (*reload_fn)(void *arg, int generation);
EVENTHANDLER_DECLARE(ehcs_reload, reload_fn);

static int total;

static void on_reload(void *arg, int generation)
{
	total += *static_cast<int *>(arg) * generation;
}
// An overload of another type: the list's declared type chooses.
static void on_reload(void *, const char *) {}

static int weight_global = 1;
static eventhandler_tag global_tag =
	EVENTHANDLER_REGISTER(ehcs_reload, on_reload, &weight_global, EVENTHANDLER_PRI_ANY);

namespace {
struct Subsystem {
	int weight = 10;
	eventhandler_tag tag = EVENTHANDLER_REGISTER(ehcs_reload, on_reload, &weight, EVENTHANDLER_PRI_LAST);
	~Subsystem() { EVENTHANDLER_DEREGISTER(ehcs_reload, tag); }
};
} // namespace

int main()
{
	CHECK(global_tag != nullptr);
	(void)static_cast<void (*)(void *, const char *)>(on_reload);
	{
		Subsystem s;
		CHECK(s.tag != nullptr);
		CHECK_EQ(mark_eventhandler_count("ehcs_reload"), 2);
		EVENTHANDLER_INVOKE(ehcs_reload, 1);
		CHECK_EQ(total, 11);
	}
	CHECK_EQ(mark_eventhandler_count("ehcs_reload"), 1);
	static int weight_lambda = 100;
	eventhandler_tag lt = EVENTHANDLER_REGISTER(
		ehcs_reload, [](void *arg, int generation) { total += *static_cast<int *>(arg) * generation; },
		&weight_lambda, EVENTHANDLER_PRI_FIRST);
	CHECK(lt != nullptr);
	EVENTHANDLER_INVOKE(ehcs_reload, 2);
	CHECK_EQ(total, 11 + 2 + 200);
	CHECK_EQ(EVENTHANDLER_DEREGISTER(ehcs_reload, lt), 0);
	CHECK_EQ(EVENTHANDLER_DEREGISTER(ehcs_reload, global_tag), 0);
	TEST_DONE();
}
