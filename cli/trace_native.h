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
void trace_native_args_each(const struct trace_native_event *ev, void (*fn)(const struct trace_arg *a, void *ctx),
			    void *ctx);
const char **trace_native_class_names(const struct trace_native_event *ev, size_t *count);

#endif
