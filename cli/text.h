/*
 * Text the `mark` command prints: a growable string buffer, and the one
 * place where text from a traced process or a trace file (marker names,
 * formats, source paths, process names, agent messages, field names and
 * values) is escaped before it reaches a terminal, a text view or JSON.
 *
 * Everything such text contains is chosen by whoever controls the target or
 * wrote the trace; a terminal acts on control characters (ESC sequences can
 * retitle the window, rewrite what was printed, on some terminals answer
 * back into the input), so none may be printed raw.
 */
#ifndef MARK_CLI_TEXT_H
#define MARK_CLI_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A NUL-terminated string that grows; on allocation failure it stays as it was
 * and `failed` is set (callers check it once, at the end). */
struct strbuf {
	char *data;
	size_t len, cap;
	int failed;
};

void strbuf_addf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void strbuf_add_grow(struct strbuf *sb, const char *text, size_t len);
/* Room for `extra` more bytes and a NUL, for a caller that writes them at
 * data + len itself: 0, or -1 (out of memory; `failed` is set).  The check
 * is inline (every number `mark view` prints makes one), the growing is
 * strbuf_grow(). */
int strbuf_grow(struct strbuf *sb, size_t extra);
static inline int strbuf_reserve(struct strbuf *sb, size_t extra)
{
	if (!sb->failed && sb->cap - sb->len > extra)
		return 0;
	return strbuf_grow(sb, extra);
}
/* Inline when it fits: `mark view` appends a dozen short pieces per event. */
static inline void strbuf_add(struct strbuf *sb, const char *text, size_t len)
{
	if (!sb->failed && sb->cap - sb->len > len) {   /* room for the text and the NUL */
		memcpy(sb->data + sb->len, text, len);
		sb->len += len;
		sb->data[sb->len] = '\0';
	} else {
		strbuf_add_grow(sb, text, len);
	}
}
/*
 * The same for text the caller keeps readable for STRBUF_PAD bytes from
 * `text` whatever `len` is (a padded allocation): a short piece goes in
 * with one fixed-size copy, which the compiler inlines, instead of a call
 * to memcpy with a variable length.  `mark view` appends five such pieces
 * per event (the time, the cpu/tid text, the name, the field names).
 */
#define STRBUF_PAD 32
static inline void strbuf_add_padded(struct strbuf *sb, const char *text, size_t len)
{
	if (len <= STRBUF_PAD && !sb->failed && sb->cap - sb->len > STRBUF_PAD) {
		memcpy(sb->data + sb->len, text, STRBUF_PAD);
		sb->len += len;
		sb->data[sb->len] = '\0';
	} else {
		strbuf_add(sb, text, len);
	}
}
/* A string literal, its length counted by the compiler. */
#define strbuf_add_lit(sb, lit) strbuf_add((sb), "" lit, sizeof(lit) - 1)
/* Decimal (at least min_digits, zero-padded), signed decimal, hex without "0x". */
void strbuf_add_uint(struct strbuf *sb, uint64_t v, unsigned min_digits);
/* The n last decimal digits of v, zero-padded, written to end - n .. end - 1
 * (no NUL). */
void text_put_digits(char *end, uint64_t v, unsigned n);
/* The number of decimal digits of v (1 for 0).  Inline: a handful of
 * instructions, and it was a call for every integer `mark view` prints. */
static inline unsigned text_count_digits(uint64_t v)
{
	static const uint64_t p10[20] = {
		1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull, 100000000ull,
		1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull, 10000000000000ull,
		100000000000000ull, 1000000000000000ull, 10000000000000000ull, 100000000000000000ull,
		1000000000000000000ull, 10000000000000000000ull,
	};
	/* bits * log10(2) (1233/4096), plus one, is the count or one more.
	 * v | 1 has the same bits and digits as v (the powers of ten it is
	 * compared with are even), and those of 1 for 0. */
	uint64_t u = v | 1;
	unsigned bits = 64u - (unsigned)__builtin_clzll(u);
	unsigned n = (bits * 1233u >> 12) + 1;
	return n - (u < p10[n - 1]);
}
void strbuf_add_int(struct strbuf *sb, int64_t v);
void strbuf_add_hex(struct strbuf *sb, uint64_t v);
void strbuf_reset(struct strbuf *sb);        /* empty it, keep the memory */
void strbuf_release(struct strbuf *sb);      /* free the memory */

/*
 * Grow an array that is full: *array_ptr (the address of a `T *`) holds
 * *cap elements of elem_size bytes; the slots double (`initial` the first
 * time).  Returns 0, or -1 when out of memory, the array left as it was.
 * Callers test `n == cap` themselves, so a per-event path pays no call.
 */
int cli_array_grow(void *array_ptr, size_t *cap, size_t elem_size, size_t initial);

/* Valid UTF-8 sequences: mark_utf8_len() in src/util/printable.h. */

/*
 * Does `name` differ from the name kept in stored[cap] (NULL: keep what it
 * has)?  strncmp(stored, name, cap) != 0, inline: the exports compare each
 * event's thread name with the one they wrote last, names of a few bytes
 * (at most 15: trace_event.thread_name), where the call into libc cost
 * more than the comparison.
 */
static inline bool text_name_changed(const char *stored, size_t cap, const char *name)
{
	if (!name)
		return false;
	for (size_t i = 0; i < cap; i++) {
		if (stored[i] != name[i])
			return true;
		if (!name[i])
			break;
	}
	return false;
}

/* FNV-1a of n bytes, continuing from h (start with TEXT_HASH_INIT). */
#define TEXT_HASH_INIT 1469598103934665603ull
static inline uint64_t text_hash(const void *s, size_t n, uint64_t h)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ ((const unsigned char *)s)[i]) * 1099511628211ull;
	return h;
}

/*
 * A hash of n bytes for in-memory tables, 8 bytes per step (text_hash's
 * FNV-1a takes one, a multiply on the dependency chain per byte: 20 steps
 * for a 20-byte `stats --by` key).  Not a stable format: never written.
 */
static inline uint64_t text_hash_words(const void *s, size_t n)
{
	const unsigned char *p = s;
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
	for (; n >= 8; p += 8, n -= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	if (n) {
		uint64_t w = 0;
		for (size_t i = 0; i < n; i++)   /* the tail, little-endian as the words */
			w |= (uint64_t)p[i] << (8 * i);
		h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
	}
	return h ^ (h >> 29);
}

/* A JSON string literal, quotes included, with every control/non-ASCII-safe escape
 * (add_escaped() in text.c says which). */
void strbuf_add_json_string(struct strbuf *sb, const char *text);
/* A C-style string literal, quotes included: every byte outside printable
 * ASCII as \xXX (the text view's string values). */
void strbuf_add_c_string(struct strbuf *sb, const char *text);
/* The same in a new allocation (a marker's format in `mark list`), or NULL
 * when out of memory. */
char *text_c_string_dup(const char *text);
/*
 * Text for a terminal, without quotes: a value (a name, a label, a path)
 * the reader must be able to tell from any other.  A backslash as \\,
 * newline, CR and tab as \n \r \t, every other C0 control, DEL, C1
 * control (U+0080-U+009F), bidirectional override and byte that is not
 * valid UTF-8 as \xXX (a C1 or bidi control as its UTF-8 bytes); valid
 * printable UTF-8 stays as it is.  So a name holding the four characters
 * \x1b prints \\x1b and one holding ESC prints \x1b.
 */
void strbuf_add_terminal(struct strbuf *sb, const char *text);
/*
 * A whole message for a terminal (cli_error()), whose values were escaped
 * by cli_text() already, or that libmark escaped (mark_last_error(), an
 * agent's reply): escaped as strbuf_add_terminal() does but for the
 * backslash, left as it is, so this form is idempotent and the values'
 * escapes are not escaped twice.  Text a message quotes raw is still
 * never printed with a control byte, but only cli_text() makes a value
 * unambiguous.
 */
void strbuf_add_message(struct strbuf *sb, const char *text);

/*
 * `text` escaped as by strbuf_add_terminal(), for one printf-style call:
 * the result lives in one of 8 per-thread buffers used in turn, so up to 8
 * may appear in one call.  Never NULL ("" for NULL, "?" if memory ran out).
 */
const char *cli_text(const char *text);
/* The same as by strbuf_add_message(), for a message escaped already
 * (mark_last_error()): from the same 8 buffers. */
const char *cli_message_text(const char *text);
/* A thread that called cli_text() and now ends frees what it kept. */
void cli_text_thread_done(void);

#endif
