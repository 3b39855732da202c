/*
 * Crash recovery: complete the trace of a process that died while tracing.
 *
 * What survives a SIGKILL or SIGSEGV: the buffer files (.mark-ring-N, in
 * the page cache even if never written back), the stream files up to the
 * consumer's last write, the metadata up to its last rename, and the
 * statistics file.  For each ring:
 *   1. finish the consumer's commit protocol (trace_format.h): keep the
 *      packet it was writing if the file holds all of it, else cut the
 *      stream at the last committed length;
 *   2. resume at the committed tail and write every committed record up
 *      to the ring's head as packets, exactly as the consumer would have;
 *   3. records whose marker id the metadata never described (a marker
 *      loaded moments before death) cannot be decoded: they are counted in
 *      events_discarded rather than written.
 * Nothing here runs in the dead process; the caller is `mark record` (or
 * any tool) after waitpid().
 *
 * Trust (issue 10).  The caller is often root, and the trace directory
 * belongs to the traced user, who can put anything in it before and while
 * we work.  So every file and every byte in it is hostile input:
 *
 *   - Files are only ever opened relative to a descriptor of their
 *     directory, with O_NOFOLLOW|O_CLOEXEC|O_NONBLOCK (a planted symlink
 *     fails with ELOOP, a FIFO cannot block us), and used only if fstat()
 *     says: a regular file, owned by the directory's owner, one link (a
 *     hard link to someone else's file has two).  A stream file we create
 *     is O_EXCL, mode 0600 and, when we are not the directory's owner,
 *     given to that owner (fchown of what this call created, nothing
 *     else).  Sub-directories (pid-P) are opened the same way with
 *     O_DIRECTORY; each is judged by its own owner.  We chose this over a
 *     helper that drops privileges to the owner because it also protects a
 *     same-user caller, keeps the recovery in one process the fuzzer can
 *     drive, and leaves no window in which a half-privileged helper runs
 *     the parsing code; what root can do that the owner cannot is reduced
 *     to writing into files the owner owns and could write itself.
 *   - Files are read with pread() into our own memory and written back
 *     with pwrite(), never mapped: the owner could truncate a mapped file
 *     under us and kill us with SIGBUS.  A ring is read a window of at
 *     most RECOVER_WINDOW bytes at a time, never whole: its header says
 *     how large it is, and a sparse file of the owner's could otherwise
 *     make us allocate and read up to the largest buffer, 4 GiB.
 *   - Every field is checked against the file's size and the format's
 *     bounds before it is used (stats_check(), ring_check()).  A bad field
 *     is an error that names the file and the field; that file is left as
 *     it is, and every other buffer and sub-trace is still recovered.
 *   - The recorded pid must be a real pid (> 0, and for DIR/pid-P equal to
 *     P) of a process that no longer runs; pid 0 or a negative pid is an
 *     error, not "dead".
 */
#define _GNU_SOURCE
#include "tracer_internal.h"
#include "util/printable.h"
#include "util/uuid_text.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Largest .mark-stats we read; the tracer writes 256 + 4096 * 128 bytes. */
#define RECOVER_STATS_MAX (64u << 20)

struct recover_ctx {
	int err;   /* first error (errno value), 0 if none; its text is mark_last_error() */
};

/* A directory being recovered. */
struct rdir {
	int fd;               /* every file is opened relative to this */
	uid_t uid;            /* its owner: every file we use must be theirs */
	gid_t gid;
	const char *path;     /* for messages only */
};

/*
 * Report a problem.  The first one becomes mark_last_error() (the caller
 * prints it); later ones are printed now, so that none is lost.  Returns
 * -err.
 */
static int recover_fail(struct recover_ctx *ctx, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int recover_fail(struct recover_ctx *ctx, int err, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (ctx->err == 0) {
		ctx->err = err;
		mark_error(err, "%s", msg);
	} else {
		mark_warn("%s\n", msg);
	}
	return -err;
}

/* pread (or, if `out`, pwrite) exactly len bytes at off: 0, or -errno
 * (-EIO: the file ends first). */
static int io_full_at(int fd, void *buf, size_t len, off_t off, bool out)
{
	char *p = buf;
	while (len) {
		ssize_t n = out ? pwrite(fd, p, len, off) : pread(fd, p, len, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}
#define read_full(fd, buf, len, off) io_full_at(fd, buf, len, off, false)
#define write_full_at(fd, buf, len, off) io_full_at(fd, buf, len, off, true)

/* The file behind fd is one the tracer could have written in d: a regular
 * file of d's owner with a single link. */
static int check_owned(struct recover_ctx *ctx, const struct rdir *d, const char *name, int fd,
		       struct stat *sb)
{
	if (fstat(fd, sb) != 0)
		return recover_fail(ctx, errno, "mark: recover: cannot stat %s/%s: %s", d->path, name,
				    strerror(errno));
	if (!S_ISREG(sb->st_mode))
		return recover_fail(ctx, EINVAL, "mark: recover: %s/%s is not a regular file, so the tracer did not "
				    "write it; left as it is (remove it, then recover again)", d->path, name);
	if (sb->st_uid != d->uid)
		return recover_fail(ctx, EPERM, "mark: recover: %s/%s belongs to uid %u, its directory to uid %u, "
				    "so the tracer did not write it; left as it is (remove it, then recover again)",
				    d->path, name, (unsigned)sb->st_uid, (unsigned)d->uid);
	if (sb->st_nlink != 1)
		return recover_fail(ctx, EPERM, "mark: recover: %s/%s has %lu links (a hard link to another file?), "
				    "so the tracer did not write it; left as it is (remove it, then recover again)",
				    d->path, name, (unsigned long)sb->st_nlink);
	return 0;
}

/* Open d/name read-write if check_owned() accepts it.  Returns the
 * descriptor, -ENOENT (not reported) if there is no such file, or another
 * -errno after reporting why. */
static int open_owned(struct recover_ctx *ctx, const struct rdir *d, const char *name, struct stat *sb)
{
	int fd = openat(d->fd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		int e = errno;
		if (e == ENOENT)
			return -ENOENT;
		if (e == ELOOP)
			return recover_fail(ctx, e, "mark: recover: %s/%s is a symbolic link, which the tracer never "
					    "writes; not followed, left as it is (remove it, then recover again)",
					    d->path, name);
		return recover_fail(ctx, e, "mark: recover: cannot open %s/%s: %s", d->path, name, strerror(e));
	}
	int rc = check_owned(ctx, d, name, fd, sb);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	return fd;
}

/* Create d/name (it did not exist): O_EXCL, owner-only, and given to d's
 * owner when that is not us -- the only file recovery ever chowns, one
 * this call created. */
static int create_owned(struct recover_ctx *ctx, const struct rdir *d, const char *name)
{
	int fd = openat(d->fd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return recover_fail(ctx, errno, "mark: recover: cannot create %s/%s: %s", d->path, name,
				    strerror(errno));
	if (geteuid() != d->uid && fchown(fd, d->uid, d->gid) != 0) {
		/* Not root: the file stays ours, readable by us only; the trace
		 * is still complete. */
	}
	return fd;
}

/* Parse the decimal number that follows `prefix` in name, as the tracer
 * writes it (no sign, no leading zero, fits in 32 bits); -1 otherwise. */
static int64_t name_number(const char *name, const char *prefix)
{
	size_t pl = strlen(prefix);
	if (strncmp(name, prefix, pl) != 0)
		return -1;
	const char *p = name + pl;
	if (*p < '0' || *p > '9' || (p[0] == '0' && p[1]))
		return -1;
	int64_t v = 0;
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (*p - '0');
		if (v > UINT32_MAX)
			return -1;
	}
	return v;
}

/*
 * Check every layout field of a ring header read from a file of fsize
 * bytes named .mark-ring-index.  Returns NULL if usable, else the name of
 * the first bad field; *why says what is wrong with it.
 */
static const char *ring_check(const struct mark_tf_ring *h, uint64_t fsize, uint32_t index, const char **why)
{
	uint64_t cap = h->capacity;
	*why = "is not what this version writes";
	if (h->version != MARK_TF_RING_VERSION)
		return "version";
	if (h->header_size != MARK_TF_RING_HEADER_SIZE)
		return "header_size";
	*why = "is not a power of two between 4 KiB and 4 GiB";
	if (cap < TRACER_MIN_BUFFER || cap > TRACER_MAX_BUFFER || (cap & (cap - 1)))
		return "capacity";
	*why = "does not fit the file's size (header_size + capacity > size)";
	if (MARK_TF_RING_HEADER_SIZE + cap > fsize)
		return "capacity";
	*why = "differs from the N of the file's name .mark-ring-N";
	if (h->stream_index != index)
		return "stream_index";
	*why = "is not discard, overwrite or block";
	if (h->mode > MARK_TRACE_BLOCK)
		return "mode";
	*why = "is past head";
	if (h->tail > h->head)
		return "tail";
	/* The records still in the ring start at tail, or in overwrite mode
	 * (nobody drains: tail stays behind) at max(tail, oldest). */
	uint64_t first = h->tail;
	if (h->mode == MARK_TRACE_OVERWRITE) {
		if (h->oldest > h->head)
			return "oldest";
		if (h->oldest > first)
			first = h->oldest;
	}
	*why = "is more than capacity bytes ahead of the first record kept (tail, or oldest in overwrite mode)";
	if (h->head - first > cap)
		return "head";
	return NULL;
}

/* The start of d's metadata (the trace and clock blocks the tracer writes
 * first), NUL-terminated, or 0 bytes.  Untrusted: never through a link,
 * and a FIFO or device planted under the name is not waited on or read. */
static size_t metadata_head(int dfd, char *buf, size_t size)
{
	int fd = openat(dfd, MARK_TF_METADATA, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat st;
	if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
		close(fd);
		fd = -1;
	}
	ssize_t n = fd >= 0 ? pread(fd, buf, size - 1, 0) : -1;
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = 0;
	return n > 0 ? (size_t)n : 0;
}

/* The trace UUID the metadata's trace block gives; false if none. */
static bool metadata_trace_uuid(int dfd, uint8_t uuid[16])
{
	char buf[8192];
	if (!metadata_head(dfd, buf, sizeof(buf)))
		return false;
	const char *t = strstr(buf, "\ntrace {"), *u = t ? strstr(t, "\tuuid = \"") : NULL;
	if (!u)
		return false;
	const char *end = mark_uuid_parse(u + 9, uuid);
	return end && *end == '"';
}

/*
 * The trace clock's frequency from the metadata (the clock block near its
 * start), for the spacing of empty packets (tracer_tick_gap()); 0 when it
 * cannot be read (then taken as nanoseconds).
 */
static uint64_t metadata_clock_freq(int dfd)
{
	char buf[8192];
	if (!metadata_head(dfd, buf, sizeof(buf)))
		return 0;
	const char *p = strstr(buf, "\tfreq = ");
	if (!p)
		return 0;
	char *end;
	errno = 0;
	unsigned long long f = strtoull(p + 8, &end, 10);
	return errno == 0 && *end == ';' ? (uint64_t)f : 0;
}

/* The largest packet the consumer writes: TRACER_PACKET_MAX of records and
 * the one record that crosses it. */
#define RECOVER_MAX_PACKET (sizeof(struct mark_tf_packet) + TRACER_PACKET_MAX + (1u << 16))

/*
 * The header of the packet at byte off of stream file sfd, into *pk, if it
 * is one the tracer writes and ends at or before `to`: its length in
 * bytes.  Else 0, and *why says what is wrong.  The file is untrusted.
 */
static uint64_t packet_at(int sfd, uint64_t off, uint64_t to, struct mark_tf_packet *pk, const char **why)
{
	*why = "is not a whole packet header";
	if (off > to || to - off < sizeof(*pk) || read_full(sfd, pk, sizeof(*pk), (off_t)off) != 0)
		return 0;
	const uint64_t len = pk->packet_size / 8;
	*why = "is not a packet the tracer writes (magic, or sizes out of bounds)";
	if (pk->magic != MARK_TF_CTF_MAGIC || pk->packet_size % 64 || len < sizeof(*pk) || len > to - off ||
	    len > RECOVER_MAX_PACKET || pk->content_size > pk->packet_size)
		return 0;
	return len;
}

/*
 * Count the events of the packets of stream file sfd (d/sname) in
 * [from, to) into counts (by id; ids >= ncounts only in *events): the
 * packets the consumer wrote after the counts it last committed
 * (mark_tf_counted).  The file is untrusted: a packet that is not one the
 * tracer writes ends the count, with a warning (the trace is left as it
 * is; the summary then counts fewer events than it holds).  Returns the
 * offset the count reached: the end of the last packet counted.
 */
static uint64_t count_stream_events(const struct rdir *d, const char *sname, int sfd, uint64_t from, uint64_t to,
				    uint64_t *counts, unsigned ncounts, uint64_t *events)
{
	uint64_t *buf = NULL;
	uint64_t off = from;
	const char *bad = NULL;
	while (off < to && !bad) {
		struct mark_tf_packet pk;
		const uint64_t len = packet_at(sfd, off, to, &pk, &bad);
		if (!len)
			break;
		bad = "could not be counted: out of memory";
		if (!buf && !(buf = malloc(RECOVER_MAX_PACKET)))
			break;
		bad = "cannot be read";
		const uint64_t body = len - sizeof(pk);
		if (body && read_full(sfd, buf, body, (off_t)(off + sizeof(pk))) != 0)
			break;
		bad = "holds a record that is not one the tracer writes";
		uint64_t pos = 0;
		while (pos + 16 <= body) {
			const uint64_t w = buf[pos / 8 + 1];
			const unsigned id = (unsigned)(w & 0xffff), rlen = (unsigned)((w >> 16) & 0xffff);
			if (rlen < 16 || MARK_TF_RECORD_SPAN(rlen) > body - pos)
				break;
			if (id < ncounts)
				counts[id]++;
			++*events;
			pos += MARK_TF_RECORD_SPAN(rlen);
		}
		if (pos != body)
			break;
		bad = NULL;
		off += len;
	}
	free(buf);
	if (bad)
		mark_warn("mark: recover: %s/%s: the packet at byte %" PRIu64 " %s; the summary does not count "
			"the events from there on (the file is left as it is)\n", d->path, sname, off, bad);
	return off;
}

/*
 * The records of a ring are read through a window of this many bytes (a
 * power of two; several packets of TRACER_PACKET_MAX, so that packets are
 * cut at a window's end once in 4 times at most).
 */
#define RECOVER_WINDOW (4u << 20)

/*
 * Read the ring positions [from, to) of the ring file fd (capacity cap)
 * into the window win of w bytes, each at its position modulo w, as the
 * ring itself holds it modulo cap (w divides cap, to - from <= w).
 * 0 or -errno.
 */
static int read_window(int fd, uint64_t cap, uint64_t *win, uint64_t w, uint64_t from, uint64_t to)
{
	while (from < to) {
		const uint64_t in_ring = from & (cap - 1), in_win = from & (w - 1);
		uint64_t n = to - from;
		if (n > cap - in_ring)
			n = cap - in_ring;
		if (n > w - in_win)
			n = w - in_win;
		int rc = read_full(fd, (char *)win + in_win, n, (off_t)(MARK_TF_RING_HEADER_SIZE + in_ring));
		if (rc < 0)
			return rc;
		from += n;
	}
	return 0;
}

/*
 * The records from pos to head that could not be written (a damaged record
 * or an undescribed marker): counted as tracer_count_records() counts them,
 * reading the ring through the window.
 */
static uint64_t count_unwritten(int fd, uint64_t cap, uint64_t *win, uint64_t w, uint64_t pos, uint64_t head)
{
	uint64_t n = 0, filled_to = pos;
	while (pos < head) {
		if (pos + 16 > filled_to) {
			filled_to = pos + w;
			if (read_window(fd, cap, win, w, pos, filled_to) != 0)
				return n + 1;   /* cannot read on: at least this one */
		}
		const uint64_t len = (win[(pos / 8 + 1) & (w / 8 - 1)] >> 16) & 0xffff;
		n++;
		if (len < 16)
			break;
		pos += MARK_TF_RECORD_SPAN(len);
	}
	return n;
}

/*
 * Recover one ring, d/name (= .mark-ring-index).  Returns 0 or -errno
 * (reported).  The ring is read into our memory a window at a time (see
 * the top of the file); its consumer fields are updated there by the commit protocol and
 * written back only if the ring file stays (an error after some packets),
 * so that a second recovery resumes where this one stopped.
 * counted: the stream lengths the statistics' counts include, by index
 * (mark_tf_counted), or NULL (a file of an older mark): the events after
 * that length are counted too, and counted[index] becomes the length that
 * counts and events_out now include.
 */
static int recover_ring(struct recover_ctx *ctx, const struct rdir *d, const char *name, uint32_t index,
			uint64_t *counts, unsigned described, uint64_t freq, uint64_t *counted,
			uint64_t *events_out, uint64_t *bytes_out, uint64_t *lost_out)
{
	struct stat sb;
	int fd = open_owned(ctx, d, name, &sb);
	if (fd == -ENOENT)
		return 0;   /* gone meanwhile */
	if (fd < 0)
		return fd;
	struct mark_tf_ring hdr;
	if ((uint64_t)sb.st_size < MARK_TF_RING_HEADER_SIZE ||
	    read_full(fd, &hdr, sizeof(hdr), 0) != 0 || memcmp(hdr.magic, MARK_TF_RING_MAGIC, 8) != 0) {
		/* Created but never initialised (the magic is stored last): no
		 * event was ever committed to it. */
		close(fd);
		unlinkat(d->fd, name, 0);
		return 0;
	}
	const char *why, *field = ring_check(&hdr, (uint64_t)sb.st_size, index, &why);
	if (field) {
		close(fd);
		return recover_fail(ctx, EINVAL, "mark: recover: %s/%s: field %s %s; left as it is (its events are "
				    "not recovered)", d->path, name, field, why);
	}
	const uint64_t cap = hdr.capacity;
	const uint64_t window = cap < RECOVER_WINDOW ? cap : RECOVER_WINDOW;
	uint64_t *data = malloc(window);
	if (!data) {
		close(fd);
		return recover_fail(ctx, ENOMEM, "mark: recover: out of memory for %" PRIu64 " bytes to read %s/%s; "
				    "left as it is", window, d->path, name);
	}
	int rc = 0;
	char sname[32];
	snprintf(sname, sizeof(sname), "%s%" PRIu32, MARK_TF_STREAM_PREFIX, index);
	struct stat ss;
	int sfd = open_owned(ctx, d, sname, &ss);
	if (sfd == -ENOENT) {
		sfd = create_owned(ctx, d, sname);
		memset(&ss, 0, sizeof(ss));
	}
	if (sfd < 0) {
		free(data);
		close(fd);
		return sfd;   /* reported; the ring file stays for another try */
	}
	/*
	 * Commit protocol (trace_format.h): a packet announced in
	 * pending_bytes is complete if the file reaches that length; else
	 * the stream ends at the committed stream_bytes.
	 */
	bool wrote = false;
	uint64_t fsize = (uint64_t)ss.st_size;
	uint64_t committed = hdr.stream_bytes, tail = hdr.tail, seq = hdr.packet_seq;
	uint64_t lost_reported = hdr.lost_reported;
	if (hdr.pending_bytes > committed && fsize >= hdr.pending_bytes && hdr.pending_tail >= hdr.tail &&
	    hdr.pending_tail <= hdr.head) {
		struct mark_tf_packet pk;
		const char *why;
		if (packet_at(sfd, committed, fsize, &pk, &why) == hdr.pending_bytes - committed) {
			committed = hdr.pending_bytes;
			tail = hdr.pending_tail;
			seq = pk.packet_seq_num + 1;
			lost_reported = pk.events_discarded;
		}
	}
	if (committed > fsize)
		committed = fsize;   /* the file holds less than was committed: keep what it holds */
	if (fsize != committed && ftruncate(sfd, (off_t)committed) != 0) {
		rc = recover_fail(ctx, errno, "mark: recover: cannot cut %s/%s at its last complete packet: %s",
				  d->path, sname, strerror(errno));
		goto out;
	}
	if (lseek(sfd, 0, SEEK_END) < 0) {
		rc = recover_fail(ctx, errno, "mark: recover: %s/%s: %s", d->path, sname, strerror(errno));
		goto out;
	}
	/* Packets the consumer wrote after it last committed its counts
	 * (counted[index] moves on below, at `partial`). */
	if (counted && index < MARK_TF_COUNTED_STREAMS && counted[index] < committed) {
		count_stream_events(d, sname, sfd, counted[index], committed, counts, described, events_out);
		*bytes_out += committed - counted[index];
	}
	hdr.stream_bytes = committed;
	hdr.tail = tail;
	hdr.packet_seq = seq;
	hdr.lost_reported = lost_reported;
	hdr.pending_bytes = 0;
	wrote = true;
	/* ring_check() bounds: tail <= head, head - max(tail, oldest) <= cap. */
	uint64_t head = hdr.head;
	uint64_t start = tail;
	if (hdr.mode == MARK_TRACE_OVERWRITE && hdr.oldest > start)
		start = hdr.oldest;
	if (head < start)
		start = head;
	if (head - start > cap)
		start = head - cap;
	/* The holes inside the records (events dropped between them),
	 * reported where they are; the header is untrusted,
	 * tracer_ring_losses() ignores gaps that do not add up. */
	struct mark_tf_gap gaps[MARK_TF_RING_GAPS];
	unsigned ngaps = 0;
	uint64_t first_lost = hdr.lost + hdr.lost_consumer;
	if (first_lost >= hdr.lost)
		first_lost = tracer_ring_losses(&hdr, start, head, first_lost, 0, true, lost_reported, NULL, gaps, &ngaps);
	struct tracer_packet_sink sink = {
		.fd = sfd,
		.uuid = hdr.trace_uuid,
		.index = hdr.stream_index,
		.tid = hdr.tid,
		.seq = seq,
		.stream_bytes = committed,
		.commit = &hdr,
		.lost = first_lost,
		.gaps = gaps,
		.ngaps = ngaps,
		/* A stream file that a chunk cut (MARK_MAX_SIZE) left new starts
		 * at the count the earlier chunk reported. */
		.lost_before = lost_reported,
		.counts = counts,
		.counts_cap = described,
		.freq = freq,
	};
	/* The name the owner stored (an untrusted file: cleaned again). */
	mark_thread_name_clean(sink.thread_name, (const char *)hdr.thread_name, sizeof(hdr.thread_name));
	/* A window at a time.  A record that crosses the window's end stops
	 * tracer_write_records() there, and the next window starts with it;
	 * a window without progress holds a damaged record or an undescribed
	 * marker id.  Inside the ring (not its last window) the sink is
	 * `live`: losses a packet could not carry go in the next packet, or
	 * in the empty packet below, not in one between two windows. */
	uint64_t consumed = start;
	while (consumed < head) {
		const uint64_t from = consumed, to = head - from > window ? from + window : head;
		if ((rc = read_window(fd, cap, data, window, from, to)) < 0) {
			recover_fail(ctx, -rc, "mark: recover: cannot read %s/%s: %s (did it shrink meanwhile?); "
				     "left as it is from ring position %" PRIu64, d->path, name, strerror(-rc), from);
			goto partial;
		}
		sink.live = to < head;
		if ((rc = tracer_write_records(&sink, data, window, from, to, &consumed)) < 0) {
			recover_fail(ctx, -rc, "mark: recover: cannot write %s/%s: %s", d->path, sname, strerror(-rc));
			goto partial;
		}
		if (consumed == from || (consumed < to && to == head))
			break;
	}
	sink.live = false;
	if (consumed < head) {
		/* Undescribed marker ids or a damaged record: count the rest lost. */
		hdr.lost_consumer += count_unwritten(fd, cap, data, window, consumed, head);
		consumed = head;
	}
	sink.lost = hdr.lost + hdr.lost_consumer;
	if (sink.lost != hdr.lost_reported) {
		/* Losses after the last packet: an empty packet carries the count. */
		if (!sink.last_ts) {
			/* Timestamp of the stream's last event, from its last packet
			 * (each step moves at least one packet header forward). */
			struct mark_tf_packet pk;
			const char *why;
			uint64_t off = 0, last_end = 0, len;
			while ((len = packet_at(sfd, off, sink.stream_bytes, &pk, &why))) {
				last_end = pk.timestamp_end;
				off += len;
			}
			sink.last_ts = last_end;
		}
		if ((rc = tracer_write_empty_packet(&sink, consumed)) < 0) {
			recover_fail(ctx, -rc, "mark: recover: cannot write %s/%s: %s", d->path, sname, strerror(-rc));
			goto partial;
		}
	}
	hdr.tail = consumed;
	*lost_out += sink.lost;
partial:
	/* The packets written, also before a failed write: counts has their
	 * events (tracer_write_records() takes back only the failed packet's),
	 * and the header that stays for a second recovery their length. */
	if (counted && index < MARK_TF_COUNTED_STREAMS)
		counted[index] = hdr.stream_bytes;   /* emit_packet() keeps it */
	*events_out += sink.events;
	*bytes_out += sink.bytes;
out:
	close(sfd);
	if (rc == 0)
		unlinkat(d->fd, name, 0);
	else if (wrote && write_full_at(fd, &hdr, sizeof(hdr), 0) != 0)
		mark_warn("mark: recover: could not update %s/%s; a second recovery starts again at its last "
			"complete packet\n", d->path, name);
	close(fd);
	free(data);
	return rc;
}

int mark_process_running(int pid)
{
	if (pid <= 0)
		return true;   /* not one process: never "gone" */
	if (kill(pid, 0) != 0 && errno == ESRCH)
		return false;
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return true;   /* kill() found it; /proc hides it (hidepid=) or it died just now: not "gone" */
	bool zombie = false;
	if (fgets(buf, sizeof(buf), f)) {
		/* "pid (comm) S ...": the state follows the last ')' (comm may hold ')') */
		char *p = strrchr(buf, ')');
		zombie = p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
	}
	fclose(f);
	return !zombie;
}

/*
 * Check every layout field of a statistics file of `size` bytes (all read
 * into our memory).  expect_pid: the P of DIR/pid-P, or 0 for the
 * directory the caller named.  Returns NULL if usable, else the first bad
 * field; *why says what is wrong with it.
 */
static const char *stats_check(const struct mark_tf_stats *st, size_t size, pid_t expect_pid, const char **why)
{
	*why = "is not what this version writes (not a mark statistics file, or a newer one)";
	if (memcmp(st->magic, MARK_TF_STATS_MAGIC, 8) != 0)
		return "magic";
	if (st->version != MARK_TF_STATS_VERSION)
		return "version";
	*why = "is smaller than the header, not a multiple of 8, or beyond the file's size";
	if (st->header_size < sizeof(struct mark_tf_stats) || st->header_size % 8 || st->header_size > size)
		return "header_size";
	*why = "is smaller than an entry, not a multiple of 8, or beyond the file's size";
	if (st->entry_size < sizeof(struct mark_tf_stats_entry) || st->entry_size % 8 || st->entry_size > size)
		return "entry_size";
	*why = "entries do not fit the file's size (header_size + max_entries * entry_size > size)";
	if (st->max_entries > (size - st->header_size) / st->entry_size)
		return "max_entries";
	*why = "is larger than max_entries";
	if (st->nentries > st->max_entries)
		return "nentries";
	*why = "is larger than the number of marker ids a trace can have";
	if (st->markers_described > MARK_TF_MAX_ID + 1u)
		return "markers_described";
	*why = "is not a known state";
	if (st->state > MARK_TF_STATE_RECOVERED)
		return "state";
	*why = "is not a process id (a statistics file the tracer wrote names its process)";
	if (st->pid <= 0)
		return "pid";
	*why = "differs from the P of the directory's name pid-P";
	if (expect_pid > 0 && st->pid != expect_pid)
		return "pid";
	return NULL;
}

/*
 * Recover the trace in d, if it has a statistics file: -ENOENT (not
 * reported) if it has none, else the events recovered or -errno
 * (reported).
 */
/*
 * The stream of the events that had no buffer (consumer.c,
 * write_no_ring_losses()) has no ring and no commit protocol: its packets
 * are whole writes of one or two packets.  A writer killed inside one (or
 * a short write on a full disk) leaves a torn packet at the end: cut it
 * off, so the stream stays valid CTF.
 */
static int recover_loss_stream(struct recover_ctx *ctx, const struct rdir *d, const struct mark_tf_stats *st,
			       uint64_t freq)
{
	char name[64];
	snprintf(name, sizeof(name), "%s%u", MARK_TF_STREAM_PREFIX, (unsigned)TRACER_LOSS_STREAM);
	struct stat sb;
	int fd = open_owned(ctx, d, name, &sb);
	const uint64_t lost = st->lost_no_ring;
	if (fd == -ENOENT && lost == 0)
		return 0;
	const bool created = fd == -ENOENT;
	if (created) {
		fd = create_owned(ctx, d, name);
		memset(&sb, 0, sizeof(sb));
	}
	if (fd < 0)
		return fd;
	const off_t whole = sb.st_size - sb.st_size % (off_t)sizeof(struct mark_tf_packet);
	int rc = 0;
	if (whole != sb.st_size && ftruncate(fd, whole) != 0) {
		rc = recover_fail(ctx, errno, "mark: recover: cannot cut the torn packet at the end of %s/%s: %s",
				  d->path, name, strerror(errno));
		goto out;
	}
	/*
	 * The events counted in the statistics file (mark_tf_stats.lost_no_ring)
	 * that the consumer had not written yet (it writes at most every
	 * 100 ms): one more packet with the count, stamped at the last of them
	 * (or just after the stream's last packet, if later).  What the stream
	 * reports so far is its last packet's; every packet is an empty one.
	 */
	struct mark_tf_packet pk, last = { 0 };
	bool have_last = false;
	for (off_t off = 0; off < whole; off += (off_t)sizeof(pk)) {
		if (read_full(fd, &pk, sizeof(pk), off) != 0 || pk.magic != MARK_TF_CTF_MAGIC ||
		    pk.packet_size != sizeof(pk) * 8) {
			rc = recover_fail(ctx, EINVAL, "mark: recover: %s/%s: no packet of the tracer at offset %lld; "
					  "its %llu events that had no buffer are in .mark-stats only", d->path, name,
					  (long long)off, (unsigned long long)lost);
			goto out;
		}
		last = pk;
		have_last = true;
	}
	if (have_last ? lost <= last.events_discarded : lost == 0)
		goto out;
	struct tracer_packet_sink sink = {
		.fd = fd,
		.index = TRACER_LOSS_STREAM,
		.thread_name = "(no buffer)",
		.seq = have_last ? last.packet_seq_num + 1 : 0,
		.stream_bytes = (uint64_t)whole,
		.lost = lost,
		.lost_before = have_last ? last.events_discarded : 0,
		.last_ts = st->lost_no_ring_ts > last.timestamp_end ? st->lost_no_ring_ts : last.timestamp_end,
		.freq = freq,
	};
	uint8_t uuid[16];
	if (have_last)
		memcpy(uuid, last.uuid, sizeof(uuid));
	else if (!metadata_trace_uuid(d->fd, uuid)) {
		rc = recover_fail(ctx, EINVAL, "mark: recover: %s/%s: no trace UUID in it; the %llu events that "
				  "had no buffer are in .mark-stats only", d->path, MARK_TF_METADATA,
				  (unsigned long long)lost);
		goto out;
	}
	sink.uuid = uuid;
	if (lseek(fd, whole, SEEK_SET) < 0 || (rc = tracer_write_empty_packet(&sink, 0)) < 0)
		rc = recover_fail(ctx, rc < 0 ? -rc : errno, "mark: recover: cannot write %s/%s: %s", d->path, name,
				  strerror(rc < 0 ? -rc : errno));
out:
	close(fd);
	if (rc < 0 && created)
		unlinkat(d->fd, name, 0);   /* ours, and empty: nothing for a reader */
	return rc;
}

/*
 * Whether some process still holds the trace's statistics file (sb: the
 * one recovery opened) open for writing.  The writer maps it shared and
 * writable for the whole session (tracer_stats_open()), which keeps it
 * open for writing until the writer's address space goes: at exit, and
 * also at exec, where the pid lives on running another program.  A read
 * lease is granted only while nobody holds a file open for writing
 * (fcntl(2), F_SETLEASE), so granting one says that no mapping is left, in
 * any process: a forked child that still maps its parent's file counts as
 * a writer, the safe mistake.  Whatever prevents the test (a filesystem
 * without leases, leases disabled, neither the owner nor CAP_LEASE, a
 * lease someone else holds) answers "still writes", as before the test.
 * The lease is released at once; a writer that opens the file in between
 * would break it with a signal to us, SIGURG here, whose default action is
 * to ignore it (SIGIO's would end the process).
 */
static bool stats_mapped_for_writing(const struct rdir *d, const struct stat *sb)
{
	int fd = openat(d->fd, MARK_TF_STATS, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return true;
	struct stat now;
	bool writing = true;
	if (fstat(fd, &now) == 0 && now.st_dev == sb->st_dev && now.st_ino == sb->st_ino &&
	    fcntl(fd, F_SETSIG, SIGURG) == 0 && fcntl(fd, F_SETLEASE, F_RDLCK) == 0) {
		writing = false;
		fcntl(fd, F_SETLEASE, F_UNLCK);
	}
	close(fd);
	return writing;
}

static int64_t recover_trace(struct recover_ctx *ctx, const struct rdir *d, pid_t expect_pid)
{
	struct stat sb;
	int fd = open_owned(ctx, d, MARK_TF_STATS, &sb);
	if (fd < 0)
		return fd;
	if (sb.st_size < (off_t)sizeof(struct mark_tf_stats) || sb.st_size > (off_t)RECOVER_STATS_MAX) {
		close(fd);
		return recover_fail(ctx, EINVAL, "mark: recover: %s/%s: its size %lld is not that of a statistics "
				    "file (%zu bytes to 64 MiB); the trace is left as it is", d->path, MARK_TF_STATS,
				    (long long)sb.st_size, sizeof(struct mark_tf_stats));
	}
	size_t size = (size_t)sb.st_size;
	/* uint64_t: the header's 8-byte fields are aligned in our copy. */
	uint64_t *buf = malloc(size);
	if (!buf) {
		close(fd);
		return recover_fail(ctx, ENOMEM, "mark: recover: out of memory");
	}
	struct mark_tf_stats *st = (struct mark_tf_stats *)buf;
	int64_t rc = read_full(fd, buf, size, 0);
	const char *why, *field = NULL;
	if (rc < 0) {
		rc = recover_fail(ctx, (int)-rc, "mark: recover: cannot read %s/%s: %s", d->path, MARK_TF_STATS,
				  strerror((int)-rc));
		goto out;
	}
	if ((field = stats_check(st, size, expect_pid, &why))) {
		rc = recover_fail(ctx, EINVAL, "mark: recover: %s/%s: field %s %s; the trace is left as it is",
				  d->path, MARK_TF_STATS, field, why);
		goto out;
	}
	if (st->state != MARK_TF_STATE_RUNNING && st->state != MARK_TF_STATE_STARTING)
		goto out;   /* complete already: 0 events */
	/*
	 * The writer must be gone, or we would take its buffers from under
	 * it.  Our own pid: no other process is the writer (a caller that
	 * traces into the directory it recovers has only itself to blame).
	 * A pid reused since the writer died reads as running: we refuse,
	 * which is the safe mistake.
	 */
	pid_t pid = st->pid;
	if (pid != getpid() && mark_process_running(pid)) {
		/*
		 * The pid runs, but it may run another program: an exec ends
		 * the old image's session without a stop, and nothing writes
		 * the buffers any more.  The lease test counts our own write
		 * descriptor as a writer: closed for the test, opened again
		 * after it and required to be the same file.
		 */
		close(fd);
		fd = -1;
		if (stats_mapped_for_writing(d, &sb)) {
			rc = recover_fail(ctx, EBUSY, "mark: recover: process %d still writes %s; recover after it "
					  "has exited", (int)pid, d->path);
			goto out;
		}
		struct stat again;
		fd = open_owned(ctx, d, MARK_TF_STATS, &again);
		if (fd < 0) {
			rc = fd;
			goto out;
		}
		if (again.st_dev != sb.st_dev || again.st_ino != sb.st_ino) {
			rc = recover_fail(ctx, EAGAIN, "mark: recover: %s/%s was replaced during the recovery; the "
					  "trace is left as it is (recover again)", d->path, MARK_TF_STATS);
			goto out;
		}
	}
	unsigned described = st->markers_described;
	struct stat ms;
	if (fstatat(d->fd, MARK_TF_METADATA, &ms, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(ms.st_mode))
		described = 0;   /* no metadata: nothing is decodable */
	const uint64_t freq = described ? metadata_clock_freq(d->fd) : 0;
	/* Records carry 16-bit ids; described <= MARK_TF_MAX_ID + 1 (stats_check). */
	uint64_t *counts = calloc(MARK_TF_MAX_ID + 1, sizeof(uint64_t));
	if (!counts) {
		rc = recover_fail(ctx, ENOMEM, "mark: recover: out of memory");
		goto out;
	}
	/*
	 * The counts committed with the stream lengths they include
	 * (mark_tf_counted); a file without them (an older mark) or with a
	 * set out of bounds: the entries' counts, as before, which miss the
	 * packets written after the consumer's last update.
	 */
	struct mark_tf_counted *sets = NULL, *set = NULL;
	uint64_t *counted = NULL;
	const uint64_t entries_end = st->header_size + (uint64_t)st->max_entries * st->entry_size;
	if (st->counted_offset && st->counted_offset % 8 == 0 && st->counted_offset >= entries_end &&
	    st->counted_offset <= size && (size - st->counted_offset) / sizeof(*sets) >= 2 && st->counted_set <= 1) {
		sets = (struct mark_tf_counted *)((char *)buf + st->counted_offset);
		set = &sets[st->counted_set];
		counted = set->stream_bytes;
	} else if (st->counted_offset) {
		mark_warn("mark: recover: %s/%s: field counted_offset or counted_set is out of bounds; the "
			"summary counts what the last update said, without the packets written after it\n",
			d->path, MARK_TF_STATS);
	}
	uint64_t events = 0, bytes = 0, ring_lost = 0;
	int ring_rc = 0;
	int lfd = openat(d->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir = lfd >= 0 ? fdopendir(lfd) : NULL;
	if (!dir) {
		if (lfd >= 0)
			close(lfd);
		ring_rc = recover_fail(ctx, errno, "mark: recover: cannot list %s: %s", d->path, strerror(errno));
	}
	struct dirent *e;
	/* The streams whose ring was there (recovered or left for another try). */
	uint64_t ring_seen[MARK_TF_COUNTED_STREAMS / 64] = { 0 };
	while (dir && (e = readdir(dir))) {
		/* Only names the tracer writes; nothing else is a buffer. */
		int64_t index = name_number(e->d_name, MARK_TF_RING_PREFIX);
		if (index < 0)
			continue;
		if (index < MARK_TF_COUNTED_STREAMS)
			ring_seen[index / 64] |= UINT64_C(1) << (index % 64);
		int r = recover_ring(ctx, d, e->d_name, (uint32_t)index, counts, described, freq, counted, &events,
				     &bytes, &ring_lost);
		if (r < 0 && ring_rc == 0)
			ring_rc = r;
	}
	/*
	 * A stream without a ring: a recovery that was stopped (killed, a
	 * failed write) after it wrote a ring's packets out and deleted it,
	 * before it committed the counts below.  (The tracer deletes no ring
	 * while its session runs.)  The stream's last packets are then after
	 * the committed counted length, and no ring will bring recover_ring()
	 * to them: count them here.  (A stream with
	 * a ring is counted by recover_ring(), which first cuts a packet the
	 * commit protocol does not keep.)
	 */
	if (dir && counted) {
		rewinddir(dir);
		while ((e = readdir(dir))) {
			int64_t index = name_number(e->d_name, MARK_TF_STREAM_PREFIX);
			if (index < 0 || index >= MARK_TF_COUNTED_STREAMS ||
			    (ring_seen[index / 64] & (UINT64_C(1) << (index % 64))))
				continue;
			struct stat ss;
			int sfd = open_owned(ctx, d, e->d_name, &ss);
			if (sfd < 0)
				continue;   /* reported */
			if ((uint64_t)ss.st_size > counted[index]) {
				const uint64_t reached = count_stream_events(d, e->d_name, sfd, counted[index],
									     (uint64_t)ss.st_size, counts, described,
									     &events);
				bytes += reached - counted[index];
				counted[index] = reached;
			}
			close(sfd);
		}
	}
	if (dir)
		closedir(dir);
	int lrc = recover_loss_stream(ctx, d, st, freq ? freq : metadata_clock_freq(d->fd));
	if (lrc < 0 && ring_rc == 0)
		ring_rc = lrc;
	/*
	 * Statistics: add what was recovered.  Written back as the seqlock
	 * writer would (trace_format.h): seq odd, the body, seq even, each a
	 * pwrite() into the page cache that readers map.  The writer is dead,
	 * so the readers are tools (mark stats, the live line); one that
	 * overlaps sees an odd or changed seq and retries.
	 */
	uint64_t seq = st->seq;
	st->seq = seq + 1;
	int wrc = write_full_at(fd, &st->seq, sizeof(st->seq), offsetof(struct mark_tf_stats, seq));
	unsigned ne = described < st->max_entries ? described : st->max_entries;
	/* The set to commit next: the one not committed, from the committed
	 * one, whose stream lengths recover_ring() has already moved on. */
	struct mark_tf_counted *next = sets ? &sets[st->counted_set ^ 1] : NULL;
	if (next)
		memcpy(next, set, sizeof(*next));
	for (unsigned i = 0; i < ne; i++) {
		/* Within the file: max_entries was checked against its size. */
		struct mark_tf_stats_entry *ent =
			(struct mark_tf_stats_entry *)((char *)buf + st->header_size + (size_t)i * st->entry_size);
		const bool in_set = set && i < MARK_TF_COUNTED_IDS;
		ent->events = (in_set ? set->events[i] : ent->events) + counts[i];
		if (in_set)
			next->events[i] = ent->events;
	}
	if (ne > st->nentries)
		st->nentries = ne;
	st->events_written = (set ? set->events_written : st->events_written) + events;
	st->bytes_written = (set ? set->bytes_written : st->bytes_written) + bytes;
	if (next) {
		next->events_written = st->events_written;
		next->bytes_written = st->bytes_written;
		/* Whole before the header that commits it (below). */
		if (write_full_at(fd, next, sizeof(*next), (off_t)((char *)next - (char *)buf)) == 0)
			st->counted_set ^= 1;
	}
	if (st->events < st->events_written)
		st->events = st->events_written;
	/* The losses as the rings and the recording threads counted them at
	 * the end, which the consumer's last update (up to 100 ms before)
	 * may not have seen; never less than it said (a ring left as it is). */
	if (st->lost < ring_lost + st->lost_no_ring)
		st->lost = ring_lost + st->lost_no_ring;
	st->state = ring_rc == 0 ? MARK_TF_STATE_RECOVERED : MARK_TF_STATE_RUNNING;
	st->update_realtime_ns = tracer_realtime_ns();
	if (wrc == 0)   /* the header and the entries that changed */
		wrc = write_full_at(fd, buf, st->header_size + (size_t)ne * st->entry_size, 0);
	st->seq = seq + 2;
	if (wrc == 0)
		wrc = write_full_at(fd, &st->seq, sizeof(st->seq), offsetof(struct mark_tf_stats, seq));
	free(counts);
	if (wrc < 0)
		recover_fail(ctx, -wrc, "mark: recover: cannot update %s/%s: %s", d->path, MARK_TF_STATS,
			     strerror(-wrc));
	rc = ring_rc < 0 ? ring_rc : wrc < 0 ? wrc : (int64_t)events;
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return rc;
}

static int64_t recover_dir(struct recover_ctx *ctx, const struct rdir *d, pid_t expect_pid, int depth);

/* Recover every DIR/pid-P of d (forked children), one level per call. */
static int64_t recover_children(struct recover_ctx *ctx, const struct rdir *d, int depth)
{
	int64_t total = 0;
	if (depth > 16)
		return 0;
	int lfd = openat(d->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir = lfd >= 0 ? fdopendir(lfd) : NULL;
	if (!dir) {
		if (lfd >= 0)
			close(lfd);
		return recover_fail(ctx, errno, "mark: recover: cannot list %s: %s", d->path, strerror(errno));
	}
	struct dirent *e;
	while ((e = readdir(dir))) {
		int64_t p = name_number(e->d_name, MARK_TF_CHILD_PREFIX);
		if (p <= 0 || p > INT32_MAX)
			continue;
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/%s", d->path, e->d_name);
		int cfd = openat(d->fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cfd < 0) {
			if (errno == ELOOP || errno == ENOTDIR)
				recover_fail(ctx, EINVAL, "mark: recover: %s is not a directory (a symbolic link?), "
					     "so the tracer did not make it; not followed", path);
			else if (errno != ENOENT)
				recover_fail(ctx, errno, "mark: recover: cannot open %s: %s", path, strerror(errno));
			continue;
		}
		struct stat sb;
		if (fstat(cfd, &sb) == 0) {
			struct rdir child = { .fd = cfd, .uid = sb.st_uid, .gid = sb.st_gid, .path = path };
			int64_t r = recover_dir(ctx, &child, (pid_t)p, depth + 1);
			if (r > 0)
				total += r;
		}
		close(cfd);
	}
	closedir(dir);
	return total;
}

static int64_t recover_dir(struct recover_ctx *ctx, const struct rdir *d, pid_t expect_pid, int depth)
{
	int64_t r = recover_trace(ctx, d, expect_pid);
	if (r == -ENOENT)
		return r;
	int64_t children = recover_children(ctx, d, depth);
	return (r > 0 ? r : 0) + (children > 0 ? children : 0);
}

int mark_trace_recover(const char *directory)
{
	mark_error_clear();
	if (!directory || !*directory)
		return mark_error(EINVAL, "mark: recover: no trace directory given");
	/* The caller named this directory: a symlink to it is followed; nothing below it is. */
	int fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat sb;
	if (fd < 0 || fstat(fd, &sb) != 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return mark_error(e == ENOTDIR ? ENOENT : e, "mark: recover: %s is not a directory one can open: %s",
				  directory, strerror(e));
	}
	int r = tracer_trace_recover_at(fd, directory);
	close(fd);
	return r;
}

int mark_trace_recover_at(int dirfd, const char *name, const char *shown_as)
{
	mark_error_clear();
	if (!name || !*name)
		return mark_error(EINVAL, "mark: recover: no trace directory given");
	if (!shown_as)
		shown_as = name;
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		const int e = errno == ELOOP ? ENOTDIR : errno;
		return mark_error(e, "mark: recover: %s is not a directory one can open%s: %s", shown_as,
				  e == ENOTDIR ? " (a symbolic link is not followed)" : "", strerror(e));
	}
	int r = tracer_trace_recover_at(fd, shown_as);
	close(fd);
	return r;
}

int tracer_trace_recover_at(int fd, const char *path)
{
	struct stat sb;
	if (fstat(fd, &sb) != 0)
		return mark_error(errno, "mark: recover: %s: %s", path, strerror(errno));
	struct recover_ctx ctx = { 0 };
	struct rdir top = { .fd = fd, .uid = sb.st_uid, .gid = sb.st_gid, .path = path };
	/* DIR holds one trace per process (pid-P/); DIR itself may be one too. */
	int64_t r = recover_dir(&ctx, &top, 0, 0);
	if (r == -ENOENT)
		r = recover_children(&ctx, &top, 0);
	if (ctx.err)
		return -ctx.err;
	return r > INT32_MAX ? INT32_MAX : (int)(r > 0 ? r : 0);
}
