// The header compiles as C++, and C++ sites work in an executable and a shared object.
#include <mark/mark.h>
#include "cxx_lib.h"

#include <atomic>
#include <cstdio>
#include <cstring>

static std::atomic<int> hits{0};
static int last_value;

static void probe(const struct mark_marker *m, void *, const uint64_t *args)
{
	hits++;
	if (std::strcmp(mark_marker_name(m), "cxx_member") == 0 || std::strcmp(mark_marker_name(m), "cxx_inline") == 0)
		last_value = (int)args[0];
}

int main()
{
	int failures = 0;
	if (mark_probe_register_fast("cxx_*", probe, nullptr) != 0)
		failures++;
	if (cxx_lib_call(1) != 0 || cxx_inline(1) != 0 || hits != 0)
		failures++;
	int armed = mark_arm("cxx_*");
	// exe: cxx_inline (MARK + MARK_ENABLED); lib: cxx_inline x2, cxx_template, cxx_member
	if (armed < 5) {
		std::fprintf(stderr, "armed %d sites: %s\n", armed, mark_last_error());
		failures++;
	}
	if (cxx_inline(5) != 1 || last_value != 5)
		failures++;
	int before = hits;
	cxx_lib_call(9);
	if (hits - before != 3 || last_value != 9)
		failures++;
	mark_disarm("cxx_*");
	before = hits;
	cxx_lib_call(3);
	if (hits != before)
		failures++;
	std::printf("%s (%d hits)\n", failures ? "FAILED" : "ok", hits.load());
	return failures ? 1 : 0;
}
