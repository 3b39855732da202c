/*
 * Which bytes may reach a terminal as they are.  Shared by libmark (its
 * messages on stderr and behind mark_last_error(), which repeat values of
 * the environment, directory names and globs that whoever starts the
 * program chose) and the `mark` command (cli/text.c, which escapes what a
 * target or a trace says).  Not installed.
 *
 * A terminal acts on control characters: ESC sequences retitle the window,
 * rewrite what was printed or, on some terminals, answer back into the
 * input; 8-bit terminals take the C1 byte 0x9b as CSI; bidirectional
 * overrides reorder what follows them on screen.  So none is printed raw.
 *
 * No heap, no stdio, no locale: safe in a constructor, a fork child or a
 * signal handler.
 */
#ifndef MARK_UTIL_PRINTABLE_H
#define MARK_UTIL_PRINTABLE_H

#include <stddef.h>
#include <stdint.h>

#define MARK_HIDDEN_PRINTABLE __attribute__((visibility("hidden")))

/*
 * Length of the UTF-8 sequence at p if it is valid (shortest form, no
 * surrogate, at most U+10FFFF), its code point in *code; 0 otherwise, and
 * for ASCII.  Reads no further than a NUL byte.
 */
MARK_HIDDEN_PRINTABLE size_t mark_utf8_len(const unsigned char *p, uint32_t *code);

/*
 * Length of the UTF-8 sequence at p if it is valid (shortest form, no
 * surrogate, at most U+10FFFF) and printable on a terminal: not a C1
 * control (U+0080-U+009F) nor a bidirectional embedding, override or
 * isolate (U+202A-U+202E, U+2066-U+2069).  0 otherwise, and for ASCII.
 * Reads no further than a NUL byte.
 */
MARK_HIDDEN_PRINTABLE size_t mark_utf8_printable(const unsigned char *p);

/*
 * Copy NUL-terminated `text`, a value (an environment variable, a path, a
 * glob), into out[size] as terminal text: printable ASCII and printable
 * UTF-8 as they are, a backslash as \\, newline, tab and CR as \n \t \r,
 * every other byte as \xXX.  So the printed form is unambiguous: a value
 * holding the four characters \x1b prints \\x1b, one holding ESC \x1b.
 * Always NUL-terminates (size > 0); text that does not fit is cut at a
 * character boundary and ends in "...".  Returns strlen(out).
 */
MARK_HIDDEN_PRINTABLE size_t mark_printable_copy(char *out, size_t size, const char *text);

/*
 * As mark_printable_copy(), but text that does not fit keeps its start and
 * its end with "..." between them, each cut at a character boundary: for a
 * value quoted inside a message (an environment variable, a path), whose
 * beginning and end tell the reader which it was, and which must not push
 * the rest of the message (what to do) out of a bounded line.  Returns
 * strlen(out).
 */
MARK_HIDDEN_PRINTABLE size_t mark_printable_brief(char *out, size_t size, const char *text);

/*
 * The same for a whole message (mark_error(), mark_warn()), whose values
 * were quoted with the two above: every byte escaped as they do except the
 * backslash, left as it is, so the values' escapes are not escaped twice
 * (the message form is idempotent).  A control byte the message carries
 * raw still never reaches a terminal.
 */
MARK_HIDDEN_PRINTABLE size_t mark_printable_message_copy(char *out, size_t size, const char *text);
MARK_HIDDEN_PRINTABLE size_t mark_printable_message_brief(char *out, size_t size, const char *text);

/*
 * A thread name (/proc/PID/task/TID/comm, prctl(PR_GET_NAME): up to 15
 * bytes the program chose) as the tracer stores it: at most 15 bytes of
 * `name` (len bytes, or up to a NUL or newline), printable ASCII and
 * printable UTF-8 kept, every other byte replaced by '?', the rest of
 * out[16] zero.  So every reader can show it as text.
 */
MARK_HIDDEN_PRINTABLE void mark_thread_name_clean(char out[16], const char *name, size_t len);

#endif
