/*
 * `mark snapshot PID -o DIR`: write the flight-recorder buffers of a process
 * that records in overwrite mode, as a CTF trace, without stopping it.
 */
#define _GNU_SOURCE
#include "command.h"
#include "control.h"
#include "text.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char snapshot_usage[] =
	"usage: mark snapshot PID -o DIR [--force]\n"
	"\n"
	"Write the current contents of the trace buffers of process PID into DIR as a\n"
	"CTF trace (readable by `mark view` and babeltrace2), while it keeps recording.\n"
	"The process must be recording in overwrite mode (flight recorder): started\n"
	"with `mark record --mode overwrite -- CMD`, MARK_TRACE=... MARK_MODE=overwrite,\n"
	"or `mark record --pid PID --mode overwrite`.  DIR is written by the process\n"
	"itself: it is created (mode 0700) if missing; an existing DIR must belong to\n"
	"the process's user and be writable by nobody else, and must be empty.\n"
	"\n"
	"Options:\n"
	"  -o, --output DIR   the snapshot directory (required)\n"
	"  -f, --force        DIR may hold an earlier snapshot: replace it.  Only the\n"
	"                     files mark writes (metadata, stream-N, .mark-stats,\n"
	"                     .mark-ring-N, pid-N/ holding only those) are removed;\n"
	"                     other files and symbolic links stay.\n"
	"  -h, --help         this help\n"
	"\n"
	"Exit status: 0 on success, 1 on error, 2 on bad usage.\n";

static int snapshot_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *output = NULL;
	bool force = false;
	int ch;
	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "o:fh", opts, NULL)) != -1) {
		switch (ch) {
		case 'o': output = optarg; break;
		case 'f': force = true; break;
		case 'h': fputs(snapshot_usage, stdout); return 0;
		default:
			cli_error("snapshot: %s: unknown option or missing argument; see `mark snapshot --help`",
				  argv[optind - 1]);
			return 2;
		}
	}
	if (optind != argc - 1) {
		cli_error("snapshot: give exactly one PID (see `mark snapshot --help`)");
		return 2;
	}
	if (!output) {
		cli_error("snapshot: give the output directory with -o DIR");
		return 2;
	}
	pid_t pid;
	if (!ctl_parse_pid(argv[optind], &pid))
		return 2;
	char dir[PATH_MAX];
	if (!ctl_absolute_path(output, dir, sizeof(dir)))
		return 1;
	if (strlen(dir) >= MARK_PROTO_MAX_STRING)
		return cli_error("snapshot: directory path too long");
	struct ctl_conn c;
	if (ctl_connect(&c, pid))
		return 1;
	struct mark_proto_buf req;
	mark_proto_buf_init(&req);
	mark_proto_begin(&req, MARK_MSG_SNAPSHOT);
	mark_proto_add_str(&req, MARK_TAG_DIR, dir);
	if (force)
		mark_proto_add_u64(&req, MARK_TAG_FORCE, 1);
	mark_proto_end(&req);
	int r = ctl_request(&c, &req, 60000);
	mark_proto_buf_free(&req);
	if (r == 0 && ctl_reply_error(&c, "snapshot"))
		r = 1;
	if (r == 0)
		printf("mark: snapshot of process %d (%s) written to %s\n", (int)pid, c.comm, cli_text(dir));
	ctl_close(&c);
	return r ? 1 : 0;
}

MARK_CLI_COMMAND(snapshot, "snapshot", "write the flight-recorder buffers of a process: snapshot PID -o DIR",
		 snapshot_run);
