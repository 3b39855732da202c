/* Which bytes may reach a terminal as they are: see printable.h. */
#include "printable.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

size_t mark_utf8_len(const unsigned char *p, uint32_t *code)
{
	size_t n;
	uint32_t c;
	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		n = 2;
		c = p[0] & 0x1fu;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		n = 3;
		c = p[0] & 0x0fu;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		n = 4;
		c = p[0] & 0x07u;
	} else {
		return 0;
	}
	/* The NUL terminator is not a continuation byte: no read past it. */
	for (size_t k = 1; k < n; k++) {
		if ((p[k] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (p[k] & 0x3fu);
	}
	if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*code = c;
	return n;
}

size_t mark_utf8_printable(const unsigned char *p)
{
	uint32_t c;
	size_t n = mark_utf8_len(p, &c);
	if (!n || c <= 0x9f || (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069))
		return 0;
	return n;
}

void mark_thread_name_clean(char out[16], const char *name, size_t len)
{
	memset(out, 0, 16);
	size_t n = 0;
	while (n < len && n < 15 && name[n] && name[n] != '\n')
		n++;
	/* A NUL-terminated copy for mark_utf8_printable(), which stops at NUL. */
	unsigned char in[16] = { 0 };
	memcpy(in, name, n);
	for (size_t i = 0; i < n;) {
		size_t k = in[i] >= 0x80 ? mark_utf8_printable(in + i) : 0;
		if (k) {
			memcpy(out + i, in + i, k);
			i += k;
		} else {
			out[i] = in[i] >= 0x20 && in[i] < 0x7f ? (char)in[i] : '?';
			i++;
		}
	}
}

/*
 * How the character at p prints: printable ASCII and printable UTF-8 as
 * they are (*form = p), \n \t \r and every other byte as an escape written
 * into piece (*form = piece).  A backslash is the escape character, so as
 * a value it is escaped too (\\): otherwise a name holding the four
 * characters \x1b would print exactly as a name holding ESC.  The form for
 * a whole message (escape_backslash false) leaves it, so that values the
 * message quotes, escaped already, are not escaped twice.  *printed: the
 * printed length (1 to 4).  Returns the bytes of text it takes (1, or the
 * UTF-8 sequence's length).
 */
static size_t printed_form(const unsigned char *p, bool escape_backslash, char piece[4], const char **form,
			   size_t *printed)
{
	static const char hex[] = "0123456789abcdef";
	size_t n;
	*form = (const char *)p;
	if (*p >= 0x20 && *p < 0x7f && (*p != '\\' || !escape_backslash))
		return *printed = 1;
	if (*p >= 0x80 && (n = mark_utf8_printable(p)) > 0)
		return *printed = n;
	char esc = *p == '\n' ? 'n' : *p == '\t' ? 't' : *p == '\r' ? 'r' : *p == '\\' ? '\\' : 0;
	piece[0] = '\\';
	if (esc) {
		piece[1] = esc;
		*printed = 2;
	} else {
		piece[1] = 'x';
		piece[2] = hex[*p >> 4];
		piece[3] = hex[*p & 15];
		*printed = 4;
	}
	*form = piece;
	return 1;
}

static size_t printable_copy(char *out, size_t size, const char *text, bool escape_backslash)
{
	size_t len = 0;
	size_t ends[4] = { 0 }, pieces = 0;   /* where the last 4 printed characters end */
	if (size == 0)
		return 0;
	for (const unsigned char *p = (const unsigned char *)text; *p;) {
		char piece[4];
		const char *from;
		size_t n;
		const size_t taken = printed_form(p, escape_backslash, piece, &from, &n);
		if (len + n + 1 > size) {
			/* Cut: make room for "..." at the end of a character as
			 * printed (never inside a UTF-8 sequence nor inside an
			 * escape such as \x1b).  Pieces are 1 to 4 bytes long and
			 * at most 3 bytes are given back, so the last 4 ends
			 * hold one that fits. */
			size_t keep = size >= 4 ? size - 4 : 0;
			if (len > keep) {
				size_t cut = 0;
				for (size_t k = 0; k < 4 && k < pieces; k++)
					if (ends[(pieces - 1 - k) % 4] <= keep) {
						cut = ends[(pieces - 1 - k) % 4];
						break;
					}
				len = cut;
			}
			if (size >= 4) {
				memcpy(out + len, "...", 3);
				len += 3;
			}
			break;
		}
		memcpy(out + len, from, n);
		len += n;
		ends[pieces++ % 4] = len;
		p += taken;
	}
	out[len] = '\0';
	return len;
}

/* Bytes of text's first character, and its printed length in *printed. */
static size_t printed_char(const unsigned char *p, bool escape_backslash, size_t *printed)
{
	char piece[4];
	const char *form;
	return printed_form(p, escape_backslash, piece, &form, printed);
}

static size_t printed_len(const unsigned char *p, bool escape_backslash)
{
	size_t len = 0, w;
	while (*p) {
		p += printed_char(p, escape_backslash, &w);
		len += w;
	}
	return len;
}

static size_t printable_brief(char *out, size_t size, const char *text, bool escape_backslash)
{
	const unsigned char *t = (const unsigned char *)text;
	/* Too small to show both ends: the plain cut. */
	if (size < 16 || printed_len(t, escape_backslash) < size)
		return printable_copy(out, size, text, escape_backslash);
	/* About two thirds for the start (which ends in "..."), the rest for the end. */
	size_t room = size - 1, head_room = room * 2 / 3, tail_room = room - head_room;
	size_t len = printable_copy(out, head_room + 1, text, escape_backslash);
	/* The end: the longest suffix starting on a character boundary
	 * (never inside a UTF-8 sequence) whose printed form fits. */
	size_t n = strlen(text);
	const unsigned char *s = t + (n > tail_room ? n - tail_room : 0);
	while ((*s & 0xc0) == 0x80)
		s++;
	while (*s && printed_len(s, escape_backslash) > size - 1 - len) {
		size_t w;
		s += printed_char(s, escape_backslash, &w);
		while ((*s & 0xc0) == 0x80)
			s++;
	}
	return len + printable_copy(out + len, size - len, (const char *)s, escape_backslash);
}

size_t mark_printable_copy(char *out, size_t size, const char *text)
{
	return printable_copy(out, size, text, true);
}

size_t mark_printable_brief(char *out, size_t size, const char *text)
{
	return printable_brief(out, size, text, true);
}

size_t mark_printable_message_copy(char *out, size_t size, const char *text)
{
	return printable_copy(out, size, text, false);
}

size_t mark_printable_message_brief(char *out, size_t size, const char *text)
{
	return printable_brief(out, size, text, false);
}
