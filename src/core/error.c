/* Per-thread error messages behind mark_last_error(), mark_warn(), and mark_env_bool() for the MARK_* switches. */
#include "internal.h"
#include "util/printable.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static __thread char last_error[512];

int mark_error(int err, const char *fmt, ...)
{
	/* Escaped: callers print it, and it may quote a glob, a path or an
	 * environment value (see printable.h); as a whole message, so a value
	 * the caller quoted with mark_printable_brief() is not escaped twice. */
	char raw[sizeof(last_error)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	mark_printable_message_copy(last_error, sizeof(last_error), raw);
	return -err;
}

/*
 * Warnings raised while this thread holds a lock that fork() takes in a
 * prepare handler (the registry's) are kept and written once it is
 * released: a write to stderr may block for ever (a full pipe nobody
 * reads), and a fork in another thread would wait as long.  Per thread, so
 * no locking; the buffer is allocated on first use (no TLS space in every
 * thread of the program) and bounded: what does not fit is counted.
 */
#define WARN_HELD_MAX 8192
static __thread unsigned warn_hold_depth;
static __thread char *warn_held;
static __thread size_t warn_held_len;
static __thread unsigned warn_held_dropped;

void mark_warn_hold(void)
{
	warn_hold_depth++;
}

void mark_warn_release(void)
{
	if (warn_hold_depth == 0 || --warn_hold_depth > 0)
		return;
	if (warn_held_len)
		fwrite(warn_held, 1, warn_held_len, stderr);
	if (warn_held_dropped)
		fprintf(stderr, "mark: %u more warning(s) not shown\n", warn_held_dropped);
	free(warn_held);
	warn_held = NULL;
	warn_held_len = 0;
	warn_held_dropped = 0;
}

static void warn_keep(const char *line)
{
	const size_t n = strlen(line);
	if (!warn_held)
		warn_held = malloc(WARN_HELD_MAX);
	if (!warn_held || warn_held_len + n > WARN_HELD_MAX) {
		warn_held_dropped++;
		return;
	}
	memcpy(warn_held + warn_held_len, line, n);
	warn_held_len += n;
}

void mark_warn(const char *fmt, ...)
{
	char raw[1024], line[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	/* The format says whether this is a whole line: a text too long for
	 * raw[] lost its '\n', and the next message (or the program's own
	 * output) went on the same line. */
	const size_t f = strlen(fmt);
	const bool newline = f > 0 && fmt[f - 1] == '\n';
	size_t n = strlen(raw);
	if (n > 0 && raw[n - 1] == '\n')
		raw[n - 1] = '\0';
	/* Escaping may make it up to four times longer: keep its end (what to
	 * do) rather than cut it off.  Callers shorten the values they quote
	 * (mark_printable_brief, which escapes them), so this is a last
	 * resort, and leaves their backslashes as they are. */
	n = mark_printable_message_brief(line, sizeof(line) - 1, raw);
	if (newline) {
		line[n++] = '\n';
		line[n] = '\0';
	}
	if (warn_hold_depth)
		warn_keep(line);
	else
		fputs(line, stderr);
}

void mark_error_clear(void)
{
	last_error[0] = '\0';
}

const char *mark_last_error(void)
{
	return last_error;
}

int mark_env_bool(const char *value)
{
	static const char *const on[] = { "1", "on", "yes", "true" }, *const off[] = { "0", "off", "no", "false" };
	for (size_t i = 0; value && i < sizeof(on) / sizeof(on[0]); i++) {
		if (strcasecmp(value, on[i]) == 0)
			return 1;
		if (strcasecmp(value, off[i]) == 0)
			return 0;
	}
	return -EINVAL;
}
