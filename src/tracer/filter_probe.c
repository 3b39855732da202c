/*
 * Filters in the probe: an event whose fields do not pass the session's
 * filter is dropped before anything is written (issue 13 section 1).
 *
 * The expression is parsed once (src/filter); what is per marker is only
 * which argument slot holds each field the expression names.  That
 * binding is computed the first time a marker fires under a filter and
 * cached by marker id in one word: bit 63 "computed", bit 62 "a field is
 * missing" (the marker has no such field: its events are never recorded),
 * and 6 bits per field holding the slot.  Racing threads compute the same
 * word and store it with relaxed atomics (the marker's layout is
 * immutable), as the probe's shape cache does.
 */
#include "tracer_internal.h"

#include "filter/filter.h"
#include "util/printable.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <urcu-bp.h>

#define BIND_DONE (1ull << 63)
#define BIND_MISSING (1ull << 62)
#define BIND_SLOT_BITS 6

struct tracer_filter *tracer_filter;
struct tracer_filter *tracer_trigger;
int tracer_judging;

static uint64_t __attribute__((noinline, cold)) bind_marker(const struct tracer_filter *tf,
							     const struct mark_marker *m)
{
	const struct mark_filter *f = tf->filter;
	/* A trigger: only markers its glob matches carry it. */
	if (tf->glob && !mark_glob_match(tf->glob, m))
		return BIND_DONE | BIND_MISSING;
	if (!f)
		return BIND_DONE;   /* no "if": no field to bind */
	/* 2n names of up to 128 bytes: 4 KiB of stack, once per marker. */
	char names[2 * MARK_MAX_MARKER_ARGS][TRACER_FIELD_NAME_MAX];
	const unsigned n = m->nargs <= MARK_MAX_MARKER_ARGS ? m->nargs : MARK_MAX_MARKER_ARGS;
	tracer_field_names(m->args, n, names);
	uint64_t b = BIND_DONE;
	for (unsigned k = 0; k < mark_filter_nfields(f); k++) {
		const char *want = mark_filter_field(f, k);
		unsigned slot = 0;
		while (slot < n && strcmp(names[slot], want) != 0)
			slot++;
		if (slot == n)
			return BIND_DONE | BIND_MISSING;
		b |= (uint64_t)slot << (k * BIND_SLOT_BITS);
	}
	return b;
}

/*
 * A %s longer than the trace keeps: record_with_strings() (probe.c) keeps
 * a string of more than MARK_TF_STRING_TEXT_MAX bytes as its first
 * MARK_TF_STRING_CUT_KEPT bytes followed by "..." (KEPT_LEN bytes), and
 * tags it cut.  The filter judges that text, as `mark view --filter`
 * does; a NULL %s it judges as the text "(null)", as the readers give it.
 */
#define KEPT_CUT MARK_TF_STRING_CUT_KEPT
#define KEPT_LEN (MARK_TF_STRING_MAX - 1)

/*
 * The value of argument slot `slot` as the trace would show it.  False
 * for a %s the recorder cuts: v then holds the program's string with
 * str.len > MARK_TF_STRING_TEXT_MAX, which judge_kept() replaces with the
 * kept text.
 */
static bool slot_value(const struct mark_arg *a, uint64_t raw, struct mark_filter_value *v)
{
	unsigned size = a->size == 0 || a->size > 8 ? 8 : a->size;
	switch (a->type) {
	case MARK_ARG_SIGNED: {
		const unsigned shift = 64 - 8 * size;
		v->type = MARK_FILTER_INT;
		v->i = (int64_t)(raw << shift) >> shift;   /* sign-extend the low `size` bytes */
		break;
	}
	case MARK_ARG_DOUBLE:
		v->type = MARK_FILTER_DOUBLE;
		memcpy(&v->d, &raw, sizeof(v->d));
		break;
	case MARK_ARG_STRING: {
		/* The program's own pointer, as record_with_strings() reads it. */
		const char *p = (const char *)(uintptr_t)raw;
		if (!p)
			p = "(null)";
		v->type = MARK_FILTER_STRING;
		v->str.s = p;
		v->str.len = strnlen(p, MARK_TF_STRING_TEXT_MAX + 1);
		return v->str.len <= MARK_TF_STRING_TEXT_MAX;
	}
	case MARK_ARG_POINTER:
		v->type = MARK_FILTER_UINT;
		v->u = raw;
		break;
	default:   /* unsigned, hex, char: the low `size` bytes */
		v->type = MARK_FILTER_UINT;
		v->u = size == 8 ? raw : raw & ((1ull << (8 * size)) - 1);
		break;
	}
	return true;
}

/*
 * Judge an event with a %s the recorder truncates by the text the trace
 * keeps of it, which is what `mark view --filter` reads back: judged by
 * the program's own longer string, `s == "*.html"` recorded events that
 * the same filter on read does not show, and `s == "*..."` dropped events
 * it does.  Out of line: the copies take 2 KiB of stack, and only such
 * events pay for them (no allocation: the probe may run in a signal
 * handler).  vals[k] of a cut string holds the program's string, of
 * more than MARK_TF_STRING_TEXT_MAX bytes (slot_value()).
 */
static bool __attribute__((noinline, cold)) judge_kept(const struct mark_filter *f, struct mark_filter_value *vals,
						       unsigned nf)
{
	char kept[MARK_FILTER_MAX_FIELDS][MARK_TF_STRING_MAX];
	for (unsigned k = 0; k < nf; k++) {
		if (vals[k].type != MARK_FILTER_STRING || vals[k].str.len <= MARK_TF_STRING_TEXT_MAX)
			continue;
		memcpy(kept[k], vals[k].str.s, KEPT_CUT);
		memcpy(kept[k] + KEPT_CUT, "...", KEPT_LEN - KEPT_CUT);
		vals[k].str.s = kept[k];
		vals[k].str.len = KEPT_LEN;
	}
	return mark_filter_eval(f, vals);
}

bool tracer_filter_rejects(struct tracer_filter *tf, const struct mark_marker *m, const uint64_t *args)
{
	const struct mark_filter *f = tf->filter;
	const unsigned id = m->id;
	uint64_t b = id <= MARK_TF_MAX_ID ? __atomic_load_n(&tf->bind[id], __ATOMIC_RELAXED) : 0;
	if (!b) {
		b = bind_marker(tf, m);
		if (id <= MARK_TF_MAX_ID)
			__atomic_store_n(&tf->bind[id], b, __ATOMIC_RELAXED);
	}
	if (b & BIND_MISSING) {
		MARK_TSAN_RELEASE(tf);   /* see tracer_filter_set() */
		return true;
	}
	if (!f) {
		MARK_TSAN_RELEASE(tf);
		return false;   /* a trigger without "if": every event of the marker */
	}
	struct mark_filter_value vals[MARK_FILTER_MAX_FIELDS];
	if (tf->simple) {
		/* One comparison of an integer field with N >= 0 (the common
		 * "status == 500"): no program to run. */
		const unsigned slot = (unsigned)b & ((1u << BIND_SLOT_BITS) - 1);
		slot_value(&m->args[slot], args[slot], &vals[0]);
		int c;
		if (vals[0].type == MARK_FILTER_INT)
			c = vals[0].i < 0 ? -1 : (uint64_t)vals[0].i < tf->simple_value ? -1
						 : (uint64_t)vals[0].i > tf->simple_value;
		else if (vals[0].type == MARK_FILTER_UINT)
			c = vals[0].u < tf->simple_value ? -1 : vals[0].u > tf->simple_value;
		else
			goto general;   /* a double or a string field */
		bool pass;
		switch (tf->simple_op) {
		case -2: pass = c < 0; break;
		case -1: pass = c <= 0; break;
		case 0: pass = c == 0; break;
		case 1: pass = c >= 0; break;
		case 2: pass = c > 0; break;
		default: pass = c != 0; break;
		}
		MARK_TSAN_RELEASE(tf);
		return !pass;
	}
general:;
	const unsigned nf = mark_filter_nfields(f);
	bool whole = true;
	for (unsigned k = 0; k < nf; k++) {
		const unsigned slot = (unsigned)(b >> (k * BIND_SLOT_BITS)) & ((1u << BIND_SLOT_BITS) - 1);
		whole &= slot_value(&m->args[slot], args[slot], &vals[k]);
	}
	const bool reject = whole ? !mark_filter_eval(f, vals) : !judge_kept(f, vals, nf);
	/* TSan does not see the grace period that orders these reads before
	 * tracer_filter_set() frees the filter: say so (nothing otherwise). */
	MARK_TSAN_RELEASE(tf);
	return reject;
}

/* Free a filter or trigger nobody may read any more. */
static void tracer_filter_free(struct tracer_filter *tf)
{
	if (!tf)
		return;
	mark_filter_free(tf->filter);
	free(tf->glob);
	free(tf);
}

/*
 * Publish tf (may be NULL) in *slot and retire what was there.  Release:
 * the program and its zeroed bind words are visible to a probe that loads
 * the pointer (acquire).  Probes that may still read the old one run
 * inside a read-side critical section begun before the exchange: wait for
 * them all before freeing it.  (For TSan: pairs with the probe's release
 * on it after its use.)
 */
static void filter_install(struct tracer_filter **slot, struct tracer_filter *tf)
{
	struct tracer_filter *old = __atomic_exchange_n(slot, tf, __ATOMIC_ACQ_REL);
	/* Release: after the pointer (see tracer_judging). */
	__atomic_store_n(&tracer_judging, (__atomic_load_n(&tracer_filter, __ATOMIC_RELAXED) != NULL) |
						  (__atomic_load_n(&tracer_trigger, __ATOMIC_RELAXED) != NULL) << 1,
			 __ATOMIC_RELEASE);
	if (old && mark_grace_period()) {   /* else kept: a probe may still read it */
		MARK_TSAN_ACQUIRE(old);
		tracer_filter_free(old);
	}
}

/* calloc: the bind words start "not computed" (0); 512 KiB of address
 * space, of which only the pages of fired ids are touched. */
static struct tracer_filter *filter_new(struct mark_filter *f, const char *glob)
{
	struct tracer_filter *tf = calloc(1, sizeof(*tf));
	if (!tf || (glob && !(tf->glob = strdup(glob)))) {
		free(tf);
		mark_filter_free(f);
		return NULL;
	}
	tf->filter = f;
	tf->simple = f && mark_filter_simple(f, &tf->simple_op, &tf->simple_value);
	return tf;
}

int tracer_filter_set(const char *text, const char *what)
{
	struct tracer_filter *tf = NULL;
	if (text && *text) {
		char err[256];
		struct mark_filter *f = mark_filter_parse(text, err, sizeof(err));
		if (!f)
			return mark_error(strcmp(err, "out of memory") == 0 ? ENOMEM : EINVAL,
					  "mark: %s \"%s\": %s", what, text, err);
		if (!(tf = filter_new(f, NULL)))
			return mark_error(ENOMEM, "mark: %s: out of memory", what);
	}
	filter_install(&tracer_filter, tf);
	return 0;
}

/* Parse and check a trigger spec; *out NULL for none. */
static int trigger_compile(const char *spec, const char *what, struct tracer_filter **out)
{
	*out = NULL;
	if (!spec || !*spec)
		return 0;
	char glob[MARK_FILTER_MAX_TEXT + 1], err[300], why[200];
	/* The spec as the message quotes it: start and end of a long one,
	 * so that the column and the reason stay in the message. */
	char shown[100];
	mark_printable_brief(shown, sizeof(shown), spec);
	struct mark_filter *f;
	if (mark_trigger_parse(spec, glob, sizeof(glob), &f, err, sizeof(err)) < 0)
		return mark_error(strcmp(err, "out of memory") == 0 ? ENOMEM : EINVAL, "mark: %s \"%s\": %s", what,
				  shown, err);
	if (mark_glob_check(glob, why, sizeof(why)) < 0) {
		mark_filter_free(f);
		return mark_error(EINVAL, "mark: %s \"%s\": column 1: bad glob: %s", what, shown, why);
	}
	if (!(*out = filter_new(f, glob)))
		return mark_error(ENOMEM, "mark: %s: out of memory", what);
	return 0;
}

int tracer_trigger_check(const char *spec, const char *what)
{
	struct tracer_filter *tf;
	int rc = trigger_compile(spec, what, &tf);
	tracer_filter_free(tf);
	return rc;
}

int tracer_trigger_set(const char *spec, const char *what)
{
	struct tracer_filter *tf;
	int rc = trigger_compile(spec, what, &tf);
	if (rc == 0)
		filter_install(&tracer_trigger, tf);
	return rc;
}
