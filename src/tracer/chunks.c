/*
 * Chunks: bounded disk use (MARK_MAX_SIZE, MARK_ROTATE; docs/tracer.md).
 *
 * The live chunk is the session's own DIR/pid-P/: its stream files, its
 * metadata, its rings.  Cutting a chunk seals what DIR/pid-P/ holds into a
 * new sibling directory DIR/pid-P.chunk-K/: the metadata is written there
 * and each stream file is renamed into it (relative to directory
 * descriptors, never replacing anything).  The next packet of a ring then
 * starts a new stream file in DIR/pid-P/.  Every chunk is a complete CTF
 * trace with the session's trace UUID and clock, so babeltrace2 and the
 * readers of `mark view` find each one below DIR and merge them by time.
 * Under max_size the oldest sealed chunks are deleted -- only directories
 * this session created (checked by device and inode) and in them only the
 * files the tracer writes -- and the events they held are counted in
 * DIR/pid-P/.mark-chunks, which `mark stats` reads.
 *
 * Concurrency: everything here runs on the consumer thread (the only
 * writer of stream files and of the rings' consumer fields), or at stop
 * after the consumer is joined.  Producers never look at stream files.
 *
 * Crash safety (SIGKILL at any point): a ring's stream file is renamed
 * first, then its header's stream_bytes is set to 0.  Recovery that finds
 * the file gone creates a new one and writes from the committed tail;
 * recovery that finds stream_bytes 0 and a new (empty or partial) file
 * cuts it at the committed length as always.  A chunk directory whose
 * metadata was not written yet holds no stream file (metadata comes first).
 */
#define _GNU_SOURCE
#include "tracer_internal.h"
#include "util/printable.h"
#include "util/safe_dir.h"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * How a refusal names a setting: "MARK_ROTATE=600k" for a variable with
 * its text, "--rotate 600k" for an option with its text, the name alone
 * without one.  The text is shortened (mark_error escapes it).
 */
struct setting_text {
	char text[160];
};

static struct setting_text setting(const char *name, const char *text)
{
	struct setting_text t;
	char value[100];
	if (!text) {
		snprintf(t.text, sizeof(t.text), "%s", name);
		return t;
	}
	mark_printable_brief(value, sizeof(value), text);
	snprintf(t.text, sizeof(t.text), "%s%s%s", name, name[0] == '-' ? " " : "=", value);
	return t;
}

int tracer_chunks_config(struct tracer_session *s, const struct tracer_chunk_limits *limits)
{
	static const struct tracer_chunk_limits none = { 0 };
	const struct tracer_chunk_limits *cfg = limits ? limits : &none;
	/* The names the user gave the settings by: the environment's for
	 * MARK_ROTATE, which was refused naming `mark record`'s options. */
	const char *rotate = cfg->rotate_name ? cfg->rotate_name : "--rotate";
	const char *max_size = cfg->max_size_name ? cfg->max_size_name : "--max-size";
	s->rotated_created = false;
	s->max_size = cfg->max_size;
	s->chunk_size = cfg->rotate_size;
	if (cfg->rotate_ms > UINT64_MAX / 1000000ull)
		return mark_error(ERANGE, "mark: tracer: a rotation interval of %" PRIu64 " ms (%s) is too long; give "
					  "a shorter one", cfg->rotate_ms, setting(rotate, cfg->rotate_text).text);
	s->rotate_ns = cfg->rotate_ms * 1000000ull;
	if (s->max_size) {
		if (s->max_size < (1u << 20))
			return mark_error(EINVAL, "mark: tracer: maximum trace size %" PRIu64 " (%s) is below 1M; "
						  "give at least 1M (it also holds the live chunk)", s->max_size,
					  setting(max_size, cfg->max_size_text).text);
		/* Eight chunks: deleting one frees an eighth of the budget. */
		if (!s->chunk_size)
			s->chunk_size = s->max_size / 8;
		if (s->chunk_size > s->max_size / 2)
			return mark_error(EINVAL, "mark: tracer: rotation size %" PRIu64 " (%s) is more than half of "
						  "%s, the maximum trace size %" PRIu64 "; give a smaller %s (or none: "
						  "a chunk is then an eighth of %s) or a larger %s",
					  s->chunk_size, setting(rotate, cfg->rotate_text).text,
					  setting(max_size, cfg->max_size_text).text, s->max_size, rotate, max_size,
					  max_size);
	}
	if (cfg->rotate_size && cfg->rotate_size < 4096)
		return mark_error(EINVAL, "mark: tracer: rotation size %" PRIu64 " (%s) is below 4k; give at least "
					  "4k (64M), or a duration (500ms, 30s, 10min, 1h)", cfg->rotate_size,
				  setting(rotate, cfg->rotate_text).text);
	s->chunk_start_ns = tracer_monotonic_ns();
	return 0;
}

static void chunk_name(char *buf, size_t len, const struct tracer_session *s, unsigned k)
{
	snprintf(buf, len, "%s%d%s%u", MARK_TF_CHILD_PREFIX, (int)s->pid, MARK_TF_CHUNK_INFIX, k);
}

static void chunk_warn(struct tracer_session *s, const char *what, int err)
{
	if (s->chunk_error_reported)
		return;
	s->chunk_error_reported = true;
	mark_warn("mark: tracer: %s in %s: %s; the trace goes on in %s (check the directory's "
		"space and permissions)\n", what, s->base_dir, strerror(err), s->dir);
}

/*
 * DIR/pid-P/.mark-chunks: fixed-width text rewritten in place, so a reader
 * never sees a shorter file than before.  rotated_lost counts the events
 * that the deleted chunks' packets reported lost (discard mode): they left
 * with those packets.  `deleting_chunk K` / `deleting_events E` /
 * `deleting_lost L` name a chunk whose counts are already in rotated_* but
 * whose directory may still be visible (a SIGKILL in delete_chunk): a
 * reader that still finds DIR/pid-P.chunk-K takes E and L back out, so the
 * counts add up exactly whenever the process dies.
 */
static void write_rotated(struct tracer_session *s, long deleting, const struct tracer_chunk *c)
{
	/*
	 * Opened for each write (a chunk is cut every few MB), never kept:
	 * programs close every descriptor and reuse the numbers (daemons,
	 * closefrom), and a kept one would have written these counts into a
	 * file of the program's.  Created new (O_EXCL) the first time, then
	 * reopened without following a link, in the directory the session
	 * checked (tracer_dir_fd).
	 */
	int dfd = tracer_dir_fd(s);
	if (dfd < 0)
		return;
	int fd;
	if (!s->rotated_created) {
		fd = mark_file_create_at(dfd, MARK_TF_CHUNKS, O_WRONLY);
		if (fd < 0) {
			chunk_warn(s, "cannot create " MARK_TF_CHUNKS, -fd);
			return;
		}
		s->rotated_created = true;
	} else {
		fd = openat(dfd, MARK_TF_CHUNKS, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		struct stat st;
		if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid())) {
			close(fd);
			fd = -1;
			errno = EPERM;
		}
		if (fd < 0) {
			chunk_warn(s, "cannot open " MARK_TF_CHUNKS, errno);
			return;
		}
	}
	char text[256];
	int n = snprintf(text, sizeof(text),
			 "mark-chunks 2\nrotated_events %20" PRIu64 "\nrotated_chunks %20" PRIu64
			 "\ndeleting_chunk %20ld\ndeleting_events %20" PRIu64 "\nrotated_lost %20" PRIu64
			 "\ndeleting_lost %20" PRIu64 "\n",
			 s->rotated_events, s->rotated_chunks, deleting, c ? c->events : 0, s->rotated_lost,
			 c ? c->lost : 0);
	if (pwrite(fd, text, (size_t)n, 0) != n)
		chunk_warn(s, "cannot write " MARK_TF_CHUNKS, errno ? errno : EIO);
	close(fd);
}

/*
 * Delete the oldest sealed chunk: only the directory we created.  Order
 * (crash safety): count it (with the deleting_* note), hide it under a
 * dot name that no reader looks at (one rename: it leaves the trace at
 * once and whole), then remove its files and clear the note.  A SIGKILL
 * after the rename leaves DIR/.pid-P.chunk-K.deleted behind, which holds
 * at most one chunk and is ignored by every reader.
 */
static void delete_chunk(struct tracer_session *s)
{
	struct tracer_chunk c = s->chunks[0];
	memmove(&s->chunks[0], &s->chunks[1], (s->nchunks - 1) * sizeof(s->chunks[0]));
	s->nchunks--;
	char name[64], hidden[80];
	chunk_name(name, sizeof(name), s, c.k);
	snprintf(hidden, sizeof(hidden), ".%s.deleted", name);
	/* Counted even if it cannot be removed: its events are no longer part
	 * of the bounded trace the user asked for. */
	s->rotated_events += c.events;
	s->rotated_lost += c.lost;
	s->rotated_chunks++;
	write_rotated(s, (long)c.k, &c);
	int bfd = tracer_base_fd(s);
	int cfd = bfd < 0 ? -1 : mark_dir_open_at(bfd, name, 0, 0, NULL);
	struct stat st;
	if (cfd >= 0 && fstat(cfd, &st) == 0 && (uint64_t)st.st_dev == c.dev && (uint64_t)st.st_ino == c.ino &&
	    renameat2(bfd, name, bfd, hidden, RENAME_NOREPLACE) == 0) {
		write_rotated(s, -1, NULL);
		tracer_clean_trace_dir(cfd, 8);   /* depth 8: files only, no sub-directories */
		if (unlinkat(bfd, hidden, AT_REMOVEDIR) != 0)
			chunk_warn(s, "cannot remove an old chunk (something else was put in it?)", errno);
	} else {
		/* Renamed or replaced since we made it: not ours to delete. */
		write_rotated(s, -1, NULL);
		chunk_warn(s, "an old chunk directory was replaced or cannot be moved; it is left alone",
			   cfd < 0 ? -cfd : errno ? errno : EEXIST);
	}
	if (cfd >= 0)
		close(cfd);
}

static uint64_t sealed_bytes(const struct tracer_session *s)
{
	uint64_t b = 0;
	for (unsigned i = 0; i < s->nchunks; i++)
		b += s->chunks[i].bytes;
	return b;
}

/* Seal the live chunk into DIR/pid-P.chunk-K.  0 or -errno. */
static int cut_chunk(struct tracer_session *s)
{
	int bfd = tracer_base_fd(s), dfd = tracer_dir_fd(s);
	if (bfd < 0 || dfd < 0)
		return bfd < 0 ? bfd : dfd;
	char name[64];
	int cfd = -1;
	/* A name nobody took: never write into a directory we did not create. */
	for (int tries = 0; tries < 1000 && cfd < 0; tries++) {
		bool created = false;
		chunk_name(name, sizeof(name), s, s->chunk_next++);
		cfd = mark_dir_open_at(bfd, name, MARK_DIR_CREATE, 0700, &created);
		if (cfd >= 0 && !created) {
			close(cfd);
			cfd = -1;
		} else if (cfd < 0 && cfd != -EEXIST && cfd != -ELOOP && cfd != -ENOTDIR) {
			return cfd;
		}
	}
	if (cfd < 0)
		return -EEXIST;
	struct stat st;
	unsigned described = __atomic_load_n(&s->described, __ATOMIC_RELAXED);
	tracer_fork_guard_lock();
	int rc = tracer_metadata_write(cfd, name, s, s->trace_uuid, &described);
	tracer_fork_guard_unlock();
	if (rc == 0)
		s->clock_frozen = true;   /* this chunk's clock is every later chunk's */
	if (rc < 0 || fstat(cfd, &st) != 0) {
		tracer_clean_trace_dir(cfd, 8);
		close(cfd);
		unlinkat(bfd, name, AT_REMOVEDIR);
		return rc < 0 ? rc : -errno;
	}
	uint64_t bytes = 0;
	struct stat ms;
	if (fstatat(cfd, MARK_TF_METADATA, &ms, AT_SYMLINK_NOFOLLOW) == 0)
		bytes += (uint64_t)ms.st_size;   /* the chunk's size on disk includes its metadata */
	/*
	 * Recovery counts the events of each live stream file after the
	 * length the committed counts include (mark_tf_counted): commit them
	 * with every file whole before the files move, and again once their
	 * lengths are 0.  In between nothing is written (this thread is the
	 * writer), and a live file shorter than its counted length holds
	 * nothing uncounted.
	 */
	tracer_counted_commit(s);
	struct tracer_ring *r;
	tracer_for_each_ring(s, r) {
		if (!r->stream_ino)
			continue;   /* no stream file yet */
		char sname[32];
		tracer_path(sname, sizeof(sname), NULL, MARK_TF_STREAM_PREFIX, r->index);
		struct stat fs;
		/* Only the file we wrote (the program may have replaced it). */
		if (fstatat(dfd, sname, &fs, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(fs.st_mode) &&
		    (uint64_t)fs.st_ino == r->stream_ino && (uint64_t)fs.st_dev == r->stream_dev &&
		    renameat2(dfd, sname, cfd, sname, RENAME_NOREPLACE) == 0)
			bytes += (uint64_t)fs.st_size;
		if (r->stream_fd >= 0) {
			struct stat cur;
			if (fstat(r->stream_fd, &cur) == 0 && (uint64_t)cur.st_ino == r->stream_ino &&
			    (uint64_t)cur.st_dev == r->stream_dev)
				close(r->stream_fd);   /* ours (else the program reused the number) */
		}
		r->stream_fd = -1;
		r->stream_ino = 0;
		/* After the rename (crash safety above).  Consumer-owned field;
		 * recovery reads it only once this process is dead. */
		__atomic_store_n(&r->hdr->stream_bytes, 0, __ATOMIC_RELAXED);
	}
	tracer_counted_commit(s);
	close(cfd);
	if (s->max_size) {
		if (s->nchunks == TRACER_MAX_CHUNKS)
			delete_chunk(s);
		s->chunks[s->nchunks++] = (struct tracer_chunk){ .k = s->chunk_next - 1, .bytes = bytes,
								 .events = s->events_written - s->chunk_base_events,
								 .lost = s->lost_written - s->chunk_base_lost,
								 .dev = (uint64_t)st.st_dev,
								 .ino = (uint64_t)st.st_ino };
		/* The live chunk may grow to chunk_size (plus one drain pass)
		 * again: keep the sealed ones within the rest of the budget, but
		 * never delete the chunk just sealed.  It holds the newest
		 * sealed events, and it can alone exceed the budget: one drain
		 * pass writes up to a buffer per thread, which may be more than
		 * MARK_MAX_SIZE (deleting it left traces of no event at all). */
		while (s->nchunks > 1 && sealed_bytes(s) > s->max_size - s->chunk_size)
			delete_chunk(s);
	}
	return 0;
}

void tracer_chunks_tick(struct tracer_session *s, uint64_t now_ns)
{
	if (!s->chunk_size && !s->rotate_ns)
		return;
	uint64_t live = s->bytes_written - s->chunk_base_bytes;
	if (live == 0) {
		s->chunk_start_ns = now_ns;   /* time cuts count from the first event of a chunk */
		return;
	}
	if (!(s->chunk_size && live >= s->chunk_size) &&
	    !(s->rotate_ns && now_ns - s->chunk_start_ns >= s->rotate_ns))
		return;
	int rc = cut_chunk(s);
	if (rc < 0) {
		/* The trace goes on in the live chunk; retry at the next cut. */
		chunk_warn(s, "cannot cut a chunk", -rc);
	}
	s->chunk_base_bytes = s->bytes_written;
	s->chunk_base_events = s->events_written;
	s->chunk_base_lost = s->lost_written;
	s->chunk_start_ns = now_ns;
}

void tracer_chunks_close(struct tracer_session *s)
{
	s->rotated_created = false;
}
