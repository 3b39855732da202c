/*
 * `mark recover DIR`: complete the trace of a process that died without
 * stopping its tracer (SIGKILL, a crash, _exit, exec), as `mark record`
 * does by itself when the program it ran dies.  The work, and every safety
 * property of it (files read through descriptors and never mapped, each
 * field checked against the file's size, nothing removed that the tracer
 * did not write), is the tracer's recovery procedure, mark_trace_recover();
 * this command only says what it found and did.
 */
#include "command.h"
#include "liveline.h"
#include "text.h"

#include <mark/tracer.h>

#include <mark/mark.h>

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char recover_usage[] =
	"usage: mark recover DIR\n"
	"\n"
	"Complete the trace in DIR (and its pid-P/ sub-traces) of a process that died\n"
	"without stopping its tracer: the events still in its shared-memory buffers\n"
	"(.mark-ring-N files) are written as the missing CTF packets, the statistics\n"
	"are marked final and the buffer files removed.  `mark view` and `mark stats`\n"
	"say when a trace needs this.  A complete trace is left as it is.  `mark record`\n"
	"does this itself when the program it runs dies; use this command for a\n"
	"process started with MARK_TRACE=DIR, or after `mark record` itself was killed.\n"
	"The process must have exited.\n"
	"\n"
	"Options:\n"
	"  -h, --help   this help\n"
	"\n"
	"Exit status: 0 if the trace is complete now, 1 if it could not be completed,\n"
	"2 on bad usage.\n";

static int recover_run(int argc, char **argv)
{
	const char *dir;
	int status;
	if (!cli_parse_dir_only(argc, argv, recover_usage, &dir, &status))
		return status;
	struct live_incomplete inc;
	bool incomplete = live_trace_incomplete(dir, &inc) != 0;
	int r = mark_trace_recover(dir);
	if (r < 0) {
		/* The tracer's message says what was wrong ("mark: ..."); the
		 * fallbacks are for an empty one. */
		const char *why = mark_last_error();
		if (why && *why)
			fprintf(stderr, "%s\n", cli_message_text(why));   /* escaped by libmark */
		else if (r == -EBUSY)
			cli_error("recover: a process still writes the trace in %s; run this again after it "
				  "has exited", dir);
		else if (r == -ENOENT)
			cli_error("recover: %s holds no mark trace (no .mark-stats); give the directory given "
				  "to `mark record -o` or MARK_TRACE", dir);
		else
			cli_error("recover: %s: %s", dir, strerror(-r));
		return 1;
	}
	struct live_stats totals;
	if (r == 0 && live_stats_read(dir, &totals) != 0) {
		cli_error("recover: %s holds no mark trace (no .mark-stats in it or its pid-P/); give the "
			  "directory given to `mark record -o` or MARK_TRACE", dir);
		return 1;
	}
	if (r == 0 && !incomplete)
		printf("mark: the trace in %s is already complete; nothing to do\n", cli_text(dir));
	else
		printf("mark: recovered %d events into %s; the trace is complete\n", r, cli_text(dir));
	return 0;
}

MARK_CLI_COMMAND(recover, "recover", "complete the trace of a process that died", recover_run);
