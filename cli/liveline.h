/*
 * Live statistics of a trace being written, and the one-line terminal
 * display of them, shared by `mark record -- CMD` and `mark record --pid`.
 *
 * The numbers come from the `.mark-stats` files the tracer keeps, one per
 * traced process (src/tracer/trace_format.h): DIR/.mark-stats and
 * DIR/pid-P/.mark-stats (the tracer writes each process's trace, the first
 * one's included, in DIR/pid-P/; a top-level one is read too).  They are
 * read with the seqlock protocol that header describes, from another
 * process, so nothing here can disturb the traced program.  The traced
 * user owns those files and directories, and mark may run as root: the
 * files and pid-P/ directories are opened relative to DIR's descriptor and
 * never through a symbolic link (a link, or anything but a regular file
 * for .mark-stats, is skipped as if absent; DIR itself is the caller's
 * choice and may be a link).
 *
 * Typical use:
 *     struct liveline *line = liveline_start(dir);    // NULL if stderr is not a terminal
 *     ... wait for the program ...
 *     liveline_stop(line);                             // erases the line
 *     live_stats_read(dir, &totals);                   // exact once the tracer stopped
 */
#ifndef MARK_CLI_LIVELINE_H
#define MARK_CLI_LIVELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Totals over DIR/.mark-stats and every DIR/pid-P/.mark-stats. */
struct live_stats {
	uint64_t events;          /* recorded into buffers                         */
	uint64_t lost;            /* discarded / overwritten / dropped             */
	uint64_t events_written;  /* written to stream files                       */
	uint64_t bytes_written;   /* bytes of all stream files                     */
	uint64_t snapshots;       /* triggered snapshots written (DIR/snapshot-N)   */
	uint64_t triggers_busy, triggers_over_max, triggers_in_interval, triggers_failed;
	uint64_t snapshot_hold_lost;   /* lost while a snapshot's buffer was held */
				  /* triggers that wrote no snapshot, by reason    */
	unsigned processes;       /* .mark-stats files read                        */
	unsigned unfinished;      /* of those, not STOPPED or RECOVERED (running, or
				     died without its trace being recovered yet)  */
};

/*
 * Read the totals now.  Returns 0, or -1 if DIR has no readable .mark-stats
 * at all (the program has not started tracing, or never loaded libmark).
 * Files with a wrong magic or version are skipped, not trusted.
 */
int live_stats_read(const char *dir, struct live_stats *out);
/* The same for DIR/.mark-stats alone (one process, no pid-P/ children). */
int live_stats_read_one(const char *dir, struct live_stats *out);
/*
 * The same two with DIR given as directory NAME inside the directory
 * dirfd, opened without following a symbolic link ("." for dirfd itself):
 * for a caller that holds DIR open because someone else may rename what
 * is in it (root recording another user's processes).
 */
int live_stats_read_at(int dirfd, const char *name, struct live_stats *out);
int live_stats_read_one_at(int dirfd, const char *name, struct live_stats *out);
/*
 * "<prefix>N snapshots written ...": the snapshot triggers' line (with
 * the triggers that wrote none and why), if a trigger fired; else, when
 * `spec` (the --snapshot-on the recording was given, NULL: not known) is
 * set, a line saying it never fired and what to check.
 */
void live_print_snapshots(FILE *out, const char *prefix, const char *dir, const struct live_stats *s,
			  const char *spec);

/* Events written per marker, summed by name over all processes. */
struct live_marker_count {
	char name[112];           /* as in the CTF metadata; cut to 111 bytes   */
	uint64_t events;
};
/*
 * A malloc'ed array (free() it) sorted by count, largest first, in *out and
 * its length in *n.  Returns 0, or -1 as live_stats_read (or out of memory).
 */
int live_stats_markers(const char *dir, struct live_marker_count **out, size_t *n);
/* The same for the directory dirfd (see live_stats_read_at). */
int live_stats_markers_at(int dirfd, struct live_marker_count **out, size_t *n);
/*
 * Print the "marker  events" table of a summary to `out`: the markers that
 * fired (count > 0) of an array sorted as live_stats_markers() returns it.
 */
void live_print_marker_counts(FILE *out, const struct live_marker_count *markers, size_t n);

/*
 * Is the trace in DIR incomplete?  A mark trace is complete when every
 * process's .mark-stats (DIR/ and DIR/pid-P/) says STOPPED or RECOVERED
 * and no ring file (.mark-ring-N) is left: a process that died without
 * stopping its tracer leaves both behind, and its last events are then
 * only in the rings until `mark recover DIR` writes them.  A directory
 * without .mark-stats (another tracer's trace) is not judged.
 */
struct live_incomplete {
	unsigned rings;           /* .mark-ring-N files left                        */
	unsigned unfinished;      /* .mark-stats not STOPPED/RECOVERED                */
	unsigned running;         /* of those, processes that still run             */
	int running_pid;          /* one of them, for the message                     */
};
/* Returns 1 (and fills *out) if incomplete, else 0. */
int live_trace_incomplete(const char *dir, struct live_incomplete *out);
/*
 * If the trace in DIR is incomplete, print the one line that says so and
 * what to do ("mark: the trace in DIR is incomplete (...): ...; run
 * `mark recover DIR` ...") to `out`, without its "mark: " prefix when
 * `bare` (a line of `mark stats`' report), and return true.
 */
bool live_warn_incomplete(FILE *out, const char *dir, bool bare);

/*
 * Events the tracer counted that the trace in DIR does not hold, neither
 * as events nor as losses: its packets could not be written (a full disk
 * or quota), so the losses they were to report are known only to the
 * statistics files.  `in_trace` is what the caller read from the trace:
 * every event (before any filter), every loss, and the events and losses
 * of chunks deleted under --max-size.  Compared with the sum of
 * events_written + lost of every .mark-stats (DIR/ and DIR/pid-P/), and
 * only when each says STOPPED or RECOVERED (counts are exact then; a
 * trace still recording or not recovered is live_warn_incomplete's case);
 * 0 when they agree, as they do whenever the stream files could be
 * written, or when DIR is one process's directory whose chunks lie beside
 * it (pid-P.chunk-K/, not part of DIR).  The files belong to the traced
 * user: a value they made up can make this line say so, nothing more.
 */
uint64_t live_stats_unrecorded(const char *dir, uint64_t in_trace);
/*
 * If live_stats_unrecorded() is not 0, print "N more events lost that the
 * trace could not record ..." (with "mark: " unless `bare`) and return it.
 */
uint64_t live_warn_unrecorded(FILE *out, const char *dir, bool bare, uint64_t in_trace);
/*
 * Events in chunks the tracer deleted under --max-size: the sum of the
 * DIR/pid-P/.mark-chunks files (src/tracer/chunks.c) in DIR itself (`mark
 * stats DIR/pid-P`) and below it, at most 8 levels deep: events, the
 * losses those chunks' packets reported (format 2), and chunks.  A chunk
 * being deleted when the process died (deleting_chunk K) and still visible
 * as pid-P.chunk-K beside pid-P is still part of the trace: its counts are
 * taken back out.  The files are untrusted input: opened relative to the
 * directory, never through a link, only regular files, at most 255 bytes
 * read, and a malformed file counts nothing.  For `in_trace` above.
 */
struct live_rotated {
	uint64_t events, lost, chunks;
};
struct live_rotated live_rotated_read(const char *dir);
/*
 * After a whole trace was read (`mark view` without --filter, `mark
 * export`): live_warn_unrecorded() on stderr, with `in_trace` = the events
 * and losses read plus those of the deleted chunks.
 */
void live_warn_unrecorded_after_read(const char *dir, uint64_t events, uint64_t lost);

/*
 * Start redrawing, about 4 times a second on stderr, the line
 *     mark: 1234567 events (345678/s), 12 lost, 12.3 MB written
 * from a thread of its own.  Returns NULL, and draws nothing, when stderr is
 * not a terminal or the thread cannot start (the line is a convenience).
 */
struct liveline *liveline_start(const char *dir);
/* The same for the directory dirfd (see live_stats_read_at). */
struct liveline *liveline_start_at(int dirfd);
/* Stop the thread and erase the line.  NULL is accepted. */
void liveline_stop(struct liveline *line);

#endif
