/* Field values as text and JSON: see trace_value.h. */
#include "trace_value.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void add_unsigned(struct strbuf *sb, uint64_t v, bt_field_class_integer_preferred_display_base base,
			 enum trace_value_style style)
{
	const char *q = style == TRACE_VALUE_JSON ? "\"" : "";
	switch (base) {
	case BT_FIELD_CLASS_INTEGER_PREFERRED_DISPLAY_BASE_HEXADECIMAL:
		strbuf_addf(sb, "%s0x%" PRIx64 "%s", q, v, q);
		break;
	case BT_FIELD_CLASS_INTEGER_PREFERRED_DISPLAY_BASE_OCTAL:
		strbuf_addf(sb, "%s0%" PRIo64 "%s", q, v, q);
		break;
	case BT_FIELD_CLASS_INTEGER_PREFERRED_DISPLAY_BASE_BINARY: {
		char bits[72];
		int n = 0;
		do {
			bits[n++] = (char)('0' + (v & 1));
			v >>= 1;
		} while (v && n < 64);
		strbuf_addf(sb, "%s0b", q);
		while (n--)
			strbuf_add(sb, &bits[n], 1);
		strbuf_addf(sb, "%s", q);
		break;
	}
	default:
		strbuf_addf(sb, "%" PRIu64, v);
	}
}

static void add_double(struct strbuf *sb, double d, enum trace_value_style style)
{
	if (!isfinite(d)) {
		strbuf_addf(sb, style == TRACE_VALUE_JSON ? "\"%g\"" : "%g", d);
		return;
	}
	/* The shortest of %g and %.17g that reads back as the same double. */
	char text[40];
	snprintf(text, sizeof(text), "%g", d);
	if (strtod(text, NULL) != d)
		snprintf(text, sizeof(text), "%.17g", d);
	strbuf_addf(sb, "%s", text);
}

static void add_enum_labels(struct strbuf *sb, const bt_field *field, bool is_signed, enum trace_value_style style)
{
	bt_field_class_enumeration_mapping_label_array labels;
	uint64_t count = 0;
	bt_field_enumeration_get_mapping_labels_status st =
		is_signed ? bt_field_enumeration_signed_get_mapping_labels(field, &labels, &count)
			  : bt_field_enumeration_unsigned_get_mapping_labels(field, &labels, &count);
	if (st != BT_FIELD_ENUMERATION_GET_MAPPING_LABELS_STATUS_OK || count == 0)
		return;
	if (style == TRACE_VALUE_TEXT) {
		strbuf_add(sb, " (", 2);
		for (uint64_t i = 0; i < count; i++)
			strbuf_addf(sb, "%s%s", i ? ", " : "", labels[i]);
		strbuf_add(sb, ")", 1);
	}
}

void trace_value_append(struct strbuf *sb, const bt_field *field, enum trace_value_style style)
{
	bt_field_class_type t = bt_field_get_class_type(field);
	const bt_field_class *fc = bt_field_borrow_class_const(field);
	const bool json = style == TRACE_VALUE_JSON;

	if (t == BT_FIELD_CLASS_TYPE_BOOL) {
		strbuf_addf(sb, "%s", bt_field_bool_get_value(field) ? "true" : "false");
	} else if (t == BT_FIELD_CLASS_TYPE_BIT_ARRAY) {
		strbuf_addf(sb, json ? "\"0x%" PRIx64 "\"" : "0x%" PRIx64, bt_field_bit_array_get_value_as_integer(field));
	} else if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER)) {
		uint64_t v = bt_field_integer_unsigned_get_value(field);
		add_unsigned(sb, v, bt_field_class_integer_get_preferred_display_base(fc), style);
		if (t == BT_FIELD_CLASS_TYPE_UNSIGNED_ENUMERATION)
			add_enum_labels(sb, field, false, style);
	} else if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_SIGNED_INTEGER)) {
		int64_t v = bt_field_integer_signed_get_value(field);
		bt_field_class_integer_preferred_display_base base = bt_field_class_integer_get_preferred_display_base(fc);
		if (base == BT_FIELD_CLASS_INTEGER_PREFERRED_DISPLAY_BASE_DECIMAL)
			strbuf_addf(sb, "%" PRId64, v);
		else
			/* A non-decimal signed value shows its two's-complement bits, as printf("%x") does. */
			add_unsigned(sb, (uint64_t)v, base, style);
		if (t == BT_FIELD_CLASS_TYPE_SIGNED_ENUMERATION)
			add_enum_labels(sb, field, true, style);
	} else if (t == BT_FIELD_CLASS_TYPE_SINGLE_PRECISION_REAL) {
		add_double(sb, bt_field_real_single_precision_get_value(field), style);
	} else if (t == BT_FIELD_CLASS_TYPE_DOUBLE_PRECISION_REAL) {
		add_double(sb, bt_field_real_double_precision_get_value(field), style);
	} else if (t == BT_FIELD_CLASS_TYPE_STRING) {
		const char *s = bt_field_string_get_value(field);
		if (json)
			strbuf_add_json_string(sb, s ? s : "");
		else
			strbuf_add_c_string(sb, s ? s : "");
	} else if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_ARRAY)) {
		uint64_t n = bt_field_array_get_length(field);
		strbuf_add(sb, "[", 1);
		for (uint64_t i = 0; i < n; i++) {
			strbuf_add(sb, i ? ", " : (json ? "" : " "), i ? 2 : (json ? 0 : 1));
			trace_value_append(sb, bt_field_array_borrow_element_field_by_index_const(field, i), style);
		}
		strbuf_add(sb, json || n == 0 ? "]" : " ]", json || n == 0 ? 1 : 2);
	} else if (t == BT_FIELD_CLASS_TYPE_STRUCTURE) {
		uint64_t n = bt_field_class_structure_get_member_count(fc);
		strbuf_add(sb, "{", 1);
		for (uint64_t i = 0; i < n; i++) {
			const char *name = bt_field_class_structure_member_get_name(
				bt_field_class_structure_borrow_member_by_index_const(fc, i));
			if (i)
				strbuf_add(sb, ", ", 2);
			else if (!json)
				strbuf_add(sb, " ", 1);
			if (json) {
				strbuf_add_json_string(sb, name);
				strbuf_add(sb, ": ", 2);
			} else {
				strbuf_addf(sb, "%s = ", cli_text(name));
			}
			trace_value_append(sb, bt_field_structure_borrow_member_field_by_index_const(field, i), style);
		}
		strbuf_add(sb, json || n == 0 ? "}" : " }", json || n == 0 ? 1 : 2);
	} else if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_OPTION)) {
		const bt_field *inner = bt_field_option_borrow_field_const(field);
		if (inner)
			trace_value_append(sb, inner, style);
		else
			strbuf_addf(sb, json ? "null" : "(none)");
	} else if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_VARIANT)) {
		trace_value_append(sb, bt_field_variant_borrow_selected_option_field_const(field), style);
	} else {
		strbuf_addf(sb, json ? "null" : "(?)");
	}
}

void trace_payload_append(struct strbuf *sb, const bt_field *payload, enum trace_value_style style)
{
	if (!payload || bt_field_get_class_type(payload) != BT_FIELD_CLASS_TYPE_STRUCTURE) {
		if (style == TRACE_VALUE_JSON)
			strbuf_add(sb, "{}", 2);
		return;
	}
	const bt_field_class *fc = bt_field_borrow_class_const(payload);
	uint64_t n = bt_field_class_structure_get_member_count(fc);
	if (style == TRACE_VALUE_JSON)
		strbuf_add(sb, "{", 1);
	for (uint64_t i = 0; i < n; i++) {
		const char *name = bt_field_class_structure_member_get_name(
			bt_field_class_structure_borrow_member_by_index_const(fc, i));
		const bt_field *f = bt_field_structure_borrow_member_field_by_index_const(payload, i);
		if (style == TRACE_VALUE_JSON) {
			if (i)
				strbuf_add(sb, ", ", 2);
			strbuf_add_json_string(sb, name);
			strbuf_add(sb, ": ", 2);
		} else {
			strbuf_addf(sb, "%s%s=", i ? " " : "", cli_text(name));
		}
		trace_value_append(sb, f, style);
	}
	if (style == TRACE_VALUE_JSON)
		strbuf_add(sb, "}", 1);
}
