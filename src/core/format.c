/*
 * Format strings: each conversion becomes one argument slot whose type and
 * meaningful size follow the conversion and its length modifier, exactly as
 * a variadic call would have promoted the argument.  Parsed once per marker
 * at load time, never on the hot path.
 */
#include "internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum length { LEN_NONE, LEN_HH, LEN_H, LEN_L, LEN_LL, LEN_Z, LEN_J, LEN_T, LEN_BIG_L };

static unsigned int_size(enum length len)
{
	switch (len) {
	case LEN_HH: return 1;
	case LEN_H: return 2;
	case LEN_NONE: return 4;
	default: return 8;   /* l ll z j t on LP64 */
	}
}

/*
 * The word a format puts before a conversion, as in "pid %d comm %s",
 * "fd=%d" or "len: %zu": the identifier that ends the literal text
 * [lit, end) once trailing spaces and one "=" or ":" are skipped.  Only a
 * word that the literal text separates from the previous conversion counts
 * ("%d%s" names nothing; "[%s]" neither).  Returns its length (0: none).
 */
static size_t label_before(const char *lit, const char *end, const char **word)
{
	const char *e = end;
	while (e > lit && e[-1] == ' ')
		e--;
	if (e > lit && (e[-1] == '=' || e[-1] == ':'))
		e--;
	while (e > lit && e[-1] == ' ')
		e--;
	const char *b = e;
	while (b > lit && (isalnum((unsigned char)b[-1]) || b[-1] == '_'))
		b--;
	if (b == e || isdigit((unsigned char)*b) || e == end)
		return 0;   /* no word, a number, or a word glued to the % ("x%d") */
	*word = b;
	return (size_t)(e - b);
}

static int format_parse(const char *fmt, enum mark_arg_type *types, unsigned *sizes, unsigned max,
			char *err, size_t errlen, const char **label, size_t *label_len)
{
	unsigned n = 0;
	const char *p = fmt;
	const char *lit = fmt;   /* literal text since the previous conversion */
	const char *word = NULL;
	size_t word_len = 0;

#define PUSH(t, s)                                                                       \
	do {                                                                             \
		if (n >= max) {                                                          \
			snprintf(err, errlen, "format \"%s\" has more than %u arguments", \
				 fmt, max);                                              \
			return -EINVAL;                                                  \
		}                                                                        \
		types[n] = (t);                                                          \
		sizes[n] = (s);                                                          \
		if (label) {                                                             \
			label[n] = word;                                                 \
			label_len[n] = word_len;                                         \
		}                                                                        \
		word_len = 0;                                                            \
		n++;                                                                     \
	} while (0)

	while (*p) {
		if (*p++ != '%')
			continue;
		if (*p == '%') {
			p++;
			continue;
		}
		const char *start = p - 1;
		word_len = label_before(lit, start, &word);
		while (*p && strchr("-+ #0'", *p))
			p++;
		if (*p == '*') {         /* width taken from an int argument */
			size_t keep = word_len;
			word_len = 0;    /* the word names the value, not its width */
			PUSH(MARK_ARG_SIGNED, 4);
			word_len = keep;
			p++;
		} else {
			while (isdigit((unsigned char)*p))
				p++;
		}
		if (*p == '.') {
			p++;
			if (*p == '*') {
				size_t keep = word_len;
				word_len = 0;
				PUSH(MARK_ARG_SIGNED, 4);
				word_len = keep;
				p++;
			} else {
				while (isdigit((unsigned char)*p))
					p++;
			}
		}
		enum length len = LEN_NONE;
		if (p[0] == 'h' && p[1] == 'h') { len = LEN_HH; p += 2; }
		else if (p[0] == 'l' && p[1] == 'l') { len = LEN_LL; p += 2; }
		else if (*p == 'h') { len = LEN_H; p++; }
		else if (*p == 'l') { len = LEN_L; p++; }
		else if (*p == 'q') { len = LEN_LL; p++; }
		else if (*p == 'z') { len = LEN_Z; p++; }
		else if (*p == 'j') { len = LEN_J; p++; }
		else if (*p == 't') { len = LEN_T; p++; }
		else if (*p == 'L') { len = LEN_BIG_L; p++; }
		char conv = *p ? *p++ : '\0';
		switch (conv) {
		case 'd': case 'i':
			PUSH(MARK_ARG_SIGNED, int_size(len));
			break;
		case 'u':
			PUSH(MARK_ARG_UNSIGNED, int_size(len));
			break;
		case 'o':
			PUSH(MARK_ARG_OCTAL, int_size(len));
			break;
		case 'x': case 'X':
			PUSH(MARK_ARG_HEX, int_size(len));
			break;
		case 'c':
		case 's':
			/*
			 * A %c is recorded as one byte and a %s as the bytes of
			 * a char string.  %lc (a wint_t) and %ls (a wchar_t
			 * string) are valid printf, so the compiler lets them
			 * through, but recorded that way L"hello" became "h" and
			 * U+263A became ':' (its low byte): refused rather than
			 * shown as something the program never passed.
			 */
			if (len != LEN_NONE) {
				snprintf(err, errlen,
					 "format \"%s\": \"%.*s\" is not supported (a marker records "
					 "%s); %s",
					 fmt, (int)(p - start), start,
					 conv == 'c' ? "one byte of a %c" : "the bytes of a char string",
					 conv == 'c' ? "pass a wide character's code point with %u or %x"
						     : "convert a wide string to a multibyte string "
						       "(wcstombs) and pass that with %s");
				return -EINVAL;
			}
			if (conv == 'c')
				PUSH(MARK_ARG_CHAR, 1);
			else
				PUSH(MARK_ARG_STRING, sizeof(char *));
			break;
		case 'p':
			PUSH(MARK_ARG_POINTER, sizeof(void *));
			break;
		case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': case 'a': case 'A':
			if (len == LEN_BIG_L) {
				snprintf(err, errlen, "format \"%s\": long double (%.*s) is not supported",
					 fmt, (int)(p - start), start);
				return -EINVAL;
			}
			PUSH(MARK_ARG_DOUBLE, 8);
			break;
		default:
			snprintf(err, errlen, "format \"%s\": unsupported conversion \"%.*s\"", fmt,
				 (int)(p - start), start);
			return -EINVAL;
		}
		lit = p;
	}
#undef PUSH
	return (int)n;
}

int mark_format_parse(const char *fmt, enum mark_arg_type *types, unsigned *sizes,
		      unsigned max, char *err, size_t errlen)
{
	return format_parse(fmt, types, sizes, max, err, errlen, NULL, NULL);
}

/*
 * The part of an argument expression that names it: casts, unary & * +
 * and enclosing parentheses are dropped, and so is every index
 * ("(void *)r" and "&r" give r, "*ip" gives ip, "a[i]" gives a,
 * "req[0].path" gives req.path, so req_path).  A call names nothing
 * ("strlen(s)" is not "strlen"; the caller falls back to argN), and
 * neither does a unary - ! or ~, which changes the value: "-fd" named fd
 * showed fd=-7 for an fd of 7.  s[0..len) has no spaces.  Returns the new
 * length (0: nothing names it).
 */
static size_t strip_expression(char *s, size_t len)
{
	for (;;) {
		size_t before = len;
		/* a leading cast "(type)" followed by more: drop it */
		if (len > 2 && s[0] == '(') {
			int depth = 0;
			size_t i = 0;
			for (; i < len; i++) {
				if (s[i] == '(')
					depth++;
				else if (s[i] == ')' && --depth == 0)
					break;
			}
			if (i + 1 < len) {
				/* "(a)->b": a parenthesised expression, not a cast */
				bool cast = s[i + 1] != '-' && s[i + 1] != '.' && s[i + 1] != '[';
				if (cast) {
					memmove(s, s + i + 1, len - i - 1);
					len -= i + 1;
				}
			} else if (i + 1 == len) {   /* "(x)": unwrap */
				memmove(s, s + 1, len - 2);
				len -= 2;
			}
		}
		if (len && strchr("!~-", s[0]))
			return 0;
		while (len && strchr("&*+", s[0])) {
			memmove(s, s + 1, len - 1);
			len--;
		}
		if (len == before)
			break;
	}
	/* drop every [index]: "a[i]" gives a, "req[0].path" req.path */
	size_t o = 0;
	int depth = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '(' && depth == 0)
			return 0;
		if (s[i] == '[')
			depth++;
		else if (s[i] == ']' && depth > 0)
			depth--;
		else if (depth == 0)
			s[o++] = s[i];
	}
	return o;
}

/* An identifier, or member accesses of identifiers: a, a.b, a->b->c. */
static bool member_access_name(const char *s, size_t len, char *out, size_t outlen)
{
	size_t o = 0;
	size_t i = 0;
	bool want_ident = true;
	while (i < len) {
		if (want_ident) {
			if (!(isalpha((unsigned char)s[i]) || s[i] == '_'))
				return false;
			while (i < len && (isalnum((unsigned char)s[i]) || s[i] == '_')) {
				if (o + 1 >= outlen)
					return false;
				out[o++] = s[i++];
			}
			want_ident = false;
		} else if (s[i] == '.') {
			i++;
			want_ident = true;
			if (o + 1 >= outlen)
				return false;
			out[o++] = '_';
		} else if (s[i] == '-' && i + 1 < len && s[i + 1] == '>') {
			i += 2;
			want_ident = true;
			if (o + 1 >= outlen)
				return false;
			out[o++] = '_';
		} else {
			return false;
		}
	}
	if (want_ident)
		return false;
	out[o] = '\0';
	return true;
}

void mark_format_arg_names(const char *fmt, const char *arg_names, unsigned nargs, char **names)
{
	enum mark_arg_type types[MARK_MAX_MARKER_ARGS];
	unsigned sizes[MARK_MAX_MARKER_ARGS];
	const char *label[MARK_MAX_MARKER_ARGS];
	size_t label_len[MARK_MAX_MARKER_ARGS];
	char err[16];
	int nconv = fmt ? format_parse(fmt, types, sizes, MARK_MAX_MARKER_ARGS, err, sizeof(err), label,
				       label_len)
			: -1;
	const char *p = arg_names ? arg_names : "";
	for (unsigned i = 0; i < nargs; i++) {
		/* find the end of this top-level argument */
		const char *start = p;
		int depth = 0;
		char quote = 0;
		while (*p) {
			if (quote) {
				if (*p == '\\' && p[1])
					p++;
				else if (*p == quote)
					quote = 0;
			} else if (*p == '"' || *p == '\'') {
				quote = *p;
			} else if (*p == '(' || *p == '[' || *p == '{') {
				depth++;
			} else if (*p == ')' || *p == ']' || *p == '}') {
				depth--;
			} else if (*p == ',' && depth == 0) {
				break;
			}
			p++;
		}
		const char *end = p;
		if (*p == ',')
			p++;
		while (start < end && isspace((unsigned char)*start))
			start++;
		while (end > start && isspace((unsigned char)end[-1]))
			end--;
		/* strip the spaces inside "a -> b" or "a . b" */
		char compact[128];
		size_t c = 0;
		for (const char *q = start; q < end && c + 1 < sizeof(compact); q++)
			if (!isspace((unsigned char)*q))
				compact[c++] = *q;
		compact[c] = '\0';

		char buf[128];
		if (nconv == (int)nargs && label_len[i] && label_len[i] < 64) {
			snprintf(buf, sizeof(buf), "%.*s", (int)label_len[i], label[i]);
		} else {
			c = strip_expression(compact, c);
			/* a constant names nothing: (const char *)NULL is argN */
			static const char *const constants[] = { "NULL", "nullptr", "true", "false", NULL };
			bool constant = false;
			for (const char *const *k = constants; *k && !constant; k++)
				constant = strlen(*k) == c && memcmp(compact, *k, c) == 0;
			if (constant || !member_access_name(compact, c, buf, sizeof(buf)))
				snprintf(buf, sizeof(buf), "arg%u", i);
		}
		/* keep names unique: a second "x" becomes "x_1" */
		for (unsigned j = 0; j < i; j++) {
			if (names[j] && strcmp(names[j], buf) == 0) {
				size_t l = strlen(buf);
				snprintf(buf + l, sizeof(buf) - l, "_%u", i);
				break;
			}
		}
		names[i] = strdup(buf);
	}
}
