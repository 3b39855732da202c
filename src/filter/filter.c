/*
 * The filter language: lexer, recursive-descent parser emitting a postfix
 * program, and its evaluator.  See filter.h.
 *
 * Grammar (lowest precedence first):
 *   or      := and { "||" and }
 *   and     := cmp { "&&" cmp }
 *   cmp     := bits [ ("==" | "!=" | "<" | "<=" | ">" | ">=") bits ]
 *   bits    := unary { "&" unary }
 *   unary   := "!" unary | primary
 *   primary := NUMBER | "-" NUMBER | STRING | FIELD | "(" or ")"
 * `&` binds tighter than the comparisons (unlike C): "flags & 4 == 4"
 * means (flags & 4) == 4, which is what a filter's author means.
 *
 * Evaluation has no short-circuit: the program has no side effects, and a
 * straight postfix loop is cheaper than jumps for the few operations a
 * filter has.  Parsing recursion is bounded (MARK_FILTER_MAX_DEPTH levels
 * of parentheses and "!"), so hostile text cannot exhaust the stack.
 */
#include "filter.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum op_kind {
	OP_CONST, OP_FIELD, OP_NOT, OP_AND, OP_OR, OP_BITAND,
	OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE,
};

/* For OP_EQ/OP_NE: which operand is a string literal, i.e. a `*` glob. */
#define PATTERN_LEFT 1u
#define PATTERN_RIGHT 2u

struct op {
	uint8_t kind;
	uint8_t arg;                 /* OP_FIELD: index; OP_EQ/NE: PATTERN_* bits */
	struct mark_filter_value v;  /* OP_CONST                                   */
};

struct mark_filter {
	char *text;
	unsigned nops, nfields;
	struct op ops[MARK_FILTER_MAX_OPS];
	char *fields[MARK_FILTER_MAX_FIELDS];
	char *strings[MARK_FILTER_MAX_OPS];   /* literal storage, freed with f */
	unsigned nstrings;
};

/* ---- lexer ---- */

enum tok {
	T_END, T_LPAREN, T_RPAREN, T_NOT, T_AND, T_OR, T_BITAND,
	T_EQ, T_NE, T_LT, T_LE, T_GT, T_GE, T_NUMBER, T_STRING, T_FIELD, T_ERROR,
};

struct parser {
	const char *text;
	const char *p;            /* next unread character                    */
	const char *tok_start;    /* the current token                        */
	enum tok tok;
	size_t tok_len;
	unsigned depth;
	struct mark_filter *f;
	char *err;
	size_t errlen;
	bool failed;
};

static void fail_at(struct parser *ps, const char *where, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void fail_at(struct parser *ps, const char *where, const char *fmt, ...)
{
	if (ps->failed)
		return;
	ps->failed = true;
	int n = snprintf(ps->err, ps->errlen, "column %zu: ", (size_t)(where - ps->text) + 1);
	if (n < 0 || (size_t)n >= ps->errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ps->err + n, ps->errlen - (size_t)n, fmt, ap);
	va_end(ap);
}

static void next(struct parser *ps)
{
	const char *p = ps->p;
	while (*p == ' ' || *p == '\t' || *p == '\n')
		p++;
	ps->tok_start = p;
	enum tok t = T_ERROR;
	size_t len = 1;
	switch (*p) {
	case '\0': t = T_END; len = 0; break;
	case '(': t = T_LPAREN; break;
	case ')': t = T_RPAREN; break;
	case '!':
		if (p[1] == '=') { t = T_NE; len = 2; } else t = T_NOT;
		break;
	case '&':
		if (p[1] == '&') { t = T_AND; len = 2; } else t = T_BITAND;
		break;
	case '|':
		if (p[1] == '|') { t = T_OR; len = 2; }
		else fail_at(ps, p, "'|' is not an operator (use || for \"or\")");
		break;
	case '=':
		if (p[1] == '=') { t = T_EQ; len = 2; }
		else fail_at(ps, p, "'=' is not an operator (use == to compare)");
		break;
	case '<':
		if (p[1] == '=') { t = T_LE; len = 2; } else t = T_LT;
		break;
	case '>':
		if (p[1] == '=') { t = T_GE; len = 2; } else t = T_GT;
		break;
	case '"': {
		const char *q = p + 1;
		while (*q && *q != '"') {
			if (*q == '\\' && q[1])
				q++;
			q++;
		}
		if (!*q) {
			fail_at(ps, p, "string has no closing '\"'");
			break;
		}
		t = T_STRING;
		len = (size_t)(q + 1 - p);
		break;
	}
	default:
		if (isdigit((unsigned char)*p) || (*p == '.' && isdigit((unsigned char)p[1])) ||
		    (*p == '-' && (isdigit((unsigned char)p[1]) || p[1] == '.'))) {
			/* A '-' right before a number belongs to it: there is no
			 * arithmetic, so no minus operator to confuse it with. */
			const char *q = p + (*p == '-');
			const char *digits = q;
			while (isalnum((unsigned char)*q) || *q == '.' ||
			       ((*q == '+' || *q == '-') && (q[-1] == 'e' || q[-1] == 'E') &&
				!(digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X'))))
				q++;
			t = T_NUMBER;
			len = (size_t)(q - p);
		} else if (isalpha((unsigned char)*p) || *p == '_') {
			const char *q = p;
			while (isalnum((unsigned char)*q) || *q == '_')
				q++;
			t = T_FIELD;
			len = (size_t)(q - p);
		} else if (isprint((unsigned char)*p)) {
			fail_at(ps, p, "unexpected '%c' (expected a field name, number, string, "
				"operator or parenthesis)", *p);
		} else {
			fail_at(ps, p, "unexpected byte 0x%02x (expected a field name, number, string, "
				"operator or parenthesis)", (unsigned char)*p);
		}
	}
	ps->tok = t;
	ps->tok_len = len;
	ps->p = p + len;
}

/* ---- emitting ---- */

static struct op *emit(struct parser *ps, enum op_kind kind, uint8_t arg)
{
	if (ps->failed)
		return NULL;
	if (ps->f->nops >= MARK_FILTER_MAX_OPS) {
		fail_at(ps, ps->tok_start, "the expression is too long (at most %d operands and "
			"operators)", MARK_FILTER_MAX_OPS);
		return NULL;
	}
	struct op *o = &ps->f->ops[ps->f->nops++];
	memset(o, 0, sizeof(*o));
	o->kind = (uint8_t)kind;
	o->arg = arg;
	return o;
}

/*
 * What a sub-expression is, for the checks that refuse what parses but
 * means nothing (bits: 0 is an expression of constants that is neither
 * literal below).
 */
enum shape {
	SH_FIELD = 1,            /* it names a field: its value depends on the event */
	SH_STRING_LITERAL = 2,   /* a string literal alone (a glob when compared)     */
	SH_FLOAT_LITERAL = 4,    /* a floating-point literal alone                    */
};

static enum shape parse_or(struct parser *ps);

/* Returns SH_FLOAT_LITERAL for a floating-point number, else 0. */
static enum shape parse_number(struct parser *ps)
{
	const char *where = ps->tok_start;
	bool negative = *where == '-';
	char buf[64];
	size_t n = ps->tok_len - negative;
	if (n >= sizeof(buf)) {
		fail_at(ps, where, "number too long");
		return 0;
	}
	memcpy(buf, where + negative, n);
	buf[n] = '\0';
	struct mark_filter_value v = { .type = MARK_FILTER_INT };
	char *end;
	errno = 0;
	bool hex = buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X');
	if (!hex && strpbrk(buf, ".eE")) {
		v.type = MARK_FILTER_DOUBLE;
		v.d = strtod(buf, &end);
		if (*end || errno == ERANGE || !isfinite(v.d)) {
			fail_at(ps, ps->tok_start, "\"%s\" is not a number (expected e.g. 42, 0x2a, "
				"-1.5 or 2e-3)", buf);
			return 0;
		}
		if (negative)
			v.d = -v.d;
	} else {
		/* base 10 or 0x: a leading 0 is not octal (nobody means that in a filter) */
		unsigned long long u = strtoull(buf, &end, hex ? 16 : 10);
		if (*end || errno == ERANGE || (hex && buf[2] == '\0')) {
			fail_at(ps, ps->tok_start, "\"%s\" is not a number (expected e.g. 42, 0x2a, "
				"-1.5 or 2e-3; integers up to 2^64-1)", buf);
			return 0;
		}
		if (negative) {
			if (u > (unsigned long long)INT64_MAX + 1) {
				fail_at(ps, where, "-%s is below the smallest integer, -2^63", buf);
				return 0;
			}
			v.i = (int64_t)(0 - (uint64_t)u);
		} else if (u > INT64_MAX) {
			v.type = MARK_FILTER_UINT;
			v.u = u;
		} else {
			v.i = (int64_t)u;
		}
	}
	struct op *o = emit(ps, OP_CONST, 0);
	if (o)
		o->v = v;
	return v.type == MARK_FILTER_DOUBLE ? SH_FLOAT_LITERAL : 0;
}

static void parse_string(struct parser *ps)
{
	/* The literal keeps its backslashes: it is a glob pattern (\* is a
	 * literal star) when compared, and mark_filter_glob() reads them.  An
	 * exact comparison of two fields never sees a literal. */
	size_t n = ps->tok_len - 2;
	char *s = malloc(n + 1);
	if (!s) {
		fail_at(ps, ps->tok_start, "out of memory");
		return;
	}
	memcpy(s, ps->tok_start + 1, n);
	s[n] = '\0';
	ps->f->strings[ps->f->nstrings++] = s;   /* nstrings <= nops: one per op */
	struct op *o = emit(ps, OP_CONST, 0);
	if (o) {
		o->v.type = MARK_FILTER_STRING;
		o->v.str.s = s;
		o->v.str.len = n;
	}
}

static void parse_field(struct parser *ps)
{
	struct mark_filter *f = ps->f;
	unsigned k = 0;
	for (; k < f->nfields; k++)
		if (strlen(f->fields[k]) == ps->tok_len && memcmp(f->fields[k], ps->tok_start, ps->tok_len) == 0)
			break;
	if (k == f->nfields) {
		if (k >= MARK_FILTER_MAX_FIELDS) {
			fail_at(ps, ps->tok_start, "too many fields (a filter may name at most %d)",
				MARK_FILTER_MAX_FIELDS);
			return;
		}
		if (ps->tok_len > 127) {
			fail_at(ps, ps->tok_start, "field name longer than 127 characters");
			return;
		}
		f->fields[k] = strndup(ps->tok_start, ps->tok_len);
		if (!f->fields[k]) {
			fail_at(ps, ps->tok_start, "out of memory");
			return;
		}
		f->nfields++;
	}
	emit(ps, OP_FIELD, (uint8_t)k);
}

static const char expected_operand[] = "expected a field name, number, string, '!' or '('";

static enum shape parse_unary(struct parser *ps)
{
	if (ps->failed)
		return SH_FIELD;
	if (ps->depth >= MARK_FILTER_MAX_DEPTH) {
		fail_at(ps, ps->tok_start, "nested too deeply (at most %d levels of '(' and '!')",
			MARK_FILTER_MAX_DEPTH);
		return SH_FIELD;
	}
	const char *at = ps->tok_start;
	switch (ps->tok) {
	case T_NOT: {
		next(ps);
		ps->depth++;
		enum shape s = parse_unary(ps);
		ps->depth--;
		if (s == SH_STRING_LITERAL)
			fail_at(ps, at, "'!' cannot apply to a string");
		emit(ps, OP_NOT, 0);
		return s & SH_FIELD;
	}
	case T_LPAREN: {
		next(ps);
		ps->depth++;
		enum shape s = parse_or(ps);
		ps->depth--;
		if (ps->tok != T_RPAREN)
			fail_at(ps, ps->tok_start, "expected ')' to close the '(' at column %zu",
				(size_t)(at - ps->text) + 1);
		next(ps);
		return s;
	}
	case T_NUMBER: {
		enum shape s = parse_number(ps);
		next(ps);
		return s;
	}
	case T_STRING:
		parse_string(ps);
		next(ps);
		return SH_STRING_LITERAL;
	case T_FIELD:
		parse_field(ps);
		next(ps);
		return SH_FIELD;
	case T_ERROR:
		return SH_FIELD;   /* the lexer said why */
	default:
		fail_at(ps, at, ps->tok == T_END ? "the expression ends early: %s" : "%s", expected_operand);
		return SH_FIELD;
	}
}

static enum shape parse_bits(struct parser *ps)
{
	enum shape s = parse_unary(ps);
	while (!ps->failed && ps->tok == T_BITAND) {
		const char *at = ps->tok_start;
		next(ps);
		enum shape r = parse_unary(ps);
		if (s == SH_STRING_LITERAL || r == SH_STRING_LITERAL)
			fail_at(ps, at, "'&' needs integers, not a string");
		/* The bits of a double are not the number's: `x & 1.5` was
		 * always 0 (and false). */
		if (s == SH_FLOAT_LITERAL || r == SH_FLOAT_LITERAL)
			fail_at(ps, at, "'&' needs integers, not a floating-point number: write an integer "
				"mask (flags & 4, flags & 0x10)");
		emit(ps, OP_BITAND, 0);
		s = (s | r) & SH_FIELD;
	}
	return s;
}

static enum shape parse_cmp(struct parser *ps)
{
	const char *start = ps->tok_start;
	enum shape l = parse_bits(ps);
	enum op_kind k;
	switch (ps->tok) {
	case T_EQ: k = OP_EQ; break;
	case T_NE: k = OP_NE; break;
	case T_LT: k = OP_LT; break;
	case T_LE: k = OP_LE; break;
	case T_GT: k = OP_GT; break;
	case T_GE: k = OP_GE; break;
	default: return l;
	}
	const char *at = ps->tok_start;
	next(ps);
	enum shape r = parse_bits(ps);
	if ((l == SH_STRING_LITERAL || r == SH_STRING_LITERAL) && k != OP_EQ && k != OP_NE)
		fail_at(ps, at, "strings compare only with == or != (a \"*\" in the string is a glob)");
	/* Constants on both sides: the same answer for every event. */
	if (!((l | r) & SH_FIELD))
		fail_at(ps, start, "this comparison compares no field, so it is always true or always false: "
			"compare a field (status == 500, path == \"/api/*\")");
	uint8_t arg = (uint8_t)((l == SH_STRING_LITERAL ? PATTERN_LEFT : 0) |
				(r == SH_STRING_LITERAL ? PATTERN_RIGHT : 0));
	emit(ps, k, arg);
	if (!ps->failed && (ps->tok == T_EQ || ps->tok == T_NE || ps->tok == T_LT || ps->tok == T_LE ||
			    ps->tok == T_GT || ps->tok == T_GE))
		fail_at(ps, ps->tok_start, "comparisons do not chain (use && between them, or parentheses)");
	return SH_FIELD;
}

static const char string_not_condition[] = "a string alone is not a condition (compare a field with it: "
					   "path == \"/api/*\")";

/*
 * A left-associative chain "sub { tok sub }" emitting `op` after each pair
 * (&& and ||): each operand is a truth value, which a string literal is
 * not (it was always true, or false when empty).
 */
static enum shape parse_chain(struct parser *ps, enum shape (*sub)(struct parser *), enum tok tok,
			      enum op_kind op)
{
	const char *at = ps->tok_start;
	enum shape s = sub(ps);
	while (!ps->failed && ps->tok == tok) {
		if (s == SH_STRING_LITERAL)
			fail_at(ps, at, "%s", string_not_condition);
		next(ps);
		at = ps->tok_start;
		enum shape r = sub(ps);
		if (r == SH_STRING_LITERAL)
			fail_at(ps, at, "%s", string_not_condition);
		emit(ps, op, 0);
		s = (s | r) & SH_FIELD;
	}
	return s;
}

static enum shape parse_and(struct parser *ps)
{
	return parse_chain(ps, parse_cmp, T_AND, OP_AND);
}

static enum shape parse_or(struct parser *ps)
{
	return parse_chain(ps, parse_and, T_OR, OP_OR);
}


void mark_filter_free(struct mark_filter *f)
{
	if (!f)
		return;
	for (unsigned k = 0; k < f->nfields; k++)
		free(f->fields[k]);
	for (unsigned k = 0; k < f->nstrings; k++)
		free(f->strings[k]);
	free(f->text);
	free(f);
}

struct mark_filter *mark_filter_parse(const char *text, char *err, size_t errlen)
{
	if (errlen)
		err[0] = '\0';
	size_t len = strnlen(text, MARK_FILTER_MAX_TEXT + 1);
	if (len > MARK_FILTER_MAX_TEXT) {
		snprintf(err, errlen, "column %d: the expression is longer than %d characters",
			 MARK_FILTER_MAX_TEXT + 1, MARK_FILTER_MAX_TEXT);
		return NULL;
	}
	struct mark_filter *f = calloc(1, sizeof(*f));
	if (!f || !(f->text = strdup(text))) {
		free(f);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	struct parser ps = { .text = text, .p = text, .f = f, .err = err, .errlen = errlen };
	next(&ps);
	if (ps.tok == T_END && !ps.failed)
		fail_at(&ps, ps.tok_start, "the expression is empty: %s", expected_operand);
	enum shape s = parse_or(&ps);
	if (!ps.failed && ps.tok != T_END)
		fail_at(&ps, ps.tok_start, "unexpected text after the expression (expected &&, ||, "
			"a comparison or the end)");
	if (!ps.failed && s == SH_STRING_LITERAL)
		fail_at(&ps, text, "%s", string_not_condition);
	/* The stack depth a postfix program needs: operands push, binaries pop one. */
	int depth = 0, most = 0;
	for (unsigned i = 0; !ps.failed && i < f->nops; i++) {
		enum op_kind k = f->ops[i].kind;
		if (k == OP_CONST || k == OP_FIELD)
			depth++;
		else if (k != OP_NOT)
			depth--;
		if (depth > most)
			most = depth;
	}
	if (!ps.failed && most > MARK_FILTER_MAX_DEPTH)
		fail_at(&ps, text, "the expression needs too deep an evaluation stack (%d > %d): "
			"use fewer nested parentheses", most, MARK_FILTER_MAX_DEPTH);
	if (ps.failed) {
		mark_filter_free(f);
		return NULL;
	}
	return f;
}

const char *mark_filter_text(const struct mark_filter *f) { return f->text; }
unsigned mark_filter_nfields(const struct mark_filter *f) { return f->nfields; }
const char *mark_filter_field(const struct mark_filter *f, unsigned k)
{
	return k < f->nfields ? f->fields[k] : NULL;
}

bool mark_filter_simple(const struct mark_filter *f, int *op, uint64_t *value)
{
	if (f->nops != 3 || f->nfields != 1)
		return false;
	const struct op *a = &f->ops[0], *b = &f->ops[1], *c = &f->ops[2];
	bool turned = a->kind == OP_CONST;
	const struct op *k = turned ? a : b;
	if ((turned ? b : a)->kind != OP_FIELD || k->kind != OP_CONST)
		return false;
	if (k->v.type == MARK_FILTER_INT ? k->v.i < 0 : k->v.type != MARK_FILTER_UINT)
		return false;
	int o;
	switch ((enum op_kind)c->kind) {
	case OP_LT: o = -2; break;
	case OP_LE: o = -1; break;
	case OP_EQ: o = 0; break;
	case OP_GE: o = 1; break;
	case OP_GT: o = 2; break;
	case OP_NE: o = 3; break;
	default: return false;
	}
	/* "5 < x" is "x > 5" */
	*op = turned && o != 0 && o != 3 ? -o : o;
	*value = k->v.u;   /* >= 0: the same bits as i */
	return true;
}

/* ---- evaluation ---- */

bool mark_filter_glob(const char *p, const char *s, size_t len)
{
	/* Iterative with one backtrack point (the last '*'): linear in
	 * practice, O(len * pattern) at worst, no recursion. */
	const char *star = NULL;
	size_t star_at = 0, i = 0;
	while (i < len) {
		if (*p == '*') {
			star = ++p;
			star_at = i;
			continue;
		}
		const char *c = p;
		if (*c == '\\' && c[1])
			c++;
		if (*c && *c == s[i]) {
			p = c + 1;
			i++;
			continue;
		}
		if (!star)
			return false;
		p = star;
		i = ++star_at;
	}
	while (*p == '*')
		p++;
	return *p == '\0';
}

static bool truthy(const struct mark_filter_value *v)
{
	switch (v->type) {
	case MARK_FILTER_INT: return v->i != 0;
	case MARK_FILTER_UINT: return v->u != 0;
	case MARK_FILTER_DOUBLE: return v->d != 0;
	default: return v->str.len != 0;
	}
}

static double as_double(const struct mark_filter_value *v)
{
	return v->type == MARK_FILTER_INT ? (double)v->i : v->type == MARK_FILTER_UINT ? (double)v->u : v->d;
}

/* -1, 0, 1; 2 when the two cannot be compared (string with number, NaN). */
static int compare(const struct mark_filter_value *a, const struct mark_filter_value *b, unsigned pattern)
{
	bool as = a->type == MARK_FILTER_STRING, bs = b->type == MARK_FILTER_STRING;
	if (as || bs) {
		if (!as || !bs)
			return 2;
		if (pattern & PATTERN_RIGHT)
			return mark_filter_glob(b->str.s, a->str.s, a->str.len) ? 0 : 1;
		if (pattern & PATTERN_LEFT)
			return mark_filter_glob(a->str.s, b->str.s, b->str.len) ? 0 : 1;
		if (a->str.len != b->str.len)
			return 1;
		return memcmp(a->str.s, b->str.s, a->str.len) == 0 ? 0 : 1;
	}
	if (a->type == MARK_FILTER_DOUBLE || b->type == MARK_FILTER_DOUBLE) {
		double x = as_double(a), y = as_double(b);
		return x < y ? -1 : x > y ? 1 : x == y ? 0 : 2;
	}
	if (a->type == b->type) {
		if (a->type == MARK_FILTER_INT)
			return a->i < b->i ? -1 : a->i > b->i;
		return a->u < b->u ? -1 : a->u > b->u;
	}
	/* one signed, one unsigned */
	if (a->type == MARK_FILTER_INT)
		return a->i < 0 ? -1 : (uint64_t)a->i < b->u ? -1 : (uint64_t)a->i > b->u;
	return b->i < 0 ? 1 : a->u < (uint64_t)b->i ? -1 : a->u > (uint64_t)b->i;
}

bool mark_filter_eval(const struct mark_filter *f, const struct mark_filter_value *vals)
{
	struct mark_filter_value st[MARK_FILTER_MAX_DEPTH];
	unsigned sp = 0;
	for (unsigned i = 0; i < f->nops; i++) {
		const struct op *o = &f->ops[i];
		switch ((enum op_kind)o->kind) {
		case OP_CONST:
			st[sp++] = o->v;
			break;
		case OP_FIELD:
			st[sp++] = vals[o->arg];
			break;
		case OP_NOT: {
			bool t = truthy(&st[sp - 1]);
			st[sp - 1].type = MARK_FILTER_INT;
			st[sp - 1].i = !t;
			break;
		}
		case OP_AND:
		case OP_OR: {
			bool a = truthy(&st[sp - 2]), b = truthy(&st[sp - 1]);
			sp--;
			st[sp - 1].type = MARK_FILTER_INT;
			st[sp - 1].i = o->kind == OP_AND ? (a && b) : (a || b);
			break;
		}
		case OP_BITAND: {
			/* Two's complement bits.  Two signed operands give a signed
			 * result (as in C): -3 & -1 is -3, and `x & -1 == x` holds for
			 * a negative %d.  With an unsigned operand it is unsigned. */
			const struct mark_filter_value *a = &st[sp - 2], *b = &st[sp - 1];
			uint64_t r = 0;
			if ((a->type == MARK_FILTER_INT || a->type == MARK_FILTER_UINT) &&
			    (b->type == MARK_FILTER_INT || b->type == MARK_FILTER_UINT))
				r = a->u & b->u;   /* same bits in i and u */
			const bool is_signed = a->type == MARK_FILTER_INT && b->type == MARK_FILTER_INT;
			sp--;
			st[sp - 1].type = is_signed ? MARK_FILTER_INT : MARK_FILTER_UINT;
			st[sp - 1].u = r;   /* the same bits as .i: int64_t and uint64_t share them */
			break;
		}
		default: {
			int c = compare(&st[sp - 2], &st[sp - 1], o->arg);
			bool r = false;
			if (c != 2) {
				switch ((enum op_kind)o->kind) {
				case OP_EQ: r = c == 0; break;
				case OP_NE: r = c != 0; break;
				case OP_LT: r = c < 0; break;
				case OP_LE: r = c <= 0; break;
				case OP_GT: r = c > 0; break;
				default: r = c >= 0; break;
				}
			}
			sp--;
			st[sp - 1].type = MARK_FILTER_INT;
			st[sp - 1].i = r;
			break;
		}
		}
	}
	return sp == 1 && truthy(&st[0]);
}

int mark_trigger_parse(const char *spec, char *glob, size_t globlen, struct mark_filter **filter, char *err,
		       size_t errlen)
{
	*filter = NULL;
	if (errlen)
		err[0] = '\0';
	const char *p = spec ? spec : "";
	while (*p == ' ' || *p == '\t')
		p++;
	const char *g = p;
	while (*p && *p != ' ' && *p != '\t')
		p++;
	const size_t glen = (size_t)(p - g);
	if (glen == 0) {
		snprintf(err, errlen, "column %zu: expected a marker glob (GLOB or 'GLOB if EXPR', e.g. "
			 "'req if status == 500')", (size_t)(g - (spec ? spec : "")) + 1);
		return -1;
	}
	if (glen >= globlen) {
		snprintf(err, errlen, "column 1: the glob is longer than %zu characters", globlen - 1);
		return -1;
	}
	memcpy(glob, g, glen);
	glob[glen] = '\0';
	while (*p == ' ' || *p == '\t')
		p++;
	if (!*p)
		return 0;   /* GLOB alone: every event of a matching marker triggers */
	if (strncmp(p, "if", 2) != 0 || (p[2] != ' ' && p[2] != '\t')) {
		snprintf(err, errlen, "column %zu: expected 'if EXPR' or the end after the glob (write "
			 "'GLOB if EXPR')", (size_t)(p - spec) + 1);
		return -1;
	}
	const char *expr = p + 3;
	char why[256];
	struct mark_filter *f = mark_filter_parse(expr, why, sizeof(why));
	if (!f) {
		/* The parser counts columns in EXPR: count them in the whole spec. */
		size_t col;
		int used = 0;
		if (sscanf(why, "column %zu: %n", &col, &used) == 1 && used > 0)
			snprintf(err, errlen, "column %zu: %s", col + (size_t)(expr - spec), why + used);
		else
			snprintf(err, errlen, "%s", why);
		return -1;
	}
	*filter = f;
	return 0;
}
