/*
 * `mark list PID [GLOB]`, `mark enable PID GLOB...`, `mark disable PID GLOB...`:
 * inspect and arm the markers of a running process through its agent.
 */
#define _GNU_SOURCE
#include "command.h"
#include "control.h"
#include "list_table.h"
#include "liveline.h"
#include "text.h"

#include "tracer/trace_format.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *dupf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *dupf(const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return s;
}

/*
 * The trace directory whose per-marker counts are the hits of `pid`'s
 * recording: the agent names it for a `mark record --pid` recording; a
 * recording started by MARK_TRACE (`mark record -- CMD`) writes its
 * process's counts in MARK_TRACE/pid-PID/.mark-stats, MARK_TRACE read from
 * the environment the process started with.  The counts are read as any
 * .mark-stats is (liveline.c: checked, never trusted), so a wrong hint
 * shows no hits, nothing worse.
 */
static bool hits_dir(pid_t pid, const struct mark_proto_msg *info, char *out, size_t len)
{
	if (info->type != MARK_MSG_INFO_REPLY)
		return false;
	uint64_t tracing = MARK_TRACING_OFF;
	mark_proto_u64(info, MARK_TAG_TRACING, 0, &tracing);
	const char *dir = mark_proto_str(info, MARK_TAG_DIR, 0);
	if (dir && tracing != MARK_TRACING_OTHER) {
		snprintf(out, len, "%s", dir);
		return true;
	}
	/* MARK_TRACE: the agent names the directory (absolute; an older agent
	 * does not, and then the environment, if absolute, does), and this
	 * process's counts are its pid-P/: DIR is shared with every process
	 * the traced command started. */
	char base[4096];
	if (dir)
		snprintf(base, sizeof(base), "%s", dir);
	else if (tracing != MARK_TRACING_OTHER || !ctl_target_env_path(pid, "MARK_TRACE", base, sizeof(base)))
		return false;
	return snprintf(out, len, "%s/%s%d", base, MARK_TF_CHILD_PREFIX, (int)pid) < (int)len;
}

int cli_list_pid(const char *pid_text, const char *glob)
{
	pid_t pid;
	if (!ctl_parse_pid(pid_text, &pid))
		return 2;
	struct ctl_conn c;
	if (ctl_connect(&c, pid))
		return 1;
	/* Hits are known while the process records (`mark record --pid`, or
	 * `mark record -- CMD`): the per-marker event counts of its trace
	 * directory (hits_dir). */
	struct live_marker_count *counts = NULL;
	size_t ncounts = 0;
	if (ctl_simple_request(&c, MARK_MSG_INFO, CTL_TIMEOUT_MS) != 0) {
		ctl_close(&c);
		return 1;
	}
	char trace_dir[4096];
	if (hits_dir(pid, &c.msg, trace_dir, sizeof(trace_dir))) {
		/* The process names the directory: read it only if it is that
		 * process's (its euid owns what it writes), never another
		 * user's or root's trace that the process pointed root's
		 * `mark list` at. */
		int dfd = open(trace_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		struct stat st;
		if (dfd >= 0 && fstat(dfd, &st) == 0 && st.st_uid == c.uid &&
		    live_stats_markers_at(dfd, &counts, &ncounts) != 0) {
			counts = NULL;
			ncounts = 0;
		}
		if (dfd >= 0)
			close(dfd);
	}
	struct mark_proto_buf req;
	mark_proto_buf_init(&req);
	mark_proto_begin(&req, MARK_MSG_LIST);
	if (glob)
		mark_proto_add_str(&req, MARK_TAG_GLOB, glob);
	mark_proto_end(&req);
	int r = ctl_request(&c, &req, CTL_TIMEOUT_MS);
	mark_proto_buf_free(&req);
	struct list_row *rows = NULL;
	size_t n = 0, cap = 0;
	while (r == 0 && c.msg.type == MARK_MSG_MARKER) {
		if (n == cap && cli_array_grow(&rows, &cap, sizeof(*rows), 64)) {
			r = cli_error("out of memory");
			break;
		}
		uint64_t sites = 0, more = 0, armed = 0, probes = 0, hits = 0;
		mark_proto_u64(&c.msg, MARK_TAG_SITES, 0, &sites);
		mark_proto_u64(&c.msg, MARK_TAG_MORE_SITES, 0, &more);
		mark_proto_u64(&c.msg, MARK_TAG_ARMED, 0, &armed);
		mark_proto_u64(&c.msg, MARK_TAG_PROBES, 0, &probes);
		bool have_hits = mark_proto_u64(&c.msg, MARK_TAG_HITS, 0, &hits);
		const char *mname = mark_proto_str(&c.msg, MARK_TAG_NAME, 0);
		for (size_t k = 0; !have_hits && counts && k < ncounts; k++) {
			if (strcmp(counts[k].name, mname) == 0) {
				hits = counts[k].events;
				have_hits = true;
			}
		}
		struct list_row *w = &rows[n++];
		w->note = NULL;
		/* What the agent sends is the target's text: escaped for the terminal. */
		w->name = strdup(cli_text(mname));
		w->format = text_c_string_dup(mark_proto_str(&c.msg, MARK_TAG_FORMAT, 0));
		w->kind = strdup(cli_text(mark_proto_str(&c.msg, MARK_TAG_KIND, 0)));
		const char *loc = cli_text(mark_proto_str(&c.msg, MARK_TAG_LOCATION, 0));
		if (more)
			w->location = dupf("%s (+%" PRIu64 " more)", loc, more);
		else
			w->location = strdup(loc);
		if (armed == 0)
			w->armed = strdup("no");
		else if (armed == sites)
			w->armed = strdup("yes");
		else
			w->armed = dupf("%" PRIu64 "/%" PRIu64, armed, sites);
		w->probes = dupf("%" PRIu64, probes);
		w->hits = have_hits ? dupf("%" PRIu64, hits) : strdup("-");
		r = ctl_read_reply(&c);   /* within the LIST's deadline and limits */
	}
	if (r == 0 && ctl_reply_error(&c, "list"))
		r = 1;
	if (r == 0 && c.msg.type != MARK_MSG_LIST_END)
		r = cli_error("unexpected %s reply from process %d", mark_proto_type_name(c.msg.type), (int)pid);
	if (r == 0 && n == 0) {
		if (glob)
			r = cli_error("no marker matches \"%s\" in process %d (%s); `mark list %d` shows them all",
				      glob, (int)pid, c.comm, (int)pid);
		else
			printf("process %d (%s) has no markers\n", (int)pid, c.comm);
	}
	if (r == 0 && n > 0)
		list_table_print(rows, n, true);
	list_table_free(rows, n);
	free(rows);
	free(counts);
	ctl_close(&c);
	return r ? 1 : 0;
}

static const char enable_usage[] =
	"usage: mark enable PID GLOB...\n"
	"       mark disable PID GLOB...\n"
	"\n"
	"Arm (enable) or disarm (disable) the markers matching each GLOB (* ? [...];\n"
	"\"net_*\" also matches provider-qualified names such as \"app:net_rx\") in the\n"
	"running process PID, through its mark agent, and say how many sites changed.\n"
	"An armed site with no probe connected costs a call that does nothing; use\n"
	"`mark record --pid` to record events.  The change is in effect until the\n"
	"process exits or it is reverted with the opposite command.  A GLOB that\n"
	"matches no marker changes nothing and is reported as an error.\n"
	"\n"
	"`mark enable PID GLOB... --filter EXPR` also replaces the filter of the\n"
	"process's running recording (`mark record --pid`; the language of\n"
	"`mark record --filter`; --filter '' removes it).  The filter applies to\n"
	"every marker the recording records.\n"
	"\n"
	"Only the user the process runs as, or root, may control it.\n"
	"\n"
	"Exit status: 0 if every GLOB matched, 1 on any error, 2 on bad usage.\n";

static int arm_command(int argc, char **argv, bool arm)
{
	const char *verb = arm ? "enable" : "disable";
	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		fputs(enable_usage, stdout);
		return 0;
	}
	/* `enable PID GLOB... --filter EXPR` (or -f EXPR, anywhere after PID):
	 * taken out of the argument list, which then holds PID and the globs. */
	const char *filter = NULL;
	char *args[argc + 1];
	int nargs = 0;
	for (int i = 0; i < argc; i++) {
		if (i >= 2 && (strcmp(argv[i], "--filter") == 0 || strcmp(argv[i], "-f") == 0)) {
			if (!arm || i + 1 >= argc) {
				cli_error("%s: %s", verb, arm ? "--filter needs an expression" :
							  "--filter belongs to `mark enable`");
				return 2;
			}
			filter = argv[++i];
			if (*filter && cli_filter_check(verb, filter) != 0)   /* "": remove it */
				return 2;
			continue;
		}
		args[nargs++] = argv[i];
	}
	args[nargs] = NULL;
	argc = nargs;
	argv = args;
	if (argc < 3) {
		cli_error("%s: give a PID and at least one GLOB (see `mark %s --help`)", verb, verb);
		return 2;
	}
	pid_t pid;
	if (!ctl_parse_pid(argv[1], &pid))
		return 2;
	if (argc - 2 > MARK_PROTO_MAX_GLOBS) {
		cli_error("%s: at most %d globs at once", verb, MARK_PROTO_MAX_GLOBS);
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		if (!argv[i][0]) {
			cli_error("%s: empty GLOB", verb);
			return 2;
		}
		if (strlen(argv[i]) >= MARK_PROTO_MAX_STRING) {
			cli_error("%s: GLOB too long (%zu bytes; at most %d)", verb, strlen(argv[i]),
				  MARK_PROTO_MAX_STRING - 1);
			return 2;
		}
	}
	struct ctl_conn c;
	if (ctl_connect(&c, pid))
		return 1;
	struct mark_proto_buf req;
	mark_proto_buf_init(&req);
	mark_proto_begin(&req, arm ? MARK_MSG_ARM : MARK_MSG_DISARM);
	for (int i = 2; i < argc; i++)
		mark_proto_add_str(&req, MARK_TAG_GLOB, argv[i]);
	if (filter)
		mark_proto_add_str(&req, MARK_TAG_FILTER, filter);   /* <= 1024 bytes: parsed */
	mark_proto_end(&req);
	int r = ctl_request(&c, &req, CTL_TIMEOUT_MS);
	mark_proto_buf_free(&req);
	if (r == 0 && ctl_reply_error(&c, verb))
		r = 1;
	if (r == 0 && c.msg.type != MARK_MSG_OK)
		r = cli_error("%s: unexpected %s reply", verb, mark_proto_type_name(c.msg.type));
	if (r == 0) {
		/* The reply holds (GLOB MATCHED CHANGED) per glob, in request order. */
		const char *glob = NULL;
		uint64_t matched = 0;
		for (size_t i = 0; i < c.msg.nfields; i++) {
			const struct mark_proto_field *f = &c.msg.fields[i];
			if (f->tag == MARK_TAG_GLOB) {
				glob = (const char *)f->value;
			} else if (f->tag == MARK_TAG_MATCHED) {
				matched = mark_proto_field_u64(f);
			} else if (f->tag == MARK_TAG_CHANGED && glob) {
				uint64_t changed = mark_proto_field_u64(f);
				if (matched == 0) {
					r = cli_error("%s: no marker matches \"%s\" in process %d (%s); `mark list %d` "
						      "shows them", verb, glob, (int)pid, c.comm, (int)pid);
					continue;
				}
				printf("%s: %" PRIu64 " site%s %s (%" PRIu64 " marker%s matched) in process %d (%s)\n",
				       cli_text(glob), changed, changed == 1 ? "" : "s", arm ? "armed" : "disarmed", matched,
				       matched == 1 ? "" : "s", (int)pid, c.comm);
			}
		}
	}
	ctl_close(&c);
	return r ? 1 : 0;
}

static int enable_run(int argc, char **argv)
{
	return arm_command(argc, argv, true);
}

static int disable_run(int argc, char **argv)
{
	return arm_command(argc, argv, false);
}

MARK_CLI_COMMAND(enable, "enable", "arm markers in a running process: enable PID GLOB...", enable_run);
MARK_CLI_COMMAND(disable, "disable", "disarm markers in a running process: disable PID GLOB...", disable_run);

/*
 * `mark stop PID`: end a recording that no `mark record --pid` command
 * owns -- one started with `mark record --pid PID --detach`, or by
 * MARK_TRACE in the process's environment -- with a TRACE_STOP that names
 * its directory (the agent refuses to stop another recording by mistake).
 * A recording that a `mark record --pid` owns is that command's to stop.
 */
static const char stop_usage[] =
	"usage: mark stop PID...\n"
	"       mark stop --name COMM\n"
	"\n"
	"End the recording of each process PID that runs without a controller: one\n"
	"started with `mark record --pid PID --detach`, or by MARK_TRACE (e.g.\n"
	"`mark record -- CMD` after its `mark` was killed).  The process disarms what\n"
	"the recording armed, flushes its buffers and finishes the trace, and runs on.\n"
	"Several processes (`mark record --pid P1 --pid P2 --detach`, or --name) are\n"
	"stopped one by one: `mark stop P1 P2`, or `mark stop --name COMM` for every\n"
	"process whose /proc/PID/comm is COMM (those not recording, or without an agent,\n"
	"are only mentioned).\n"
	"Exit status: 0 all stopped, 1 error for any (not recording, owned by a `mark record\n"
	"--pid`, no agent, permission), 2 bad usage.\n";

/*
 * Stop the recording of one process; 0, or 1 after saying why.  With
 * `by_name` (mark stop --name), a process of that name that is not
 * recording is only mentioned: the name may well cover processes that
 * were never recorded.
 */
static int stop_one(pid_t pid, bool by_name)
{
	struct ctl_conn c;
	if (ctl_connect(&c, pid)) {
		if (!by_name)
			return 1;
		/* Not mark-linked, or not ours: it records nothing we could stop. */
		fprintf(stderr, "mark: stop: process %d skipped (the reason is above)\n", (int)pid);
		return 0;
	}
	if (ctl_simple_request(&c, MARK_MSG_INFO, CTL_TIMEOUT_MS) != 0 || ctl_reply_error(&c, "stop")) {
		ctl_close(&c);
		return 1;
	}
	uint64_t tracing = MARK_TRACING_OFF, owner = 0;
	mark_proto_u64(&c.msg, MARK_TAG_TRACING, 0, &tracing);
	mark_proto_u64(&c.msg, MARK_TAG_OWNER_PID, 0, &owner);
	char dir[4096];
	if (tracing == MARK_TRACING_CONTROLLER) {
		ctl_close(&c);
		return cli_error("stop: the recording of process %d belongs to `mark record --pid` (pid %" PRIu64
				 "): stop that command (Ctrl-C, or kill %" PRIu64 ")", (int)pid, owner, owner);
	}
	if (tracing == MARK_TRACING_OFF) {
		ctl_close(&c);
		if (by_name) {
			fprintf(stderr, "mark: stop: process %d (%s) is not recording; nothing to stop\n", (int)pid,
				c.comm);
			return 0;
		}
		return cli_error("stop: process %d (%s) is not recording", (int)pid, c.comm);
	}
	/* Detached or MARK_TRACE: the agent says where (for MARK_TRACE made
	 * absolute when the recording started; an agent of an older mark
	 * does not, and then the environment's MARK_TRACE does, if absolute). */
	const char *d = mark_proto_str(&c.msg, MARK_TAG_DIR, 0);
	if (d) {
		snprintf(dir, sizeof(dir), "%s", d);
	} else if (!ctl_target_env_path(pid, "MARK_TRACE", dir, sizeof(dir))) {
		ctl_close(&c);
		return cli_error("stop: process %d (%s) records, started by the tracer API, not by MARK_TRACE or "
				 "mark: the program itself stops it (mark_tracer_stop)", (int)pid, c.comm);
	}
	int r = ctl_stop_dir(&c, dir);
	if (r == 0 && ctl_reply_error(&c, "stop"))
		r = 1;
	if (r == 0) {
		uint64_t events = 0, lost = 0;
		mark_proto_u64(&c.msg, MARK_TAG_EVENTS, 0, &events);
		mark_proto_u64(&c.msg, MARK_TAG_LOST, 0, &lost);
		fprintf(stderr, "mark: stopped the recording of process %d (%s) into %s: %" PRIu64 " events, %" PRIu64
			" lost\n", (int)pid, c.comm, cli_text(dir), events, lost);
	}
	ctl_close(&c);
	return r ? 1 : 0;
}

static int stop_run(int argc, char **argv)
{
	if (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		fputs(stop_usage, stdout);
		return 0;
	}
	if (argc < 2) {
		cli_error("stop: give the processes: mark stop PID... or mark stop --name COMM");
		return 2;
	}
	pid_t *pids = NULL;
	size_t n = 0, cap = 0;
	const bool by_name = strcmp(argv[1], "--name") == 0;
	if (by_name) {
		if (argc != 3 || !*argv[2]) {
			cli_error("stop: --name takes one process name: mark stop --name COMM");
			return 2;
		}
		if (ctl_pids_named("stop", argv[2], &pids, &n, &cap) != 0)
			return 1;
		if (n == 0) {
			free(pids);
			return cli_error("stop: no process is named \"%s\" (the name /proc/PID/comm shows; "
					 "`ps -eo pid,comm` lists them)", cli_text(argv[2]));
		}
	} else {
		/* Every argument is checked before any process is stopped. */
		for (int i = 1; i < argc; i++) {
			pid_t pid;
			if (!ctl_parse_pid(argv[i], &pid)) {
				free(pids);
				return 2;
			}
			if (n == cap && cli_array_grow(&pids, &cap, sizeof(*pids), 8)) {
				free(pids);
				return cli_error("stop: out of memory");
			}
			pids[n++] = pid;
		}
	}
	/* Each process is stopped on its own: one that cannot be does not keep the others recording. */
	int status = 0;
	for (size_t i = 0; i < n; i++)
		if (stop_one(pids[i], by_name))
			status = 1;
	free(pids);
	return status;
}

MARK_CLI_COMMAND(stop, "stop", "end detached recordings of running processes: stop PID...", stop_run);
