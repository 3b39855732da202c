/* Text the `mark` command prints: see text.h. */
#include "text.h"
#include "util/printable.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_array_grow(void *array_ptr, size_t *cap, size_t elem_size, size_t initial)
{
	size_t want = *cap ? 2 * *cap : initial;
	if (want < *cap || want > SIZE_MAX / elem_size)
		return -1;
	void *array;
	/* The pointer is a `T *` object: read and written as bytes, not
	 * through a `void *` lvalue (strict aliasing). */
	memcpy(&array, array_ptr, sizeof(array));
	void *grown = realloc(array, want * elem_size);
	if (!grown)
		return -1;
	memcpy(array_ptr, &grown, sizeof(grown));
	*cap = want;
	return 0;
}

int strbuf_reserve(struct strbuf *sb, size_t extra)
{
	if (sb->failed)
		return -1;
	if (sb->len + extra + 1 <= sb->cap)
		return 0;
	size_t cap = sb->cap ? sb->cap : 256;
	while (cap < sb->len + extra + 1)
		cap *= 2;
	char *grown = realloc(sb->data, cap);
	if (!grown) {
		sb->failed = 1;
		return -1;
	}
	sb->data = grown;
	sb->cap = cap;
	return 0;
}

void strbuf_add_grow(struct strbuf *sb, const char *text, size_t len)
{
	if (strbuf_reserve(sb, len) != 0)
		return;
	memcpy(sb->data + sb->len, text, len);
	sb->len += len;
	sb->data[sb->len] = '\0';
}

/*
 * Numbers without printf: `mark view` writes millions of lines, and
 * vsnprintf's format parsing was most of its time.  Same digits as
 * "%" PRIu64, "%0*" PRIu64 and "%" PRIx64.
 */
void text_put_digits(char *end, uint64_t v, unsigned n)
{
	/* Two digits per division by 100 (a 100-entry table): the digit loop
	 * was the top function of `mark view` in perf. */
	static const char pairs[201] =
		"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
		"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
		"8081828384858687888990919293949596979899";
	char *p = end, *start = end - n;
	if (v <= UINT32_MAX) {
		/* The same in 32 bits (a timestamp's nanoseconds, most fields):
		 * the divisions by 100 become cheaper multiplications. */
		uint32_t w = (uint32_t)v;
		while (w >= 100 && p - start >= 2) {
			uint32_t r = w % 100;
			w /= 100;
			p -= 2;
			memcpy(p, pairs + 2 * r, 2);
		}
		while (p > start) {
			*--p = (char)('0' + w % 10);
			w /= 10;
		}
		return;
	}
	while (v >= 100 && p - start >= 2) {
		unsigned r = (unsigned)(v % 100);
		v /= 100;
		p -= 2;
		memcpy(p, pairs + 2 * r, 2);
	}
	while (p > start) {
		*--p = (char)('0' + v % 10);
		v /= 10;
	}
}

unsigned text_count_digits(uint64_t v)
{
	static const uint64_t p10[20] = {
		1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull, 100000000ull,
		1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull, 10000000000000ull,
		100000000000000ull, 1000000000000000ull, 10000000000000000ull, 100000000000000000ull,
		1000000000000000000ull, 10000000000000000000ull,
	};
	/* bits * log10(2) (1233/4096) is the count or one less */
	unsigned bits = v ? 64u - (unsigned)__builtin_clzll(v) : 1u;
	unsigned n = (bits * 1233u >> 12) + 1;
	if (n < 20 && v >= p10[n])
		n++;
	else if (n > 1 && v < p10[n - 1])
		n--;
	return n;
}

void strbuf_add_uint(struct strbuf *sb, uint64_t v, unsigned min_digits)
{
	/* written straight into the buffer: the nanoseconds of every
	 * timestamp and most fields of `mark view` come through here */
	unsigned n = text_count_digits(v);
	if (min_digits > 24)   /* the padding limit it always had */
		min_digits = 24;
	unsigned width = n < min_digits ? min_digits : n;
	if (strbuf_reserve(sb, width) != 0)
		return;
	text_put_digits(sb->data + sb->len + width, v, width);
	sb->len += width;
	sb->data[sb->len] = '\0';
}

void strbuf_add_int(struct strbuf *sb, int64_t v)
{
	if (v < 0)
		strbuf_add(sb, "-", 1);
	strbuf_add_uint(sb, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v, 1);
}

void strbuf_add_hex(struct strbuf *sb, uint64_t v)
{
	char tmp[16];
	char *p = tmp + sizeof(tmp);
	do {
		*--p = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	strbuf_add(sb, p, (size_t)(tmp + sizeof(tmp) - p));
}

void strbuf_addf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char small[128];
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(small)) {
		strbuf_add(sb, small, (size_t)n);
		return;
	}
	if (strbuf_reserve(sb, (size_t)n) != 0)
		return;
	va_start(ap, fmt);
	vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	sb->len += (size_t)n;
}

void strbuf_reset(struct strbuf *sb)
{
	sb->len = 0;
	if (sb->data)
		sb->data[0] = '\0';
}

void strbuf_release(struct strbuf *sb)
{
	free(sb->data);
	*sb = (struct strbuf){ 0 };
}

enum text_style { STYLE_JSON, STYLE_C, STYLE_TERMINAL };

/*
 * The one escaping routine (see text.h for the three forms).  Newline and
 * tab are two-character escapes in all; JSON and terminal text also
 * escape CR so.  The quoted forms escape `"` and `\`; JSON escapes every
 * other control byte, DEL or byte >= 0x80 (a %s argument is any bytes, not
 * necessarily UTF-8) as \u00XX, so the file is always valid JSON; the C
 * form (the text view's values) every byte outside printable ASCII as
 * \xXX; terminal text keeps printable UTF-8 and escapes the rest as \xXX.
 */
static void add_escaped(struct strbuf *sb, const char *text, enum text_style style)
{
	bool quoted = style != STYLE_TERMINAL;
	if (quoted)
		strbuf_add(sb, "\"", 1);
	for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
		/* A run of printable ASCII that needs no escape goes in with one
		 * copy: the strings of a trace are mostly that. */
		const unsigned char *run = p;
		while (*p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\')
			p++;
		if (p > run) {
			strbuf_add(sb, (const char *)run, (size_t)(p - run));
			if (!*p)
				break;
		}
		switch (*p) {
		case '"':
		case '\\':
			if (!quoted)
				break;
			strbuf_add(sb, "\\", 1);
			strbuf_add(sb, (const char *)p, 1);
			continue;
		case '\n': strbuf_add(sb, "\\n", 2); continue;
		case '\t': strbuf_add(sb, "\\t", 2); continue;
		case '\r':
			if (style == STYLE_C)
				break;
			strbuf_add(sb, "\\r", 2);
			continue;
		default:
			break;
		}
		size_t n;
		if (*p >= 0x20 && *p < 0x7f)
			strbuf_add(sb, (const char *)p, 1);
		else if (*p >= 0x80 && (n = mark_utf8_printable(p)) > 0) {
			strbuf_add(sb, (const char *)p, n);
			p += n - 1;
		} else
			strbuf_addf(sb, style == STYLE_JSON ? "\\u%04x" : "\\x%02x", *p);
	}
	if (quoted)
		strbuf_add(sb, "\"", 1);
}

void strbuf_add_json_string(struct strbuf *sb, const char *text)
{
	add_escaped(sb, text, STYLE_JSON);
}

void strbuf_add_c_string(struct strbuf *sb, const char *text)
{
	add_escaped(sb, text, STYLE_C);
}

void strbuf_add_terminal(struct strbuf *sb, const char *text)
{
	add_escaped(sb, text, STYLE_TERMINAL);
}

/* Per thread (the live line and the trace reader have their own), reused
 * in turn: each result stays valid until 8 more calls of the same thread. */
static __thread struct strbuf cli_text_ring[8];
static __thread unsigned cli_text_next;

const char *cli_text(const char *text)
{
	struct strbuf *sb = &cli_text_ring[cli_text_next++ % 8];
	strbuf_reset(sb);
	strbuf_add(sb, "", 0);
	strbuf_add_terminal(sb, text ? text : "");
	return sb->failed || !sb->data ? "?" : sb->data;
}

void cli_text_thread_done(void)
{
	for (size_t i = 0; i < sizeof(cli_text_ring) / sizeof(cli_text_ring[0]); i++)
		strbuf_release(&cli_text_ring[i]);
}
