/*
 * The built-in tracer's control interface inside libmark: the installed
 * <mark/tracer.h> (used by programs, the CLI and the benchmarks) and what
 * only libmark itself uses.  Used by the environment configuration
 * (MARK_TRACE=...) and by the control agent (`mark record --pid`,
 * `mark snapshot`).
 *
 * One tracing session per process at a time.  All functions are safe to
 * call from any thread except a signal handler; they never crash or stop
 * the host program: on bad input they return -errno with mark_last_error()
 * set to a one-line explanation.
 */
#ifndef MARK_TRACER_H
#define MARK_TRACER_H

/* All of it is public: sessions, statistics, recovery, the parsers. */
#include <mark/tracer.h>

#endif
