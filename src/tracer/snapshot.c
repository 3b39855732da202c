/*
 * Snapshots of an overwrite-mode session (the flight recorder):
 *
 * - `mark snapshot` / mark_tracer_snapshot_into() (session.c, under
 *   control_mutex) writes everything the buffers hold now;
 * - a snapshot trigger (--snapshot-on 'GLOB if EXPR', docs/tracer.md
 *   "Triggers") writes DIR/snapshot-N/pid-P/ that ends with the trigger
 *   event.  The probe only claims the request slot, holds its ring and
 *   kicks the consumer (probe.c, probe_trigger()); the consumer thread
 *   writes the snapshot here, at the start of its next pass.
 *
 * Reading a ring its producer is writing: see probe.c's header comment.
 * A snapshot copies the ring's bytes with relaxed loads, then keeps only
 * what still lies at or after `oldest` loaded afterwards (acquire fence
 * between), so overwritten bytes are never written out as events.
 */
#define _GNU_SOURCE
#define _LGPL_SOURCE
#include "tracer_internal.h"
#include "util/safe_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * The end of the records in buf[start, end) stamped before `ts`: a ring's
 * records are in time order (one producer, a monotonic clock).  A damaged
 * length (the producer lapped the copy) ends the walk there.
 */
static uint64_t records_before(const uint64_t *buf, uint64_t capacity, uint64_t start, uint64_t end, uint64_t ts)
{
	const uint64_t mask = capacity / 8 - 1;
	uint64_t pos = start;
	while (pos < end) {
		uint64_t len = (buf[(pos / 8 + 1) & mask] >> 16) & 0xffff;
		if (buf[(pos / 8) & mask] >= ts || len < 16 || pos + MARK_TF_RECORD_SPAN(len) > end)
			break;
		pos += MARK_TF_RECORD_SPAN(len);
	}
	return pos;
}

/* The records of one ring a snapshot keeps: buf[start, end) (positions). */
struct ring_window {
	uint64_t start, end;
};

/*
 * Copy the valid window of ring r into buf.  `end` UINT64_MAX: up to the
 * ring's head now; otherwise up to `end` (the trigger's ring, held:
 * nothing before `end` is overwritten while we copy).  `before_ts`
 * nonzero: only records stamped before it (the other rings of a
 * triggered snapshot).
 */
static struct ring_window ring_copy(struct tracer_ring *r, uint64_t *buf, uint64_t end, uint64_t before_ts)
{
	struct mark_tf_ring *hdr = r->hdr;
	const uint64_t cap = r->capacity, mask = cap / 8 - 1;
	uint64_t head = 0, start = 0;
	/*
	 * A producer that laps the whole buffer while we copy leaves nothing
	 * valid (start >= head): try again a few times before giving up.
	 */
	for (int attempt = 0; attempt < 8; attempt++) {
		/* Acquire: the records before head are complete. */
		head = __atomic_load_n(&hdr->head, __ATOMIC_ACQUIRE);
		if (end < head)
			head = end;
		start = __atomic_load_n(&hdr->oldest, __ATOMIC_RELAXED);
		uint64_t tail = __atomic_load_n(&hdr->tail, __ATOMIC_RELAXED);
		if (tail > start)
			start = tail;
		if (start > head)
			continue;   /* lapped between the two loads */
		for (uint64_t p = start / 8; p < head / 8; p++)
			buf[p & mask] = __atomic_load_n(&r->data[p & mask], __ATOMIC_RELAXED);
		/* The copy is done before we look at what was overwritten meanwhile. */
		TRACER_FENCE(__ATOMIC_ACQUIRE);
		uint64_t oldest = __atomic_load_n(&hdr->oldest, __ATOMIC_RELAXED);
		if (oldest > start)
			start = oldest;
		if (start < head)
			break;
	}
	if (start < head && before_ts)
		head = records_before(buf, cap, start, head, before_ts);
	return (struct ring_window){ start, start < head ? head : start };
}

/*
 * Write a ring's copied window as stream file stream-<index> in dirfd.
 * Its losses: `total` in all, of which `pending` (a trigger's hole not yet
 * noted) and the holes noted at or after w.end follow the window.  Those
 * are reported after the last record only when `trailing` (a snapshot of
 * everything, `mark snapshot`); a triggered snapshot ends at its trigger.
 * Holes inside the window are reported where they are.
 */
static int ring_write(const struct tracer_ring *r, int dirfd, const uint64_t *buf, struct ring_window w,
		      const uint8_t *uuid, unsigned described, uint64_t freq, uint64_t total, uint64_t pending,
		      bool later_in_total, bool trailing)
{
	if (w.start >= w.end)
		return 0;
	char name[64];
	tracer_path(name, sizeof(name), NULL, MARK_TF_STREAM_PREFIX, r->index);
	int fd = mark_file_create_at(dirfd, name, O_WRONLY);   /* the directory was emptied of these */
	if (fd < 0)
		return fd;
	struct mark_tf_gap gaps[MARK_TF_RING_GAPS];
	uint64_t consumed;
	struct tracer_packet_sink sink = {
		.fd = fd,
		.uuid = uuid,
		.index = r->index,
		.tid = __atomic_load_n(&r->hdr->tid, __ATOMIC_RELAXED),
		.counts_cap = described,
		.freq = freq,
	};
	sink.lost = tracer_ring_losses(r->hdr, w.start, w.end, total, pending, later_in_total, 0, NULL, gaps,
				       &sink.ngaps);
	sink.gaps = gaps;
	tracer_ring_thread_name(r, sink.tid, sink.thread_name);
	int rc = tracer_write_records(&sink, buf, r->capacity, w.start, w.end, &consumed);
	if (rc == 0 && trailing && sink.events && sink.lost != total) {
		sink.lost = total;
		rc = tracer_write_empty_packet(&sink, consumed);
	}
	close(fd);
	return rc;
}

int tracer_snapshot_write(struct tracer_session *s, int dirfd, const char *directory,
			  struct tracer_ring *cut_ring, uint64_t cut_end, uint64_t cut_ts, uint64_t cut_lost)
{
	uint64_t *buf = malloc(s->buffer_size), *cut_buf = cut_ring ? malloc(s->buffer_size) : NULL;
	if (!buf || (cut_ring && !cut_buf)) {
		free(buf);
		free(cut_buf);
		return -ENOMEM;
	}
	/*
	 * The trigger's ring first: its thread drops its events until we are
	 * done copying it.  Release: the copy is complete before the producer
	 * (acquire load of the hold) overwrites those bytes.
	 */
	struct ring_window cut_window = { 0, 0 };
	if (cut_ring) {
		cut_window = ring_copy(cut_ring, cut_buf, cut_end, 0);
		__atomic_store_n(&cut_ring->hold, 0, __ATOMIC_RELEASE);
	}
	/* The metadata must describe every id the snapshot may contain: the
	 * markers registered now (records of later ones are left out). */
	unsigned described = 0;
	uint8_t uuid[16];
	tracer_new_uuid(uuid);   /* a trace of its own: babeltrace2 must not merge it with the session's */
	tracer_fork_guard_lock();   /* the consumer may be refining the clock */
	int rc = tracer_metadata_write(dirfd, directory, s, uuid, &described);
	const uint64_t freq = s->clock.freq;   /* the metadata's */
	tracer_fork_guard_unlock();
	struct tracer_ring *r;
	tracer_for_each_ring(s, r) {
		if (rc != 0)
			break;
		if (r == cut_ring) {
			/* Its losses up to the trigger; the hold's come after. */
			/* (the holes noted after the trigger are not in cut_lost) */
			rc = ring_write(r, dirfd, cut_buf, cut_window, uuid, described, freq, cut_lost, 0, false,
					false);
		} else {
			struct ring_window w = ring_copy(r, buf, UINT64_MAX, cut_ts);
			/* Loaded after the copy: every loss before its records.
			 * The pending hole first (acquire; count_hole() stores it
			 * with release after the loss count), so that it is in
			 * the loss count read next. */
			const uint64_t pending = __atomic_load_n(&r->pending_gap, __ATOMIC_ACQUIRE);
			const uint64_t lost = __atomic_load_n(&r->hdr->lost, __ATOMIC_RELAXED);
			rc = ring_write(r, dirfd, buf, w, uuid, described, freq, lost, pending, true, cut_ts == 0);
		}
	}
	free(buf);
	free(cut_buf);
	return rc;
}

/*
 * Create DIR/snapshot-N (N from s->snapshot_next up, the first name free:
 * mkdirat is atomic, so processes tracing into one DIR never share one)
 * and DIR/snapshot-N/pid-P in it.  Returns the descriptor of the latter
 * and N in *n, or -errno.
 */
static int snapshot_dir_create(struct tracer_session *s, unsigned *n, char *path, size_t pathlen)
{
	int bfd = tracer_base_fd(s);
	if (bfd < 0)
		return bfd;
	char name[32];
	for (int tries = 0; tries < 10000; tries++) {
		*n = s->snapshot_next++;
		snprintf(name, sizeof(name), "%s%u", MARK_TF_SNAPSHOT_PREFIX, *n);
		if (mkdirat(bfd, name, 0700) == 0)
			break;
		if (errno != EEXIST)
			return -errno;
		name[0] = '\0';
	}
	if (!name[0])
		return -EEXIST;
	snprintf(path, pathlen, "%s/%s/%s%d", s->base_dir, name, MARK_TF_CHILD_PREFIX, (int)s->pid);
	/* Created by us just now in a directory only we may write; opened
	 * without following a link all the same. */
	int sfd = mark_dir_open_at(bfd, name, 0, 0, NULL);
	if (sfd < 0)
		return sfd;
	char pid[32];
	snprintf(pid, sizeof(pid), "%s%d", MARK_TF_CHILD_PREFIX, (int)s->pid);
	int pfd = mark_dir_open_at(sfd, pid, MARK_DIR_CREATE, 0700, NULL);
	close(sfd);
	return pfd;
}

/* Suppressed triggers are counted; the first failure to write is told. */
static void snapshot_requested(struct tracer_session *s, struct tracer_ring *r)
{
	if (s->snapshots >= s->max_snapshots) {
		__atomic_fetch_add(&s->trig_over_max, 1, __ATOMIC_RELAXED);
		return;
	}
	if (s->trig_ts < s->trig_quiet_until) {
		__atomic_fetch_add(&s->trig_in_interval, 1, __ATOMIC_RELAXED);
		return;
	}
	char path[4096];
	unsigned n = 0;
	int fd = snapshot_dir_create(s, &n, path, sizeof(path));
	int rc = fd < 0 ? fd : tracer_snapshot_write(s, fd, path, r, s->trig_end, s->trig_ts, s->trig_lost);
	if (fd >= 0)
		close(fd);
	if (rc < 0) {
		__atomic_fetch_add(&s->trig_failed, 1, __ATOMIC_RELAXED);
		if (!s->snapshot_error_reported)
			mark_warn("mark: tracer cannot write a triggered snapshot into %s/%s%u (%s); later "
				  "triggers are counted as failed in `mark stats`\n", s->base_dir,
				  MARK_TF_SNAPSHOT_PREFIX, n, strerror(-rc));
		s->snapshot_error_reported = true;
		return;
	}
	/* Only the consumer writes these two; producers read them relaxed. */
	__atomic_store_n(&s->snapshots, s->snapshots + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&s->trig_quiet_until, s->trig_ts + s->snapshot_interval_ticks, __ATOMIC_RELAXED);
	if (s->snapshots >= s->max_snapshots)
		__atomic_store_n(&s->trig_closed, 1, __ATOMIC_RELAXED);
}

void tracer_trigger_service(struct tracer_session *s)
{
	/* Acquire: pairs with the producer's release store of TRIG_PENDING;
	 * trig_ring/trig_end/trig_ts and the ring's hold are visible. */
	if (__atomic_load_n(&s->trig_state, __ATOMIC_ACQUIRE) != TRIG_PENDING)
		return;
	struct tracer_ring *r = s->trig_ring < TRACER_MAX_RINGS ? &s->rings[s->trig_ring] : NULL;
	if (r)
		snapshot_requested(s, r);
	/* tracer_snapshot_write() released the hold as soon as it had copied
	 * the ring; when no snapshot was written, release it here (release:
	 * nothing of ours reads the ring any more). */
	if (r)
		__atomic_store_n(&r->hold, 0, __ATOMIC_RELEASE);
	/* Release: the counters and the hold first; then a new trigger may
	 * claim the slot (its CAS acquires). */
	__atomic_store_n(&s->trig_state, TRIG_FREE, __ATOMIC_RELEASE);
}
