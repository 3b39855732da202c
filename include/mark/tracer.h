/*
 * <mark/tracer.h> - the built-in tracer's public API (docs/tracer.md).
 *
 * Record markers into a CTF trace from inside the program, as MARK_TRACE
 * and `mark record` do: start a session (arm the globs, connect the
 * tracer's probe), stop it (disarm what it armed, flush, finish the trace),
 * take a snapshot of an overwrite-mode session, read its statistics, and
 * complete the trace of a process that died while recording.
 *
 * One session per process at a time.  Every function is safe to call from
 * any thread except a signal handler; none crashes or stops the program:
 * bad input returns -errno with mark_last_error() (<mark/mark.h>) set to a
 * one-line explanation.
 */
#ifndef MARK_PUBLIC_TRACER_H
#define MARK_PUBLIC_TRACER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default)

enum mark_trace_mode {
	MARK_TRACE_DISCARD = 0,    /* full buffer: drop new events, count them      */
	MARK_TRACE_OVERWRITE = 1,  /* flight recorder: keep the newest events        */
	MARK_TRACE_BLOCK = 2       /* never lose: the producer waits                 */
};

/* Bytes per buffer (one buffer per thread and signal nesting level). */
#define MARK_TRACE_BUFFER_DEFAULT (2u << 20)
#define MARK_TRACE_BUFFER_MIN 4096u
#define MARK_TRACE_BUFFER_MAX (1ull << 32)
/* The most snapshots one --snapshot-on trigger (MARK_SNAPSHOT_ON) may take
 * in a session (its --max-snapshots / MARK_MAX_SNAPSHOTS). */
#define MARK_TRACE_MAX_SNAPSHOTS 1000000u

struct mark_trace_config {
	const char *directory;        /* CTF trace directory (created if missing) */
	enum mark_trace_mode mode;
	size_t buffer_size;           /* bytes per buffer; 0 = default            */
	const char *const *globs;     /* markers to arm and record; NULL-terminated;
					 NULL = every marker                       */
};

struct mark_trace_stats {
	uint64_t events;              /* recorded                                  */
	uint64_t lost;                /* discarded (discard mode) or overwritten    */
	uint64_t bytes_written;       /* to stream files                            */
	int active;                   /* a session is running                        */
};

/* Start a session: arm the globs, connect the tracer probe, start the consumer. */
int mark_tracer_start(const struct mark_trace_config *config);
/*
 * The same, recording only the events whose fields pass `filter` (the
 * `mark record --filter` language, docs/commands.md "Filters"; NULL or ""
 * = all).  A bad expression starts nothing: -EINVAL, mark_last_error()
 * giving its column.  (A function of its own rather than a field of
 * struct mark_trace_config, so that programs initialising that struct
 * positionally keep compiling with -Wextra.)
 */
int mark_tracer_start_filter(const struct mark_trace_config *config, const char *filter);
/* Stop: disarm what the session armed, disconnect, flush every buffer, finish
 * the trace; the sessions of processes forked meanwhile stop too. */
int mark_tracer_stop(void);
/*
 * mark_tracer_stop() if the running session writes into `directory` (the
 * directory it was started with, absolute: MARK_TRACE for a session the
 * environment started); -ESRCH if it writes elsewhere, -ENOENT if none
 * runs, -EINVAL for a NULL directory.  The agent uses it to stop a session it did not start, for
 * `mark record -d` (the caller names the directory it gave, so that no
 * other recording is stopped by mistake).
 */
int mark_tracer_stop_directory(const char *directory);
/*
 * Overwrite mode: write the current buffer contents as a CTF trace into
 * `directory` (created 0700 if missing; it must be owned by this euid and
 * writable by nobody else).  A directory that holds anything is refused
 * (-ENOTEMPTY) unless flags has MARK_SNAPSHOT_FORCE; even then only the
 * files the tracer writes (metadata, stream-N, .mark-stats, .mark-ring-N,
 * pid-N directories holding only those) are removed, never through a link.
 * mark_tracer_snapshot(d) is mark_tracer_snapshot_into(d, 0).
 */
#define MARK_SNAPSHOT_FORCE 1u
int mark_tracer_snapshot(const char *directory);
int mark_tracer_snapshot_into(const char *directory, unsigned flags);
void mark_tracer_get_stats(struct mark_trace_stats *stats);
/*
 * Replace the running session's filter while the program runs (the agent's
 * `mark enable PID GLOB --filter`): events fired after the call returns
 * are judged by `expr` (NULL or "": no filter).  A bad expression changes
 * nothing: -EINVAL, mark_last_error() giving its column.  -ENOENT if no
 * session runs.
 */
int mark_tracer_set_filter(const char *expr);

/*
 * Crash recovery.  When a traced process dies without stopping its session
 * (SIGKILL, SIGSEGV, _exit, exec), its events are still in the buffer files
 * (.mark-ring-N) of its trace directory.  mark_trace_recover() turns them
 * into packets: it cuts a half-written last packet, appends every event
 * recorded before death, records the lost counts, marks the statistics
 * RECOVERED and removes the buffer files.  It also recovers the sub-traces
 * of forked children (DIR/pid-P).  Idempotent: a complete trace is left
 * as it is.  Call it after the process has exited (`mark record` does).
 * Returns the number of events recovered (>= 0), or -errno: -EBUSY if the
 * process still runs, -ENOENT if DIR holds no mark trace.
 */
int mark_trace_recover(const char *directory);
/*
 * The same for the directory `name` inside the directory dirfd, opened
 * without following a symbolic link ("." for dirfd itself); messages name
 * it `shown_as` (NULL: `name`).  For a caller that holds the trace's parent
 * open because someone else may rename what is in it: root completing the
 * trace of another user's process, which could otherwise swap DIR/pid-P
 * for a link to a directory of root's.  -ENOTDIR if `name` is a link or
 * not a directory.
 */
int mark_trace_recover_at(int dirfd, const char *name, const char *shown_as);
/*
 * Whether process `pid` can still write its trace: it exists and is not a
 * zombie (a process killed by SIGKILL stays a zombie until its parent reaps
 * it, but runs no more code).  When in doubt it says running: pid <= 0 (not
 * one process), or a process whose /proc entry we may not read (hidepid=).
 * Recover a trace once this says 0.
 */
int mark_process_running(int pid);

/* Parse "discard|overwrite|block" (MARK_MODE); -EINVAL otherwise. */
int mark_trace_mode_parse(const char *text, enum mark_trace_mode *mode);
/* Parse "4096", "64k", "16M", "1G" (MARK_BUFFER); -EINVAL/-ERANGE otherwise.
 * The tracer accepts MARK_TRACE_BUFFER_MIN to MARK_TRACE_BUFFER_MAX. */
int mark_size_parse(const char *text, size_t *bytes);
/* Parse a chunk rotation (MARK_ROTATE, --rotate): a size as above ("64M")
 * into *bytes, or a duration "500ms", "30s", "10min", "1h" into *ms; the
 * other is set to 0.  -EINVAL/-ERANGE otherwise. */
int mark_rotate_parse(const char *text, uint64_t *bytes, uint64_t *ms);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif

#endif
