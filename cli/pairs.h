/*
 * Begin/end pairs of markers, per thread, for `mark stats` (latencies) and
 * `mark export` (slices).
 *
 * Which markers pair:
 *   - by name, when the trace declares both halves (the event classes of its
 *     metadata, not the events seen): STEM-start with STEM-done or STEM-end,
 *     STEM_begin/STEM_end, STEM__start/STEM__done, STEM_entry/STEM_exit,
 *     STEM_start/STEM_stop.  The pair is called STEM.  A begin may have
 *     several ends (query-start closes with query-done or query-end).
 *   - explicitly: pairs_config.pairs holds "A,B" (`--pair A,B`): marker A
 *     begins and B ends the pair "A..B"; A and B match a trace name exactly
 *     or its part after "provider:".  A marker named by --pair plays only
 *     that role.
 *
 * Matching: events are taken in time order.  Each thread (trace and tid;
 * the stream when the tid is unknown) has a stack of open begins.  A begin
 * is pushed.  An end closes the innermost open begin of its pair: the
 * begins opened above it on the stack (whose ends are missing) are given
 * up first (PAIR_GIVEN_UP_INNER), so pairs nest as a stack whatever the
 * trace holds.  An end with no open begin of its pair is counted as
 * "without begin" (no_begin) and plays no role.  Begins still open at the
 * end of the trace are given up at their thread's last event
 * (PAIR_GIVEN_UP_AT_END).  A stack holds at most PAIRS_MAX_DEPTH begins:
 * one more gives up all of them, innermost first (PAIR_GIVEN_UP_TOO_DEEP;
 * export ends their slices, still nested), so memory stays bounded on a
 * trace of begins only.
 *
 * Lost events: a loss report (trace_loss) marks every begin open on that
 * thread's stack.  The pair those begins close spans lost events: its end
 * may belong to a later begin whose events were lost, so its duration is
 * not trusted.  It is still reported (span->spans_loss), and stats counts
 * it apart ("lost") instead of in its distribution.
 *
 * --by FIELD (pairs_config.by): each pair is split into rows by the text of
 * the begin's argument FIELD (the end's when the begin has none; "-" when
 * neither has it).  Values get a row of their own in the order they come,
 * at most PAIRS_MAX_KEYS per pair and PAIRS_MAX_KEYED_ROWS over all pairs
 * together (a trace may declare some 32k pairs); the later ones share
 * their pair's row "(other)" (pairs_folded() says whether any did), so the
 * rows are at most PAIRS_MAX_KEYED_ROWS plus one "(other)" per pair.
 *
 * Memory: per thread a stack, per pair and row a few words (and with --by
 * each value's bytes twice, raw and as text: values that are in the
 * trace), per trace its list of event class names and per (trace, marker)
 * a few words (so that a trace of many processes costs no more per event
 * than one of one process); nothing per event.  Single-threaded: one owner
 * calls every function.
 */
#ifndef MARK_CLI_PAIRS_H
#define MARK_CLI_PAIRS_H

#include "trace_reader.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PAIRS_MAX_DEPTH 256
#define PAIRS_MAX_KEYS 4096          /* --by values with a row, per pair    */
#define PAIRS_MAX_KEYED_ROWS 16384   /* --by values with a row, all pairs   */

enum pair_role { PAIR_NONE, PAIR_BEGIN, PAIR_END };
enum pair_given_up { PAIR_GIVEN_UP_INNER, PAIR_GIVEN_UP_AT_END, PAIR_GIVEN_UP_TOO_DEEP };

struct pair_span {
	uint32_t pair;               /* pairs_name()                              */
	uint32_t row;                /* pairs_row_key(); the pair's row without --by */
	int64_t begin_ns, end_ns;    /* given up: end_ns is when                  */
	int64_t pid, tid;            /* as mark export shows them                 */
	bool spans_loss;
};

struct pairs_ops {
	/* A begin and its end, in the order the ends come. */
	void (*span)(const struct pair_span *span, void *arg);
	/* A begin without its end, given up at span->end_ns. */
	void (*given_up)(const struct pair_span *span, enum pair_given_up why, void *arg);
};

struct pairs_config {
	const char *const *pairs;    /* "A,B" each; checked by pairs_new         */
	size_t npairs;
	const char *by;              /* --by FIELD, or NULL                      */
	/*
	 * Begins open at the end are given up at their thread's last event of
	 * any marker (export ends slices there); false: at the thread's last
	 * begin or end, which spares a thread lookup per other event (stats
	 * does not use the time of a given-up begin).
	 */
	bool every_event;
};

/* Counts of one row. */
struct pair_row {
	uint32_t pair;
	char *key;                   /* --by value (terminal-escaped later), or NULL */
	uint64_t spans, lossy;       /* complete pairs; those spanning a loss     */
	uint64_t no_end, no_begin;   /* begins given up; ends without a begin     */
};

struct pairs;

/*
 * NULL when out of memory or when a --pair is not "A,B" with A != B, both
 * non-empty; error[0..errlen) then says which, for the user (a message that
 * does not start with "out of memory" is a usage error).
 */
struct pairs *pairs_new(const struct pairs_config *cfg, const struct pairs_ops *ops, void *arg, char *error,
			size_t errlen);
/*
 * Every event, in time order.  Returns its role (PAIR_END only for an end
 * that closed a begin) and in *pair the pair it belongs to.  Calls the
 * callbacks (given-up inner begins first, then the span) before returning.
 */
enum pair_role pairs_event(struct pairs *p, const struct trace_event *ev, uint32_t *pair);
/*
 * The same in two steps, for a caller that already looks up something of
 * its own per event class (trace and marker) and can keep the class's
 * role beside it: pairs_class() is what every event of ev's class is
 * (classifying the class on its first call, as pairs_event does), and
 * pairs_event_as() is pairs_event for an event of that class.
 *
 * A pairs_class with `fixed` set is the same for every event of the class
 * (same ev->trace and ev->name pointers) until pairs_free, so the caller
 * may keep it and call pairs_event_as with it instead of pairs_event.
 * Without `fixed` (memory ran out, so the class could not be remembered
 * and is classified anew each time) it holds for this event only.
 *
 * With pairs_config.every_event false, pairs_event_as does nothing for a
 * class whose role is PAIR_NONE (it returns PAIR_NONE): the caller may skip
 * the call.  Calling pairs_class for the first event of each class, in
 * event order, numbers the pairs as pairs_event would.
 */
struct pairs_class {
	enum pair_role role;
	uint32_t pair;
	bool fixed;
};
struct pairs_class pairs_class(struct pairs *p, const struct trace_event *ev);
enum pair_role pairs_event_as(struct pairs *p, const struct trace_event *ev, struct pairs_class cls, uint32_t *pair);
/* Replace the callbacks and their argument (an export that writes its own
 * slice ends takes over the pairs its command set up). */
void pairs_set_ops(struct pairs *p, const struct pairs_ops *ops, void *arg);
/* A loss report: the thread's open begins now span lost events. */
void pairs_loss(struct pairs *p, const struct trace_loss *loss);
/* The end of the trace: gives up every begin still open. */
void pairs_finish(struct pairs *p);

size_t pairs_count(const struct pairs *p);
const char *pairs_name(const struct pairs *p, uint32_t pair);
size_t pairs_rows(const struct pairs *p);
const struct pair_row *pairs_row(const struct pairs *p, uint32_t row);
/* With --by, some value went to its pair's "(other)" row (a limit above). */
bool pairs_folded(const struct pairs *p);
/* Memory ran out at some point: some events were not paired. */
bool pairs_oom(const struct pairs *p);
void pairs_free(struct pairs *p);

#endif
