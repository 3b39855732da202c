/*
 * Fuzz target for the --filter language (src/filter/filter.c): text from
 * the command line, MARK_FILTER and the agent protocol.
 *
 * Input: the expression up to the first NUL byte (or all of it), then
 * bytes that give each field the filter names a type and a value.  The
 * harness parses, and checks (abort on violation, reported as a crash):
 *   - a refusal says "column N: " with 1 <= N <= length + 1;
 *   - an accepted expression evaluates, with values of every type, without
 *     touching memory out of bounds (ASan/UBSan), and evaluates the same
 *     twice (no state).
 * Built as a libFuzzer-style target: afl-clang-fast -fsanitize=fuzzer
 * (tests/fuzz/run_filter.sh) or clang -fsanitize=fuzzer.
 */
#include "filter/filter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096)
		return 0;
	const uint8_t *nul = memchr(data, 0, size);
	size_t len = nul ? (size_t)(nul - data) : size;
	char *text = malloc(len + 1);
	if (!text)
		return 0;
	memcpy(text, data, len);
	text[len] = '\0';
	const uint8_t *rest = nul ? nul + 1 : data + size, *end = data + size;

	char err[256];
	struct mark_filter *f = mark_filter_parse(text, err, sizeof(err));
	if (!f) {
		unsigned long col = 0;
		if (strcmp(err, "out of memory") != 0 &&
		    (sscanf(err, "column %lu: ", &col) != 1 || col < 1 || col > len + 1)) {
			fprintf(stderr, "bad error message for \"%s\": %s\n", text, err);
			abort();
		}
		free(text);
		return 0;
	}
	/* Values: one type byte then 8 value bytes per field; strings point
	 * into the input (exactly their length: the evaluator must not read
	 * past str.len). */
	struct mark_filter_value vals[MARK_FILTER_MAX_FIELDS];
	for (unsigned k = 0; k < mark_filter_nfields(f); k++) {
		uint8_t t = rest < end ? *rest++ : 0;
		uint64_t v = 0;
		size_t n = (size_t)(end - rest) < 8 ? (size_t)(end - rest) : 8;
		memcpy(&v, rest, n);
		switch (t % 4) {
		case 0: vals[k].type = MARK_FILTER_INT; vals[k].i = (int64_t)v; break;
		case 1: vals[k].type = MARK_FILTER_UINT; vals[k].u = v; break;
		case 2: vals[k].type = MARK_FILTER_DOUBLE; memcpy(&vals[k].d, &v, 8); break;
		default: {
			size_t sl = (size_t)(t >> 2) <= (size_t)(end - rest) ? (size_t)(t >> 2) : (size_t)(end - rest);
			vals[k].type = MARK_FILTER_STRING;
			vals[k].str.s = (const char *)rest;
			vals[k].str.len = sl;
			rest += sl;
			n = 0;
		}
		}
		rest += n;
	}
	bool a = mark_filter_eval(f, vals), b = mark_filter_eval(f, vals);
	if (a != b)
		abort();
	mark_filter_free(f);
	free(text);
	return 0;
}
