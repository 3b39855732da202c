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

int mark_format_parse(const char *fmt, enum mark_arg_type *types, unsigned *sizes,
		      unsigned max, char *err, size_t errlen)
{
	unsigned n = 0;
	const char *p = fmt;

#define PUSH(t, s)                                                                       \
	do {                                                                             \
		if (n >= max) {                                                          \
			snprintf(err, errlen, "format \"%s\" has more than %u arguments", \
				 fmt, max);                                              \
			return -EINVAL;                                                  \
		}                                                                        \
		types[n] = (t);                                                          \
		sizes[n] = (s);                                                          \
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
		while (*p && strchr("-+ #0'", *p))
			p++;
		if (*p == '*') {         /* width taken from an int argument */
			PUSH(MARK_ARG_SIGNED, 4);
			p++;
		} else {
			while (isdigit((unsigned char)*p))
				p++;
		}
		if (*p == '.') {
			p++;
			if (*p == '*') {
				PUSH(MARK_ARG_SIGNED, 4);
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
		case 'u': case 'o':
			PUSH(MARK_ARG_UNSIGNED, int_size(len));
			break;
		case 'x': case 'X':
			PUSH(MARK_ARG_HEX, int_size(len));
			break;
		case 'c':
			PUSH(MARK_ARG_CHAR, 1);
			break;
		case 'p':
			PUSH(MARK_ARG_POINTER, sizeof(void *));
			break;
		case 's':
			PUSH(MARK_ARG_STRING, sizeof(char *));
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
	}
#undef PUSH
	return (int)n;
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

void mark_format_arg_names(const char *arg_names, unsigned nargs, char **names)
{
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
		if (!member_access_name(compact, c, buf, sizeof(buf)))
			snprintf(buf, sizeof(buf), "arg%u", i);
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
