/*
 * %s values a reader must tell apart (test_cli.py case string_tags): a
 * NULL pointer and the string "(null)"; a string of 253 bytes ending in
 * "..." (the longest kept whole) and a longer one that the tracer cuts to
 * its first 252 bytes and marks as cut; the empty string.
 */
#include <mark/mark.h>

#include <string.h>

int main(void)
{
	char whole[254], over[301];
	memset(whole, 'w', 250);
	memcpy(whole + 250, "...", 4);   /* 253 bytes and the NUL */
	memset(over, 'o', 300);
	over[300] = '\0';
	const char *none = NULL, *nulltext = "(null)", *empty = "";
	MARK(str_tags, "%s %s %s %s %s", none, nulltext, whole, over, empty);
	return 0;
}
