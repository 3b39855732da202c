/*
 * `mark export --format perfetto`: a native Perfetto protobuf trace
 * (cli/export_perfetto.c; the mapping is in docs/export.md).
 */
#ifndef MARK_CLI_EXPORT_PERFETTO_H
#define MARK_CLI_EXPORT_PERFETTO_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct pairs;

struct export_perfetto_counts {
	uint64_t events;             /* events of the trace written                */
	uint64_t lost;               /* events the tracer lost (counted reports)   */
};

/*
 * Read the trace in `dir` and write it to `out` as a Perfetto Trace.
 * `pairs` (pairs_new) says which events begin and end slices; its
 * callbacks are taken over for the call (pairs_set_ops).  Returns 0, or 1
 * after printing what went wrong; the caller closes `out`.
 */
int export_perfetto(const char *dir, FILE *out, struct pairs *pairs, bool progress,
		    struct export_perfetto_counts *counts);

#endif
