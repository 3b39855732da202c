/*
 * Keep the `mark` command itself from being traced.
 *
 * `mark` links the static libmark, and with it the tracer's environment
 * constructor (src/tracer/session.c), which starts a session when
 * MARK_TRACE is set and *replaces* a trace already in that directory.  A
 * user who exported MARK_TRACE=/tmp/t to trace a program and then runs
 * `mark view /tmp/t` would have the very trace being viewed wiped by
 * `mark`'s own constructor.  (Observed: `MARK_TRACE=D mark stats D` left D
 * empty.)
 *
 * So before any default-priority constructor runs, remove the tracer's
 * variables from `mark`'s environment.  Priority 101 is the first one open
 * to programs; GCC and Clang run lower numbers first, across all objects of
 * the executable, and libmark's constructors use the default priority.
 * Nothing is lost for CMD: `mark record` sets the variables for CMD
 * explicitly (see child_environment() in cmd_record.c), and other commands
 * do not pass them on.
 */
#include <stdlib.h>

static void __attribute__((constructor(101))) mark_cli_untraced(void)
{
	unsetenv("MARK_TRACE");
	unsetenv("MARK_ENABLE");
	unsetenv("MARK_MODE");
	unsetenv("MARK_BUFFER");
	unsetenv("MARK_MAX_SIZE");
	unsetenv("MARK_ROTATE");
}
