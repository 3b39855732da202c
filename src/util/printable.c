/* Which bytes may reach a terminal as they are: see printable.h. */
#include "printable.h"

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

size_t mark_printable_copy(char *out, size_t size, const char *text)
{
	static const char hex[] = "0123456789abcdef";
	size_t len = 0;
	if (size == 0)
		return 0;
	for (const unsigned char *p = (const unsigned char *)text; *p;) {
		char piece[4];
		size_t n = 1;
		const unsigned char *from = p;
		if (*p >= 0x20 && *p < 0x7f) {
			from = p;
		} else if (*p >= 0x80 && (n = mark_utf8_printable(p)) > 0) {
			from = p;
		} else {
			char esc = *p == '\n' ? 'n' : *p == '\t' ? 't' : *p == '\r' ? 'r' : 0;
			piece[0] = '\\';
			if (esc) {
				piece[1] = esc;
				n = 2;
			} else {
				piece[1] = 'x';
				piece[2] = hex[*p >> 4];
				piece[3] = hex[*p & 15];
				n = 4;
			}
			from = (const unsigned char *)piece;
		}
		if (len + n + 1 > size) {
			/* Cut: make room for "..." at a character boundary. */
			size_t keep = size >= 4 ? size - 4 : 0;
			if (len > keep) {
				len = keep;
				while (len > 0 && ((unsigned char)out[len] & 0xc0) == 0x80)
					len--;
			}
			if (size >= 4) {
				memcpy(out + len, "...", 3);
				len += 3;
			}
			break;
		}
		memcpy(out + len, from, n);
		len += n;
		p += from == (const unsigned char *)piece ? 1 : n;
	}
	out[len] = '\0';
	return len;
}
