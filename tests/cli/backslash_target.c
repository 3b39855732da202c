/*
 * Text holding a backslash beside text holding the byte its escape stands
 * for (test_cli.py case hostile_backslash): the formats "a\\x1b %d" (the
 * four characters \x1b) and "a\x1b %d" (ESC), which `mark list` must show
 * apart, a format with quotes, and the %s values "a\\x1b" and "a\x1b",
 * which `mark view` must show apart.
 */
#include <mark/mark.h>

int main(void)
{
	int one = 1;
	MARK(fmt_backslash, "a\\x1b %d", one);
	MARK(fmt_escape, "a\x1b %d", one);
	MARK(fmt_quote, "say \"%d\"", one);
	MARK(str_value, "s %s", "a\\x1b");
	MARK(str_value, "s %s", "a\x1b");
	return 0;
}
