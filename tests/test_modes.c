/*
 * The header in every build mode users have: strict ISO C (-std=c99/c11,
 * no GNU comma elision for "..."-only macros), -O0 (where jump sites use a
 * direct asm goto into the out-of-line block) and -O2; markers with no
 * argument and with arguments; MARK_ENABLED.
 */
#include <mark/mark.h>
#include "testutil.h"

static int hits, last;
static void probe(const struct mark_marker *m, void *priv, const uint64_t *args)
{
	(void)priv;
	hits++;
	last = mark_marker_nargs(m) ? (int)args[0] : -1;
}

static int fire(int v)
{
	MARK(modes_none, "");
	MARK(modes_one, "%d", v);
	if (MARK_ENABLED(modes_one))
		return 1;
	return 0;
}

int main(void)
{
	CHECK_EQ(mark_probe_register_fast("modes_*", probe, NULL), 0);
	CHECK_EQ(fire(1), 0);
	CHECK_EQ(hits, 0);
	CHECK(mark_arm("modes_none") >= 1);
	fire(2);
	CHECK_EQ(hits, 1);
	CHECK_EQ(last, -1);
	CHECK(mark_arm("modes_one") >= 2);
	CHECK_EQ(fire(3), 1);
	CHECK_EQ(hits, 3);
	CHECK_EQ(last, 3);
	CHECK(mark_disarm("*") >= 3);
	CHECK_EQ(fire(4), 0);
	CHECK_EQ(hits, 3);
	TEST_DONE();
}
