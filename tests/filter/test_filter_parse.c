/*
 * The filter language: good expressions evaluate as documented, bad ones
 * are refused with the 1-based column of the error and what was expected.
 */
#include "filter/filter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond, ...)                                                   \
	do {                                                               \
		if (!(cond)) {                                             \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                      \
			fputc('\n', stderr);                               \
			failures++;                                        \
		}                                                          \
	} while (0)

/* Fields by name for the evaluation checks. */
struct field { const char *name; struct mark_filter_value v; };

static int eval(const char *expr, const struct field *fields, unsigned n)
{
	char err[256];
	struct mark_filter *f = mark_filter_parse(expr, err, sizeof(err));
	if (!f) {
		fprintf(stderr, "FAIL: \"%s\" refused: %s\n", expr, err);
		failures++;
		return -1;
	}
	struct mark_filter_value vals[MARK_FILTER_MAX_FIELDS];
	for (unsigned k = 0; k < mark_filter_nfields(f); k++) {
		unsigned j = 0;
		while (j < n && strcmp(fields[j].name, mark_filter_field(f, k)) != 0)
			j++;
		if (j == n) {
			fprintf(stderr, "FAIL: \"%s\": no test value for field %s\n", expr, mark_filter_field(f, k));
			failures++;
			mark_filter_free(f);
			return -1;
		}
		vals[k] = fields[j].v;
	}
	int r = mark_filter_eval(f, vals);
	mark_filter_free(f);
	return r;
}

static void bad(const char *expr, unsigned column, const char *words)
{
	char err[256], want[32];
	struct mark_filter *f = mark_filter_parse(expr, err, sizeof(err));
	CHECK(!f, "\"%s\" was accepted", expr);
	mark_filter_free(f);
	if (f)
		return;
	snprintf(want, sizeof(want), "column %u: ", column);
	CHECK(strncmp(err, want, strlen(want)) == 0, "\"%s\": got \"%s\", want column %u", expr, err, column);
	CHECK(strstr(err, words) != NULL, "\"%s\": got \"%s\", want it to say \"%s\"", expr, err, words);
}

int main(void)
{
	const struct field ev[] = {
		{ "status", { .type = MARK_FILTER_INT, .i = 500 } },
		{ "neg", { .type = MARK_FILTER_INT, .i = -3 } },
		{ "big", { .type = MARK_FILTER_UINT, .u = 0xffffffffffffffffull } },
		{ "ratio", { .type = MARK_FILTER_DOUBLE, .d = 0.25 } },
		{ "flags", { .type = MARK_FILTER_UINT, .u = 0x6 } },
		{ "path", { .type = MARK_FILTER_STRING, .str = { "/api/users*x", 10 } } },   /* "/api/users" */
		{ "star", { .type = MARK_FILTER_STRING, .str = { "a*b", 3 } } },
		{ "empty", { .type = MARK_FILTER_STRING, .str = { "", 0 } } },
	};
	const unsigned n = sizeof(ev) / sizeof(ev[0]);
	static const struct { const char *expr; int want; } cases[] = {
		{ "status == 500", 1 },
		{ "status != 500", 0 },
		{ "status > 499 && status < 501", 1 },
		{ "status >= 501 || status <= 499", 0 },
		{ "!(status == 500)", 0 },
		{ "!!status", 1 },
		{ "neg < 0 && neg == -3 && neg > -4", 1 },
		{ "big > 0 && big > neg && big == 0xffffffffffffffff", 1 },
		{ "neg < big", 1 },
		{ "ratio < 0.5 && ratio > .2 && ratio == 25e-2", 1 },
		{ "status > 499.5", 1 },
		{ "flags & 4", 1 },
		{ "flags & 1", 0 },
		{ "flags & 4 == 4", 1 },           /* & binds tighter than == */
		{ "(flags & 0x2) != 0", 1 },
		/* & of two signed integers is signed: -3 & -1 is -3, not 2^64 - 3 */
		{ "neg & -1 == neg", 1 },
		{ "neg & -1 < 0", 1 },
		{ "neg & -4 == -4", 1 },
		{ "neg & neg == -3 && (neg & status) == 500", 1 },
		{ "big & neg == 0xfffffffffffffffd", 1 },   /* with an unsigned one: unsigned */
		{ "flags & -1 == 6", 1 },
		{ "path == \"/api/*\"", 1 },
		{ "\"/api/*\" == path", 1 },
		{ "path == \"/api\"", 0 },
		{ "path != \"/web/*\"", 1 },
		{ "path == \"*users\"", 1 },
		{ "path == \"/a*u*s\"", 1 },
		{ "path == \"/a*u*x\"", 0 },
		{ "star == \"a\\*b\"", 1 },        /* \* is a literal star */
		{ "path == \"a\\*b\"", 0 },
		{ "empty == \"\"", 1 },
		{ "empty == \"*\"", 1 },
		{ "path == 5", 0 },                /* string vs number: false ... */
		{ "path != 5", 0 },                /* ... both ways */
		{ "status == \"500\"", 0 },
		{ "path == star", 0 },             /* two fields: exact */
		{ "star == star", 1 },
		{ " ( status==500 ) &&(neg<0)", 1 },
		/* constants beside a field still mean something */
		{ "500 == status", 1 },
		{ "(1 & 3) == status & 1", 0 },
		{ "flags & (2 & 6)", 1 },
		{ "ratio == (0.25)", 1 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int got = eval(cases[i].expr, ev, n);
		CHECK(got == cases[i].want, "\"%s\" evaluated to %d, want %d", cases[i].expr, got, cases[i].want);
	}

	bad("", 1, "empty");
	bad("status ==", 10, "ends early");
	bad("status = 500", 8, "use ==");
	bad("a | b", 3, "use ||");
	bad("(a == 1", 8, "expected ')' to close the '(' at column 1");
	bad("a == 1)", 7, "unexpected text after the expression");
	bad("a == 1 == 2", 8, "do not chain");
	bad("path < \"x\"", 6, "only with == or !=");
	bad("\"x\"", 1, "a string alone");
	bad("path == \"abc", 9, "no closing");
	bad("a == 12ab", 6, "not a number");
	bad("a == 99999999999999999999", 6, "not a number");
	bad("a == -9223372036854775809", 6, "below the smallest");
	bad("a == @", 6, "unexpected '@'");
	bad("a && ", 6, "ends early");
	bad("!\"s\"", 1, "'!' cannot apply to a string");
	bad("a & \"s\"", 3, "'&' needs integers");
	bad("a == 1 b", 8, "unexpected text");
	/* Expressions that parse but mean nothing, refused with what to write
	 * instead: a floating-point mask (its bits are not the number's), a
	 * string as a truth value beside && or ||, a comparison of constants
	 * (always true or always false). */
	bad("flags & 1.5", 7, "'&' needs integers, not a floating-point number");
	bad("1.5 & flags", 5, "write an integer mask");
	bad("flags & (-2e3)", 7, "'&' needs integers");
	bad("status == 500 && \"a\"", 18, "a string alone is not a condition");
	bad("\"a\" || status == 500", 1, "compare a field with it");
	bad("(\"a\") && status == 500", 1, "a string alone is not a condition");
	bad("1 == 1", 1, "compares no field");
	bad("\"a\" == \"a\"", 1, "compares no field");
	bad("status == 500 || 2 > 1", 18, "always true or always false");
	bad("(1 & 3) != 0 && path == \"x\"", 1, "compares no field");
	bad("f1 || f2 || f3 || f4 || f5 || f6 || f7 || f8 || f9", 49, "too many fields");
	char deep[200] = "";
	for (int i = 0; i < 40; i++)
		strcat(deep, "(");
	strcat(deep, "a");
	bad(deep, MARK_FILTER_MAX_DEPTH + 1, "nested too deeply");
	char *longx = malloc(MARK_FILTER_MAX_TEXT + 2);
	memset(longx, 'a', MARK_FILTER_MAX_TEXT + 1);
	longx[MARK_FILTER_MAX_TEXT + 1] = '\0';
	bad(longx, MARK_FILTER_MAX_TEXT + 1, "longer than");
	free(longx);
	/* too many operations */
	char many[600] = "a == 1";
	for (int i = 0; i < 30; i++)
		strcat(many, " || a == 1");
	char err[256];
	struct mark_filter *f = mark_filter_parse(many, err, sizeof(err));
	CHECK(!f && strstr(err, "too long"), "%zu-character chain: got \"%s\"", strlen(many), f ? "accepted" : err);
	mark_filter_free(f);
	if (failures)
		fprintf(stderr, "%d failure(s)\n", failures);
	else
		printf("ok\n");
	return failures ? 1 : 0;
}
