/*
 * Filter expressions over an event's fields (status == 500 && path ==
 * "/api/" followed by a star glob), shared by libmark's probe (evaluated
 * before an event is written) and the CLI (`mark view/stats --filter`, and the check of
 * `mark record --filter` before the program runs).
 *
 * An expression is parsed once into a small postfix program.  Fields are
 * referred to by index (0 .. mark_filter_nfields()), in the order the
 * expression first names them; the caller binds each index to a value of
 * the event (the probe from the marker's argument slots, the reader from
 * decoded fields) and calls mark_filter_eval(), which allocates nothing,
 * takes no lock and reads the program only: one program may be evaluated
 * by any number of threads at once.
 *
 * Not installed: internal to libmark and the CLI.
 */
#ifndef MARK_FILTER_H
#define MARK_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Distinct fields one expression may name (the probe's per-marker binding
 * packs their argument slots into one word). */
#define MARK_FILTER_MAX_FIELDS 8
/* Operations in one program, and the evaluation stack's depth. */
#define MARK_FILTER_MAX_OPS 64
#define MARK_FILTER_MAX_DEPTH 16
/* Longest expression text accepted (the agent protocol's bound too). */
#define MARK_FILTER_MAX_TEXT 1024

enum mark_filter_vtype {
	MARK_FILTER_INT,      /* signed 64-bit                                  */
	MARK_FILTER_UINT,     /* unsigned 64-bit (%u %x %p %c fields)            */
	MARK_FILTER_DOUBLE,
	MARK_FILTER_STRING,   /* s[0 .. len): not NUL-terminated necessarily     */
};

struct mark_filter_value {
	enum mark_filter_vtype type;
	union {
		int64_t i;
		uint64_t u;
		double d;
		struct {
			const char *s;
			size_t len;
		} str;
	};
};

struct mark_filter;

/*
 * Parse `text`.  NULL on error, with "column N: what was expected" (1-based
 * column of the offending character) in err; NULL with "out of memory"
 * when malloc failed.
 */
struct mark_filter *mark_filter_parse(const char *text, char *err, size_t errlen);
void mark_filter_free(struct mark_filter *f);
/* The expression as given (for messages and the agent). */
const char *mark_filter_text(const struct mark_filter *f);
unsigned mark_filter_nfields(const struct mark_filter *f);
const char *mark_filter_field(const struct mark_filter *f, unsigned k);
/*
 * Does the event whose fields are vals[0 .. nfields) pass?  A comparison
 * between a string and a number is false (so is its != : the event does
 * not have the kind of field the filter expects).
 */
bool mark_filter_eval(const struct mark_filter *f, const struct mark_filter_value *vals);
/*
 * The one-comparison shape the probe special-cases: "FIELD OP INTEGER"
 * (or "INTEGER OP FIELD", turned around) with an integer >= 0.  True with
 * *op one of -2 (<), -1 (<=), 0 (==), 1 (>=), 2 (>), 3 (!=).
 */
bool mark_filter_simple(const struct mark_filter *f, int *op, uint64_t *value);
/* `*` glob of the filter language: does s[0..len) match pattern p (NUL-
 * terminated; backslash escapes the next character)? */
bool mark_filter_glob(const char *p, const char *s, size_t len);

/*
 * A snapshot trigger, "GLOB" or "GLOB if EXPR" (`mark record --snapshot-on`,
 * MARK_SNAPSHOT_ON, the agent): the glob is copied into glob[0..globlen),
 * *filter is EXPR parsed (NULL without "if": every event of a matching
 * marker triggers).  0, or -1 with "column N: ..." in err, N counted in
 * spec (as --filter counts in its expression).  The glob itself is not
 * checked here (mark_glob_check() does that where globs are armed).
 */
int mark_trigger_parse(const char *spec, char *glob, size_t globlen, struct mark_filter **filter, char *err,
		       size_t errlen);

#endif
