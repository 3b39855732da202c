/*
 * Live statistics and the terminal status line: see liveline.h.
 *
 * Concurrency: the .mark-stats file is written by the traced process's
 * consumer thread as a seqlock (trace_format.h).  We read it with pread()
 * (never mapped: the traced user owns the file and could cut it short
 * under a mapping, which would kill us with SIGBUS): the header, whose
 * `seq` is read before the counters after it, then the entries, then
 * `seq` again.  Each pread() is a separate system call, so the reads are
 * done in that order (on x86-64 loads are not reordered with loads; on
 * weaker machines a copy may at worst mix two updates, which a status
 * display tolerates).  A copy is kept only if `seq` was even and
 * unchanged.  The writer may be dead (SIGKILL), or hostile: then `seq`
 * may stay odd forever, and after a bounded number of retries we use the
 * last copy anyway (its counters are then at worst one update old).
 * Every layout field is checked on each copy, not once: the file may
 * change between two reads.
 *
 * The status line is drawn by one thread of its own; the only state shared
 * with the caller is `stop`, set (release) by liveline_stop() and read
 * (acquire) by the thread between sleeps; pthread_join() then orders the
 * thread's last write to stderr before the caller's erasing of the line.
 */
#define _GNU_SOURCE   /* O_PATH */
#include "liveline.h"
#include "text.h"

#include "tracer/trace_format.h"
#include "util/safe_dir.h"
#include <mark/tracer.h>

#include <dirent.h>
#include <limits.h>
#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* One consistent copy of a .mark-stats file (header and its valid entries). */
struct stats_copy {
	struct mark_tf_stats hdr;
	struct mark_tf_stats_entry *entries;   /* malloc'ed, nentries of them */
	uint32_t nentries;
};

/* pread exactly len bytes at off: 0, or -1 (error, or the file is shorter now). */
static int pread_full(int fd, void *buf, size_t len, off_t off)
{
	char *p = buf;
	while (len) {
		ssize_t n = pread(fd, p, len, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += (size_t)n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

/*
 * The trace directory and everything in it belong to the traced user, who
 * is often not the one running mark (root): any name in it may be a link
 * they planted (`.mark-stats -> /dev/...`, `pid-1 -> /root/private`).  So
 * nothing is opened or listed by path: the directory is opened once, and
 * its files and pid-P/ children are opened relative to its descriptor with
 * O_NOFOLLOW (a link is then ELOOP: skipped, as an absent file is).
 */
static int open_dir(const char *path)
{
	/* The directory the caller names is followed if it is a link (the
	 * caller chose it, e.g. `mark stats latest`); what is in it never is.
	 * O_PATH: opening the files in it needs only search permission, as
	 * opening them by path did; list_dir() asks for read permission. */
	return open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

/* DFD/NAME, a directory (pid-P/) that is not a link, or -1 (a link is
 * ENOTDIR with O_PATH|O_NOFOLLOW|O_DIRECTORY, ELOOP without O_PATH). */
static int open_child_dir(int dfd, const char *name)
{
	return openat(dfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* A DIR* listing the directory dfd, which stays open and ours: "." reopens
 * that same directory (no name to swap) for reading. */
static DIR *list_dir(int dfd)
{
	int lfd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (lfd < 0)
		return NULL;
	DIR *d = fdopendir(lfd);
	if (!d)
		close(lfd);
	return d;
}

#define STATS_ENTRIES_READ_MAX (16u << 20)

static uint64_t monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int copy_stats_file(int dfd, const char *name, struct stats_copy *out, int want_entries)
{
	/* Read with pread, never mapped: the traced user owns the file and
	 * could cut it short under a mapping (SIGBUS in mark record).
	 * O_NOFOLLOW: a link is not followed (to a device, a FIFO or a file
	 * of root's); O_NONBLOCK: a FIFO planted under this name does not
	 * hold the open, and the S_ISREG check below refuses it. */
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -1;
	}
	int ret = -1;
	out->entries = NULL;
	out->nentries = 0;
	unsigned char *raw = NULL;
	/* A writer updates in microseconds; one that died mid-update leaves the
	 * sequence odd for ever: retry for 100 ms at most, then take what was
	 * read (the traced user owns the file and may keep it odd). */
	const uint64_t give_up = monotonic_ns() + 100000000ull;
	for (int attempt = 0; attempt < 1000; attempt++) {
		uint64_t s1, s2;
		if (pread_full(fd, &out->hdr, sizeof(out->hdr), 0) != 0)
			goto out;
		s1 = out->hdr.seq;
		const struct mark_tf_stats *h = &out->hdr;
		if (memcmp(h->magic, MARK_TF_STATS_MAGIC, 8) != 0 || h->version != MARK_TF_STATS_VERSION ||
		    h->header_size < sizeof(struct mark_tf_stats) ||
		    h->entry_size < sizeof(struct mark_tf_stats_entry))
			goto out;
		uint32_t n = 0;
		if (want_entries) {
			n = h->nentries;
			/* Never more entries than marker ids (16 bits), nor than
			 * the file's layout allows: the traced user writes it. */
			uint64_t hs = h->header_size, es = h->entry_size, size = (uint64_t)st.st_size;
			if (n > MARK_TF_MAX_ID + 1)
				n = MARK_TF_MAX_ID + 1;
			if (hs > size || es > (1u << 16))
				n = 0;
			else if (n > (size - hs) / es)
				n = (uint32_t)((size - hs) / es);
			/* One read of them all, then copied out: at most 16 MiB (the
			 * tracer's file holds 4096 entries of 128 bytes: 512 KB). */
			if ((uint64_t)n * es > STATS_ENTRIES_READ_MAX)
				n = (uint32_t)(STATS_ENTRIES_READ_MAX / es);
			struct mark_tf_stats_entry *e = realloc(out->entries, (n ? n : 1) * sizeof(*e));
			if (!e)
				goto out;
			out->entries = e;
			unsigned char *r = n ? realloc(raw, (size_t)n * es) : raw;
			if (!r)
				goto out;
			raw = r;
			if (n && pread_full(fd, raw, (size_t)n * es, (off_t)hs) != 0)
				n = 0;   /* the file shrank meanwhile */
			for (uint32_t i = 0; i < n; i++)
				memcpy(&e[i], raw + (size_t)i * es, sizeof(*e));
		}
		if (pread_full(fd, &s2, sizeof(s2), offsetof(struct mark_tf_stats, seq)) != 0)
			goto out;
		out->nentries = n;
		ret = 0;
		if ((!(s1 & 1) && s1 == s2) || monotonic_ns() > give_up)
			break;
		/* An update is in progress (or its writer died in the middle): retry. */
		struct timespec ts = { 0, 100000 };
		nanosleep(&ts, NULL);
	}
	for (uint32_t i = 0; i < out->nentries; i++)
		out->entries[i].name[sizeof(out->entries[i].name) - 1] = '\0';
out:
	free(raw);
	if (ret != 0) {
		free(out->entries);
		out->entries = NULL;
		out->nentries = 0;
	}
	close(fd);
	return ret;
}

/* DIRFD/NAME ("." for DIRFD itself), never through a link, or -1. */
static int open_dir_at(int dirfd, const char *name)
{
	return openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* Call fn for DIR/.mark-stats and each DIR/pid-P/.mark-stats (one level, as
 * the tracer writes), DIR being the directory dfd, which this closes. */
static int for_each_stats_fd(int dfd, int want_entries, int descend,
			     void (*fn)(const struct stats_copy *, void *), void *arg)
{
	struct stats_copy c;
	int found = 0;
	if (dfd < 0)
		return -1;
	if (copy_stats_file(dfd, MARK_TF_STATS, &c, want_entries) == 0) {
		fn(&c, arg);
		free(c.entries);
		found++;
	}
	DIR *d = descend ? list_dir(dfd) : NULL;
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (strncmp(de->d_name, MARK_TF_CHILD_PREFIX, strlen(MARK_TF_CHILD_PREFIX)) != 0)
			continue;
		/* A pid-P that is a link (or not a directory) is skipped. */
		int cfd = open_child_dir(dfd, de->d_name);
		if (cfd < 0)
			continue;
		if (copy_stats_file(cfd, MARK_TF_STATS, &c, want_entries) == 0) {
			fn(&c, arg);
			free(c.entries);
			found++;
		}
		close(cfd);
	}
	if (d)
		closedir(d);
	close(dfd);
	return found ? 0 : -1;
}

static int for_each_stats(const char *dir, int want_entries, int descend,
			  void (*fn)(const struct stats_copy *, void *), void *arg)
{
	return for_each_stats_fd(open_dir(dir), want_entries, descend, fn, arg);
}

static void add_totals(const struct stats_copy *c, void *arg)
{
	struct live_stats *t = arg;
	t->events += c->hdr.events;
	t->lost += c->hdr.lost;
	t->events_written += c->hdr.events_written;
	t->bytes_written += c->hdr.bytes_written;
	t->snapshots += c->hdr.snapshots;
	t->triggers_busy += c->hdr.triggers_busy;
	t->triggers_over_max += c->hdr.triggers_over_max;
	t->triggers_in_interval += c->hdr.triggers_in_interval;
	t->triggers_failed += c->hdr.triggers_failed;
	t->snapshot_hold_lost += c->hdr.snapshot_hold_lost;
	t->processes++;
	if (c->hdr.state != MARK_TF_STATE_STOPPED && c->hdr.state != MARK_TF_STATE_RECOVERED)
		t->unfinished++;
}

int live_stats_read(const char *dir, struct live_stats *out)
{
	*out = (struct live_stats){ 0 };
	return for_each_stats(dir, 0, 1, add_totals, out);
}

int live_stats_read_one(const char *dir, struct live_stats *out)
{
	*out = (struct live_stats){ 0 };
	return for_each_stats(dir, 0, 0, add_totals, out);
}

int live_stats_read_at(int dirfd, const char *name, struct live_stats *out)
{
	*out = (struct live_stats){ 0 };
	return for_each_stats_fd(open_dir_at(dirfd, name), 0, 1, add_totals, out);
}

int live_stats_read_one_at(int dirfd, const char *name, struct live_stats *out)
{
	*out = (struct live_stats){ 0 };
	return for_each_stats_fd(open_dir_at(dirfd, name), 0, 0, add_totals, out);
}

void live_print_snapshots(FILE *out, const char *prefix, const char *dir, const struct live_stats *s,
			  const char *spec)
{
	const uint64_t none = s->triggers_busy + s->triggers_over_max + s->triggers_in_interval + s->triggers_failed;
	if (!s->snapshots && !none) {
		/* Silence here read as "nothing went wrong" when the trigger could
		 * not fire at all (its marker not among the -e globs). */
		if (spec && *spec)
			fprintf(out, "%sno snapshot: --snapshot-on \"%s\" never fired (it fires on a recorded "
				"event of a marker its glob matches that passes its condition: is that marker among "
				"the -e globs, and do its events pass --filter?)\n", prefix, cli_text(spec));
		return;
	}
	fprintf(out, "%s%" PRIu64 " snapshot(s) written by --snapshot-on (%s/%s*/)", prefix, s->snapshots,
		cli_text(dir), MARK_TF_SNAPSHOT_PREFIX);
	if (none)
		fprintf(out, "; %" PRIu64 " more trigger(s) wrote none: %" PRIu64 " while another snapshot was "
			"being written, %" PRIu64 " after --max-snapshots, %" PRIu64 " within --snapshot-interval, "
			"%" PRIu64 " failed", none, s->triggers_busy, s->triggers_over_max, s->triggers_in_interval,
			s->triggers_failed);
	fputc('\n', out);
	if (s->snapshot_hold_lost)
		fprintf(out, "%s%" PRIu64 " event(s) lost while the buffer of a trigger waited for its snapshot to "
			"be written (a larger --buffer gives the consumer more time)\n", prefix, s->snapshot_hold_lost);
}

/* ---- is the trace complete? ---- */

static void count_unfinished(const struct stats_copy *c, void *arg)
{
	struct live_incomplete *inc = arg;
	if (c->hdr.state == MARK_TF_STATE_STOPPED || c->hdr.state == MARK_TF_STATE_RECOVERED)
		return;
	inc->unfinished++;
	/* The pid is the file's claim: used only to word the message. */
	if (mark_process_running((pid_t)c->hdr.pid)) {
		inc->running++;
		inc->running_pid = c->hdr.pid;
	}
}

/* .mark-ring-N files in the directory dfd (read only: a directory listing). */
static unsigned count_rings(int dfd)
{
	DIR *d = list_dir(dfd);
	if (!d)
		return 0;
	unsigned n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		n += strncmp(de->d_name, MARK_TF_RING_PREFIX, strlen(MARK_TF_RING_PREFIX)) == 0;
	closedir(d);
	return n;
}

int live_trace_incomplete(const char *dir, struct live_incomplete *out)
{
	*out = (struct live_incomplete){ 0 };
	if (for_each_stats(dir, 0, 1, count_unfinished, out) != 0)
		return 0;   /* no .mark-stats: not a mark trace, or not ours to judge */
	int dfd = open_dir(dir);
	if (dfd < 0)
		return out->unfinished != 0;
	out->rings = count_rings(dfd);
	DIR *d = list_dir(dfd);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (strncmp(de->d_name, MARK_TF_CHILD_PREFIX, strlen(MARK_TF_CHILD_PREFIX)) != 0)
			continue;
		/* Only real pid-P/ directories: a link to another directory
		 * (root's) is neither listed nor counted. */
		int cfd = open_child_dir(dfd, de->d_name);
		if (cfd < 0)
			continue;
		out->rings += count_rings(cfd);
		close(cfd);
	}
	if (d)
		closedir(d);
	close(dfd);
	return out->rings || out->unfinished;
}

bool live_warn_incomplete(FILE *out, const char *dir, bool bare)
{
	struct live_incomplete inc;
	if (!live_trace_incomplete(dir, &inc))
		return false;
	fprintf(out, "%sthe trace in %s is incomplete (%u ring file%s (.mark-ring-N) left, %u process%s without "
		"final statistics): ", bare ? "" : "mark: ", cli_text(dir), inc.rings, inc.rings == 1 ? "" : "s",
		inc.unfinished, inc.unfinished == 1 ? "" : "es");
	if (inc.running)
		fprintf(out, "process %d is still recording; look again when it has stopped, or run "
			"`mark recover %s` if it was killed\n", inc.running_pid, cli_text(dir));
	else
		fprintf(out, "a process died without stopping its tracer; run `mark recover %s` to add the "
			"events left in its buffers\n", cli_text(dir));
	return true;
}

/* ---- losses only the statistics know (a full disk) ---- */

struct recorded_acc {
	uint64_t total;           /* events_written + lost, saturated */
	unsigned unfinished;
};

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

static void add_recorded(const struct stats_copy *c, void *arg)
{
	struct recorded_acc *a = arg;
	a->total = add_sat(a->total, add_sat(c->hdr.events_written, c->hdr.lost));
	if (c->hdr.state != MARK_TF_STATE_STOPPED && c->hdr.state != MARK_TF_STATE_RECOVERED)
		a->unfinished++;
}

/* Is the directory dfd one process's pid-P/ with sealed chunks beside it
 * (PARENT/pid-P.chunk-K/)?  They hold part of its events, but reading DIR
 * does not read them. */
static bool has_sibling_chunks(int dfd)
{
	struct stat self;
	int parent = openat(dfd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (parent < 0 || fstat(dfd, &self) != 0) {
		if (parent >= 0)
			close(parent);
		return true;   /* cannot tell: do not judge */
	}
	DIR *d = list_dir(parent);
	bool found = !d;
	struct dirent *de;
	while (d && !found && (de = readdir(d))) {
		const char *infix = strstr(de->d_name, MARK_TF_CHUNK_INFIX);
		if (!infix || infix == de->d_name || (size_t)(infix - de->d_name) >= NAME_MAX)
			continue;
		char name[NAME_MAX + 1];
		memcpy(name, de->d_name, (size_t)(infix - de->d_name));
		name[infix - de->d_name] = '\0';
		struct stat st;
		found = fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == self.st_dev &&
			st.st_ino == self.st_ino;
	}
	if (d)
		closedir(d);
	close(parent);
	return found;
}

uint64_t live_stats_unrecorded(const char *dir, uint64_t in_trace)
{
	struct recorded_acc a = { 0, 0 };
	int dfd = open_dir(dir);
	if (dfd < 0)
		return 0;
	/* DIR's own .mark-stats: DIR is one process's directory. */
	struct stat st;
	const bool process_dir = fstatat(dfd, MARK_TF_STATS, &st, AT_SYMLINK_NOFOLLOW) == 0;
	const bool judge = !process_dir || !has_sibling_chunks(dfd);
	/* for_each_stats_fd closes dfd.  One small header per process. */
	if (for_each_stats_fd(dfd, 0, 1, add_recorded, &a) != 0 || a.unfinished || !judge)
		return 0;
	return a.total > in_trace ? a.total - in_trace : 0;
}

uint64_t live_warn_unrecorded(FILE *out, const char *dir, bool bare, uint64_t in_trace)
{
	const uint64_t n = live_stats_unrecorded(dir, in_trace);
	if (n)
		fprintf(out, "%s%" PRIu64 " more events lost that the trace could not record (the disk was full? "
			"the tracer could not write them, nor the packets that were to count them): the tracer's "
			"statistics (%s/.../%s) count them\n", bare ? "" : "mark: ", n, cli_text(dir), MARK_TF_STATS);
	return n;
}

/* ---- chunks deleted under --max-size (see live_rotated_read()) ---- */

/* Adds DIR/NAME/.mark-chunks (sub: DIR/NAME, parent: DIR) to *sum. */
static void add_rotated(int parent, int sub, const char *name, struct live_rotated *sum)
{
	int cf = openat(sub, MARK_TF_CHUNKS, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (cf < 0)
		return;
	struct stat st;
	char buf[256];
	ssize_t n = fstat(cf, &st) == 0 && S_ISREG(st.st_mode) ? pread(cf, buf, sizeof(buf) - 1, 0) : -1;
	close(cf);
	if (n <= 0)
		return;
	buf[n] = '\0';
	unsigned long long e = 0, c = 0, de_events = 0, l = 0, de_lost = 0;
	unsigned version = 0;
	long k = -1;
	int got = sscanf(buf, "mark-chunks %u\nrotated_events %llu\nrotated_chunks %llu\ndeleting_chunk "
			      "%ld\ndeleting_events %llu\nrotated_lost %llu\ndeleting_lost %llu",
			 &version, &e, &c, &k, &de_events, &l, &de_lost);
	if (!((version == 1 && got >= 5) || (version == 2 && got == 7)) || de_events > e || de_lost > l || c == 0)
		return;
	char pending[512];
	if (k >= 0 && parent >= 0 &&
	    (size_t)snprintf(pending, sizeof(pending), "%s%s%ld", name, MARK_TF_CHUNK_INFIX, k) < sizeof(pending) &&
	    fstatat(parent, pending, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
		e -= de_events;
		l -= de_lost;
		c--;
	}
	if (sum->events + e >= sum->events && sum->lost + l >= sum->lost) {
		sum->events += e;
		sum->lost += l;
		sum->chunks += c;
	}
}

static void sum_rotated(int fd, int depth, struct live_rotated *sum)
{
	if (depth >= 8)
		return;
	DIR *d = mark_dir_list_at(fd);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		int sub = openat(fd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			continue;
		add_rotated(fd, sub, de->d_name, sum);
		sum_rotated(sub, depth + 1, sum);
		close(sub);
	}
	closedir(d);
}

/* The chunks deleted under DIR (--max-size), summed over its processes. */
struct live_rotated live_rotated_read(const char *dir)
{
	struct live_rotated rotated = { 0, 0, 0 };
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		/* DIR itself may be one process's pid-P (the chunks
		 * beside it are not part of DIR, nor counted as such). */
		add_rotated(-1, dfd, "", &rotated);
		sum_rotated(dfd, 0, &rotated);
		close(dfd);
	}
	return rotated;
}

void live_warn_unrecorded_after_read(const char *dir, uint64_t events, uint64_t lost)
{
	const struct live_rotated rot = live_rotated_read(dir);
	live_warn_unrecorded(stderr, dir, false, add_sat(add_sat(events, lost), add_sat(rot.events, rot.lost)));
}

/*
 * The counts by marker name over every process's file.  The names come from
 * files the traced users write, so the merge is a hash table (open
 * addressing, FNV-1a), linear in the entries read: a list searched for each
 * name took minutes for a file of 200000 distinct names.
 */
struct marker_acc {
	struct live_marker_count *v;
	size_t n, cap;
	uint32_t *slot;              /* index + 1 into v, 0 = empty; nslots a power of 2 */
	size_t nslots;
	int oom;
};

static uint64_t name_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

static bool acc_grow_slots(struct marker_acc *a)
{
	size_t n = a->nslots ? a->nslots * 2 : 1024;
	uint32_t *slot = calloc(n, sizeof(*slot));
	if (!slot)
		return false;
	for (size_t i = 0; i < a->n; i++) {
		size_t j = (size_t)name_hash(a->v[i].name) & (n - 1);
		while (slot[j])
			j = (j + 1) & (n - 1);
		slot[j] = (uint32_t)(i + 1);
	}
	free(a->slot);
	a->slot = slot;
	a->nslots = n;
	return true;
}

static void add_markers(const struct stats_copy *c, void *arg)
{
	struct marker_acc *a = arg;
	for (uint32_t i = 0; i < c->nentries && !a->oom; i++) {
		const struct mark_tf_stats_entry *e = &c->entries[i];
		if (e->name[0] == '\0')
			continue;
		/* Names are cut to 111 bytes, as stored in the result. */
		char name[sizeof(a->v->name)];
		snprintf(name, sizeof(name), "%s", e->name);
		if ((a->n + 1) * 2 > a->nslots && (a->n >= UINT32_MAX - 1 || !acc_grow_slots(a))) {
			a->oom = 1;
			return;
		}
		size_t j = (size_t)name_hash(name) & (a->nslots - 1);
		while (a->slot[j] && strcmp(a->v[a->slot[j] - 1].name, name) != 0)
			j = (j + 1) & (a->nslots - 1);
		if (!a->slot[j]) {
			if (a->n == a->cap && cli_array_grow(&a->v, &a->cap, sizeof(*a->v), 32)) {
				a->oom = 1;
				return;
			}
			memset(&a->v[a->n], 0, sizeof(a->v[a->n]));
			memcpy(a->v[a->n].name, name, sizeof(name));
			a->slot[j] = (uint32_t)++a->n;
		}
		a->v[a->slot[j] - 1].events += e->events;
	}
}

static int cmp_count(const void *x, const void *y)
{
	const struct live_marker_count *a = x, *b = y;
	if (a->events != b->events)
		return a->events > b->events ? -1 : 1;
	return strcmp(a->name, b->name);
}

static int live_stats_markers_fd(int dfd, struct live_marker_count **out, size_t *n)
{
	struct marker_acc a = { 0 };
	*out = NULL;
	*n = 0;
	const int rc = for_each_stats_fd(dfd, 1, 1, add_markers, &a);
	free(a.slot);
	if (rc != 0 || a.oom) {
		free(a.v);
		return -1;
	}
	if (a.n)
		qsort(a.v, a.n, sizeof(*a.v), cmp_count);
	*out = a.v;
	*n = a.n;
	return 0;
}

int live_stats_markers(const char *dir, struct live_marker_count **out, size_t *n)
{
	return live_stats_markers_fd(open_dir(dir), out, n);
}

int live_stats_markers_at(int dirfd, struct live_marker_count **out, size_t *n)
{
	return live_stats_markers_fd(open_dir_at(dirfd, "."), out, n);
}

/* ---------------- the status line ---------------- */

struct liveline {
	int dir_fd;               /* DIR, held open: the line reads the directory
				     it started on, whatever its name becomes */
	pthread_t thread;
	int stop;                 /* release-set by liveline_stop, acquire-read by the thread */
};

static double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void draw(const struct live_stats *s, double rate)
{
	/* One write(): stdio's stderr is unbuffered and would emit it piecewise,
	 * interleaving worse with the program's own output. */
	char line[200];
	int n = snprintf(line, sizeof(line),
			 "\r\033[Kmark: %llu events (%.0f/s), %llu lost, %.1f MB written",
			 (unsigned long long)s->events, rate, (unsigned long long)s->lost,
			 (double)s->bytes_written / 1e6);
	if (n > 0)
		(void)!write(STDERR_FILENO, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

static void *liveline_thread(void *arg)
{
	struct liveline *l = arg;
	uint64_t prev_events = 0;
	double prev_t = now_seconds();
	int have_prev = 0;
	while (!__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE)) {
		struct live_stats s;
		if (live_stats_read_at(l->dir_fd, ".", &s) == 0) {
			double t = now_seconds();
			double rate = have_prev && t > prev_t ? (double)(s.events - prev_events) / (t - prev_t) : 0;
			draw(&s, rate);
			prev_events = s.events;
			prev_t = t;
			have_prev = 1;
		}
		/* 250 ms in 50 ms steps, so that stopping is quick. */
		for (int i = 0; i < 5 && !__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE); i++) {
			struct timespec ts = { 0, 50 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

static struct liveline *liveline_start_fd(int dfd)
{
	struct liveline *l = dfd < 0 ? NULL : calloc(1, sizeof(*l));
	if (!l) {
		if (dfd >= 0)
			close(dfd);
		return NULL;
	}
	l->dir_fd = dfd;
	if (pthread_create(&l->thread, NULL, liveline_thread, l) != 0) {
		close(dfd);
		free(l);
		return NULL;
	}
	return l;
}

struct liveline *liveline_start(const char *dir)
{
	return isatty(STDERR_FILENO) ? liveline_start_fd(open_dir(dir)) : NULL;
}

struct liveline *liveline_start_at(int dirfd)
{
	return isatty(STDERR_FILENO) ? liveline_start_fd(open_dir_at(dirfd, ".")) : NULL;
}

void liveline_stop(struct liveline *l)
{
	if (!l)
		return;
	__atomic_store_n(&l->stop, 1, __ATOMIC_RELEASE);
	pthread_join(l->thread, NULL);
	(void)!write(STDERR_FILENO, "\r\033[K", 4);
	close(l->dir_fd);
	free(l);
}

void live_print_marker_counts(FILE *out, const struct live_marker_count *markers, size_t n)
{
	/* Sorted by count, largest first: the markers that fired come first. */
	size_t width = 6, fired = 0;
	while (fired < n && markers[fired].events > 0)
		fired++;
	for (size_t i = 0; i < fired; i++)
		if (strlen(cli_text(markers[i].name)) > width)
			width = strlen(cli_text(markers[i].name));
	if (!fired)
		return;
	fprintf(out, "  %-*s %14s\n", (int)width, "marker", "events");
	for (size_t i = 0; i < fired; i++)
		fprintf(out, "  %-*s %14" PRIu64 "\n", (int)width, cli_text(markers[i].name), markers[i].events);
}
