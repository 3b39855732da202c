/*
 * Reading a CTF trace directory for `mark view`, `mark stats`, `mark export`
 * and the summary of `mark record`.
 *
 * All CTF decoding is libbabeltrace2's (src.ctf.fs -> flt.utils.muxer ->
 * a simple sink of ours), so the commands see exactly what `babeltrace2 DIR`
 * sees, in time order across every stream of the trace.  This module only
 * adapts babeltrace2's messages to one flat struct per event.
 *
 * Single-threaded: a trace_read() call runs the whole babeltrace2 graph on
 * one thread and calls the callbacks from it, in a child process (see
 * trace_read), so that a crash inside libbabeltrace2 is an error of the
 * command, not its end.
 */
#ifndef MARK_CLI_TRACE_READER_H
#define MARK_CLI_TRACE_READER_H

#include <babeltrace2/babeltrace.h>
#include <stdbool.h>
#include <stdint.h>

#include "trace_value.h"

/* (A new member must also be assigned in trace_native.c's deliver(), which
 * sets each one rather than zero the struct for every event.) */
struct trace_event {
	const char *name;          /* event class name: the marker name                     */
	bool has_time;
	int64_t ns;                /* ns from the clock's origin (Unix epoch if clock_is_epoch) */
	bool clock_is_epoch;
	int64_t cpu;               /* -1 if the trace does not record it                     */
	int64_t pid;               /* -1 if unknown                                          */
	int64_t tid;               /* -1 if unknown                                          */
	uint64_t stream_index;     /* dense index of the event's stream, in order first seen  */
	const char *procname;      /* the process's name (env.procname), or NULL; untrusted  */
	const char *thread_name;   /* the thread's name (packet context thread_name), or NULL;
				      valid UTF-8 without control characters               */
	const void *trace;         /* the same address for every event of one trace (process) */
	const bt_field *payload;   /* babeltrace2 path: structure of the arguments, or NULL   */
	const bt_event *event;     /* babeltrace2 path: the event (borrowed), else NULL       */
	const struct trace_native_event *native;   /* native path (trace_native.h), else NULL */
	size_t ntraces;            /* traces (processes) being read: > 1 for a forked child  */
};

struct trace_native_event;

/*
 * The event's arguments, whichever reader decoded it (see
 * trace_payload_append in trace_value.h for the text), and how many are
 * shown (0: the event has none).
 */
void trace_event_payload_append(struct strbuf *sb, const struct trace_event *ev, enum trace_value_style style);
size_t trace_event_payload_count(const struct trace_event *ev);
/* Whether the event has an argument called `name`. */
bool trace_event_has_field(const struct trace_event *ev, const char *name);
/*
 * Append the value of the argument called `name` as trace_payload_append
 * writes it (no "name="); false, with nothing appended, if there is none.
 */
bool trace_event_field_append(struct strbuf *sb, const struct trace_event *ev, const char *name,
			      enum trace_value_style style);
/*
 * Append bytes that identify the value of argument `name` (equal values,
 * equal bytes; different values of one type, different bytes), cheaper
 * than its text: the raw bytes for the native reader, the text otherwise.
 * false, with nothing appended, if there is no such argument.
 */
bool trace_event_field_key(struct strbuf *sb, const struct trace_event *ev, const char *name);
/*
 * The event's arguments one by one with their types, for formats that keep
 * types (`mark export --format perfetto`), whichever reader decoded it.
 * Names and strings are borrowed for the call only.  The tracer's %c is
 * TRACE_ARG_CHAR (u holds the byte); its %p, %x and %lx are all unsigned
 * base-16 integers in the trace (TRACE_ARG_HEX: the trace does not say
 * which one the marker used).  A value of another CTF type (an array, a
 * structure, a foreign trace's variant) is TRACE_ARG_TEXT: s holds its
 * JSON text (trace_value_append).  The tracer's string length selectors
 * are not arguments (trace_payload_append hides them too).
 */
enum trace_arg_type {
	TRACE_ARG_INT,      /* i */
	TRACE_ARG_UINT,     /* u, shown in decimal */
	TRACE_ARG_HEX,      /* u, shown in base 16 (or 8 or 2) */
	TRACE_ARG_DOUBLE,   /* d */
	TRACE_ARG_CHAR,     /* u: one byte */
	TRACE_ARG_BOOL,     /* u: 0 or 1 */
	TRACE_ARG_STRING,   /* s: NUL-terminated, any bytes (not necessarily UTF-8) */
	TRACE_ARG_TEXT,     /* s: JSON text of a composite value */
};
struct trace_arg {
	const char *name;
	enum trace_arg_type type;
	int64_t i;
	uint64_t u;
	double d;
	const char *s;
};
/* fn for each argument in order; `scratch` holds TRACE_ARG_TEXT values (reset by the call). */
void trace_event_args_each(const struct trace_event *ev, void (*fn)(const struct trace_arg *a, void *ctx), void *ctx,
			   struct strbuf *scratch);
/*
 * Does the event pass the --filter `f` (src/filter: the probe's language,
 * fields by their trace names)?  An event without a field f names does
 * not, as in the probe.
 */
struct mark_filter;
bool trace_event_filter_pass(const struct trace_event *ev, const struct mark_filter *f);
/*
 * The name of every event class (marker) the event's trace declares, in one
 * malloc'd array of borrowed names (valid while trace_read runs); NULL when
 * out of memory.
 */
const char **trace_event_class_names(const struct trace_event *ev, size_t *count);


/*
 * Events lost by the tracer in one stream.  A loss is reported when the
 * stream's next packet begins (or the stream ends), with that packet's
 * thread: mark's buffers are per thread, and the packet after a loss holds
 * the events of the thread that lost them.
 */
struct trace_loss {
	uint64_t count;            /* 0: the trace says events were lost, not how many  */
	bool backwards;            /* count 0 because events_discarded went backwards   */
	uint64_t stream_index;     /* as in struct trace_event                            */
	int64_t pid, tid;          /* -1 if unknown                                       */
	const char *procname;      /* as in struct trace_event                            */
	size_t ntraces;            /* as in struct trace_event                            */
};

/*
 * A difference of events_discarded counters that means "went backwards".
 * CTF lets the counter wrap, and babeltrace2 reports the difference
 * modulo 2^64, so a counter that decreased comes out as nearly 2^64
 * (found by a review: "# lost 18446744073709551610 events").  No tracer
 * loses 2^63 events; both readers take such a difference as a loss of
 * unknown count (above TRACE_LOSS_MAX), so that they agree.
 */
#define TRACE_LOSS_MAX ((uint64_t)INT64_MAX)

/* a + b, at most UINT64_MAX: totals of losses never wrap. */
static inline uint64_t trace_add_sat(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

struct trace_reader_ops {
	/*
	 * The callbacks only use what struct trace_event says for both
	 * readers (no ev->event, ev->payload), so mark's own traces may be
	 * read by the native reader (trace_native.h) instead of babeltrace2.
	 */
	bool native_ok;
	/*
	 * Draw the reading progress on stderr (events read, % of the stream
	 * bytes, ETA) about 4 times a second; erased at the end on a
	 * terminal, left as a last line otherwise.  Native reader only.  See
	 * trace_progress_wanted().
	 */
	bool progress;
	/*
	 * The event callback appends the arguments of (nearly) every event
	 * with trace_event_payload_append() in style payload_style.  The
	 * native reader on two threads may then write that text on its
	 * reading thread, ahead, while the callbacks are behind (the text of
	 * an argument depends on nothing but its bytes); the callback's call
	 * copies it.  Same bytes either way.
	 */
	bool payload_text;
	enum trace_value_style payload_style;
	/*
	 * The event callback drops the events that fail this --filter (with
	 * trace_event_filter_pass(); NULL: no filter).  The native reader on
	 * two threads then evaluates it on its reading thread for the events
	 * whose arguments' text it writes ahead (payload_text), and writes no
	 * text for those that fail it; trace_event_filter_pass() takes that
	 * result instead of evaluating it again.  Same output either way.
	 */
	const struct mark_filter *filter;
	/* Each event in time order.  Return non-zero to stop reading (trace_read returns it). */
	int (*event)(const struct trace_event *event, void *arg);
	/* Events the tracer lost (CTF packet events_discarded), as babeltrace2 reports them. */
	void (*discarded)(const struct trace_loss *loss, void *arg);
};

/*
 * Read every event of the CTF traces under `directory`: the directory itself
 * if it holds a `metadata` file, and every sub-directory (any depth up to 8)
 * that does, such as the pid-P/ traces of forked children, merged in time
 * order.  Returns 0 at the end, the callback's non-zero value if it stopped,
 * or -1 after printing on stderr what was wrong
 * ("mark: cannot read trace DIR: <babeltrace2's reasons>").
 *
 * Traces mark's tracer wrote (its metadata says tracer_name = "mark" and
 * has exactly the layout src/tracer/metadata.c writes) are read by the
 * native reader when ops->native_ok is set, with the same callbacks in the
 * same order; MARK_READER=bt2 in the environment forces libbabeltrace2,
 * MARK_READER=native refuses a trace the native reader cannot read (the
 * comparison tests use both).  Any other trace goes to libbabeltrace2.
 *
 * libbabeltrace2 is read in a forked child, and it is the child that
 * returns: it calls the callbacks and carries on with the rest of the
 * command, while the calling process waits and _exit()s with the child's
 * status (stdio is flushed before the fork; the caller must have no other
 * threads then).  If the child dies of a crash (SIGSEGV, SIGFPE, SIGABRT...),
 * the calling process says so and returns -1 itself; if it is killed from
 * outside (SIGPIPE, SIGINT...), the calling process dies of the same signal.
 */
int trace_read(const char *directory, const struct trace_reader_ops *ops, void *arg);

/*
 * Check `directory` before handing it to babeltrace2, so that the usual
 * mistakes get a plain message.  Returns 0 if it is a directory with at least
 * one trace (a `metadata` file) in it or under it, else prints the reason and
 * returns -1.
 */
int trace_check_directory(const char *directory);

/*
 * Whether a command shows its reading progress: when asked (--progress),
 * or when stderr is a terminal unless the command's output goes to that
 * terminal too (`output_on_stdout` and stdout is a terminal), where the
 * line would mix with the output.
 */
bool trace_progress_wanted(bool asked, bool output_on_stdout);

#endif
