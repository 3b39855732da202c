/*
 * Marker names that are not ASCII: C11 lets an identifier hold UTF-8
 * letters (gcc from 10, clang), so MARK(café, ...) and MARK(cafè, ...)
 * are two markers, and every reader must show them as two, by their own
 * names (test_cli.py case utf8_names).  Each fires once with its number.
 * The test runs this program through a link whose name holds UTF-8 and a
 * control byte, which the kernel makes the process name (comm).
 */
#include <mark/mark.h>

int main(void)
{
	int one = 1, two = 2;
	MARK(café, "%d", one);
	MARK(cafè, "%d", two);
	return 0;
}
