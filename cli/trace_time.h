/* Formatting trace times and durations for the trace commands. */
#ifndef MARK_CLI_TRACE_TIME_H
#define MARK_CLI_TRACE_TIME_H

#include "trace_value.h"

#include <stdint.h>

/* "2026-11-23 07:49:04.123456789": ns since the Unix epoch, local time or UTC. */
void trace_time_append_wall(struct strbuf *sb, int64_t ns, int utc);
/* "12.000345678": seconds with 9 decimals (negative values keep their sign). */
void trace_time_append_seconds(struct strbuf *sb, int64_t ns);
/*
 * The same two written at p, for a caller that reserved TRACE_TIME_PUT_MAX
 * bytes there (`mark view`: one reserve for the whole start of a line);
 * they return the end of the text (no NUL; bytes after it may have been
 * written over, within the reserve).
 */
#define TRACE_TIME_PUT_MAX (64 + STRBUF_PAD + 10)
char *trace_time_put_wall(char *p, int64_t ns, int utc);
char *trace_time_put_seconds(char *p, int64_t ns);
/* A duration in the largest unit that keeps it >= 1, exact to the ns:
 * "850ns", "12.345us", "1.500000ms", "3.000000001s". */
void trace_time_append_duration(struct strbuf *sb, uint64_t ns);

#endif
