/*
 * `mark ps`: the processes with a mark agent, found through their sockets
 * in the per-user socket directories, and asked for INFO.  Sockets whose
 * process is gone (or no longer listens: it exec'd, or was killed before
 * it could clean up) are removed on the way.
 */
#define _GNU_SOURCE
#include "command.h"
#include "control.h"
#include "text.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static const char ps_usage[] =
	"usage: mark ps [-q]\n"
	"\n"
	"List the running processes that have markers and a mark agent: PID, marker\n"
	"count, site count, armed sites, tracing state and command line.  Only the\n"
	"processes you may control are shown (your own; every user's as root).\n"
	"Sockets left behind by processes that are gone are removed, and counted\n"
	"on stderr.\n"
	"\n"
	"Options:\n"
	"  -q, --quiet   do not report removed stale sockets\n"
	"  -h, --help    this help\n";

#define MAX_DIRS 1024   /* socket directories root looks in (said when there are more) */
#define MAX_PROCS 4096

struct proc_row {
	pid_t pid;
	uint64_t markers, sites, armed, tracing, owner, mode;
	char cmdline[256];
	char dir[300];              /* escaped trace directory, or "" */
	bool answered;
};

static int by_pid(const void *a, const void *b)
{
	const struct proc_row *x = a, *y = b;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

/*
 * Is DFD/NAME listening?  -ECONNREFUSED means stale.  The socket is reached
 * through the directory this command opened and checked
 * (ctl_socket_connect_at), never by the directory's path, which its owner
 * may have replaced by a link since.  One non-blocking try: a listener whose
 * queue is full (-EAGAIN) is alive, and must not hold `mark ps` (as root,
 * every user's) in connect().  Any other error (no /proc: -ENOENT) is "not
 * known to be stale": kept.
 */
static int probe_socket(int dfd, const char *name)
{
	int fd = ctl_socket_connect_at(dfd, name, 0);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

/*
 * A temporary socket (".PID.RANDOM.tmp") that an agent left when it died
 * between bind() and rename(): nobody listens on it and it is older than a
 * minute.  A live agent renames it right after bind(), but may be in
 * another pid namespace, where the PID in the name means nothing here: age,
 * not the pid, tells an abandoned one.
 */
static bool tmp_socket_abandoned(int dfd, const char *name)
{
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return false;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	return now.tv_sec - st.st_mtim.tv_sec > 60 && probe_socket(dfd, name) == -ECONNREFUSED;
}

/*
 * Remove DFD/NAME if it is what an agent leaves behind: a socket owned by
 * the directory's owner (`owner`).  lstat-like (AT_SYMLINK_NOFOLLOW) and
 * relative to the directory's descriptor, so a link, a regular file or
 * anything else planted under an agent's name stays where it is.  Returns
 * 1 if removed.
 */
static int remove_stale(int dfd, const char *name, uid_t owner)
{
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISSOCK(st.st_mode) || st.st_uid != owner)
		return 0;
	return unlinkat(dfd, name, 0) == 0;
}

/* Ask one agent for its row.  One that cannot answer quickly is named on
 * stderr (ctl_connect, ctl_simple_request) and left out of the table. */
static void ask_agent(struct proc_row *row)
{
	struct ctl_conn c;
	snprintf(row->cmdline, sizeof(row->cmdline), "?");
	/* Errors (exited meanwhile, permission, not answering) are printed by ctl_connect. */
	if (ctl_connect(&c, row->pid))
		return;
	snprintf(row->cmdline, sizeof(row->cmdline), "%s", c.comm);
	if (ctl_simple_request(&c, MARK_MSG_INFO, 2000) == 0 && c.msg.type == MARK_MSG_INFO_REPLY) {
		row->answered = true;
		mark_proto_u64(&c.msg, MARK_TAG_MARKERS, 0, &row->markers);
		mark_proto_u64(&c.msg, MARK_TAG_SITES, 0, &row->sites);
		mark_proto_u64(&c.msg, MARK_TAG_ARMED, 0, &row->armed);
		mark_proto_u64(&c.msg, MARK_TAG_TRACING, 0, &row->tracing);
		mark_proto_u64(&c.msg, MARK_TAG_OWNER_PID, 0, &row->owner);
		/* The agent's text: escaped for the terminal. */
		snprintf(row->cmdline, sizeof(row->cmdline), "%s", cli_text(mark_proto_str(&c.msg, MARK_TAG_CMDLINE, 0)));
		row->mode = UINT64_MAX;
		mark_proto_u64(&c.msg, MARK_TAG_MODE, 0, &row->mode);
		const char *dir = mark_proto_str(&c.msg, MARK_TAG_DIR, 0);
		snprintf(row->dir, sizeof(row->dir), "%s", dir ? cli_text(dir) : "");
	}
	ctl_close(&c);
}

/*
 * Asking the agents at once.  An agent that does not answer costs its
 * timeouts (3 s to connect, 2 s for the reply); asked one after the other,
 * a user's K wedged processes (a full accept queue is enough) held root's
 * `mark ps` K times that.  ASK_THREADS workers and the calling thread take
 * the rows in turn, so the wait is about the slowest agent's per
 * ASK_THREADS of them.
 *
 * Concurrency: `next` hands each row to exactly one thread (a relaxed
 * fetch-add: only its atomicity matters); a row is written by that thread
 * alone, and pthread_join orders those writes before the caller reads the
 * rows.  ctl_connect/ctl_simple_request keep their state in the
 * connection; cli_text's buffer is per thread (cli_text_thread_done).
 */
#define ASK_THREADS 16

struct ask_pool {
	struct proc_row *rows;
	size_t n;
	size_t next;
};

static void *ask_worker(void *arg)
{
	struct ask_pool *p = arg;
	size_t i;
	while ((i = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED)) < p->n)
		ask_agent(&p->rows[i]);
	return NULL;
}

static void *ask_thread(void *arg)
{
	ask_worker(arg);
	cli_text_thread_done();
	return NULL;
}

static void ask_all(struct proc_row *rows, size_t n)
{
	struct ask_pool pool = { .rows = rows, .n = n };
	pthread_t threads[ASK_THREADS];
	size_t started = 0;
	/* The workers take no signal: a ^C stays the main thread's, as before. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	while (started < ASK_THREADS && started + 1 < n &&
	       pthread_create(&threads[started], NULL, ask_thread, &pool) == 0)
		started++;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	ask_worker(&pool);   /* also when no thread could start */
	for (size_t i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
}

static size_t collect_dirs(char dirs[][108], size_t max)
{
	size_t n = ctl_socket_dirs(geteuid(), 0, dirs, max);
	if (geteuid() != 0)
		return n;
	/* root: every user's directories */
	const char *bases[2] = { "/tmp", "/run/user" };
	bool full = false;
	for (int b = 0; b < 2 && !full; b++) {
		DIR *d = opendir(bases[b]);
		if (!d)
			continue;
		struct dirent *de;
		while (!full && (de = readdir(d))) {
			char path[108];
			if (b == 0 && strncmp(de->d_name, "mark-", 5) == 0)
				snprintf(path, sizeof(path), "/tmp/%.90s", de->d_name);
			else if (b == 1 && de->d_name[0] >= '0' && de->d_name[0] <= '9')
				snprintf(path, sizeof(path), "/run/user/%.80s/mark", de->d_name);
			else
				continue;
			bool dup = false;
			for (size_t i = 0; i < n; i++)
				dup |= strcmp(dirs[i], path) == 0;
			if (dup)
				continue;
			if (n == max) {
				/* never silently: a process there would be missing from the list */
				fprintf(stderr, "mark: more than %zu socket directories (/tmp/mark-*, /run/user/*/mark); "
					"%s and the rest were not looked at: remove the stale ones\n", max, cli_text(path));
				full = true;
				break;
			}
			snprintf(dirs[n++], 108, "%s", path);
		}
		closedir(d);
	}
	return n;
}

static int ps_run(int argc, char **argv)
{
	bool quiet = false;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			fputs(ps_usage, stdout);
			return 0;
		} else if (strcmp(argv[i], "-q") == 0 || strcmp(argv[i], "--quiet") == 0) {
			quiet = true;
		} else {
			cli_error("ps: unknown argument \"%s\" (see `mark ps --help`)", argv[i]);
			return 2;
		}
	}
	static char dirs[MAX_DIRS][108];
	size_t nd = collect_dirs(dirs, MAX_DIRS);
	static struct proc_row rows[MAX_PROCS];
	size_t n = 0;
	unsigned stale = 0;
	for (size_t i = 0; i < nd; i++) {
		/* Only directories an agent would use (a real directory, that
		 * only its owner may write): ps removes files in them, as root
		 * too, and must not do that through a link or in a directory
		 * others fill.  ctl_connect() checks the owner per process.
		 * The directory is opened once, without following a link, and
		 * everything after (checks, listing, probes, removals) goes
		 * through that descriptor: its owner may swap the name for a
		 * link at any moment (renameat2 RENAME_EXCHANGE), and a check
		 * by name followed by a use by name would then act on the
		 * link's target, a directory of root's. */
		struct stat dst;
		int dfd = ctl_socket_dir_open(dirs[i], &dst);
		if (dfd < 0)
			continue;
		if (!S_ISDIR(dst.st_mode) || (dst.st_mode & 022) || (geteuid() != 0 && dst.st_uid != geteuid())) {
			close(dfd);
			continue;
		}
		/* fdopendir() takes its descriptor over: a duplicate, so that
		 * dfd stays ours for the *at() calls below. */
		int lfd = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
		DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
		if (!d) {
			if (lfd >= 0)
				close(lfd);
			close(dfd);
			continue;
		}
		struct dirent *de;
		while ((de = readdir(d))) {
			char *end;
			if (de->d_name[0] == '.') {
				/* ".PID.RANDOM.tmp": an agent died between bind() and
				 * rename() (".PID.tmp" from older versions). */
				long tpid = strtol(de->d_name + 1, &end, 10);
				size_t rest = end != de->d_name + 1 ? strlen(end) : 0;
				if (rest >= 4 && strcmp(end + rest - 4, ".tmp") == 0 && end[0] == '.' && tpid > 0 &&
				    tmp_socket_abandoned(dfd, de->d_name) && remove_stale(dfd, de->d_name, dst.st_uid))
					stale++;
				continue;
			}
			long pid = strtol(de->d_name, &end, 10);
			if (end == de->d_name || strcmp(end, ".sock") != 0 || pid <= 0)
				continue;
			/*
			 * Stale only if nobody listens: the pid in the name is the
			 * agent's in its own pid namespace, and a process of another
			 * namespace that shares the directory (a container sharing
			 * /tmp) has a pid that does not exist here, or is another
			 * process here.  Such a live agent is neither removed nor
			 * listed (ctl_connect refuses a socket whose peer is not the
			 * process of that pid here).
			 */
			const int probe = probe_socket(dfd, de->d_name);
			if (probe == -ECONNREFUSED) {
				stale += (unsigned)remove_stale(dfd, de->d_name, dst.st_uid);
				continue;
			}
			if (probe == 0 && ctl_process_gone((pid_t)pid))
				continue;   /* an agent of another pid namespace */
			bool dup = false;
			for (size_t k = 0; k < n; k++)
				dup |= rows[k].pid == (pid_t)pid;
			if (dup || n == MAX_PROCS)
				continue;
			struct proc_row *row = &rows[n++];
			memset(row, 0, sizeof(*row));
			row->pid = (pid_t)pid;
		}
		closedir(d);
		close(dfd);
	}
	ask_all(rows, n);
	qsort(rows, n, sizeof(rows[0]), by_pid);
	size_t shown = 0;
	for (size_t i = 0; i < n; i++) {
		if (!rows[i].answered)
			continue;
		if (shown++ == 0)
			printf("%7s %7s %7s %7s  %-22s %s\n", "PID", "MARKERS", "SITES", "ARMED", "TRACING", "COMMAND");
		char tracing[64];
		if (rows[i].tracing == MARK_TRACING_CONTROLLER)
			snprintf(tracing, sizeof(tracing), "yes (mark pid %" PRIu64 ")", rows[i].owner);
		else if (rows[i].tracing == MARK_TRACING_OTHER)
			snprintf(tracing, sizeof(tracing), "yes (MARK_TRACE/API)");
		else if (rows[i].tracing == MARK_TRACING_DETACHED)
			snprintf(tracing, sizeof(tracing), "yes (detached)");
		else
			snprintf(tracing, sizeof(tracing), "no");
		/* Where and how it records, after the command (columns stay as they were). */
		static const char *const modes[] = { "discard", "overwrite", "block" };
		char where[400] = "";
		if (rows[i].dir[0])
			snprintf(where, sizeof(where), "  [%s into %s]",
				 rows[i].mode < 3 ? modes[rows[i].mode] : "recording", rows[i].dir);
		printf("%7d %7" PRIu64 " %7" PRIu64 " %7" PRIu64 "  %-22s %s%s\n", (int)rows[i].pid, rows[i].markers,
		       rows[i].sites, rows[i].armed, tracing, rows[i].cmdline, where);
	}
	if (shown == 0)
		fprintf(stderr, "mark: no running process with a mark agent found\n");
	if (stale && !quiet)
		fprintf(stderr, "mark: removed %u stale socket%s of processes that are gone\n", stale,
			stale == 1 ? "" : "s");
	return 0;
}

MARK_CLI_COMMAND(ps, "ps", "list the running processes that have markers", ps_run);
