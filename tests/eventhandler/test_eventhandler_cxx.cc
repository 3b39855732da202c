// The header from C++: declare, define, register, invoke, deregister.
#include <mark/eventhandler.h>
#include "testutil.h"

#include <string>
#include <vector>

typedef void (*cxx_fn)(void *arg, const std::string &what);
EVENTHANDLER_DECLARE(eh_cxx, cxx_fn);

static std::vector<std::string> seen;

static void first(void *arg, const std::string &what)
{
	seen.push_back(std::string(static_cast<const char *>(arg)) + ":" + what);
}
static void last(void *arg, const std::string &what)
{
	seen.push_back(std::string(static_cast<const char *>(arg)) + ":" + what);
}

static char define_arg[] = "defined";
EVENTHANDLER_DEFINE(eh_cxx, last, define_arg, EVENTHANDLER_PRI_LAST);

namespace {
struct Notifier {
	void fire(const std::string &what) { EVENTHANDLER_INVOKE(eh_cxx, what); }
};
} // namespace

int main()
{
	Notifier n;
	n.fire("a");   // the EVENTHANDLER_DEFINE handler, registered before main
	CHECK_EQ(seen.size(), 1);
	char arg[] = "registered";
	eventhandler_tag t = EVENTHANDLER_REGISTER(eh_cxx, first, arg, EVENTHANDLER_PRI_FIRST);
	CHECK(t != nullptr);
	n.fire("b");
	CHECK_EQ(seen.size(), 3);
	if (seen.size() == 3) {
		CHECK_STR(seen[0].c_str(), "defined:a");
		CHECK_STR(seen[1].c_str(), "registered:b");
		CHECK_STR(seen[2].c_str(), "defined:b");
	}
	CHECK_EQ(EVENTHANDLER_DEREGISTER(eh_cxx, t), 0);
	n.fire("c");
	CHECK_EQ(seen.size(), 4);
	CHECK_EQ(mark_eventhandler_count("eh_cxx"), 1);
	TEST_DONE();
}
