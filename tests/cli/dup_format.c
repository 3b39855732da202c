/*
 * One marker defined with two formats (issue 16): the "%d" site is in an
 * always-inline function called twice, so its code is duplicated (two
 * code entries, one descriptor).  libmark must say once that the site is
 * never armed.
 */
#include <mark/mark.h>

static inline __attribute__((always_inline)) void twice(int x)
{
	MARK(cli_dup, "%d", x);
}

void first(unsigned y);
void first(unsigned y)
{
	MARK(cli_dup, "%u", y);
}

int main(int argc, char **argv)
{
	(void)argv;
	first(1);
	twice(argc);
	twice(argc + 1);
	return 0;
}
