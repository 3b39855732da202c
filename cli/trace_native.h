/*
 * The native reader of mark's own CTF traces: see trace_native.c.
 *
 * Used by trace_read() (trace_reader.h); the callbacks and their order are
 * the ones the libbabeltrace2 path gives (src.ctf.fs -> flt.utils.muxer),
 * so `mark view/stats` print the same bytes whichever reader ran.
 */
#ifndef MARK_CLI_TRACE_NATIVE_H
#define MARK_CLI_TRACE_NATIVE_H

#include "trace_reader.h"

#include <stddef.h>

/* Returned by trace_native_read when a trace is not one it reads. */
#define TRACE_NATIVE_NOT_MINE (-2)

/*
 * Read the traces at paths[0..n) (each a directory with a `metadata` file;
 * `directory` is what the user named, for messages).  Returns
 * TRACE_NATIVE_NOT_MINE before any callback if one of them is not exactly
 * a mark trace (the caller then uses libbabeltrace2), else as trace_read.
 */
int trace_native_read(char *const *paths, size_t n, const char *directory, const struct trace_reader_ops *ops,
		      void *arg);

/*
 * `mark view --follow`: print the events of the mark trace(s) in
 * `directory` as they reach the files, until the recording ends or
 * *stop is set (see the comment in trace_native.c for the order given).
 * Returns 0, the event callback's non-zero value, 1 if some stream held
 * bad data (said; the others were read on), or -1 on error (said).
 */
#include <signal.h>
struct trace_follow_opts {
	int64_t holdback_ns;              /* how long a message waits for older ones   */
	volatile sig_atomic_t *stop;      /* set by a signal handler: end now           */
	int (*flush)(void *arg);          /* after each round: write what was printed   */
	uint64_t *late;                   /* events printed out of order (arrived late) */
	size_t *traces;                   /* traces (processes, chunks) read            */
	/* Has the recording of the process whose trace is at path ended
	 * (1), does it run (0), or has it no statistics yet (-1)?  (From its
	 * .mark-stats: liveline.h; a callback so that this reader links alone.) */
	int (*finished)(const char *path);
};
int trace_native_follow(const char *directory, const struct trace_reader_ops *ops, void *arg,
			const struct trace_follow_opts *fo);

void trace_native_payload_append(struct strbuf *sb, const struct trace_native_event *ev,
				 enum trace_value_style style);
size_t trace_native_payload_count(const struct trace_native_event *ev);
bool trace_native_has_field(const struct trace_native_event *ev, const char *name);
bool trace_native_field_key(struct strbuf *sb, const struct trace_native_event *ev, const char *name);
bool trace_native_field_append(struct strbuf *sb, const struct trace_native_event *ev, const char *name,
			       enum trace_value_style style);
/* The value of field `name` for a --filter (src/filter); false if the event has none. */
struct mark_filter_value;
bool trace_native_field_value(const struct trace_native_event *ev, const char *name,
			      struct mark_filter_value *out);
/* Does the event pass the --filter f (as trace_event_filter_pass)?  Taken
 * from the reading thread when it evaluated f ahead (trace_reader_ops.filter). */
struct mark_filter;
bool trace_native_filter_pass(const struct trace_native_event *ev, const struct mark_filter *f);
void trace_native_args_each(const struct trace_native_event *ev, void (*fn)(const struct trace_arg *a, void *ctx),
			    void *ctx);
const char **trace_native_class_names(const struct trace_native_event *ev, size_t *count);

/* NAME is a triggered snapshot's directory, `snapshot-N`: the readers skip
 * those inside a trace directory (copies of events the trace holds). */
bool trace_is_snapshot_dir(const char *name);

/*
 * The traces below the directory dfd, depth first, as every reader looks
 * for them: a directory holding a regular file `metadata` (not through a
 * link) is a trace; sub-directories are opened relative to their parent
 * with O_NOFOLLOW, at most `levels` levels below dfd; dot-directories and
 * snapshot-N are skipped.  dfd itself counts when `self` is true.
 * rel[0..used) is dfd's path relative to where the walk began (no
 * trailing '/'), in a buffer of `cap` bytes: found(ctx, rel) gets each
 * trace's relative path ("" for the beginning) and returns true to stop.
 * Returns true if found() stopped the walk.  dfd stays open.
 */
bool trace_walk(int dfd, bool self, int levels, char *rel, size_t cap, size_t used,
		bool (*found)(void *ctx, const char *rel), void *ctx);

/*
 * A descriptor (O_RDONLY | O_DIRECTORY | O_CLOEXEC) of the trace directory
 * `path` that trace_walk() found under `directory`: `directory` is opened
 * as the user named it, and every component below it relative to its
 * parent with O_NOFOLLOW, so that a directory swapped for a symbolic link
 * since the walk is refused, not followed (root reading a user's trace).
 * -1 with errno (EINVAL: `path` is not below `directory`).
 */
int trace_dir_open(const char *directory, const char *path);

#endif
