/*
 * Turning babeltrace2 field values into text (`mark view`) and JSON
 * (`mark export`); the string buffer and escaping are in text.h.
 */
#ifndef MARK_CLI_TRACE_VALUE_H
#define MARK_CLI_TRACE_VALUE_H

#include <babeltrace2/babeltrace.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "text.h"

/*
 * Append one field value.
 *   TRACE_VALUE_TEXT: integers in their preferred base (hex as 0x...), strings
 *     quoted with C escapes, structures as { a = 1, b = 2 }, arrays as [ 1, 2 ].
 *   TRACE_VALUE_JSON: a JSON value; hex integers become "0x..." strings (JSON
 *     numbers lose precision beyond 2^53, and the hex is what the user wrote),
 *     non-finite doubles become strings.
 */
/*
 *   TRACE_VALUE_OTLP: an OpenTelemetry AnyValue in OTLP/JSON
 *     ({"intValue": "-3"}, {"doubleValue": 0.5}, {"stringValue": "x"}):
 *     decimal integers within int64 are intValue (a decimal string, as
 *     OTLP/JSON writes 64-bit integers); integers shown in another base
 *     (%p, %x: "0x...") or beyond int64 are stringValue of the JSON text;
 *     a %c a one-character stringValue; non-finite doubles "NaN",
 *     "Infinity", "-Infinity"; arrays arrayValue, structures kvlistValue.
 *     A payload is the attributes array [{"key": ..., "value": ...}, ...].
 */
enum trace_value_style { TRACE_VALUE_TEXT, TRACE_VALUE_JSON, TRACE_VALUE_OTLP };
void trace_value_append(struct strbuf *sb, const bt_field *field, enum trace_value_style style);

/*
 * Append the members of a payload structure:
 *   TEXT: "name=value name=value"   JSON: {"name": value, ...}
 *   OTLP: [{"key": "name", "value": ANYVALUE}, ...]
 * A NULL or empty payload appends nothing (TEXT), {} (JSON) or [] (OTLP).
 */
void trace_payload_append(struct strbuf *sb, const bt_field *payload, enum trace_value_style style);

/*
 * The members of a payload structure with their types (trace_event_args_each
 * in trace_reader.h): selectors skipped as above, composite values as JSON
 * text in scratch.
 */
struct trace_arg;
void trace_payload_args_each(const bt_field *payload, void (*fn)(const struct trace_arg *a, void *ctx), void *ctx,
			     struct strbuf *scratch);

/*
 * The same text for values the native reader (trace_native.c) decoded
 * itself: an integer (`raw` holds a signed value sign-extended to 64 bits;
 * base 2, 8, 10 or 16), a double, a %c, a string.
 */
void trace_value_append_integer(struct strbuf *sb, uint64_t raw, bool is_signed, unsigned base,
				enum trace_value_style style);
void trace_value_append_real(struct strbuf *sb, double d, enum trace_value_style style);
void trace_value_append_char(struct strbuf *sb, unsigned char c, enum trace_value_style style);
void trace_value_append_string(struct strbuf *sb, const char *text, enum trace_value_style style);
/*
 * A %s the tracer recorded as a NULL pointer (text: NULL, unquoted, so
 * never the string "(null)"; JSON null; OTLP's empty AnyValue), and one it
 * cut (`text` is its first bytes and "..."; the text style prints the
 * kept bytes quoted and the "..." after the closing quote, so that a
 * string ending in "..." of its own is not taken for a cut one).
 */
void trace_value_append_null(struct strbuf *sb, enum trace_value_style style);
/*
 * For a variant of mark's tagged %s (src/tracer/metadata.c: options
 * "empty", "text", "null", "truncated", every one a string): 'n' when it
 * holds a NULL, 'c' when a cut string, else 0 (and 0 for every other
 * variant, an older mark's two-option one included).
 */
char trace_value_mark_string_tag(const bt_field *variant);
void trace_value_append_cut_string(struct strbuf *sb, const char *text, enum trace_value_style style);

#endif
