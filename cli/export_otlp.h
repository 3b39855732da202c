/*
 * `mark export --format otlp`: the trace as OpenTelemetry spans and log
 * records in OTLP/JSON, written as lines to a file (the Collector's
 * otlpjsonfile receiver) or POSTed to an OTLP/HTTP endpoint
 * (cli/export_otlp.c; the mapping is in docs/export.md).
 */
#ifndef MARK_CLI_EXPORT_OTLP_H
#define MARK_CLI_EXPORT_OTLP_H

#include <stdbool.h>
#include <stddef.h>

struct export_otlp_options {
	const char *output;            /* -o FILE ("-": stdout), or NULL          */
	const char *endpoint;          /* --endpoint http://HOST[:PORT][/PATH], or NULL */
	const char *const *pairs;      /* --pair A,B (pairs.h)                    */
	size_t npairs;
	bool progress;                 /* --progress                              */
	unsigned timeout_s;            /* --timeout: seconds per attempt (0: 30)  */
};

/* Export the one trace directory in args[0..nargs); the exit status
 * (0 done, 1 failed, 2 bad usage), every error already printed. */
int export_otlp(const struct export_otlp_options *o, int nargs, char **args);

#endif
