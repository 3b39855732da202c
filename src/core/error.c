/* Per-thread error messages behind mark_last_error(). */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>

static __thread char last_error[512];

int mark_error(int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return -err;
}

void mark_error_clear(void)
{
	last_error[0] = '\0';
}

const char *mark_last_error(void)
{
	return last_error;
}
