/*
 * A UUID's text form, read back: the trace and clock UUIDs the tracer
 * writes into a CTF metadata (src/tracer/metadata.c, 8-4-4-4-12 hex
 * digits) are read again by crash recovery (src/tracer/recover.c) and by
 * the CLI's native reader (cli/trace_native.c).  Shared by libmark and the
 * `mark` command; not installed.  No heap, no stdio, no locale.
 */
#ifndef MARK_UTIL_UUID_TEXT_H
#define MARK_UTIL_UUID_TEXT_H

#include <stdint.h>

/*
 * The 16 bytes of the UUID at s: 32 hex digits in pairs, each pair
 * optionally preceded by one '-'.  Returns the text just after the last
 * digit (the caller checks what must follow, e.g. the closing quote), or
 * NULL if s does not start with such a UUID.  Reads no further than a NUL.
 */
__attribute__((visibility("hidden"))) const char *mark_uuid_parse(const char *s, uint8_t uuid[16]);

#endif
