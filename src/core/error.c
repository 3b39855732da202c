/* Per-thread error messages behind mark_last_error(), and mark_warn(). */
#include "internal.h"
#include "util/printable.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static __thread char last_error[512];

int mark_error(int err, const char *fmt, ...)
{
	/* Escaped: callers print it, and it may quote a glob, a path or an
	 * environment value (see printable.h). */
	char raw[sizeof(last_error)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	mark_printable_copy(last_error, sizeof(last_error), raw);
	return -err;
}

void mark_warn(const char *fmt, ...)
{
	char raw[1024], line[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	size_t n = strlen(raw);
	bool newline = n > 0 && raw[n - 1] == '\n';
	if (newline)
		raw[n - 1] = '\0';
	n = mark_printable_copy(line, sizeof(line) - 1, raw);
	if (newline) {
		line[n++] = '\n';
		line[n] = '\0';
	}
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
