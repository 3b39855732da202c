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

int strbuf_grow(struct strbuf *sb, size_t extra)
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
 *
 * Two digits per lookup in a 100-entry table, and the number cut into
 * blocks of 8 and 4 digits first: the pairs of a block come from
 * independent divisions the CPU overlaps, where one division by 100 after
 * the other made a chain as long as the number (text_put_digits was the
 * top function of `mark view` after view_event in perf).  A 9-digit
 * nanosecond field takes 12 ns here against 14 before, 17 digits 15
 * against 23 (one core of the benchmark machine; a table-free version
 * doing 8 digits in the lanes of one 64-bit word was slower: its
 * multiplications form one long chain).
 */
static const char digit_pairs[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

static inline void put2(char *p, uint32_t v)   /* v < 100 */
{
	memcpy(p, digit_pairs + 2 * v, 2);
}

static inline void put4(char *p, uint32_t v)   /* v < 10^4 */
{
	put2(p, v / 100);
	put2(p + 2, v % 100);
}

static inline void put8(char *p, uint32_t v)   /* v < 10^8 */
{
	put4(p, v / 10000);
	put4(p + 4, v % 10000);
}

void text_put_digits(char *end, uint64_t v, unsigned n)
{
	while (n >= 8) {
		/* the division in 32 bits when it can be (a timestamp's
		 * nanoseconds, most fields): a cheaper multiplication */
		uint64_t q = v <= UINT32_MAX ? (uint32_t)v / 100000000u : v / 100000000u;
		put8(end - 8, (uint32_t)(v - q * 100000000u));
		v = q;
		end -= 8;
		n -= 8;
	}
	if (n == 0)
		return;
	/* fewer than 8 digits left: only v's last 8 matter */
	uint32_t w = v < 100000000u ? (uint32_t)v : (uint32_t)(v % 100000000u);
	if (n >= 4) {
		put4(end - 4, w % 10000);
		w /= 10000;
		end -= 4;
		n -= 4;
	}
	if (n >= 2) {
		put2(end - 2, w % 100);
		w /= 100;
		end -= 2;
		n -= 2;
	}
	if (n)
		end[-1] = (char)('0' + w % 10);
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
	/* the sign and the digits with one reserve */
	uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	unsigned neg = v < 0, n = text_count_digits(mag);
	if (strbuf_reserve(sb, neg + n) != 0)
		return;
	char *p = sb->data + sb->len;
	*p = '-';
	text_put_digits(p + neg + n, mag, n);
	sb->len += neg + n;
	sb->data[sb->len] = '\0';
}

void strbuf_add_hex(struct strbuf *sb, uint64_t v)
{
	/* the digit count from the highest set bit, the digits written in place */
	unsigned n = (64u - (unsigned)__builtin_clzll(v | 1) + 3) / 4;
	if (strbuf_reserve(sb, n) != 0)
		return;
	char *p = sb->data + sb->len + n;
	sb->len += n;
	*p = '\0';
	do {
		*--p = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
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

enum text_style { STYLE_JSON, STYLE_C, STYLE_TERMINAL, STYLE_MESSAGE };

/*
 * The one escaping routine (see text.h for the four forms).  Newline and
 * tab are two-character escapes in all; JSON and terminal text also
 * escape CR so.  The quoted forms escape `"` and `\`, and so does terminal
 * text the backslash (the escape character: a name holding the four
 * characters \x1b must not print as one holding ESC); a whole message
 * leaves it, so that the values it quotes, escaped already, are not
 * escaped twice.  JSON escapes every other control byte and DEL as
 * \u00XX, a valid UTF-8 character that is not printable (C1 and
 * bidirectional controls) as \uXXXX of its code point, so a JSON reader
 * gets that character back, and a byte that is not UTF-8 (a %s argument is
 * any bytes) as \u00XX, so the file is always valid JSON; the C form (the text view's values) and
 * terminal text keep printable UTF-8 and escape the rest as \xXX.
 */
static void add_escaped(struct strbuf *sb, const char *text, enum text_style style)
{
	bool quoted = style == STYLE_JSON || style == STYLE_C;
	bool backslash_escaped = style != STYLE_MESSAGE;
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
			if (!quoted)
				break;
			strbuf_add(sb, "\\\"", 2);
			continue;
		case '\\':
			if (!backslash_escaped)
				break;
			strbuf_add(sb, "\\\\", 2);
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
		uint32_t code;
		if (*p >= 0x20 && *p < 0x7f)
			strbuf_add(sb, (const char *)p, 1);
		else if (*p >= 0x80 && (n = mark_utf8_printable(p)) > 0) {
			strbuf_add(sb, (const char *)p, n);
			p += n - 1;
		} else if (style == STYLE_JSON && *p >= 0x80 && (n = mark_utf8_len(p, &code)) > 0) {
			/* A C1 or bidirectional control is a character like any
			 * other to a JSON reader: its code point (all are below
			 * U+10000), not its UTF-8 bytes as U+00XX each, which
			 * read back as other characters. */
			strbuf_addf(sb, "\\u%04x", (unsigned)code);
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

char *text_c_string_dup(const char *text)
{
	struct strbuf sb = { 0 };
	strbuf_add_c_string(&sb, text ? text : "");
	if (sb.failed) {
		strbuf_release(&sb);
		return NULL;
	}
	return sb.data;
}

void strbuf_add_terminal(struct strbuf *sb, const char *text)
{
	add_escaped(sb, text, STYLE_TERMINAL);
}

void strbuf_add_message(struct strbuf *sb, const char *text)
{
	add_escaped(sb, text, STYLE_MESSAGE);
}

/* Per thread (the live line and the trace reader have their own), reused
 * in turn: each result stays valid until 8 more calls of the same thread. */
static __thread struct strbuf cli_text_ring[8];
static __thread unsigned cli_text_next;

/* `text` escaped in `style` into the next buffer of the ring. */
static const char *ring_text(const char *text, enum text_style style)
{
	struct strbuf *sb = &cli_text_ring[cli_text_next++ % 8];
	strbuf_reset(sb);
	strbuf_add(sb, "", 0);
	add_escaped(sb, text ? text : "", style);
	return sb->failed || !sb->data ? "?" : sb->data;
}

const char *cli_text(const char *text)
{
	return ring_text(text, STYLE_TERMINAL);
}

const char *cli_message_text(const char *text)
{
	return ring_text(text, STYLE_MESSAGE);
}

void cli_text_thread_done(void)
{
	for (size_t i = 0; i < sizeof(cli_text_ring) / sizeof(cli_text_ring[0]); i++)
		strbuf_release(&cli_text_ring[i]);
}
