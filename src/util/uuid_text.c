/* A UUID's text form, read back: see uuid_text.h. */
#include "uuid_text.h"

#include <stddef.h>

/* The value of hex digit c, or -1. */
static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

const char *mark_uuid_parse(const char *s, uint8_t uuid[16])
{
	for (int i = 0; i < 16; i++) {
		if (*s == '-')
			s++;
		int hi = hex_digit(s[0]), lo = hi < 0 ? -1 : hex_digit(s[1]);   /* s[1] only after a digit */
		if (lo < 0)
			return NULL;
		uuid[i] = (uint8_t)(hi << 4 | lo);
		s += 2;
	}
	return s;
}
