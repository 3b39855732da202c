/*
 * Tracing sessions: start, stop, snapshot, statistics, fork, and the
 * environment configuration (MARK_TRACE, MARK_ENABLE, MARK_MODE,
 * MARK_BUFFER) read by a libmark constructor.
 *
 * Locking: control_mutex serialises the control functions and fork; the
 * hot path never takes it.  A session is published with a release store of
 * tracer_current and retired by storing NULL, unregistering the probe and
 * waiting for an RCU grace period (the probe runs inside mark__fire's RCU
 * read-side critical section, the thread-exit path takes its own), after
 * which no thread can still touch it.
 */
#define _GNU_SOURCE
#define _LGPL_SOURCE
#include "tracer_internal.h"

#include "filter/filter.h"
#include "util/printable.h"
#include "util/safe_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <urcu-bp.h>
#if defined(__has_include)
#if __has_include(<sys/single_threaded.h>)
#include <sys/single_threaded.h>
/* glibc >= 2.32: true while the process has never had a second thread. */
#define MARK_SINGLE_THREADED() (__libc_single_threaded != 0)
#endif
#endif
#ifndef MARK_SINGLE_THREADED
#define MARK_SINGLE_THREADED() false   /* cannot tell: leave the environment alone */
#endif

/*
 * A value (of the environment, a path) as a message quotes it: escaped,
 * and if long only its start and end, so that the message keeps saying
 * what was wrong and what to do within a line (a value of some kilobytes
 * pushed all of that, and the newline, out of the message's buffer).
 */
#define BRIEF_SIZE 100
struct brief {
	char text[BRIEF_SIZE];
};

static struct brief brief(const char *value)
{
	struct brief b;
	mark_printable_brief(b.text, sizeof(b.text), value ? value : "");
	return b;
}
#define BRIEF(v) (brief(v).text)

static MARK_FORK_STATE pthread_mutex_t control_mutex = PTHREAD_MUTEX_INITIALIZER;

/* The fork prepare handler takes control_mutex: a warning raised under it
 * is written after it is released (mark_warn_hold, core/error.c), since a
 * write to a full stderr pipe can block for ever and the fork with it. */
static void control_lock(void)
{
	pthread_mutex_lock(&control_mutex);
	mark_warn_hold();
}

static bool control_trylock(void)
{
	if (pthread_mutex_trylock(&control_mutex) != 0)
		return false;
	mark_warn_hold();
	return true;
}

static void control_unlock(void)
{
	pthread_mutex_unlock(&control_mutex);
	mark_warn_release();
}
pthread_mutex_t tracer_fork_guard = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static uint64_t last_generation;   /* under control_mutex */

/* ---- helpers ---- */

void tracer_path(char *buf, size_t len, const char *dir, const char *name, long num)
{
	/* Async-signal-safe: no stdio. */
	size_t p = 0;
	for (const char *s = dir; s && *s && p + 1 < len; s++)
		buf[p++] = *s;
	if (dir && p + 1 < len)
		buf[p++] = '/';
	for (const char *s = name; *s && p + 1 < len; s++)
		buf[p++] = *s;
	if (num >= 0) {
		char digits[24];
		int d = 0;
		do {
			digits[d++] = (char)('0' + num % 10);
			num /= 10;
		} while (num);
		while (d && p + 1 < len)
			buf[p++] = digits[--d];
	}
	buf[p] = '\0';
}

/* ---- the session's directories ---- */

/*
 * The descriptor *fdp if it is still the directory (dev, ino).  A program
 * may close every descriptor (daemons do) and reuse the number: then open
 * `path` again (no creating, links as safe_dir.h allows), require the same
 * directory, and install it with a compare-and-swap, because several
 * threads may get here at once (ring creation on any thread, the
 * consumer); a loser closes its own descriptor and uses the winner's.  The
 * lost number is never closed: it is not ours any more.  System calls
 * only: ring creation may run in a signal handler.
 */
static int checked_fd(int *fdp, const char *path, uint64_t dev, uint64_t ino)
{
	int fd = __atomic_load_n(fdp, __ATOMIC_ACQUIRE);
	struct stat st;
	if (fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == dev && st.st_ino == ino)
		return fd;
	if (!path)
		return -EBADF;
	int nfd = mark_dir_open(path, 0, 0, 0, NULL, NULL, NULL, NULL, 0);
	if (nfd < 0)
		return nfd;
	if (fstat(nfd, &st) != 0 || st.st_dev != dev || st.st_ino != ino) {
		close(nfd);
		return -ESTALE;   /* the path names another directory now: write nothing there */
	}
	if (__atomic_compare_exchange_n(fdp, &fd, nfd, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return nfd;
	close(nfd);
	return fd;
}

int tracer_dir_fd(struct tracer_session *s)
{
	return checked_fd(&s->dir_fd, s->dir, s->dir_dev, s->dir_ino);
}

int tracer_base_fd(struct tracer_session *s)
{
	return checked_fd(&s->base_fd, s->base_dir, s->base_dev, s->base_ino);
}

static void close_if_ours(int fd, uint64_t dev, uint64_t ino)
{
	struct stat st;
	if (fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == dev && st.st_ino == ino)
		close(fd);
}

/*
 * Open (creating it 0700 if missing) the per-process directory
 * pid-<pid> inside the base directory bfd: never through a link, and only
 * if it is private to this euid.  Sets s->dir_fd.  0 or -errno with `why`.
 */
static int open_process_dir(struct tracer_session *s, int bfd, char *why, size_t whylen)
{
	char name[32];
	snprintf(name, sizeof(name), "%s%d", MARK_TF_CHILD_PREFIX, (int)s->pid);
	bool made = false;
	int dfd = mark_dir_open_at(bfd, name, MARK_DIR_CREATE, 0700, &made);
	if (dfd < 0) {
		snprintf(why, whylen, "cannot create or open %s/%s: %s%s", s->base_dir, name, strerror(-dfd),
			 dfd == -ELOOP || dfd == -ENOTDIR ? " (it is a symbolic link or not a directory: remove it)"
							  : "");
		return dfd;
	}
	struct stat st;
	int rc = mark_dir_check_private(dfd, geteuid(), s->dir, why, whylen);
	if (rc == 0 && fstat(dfd, &st) != 0)
		rc = -errno;
	if (rc < 0) {
		close(dfd);
		return rc;
	}
	s->dir_fd = dfd;
	s->dir_dev = st.st_dev;
	s->dir_ino = st.st_ino;
	s->dir_made = made;
	return 0;
}

/* The trace directory DIR itself, when this start created it: its parent
 * and name, to remove it by descriptor (undo_start). */
struct start_made {
	bool base;
	int parent_fd;
	char leaf[NAME_MAX + 1];
};

/*
 * A start (or a forked child's set-up) that failed after it made files:
 * remove what it made, and only that, by descriptor and identity: its
 * statistics file (an empty one, left by a full disk, made every reader
 * say "not a CTF trace"), DIR/pid-P/ if it made it, DIR if it made it.
 * A directory is removed only if empty: anything another process put
 * there keeps it.  The metadata writer removes its own temporary file.
 */
static void undo_start(struct tracer_session *s, const struct start_made *made)
{
	if (s->stats_made)
		tracer_stats_remove(s, tracer_dir_fd(s));
	if (s->dir_made) {
		char name[32];
		snprintf(name, sizeof(name), "%s%d", MARK_TF_CHILD_PREFIX, (int)s->pid);
		mark_remove_same_at(tracer_base_fd(s), name, s->dir_dev, s->dir_ino, true);
	}
	s->dir_made = false;
	if (made && made->base)
		mark_remove_same_at(made->parent_fd, made->leaf, s->base_dev, s->base_ino, true);
}

/* What to do about a trace directory the tracer could not write (errno err). */
static const char *unwritable_remedy(int err)
{
	switch (err) {
	case ENOSPC:
	case EDQUOT:
		return "free space on its file system (or trace into another directory) and start the program again";
	case EROFS:
		return "trace into a directory on a file system mounted read-write";
	case EACCES:
	case EPERM:
		return "trace into a directory this user may write";
	default:
		return "trace into another directory, or start the program again once that is mended";
	}
}

/* NAME is PREFIX followed by decimal digits only. */
static bool is_numbered(const char *name, const char *prefix)
{
	size_t n = strlen(prefix);
	if (strncmp(name, prefix, n) != 0 || !name[n])
		return false;
	for (const char *p = name + n; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	return true;
}

/* Exactly the names this tracer writes: metadata, .metadata.tmp (metadata.tmp
 * before), .mark-stats, .mark-chunks, stream-N, .mark-ring-N. */
static bool is_trace_file(const char *name)
{
	return strcmp(name, MARK_TF_METADATA) == 0 || strcmp(name, MARK_TF_METADATA_TMP) == 0 ||
	       strcmp(name, MARK_TF_METADATA_TMP_OLD) == 0 ||
	       strcmp(name, MARK_TF_STATS) == 0 || strcmp(name, MARK_TF_CHUNKS) == 0 || is_numbered(name, MARK_TF_STREAM_PREFIX) ||
	       is_numbered(name, MARK_TF_RING_PREFIX);
}

/*
 * Remove an earlier trace from the directory fd: only regular files of this
 * euid with the names this tracer writes, and pid-N directories (never a
 * link to one) that hold nothing else.  Links, other files and directories
 * that still hold something stay.
 */
void tracer_clean_trace_dir(int fd, int depth)
{
	DIR *d = mark_dir_list_at(fd);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		struct stat st;
		if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		if (S_ISREG(st.st_mode) && st.st_uid == geteuid() && is_trace_file(e->d_name)) {
			unlinkat(fd, e->d_name, 0);
		} else if (S_ISDIR(st.st_mode) && depth < 8 && is_numbered(e->d_name, MARK_TF_CHILD_PREFIX)) {
			int sub = mark_dir_open_at(fd, e->d_name, 0, 0, NULL);
			if (sub >= 0) {
				tracer_clean_trace_dir(sub, depth + 1);
				close(sub);
				unlinkat(fd, e->d_name, AT_REMOVEDIR);   /* fails, as it should, if not empty */
			}
		}
	}
	closedir(d);
}

/*
 * The session's DIR/pid-P (s->dir_fd, just opened) holds the trace of a
 * process with our pid that has not finished it: the statistics say
 * running.  Exec keeps the pid, so that is the image we replaced (its
 * rings hold what it recorded since its last drain: it had no chance to
 * flush them), or a dead process whose pid we reuse.  Either way its
 * events must not be wiped: move the directory aside to DIR/pid-P.K (the
 * first free K, from 1), never replacing anything, and complete it from
 * its rings there, as `mark record` would.  Only the directory
 * open_process_dir() judged ours (never a link, owned by this euid,
 * private) is moved, by rename relative to the base directory's
 * descriptor.  If it cannot be moved (pid-P.1 .. pid-P.999 all exist, or
 * the rename fails), this session does not start: starting would wipe it.
 * Returns 0, or -errno with the error set.
 */
#define KEPT_TRACES_MAX 1000   /* pid-P.1 .. pid-P.999 */

static int keep_unfinished_trace(struct tracer_session *s)
{
	int fd = openat(s->dir_fd, MARK_TF_STATS, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	struct mark_tf_stats st;
	struct stat sb;
	ssize_t n = -1;
	if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_uid == geteuid())
		n = pread(fd, &st, sizeof(st), 0);
	close(fd);
	if (n != (ssize_t)sizeof(st) || memcmp(st.magic, MARK_TF_STATS_MAGIC, 8) != 0 ||
	    st.version != MARK_TF_STATS_VERSION || st.pid != s->pid ||
	    (st.state != MARK_TF_STATE_RUNNING && st.state != MARK_TF_STATE_STARTING))
		return 0;
	char name[32], aside[48];
	snprintf(name, sizeof(name), "%s%d", MARK_TF_CHILD_PREFIX, (int)s->pid);
	struct stat ds;
	if (fstatat(s->base_fd, name, &ds, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(ds.st_mode) ||
	    ds.st_dev != s->dir_dev || ds.st_ino != s->dir_ino)
		return 0;
	bool moved = false;
	int err = EEXIST;
	for (int k = 1; k < KEPT_TRACES_MAX && !moved; k++) {
		snprintf(aside, sizeof(aside), "%s.%d", name, k);
		if (renameat2(s->base_fd, name, s->base_fd, aside, RENAME_NOREPLACE) == 0) {
			moved = true;
			break;
		}
		err = errno;
		if (err == EINVAL) {
			/* A file system without RENAME_NOREPLACE: the directory is private to us. */
			if (fstatat(s->base_fd, aside, &ds, AT_SYMLINK_NOFOLLOW) == 0) {
				err = EEXIST;
				continue;
			}
			err = errno;
			if (err == ENOENT) {
				moved = renameat(s->base_fd, name, s->base_fd, aside) == 0;
				err = errno;
			}
			break;
		}
		if (err != EEXIST && err != ENOTEMPTY)
			break;
	}
	if (!moved)
		return mark_error(err,
				  "mark: tracer: %s/%s holds the unfinished trace of an earlier image of this "
				  "process (before an exec), and it cannot be set aside (%s); not tracing this "
				  "image keeps it from being wiped. Recover it (`mark recover %s`) and move it, "
				  "or trace into another directory",
				  s->base_dir, name,
				  err == EEXIST || err == ENOTEMPTY ? "pid-P.1 to pid-P.999 exist already" : strerror(err),
				  s->base_dir);
	/* The descriptor we hold moved with the directory: it is the kept trace now. */
	int kept = s->dir_fd;
	s->dir_fd = -1;
	char why[512];
	int rc = open_process_dir(s, s->base_fd, why, sizeof(why));   /* ours again, for the session being started */
	if (rc < 0) {
		close(kept);
		return mark_error(-rc, "mark: tracer: cannot use %s as trace directory: %s", s->base_dir, why);
	}
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", s->base_dir, aside);
	/* Its pid is ours, so recovery does not take it for a live writer. */
	if (tracer_trace_recover_at(kept, path) < 0)
		mark_warn("mark: tracer (pid %d): the trace of this process before its exec, kept "
			"in %s, could not be completed: %s; run `mark record` recovery on it later\n",
			(int)s->pid, path, mark_last_error());
	close(kept);
	return 0;
}

/*
 * A zeroed session with a generation of its own and no stream files open.
 * rings[] is left as calloc gave it: ring_create() sets a ring's
 * stream_fd to -1 before it publishes the ring (ready), and nothing reads
 * the fields of a ring that is not ready.  The array is 2 MB, which
 * calloc takes fresh from mmap: setting the 4096 stream_fd fields here
 * wrote every page of it: 512 page faults in every forked child of a
 * traced process (table 9, row `traced`; test tracer_fork_faults).
 */
static struct tracer_session *session_alloc(void)
{
	struct tracer_session *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->base_fd = s->dir_fd = -1;
	s->rotated_created = false;
	s->loss_fd = -1;
	s->generation = ++last_generation;
	return s;
}

static void free_session(struct tracer_session *s)
{
	if (!s)
		return;
	close_if_ours(s->dir_fd, s->dir_dev, s->dir_ino);
	close_if_ours(s->base_fd, s->base_dev, s->base_ino);
	close_if_ours(s->loss_fd, s->loss_dev, s->loss_ino);
	free(s->dir);
	free(s->base_dir);
	for (size_t i = 0; i < s->nglobs; i++)
		free(s->globs[i]);
	free(s->globs);
	free(s->marker_counts);
	tracer_chunks_close(s);
	if (s->family_stop)
		munmap(s->family_stop, sizeof(*s->family_stop));
	free(s);
}

static void session_unmap(struct tracer_session *s, bool unlink_rings)
{
	struct tracer_ring *r;
	tracer_for_each_ring(s, r) {
		struct stat st;
		/* Close only a descriptor that is still ours (see drain_ring). */
		if (r->stream_fd >= 0 && fstat(r->stream_fd, &st) == 0 && st.st_ino == r->stream_ino &&
		    st.st_dev == r->stream_dev)
			close(r->stream_fd);
		r->stream_fd = -1;
		munmap(r->hdr, MARK_TF_RING_HEADER_SIZE + r->capacity);
		int dfd;
		if (unlink_rings && (dfd = tracer_dir_fd(s)) >= 0) {
			char name[64];
			tracer_path(name, sizeof(name), NULL, MARK_TF_RING_PREFIX, r->index);
			unlinkat(dfd, name, 0);
		}
	}
	if (s->stats)
		munmap(s->stats, s->stats_map_size);
	s->stats = NULL;
	s->counted = NULL;
}

void tracer_new_uuid(uint8_t *u)
{
	FILE *f = fopen("/proc/sys/kernel/random/uuid", "re");
	unsigned v[16];
	if (f && fscanf(f, "%2x%2x%2x%2x-%2x%2x-%2x%2x-%2x%2x-%2x%2x%2x%2x%2x%2x", &v[0], &v[1], &v[2], &v[3],
			&v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10], &v[11], &v[12], &v[13], &v[14],
			&v[15]) == 16) {
		for (int i = 0; i < 16; i++)
			u[i] = (uint8_t)v[i];
	} else {
		uint64_t a = tracer_realtime_ns() ^ ((uint64_t)getpid() << 32), b = tracer_monotonic_ns() * 0x9e3779b97f4a7c15ull;
		memcpy(u, &a, 8);
		memcpy(u + 8, &b, 8);
		u[6] = (uint8_t)((u[6] & 0x0f) | 0x40);
		u[8] = (uint8_t)((u[8] & 0x3f) | 0x80);
	}
	if (f)
		fclose(f);
}

/* --snapshot-interval in ticks of the session's clock (saturating). */
static uint64_t ms_to_ticks(const struct tracer_clock *c, uint64_t ms)
{
	unsigned __int128 t = (unsigned __int128)ms * c->freq / 1000;
	return t > UINT64_MAX / 2 ? UINT64_MAX / 2 : (uint64_t)t;
}

static uint64_t round_pow2(uint64_t v)
{
	uint64_t p = TRACER_MIN_BUFFER;
	while (p < v)
		p <<= 1;
	return p;
}

/* ---- fork ---- */

static void atfork_prepare(void)
{
	pthread_mutex_lock(&control_mutex);
	pthread_mutex_lock(&tracer_fork_guard);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&tracer_fork_guard);
	pthread_mutex_unlock(&control_mutex);
}

/*
 * The child inherits the parent's session, whose rings are shared memory
 * the parent still writes: the child must never touch them.  It gets a
 * session of its own in DIR/pid-<child> (a sibling of the parent's
 * DIR/pid-<parent>), with the parent's clock (same
 * UUID and calibration, so babeltrace2 merges the two traces by time) and
 * a new trace UUID.  Only this thread exists in the child, and it starts
 * none: the child's consumer starts when a ring first needs draining.
 */
static void atfork_child(void)
{
	pthread_mutex_unlock(&tracer_fork_guard);   /* locked by this thread in prepare */
	struct tracer_session *parent = tracer_current;
	tracer_thread_forget();
	if (parent) {
		tracer_set_current(NULL);
		struct tracer_session *s = session_alloc();
		char *dir = NULL;
		if (s && (s->base_dir = strdup(parent->base_dir)) &&
		    asprintf(&dir, "%s/%s%d", parent->base_dir, MARK_TF_CHILD_PREFIX, (int)getpid()) > 0) {
			s->dir = dir;
			/* A descriptor of its own: free_session(parent) below closes the parent's. */
			int pbfd = tracer_base_fd(parent);
			s->base_fd = pbfd < 0 ? -1 : fcntl(pbfd, F_DUPFD_CLOEXEC, 0);
			s->base_dev = parent->base_dev;
			s->base_ino = parent->base_ino;
			s->mode = parent->mode;
			s->buffer_size = parent->buffer_size;
			/* Its own chunks (DIR/pid-CHILD.chunk-K), with the parent's limits. */
			s->max_size = parent->max_size;
			s->chunk_size = parent->chunk_size;
			s->rotate_ns = parent->rotate_ns;
			/* Its own snapshots (DIR/snapshot-N/pid-CHILD), as many
			 * as the parent may write; the trigger itself is global. */
			s->max_snapshots = parent->max_snapshots;
			s->snapshot_interval_ms = parent->snapshot_interval_ms;
			s->snapshot_interval_ticks = parent->snapshot_interval_ticks;
			s->snapshot_next = 1;
			s->chunk_start_ns = tracer_monotonic_ns();
			s->pid = getpid();
			s->clock = parent->clock;
			/* The family word is shared with the parent: ours now (the
			 * parent's session object is freed below). */
			s->family_stop = parent->family_stop;
			parent->family_stop = NULL;
			s->from_env = parent->from_env;
			tracer_new_uuid(s->trace_uuid);
			s->globs = NULL;
			s->nglobs = 0;
			if (parent->nglobs && (s->globs = calloc(parent->nglobs, sizeof(char *)))) {
				for (size_t i = 0; i < parent->nglobs; i++)
					if ((s->globs[i] = strdup(parent->globs[i])))
						s->nglobs++;
			}
			/* No consumer thread yet (it starts at the first kick, see
			 * tracer_consumer_start_lazy): a child that unshares or
			 * setns()s right after fork must still be single-threaded.
			 * The metadata is written now, so that recovery can decode
			 * what a child killed or exec'd before its consumer ran
			 * left in its rings; core's child handler, registered
			 * first, has released the registry lock by now. */
			char why[512];
			snprintf(why, sizeof(why), "%s", s->base_fd < 0 ? "its directory is gone" : "");
			int ok = s->base_fd >= 0 && open_process_dir(s, s->base_fd, why, sizeof(why)) == 0;
			if (ok)   /* an earlier process with this pid: as at session start */
				tracer_clean_trace_dir(s->dir_fd, 0);
			if (ok && tracer_stats_open(s) == 0 &&
			    tracer_metadata_write(s->dir_fd, s->dir, s, s->trace_uuid, &s->described) == 0) {
				tracer_stats_update(s, MARK_TF_STATE_RUNNING);
				__atomic_store_n(&s->consumer_lazy, 1, __ATOMIC_RELAXED);
				tracer_set_current(s);
			} else {
				mark_warn("mark: tracer cannot set up the trace of forked child %d in %s (%s); "
					"the child is not traced\n", (int)getpid(), dir, why);
				if (s->stats)
					munmap(s->stats, s->stats_map_size);
				undo_start(s, NULL);
				free_session(s);
			}
		} else {
			free(dir);
			if (s)
				free(s->base_dir);
			free(s);
		}
		/* The parent's mappings and files are the parent's business. */
		session_unmap(parent, false);
		free_session(parent);
	}
	pthread_mutex_unlock(&control_mutex);
}

static void register_atfork(void)
{
	mark_init();   /* core's fork handlers first: its child handler then runs before ours */
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* ---- start / stop ---- */

/*
 * Take the session off the air: the probe is disconnected, and after the
 * grace period no thread runs it (block-mode producers finish: the
 * consumer still runs); then the consumer writes what it has and stops.
 */
static bool session_disconnect(struct tracer_session *s)
{
	for (size_t i = 0; i < s->nglobs; i++) {
		mark_probe_unregister_fast(s->globs[i], tracer_probe, NULL);
		mark_disarm(s->globs[i]);
	}
	tracer_set_current(NULL);
	/* Without a grace period (this thread is stuck in a probe's read-side
	 * section: mark_grace_period()) a probe may still run for s: its
	 * rings stay mapped and s is not freed. */
	const bool quiet = mark_grace_period();
	tracer_filter_set(NULL, "tracer: filter");   /* no probe runs for s any more */
	tracer_trigger_set(NULL, "tracer: snapshot trigger");
	tracer_consumer_stop(s);
	return quiet;
}

/* `path` made absolute against the working directory (links not
 * resolved), malloc'ed; NULL: out of memory, or no working directory. */
static char *absolute_path(const char *path)
{
	char *abs = NULL, cwd[PATH_MAX];
	if (path[0] == '/' ? asprintf(&abs, "%s", path) < 0
			   : (!getcwd(cwd, sizeof(cwd)) || asprintf(&abs, "%s/%s", cwd, path) < 0))
		return NULL;
	return abs;
}

/*
 * Open the trace directory the user gave (creating it 0700 if missing) and
 * this process's pid-<pid> in it, and keep descriptors of both: every file
 * of the trace is created relative to them.  The directory must be private
 * to this euid: anyone else who can write there could plant links or read
 * the events, so it is refused (the program runs on untraced).  s->base_dir
 * and s->dir become absolute (the program may chdir()) without resolving
 * links, which the walk has already judged.
 */
static int open_session_dirs(struct tracer_session *s, const char *given, struct start_made *made)
{
	char why[512];
	int bfd = mark_dir_open(given, MARK_DIR_CREATE, 0700, 0700, &made->base, &made->parent_fd, made->leaf, why,
				sizeof(why));
	if ((bfd < 0 || !made->base) && made->parent_fd >= 0) {
		close(made->parent_fd);   /* kept only to remove what this start made */
		made->parent_fd = -1;
	}
	if (bfd < 0)
		return mark_error(-bfd, "mark: tracer: cannot use %s as trace directory: %s", BRIEF(given), why);
	struct stat st;
	int rc = mark_dir_check_private(bfd, geteuid(), given, why, sizeof(why));
	if (rc < 0) {
		close(bfd);
		return mark_error(-rc, "mark: tracer: refusing the trace directory: %s; use a directory that only "
				       "uid %u can write, such as one in $HOME or $XDG_RUNTIME_DIR",
				  why, (unsigned)geteuid());
	}
	if (fstat(bfd, &st) != 0 || fstatat(bfd, MARK_TF_METADATA, &(struct stat){ 0 }, AT_SYMLINK_NOFOLLOW) == 0) {
		/* A trace at the top would hide the per-process traces from babeltrace2. */
		close(bfd);
		return mark_error(EEXIST, "mark: tracer: cannot use %s as trace directory: it holds a CTF trace "
					  "of its own; choose another directory", BRIEF(given));
	}
	s->base_fd = bfd;
	s->base_dev = st.st_dev;
	s->base_ino = st.st_ino;
	char *abs = absolute_path(given), *dir = NULL;
	if (!abs || asprintf(&dir, "%s/%s%d", abs, MARK_TF_CHILD_PREFIX, (int)s->pid) < 0) {
		free(abs);
		return mark_error(ENOMEM, "mark: tracer: out of memory, or the working directory is too long");
	}
	free(s->base_dir);
	free(s->dir);
	s->base_dir = abs;
	s->dir = dir;
	if ((rc = open_process_dir(s, bfd, why, sizeof(why))) < 0)
		return mark_error(-rc, "mark: tracer: cannot use %s as trace directory: %s", BRIEF(given), why);
	return 0;
}

/* `limits`: chunks (NULL: none); `filter`: the --filter expression, or NULL
 * (see mark_tracer_start_filter); `trigger`: --snapshot-on (NULL: none). */
static int session_start_locked(const struct mark_trace_config *cfg, const struct tracer_chunk_limits *limits,
				const char *filter, const struct tracer_trigger_config *trigger)
{
	if (!cfg || !cfg->directory || !*cfg->directory)
		return mark_error(EINVAL, "mark: tracer: no trace directory given");
	if (cfg->mode != MARK_TRACE_DISCARD && cfg->mode != MARK_TRACE_OVERWRITE &&
	    cfg->mode != MARK_TRACE_BLOCK)
		return mark_error(EINVAL, "mark: tracer: mode %d is not discard, overwrite or block",
				  (int)cfg->mode);
	uint64_t size = cfg->buffer_size ? cfg->buffer_size : TRACER_DEFAULT_BUFFER;
	if (size < TRACER_MIN_BUFFER || size > TRACER_MAX_BUFFER)
		return mark_error(ERANGE, "mark: tracer: buffer size %llu is out of range (4k to 4G)",
				  (unsigned long long)size);
	if (tracer_current)
		return mark_error(EBUSY, "mark: tracer: a session is already tracing into %s; stop it first",
				  tracer_current->dir);
	/* Refuse a bad glob before anything is created: arming them one by
	 * one below would have armed the first ones, made DIR and DIR/pid-P,
	 * and then left both behind when a later glob failed. */
	for (size_t i = 0; cfg->globs && cfg->globs[i]; i++) {
		char why[200];
		if (mark_glob_check(cfg->globs[i], why, sizeof(why)) != 0)
			return mark_error(EINVAL, "mark: tracer: bad glob \"%s\": %s", BRIEF(cfg->globs[i]), why);
	}
	/* Refuse a bad filter before anything is created. */
	bool filter_parsed = false;
	if (filter && *filter) {
		char err[256];
		struct mark_filter *f = mark_filter_parse(filter, err, sizeof(err));
		if (!f)
			return mark_error(EINVAL, "mark: tracer: filter \"%s\": %s", BRIEF(filter), err);
		mark_filter_free(f);
		filter_parsed = true;
	}
	/* And a bad trigger, or one the mode cannot honour. */
	const bool triggered = trigger && trigger->spec && *trigger->spec;
	if (triggered) {
		int rc = tracer_trigger_check(trigger->spec, "tracer: snapshot trigger");
		if (rc < 0)
			return rc;
		if (cfg->mode != MARK_TRACE_OVERWRITE)
			return mark_error(EINVAL, "mark: tracer: a snapshot trigger needs overwrite mode (the flight "
						  "recorder); the session would record in %s mode",
					  cfg->mode == MARK_TRACE_DISCARD ? "discard" : "block");
		if (trigger->max_snapshots > TRACER_MAX_SNAPSHOTS)
			return mark_error(ERANGE, "mark: tracer: at most %u snapshots may be asked for, not %llu",
					  TRACER_MAX_SNAPSHOTS, (unsigned long long)trigger->max_snapshots);
	}
	pthread_once(&atfork_once, register_atfork);
	tracer_probe_init();
	tracer_cpu_init();

	struct tracer_session *s = session_alloc();
	if (!s)
		return mark_error(ENOMEM, "mark: tracer: out of memory");
	s->mode = cfg->mode;
	s->buffer_size = round_pow2(size);
	s->pid = getpid();
	if (triggered) {
		s->max_snapshots = trigger->max_snapshots ? (unsigned)trigger->max_snapshots
							  : TRACER_DEFAULT_MAX_SNAPSHOTS;
		s->snapshot_interval_ms = trigger->interval_ms;
		s->snapshot_next = 1;
	}
	int rc = tracer_chunks_config(s, limits);
	if (rc < 0) {
		free_session(s);
		return rc;
	}
	s->family_root = true;
	void *family = mmap(NULL, sizeof(*s->family_stop), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	s->family_stop = family == MAP_FAILED ? NULL : family;   /* without it: children stop at their exit */
	const char *const star[] = { "*", NULL };
	const char *const *globs = cfg->globs && cfg->globs[0] ? cfg->globs : star;
	while (globs[s->nglobs])
		s->nglobs++;
	s->globs = calloc(s->nglobs, sizeof(char *));
	s->base_dir = strdup(cfg->directory);
	if (!s->globs || !s->base_dir || asprintf(&s->dir, "%s/%s%d", cfg->directory, MARK_TF_CHILD_PREFIX,
						  (int)s->pid) < 0) {
		s->dir = NULL;
		free_session(s);
		return mark_error(ENOMEM, "mark: tracer: out of memory");
	}
	for (size_t i = 0; i < s->nglobs; i++) {
		if (!(s->globs[i] = strdup(globs[i]))) {
			free_session(s);
			return mark_error(ENOMEM, "mark: tracer: out of memory");
		}
	}
	struct start_made made = { .parent_fd = -1 };
	rc = open_session_dirs(s, cfg->directory, &made);
	if (rc < 0)
		goto undo;
	/* The image before an exec (exec keeps the pid) may have left its trace
	 * here unfinished: keep it.  Otherwise (a second session in this
	 * process, a pid reused after a clean exit) replace what that trace
	 * wrote, and nothing else. */
	if ((rc = keep_unfinished_trace(s)) < 0)
		goto undo;
	tracer_clean_trace_dir(s->dir_fd, 0);
	tracer_clock_init(&s->clock);
	s->snapshot_interval_ticks = ms_to_ticks(&s->clock, s->snapshot_interval_ms);
	tracer_new_uuid(s->trace_uuid);
	if ((rc = tracer_stats_open(s)) < 0) {
		session_unmap(s, false);
		rc = mark_error(-rc, "mark: tracer: cannot set up statistics in %s", cfg->directory);
		goto undo;
	}
	if ((rc = tracer_metadata_write(s->dir_fd, s->dir, s, s->trace_uuid, &s->described)) < 0) {
		session_unmap(s, false);
		rc = mark_error(-rc, "mark: tracer: cannot write the metadata in %s: %s; nothing is traced, and what "
				     "the tracer made there is removed: %s", cfg->directory, strerror(-rc),
				unwritable_remedy(-rc));
		goto undo;
	}
	/* Before the consumer starts: from then on it is the only writer of the stats. */
	tracer_stats_update(s, MARK_TF_STATE_RUNNING);
	if ((rc = tracer_consumer_start(s)) < 0) {
		session_unmap(s, true);
		tracer_clean_trace_dir(s->dir_fd, 0);   /* emptied at the start: what is there is this start's */
		rc = mark_error(-rc, "mark: tracer: cannot start the consumer thread: %s", strerror(-rc));
		goto undo;
	}
	/* The filter first: no event of this session is recorded unfiltered.
	 * (A bad expression was refused above, before anything was created.) */
	if (filter_parsed || triggered) {
		rc = filter_parsed ? tracer_filter_set(filter, "tracer: filter") : 0;
		if (rc == 0 && triggered)
			rc = tracer_trigger_set(trigger->spec, "tracer: snapshot trigger");
		if (rc < 0) {
			tracer_filter_set(NULL, "tracer: filter");
			session_unmap(s, true);
			tracer_clean_trace_dir(s->dir_fd, 0);
			goto undo;
		}
	}
	/* Release: everything above is visible to a probe that sees s. */
	tracer_set_current(s);
	for (size_t i = 0; i < s->nglobs; i++) {
		rc = mark_probe_register_fast(s->globs[i], tracer_probe, NULL);
		if (rc < 0 && rc != -EEXIST)
			break;
		rc = mark_arm(s->globs[i]);
		if (rc < 0)
			break;
		rc = 0;
	}
	if (rc < 0) {
		char msg[512];
		snprintf(msg, sizeof(msg), "%s", mark_last_error());
		const bool quiet = session_disconnect(s);
		tracer_clean_trace_dir(s->dir_fd, 0);
		if (quiet) {
			session_unmap(s, true);
			undo_start(s, &made);
			free_session(s);
		}
		if (made.parent_fd >= 0)
			close(made.parent_fd);
		return mark_error(-rc, "%s", msg);
	}
	if (made.parent_fd >= 0)
		close(made.parent_fd);
	return 0;
undo:
	undo_start(s, &made);
	if (made.parent_fd >= 0)
		close(made.parent_fd);
	free_session(s);
	return rc;
}

int mark_tracer_start(const struct mark_trace_config *config)
{
	return tracer_start_full(config, NULL, NULL, NULL);
}

int mark_tracer_start_filter(const struct mark_trace_config *config, const char *filter)
{
	return tracer_start_full(config, NULL, filter, NULL);
}

int tracer_start_full(const struct mark_trace_config *config, const struct tracer_chunk_limits *limits,
		      const char *filter, const struct tracer_trigger_config *trigger)
{
	mark_error_clear();
	control_lock();
	int rc = session_start_locked(config, limits, filter, trigger);
	control_unlock();
	return rc;
}

/*
 * `family`: also stop the sessions of the processes this one forked while
 * it ran (only the root session does; see tracer_session.family_stop).
 */
/*
 * Stop the current session.  With `final`, also its last counts, read
 * after the final drain (what .mark-stats and the trace hold): a reading
 * taken before the stop misses the events fired until the disarm, and
 * after it no session is current to read.
 */
static int session_stop_locked(bool family, struct mark_trace_stats *final)
{
	struct tracer_session *s = tracer_current;
	if (!s)
		return mark_error(ENOENT, "mark: tracer: no tracing session is running");
	if (family && s->family_root && s->family_stop)
		__atomic_store_n(s->family_stop, 1, __ATOMIC_RELEASE);
	/* 1. No new events; 2. the consumer writes what it has... */
	const bool quiet = session_disconnect(s);
	/* ...then everything that is left.  The consumer is joined: its
	 * clock_frozen is ours to read. */
	if (!s->clock_frozen)
		tracer_clock_refine(&s->clock);
	tracer_drain_all_final(s);
	tracer_metadata_write(tracer_dir_fd(s), s->dir, s, s->trace_uuid, &s->described);
	tracer_stats_update(s, MARK_TF_STATE_STOPPED);
	if (final) {
		/* The rings are still mapped (unmapped just below, if quiet). */
		uint64_t buffers;
		memset(final, 0, sizeof(*final));
		tracer_sum_rings(s, &final->events, &final->lost, &buffers);
		if (s->stats)
			final->bytes_written = __atomic_load_n(&s->stats->bytes_written, __ATOMIC_ACQUIRE);
	}
	if (quiet) {
		session_unmap(s, true);
		free_session(s);
	}
	return 0;
}

int tracer_stop_counted(const char *directory, struct mark_trace_stats *final)
{
	mark_error_clear();
	control_lock();
	/* Compared and stopped under control_mutex: no other session can
	 * take the place of the one compared in between. */
	struct tracer_session *s = tracer_current;
	int rc;
	if (!s && directory)
		rc = mark_error(ENOENT, "mark: tracer: no tracing session is running in process %d", (int)getpid());
	else if (!s)
		rc = mark_error(ENOENT, "mark: tracer: no tracing session is running");
	else if (directory && (!s->base_dir || strcmp(s->base_dir, directory) != 0))
		rc = mark_error(ESRCH, "mark: tracer: process %d records into %s, not into %s", (int)getpid(),
				s->base_dir ? s->base_dir : "?", directory);
	else
		rc = session_stop_locked(true, final);
	control_unlock();
	return rc;
}

int mark_tracer_stop(void)
{
	return tracer_stop_counted(NULL, NULL);
}

int mark_tracer_stop_directory(const char *directory)
{
	if (!directory)
		return mark_error(EINVAL, "mark: tracer: mark_tracer_stop_directory() needs a directory");
	return tracer_stop_counted(directory, NULL);
}

int mark_tracer_set_filter(const char *expr)
{
	mark_error_clear();
	control_lock();
	/* Under control_mutex: a session stop (which clears the filter) and
	 * another replacement are serialised with us. */
	int rc = tracer_current ? tracer_filter_set(expr, "tracer: filter")
				: mark_error(ENOENT, "mark: tracer: no tracing session is running; start one "
						     "before setting its filter");
	control_unlock();
	return rc;
}

bool tracer_env_session(char *dir, size_t len, enum mark_trace_mode *mode)
{
	bool found = false;
	/* Under control_mutex: the session (and base_dir) cannot be freed meanwhile. */
	control_lock();
	struct tracer_session *s = tracer_current;
	if (s && s->from_env && s->base_dir && strlen(s->base_dir) < len) {
		memcpy(dir, s->base_dir, strlen(s->base_dir) + 1);
		*mode = s->mode;
		found = true;
	}
	control_unlock();
	return found;
}

void mark_tracer_get_stats(struct mark_trace_stats *out)
{
	memset(out, 0, sizeof(*out));
	control_lock();
	struct tracer_session *s = tracer_current;
	if (s) {
		out->active = 1;
		uint64_t buffers;
		tracer_sum_rings(s, &out->events, &out->lost, &buffers);
		if (s->stats)
			out->bytes_written = __atomic_load_n(&s->stats->bytes_written, __ATOMIC_ACQUIRE);
	}
	control_unlock();
}

/* ---- snapshot (overwrite mode) ---- */

/* Is the directory fd, or one of its ancestors, the directory (dev, ino)? */
static bool dir_within(int fd, uint64_t dev, uint64_t ino)
{
	int cur = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (int depth = 0; cur >= 0 && depth < 256; depth++) {
		struct stat st, up_st;
		if (fstat(cur, &st) != 0)
			break;
		if (st.st_dev == dev && st.st_ino == ino) {
			close(cur);
			return true;
		}
		int up = openat(cur, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		close(cur);
		cur = up;
		if (up >= 0 && fstat(up, &up_st) == 0 && up_st.st_dev == st.st_dev && up_st.st_ino == st.st_ino)
			break;   /* the root */
	}
	if (cur >= 0)
		close(cur);
	return false;
}

int mark_tracer_snapshot(const char *directory)
{
	return mark_tracer_snapshot_into(directory, 0);
}

int mark_tracer_snapshot_into(const char *directory, unsigned flags)
{
	mark_error_clear();
	if (!directory || !*directory)
		return mark_error(EINVAL, "mark: snapshot: no directory given");
	control_lock();
	struct tracer_session *s = tracer_current;
	int rc = 0, fd = -1;
	if (!s) {
		rc = mark_error(ENOENT, "mark: snapshot: no tracing session is running");
		goto out;
	}
	if (s->mode != MARK_TRACE_OVERWRITE) {
		rc = mark_error(EINVAL, "mark: snapshot: the session records in %s mode, which writes "
					"continuously; snapshots need overwrite mode",
				s->mode == MARK_TRACE_DISCARD ? "discard" : "block");
		goto out;
	}
	/* As the session's directory: created 0700, walked safely, private to us. */
	char why[512];
	bool created = false;
	fd = mark_dir_open(directory, MARK_DIR_CREATE, 0700, 0700, &created, NULL, NULL, why, sizeof(why));
	if (fd < 0) {
		rc = mark_error(-fd, "mark: snapshot: cannot create %s: %s", directory, why);
		goto out;
	}
	if ((rc = mark_dir_check_private(fd, geteuid(), directory, why, sizeof(why))) < 0) {
		rc = mark_error(-rc, "mark: snapshot: refusing the directory: %s; use a directory that only uid %u "
				     "can write", why, (unsigned)geteuid());
		goto out;
	}
	if (dir_within(fd, s->base_dev, s->base_ino)) {
		rc = mark_error(EINVAL, "mark: snapshot: %s is (inside) the session's trace directory %s; "
					"choose another one", directory, s->base_dir);
		goto out;
	}
	/*
	 * Never delete what the user keeps there: a directory that holds
	 * anything is refused, unless the caller asks to replace an earlier
	 * snapshot, and even then only what this tracer writes is removed.
	 */
	int full = created ? 0 : mark_dir_nonempty(fd);
	if (full > 0 && !(flags & MARK_SNAPSHOT_FORCE)) {
		rc = mark_error(ENOTEMPTY, "mark: snapshot: %s is not empty; give a new or empty directory, or "
					   "--force to replace an earlier snapshot there (only files mark writes are "
					   "removed)", directory);
		goto out;
	}
	if (full > 0)
		tracer_clean_trace_dir(fd, 0);
	rc = tracer_snapshot_write(s, fd, directory, NULL, 0, 0, 0);
	if (rc < 0)
		rc = mark_error(-rc, "mark: snapshot: cannot write into %s: %s", directory, strerror(-rc));
out:
	if (fd >= 0)
		close(fd);
	control_unlock();
	return rc;
}

/* ---- parsing ---- */

int mark_trace_mode_parse(const char *text, enum mark_trace_mode *mode)
{
	if (text && strcmp(text, "discard") == 0)
		*mode = MARK_TRACE_DISCARD;
	else if (text && strcmp(text, "overwrite") == 0)
		*mode = MARK_TRACE_OVERWRITE;
	else if (text && strcmp(text, "block") == 0)
		*mode = MARK_TRACE_BLOCK;
	else
		return mark_error(EINVAL, "mark: \"%s\" is not a trace mode (use discard, overwrite or block)",
				  text ? text : "");
	return 0;
}

int mark_size_parse(const char *text, size_t *bytes)
{
	if (!text || !*text)
		return mark_error(EINVAL, "mark: empty size (use a number of bytes, e.g. 4096, 64k, 16M, 1G)");
	const char *p = text;
	if (*p < '0' || *p > '9')
		return mark_error(EINVAL, "mark: \"%s\" is not a size (use e.g. 4096, 64k, 16M, 1G)", text);
	unsigned long long v = 0;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (ULLONG_MAX - 9) / 10)
			return mark_error(ERANGE, "mark: size \"%s\" is too large", text);
		v = v * 10 + (unsigned)(*p - '0');
	}
	unsigned shift = 0;
	switch (*p) {
	case 'k': case 'K': shift = 10; p++; break;
	case 'm': case 'M': shift = 20; p++; break;
	case 'g': case 'G': shift = 30; p++; break;
	default: break;
	}
	if (shift && (*p == 'i' || *p == 'I') && (p[1] == 'B' || p[1] == 'b'))
		p += 2;
	else if (*p == 'B' || *p == 'b')
		p++;
	if (*p)
		return mark_error(EINVAL, "mark: \"%s\" is not a size (use e.g. 4096, 64k, 16M, 1G)", text);
	if (shift && v > (ULLONG_MAX >> shift))
		return mark_error(ERANGE, "mark: size \"%s\" is too large", text);
	v <<= shift;
	if (v > SIZE_MAX)
		return mark_error(ERANGE, "mark: size \"%s\" is too large", text);
	*bytes = (size_t)v;
	return 0;
}

int mark_rotate_parse(const char *text, uint64_t *bytes, uint64_t *ms)
{
	static const struct {
		const char *unit;
		uint64_t ms;
	} units[] = { { "ms", 1 }, { "s", 1000 }, { "min", 60000 }, { "h", 3600000 } };
	*bytes = *ms = 0;
	if (!text || *text < '0' || *text > '9')
		return mark_error(EINVAL, "mark: \"%s\" is not a size (64M) or a duration (500ms, 30s, 10min, 1h)",
				  text ? text : "");
	char *end;
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].unit) != 0)
			continue;
		if (errno || v == 0 || v > UINT64_MAX / 1000000ull / units[i].ms)
			return mark_error(ERANGE, "mark: duration \"%s\" is zero or too long", text);
		*ms = v * units[i].ms;
		return 0;
	}
	size_t b;
	int rc = mark_size_parse(text, &b);
	if (rc < 0)
		return mark_error(-rc, "mark: \"%s\" is not a size (64M) or a duration (500ms, 30s, 10min, 1h)",
				  text);
	*bytes = b;
	return 0;
}

/* ---- environment configuration ---- */

/* A decimal count ("100"): 0, or -EINVAL. */
static int parse_count(const char *text, uint64_t *out)
{
	char *end;
	if (*text < '0' || *text > '9')
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

static char **split_globs(const char *text, size_t *count)
{
	size_t n = 1;
	for (const char *p = text; *p; p++)
		n += *p == ',';
	char **v = calloc(n + 1, sizeof(char *));
	if (!v)
		return NULL;
	size_t k = 0;
	const char *p = text;
	while (*p) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		while (len && (*p == ' ' || *p == '\t')) {
			p++;
			len--;
		}
		while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
			len--;
		if (len) {
			if (!(v[k] = strndup(p, len)))
				break;
			k++;
		}
		p = e ? e + 1 : p + strlen(p);
	}
	*count = k;
	return v;
}

static void free_globs(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/*
 * Any bad value: one line on stderr, and the program runs untraced.  The
 * constructor never exits or aborts.
 */
/*
 * An object with markers registered: the executable's own, after this
 * library's constructor started a session from the environment, or a
 * dlopen()ed library.  Describe its markers in the metadata now rather
 * than at the consumer's next round (10 ms or more later): recovery
 * decodes only the records of described markers, so a process that
 * fired them and then exec'd or died at once lost those events (counted
 * lost).  trylock: a control function under way (a session starting or
 * stopping) is not waited for here, in a constructor that may hold the
 * loader's lock; the consumer describes the markers at its next round.
 */
static void describe_new_markers(void)
{
	if (!control_trylock())
		return;
	struct tracer_session *s = tracer_current;
	if (s && !__atomic_load_n(&s->stopping, __ATOMIC_ACQUIRE))
		tracer_describe_markers(s);
	control_unlock();
}

/*
 * Values the tracer accepts that do nothing, said once (this runs once
 * per image) rather than taken in silence: a 0 that the docs give no
 * meaning to but "off", and the snapshot limits without a trigger.
 * Tracing goes on.
 */
static void env_notes(const char *rotate_s, const char *max_s, const char *snapshot_on,
		      const char *max_snapshots_s, const char *interval_s, const struct tracer_trigger_config *trigger)
{
	uint64_t bytes, ms;
	if (rotate_s && *rotate_s && mark_rotate_parse(rotate_s, &bytes, &ms) == 0 && !bytes && !ms) {
		if (max_s && *max_s)
			mark_warn("mark: MARK_ROTATE=%s sets no chunk size of its own: 0 means off, and the chunks "
				  "are an eighth of MARK_MAX_SIZE, as without MARK_ROTATE (unset it, or give a size "
				  "such as 64M or a duration such as 30s)\n", BRIEF(rotate_s));
		else
			mark_warn("mark: MARK_ROTATE=%s cuts no chunks: 0 means off (unset it, or give a size such "
				  "as 64M or a duration such as 30s)\n", BRIEF(rotate_s));
	}
	const bool triggered = snapshot_on && *snapshot_on;
	if (!triggered && max_snapshots_s && *max_snapshots_s)
		mark_warn("mark: MARK_MAX_SNAPSHOTS=%s is ignored: it caps the snapshots MARK_SNAPSHOT_ON triggers, "
			  "and MARK_SNAPSHOT_ON is not set\n", BRIEF(max_snapshots_s));
	if (!triggered && interval_s && *interval_s)
		mark_warn("mark: MARK_SNAPSHOT_INTERVAL=%s is ignored: it spaces the snapshots MARK_SNAPSHOT_ON "
			  "triggers, and MARK_SNAPSHOT_ON is not set\n", BRIEF(interval_s));
	else if (interval_s && *interval_s && trigger->interval_ms == 0)
		mark_warn("mark: MARK_SNAPSHOT_INTERVAL=%s sets no least time between two snapshots: 0 means none, "
			  "as unset (unset it, or give a duration such as 500ms or 30s)\n", BRIEF(interval_s));
}

static void __attribute__((constructor)) tracer_env_init(void)
{
	mark_core_on_object_registered(describe_new_markers);
	/* secure_getenv: a setuid/setgid/setcap program (AT_SECURE) must not
	 * let the user who runs it choose a directory it writes with its
	 * privileges, nor what it records; it sees no MARK_* at all. */
	const char *dir = secure_getenv("MARK_TRACE");
	const char *enable = secure_getenv("MARK_ENABLE");
	const char *mode_s = secure_getenv("MARK_MODE");
	const char *buffer_s = secure_getenv("MARK_BUFFER");
	const char *max_s = secure_getenv("MARK_MAX_SIZE");
	const char *rotate_s = secure_getenv("MARK_ROTATE");
	const char *filter = secure_getenv("MARK_FILTER");
	const char *snapshot_on = secure_getenv("MARK_SNAPSHOT_ON");
	const char *max_snapshots_s = secure_getenv("MARK_MAX_SNAPSHOTS");
	const char *interval_s = secure_getenv("MARK_SNAPSHOT_INTERVAL");
	if (!dir && !enable)
		return;
	size_t max_size = 0;
	uint64_t rotate_size = 0, rotate_ms = 0;
	if (max_s && *max_s && (mark_size_parse(max_s, &max_size) < 0 || max_size < (1u << 20))) {
		mark_warn("mark: MARK_MAX_SIZE=%s is not valid (a size of at least 1M, e.g. 20M, 1G); "
			"tracing is off\n", BRIEF(max_s));
		return;
	}
	if (rotate_s && *rotate_s && mark_rotate_parse(rotate_s, &rotate_size, &rotate_ms) < 0) {
		mark_warn("mark: MARK_ROTATE=%s is not valid (a size such as 64M, or a duration such as "
			"500ms, 30s, 10min, 1h); tracing is off\n", BRIEF(rotate_s));
		return;
	}
	struct tracer_trigger_config trigger = { snapshot_on, 0, 0 };
	if (snapshot_on && *snapshot_on && tracer_trigger_check(snapshot_on, "MARK_SNAPSHOT_ON") < 0) {
		mark_warn("%s (write 'GLOB' or 'GLOB if EXPR', see `mark record --help`); tracing is off\n",
			  mark_last_error());
		return;
	}
	if (max_snapshots_s && *max_snapshots_s &&
	    (parse_count(max_snapshots_s, &trigger.max_snapshots) < 0 || trigger.max_snapshots == 0 ||
	     trigger.max_snapshots > TRACER_MAX_SNAPSHOTS)) {
		mark_warn("mark: MARK_MAX_SNAPSHOTS=%s is not valid (a count from 1 to %u); tracing is off\n",
			  BRIEF(max_snapshots_s), TRACER_MAX_SNAPSHOTS);
		return;
	}
	uint64_t interval_bytes = 0;
	if (interval_s && *interval_s &&
	    (mark_rotate_parse(interval_s, &interval_bytes, &trigger.interval_ms) < 0 || interval_bytes)) {
		mark_warn("mark: MARK_SNAPSHOT_INTERVAL=%s is not valid (a duration such as 500ms, 30s, "
			  "10min, 1h); tracing is off\n", BRIEF(interval_s));
		return;
	}
	enum mark_trace_mode mode = snapshot_on && *snapshot_on ? MARK_TRACE_OVERWRITE : MARK_TRACE_DISCARD;
	size_t buffer = 0;
	if (mode_s && *mode_s && mark_trace_mode_parse(mode_s, &mode) < 0) {
		mark_warn("mark: MARK_MODE=%s is not valid (use discard, overwrite or block); "
			"tracing is off\n", BRIEF(mode_s));
		return;
	}
	/* Named here by the variables: the start's refusal speaks of modes only. */
	if (snapshot_on && *snapshot_on && mode != MARK_TRACE_OVERWRITE) {
		mark_warn("mark: MARK_SNAPSHOT_ON needs overwrite mode, the flight recorder (MARK_MODE=overwrite, "
			  "which it implies when MARK_MODE is unset); MARK_MODE=%s writes every event anyway: unset "
			  "MARK_MODE, or MARK_SNAPSHOT_ON; tracing is off\n", BRIEF(mode_s));
		return;
	}
	if (buffer_s && *buffer_s) {
		if (mark_size_parse(buffer_s, &buffer) < 0 || buffer < TRACER_MIN_BUFFER ||
		    buffer > TRACER_MAX_BUFFER) {
			mark_warn("mark: MARK_BUFFER=%s is not valid (a size from 4k to 4G, e.g. 64k, "
				"16M); tracing is off\n", BRIEF(buffer_s));
			return;
		}
	}
	size_t nglobs = 0;
	char **globs = NULL;
	if (enable) {
		globs = split_globs(enable, &nglobs);
		if (!globs || nglobs == 0) {
			mark_warn("mark: MARK_ENABLE=%s names no markers (use comma-separated globs, "
				"e.g. net_*,disk_io); tracing is off\n", BRIEF(enable));
			free_globs(globs);
			return;
		}
		/* Every glob checked before any is armed or any directory made,
		 * and the message names the variable the user must fix. */
		for (size_t i = 0; i < nglobs; i++) {
			char why[200];
			if (mark_glob_check(globs[i], why, sizeof(why)) == 0)
				continue;
			mark_warn("mark: MARK_ENABLE=%s is not valid: glob \"%s\": %s; %s\n", BRIEF(enable), BRIEF(globs[i]), why,
				  dir ? "tracing is off" : "no marker is armed");
			free_globs(globs);
			return;
		}
	}
	if (!dir || !*dir) {
		if (dir) {
			mark_warn("mark: MARK_TRACE is empty (set it to a trace directory); tracing "
				"is off\n");
		} else {
			/* MARK_ENABLE alone: arm the markers for external tools (USDT users). */
			for (size_t i = 0; i < nglobs; i++)
				if (mark_arm(globs[i]) < 0)
					mark_warn("%s\n", mark_last_error());
		}
		free_globs(globs);
		return;
	}
	if (filter && *filter) {
		char err[256];
		struct mark_filter *f = mark_filter_parse(filter, err, sizeof(err));
		if (!f) {
			mark_warn("mark: MARK_FILTER=%s is not valid: %s (see `mark record --help` "
				"for the filter language); tracing is off\n", BRIEF(filter), err);
			free_globs(globs);
			return;
		}
		mark_filter_free(f);
	}
	/*
	 * A relative MARK_TRACE is resolved against this image's working
	 * directory, and exec passes the variable on: a program this one
	 * execs after chdir() resolved it against another directory and wrote
	 * its trace there, leaving this image's trace (same pid) unfinished
	 * in the first (found by a review).  So the variable is made absolute
	 * in the environment before the session starts, while the process has
	 * one thread (setenv is not thread-safe; the consumer thread starts
	 * with the session).  libmark dlopen()ed into a running multi-threaded
	 * program leaves it as it is, and says so.
	 */
	char *abs_dir = NULL;
	if (dir[0] != '/') {
		if (MARK_SINGLE_THREADED() && (abs_dir = absolute_path(dir)) && setenv("MARK_TRACE", abs_dir, 1) == 0) {
			dir = abs_dir;
		} else {
			mark_warn("mark: MARK_TRACE=%s is a relative path, and could not be made absolute in the "
				  "environment: a program this process execs after changing directory would write "
				  "its trace elsewhere; give an absolute path ($PWD/...)\n", BRIEF(dir));
		}
	}
	struct mark_trace_config cfg = {
		.directory = dir,
		.mode = mode,
		.buffer_size = buffer,
		.globs = (const char *const *)globs,
	};
	/* Refusals of the chunk settings name these variables (they named
	 * `mark record`'s --rotate and --max-size). */
	const struct tracer_chunk_limits limits = {
		.max_size = max_size,
		.rotate_size = rotate_size,
		.rotate_ms = rotate_ms,
		.rotate_name = "MARK_ROTATE",
		.rotate_text = rotate_s && *rotate_s ? rotate_s : NULL,
		.max_size_name = "MARK_MAX_SIZE",
		.max_size_text = max_s && *max_s ? max_s : NULL,
	};
	env_notes(rotate_s, max_s, snapshot_on, max_snapshots_s, interval_s, &trigger);
	control_lock();
	int rc = session_start_locked(&cfg, &limits, filter, &trigger);
	if (rc == 0)
		tracer_current->from_env = true;
	control_unlock();
	if (rc < 0)
		mark_warn("%s; tracing is off\n", mark_last_error());
	free(abs_dir);
	free_globs(globs);
}

/* Write the trace when the program exits (after its own destructors). */
static void __attribute__((destructor)) tracer_exit_fini(void)
{
	struct tracer_session *s = __atomic_load_n(&tracer_current, __ATOMIC_ACQUIRE);
	if (!s)
		return;
	/* A program traced through its environment (`mark record -- CMD`)
	 * whose parent exits first (a daemon's double fork) keeps its
	 * children traced; a session started by the API or a controller ends
	 * for the whole family when its process exits. */
	mark_error_clear();
	control_lock();
	s = tracer_current;
	session_stop_locked(s && !s->from_env, NULL);
	control_unlock();
}

/*
 * The consumer thread of a forked child's session saw the root session
 * stop (family_stop): stop this session as mark_tracer_stop() would, from
 * the consumer itself.  It cannot join itself, so it detaches and marks
 * itself not started first; it returns 0 when the session is gone (the
 * caller must not touch it again and must end the thread), or -EBUSY when
 * someone holds control_mutex -- a stop under way, which will join this
 * thread: the caller goes on and sees `stopping`.
 */
int tracer_session_stop_by_family(struct tracer_session *s)
{
	if (!control_trylock())
		return -EBUSY;
	if (tracer_current != s || __atomic_load_n(&s->stopping, __ATOMIC_ACQUIRE)) {
		control_unlock();
		return -EBUSY;
	}
	__atomic_store_n(&s->consumer_started, false, __ATOMIC_RELEASE);
	pthread_detach(pthread_self());
	session_stop_locked(false, NULL);
	control_unlock();
	return 0;
}
