/*
 * `mark record [-e GLOB]... [-o DIR] [--mode M] [--buffer SIZE] [--max-size SIZE]
 *  [--rotate SIZE|DURATION] -- CMD ARGS...`
 *
 * Runs CMD with the tracer's environment configuration (MARK_ENABLE,
 * MARK_TRACE, MARK_MODE, MARK_BUFFER: read by libmark's constructor in the
 * program), shows live statistics while it runs, makes the trace complete
 * if the program died without stopping the tracer, prints a summary and
 * exits with the program's status (128+N if signal N killed it, as a shell
 * reports it).
 *
 * Signals, as a shell treats its foreground job: SIGINT and SIGQUIT typed
 * at the terminal (and SIGHUP at hangup) reach the whole foreground process
 * group, so the program already has them; we do not send them a second
 * time, and we do not die of them ourselves, because the trace still needs
 * finishing after the program exits.  The same signals sent to `mark` alone (kill -INT <mark's pid>),
 * and SIGTERM/SIGHUP, are forwarded to the program.  They are taken
 * synchronously (sigwaitinfo), never by an asynchronous handler.
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
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static const char record_usage[] =
	"usage: mark record [OPTIONS] -- CMD [ARGS...]\n"
	"       mark record --pid PID [OPTIONS]   (a running process: see\n"
	"                                         `mark record --pid 1 --help`;\n"
	"                                         --pid again, or --name COMM: several)\n"
	"\n"
	"Run CMD with the markers matching the globs armed and recorded by the tracer\n"
	"inside libmark, writing a CTF 1.8 trace directory that `mark view`, `mark stats`,\n"
	"`mark export` and babeltrace2 read.  CMD must use libmark (link with -lmark);\n"
	"the tracer is configured through MARK_ENABLE, MARK_TRACE, MARK_MODE,\n"
	"MARK_BUFFER, MARK_MAX_SIZE, MARK_ROTATE, MARK_FILTER, MARK_SNAPSHOT_ON,\n"
	"MARK_MAX_SNAPSHOTS and MARK_SNAPSHOT_INTERVAL in CMD's environment (values\n"
	"given here replace inherited ones).\n"
	"\n"
	"Options:\n"
	"  -e, --enable GLOB   record markers matching GLOB (* ? [...]); repeatable;\n"
	"                      default: every marker\n"
	"  -o, --output DIR    trace directory (created; must not already hold a trace);\n"
	"                      default: ./mark-trace-YYYYMMDD-HHMMSS\n"
	"  -m, --mode MODE     what to do when a buffer is full:\n"
	"                        discard    drop new events and count them (default)\n"
	"                        overwrite  flight recorder: keep the newest events,\n"
	"                                   written at exit or by `mark snapshot PID`\n"
	"                        block      never lose events: the program waits\n"
	"  -b, --buffer SIZE   bytes per thread buffer, 4k to 4G: 4096, 64k, 16M, 1G\n"
	"                      (default 2M)\n"
	"      --max-size SIZE keep the trace within SIZE (at least 1M) plus one chunk:\n"
	"                      it is written in chunks (each a complete trace) and the\n"
	"                      oldest are deleted; `mark stats` counts their events as\n"
	"                      rotated away\n"
	"      --rotate SIZE|DURATION\n"
	"                      cut a new chunk after SIZE bytes (64M) or DURATION\n"
	"                      (500ms, 30s, 10min, 1h), deleting nothing\n"
	"  -d, --duration SECONDS\n"
	"                      stop recording after SECONDS (decimals allowed); CMD\n"
	"                      keeps running and `mark` waits for it as without -d\n"
	"  -f, --filter EXPR   record only events whose fields pass EXPR, checked in\n"
	"                      the program before anything is written, e.g.\n"
	"                        --filter 'status == 500 && path == \"/api/*\"'\n"
	"                      fields as `mark view` names them; == != < <= > >=,\n"
	"                      && || !, ( ), bitwise &; strings compare with ==/!=\n"
	"                      and * globs.  An event of a marker without a field\n"
	"                      EXPR names is not recorded.  (MARK_FILTER in CMD's\n"
	"                      environment)\n"
	CLI_TRIGGER_HELP
	"  -q, --quiet         no live line and no summary (errors are still printed)\n"
	"  -h, --help          this help\n"
	"\n"
	"On a terminal, a status line shows events/s, events recorded, lost events and\n"
	"MB written, about 4 times a second.  At the end a summary gives the events of\n"
	"each marker, the lost events and the trace directory.  If CMD dies by a signal\n"
	"the trace is completed from its shared-memory buffers, so it holds every\n"
	"event recorded before the death.\n"
	"\n"
	"Signals from the terminal (^C, ^\\, hangup) reach CMD directly; SIGINT, SIGQUIT,\n"
	"SIGTERM and SIGHUP sent to `mark` itself are forwarded to CMD.  Either way\n"
	"`mark` waits for CMD to end, then finishes the trace.\n"
	"\n"
	"Exit status: CMD's exit status, or 128+N if signal N killed it; 127 if CMD\n"
	"was not found, 126 if it could not be run; 2 on bad usage; 1 if the trace\n"
	"directory could not be created.\n";

/* SIGCHLD must not be ignored while blocked, or it may be discarded. */
static void note_child(int sig)
{
	(void)sig;
}

/*
 * Wait for CMD while forwarding signals.  The forwarded signals and SIGCHLD
 * are blocked and taken synchronously with sigwaitinfo(): there is no
 * asynchronous handler, so nothing depends on when a handler would run (a
 * sanitizer runtime may defer one indefinitely while the thread sleeps in
 * waitpid), and a signal that arrived before CMD existed is still pending
 * and forwarded once.  Signals the kernel sent (si_code SI_KERNEL: the
 * terminal's ^C, ^\ and hangup) went to the whole foreground process
 * group, CMD included, so they are not sent a second time.
 */
static int wait_forwarding(pid_t pid, const sigset_t *waited, const struct timespec *until, bool *timed_out)
{
	int wstatus = 0;
	for (;;) {
		pid_t w = waitpid(pid, &wstatus, WNOHANG);
		if (w == pid || (w < 0 && errno != EINTR))
			return wstatus;
		siginfo_t info;
		int sig;
		if (until) {
			/* -d: wait at most until `until` (CLOCK_MONOTONIC), then return
			 * with CMD still running and *timed_out set. */
			struct timespec now, left;
			clock_gettime(CLOCK_MONOTONIC, &now);
			left.tv_sec = until->tv_sec - now.tv_sec;
			left.tv_nsec = until->tv_nsec - now.tv_nsec;
			if (left.tv_nsec < 0) {
				left.tv_nsec += 1000000000L;
				left.tv_sec--;
			}
			if (left.tv_sec < 0) {
				*timed_out = true;
				return 0;
			}
			sig = sigtimedwait(waited, &info, &left);
		} else {
			sig = sigwaitinfo(waited, &info);
		}
		if (sig < 0 || sig == SIGCHLD || info.si_code == SI_KERNEL)
			continue;
		kill(pid, sig);
	}
}

/* ---------------- argument checks ---------------- */

/*
 * The tracer's own parsers and limits decide what MARK_MODE and MARK_BUFFER
 * accept, so `mark record` rejects before running CMD exactly what the
 * tracer would reject after (it would then run CMD untraced).
 */
static int parse_mode(const char *text, enum mark_trace_mode *mode)
{
	if (mark_trace_mode_parse(text, mode) == 0)
		return 0;
	cli_error("record: bad --mode \"%s\": use discard, overwrite or block", text);
	return -1;
}

static int parse_size(const char *text, size_t *bytes)
{
	if (mark_size_parse(text, bytes) == 0 && *bytes >= MARK_TRACE_BUFFER_MIN && *bytes <= MARK_TRACE_BUFFER_MAX)
		return 0;
	cli_error("record: bad --buffer \"%s\": give a size from 4k to 4G, like 4096, 64k, 16M or 1G", text);
	return -1;
}

int cli_parse_max_size(const char *text)
{
	size_t bytes;
	if (mark_size_parse(text, &bytes) == 0 && bytes >= (1u << 20))
		return 0;
	cli_error("record: bad --max-size \"%s\": give a size of at least 1M, like 20M or 1G", text);
	return -1;
}

int cli_parse_rotate(const char *text)
{
	uint64_t bytes, ms;
	if (mark_rotate_parse(text, &bytes, &ms) == 0 && (ms || bytes >= 4096))
		return 0;
	cli_error("record: bad --rotate \"%s\": give a size of at least 4k (64M) or a duration (500ms, 30s, "
		  "10min, 1h)", text);
	return -1;
}

/* The tracer cuts chunks of at most half of --max-size (else deleting one
 * would not keep the bound): refuse here what it would refuse in CMD. */
int cli_check_rotate_within(const char *max_size, const char *rotate)
{
	size_t max = 0;
	uint64_t bytes = 0, ms = 0;
	if (mark_size_parse(max_size, &max) == 0 && mark_rotate_parse(rotate, &bytes, &ms) == 0 && bytes > max / 2) {
		cli_error("record: --rotate %s is more than half of --max-size %s: give a smaller --rotate "
			  "(or none: the default chunk is an eighth of --max-size)", rotate, max_size);
		return -1;
	}
	return 0;
}

/* ---------------- the trace directory ---------------- */

/* The output directory, and what is needed to remove it if this call made it. */
struct out_dir {
	char *path;                 /* absolute, links not resolved (MARK_TRACE)   */
	bool created;               /* made by this call                           */
	int parent_fd;              /* the directory holding it, or -1             */
	char leaf[NAME_MAX + 1];    /* its name there                              */
};

/* Remove the directory if this call created it and it is still empty. */
static bool out_dir_remove_empty(const struct out_dir *o)
{
	return o->created && o->parent_fd >= 0 && unlinkat(o->parent_fd, o->leaf, AT_REMOVEDIR) == 0;
}

static void out_dir_free(struct out_dir *o)
{
	if (o->parent_fd >= 0)
		close(o->parent_fd);
	free(o->path);
}

/*
 * Create the output directory (0700; missing parents 0755), walking the
 * path with safe_dir.h's rules (no link owned by another user is followed).
 * The default name has the time to the second; a second run in the same
 * second gets a suffix.  o->path is absolute without resolving links:
 * MARK_TRACE must stay valid if CMD changes its working directory, and the
 * tracer walks it again with the same rules.  An existing empty directory
 * given with -o is used as it is (the tracer checks it is private).
 */
static bool make_output_dir(const char *requested, struct out_dir *o)
{
	memset(o, 0, sizeof(*o));
	o->parent_fd = -1;
	char path[PATH_MAX], why[512];
	int fd = -1;
	if (requested) {
		if (strlen(requested) >= sizeof(path) - 1) {
			cli_error("record: output path too long: %s", requested);
			return false;
		}
		snprintf(path, sizeof(path), "%s", requested);
		fd = mark_dir_open(path, MARK_DIR_CREATE, 0755, 0700, &o->created, &o->parent_fd, o->leaf, why,
				   sizeof(why));
		if (fd < 0) {
			cli_error("record: cannot create trace directory %s: %s (choose another with -o DIR)", path,
				  why);
			return false;
		}
		if (!o->created && cli_dir_holds_trace(fd)) {
			cli_error("record: %s already holds a trace; remove it or choose another with -o DIR", path);
			close(fd);
			out_dir_free(o);
			return false;
		}
	} else {
		time_t now = time(NULL);
		struct tm tm;
		localtime_r(&now, &tm);
		char base[64];
		strftime(base, sizeof(base), "mark-trace-%Y%m%d-%H%M%S", &tm);
		for (int n = 1; n < 100 && !o->created; n++) {
			if (n == 1)
				snprintf(path, sizeof(path), "%s", base);
			else
				snprintf(path, sizeof(path), "%s-%d", base, n);
			if (fd >= 0) {
				close(fd);
				close(o->parent_fd);
			}
			fd = mark_dir_open(path, MARK_DIR_CREATE, 0755, 0700, &o->created, &o->parent_fd, o->leaf,
					   why, sizeof(why));
			if (fd < 0) {
				char cwd[PATH_MAX];
				cli_error("record: cannot create trace directory %s in %s: %s (choose another with -o DIR)",
					  path, getcwd(cwd, sizeof(cwd)) ? cwd : ".", why);
				return false;
			}
		}
		if (!o->created) {
			cli_error("record: could not pick a free name %s-N; choose one with -o DIR", base);
			close(fd);
			out_dir_free(o);
			return false;
		}
	}
	/* mkdir succeeds for root on read-only-permission dirs but not on a read-only
	 * file system; check we can really create files there before starting CMD. */
	static const char probe[] = ".mark-write-test";
	int pfd = mark_file_create_at(fd, probe, O_WRONLY);
	if (pfd < 0 && pfd != -EEXIST) {
		cli_error("record: trace directory %s is not writable: %s (choose another with -o DIR)", path,
			  strerror(-pfd));
		close(fd);
		out_dir_remove_empty(o);
		out_dir_free(o);
		return false;
	}
	if (pfd >= 0) {
		close(pfd);
		unlinkat(fd, probe, 0);   /* ours: created by the O_EXCL open above */
	}
	close(fd);
	char abs[PATH_MAX];
	if (!ctl_absolute_path(path, abs, sizeof(abs)) || !(o->path = strdup(abs))) {
		out_dir_remove_empty(o);
		out_dir_free(o);
		return false;
	}
	return true;
}

/* ---------------- running CMD ---------------- */

/* The tracer's settings in CMD's environment (src/tracer/session.c). */
enum {
	ENV_ENABLE, ENV_TRACE, ENV_MODE, ENV_BUFFER, ENV_MAX_SIZE, ENV_ROTATE, ENV_FILTER, ENV_SNAPSHOT_ON,
	ENV_MAX_SNAPSHOTS, ENV_SNAPSHOT_INTERVAL, ENV_COUNT
};
static const char *const env_names[ENV_COUNT] = {
	"MARK_ENABLE", "MARK_TRACE", "MARK_MODE", "MARK_BUFFER", "MARK_MAX_SIZE", "MARK_ROTATE", "MARK_FILTER",
	"MARK_SNAPSHOT_ON", "MARK_MAX_SNAPSHOTS", "MARK_SNAPSHOT_INTERVAL",
};

static int env_is_ours(const char *entry)
{
	for (size_t i = 0; i < ENV_COUNT; i++) {
		size_t n = strlen(env_names[i]);
		if (strncmp(entry, env_names[i], n) == 0 && entry[n] == '=')
			return 1;
	}
	return 0;
}

/*
 * CMD's environment: ours minus inherited MARK_* settings, plus the
 * session's (values[i] for env_names[i]; NULL: not set).  The first
 * *inherited entries are borrowed from environ; the ones after are ours
 * (free them with free_child_environment()).
 */
static char **child_environment(const char *const values[ENV_COUNT], size_t *inherited)
{
	size_t n = 0;
	for (char **e = environ; *e; e++)
		n++;
	char **env = calloc(n + ENV_COUNT + 1, sizeof(*env));
	if (!env)
		return NULL;
	size_t k = 0;
	for (char **e = environ; *e; e++)
		if (!env_is_ours(*e))
			env[k++] = *e;
	*inherited = k;
	int ok = 1;
	for (size_t i = 0; i < ENV_COUNT && ok; i++)
		if (values[i])
			ok = asprintf(&env[k++], "%s=%s", env_names[i], values[i]) >= 0;
	if (!ok) {
		/* asprintf leaves its pointer undefined on failure: clear it before freeing. */
		env[k - 1] = NULL;
		for (size_t i = *inherited; i < k; i++)
			free(env[i]);
		free(env);
		return NULL;
	}
	env[k] = NULL;
	return env;
}

static void free_child_environment(char **env, size_t inherited)
{
	for (size_t i = inherited; env[i]; i++)
		free(env[i]);
	free(env);
}

/*
 * fork + execvpe.  An exec failure is reported through a close-on-exec
 * pipe, so the parent can tell "CMD not found" from "CMD ran and exited 127".
 * Returns the pid, or -1 with *exec_errno set.
 */
static pid_t spawn(char **argv, char **env, int *exec_errno)
{
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) != 0) {
		*exec_errno = errno;
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		*exec_errno = errno;
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (pid == 0) {
		close(pfd[0]);
		/* Restore what CMD should inherit: default dispositions, no blocked signals. */
		struct sigaction dfl = { .sa_handler = SIG_DFL };
		sigaction(SIGINT, &dfl, NULL);
		sigaction(SIGQUIT, &dfl, NULL);
		sigaction(SIGTERM, &dfl, NULL);
		sigaction(SIGHUP, &dfl, NULL);
		sigaction(SIGCHLD, &dfl, NULL);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execvpe(argv[0], argv, env);
		int err = errno;
		(void)!write(pfd[1], &err, sizeof(err));
		_exit(127);
	}
	close(pfd[1]);
	int err = 0;
	ssize_t r;
	do
		r = read(pfd[0], &err, sizeof(err));
	while (r < 0 && errno == EINTR);
	close(pfd[0]);
	if (r == (ssize_t)sizeof(err)) {
		waitpid(pid, NULL, 0);
		*exec_errno = err;
		return -1;
	}
	return pid;
}

/* ---------------- the end ---------------- */

/*
 * Make the trace complete if CMD, or a process it forked, ended without
 * stopping its tracer (killed by a signal, _exit, exec): the tracer's
 * recovery turns the events left in its shared-memory rings (.mark-ring-N)
 * into the missing packets.  Each process's trace (DIR itself, DIR/pid-P,
 * DIR/pid-P.K for the image of P before its K-th exec) is recovered on its
 * own, so that the message names the process that left the events: CMD
 * itself (pid `cmd_pid`), or a process it forked.  Reading .mark-stats
 * first saves the work for a clean run.  Returns the events recovered, or
 * -1 after printing why it failed.
 */
/*
 * Complete the trace in `name` inside the directory dfd ("." for DIR
 * itself), `shown` in messages: reached by descriptor, never through a
 * link (the tracer makes none; recovery must not be sent elsewhere).
 */
static int64_t complete_one(int dfd, const char *name, const char *shown, const char *cmd, pid_t cmd_pid,
			    bool quiet_run)
{
	struct live_stats s;
	/* A statistics file that cannot be read is no proof of a complete
	 * trace: recovery then says what is wrong with it.  Only a directory
	 * with no statistics file at all holds no trace of its own (DIR,
	 * whose traces are in DIR/pid-P). */
	if (live_stats_read_one_at(dfd, name, &s) == 0) {
		if (s.unfinished == 0)
			return 0;
	} else {
		char stats[NAME_MAX + 32];
		snprintf(stats, sizeof(stats), "%s/%s", name, MARK_TF_STATS);
		if (fstatat(dfd, stats, &(struct stat){ 0 }, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT)
			return 0;
	}
	int r = mark_trace_recover_at(dfd, name, shown);
	if (r < 0) {
		fprintf(stderr, "%s\nmark: the trace in %s may lack the events that were still in its buffers\n",
			cli_message_text(mark_last_error()), cli_text(shown));
		return -1;
	}
	if (quiet_run || r == 0)
		return r;
	/* name: "." for DIR itself, else "pid-P" or "pid-P.K". */
	const bool top = strcmp(name, ".") == 0;
	long pid = top ? (long)cmd_pid : strtol(name + strlen(MARK_TF_CHILD_PREFIX), NULL, 10);
	bool before_exec = !top && strchr(name, '.') != NULL;
	if (before_exec)
		fprintf(stderr, "mark: process %ld (run by %s) exec'd another program without stopping its "
			"tracer: recovered %d events from its buffers\n", pid, cli_text(cmd), r);
	else if (pid == (long)cmd_pid)
		fprintf(stderr, "mark: %s ended without stopping the tracer: recovered %d events from its "
			"buffers\n", cli_text(cmd), r);
	else
		fprintf(stderr, "mark: process %ld (forked by %s) ended without stopping its tracer: recovered "
			"%d events from its buffers\n", pid, cli_text(cmd), r);
	return r;
}

static int64_t complete_trace(const char *dir, const char *cmd, pid_t cmd_pid, bool quiet_run)
{
	struct live_stats s;
	/* As in complete_one: unreadable statistics are no proof of a complete trace. */
	if (live_stats_read(dir, &s) == 0 && s.unfinished == 0)
		return 0;
	/* DIR is the caller's choice (a link to it is followed); nothing in it is. */
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		fprintf(stderr, "mark: cannot open the trace directory %s to complete its trace: %s\n",
			cli_text(dir), strerror(errno));
		return -1;
	}
	int64_t total = 0, r = complete_one(dfd, ".", dir, cmd, cmd_pid, quiet_run);
	bool failed = r < 0;
	total += r > 0 ? r : 0;
	DIR *d = mark_dir_list_at(dfd);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		/* pid-P or pid-P.K, a directory (never a link). */
		if (strncmp(de->d_name, MARK_TF_CHILD_PREFIX, strlen(MARK_TF_CHILD_PREFIX)) != 0)
			continue;
		const char *p = de->d_name + strlen(MARK_TF_CHILD_PREFIX);
		if (!(*p >= '0' && *p <= '9') || strspn(p, "0123456789.") != strlen(p))
			continue;
		struct stat st;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
			continue;
		char sub[PATH_MAX];
		snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
		r = complete_one(dfd, de->d_name, sub, cmd, cmd_pid, quiet_run);
		failed |= r < 0;
		total += r > 0 ? r : 0;
	}
	if (d)
		closedir(d);
	close(dfd);
	return failed ? -1 : total;
}

/*
 * `removed`: the program never started the tracer and the empty directory
 * this call made was removed (done before, with or without -q: -q changes
 * what is printed, never what is kept).  `filter`: --filter, `trigger`:
 * --snapshot-on, or NULL.
 */
static void print_summary(const struct out_dir *o, const char *cmd, int wstatus, bool removed,
			  const char *filter, const char *trigger)
{
	const char *dir = o->path;
	struct live_stats s;
	struct live_marker_count *markers = NULL;
	size_t n = 0;
	if (live_stats_read(dir, &s) != 0) {
		fprintf(stderr,
			"mark: no trace: %s never started the tracer (is it linked with libmark? a tracer that "
			"could not start says why above)%s%s\n",
			cli_text(cmd), removed ? "; removed the empty directory " : "; see ", cli_text(dir));
		return;
	}
	live_stats_markers(dir, &markers, &n);
	fprintf(stderr, "mark: %s ", cli_text(cmd));
	if (WIFEXITED(wstatus))
		fprintf(stderr, "exited with status %d\n", WEXITSTATUS(wstatus));
	else
		fprintf(stderr, "was killed by signal %d (%s)\n", WTERMSIG(wstatus), strsignal(WTERMSIG(wstatus)));
	/* The metadata describes every marker of the program; list those that fired. */
	live_print_marker_counts(stderr, markers, n);
	fprintf(stderr, "mark: %" PRIu64 " events written, %" PRIu64 " lost, %.1f MB",
		s.events_written, s.lost, (double)s.bytes_written / 1e6);
	if (s.processes > 1)
		fprintf(stderr, " (%u processes)", s.processes);
	fprintf(stderr, "\nmark: trace written to %s\n", cli_text(dir));
	live_print_snapshots(stderr, "mark: ", dir, &s, trigger);
	if (s.lost)
		fprintf(stderr, "mark: events were lost: use a larger --buffer, or --mode block to lose none\n");
	/* The tracer does not count the events a filter rejects (the probe's
	 * reject path stays a load and the program): with one, both causes
	 * are possible, and the filter is the likelier. */
	if (s.events == 0 && s.lost == 0 && filter && *filter)
		fprintf(stderr, "mark: no event was recorded: none passed --filter \"%s\" (an event whose "
				"marker has no field the filter names is dropped too: record without --filter "
				"and `mark view` the trace to see the fields), or no armed marker fired (check "
				"the -e globs; `mark list %s` shows its markers)\n", cli_text(filter), cli_text(cmd));
	else if (s.events == 0 && s.lost == 0)
		fprintf(stderr, "mark: no event was recorded: no armed marker fired (check the -e globs; "
				"`mark list %s` shows its markers)\n", cli_text(cmd));
	if (s.unfinished)
		fprintf(stderr, "mark: %u traced process(es) still running or not finished; the trace may be "
				"incomplete\n", s.unfinished);
	free(markers);
}

/*
 * `mark record --pid PID ...` records a running process through its agent;
 * that is cmd_record_pid.c's job (declared weak so that this file builds and
 * says so plainly without it).  It is chosen when --pid/-p appears among the
 * options (or --name COMM, running processes by name), i.e. before "--" or
 * the first non-option (CMD).
 */
extern int cli_record_pid(int argc, char **argv) __attribute__((weak));

static int wants_pid(int argc, char **argv)
{
	static const char *const with_value[] = { "-e", "-o", "-m", "-b", "-d", "--enable", "--output",
						  "--mode", "--buffer", "--duration", "--max-size", "--rotate", "-f",
						  "--filter", "--snapshot-on", "--max-snapshots", "--snapshot-interval",
						  NULL };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0 || a[0] != '-' || a[1] == '\0')
			return 0;
		if (strcmp(a, "--pid") == 0 || strncmp(a, "--pid=", 6) == 0 || strncmp(a, "-p", 2) == 0 ||
		    strcmp(a, "--name") == 0 || strncmp(a, "--name=", 7) == 0)
			return 1;
		for (const char *const *w = with_value; *w; w++)
			if (strcmp(a, *w) == 0) {
				i++;   /* its value, which may start with '-' */
				break;
			}
	}
	return 0;
}

static int record_run(int argc, char **argv)
{
	if (wants_pid(argc, argv)) {
		if (!cli_record_pid) {
			cli_error("record: --pid is not available in this build of mark; run the program "
				  "with `mark record -- CMD` instead");
			return 2;
		}
		return cli_record_pid(argc, argv);
	}

	static const struct option opts[] = {
		{ "enable", required_argument, NULL, 'e' },
		{ "output", required_argument, NULL, 'o' },
		{ "mode", required_argument, NULL, 'm' },
		{ "buffer", required_argument, NULL, 'b' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "duration", required_argument, NULL, 'd' },
		{ "max-size", required_argument, NULL, 'M' },
		{ "rotate", required_argument, NULL, 'R' },
		{ "filter", required_argument, NULL, 'f' },
		{ "snapshot-on", required_argument, NULL, 'T' },
		{ "max-snapshots", required_argument, NULL, 'T' },
		{ "snapshot-interval", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *output = NULL, *mode = NULL, *buffer = NULL, *max_size = NULL, *rotate = NULL;
	const char *filter = NULL;
	struct cli_trigger trigger = { 0 };
	int opt_index = 0;
	double duration = 0;
	int quiet = 0;
	size_t enable_len = 0;
	char *enable = NULL;
	int c;
	optind = 1;
	opterr = 0;
	/* "+": stop at the first non-option, so CMD's own options are left alone. */
	while ((c = getopt_long(argc, argv, "+e:o:m:b:d:f:qh", opts, &opt_index)) != -1) {
		switch (c) {
		case 'e': {
			if (!*optarg || strchr(optarg, ',')) {
				free(enable);
				return cli_error("record: bad -e \"%s\": give one non-empty glob per -e "
						 "(commas are not allowed in a glob)", optarg), 2;
			}
			if (cli_glob_check("record", "-e", optarg) != 0) {
				free(enable);
				return 2;
			}
			size_t l = strlen(optarg);
			char *grown = realloc(enable, enable_len + l + 2);
			if (!grown) {
				free(enable);
				return cli_error("record: out of memory");
			}
			enable = grown;
			if (enable_len)
				enable[enable_len++] = ',';
			memcpy(enable + enable_len, optarg, l + 1);
			enable_len += l;
			break;
		}
		case 'o': output = optarg; break;
		case 'm': mode = optarg; break;
		case 'b': buffer = optarg; break;
		case 'M': max_size = optarg; break;
		case 'R': rotate = optarg; break;
		case 'q': quiet = 1; break;
		case 'f':
			/* Refused here, before CMD runs, with the column of the error. */
			if (cli_filter_check("record", optarg) != 0) {
				free(enable);
				return 2;
			}
			filter = optarg;
			break;
		case 'T':
			/* Refused here, before CMD runs, with the column of the error. */
			if (cli_trigger_option("record", opts[opt_index].name, optarg, &trigger) != 0) {
				free(enable);
				return 2;
			}
			break;
		case 'd': {
			char *end;
			duration = strtod(optarg, &end);
			if (end == optarg || *end || !(duration > 0) || !(duration < 1e9)) {
				free(enable);
				cli_error("record: bad --duration \"%s\": give a positive number of seconds, "
					  "like 10 or 0.5", optarg);
				return 2;
			}
			break;
		}
		case 'h': free(enable); fputs(record_usage, stdout); return 0;
		default:
			free(enable);
			cli_error("record: %s: unknown option or missing argument; see `mark record --help`",
				  argv[optind - 1]);
			return 2;
		}
	}
	enum mark_trace_mode parsed_mode;
	size_t parsed_size;
	if ((mode && parse_mode(mode, &parsed_mode) != 0) || (buffer && parse_size(buffer, &parsed_size) != 0) ||
	    (max_size && cli_parse_max_size(max_size) != 0) || (rotate && cli_parse_rotate(rotate) != 0) ||
	    (max_size && rotate && cli_check_rotate_within(max_size, rotate) != 0) ||
	    cli_trigger_mode("record", &trigger, mode != NULL, mode ? (int)parsed_mode : 0) != 0) {
		free(enable);
		return 2;
	}
	if (optind >= argc) {
		free(enable);
		cli_error("record: give the command to run after --, e.g. mark record -- ./myprog --its-options");
		return 2;
	}
	char **cmd = argv + optind;

	struct out_dir out;
	if (!make_output_dir(output, &out)) {
		free(enable);
		return 1;
	}
	const char *dir = out.path;
	size_t inherited = 0;
	const char *values[ENV_COUNT] = {
		[ENV_ENABLE] = enable ? enable : "*",
		[ENV_TRACE] = dir,
		[ENV_MODE] = mode ? mode : trigger.spec ? "overwrite" : NULL,
		[ENV_BUFFER] = buffer,
		[ENV_MAX_SIZE] = max_size,
		[ENV_ROTATE] = rotate,
		[ENV_FILTER] = filter,
		[ENV_SNAPSHOT_ON] = trigger.spec,
		[ENV_MAX_SNAPSHOTS] = trigger.max_text,
		[ENV_SNAPSHOT_INTERVAL] = trigger.interval_text,
	};
	char **env = child_environment(values, &inherited);
	if (!env) {
		free(enable);
		out_dir_remove_empty(&out);
		out_dir_free(&out);
		return cli_error("record: out of memory");
	}
	if (!quiet)
		fprintf(stderr, "mark: recording %s into %s\n", enable ? cli_text(enable) : "every marker", cli_text(dir));

	/* Blocked before fork(), so no forwarded signal can be missed (see
	 * wait_forwarding); spawn() unblocks them in the child before exec. */
	const int forwarded[4] = { SIGINT, SIGQUIT, SIGTERM, SIGHUP };
	sigset_t waited, saved_mask;
	sigemptyset(&waited);
	for (int i = 0; i < 4; i++)
		sigaddset(&waited, forwarded[i]);
	sigaddset(&waited, SIGCHLD);
	struct sigaction chld = { .sa_handler = note_child }, old_chld;
	sigemptyset(&chld.sa_mask);
	sigaction(SIGCHLD, &chld, &old_chld);
	sigprocmask(SIG_BLOCK, &waited, &saved_mask);

	int exec_errno = 0;
	pid_t pid = spawn(cmd, env, &exec_errno);
	int status;
	if (pid < 0) {
		cli_error("record: cannot run %s: %s%s", cmd[0], strerror(exec_errno),
			  exec_errno == ENOENT ? (strchr(cmd[0], '/') ? "" : " (not found in PATH)") : "");
		status = exec_errno == ENOENT ? 127 : 126;
		/* Leave no empty trace directory of ours behind for a command that never ran. */
		if (out_dir_remove_empty(&out) && !quiet)
			fprintf(stderr, "mark: removed the empty trace directory %s\n", cli_text(dir));
	} else {
		struct liveline *line = quiet ? NULL : liveline_start(dir);
		bool timed_out = false;
		int wstatus = 0;
		if (duration > 0) {
			struct timespec until;
			clock_gettime(CLOCK_MONOTONIC, &until);
			until.tv_sec += (time_t)duration;
			until.tv_nsec += (long)((duration - (double)(time_t)duration) * 1e9);
			if (until.tv_nsec >= 1000000000L) {
				until.tv_nsec -= 1000000000L;
				until.tv_sec++;
			}
			wstatus = wait_forwarding(pid, &waited, &until, &timed_out);
		}
		if (timed_out) {
			/* -d: stop the recordings through the agents; CMD runs on and
			 * is waited for as without -d (signals still forwarded). */
			liveline_stop(line);
			line = NULL;
			int failed = cli_record_stop_dir(dir);
			if (!quiet)
				fprintf(stderr, "mark: %s after %g s; %s (pid %d) runs on, waiting for it to end\n",
					failed ? "could not stop every recording" : "stopped recording", duration,
					cli_text(cmd[0]), (int)pid);
		}
		if (duration <= 0 || timed_out)
			wstatus = wait_forwarding(pid, &waited, NULL, NULL);
		liveline_stop(line);
		status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : WIFSIGNALED(wstatus) ? 128 + WTERMSIG(wstatus) : 1;

		/* A program that exits normally stops its tracer in a destructor; one
		 * killed by a signal (or one that called _exit) leaves its buffers in
		 * the .mark-ring files: finish the trace from them. */
		complete_trace(dir, cmd[0], pid, quiet);
		/* No statistics file: the program never started the tracer.  rmdir
		 * only removes the directory if nothing at all was written there. */
		struct live_stats totals;
		bool removed = live_stats_read(dir, &totals) != 0 && out_dir_remove_empty(&out);
		if (!quiet)
			print_summary(&out, cmd[0], wstatus, removed, filter, trigger.spec);
	}
	sigprocmask(SIG_SETMASK, &saved_mask, NULL);
	sigaction(SIGCHLD, &old_chld, NULL);
	free(enable);
	out_dir_free(&out);
	free_child_environment(env, inherited);
	return status;
}

MARK_CLI_COMMAND(record, "record", "run a command and record its markers into a trace", record_run);
