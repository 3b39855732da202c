/*
 * The built-in tracer's control interface inside libmark: the installed
 * <mark/tracer.h> (used by programs, the CLI and the benchmarks) and what
 * only libmark itself uses.  Used by the environment configuration
 * (MARK_TRACE=...) and by the control agent (`mark record --pid`,
 * `mark snapshot`).
 *
 * One tracing session per process at a time.  All functions are safe to
 * call from any thread except a signal handler; they never crash or stop
 * the host program: on bad input they return -errno with mark_last_error()
 * set to a one-line explanation.
 */
#ifndef MARK_TRACER_H
#define MARK_TRACER_H

/* All of it is public: sessions, statistics, recovery, the parsers. */
#include <mark/tracer.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Chunks (docs/tracer.md), 0 = off: max_size keeps at most this many bytes
 * of sealed chunks plus the live one, deleting the oldest; rotate_size /
 * rotate_ms cut a chunk after this many bytes / ms.  Kept out of the
 * installed struct mark_trace_config so that programs built against it
 * (positional initialisers, -Wextra) are unaffected; MARK_MAX_SIZE,
 * MARK_ROTATE and the agent's TRACE_START reach it.
 */
struct tracer_chunk_limits {
	uint64_t max_size;
	uint64_t rotate_size;
	uint64_t rotate_ms;
	/* How a refusal names the settings: the variables and their text for
	 * MARK_ROTATE/MARK_MAX_SIZE; NULL names `mark record`'s options
	 * (--rotate, --max-size), which reach the agent's TRACE_START. */
	const char *rotate_name, *rotate_text;
	const char *max_size_name, *max_size_text;
};

/*
 * Snapshot triggers (docs/tracer.md "Triggers"; overwrite mode only):
 * `spec` is "GLOB" or "GLOB if EXPR" (NULL: none); an event it matches
 * makes the consumer write DIR/snapshot-N/pid-P/, at most max_snapshots
 * of them (0: the default, TRACER_DEFAULT_MAX_SNAPSHOTS), at least
 * interval_ms apart.  MARK_SNAPSHOT_ON, MARK_MAX_SNAPSHOTS,
 * MARK_SNAPSHOT_INTERVAL and the agent's TRACE_START reach it.
 */
struct tracer_trigger_config {
	const char *spec;
	uint64_t max_snapshots;
	uint64_t interval_ms;
};
#define TRACER_DEFAULT_MAX_SNAPSHOTS 100
#define TRACER_MAX_SNAPSHOTS MARK_TRACE_MAX_SNAPSHOTS

/* mark_tracer_start() with chunk limits (NULL: none), a --filter
 * expression (NULL: none) and a snapshot trigger (NULL: none). */
__attribute__((visibility("hidden"))) int tracer_start_full(const struct mark_trace_config *config,
							   const struct tracer_chunk_limits *limits,
							   const char *filter,
							   const struct tracer_trigger_config *trigger);

/*
 * The running session, if MARK_TRACE started it (not the API, not a
 * controller): its directory as the session made it absolute when it
 * started (the environment's text may be relative to a working directory
 * the program has left since) into dir[0..len), and its mode.  false: no
 * such session, or the directory does not fit.  For the agent's INFO,
 * whose DIR lets `mark stop` name the directory mark_tracer_stop_directory()
 * compares.
 */
__attribute__((visibility("hidden"))) bool tracer_env_session(char *dir, size_t len, enum mark_trace_mode *mode);

/*
 * mark_tracer_stop() (directory NULL) or mark_tracer_stop_directory(), and
 * with `final` the stopped session's last counts (events, lost, bytes
 * written: what its .mark-stats and trace hold; active 0).  For the
 * agent's reply to `mark stop`: mark_tracer_get_stats() before the stop
 * misses the events fired until the disarm, and after it reads nothing.
 */
__attribute__((visibility("hidden"))) int tracer_stop_counted(const char *directory,
							      struct mark_trace_stats *final);

#endif
