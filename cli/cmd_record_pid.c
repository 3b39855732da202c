/*
 * `mark record --pid PID [-e GLOB]... [-o DIR] [--mode M] [--buffer SIZE]
 *  [--max-size SIZE] [--rotate SIZE|DURATION] [--duration SECONDS]`: record a running process through its agent.
 *
 * The agent ties the recording to this command's connection: whatever ends
 * the connection (Ctrl-C here, the end of --duration, this command being
 * killed) ends the recording, disarms what it armed and finishes the trace.
 * The traced process writes the trace itself, into DIR.
 *
 * One recording per process: a second controller is refused (the agent
 * answers EBUSY), so two controllers never share or corrupt a session.
 *
 * Signals: SIGINT, SIGTERM and SIGHUP only set a flag (the handler is
 * async-signal-safe); the main loop, which wakes at least 4 times a second,
 * sees it and stops the recording cleanly.
 */
#define _GNU_SOURCE
#include "command.h"
#include "control.h"
#include "liveline.h"
#include "text.h"
#include "util/safe_dir.h"

#include "tracer/trace_format.h"
#include <mark/tracer.h>

#include <mark/mark.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const char cli_record_pid_usage[] =
	"usage: mark record --pid PID [--pid PID]... [OPTIONS]\n"
	"       mark record --name COMM [OPTIONS]\n"
	"\n"
	"Record the running process PID: arm the markers matching the globs, record\n"
	"them with the tracer inside the process, and, on Ctrl-C (SIGINT/SIGTERM/SIGHUP)\n"
	"or at the end of --duration, disarm what was armed, stop and flush, leaving a\n"
	"complete CTF trace in DIR.  If the process exits meanwhile the trace is\n"
	"finished by the process (or completed from its buffers if it was killed).\n"
	"If this command itself is killed, the process notices and stops recording,\n"
	"flushing its buffers: the trace is complete up to then.\n"
	"A process has at most one recording: a second `mark record --pid` (or one\n"
	"while MARK_TRACE records) is refused.\n"
	"\n"
	"Options:\n"
	"  -p, --pid PID          a process to record; repeatable: every process then\n"
	"                         writes its own DIR/pid-P/ in the one directory, all\n"
	"                         started or none (one that cannot be is an error)\n"
	"      --name COMM        every running process whose name (/proc/PID/comm)\n"
	"                         is COMM; one that cannot be recorded (no agent, a\n"
	"                         glob matching none of its markers, another user) is\n"
	"                         reported with the reason and skipped\n"
	"  -e, --enable GLOB      record markers matching GLOB (* ? [...]); repeatable;\n"
	"                         default: every marker.  A GLOB matching no marker\n"
	"                         of the process is an error.\n"
	"  -o, --output DIR       trace directory (created; must not already hold a\n"
	"                         trace; the process writes it, so it must be writable\n"
	"                         by the process's user); default ./mark-trace-PID-YYYYMMDD-HHMMSS\n"
	"  -m, --mode MODE        discard (default), overwrite (flight recorder, see\n"
	"                         `mark snapshot`) or block\n"
	"  -b, --buffer SIZE      bytes per thread buffer: 4096, 64k, 16M, 1G\n"
	"      --max-size SIZE    keep the trace within SIZE plus one chunk, deleting\n"
	"                         the oldest chunks (see `mark record --help`)\n"
	"      --rotate SIZE|DURATION  cut a new chunk after SIZE bytes or DURATION\n"
	"  -d, --duration SECONDS stop after SECONDS (decimals allowed)\n"
	"      --detach           return at once; the process records with no controller\n"
	"                         until `mark stop PID` or its exit (which flushes the\n"
	"                         trace; a killed process is recovered with `mark recover`)\n"
	"  -f, --filter EXPR      record only events whose fields pass EXPR (as in\n"
	"                         `mark record --filter`; judged in the process)\n"
CLI_TRIGGER_HELP
	"  -q, --quiet            no live line and no summary\n"
	"  -h, --help             this help\n"
	"\n"
	"Exit status: 0 when a trace was written (also if the process exited during the\n"
	"recording), 1 on error (no such process, no agent, permission denied, a glob\n"
	"matching nothing, another recording running, no process named COMM), 2 on bad\n"
	"usage.  With several processes, each that exits is reported and the others\n"
	"record on; if this command is killed, every process stops its own recording.\n";

static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int parse_mode(const char *text, uint64_t *mode)
{
	enum mark_trace_mode m;
	if (mark_trace_mode_parse(text, &m) == 0) {
		*mode = (uint64_t)m;
		return 0;
	}
	cli_error("record: unknown mode \"%s\": use discard, overwrite or block", text);
	return -1;
}

static int parse_size(const char *text, uint64_t *bytes)
{
	size_t v = 0;
	if (mark_size_parse(text, &v) == 0) {
		*bytes = v;
		return 0;
	}
	cli_error("record: bad buffer size \"%s\": give bytes, or a number with k, M or G (e.g. 64k, 16M)", text);
	return -1;
}

/*
 * Create DIR (or accept an existing one without a trace); put its absolute
 * path in abs.  The process writes the trace with its own uid, so when root
 * records another user's process the directory must become that user's:
 * only a directory this call creates is handed over (fchown on the
 * descriptor of what mkdirat made), never an existing one, and the path is
 * walked without following links that anyone but root (or us) owns, so a
 * planted ~/traces -> /etc is refused, not given away.  *parent_fd and leaf
 * let the caller remove what it created, by descriptor.  *dir_fd is DIR,
 * held open: once given away, its owner may rename what is in it (and DIR
 * itself, in a sticky /tmp), so after the recording starts DIR and its
 * pid-P/ are reached through this descriptor, never by name.
 */
static bool prepare_dir(const char *output, pid_t pid, uid_t owner, gid_t group, char *abs, size_t len,
			bool *created, int *parent_fd, char *leaf, int *dir_fd)
{
	char name[PATH_MAX];
	if (!output) {
		time_t t = time(NULL);
		struct tm tm;
		localtime_r(&t, &tm);
		char stamp[32];
		strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
		snprintf(name, sizeof(name), "mark-trace-%d-%s", (int)pid, stamp);
		output = name;
	}
	if (!ctl_absolute_path(output, abs, len))
		return false;
	const bool give = geteuid() == 0 && owner != 0;
	char why[512];
	/* Parents root creates for another user must be traversable by that user. */
	int fd = mark_dir_open(output, MARK_DIR_CREATE, give ? 0755 : 0700, 0700, created, parent_fd, leaf, why,
			       sizeof(why));
	if (fd < 0) {
		cli_error("record: cannot create the trace directory %s: %s (choose another with -o DIR)", output,
			  why);
		return false;
	}
	struct stat st;
	bool ok = fstat(fd, &st) == 0;
	if (ok && give && *created) {
		/* Ours, just made: hand it to the process's user. */
		ok = fchown(fd, owner, group) == 0;
		if (!ok)
			cli_error("record: cannot give %s to uid %u: %s", abs, (unsigned)owner, strerror(errno));
	} else if (ok && give && (st.st_uid != owner || (st.st_mode & (S_IWGRP | S_IWOTH)))) {
		cli_error("record: %s is owned by uid %u (mode %04o) and was not created by this command, so it "
			  "is not given to uid %u, as which process %d runs and writes the trace; give with -o a "
			  "path that does not exist yet (mark creates it for uid %u), or a directory that only "
			  "uid %u can write", abs, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777),
			  (unsigned)owner, (int)pid, (unsigned)owner, (unsigned)owner);
		ok = false;
	}
	if (ok && !*created && cli_dir_holds_trace(fd)) {
		cli_error("record: %s already holds a trace; remove it or choose another directory with -o DIR",
			  output);
		ok = false;
	}
	if (ok)
		*dir_fd = fd;
	else
		close(fd);
	if (!ok) {
		if (*created)
			unlinkat(*parent_fd, leaf, AT_REMOVEDIR);
		if (*parent_fd >= 0)
			close(*parent_fd);
		*parent_fd = -1;
	}
	return ok;
}

/* Does each glob match at least one marker of the process? */
static int check_globs(struct ctl_conn *c, char **globs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct mark_proto_buf req;
		mark_proto_buf_init(&req);
		mark_proto_begin(&req, MARK_MSG_LIST);
		mark_proto_add_str(&req, MARK_TAG_GLOB, globs[i]);
		mark_proto_end(&req);
		int r = ctl_request(c, &req, CTL_TIMEOUT_MS);
		mark_proto_buf_free(&req);
		unsigned markers = 0;
		while (r == 0 && c->msg.type == MARK_MSG_MARKER) {
			markers++;
			r = ctl_read_reply(c);   /* within the LIST's deadline and limits */
		}
		if (r)
			return 1;
		if (ctl_reply_error(c, "record"))
			return 1;
		if (markers == 0)
			return cli_error("record: no marker matches \"%s\" in process %d (%s); `mark list %d` shows them",
					 globs[i], (int)c->pid, c->comm, (int)c->pid);
	}
	return 0;
}

/*
 * Is the process free to record?  It has one recording at a time, so one
 * that records already would refuse TRACE_START; asked before any process
 * starts, so that a command of several --pid processes is refused whole
 * rather than start some and undo them (leaving their partial traces in
 * DIR).  The agent still has the last word: another controller may start
 * in between, and then TRACE_START is refused as before.
 */
static int check_not_recording(struct ctl_conn *c)
{
	if (ctl_simple_request(c, MARK_MSG_INFO, CTL_TIMEOUT_MS) != 0 || ctl_reply_error(c, "record"))
		return 1;
	if (c->msg.type != MARK_MSG_INFO_REPLY)
		return cli_error("record: unexpected %s reply from process %d (%s)", mark_proto_type_name(c->msg.type),
				 (int)c->pid, c->comm);
	uint64_t tracing = MARK_TRACING_OFF, owner = 0;
	mark_proto_u64(&c->msg, MARK_TAG_TRACING, 0, &tracing);
	mark_proto_u64(&c->msg, MARK_TAG_OWNER_PID, 0, &owner);
	const char *dir = mark_proto_str(&c->msg, MARK_TAG_DIR, 0);
	switch (tracing) {
	case MARK_TRACING_OFF:
		return 0;
	case MARK_TRACING_CONTROLLER:
		return cli_error("record: process %d (%s) is already being recorded by another controller (`mark record "
				 "--pid`, pid %" PRIu64 "); stop that one first", (int)c->pid, c->comm, owner);
	case MARK_TRACING_DETACHED:
		return cli_error("record: process %d (%s) is already recording, detached, into %s; `mark stop %d` ends "
				 "that recording", (int)c->pid, c->comm, dir ? cli_text(dir) : "?", (int)c->pid);
	default:
		if (dir)
			return cli_error("record: process %d (%s) is already recording into %s (started by MARK_TRACE); "
					 "`mark stop %d` ends that recording", (int)c->pid, c->comm, cli_text(dir), (int)c->pid);
		return cli_error("record: process %d (%s) is already recording (started by the program through the "
				 "tracer API); one recording per process at a time", (int)c->pid, c->comm);
	}
}

/* One recorded process of this command (several with --pid P1 --pid P2 or --name). */
struct rec_target {
	pid_t pid;
	struct ctl_conn c;
	uid_t uid;                   /* owner of /proc/PID: the trace is written as it */
	gid_t gid;
	bool connected;              /* c is open                                      */
	bool started;                /* its recording runs (TRACE_START answered OK)   */
	bool exited;                 /* it exited (or closed our connection) meanwhile */
	bool dropped;                /* it sent data unasked: connection closed by us  */
	char sub[PATH_MAX + 32];     /* DIR/pid-P: its own sub-trace, for messages      */
	char sub_name[32];           /* pid-P: the same inside DIR                      */
};

static void print_totals(int dir_fd, const char *dir, const struct rec_target *t, size_t n, bool multi,
			 const char *trigger)
{
	struct live_stats s;
	if (live_stats_read_at(dir_fd, ".", &s) != 0) {
		fprintf(stderr, "mark: no statistics in %s: the tracer of %s did not start\n", cli_text(dir),
			multi ? "the processes" : "the process");
		return;
	}
	struct live_marker_count *markers = NULL;
	size_t nm = 0;
	live_stats_markers_at(dir_fd, &markers, &nm);
	live_print_marker_counts(stderr, markers, nm);
	free(markers);
	live_print_snapshots(stderr, "mark: ", dir, &s, trigger);
	if (!multi) {
		fprintf(stderr, "mark: %" PRIu64 " events written, %" PRIu64 " lost, %.1f MB from process %d (%s)\n",
			s.events_written, s.lost, (double)s.bytes_written / 1e6, (int)t[0].pid, t[0].c.comm);
	} else {
		/* One line per process (its own DIR/pid-P/, not the children it forked), then the total. */
		for (size_t i = 0; i < n; i++) {
			struct live_stats one;
			if (!t[i].started)
				continue;
			if (live_stats_read_one_at(dir_fd, t[i].sub_name, &one) != 0) {
				fprintf(stderr, "mark: process %d (%s): no statistics in %s\n", (int)t[i].pid,
					t[i].c.comm, cli_text(t[i].sub));
				continue;
			}
			fprintf(stderr, "mark: process %d (%s): %" PRIu64 " events written, %" PRIu64 " lost, %.1f MB%s\n",
				(int)t[i].pid, t[i].c.comm, one.events_written, one.lost,
				(double)one.bytes_written / 1e6, t[i].exited ? " (exited during the recording)" : "");
		}
		fprintf(stderr, "mark: total: %" PRIu64 " events written, %" PRIu64 " lost, %.1f MB from %u processes\n",
			s.events_written, s.lost, (double)s.bytes_written / 1e6, s.processes);
	}
	fprintf(stderr, "mark: trace written to %s\n", cli_text(dir));
	if (s.lost)
		fprintf(stderr, "mark: events were lost: use a larger --buffer, or --mode block to lose none\n");
}

/*
 * The process ended its recording without stopping it (it exited, was
 * killed, or exec'd another program: the pid may live on): make sure its
 * trace is complete: `name` in DIR (dir_fd), the whole directory (".") for
 * one process, its pid-P/ when there are several, so that the others,
 * still running, are not waited for; `shown` is that path for messages.
 * Reached by descriptor, without following a link: DIR is the traced
 * user's, who may have replaced pid-P/ with a link to a directory of
 * root's.
 */
static int finish_after_exit(int dir_fd, const char *name, const char *shown, pid_t pid)
{
	struct stat st;
	const bool there = fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
	if (!there || !S_ISDIR(st.st_mode))
		return cli_error("record: could not complete the trace of process %d: %s is %s (its owner "
				 "replaced it during the recording?); a link is not followed", (int)pid, shown,
				 !there ? "gone" : S_ISLNK(st.st_mode) ? "a symbolic link" : "not a directory");
	/*
	 * An exiting process's exit path finishes the trace; recovery refuses
	 * (-EBUSY) while any process still maps its buffers, so it is tried
	 * until the trace is finished or recovered, for up to 5 s.
	 */
	struct live_stats s;
	int64_t r = 0;
	for (int i = 0; i < 50; i++) {
		if (live_stats_read_at(dir_fd, name, &s) != 0 || s.unfinished == 0)
			return 0;
		r = mark_trace_recover_at(dir_fd, name, shown);   /* >= 0: the number of events recovered */
		if (r != -EBUSY)
			break;
		usleep(100000);
	}
	if (r < 0)
		return cli_error("record: could not complete the trace in %s: %s", shown, mark_last_error());
	if (r > 0 || (live_stats_read_at(dir_fd, name, &s) == 0 && s.unfinished == 0))
		fprintf(stderr, "mark: completed the trace of process %d, which ended without stopping the tracer\n",
			(int)pid);
	return 0;
}

/* Whether process pid is gone, or goes within ms: its agent's connection
 * closes on the way out, a little before the process is gone. */
static bool process_gone_within(pid_t pid, int ms)
{
	for (int waited = 0; !ctl_process_gone(pid); waited += 20) {
		if (waited >= ms)
			return false;
		usleep(20000);
	}
	return true;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return x < y ? -1 : x > y;
}

int cli_record_pid(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "name", required_argument, NULL, 'N' },
		{ "enable", required_argument, NULL, 'e' },
		{ "output", required_argument, NULL, 'o' },
		{ "mode", required_argument, NULL, 'm' },
		{ "buffer", required_argument, NULL, 'b' },
		{ "duration", required_argument, NULL, 'd' },
		{ "max-size", required_argument, NULL, 'M' },
		{ "rotate", required_argument, NULL, 'R' },
		{ "detach", no_argument, NULL, 'D' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "filter", required_argument, NULL, 'f' },
		{ "snapshot-on", required_argument, NULL, 'T' },
		{ "max-snapshots", required_argument, NULL, 'T' },
		{ "snapshot-interval", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *globs[MARK_PROTO_MAX_GLOBS + 1];
	size_t nglobs = 0;
	const char *output = NULL, *max_size_text = NULL, *rotate_text = NULL, *name = NULL;
	const char *filter = NULL;
	struct cli_trigger trigger = { 0 };
	bool mode_given = false;
	int opt_index = 0;
	pid_t *pids = NULL;
	size_t npids = 0, pids_cap = 0;
	uint64_t mode = MARK_TRACE_DISCARD, bufsize = 0;
	double duration = 0;
	bool quiet = false, detach = false;
	int ch, dir_fd = -1;
	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "p:e:o:m:b:d:f:qh", opts, &opt_index)) != -1) {
		switch (ch) {
		case 'p': {
			pid_t pid;
			if (!ctl_parse_pid(optarg, &pid)) {
				free(pids);
				return 2;
			}
			if (npids == pids_cap && cli_array_grow(&pids, &pids_cap, sizeof(*pids), 8)) {
				free(pids);
				return cli_error("record: out of memory");
			}
			pids[npids++] = pid;
			break;
		}
		case 'N':
			if (!*optarg || strlen(optarg) > 15 || strchr(optarg, '/')) {
				cli_error("record: bad --name \"%s\": give a process name as /proc/PID/comm shows it "
					  "(1 to 15 bytes; `ps -o comm` lists them)", cli_text(optarg));
				free(pids);
				return 2;
			}
			name = optarg;
			break;
		case 'e':
			if (!*optarg || strlen(optarg) >= MARK_PROTO_MAX_STRING) {
				cli_error("record: bad -e \"%s\": give one non-empty glob per -e", optarg);
				free(pids);
				return 2;
			}
			if (nglobs == MARK_PROTO_MAX_GLOBS) {
				cli_error("record: at most %d -e globs", MARK_PROTO_MAX_GLOBS);
				free(pids);
				return 2;
			}
			globs[nglobs++] = optarg;
			break;
		case 'o': output = optarg; break;
		case 'm':
			if (parse_mode(optarg, &mode)) {
				free(pids);
				return 2;
			}
			mode_given = true;
			break;
		case 'b':
			if (parse_size(optarg, &bufsize)) {
				free(pids);
				return 2;
			}
			break;
		case 'd': {
			char *end;
			duration = strtod(optarg, &end);
			if (end == optarg || *end || !(duration > 0) || !isfinite(duration)) {
				cli_error("record: bad --duration \"%s\": give a positive number of seconds", optarg);
				free(pids);
				return 2;
			}
			break;
		}
		case 'M':
			if (cli_parse_max_size(optarg)) {
				free(pids);
				return 2;
			}
			max_size_text = optarg;
			break;
		case 'R':
			if (cli_parse_rotate(optarg)) {
				free(pids);
				return 2;
			}
			rotate_text = optarg;
			break;
		case 'D': detach = true; break;
		case 'q': quiet = true; break;
		case 'f':
			/* Refused here with its column, before the process is contacted. */
			if (cli_filter_check("record", optarg) != 0) {
				free(pids);
				return 2;
			}
			filter = optarg;
			break;
		case 'T':
			if (cli_trigger_option("record", opts[opt_index].name, optarg, &trigger) != 0) {
				free(pids);
				return 2;
			}
			break;
		case 'h': fputs(cli_record_pid_usage, stdout); free(pids); return 0;
		default:
			cli_error("record: %s: unknown option or missing argument; see `mark record --help`",
				  argv[optind - 1]);
			free(pids);
			return 2;
		}
	}
	int status = 2;
	struct rec_target *t = NULL;
	size_t n = 0;
	if (optind < argc) {
		cli_error("record: unexpected argument \"%s\" with --pid (a command to run goes with "
			  "`mark record -- CMD`, not with --pid)", argv[optind]);
		goto out;
	}
	if (!npids && !name) {
		cli_error("record: give the process with --pid PID (repeatable) or --name COMM");
		goto out;
	}
	if (npids && name) {
		cli_error("record: give either --pid PID... or --name COMM, not both");
		goto out;
	}
	if (max_size_text && rotate_text && cli_check_rotate_within(max_size_text, rotate_text))
		goto out;
	if (cli_trigger_mode("record", &trigger, mode_given, (int)mode) != 0)
		goto out;
	if (trigger.spec)
		mode = MARK_TRACE_OVERWRITE;
	if (detach && duration > 0) {
		cli_error("record: --detach and --duration do not go together: a detached recording runs until "
			  "`mark stop PID` or the process's exit");
		goto out;
	}
	/* Parsed again here: cli_parse_* above checked them. */
	size_t max_size = 0;
	uint64_t rotate_size = 0, rotate_ms = 0;
	if (max_size_text)
		mark_size_parse(max_size_text, &max_size);
	if (rotate_text)
		mark_rotate_parse(rotate_text, &rotate_size, &rotate_ms);
	if (nglobs == 0)
		globs[nglobs++] = "*";
	globs[nglobs] = NULL;
	status = 1;
	if (name) {
		if (ctl_pids_named("record", name, &pids, &npids, &pids_cap) != 0)
			goto out;
		if (npids == 0) {
			cli_error("record: no process is named \"%s\" (the name /proc/PID/comm shows: at most 15 "
				  "bytes of the program's name; `ps -eo pid,comm` lists them)", cli_text(name));
			goto out;
		}
	}
	/* One process once, in pid order (the order of the messages and the summary). */
	qsort(pids, npids, sizeof(*pids), cmp_pid);
	t = calloc(npids, sizeof(*t));
	if (!t) {
		cli_error("record: out of memory");
		goto out;
	}
	for (size_t i = 0; i < npids; i++)
		if (i == 0 || pids[i] != pids[i - 1])
			t[n++].pid = pids[i];
	/*
	 * --pid P...: all or nothing (each was named; a typo must not record
	 * a subset silently).  --name: every process of that name that can be
	 * recorded is; each other one is reported with the reason and skipped.
	 */
	const bool best_effort = name != NULL;
	const bool multi = n > 1;
	size_t usable = 0;
	uid_t owner = 0;
	gid_t group = 0;
	for (size_t i = 0; i < n; i++) {
		struct rec_target *x = &t[i];
		struct stat pst;
		char proc[64];
		bool ok = ctl_connect(&x->c, x->pid) == 0;
		x->connected = ok;
		if (ok && check_globs(&x->c, globs, nglobs))
			ok = false;
		if (ok && check_not_recording(&x->c))
			ok = false;
		snprintf(proc, sizeof(proc), "/proc/%d", (int)x->pid);
		if (ok && stat(proc, &pst) != 0) {
			cli_error("process %d exited", (int)x->pid);
			ok = false;
		}
		if (ok) {
			x->uid = pst.st_uid;
			x->gid = pst.st_gid;
			if (usable == 0) {
				owner = x->uid;
				group = x->gid;
			} else if (x->uid != owner) {
				/* The trace directory is private to one uid (the tracer refuses others). */
				cli_error("record: process %d (%s) runs as uid %u, the other processes as uid %u: one "
					  "trace directory belongs to one user; record it with a separate `mark record`",
					  (int)x->pid, x->c.comm, (unsigned)x->uid, (unsigned)owner);
				ok = false;
			}
		}
		if (!ok) {
			if (x->connected)
				ctl_close(&x->c);
			x->connected = false;
			if (!best_effort)
				goto out;
			fprintf(stderr, "mark: record: process %d skipped (the reason is above); the other processes "
				"named \"%s\" are recorded\n", (int)x->pid, cli_text(name));
			continue;
		}
		usable++;
	}
	if (usable == 0) {
		cli_error("record: none of the %zu processes named \"%s\" can be recorded (each said why above)", n,
			  cli_text(name));
		goto out;
	}
	pid_t first = 0;
	for (size_t i = 0; i < n && !first; i++)
		if (t[i].connected)
			first = t[i].pid;
	char dir[PATH_MAX], leaf[NAME_MAX + 1];
	bool created = false;
	int parent_fd = -1;
	if (!prepare_dir(output, first, owner, group, dir, sizeof(dir), &created, &parent_fd, leaf, &dir_fd))
		goto out;
	if (strlen(dir) >= MARK_PROTO_MAX_STRING) {
		if (created)
			unlinkat(parent_fd, leaf, AT_REMOVEDIR);
		close(parent_fd);
		cli_error("record: the trace directory path is longer than %d bytes", MARK_PROTO_MAX_STRING - 1);
		goto out;
	}

	struct mark_proto_buf req;
	mark_proto_buf_init(&req);
	mark_proto_begin(&req, MARK_MSG_TRACE_START);
	mark_proto_add_str(&req, MARK_TAG_DIR, dir);
	mark_proto_add_u64(&req, MARK_TAG_MODE, mode);
	if (bufsize)
		mark_proto_add_u64(&req, MARK_TAG_BUFSIZE, bufsize);
	if (max_size)
		mark_proto_add_u64(&req, MARK_TAG_MAX_SIZE, max_size);
	if (rotate_size)
		mark_proto_add_u64(&req, MARK_TAG_ROTATE_SIZE, rotate_size);
	if (rotate_ms)
		mark_proto_add_u64(&req, MARK_TAG_ROTATE_MS, rotate_ms);
	if (detach)
		mark_proto_add_u64(&req, MARK_TAG_DETACH, 1);
	if (filter)
		mark_proto_add_str(&req, MARK_TAG_FILTER, filter);   /* <= 1024 bytes: parsed */
	if (trigger.spec)
		mark_proto_add_str(&req, MARK_TAG_SNAPSHOT_ON, trigger.spec);   /* checked: <= 1024 bytes */
	if (trigger.max_snapshots)
		mark_proto_add_u64(&req, MARK_TAG_MAX_SNAPSHOTS, trigger.max_snapshots);
	if (trigger.interval_ms)
		mark_proto_add_u64(&req, MARK_TAG_SNAPSHOT_INTERVAL_MS, trigger.interval_ms);
	for (size_t i = 0; i < nglobs; i++)
		mark_proto_add_str(&req, MARK_TAG_GLOB, globs[i]);
	mark_proto_end(&req);
	/*
	 * Every process gets the same directory and writes its own DIR/pid-P/
	 * (as forked children do), each with its own clock mapping its TSC to
	 * wall-clock time: readers merge them by time (docs/control.md).
	 */
	size_t started = 0;
	bool abort_all = false;
	for (size_t i = 0; i < n && !abort_all; i++) {
		struct rec_target *x = &t[i];
		if (!x->connected)
			continue;
		snprintf(x->sub_name, sizeof(x->sub_name), "%s%d", MARK_TF_CHILD_PREFIX, (int)x->pid);
		snprintf(x->sub, sizeof(x->sub), "%s/%s", dir, x->sub_name);
		int r = ctl_request(&x->c, &req, CTL_TIMEOUT_MS);
		if (r == 0 && ctl_reply_error(&x->c, "record"))
			r = 1;
		if (r == 0) {
			x->started = true;
			started++;
			continue;
		}
		ctl_close(&x->c);
		x->connected = false;
		if (best_effort)
			fprintf(stderr, "mark: record: process %d skipped (the reason is above)\n", (int)x->pid);
		else
			abort_all = true;
	}
	mark_proto_buf_free(&req);
	if (abort_all) {
		/* All or nothing: end what started (a controller's recording ends with its connection). */
		for (size_t i = 0; i < n; i++) {
			if (!t[i].started)
				continue;
			/* Stopped now, not when the command exits: the message
			 * below must be true when it is printed. */
			int r = detach ? ctl_stop_dir(&t[i].c, dir) : ctl_simple_request(&t[i].c, MARK_MSG_TRACE_STOP, 60000);
			if (r == 0)
				ctl_reply_error(&t[i].c, "record: undoing the start");
			ctl_close(&t[i].c);
			t[i].connected = false;
			t[i].started = false;
			fprintf(stderr, "mark: record: stopped the recording of process %d again: the command "
				"records all of its --pid processes or none\n", (int)t[i].pid);
		}
		started = 0;
	}
	if (started == 0) {
		/* Leave no empty directory of ours behind for a recording that never started. */
		if (created && unlinkat(parent_fd, leaf, AT_REMOVEDIR) != 0 && errno == ENOTEMPTY)
			/* Only if empty: what the undone recordings wrote is never deleted by name. */
			fprintf(stderr, "mark: record: %s holds what the recordings undone above wrote before they were "
				"stopped; remove it before giving it to -o again\n", cli_text(dir));
		close(parent_fd);
		goto out;
	}
	close(parent_fd);
	status = 0;
	if (detach) {
		/* No controller: each process records until `mark stop PID` or its exit. */
		for (size_t i = 0; i < n; i++) {
			if (!t[i].started)
				continue;
			if (!quiet)
				fprintf(stderr, "mark: process %d (%s) records into %s, detached; `mark stop %d` ends the "
					"recording\n", (int)t[i].pid, t[i].c.comm, cli_text(dir), (int)t[i].pid);
		}
		goto out;
	}

	struct sigaction sa = { .sa_handler = on_stop_signal }, old[3];
	sigemptyset(&sa.sa_mask);
	const int sigs[3] = { SIGINT, SIGTERM, SIGHUP };
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &sa, &old[i]);
	if (!quiet) {
		if (!multi) {
			fprintf(stderr, "mark: recording process %d (%s) into %s", (int)t[0].pid, t[0].c.comm,
				cli_text(dir));
		} else {
			fprintf(stderr, "mark: recording %zu processes (", started);
			const char *sep = "";
			for (size_t i = 0; i < n; i++)
				if (t[i].started) {
					fprintf(stderr, "%s%d %s", sep, (int)t[i].pid, t[i].c.comm);
					sep = ", ";
				}
			fprintf(stderr, ") into %s", cli_text(dir));
		}
		if (duration > 0)
			fprintf(stderr, " for %g s", duration);
		fprintf(stderr, "; Ctrl-C stops\n");
	}
	struct liveline *line = quiet ? NULL : liveline_start_at(dir_fd);
	double end = duration > 0 ? now_s() + duration : 0;
	struct pollfd *pfd = calloc(n, sizeof(*pfd));
	size_t *which = calloc(n, sizeof(*which));
	size_t running = started;
	while (!stop_requested && running > 0 && pfd && which) {
		int timeout = 250;
		if (end > 0) {
			double left = end - now_s();
			if (left <= 0)
				break;
			if (left * 1000 < timeout)
				timeout = (int)(left * 1000) + 1;
		}
		nfds_t np = 0;
		for (size_t i = 0; i < n; i++)
			if (t[i].started && !t[i].exited && !t[i].dropped) {
				pfd[np] = (struct pollfd){ .fd = t[i].c.fd, .events = POLLIN };
				which[np++] = i;
			}
		int pr = poll(pfd, np, timeout);
		for (nfds_t k = 0; pr > 0 && k < np; k++) {
			if (!pfd[k].revents)
				continue;
			/* The agent sends nothing unasked: readable means closed. */
			char byte;
			struct rec_target *x = &t[which[k]];
			if (recv(x->c.fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0) {
				/*
				 * Data nobody asked for: a protocol error (a broken
				 * agent, or not one).  Left in the socket it kept
				 * poll() returning at once, a core busy for the
				 * whole recording, and would be read as the reply
				 * to TRACE_STOP.  Our connection is closed instead,
				 * which ends that process's recording as a
				 * controller's exit does (the agent disarms and
				 * finishes its trace); the others record on.
				 */
				if (line)
					fputs("\r\033[K", stderr);   /* over the live line */
				cli_error("process %d (%s) sent data that no request asked for during the recording: its "
					  "agent is broken, or what answers on %s is not a mark agent; its recording is "
					  "ended (the connection closed) and may be incomplete: check what process %d runs",
					  (int)x->pid, x->c.comm, x->c.path, (int)x->pid);
				ctl_close(&x->c);
				x->connected = false;
				x->dropped = true;
				running--;
				status = 1;
				continue;
			}
			/*
			 * That process exited (or its agent ended our connection):
			 * its trace is finished (or completed from its buffers)
			 * now; the others record on.
			 */
			x->exited = true;
			running--;
			if (!quiet)
				fprintf(stderr, "%smark: process %d (%s) %s%s\n", line ? "\r\033[K" : "", (int)x->pid,
					x->c.comm,
					process_gone_within(x->pid, 1000) ? "exited during the recording"
									  : "ended its recording without stopping it (it "
									    "exec'd another program, or closed the "
									    "agent's descriptors)",
					running ? "; the other processes record on" : "");
			if (finish_after_exit(dir_fd, multi ? x->sub_name : ".", multi ? x->sub : dir, x->pid))
				status = 1;
		}
	}
	free(pfd);
	free(which);
	liveline_stop(line);
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &old[i], NULL);

	for (size_t i = 0; i < n; i++) {
		struct rec_target *x = &t[i];
		if (!x->started || x->exited || x->dropped)
			continue;
		int r = ctl_simple_request(&x->c, MARK_MSG_TRACE_STOP, 60000);
		if (r == 0 && ctl_reply_error(&x->c, "record: stopping")) {
			status = 1;
		} else if (r) {
			x->exited = ctl_process_gone(x->pid);
			if (!x->exited)
				status = 1;
			else {
				if (!quiet)
					fprintf(stderr, "mark: process %d (%s) exited during the recording\n", (int)x->pid,
						x->c.comm);
				if (finish_after_exit(dir_fd, multi ? x->sub_name : ".", multi ? x->sub : dir, x->pid))
					status = 1;
			}
		}
	}
	if (!quiet)
		print_totals(dir_fd, dir, t, n, multi, trigger.spec);
out:
	for (size_t i = 0; t && i < n; i++)
		if (t[i].connected)
			ctl_close(&t[i].c);
	if (dir_fd >= 0)
		close(dir_fd);
	free(t);
	free(pids);
	return status;
}

/*
 * `mark record -d DURATION -- CMD`: stop the recordings that CMD and the
 * processes it forked run into `dir` (their MARK_TRACE), through their
 * agents, and let the processes run on.  Each process writes DIR/pid-P/;
 * those whose .mark-stats is not final yet and that still run are asked to
 * stop, naming `dir`, so that only the recording `mark record` started is
 * stopped (src/agent/agent.c, do_trace_stop).  Returns the number of
 * recordings that could not be stopped (each said why on stderr).
 */
int cli_record_stop_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d) {
		cli_error("record: cannot read the trace directory %s to stop its recordings: %s", dir,
			  strerror(errno));
		return 1;
	}
	int failed = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		const char *num = de->d_name + strlen(MARK_TF_CHILD_PREFIX);
		char *end;
		if (strncmp(de->d_name, MARK_TF_CHILD_PREFIX, strlen(MARK_TF_CHILD_PREFIX)) != 0)
			continue;
		long pid = strtol(num, &end, 10);
		if (end == num || *end || pid <= 0 || pid > INT_MAX)
			continue;
		struct live_stats st;
		/* Final already (it exited, or stopped its tracer): nothing to do.
		 * (pid-P/ inside the directory listed, never through a link.) */
		if (live_stats_read_one_at(dirfd(d), de->d_name, &st) != 0 || st.unfinished == 0 ||
		    ctl_process_gone((pid_t)pid))
			continue;
		struct ctl_conn c;
		if (ctl_connect(&c, (pid_t)pid)) {
			failed++;
			continue;
		}
		int r = ctl_stop_dir(&c, dir);
		/* A process that exited meanwhile is finished by recovery later. */
		if ((r == 0 && ctl_reply_error(&c, "record: stopping the recording")) ||
		    (r != 0 && !ctl_process_gone((pid_t)pid)))
			failed++;
		ctl_close(&c);
	}
	closedir(d);
	return failed;
}
