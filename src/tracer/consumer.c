/*
 * The consumer: turns ring contents into CTF packets in stream files and
 * keeps the live statistics file up to date.
 *
 * One consumer thread per traced process.  It wakes every 10 ms, when a
 * producer's ring crosses half full (discard/block), when a producer in
 * block mode waits, and when a thread exits.  Records are copied to the
 * stream file unchanged (they are CTF events byte for byte): the consumer
 * reads each record's 16-byte header to cut packets, count events per
 * marker and find the packet's first and last timestamps, then writev()s
 * the packet header and the ring bytes straight from the shared mapping.
 *
 * Ordering per ring (discard/block): acquire load of head, read records,
 * write them, release store of tail (the producer may then overwrite those
 * bytes).  A ring whose owner exited (state EXITED, release-stored after
 * its last head) is drained and then release-stored FREE, after which a
 * new thread may claim it (acquire CAS).
 *
 * Crash safety: a packet is written with one writev() before tail moves,
 * under the commit protocol of trace_format.h (pending_tail/pending_bytes
 * before, stream_bytes/tail after), so recovery can tell a complete last
 * packet from a torn one and resume exactly after the last complete one.  The metadata describes a marker id before the first
 * packet holding that id is written.
 */
#define _GNU_SOURCE
#define _LGPL_SOURCE
#include "tracer_internal.h"
#include "util/printable.h"
#include "util/safe_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

_Static_assert(sizeof(struct mark_tf_packet) == 104, "packet header layout");
_Static_assert(sizeof(struct mark_tf_stats) == 256, "stats header layout");
_Static_assert(sizeof(struct mark_tf_stats_entry) == 128, "stats entry layout");
_Static_assert(sizeof(struct mark_tf_ring) <= MARK_TF_RING_HEADER_SIZE, "ring header layout");
_Static_assert(__builtin_offsetof(struct mark_tf_ring, head) == 64, "producer line");
_Static_assert(__builtin_offsetof(struct mark_tf_ring, tail) == 128, "consumer line");

#define STATS_MAX_ENTRIES 4096
_Static_assert(STATS_MAX_ENTRIES == MARK_TF_COUNTED_IDS, "a counted set holds every entry");
_Static_assert(TRACER_MAX_RINGS <= MARK_TF_COUNTED_STREAMS, "a counted set holds every ring's stream");

int tracer_write_full(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* writev until everything is written (a regular file rarely writes short). */
static int writev_full(int fd, struct iovec *iov, int cnt)
{
	while (cnt > 0) {
		ssize_t n = writev(fd, iov, cnt);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		while (cnt > 0 && (size_t)n >= iov->iov_len) {
			n -= (ssize_t)iov->iov_len;
			iov++;
			cnt--;
		}
		if (cnt > 0) {
			iov->iov_base = (char *)iov->iov_base + n;
			iov->iov_len -= (size_t)n;
		}
	}
	return 0;
}

static void packet_init(struct mark_tf_packet *p, const struct tracer_packet_sink *sink, uint64_t lost);
static int emit_packet(struct tracer_packet_sink *sink, struct iovec *iov, int cnt, uint64_t len,
		       uint64_t ring_end);

/*
 * A packet without events, stamped `ts`, carrying `lost` as its
 * events_discarded.  The stamps of a stream's packets must increase
 * wherever their counts differ, in the nanoseconds a reader computes: a
 * reader of a chunked trace merges a stream's files from every chunk and
 * orders all their packets by timestamp_begin in nanoseconds, and
 * babeltrace2 2.0 keeps no order among equal ones (it puts the later
 * packet of a file first).  An empty packet in the same nanosecond as the
 * next packet's first event came after it, and the merged trace failed
 * ("timestamp is less than ... last returned timestamp", after "Discarded
 * events (18446744073709534899 events)").
 *
 * Those nanoseconds are coarser than a tick where the counter is large:
 * babeltrace2 computes 1e9 * (double)ticks / freq (bt_util_ns_from_value),
 * exact only up to 2^53.  qemu-user's CNTVCT_EL0 counts 62.5 MHz ticks
 * since 1970 (about 1.1e17): (double)ticks is a multiple of 16 ticks there
 * and the nanoseconds of 2^8, so two stamps 8 ticks apart read as the same
 * nanosecond (an x86 TSC passes 2^53 after some 40 days of uptime).  So
 * the gap between an empty packet and the events around it is worked out
 * from the clock's frequency and the stamps' size (tracer_tick_gap()).
 * Two packets that share a stamp carry the same count and no event between
 * them, so their order does not matter.
 */
#define EMPTY_PACKET_GAP 8   /* ticks, at least: 1.6 ns up to a 5 GHz clock */

/* The full ulp of x as a double (0 below 2^53, where doubles are exact). */
static uint64_t double_ulp(uint64_t x)
{
	const int bits = x ? 64 - __builtin_clzll(x) : 0;
	return bits > 53 ? 1ull << (bits - 53) : 0;
}

uint64_t tracer_tick_gap(uint64_t freq, uint64_t ticks)
{
	if (freq == 0)
		freq = 1000000000;   /* unknown: nanoseconds */
	/* A reader's nanoseconds of `ticks`, before the truncation to an
	 * integer, are off the exact ticks * 1e9 / freq by the rounding of
	 * (double)ticks and two roundings of the result (1e9 * that, then
	 * / freq): at most `err` ns.  Stamps exactly err + err + 1 ns apart
	 * truncate to different nanoseconds (exact integer readers need 1). */
	const unsigned __int128 exact = (unsigned __int128)ticks * 1000000000u / freq;
	const uint64_t ns = exact > UINT64_MAX ? UINT64_MAX : (uint64_t)exact;
	const unsigned __int128 err =
		((unsigned __int128)double_ulp(ticks) * 1000000000u + freq - 1) / freq + 2 * (unsigned __int128)double_ulp(ns);
	const unsigned __int128 apart_ns = 2 * err + 1;
	/* In ticks, rounded up, and one more for a frequency refined later. */
	const unsigned __int128 gap = (apart_ns * freq + 999999999u) / 1000000000u + 1;
	if (gap > UINT64_MAX / 4)
		return UINT64_MAX / 4;
	return gap < EMPTY_PACKET_GAP ? EMPTY_PACKET_GAP : (uint64_t)gap;
}

static int write_empty_at(struct tracer_packet_sink *sink, uint64_t ring_pos, uint64_t ts, uint64_t lost)
{
	struct mark_tf_packet pk;
	packet_init(&pk, sink, lost);
	pk.timestamp_begin = pk.timestamp_end = ts;
	/* No event: the content ends with the context, before the padding
	 * that would align a first event header. */
	pk.packet_size = sizeof(pk) * 8;
	pk.content_size = __builtin_offsetof(struct mark_tf_packet, padding) * 8;
	struct iovec iov = { &pk, sizeof(pk) };
	return emit_packet(sink, &iov, 1, sizeof(pk), ring_pos);
}

/* A packet header for the sink's stream, reporting `lost` events discarded
 * so far (what emit_packet() then records as reported). */
static void packet_init(struct mark_tf_packet *p, const struct tracer_packet_sink *sink, uint64_t lost)
{
	memset(p, 0, sizeof(*p));
	p->magic = MARK_TF_CTF_MAGIC;
	memcpy(p->uuid, sink->uuid, 16);
	p->stream_id = 0;
	p->stream_instance_id = sink->index;
	p->tid = sink->tid;
	memcpy(p->thread_name, sink->thread_name, sizeof(p->thread_name));
	p->packet_seq_num = sink->seq;
	p->events_discarded = lost;
}

/*
 * Write one packet (iov[0] is its header) with the commit protocol: the
 * ring header says which packet is in flight before the write and commits
 * it after, so recovery can tell a complete packet from a torn one.  The
 * losses committed as reported are the header's events_discarded.
 */
static int emit_packet(struct tracer_packet_sink *sink, struct iovec *iov, int cnt, uint64_t len,
		       uint64_t ring_end)
{
	/* Read before writev_full(), which advances the iovecs. */
	const uint64_t reported = ((const struct mark_tf_packet *)iov[0].iov_base)->events_discarded;
	struct mark_tf_ring *c = sink->commit;
	if (c) {
		__atomic_store_n(&c->pending_tail, ring_end, __ATOMIC_RELAXED);
		__atomic_store_n(&c->pending_bytes, sink->stream_bytes + len, __ATOMIC_RELEASE);
	}
	int rc = writev_full(sink->fd, iov, cnt);
	if (rc < 0) {
		/* Cut a partial packet off again: the stream stays valid CTF. */
		if (ftruncate(sink->fd, (off_t)sink->stream_bytes) != 0) {
			/* Nothing better to do; recovery also cuts at stream_bytes. */
		}
		return rc;
	}
	sink->stream_bytes += len;
	sink->bytes += len;
	sink->seq++;
	if (c) {
		__atomic_store_n(&c->stream_bytes, sink->stream_bytes, __ATOMIC_RELAXED);
		__atomic_store_n(&c->packet_seq, sink->seq, __ATOMIC_RELAXED);
		__atomic_store_n(&c->lost_reported, reported, __ATOMIC_RELAXED);
		/* Release: done reading the records before the producer reuses them. */
		__atomic_store_n(&c->tail, ring_end, __ATOMIC_RELEASE);
	}
	return 0;
}

uint64_t tracer_ring_losses(const struct mark_tf_ring *hdr, uint64_t begin, uint64_t end, uint64_t total,
			    uint64_t pending, bool later_in_total, uint64_t floor, const uint64_t *live_owed,
			    struct mark_tf_gap *gaps, unsigned *ngaps)
{
	*ngaps = 0;
	/* Acquire: pairs with ring_note_gap()'s release; the entries are whole.
	 * Not the oldest slot: the producer may be writing it for entry `next`
	 * before it publishes next + 1. */
	const uint64_t next = __atomic_load_n(&hdr->gaps_next, __ATOMIC_ACQUIRE);
	const uint64_t first = next > MARK_TF_RING_GAPS - 1 ? next - (MARK_TF_RING_GAPS - 1) : 0;
	uint64_t inside = 0, at_begin = 0, after = pending, last_pos = 0, first_used = next;
	bool trusted = true;
	for (uint64_t i = first; i < next; i++) {
		const struct mark_tf_gap *g = &hdr->gaps[i % MARK_TF_RING_GAPS];
		const uint64_t pos = __atomic_load_n(&g->pos, __ATOMIC_RELAXED);
		const uint64_t count = __atomic_load_n(&g->count, __ATOMIC_RELAXED);
		/* Positions only grow; anything else is a damaged (recovered)
		 * header or an entry overwritten while we read: trust no gap. */
		if (pos < last_pos || count > total) {
			trusted = false;
			break;
		}
		last_pos = pos;
		if (pos >= begin && first_used == next)
			first_used = i;   /* the entries used are those from here on */
		if (pos >= end) {
			if (later_in_total)
				after += count;
		} else if (pos > begin) {
			gaps[*ngaps] = (struct mark_tf_gap){ pos, count };
			++*ngaps;
			inside += count;
		} else if (pos == begin) {
			at_begin += count;
		}
	}
	/* Acquire fence, then gaps_next again: a producer that noted more
	 * gaps meanwhile may have overwritten (torn) the oldest entries read:
	 * entry i's slot is rewritten for entry i + MARK_TF_RING_GAPS while
	 * gaps_next is that; distrust them if we used any. */
	TRACER_FENCE(__ATOMIC_ACQUIRE);
	if (first_used < next &&
	    __atomic_load_n(&hdr->gaps_next, __ATOMIC_RELAXED) - first_used > MARK_TF_RING_GAPS - 1)
		trusted = false;
	if (live_owed) {
		/*
		 * The ring's thread may still drop events while we read: `total`
		 * and `pending` move under us (count_hole() stores one, then the
		 * other), so what follows `end` cannot be told from `total`.
		 * Count up from what the stream reported instead: the hole
		 * before the window's first record (the producer noted it before
		 * publishing that record), plus the records the consumer itself
		 * dropped there.  Anything else waits for a later packet.
		 */
		const uint64_t first_lost = floor + at_begin + *live_owed;
		if (!trusted || first_lost < floor || first_lost > total || inside > total - first_lost) {
			/* Reported later, never early, never backwards: what the
			 * consumer itself owes is still known. */
			*ngaps = 0;
			return floor + *live_owed >= floor && floor + *live_owed <= total ? floor + *live_owed : floor;
		}
		return first_lost;
	}
	/* Counts that do not add up (a damaged header): report every loss
	 * before the records, as without gaps, rather than a count that goes
	 * backwards. */
	if (!trusted || inside > total || after > total - inside || total - inside - after < floor) {
		*ngaps = 0;
		return total < floor ? floor : total;
	}
	return total - inside - after;
}

int tracer_write_records(struct tracer_packet_sink *sink, const uint64_t *data, uint64_t capacity,
			 uint64_t begin, uint64_t end, uint64_t *consumed)
{
	const uint64_t mask = capacity / 8 - 1;
	uint64_t pos = begin;
	bool owed = false;
	*consumed = begin;
	while (pos < end) {
		/* Taken back if this packet cannot be written: the hole at its
		 * start is then still before the records left in the ring. */
		const uint64_t lost_before_gaps = sink->lost;
		const struct mark_tf_gap *const gaps_before = sink->gaps;
		const unsigned ngaps_before = sink->ngaps;
		/* A hole in the ring (mark_tf_ring.gaps) ends a packet: the
		 * packets after it report its loss, babeltrace2 shows it there. */
		while (sink->ngaps && sink->gaps->pos <= pos) {
			sink->lost += sink->gaps->count;
			sink->gaps++;
			sink->ngaps--;
		}
		const uint64_t stop_at = sink->ngaps && sink->gaps->pos < end ? sink->gaps->pos : end;
		uint64_t pkt_begin = pos, ts_begin = 0, ts_end = 0, nev = 0, last_pad = 0;
		bool stop = false;
		while (pos < stop_at && pos - pkt_begin < TRACER_PACKET_MAX) {
			uint64_t ts = __atomic_load_n(&data[(pos / 8) & mask], __ATOMIC_RELAXED);
			uint64_t w = __atomic_load_n(&data[(pos / 8 + 1) & mask], __ATOMIC_RELAXED);
			unsigned id = (unsigned)(w & 0xffff), len = (unsigned)((w >> 16) & 0xffff);
			uint64_t span = MARK_TF_RECORD_SPAN(len);
			if (len < 16 || pos + span > end || id >= sink->counts_cap) {
				stop = true;   /* unknown id (metadata behind) or damaged record */
				break;
			}
			if (nev == 0)
				ts_begin = ts;
			ts_end = ts;
			nev++;
			pos += span;
			last_pad = span - len;
			if (sink->counts)
				sink->counts[id]++;   /* taken back below if the write fails */
		}
		if (nev == 0)
			break;
		uint64_t pk_lost = sink->lost;
		if (sink->stream_bytes == 0 && sink->lost != sink->lost_before) {
			/* babeltrace2 reports discarded events as the difference to the
			 * previous packet: start the file at what earlier files of the
			 * stream reported (0, or earlier chunks' count), just before
			 * this packet and not before the stream's last event (see
			 * write_empty_at).  No room between the two (they are closer
			 * than the readers' resolution): this packet starts the file
			 * with that count instead, and the next packet, or an empty
			 * one after it, reports the new losses. */
			const uint64_t gap = tracer_tick_gap(sink->freq, ts_begin);
			if (ts_begin >= gap && ts_begin - gap >= sink->last_ts) {
				int rc = write_empty_at(sink, pkt_begin, ts_begin - gap, sink->lost_before);
				if (rc < 0)
					return rc;
			} else {
				pk_lost = sink->lost_before;
			}
		}
		struct mark_tf_packet pk;
		packet_init(&pk, sink, pk_lost);
		uint64_t len = pos - pkt_begin;
		pk.timestamp_begin = ts_begin;
		pk.timestamp_end = ts_end;
		/* The content ends where the last event's last field ends. */
		pk.packet_size = (sizeof(pk) + len) * 8;
		pk.content_size = pk.packet_size - last_pad * 8;
		struct iovec iov[3];
		int cnt = 1;
		iov[0].iov_base = &pk;
		iov[0].iov_len = sizeof(pk);
		uint64_t off = pkt_begin & (capacity - 1);
		uint64_t first = len < capacity - off ? len : capacity - off;
		iov[cnt].iov_base = (char *)data + off;
		iov[cnt++].iov_len = first;
		if (first < len) {
			iov[cnt].iov_base = (char *)data;
			iov[cnt++].iov_len = len - first;
		}
		int rc = emit_packet(sink, iov, cnt, sizeof(pk) + len, pos);
		if (rc < 0) {
			for (uint64_t p = pkt_begin; sink->counts && p < pos;) {
				uint64_t w = __atomic_load_n(&data[(p / 8 + 1) & mask], __ATOMIC_RELAXED);
				sink->counts[w & 0xffff]--;
				p += MARK_TF_RECORD_SPAN((w >> 16) & 0xffff);
			}
			sink->lost = lost_before_gaps;
			sink->gaps = gaps_before;
			sink->ngaps = ngaps_before;
			return rc;
		}
		sink->events += nev;
		sink->last_ts = ts_end;
		*consumed = pos;
		owed = pk_lost != sink->lost;
		if (stop)
			break;
	}
	/* The last packet carried the earlier count (no room for the empty
	 * packet before it): the losses before it go in one after it, or,
	 * while its thread may still record, in the next packet. */
	return owed && !sink->live ? tracer_write_empty_packet(sink, *consumed) : 0;
}

int tracer_write_empty_packet(struct tracer_packet_sink *sink, uint64_t ring_pos)
{
	if (sink->stream_bytes == 0 && sink->lost != sink->lost_before) {
		int rc = write_empty_at(sink, ring_pos, sink->last_ts, sink->lost_before);
		if (rc < 0)
			return rc;
	}
	/* Just after the stream's last event (see write_empty_at), far
	 * enough that readers see a later nanosecond; the thread's next event
	 * is later still: it follows the losses this packet reports. */
	sink->last_ts += tracer_tick_gap(sink->freq, sink->last_ts);
	return write_empty_at(sink, ring_pos, sink->last_ts, sink->lost);
}

uint64_t tracer_count_records(const uint64_t *data, uint64_t capacity, uint64_t pos, uint64_t end)
{
	const uint64_t mask = capacity / 8 - 1;
	uint64_t n = 0;
	while (pos < end) {
		uint64_t w = __atomic_load_n(&data[(pos / 8 + 1) & mask], __ATOMIC_RELAXED);
		uint64_t len = (w >> 16) & 0xffff;
		n++;
		if (len < 16)
			break;
		pos += MARK_TF_RECORD_SPAN(len);
	}
	return n;
}

/* Does fd still refer to the file (ino, dev) we opened?  (One fstat.) */
static bool fd_is_file(int fd, uint64_t ino, uint64_t dev)
{
	struct stat st;
	return fstat(fd, &st) == 0 && st.st_ino == ino && st.st_dev == dev;
}

/*
 * The stream file of ring r: created new (O_EXCL, 0600) the first time;
 * opened again for appending (never through a link) when the program closed
 * our descriptor.  Returns a descriptor, or -1 with errno set.
 */
static int open_stream(struct tracer_session *s, unsigned index, bool created_before)
{
	char name[64];
	tracer_path(name, sizeof(name), NULL, MARK_TF_STREAM_PREFIX, index);
	int dfd = tracer_dir_fd(s);
	if (dfd < 0) {
		errno = -dfd;
		return -1;
	}
	if (created_before)
		return openat(dfd, name, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
	int fd = mark_file_create_at(dfd, name, O_WRONLY | O_APPEND);
	if (fd < 0) {
		errno = -fd;
		return -1;
	}
	return fd;
}

void tracer_describe_markers(struct tracer_session *s)
{
	size_t n;
	mark_registry_lock();
	mark_markers_locked(&n);
	mark_registry_unlock();
	if (n <= __atomic_load_n(&s->described, __ATOMIC_RELAXED))
		return;
	tracer_fork_guard_lock();
	if (tracer_metadata_write(tracer_dir_fd(s), s->dir, s, s->trace_uuid, &s->described) == 0 && s->stats)
		/* Now, not at the next statistics update (5 ms or more later):
		 * recovery decodes the records of the markers this count says
		 * the metadata describes, and counts the others lost; a process
		 * that execs or dies in between lost the events it had just
		 * recorded.  Only ever raised, after the metadata's rename: a
		 * reader (the process is dead by then) sees a complete file. */
		__atomic_store_n(&s->stats->markers_described, __atomic_load_n(&s->described, __ATOMIC_RELAXED),
				 __ATOMIC_RELAXED);
	tracer_fork_guard_unlock();
}

/* Now in the trace's ticks: the counter the producers read (TSC, or
 * aarch64's CNTVCT_EL0), else CLOCK_MONOTONIC nanoseconds. */
static uint64_t tracer_now(const struct tracer_session *s)
{
#if TRACER_HAVE_COUNTER
	if (s->clock.tsc)
		return tracer_counter();
#else
	(void)s;
#endif
	return tracer_monotonic_ns();
}

/*
 * Thread names (mark_tf_packet.thread_name).  The owner stored its name
 * when it claimed the ring; a thread often names itself later
 * (pthread_setname_np after its first event), so the consumer reads
 * /proc/self/task/TID/comm when the ring changes owner and then at most
 * once a second while it writes packets.  /proc may be missing (a chroot,
 * a sandbox) or the thread gone: the last name known stays.
 */
static void refresh_thread_name(struct tracer_ring *r, uint32_t tid)
{
	const uint64_t now = tracer_monotonic_ns();
	if (tid == r->name_tid && now - r->name_read_ns < 1000000000ull)
		return;
	char path[64], raw[64], name[16];
	ssize_t n = -1;
	snprintf(path, sizeof(path), "/proc/self/task/%u/comm", tid);
	int fd = tid ? open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) : -1;
	if (fd >= 0) {
		struct stat st;
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
			n = read(fd, raw, sizeof(raw));
		close(fd);
	}
	uint64_t w[2];
	if (n > 0) {
		mark_thread_name_clean(name, raw, (size_t)n);
		memcpy(w, name, sizeof(w));
	} else if (tid != r->name_tid) {
		w[0] = __atomic_load_n(&r->hdr->thread_name[0], __ATOMIC_RELAXED);
		w[1] = __atomic_load_n(&r->hdr->thread_name[1], __ATOMIC_RELAXED);
	} else {
		r->name_read_ns = now;
		return;
	}
	__atomic_store_n(&r->name_words[0], w[0], __ATOMIC_RELAXED);
	__atomic_store_n(&r->name_words[1], w[1], __ATOMIC_RELAXED);
	__atomic_store_n(&r->name_tid, tid, __ATOMIC_RELAXED);
	r->name_read_ns = now;
}

void tracer_ring_thread_name(const struct tracer_ring *r, uint32_t tid, char out[16])
{
	uint64_t w[2];
	if (__atomic_load_n(&r->name_tid, __ATOMIC_RELAXED) == tid && tid) {
		w[0] = __atomic_load_n(&r->name_words[0], __ATOMIC_RELAXED);
		w[1] = __atomic_load_n(&r->name_words[1], __ATOMIC_RELAXED);
	} else {
		w[0] = __atomic_load_n(&r->hdr->thread_name[0], __ATOMIC_RELAXED);
		w[1] = __atomic_load_n(&r->hdr->thread_name[1], __ATOMIC_RELAXED);
	}
	/* Cleaned when stored; cleaned again (cheap) in case words of two
	 * names were read. */
	char raw[16];
	memcpy(raw, w, sizeof(raw));
	mark_thread_name_clean(out, raw, sizeof(raw));
}

/*
 * A stream file that cannot be created or written (no free descriptor,
 * disk or quota full) is often short-lived: a daemon's descriptor burst,
 * a log rotation freeing space.  So while the ring's thread may record,
 * its unwritten records (`unwritten` bytes) take up at most half the
 * ring, and the first failure is less than TRACER_WRITE_RETRY_NS old, the
 * records stay in the ring and the next round (10 ms later) tries again;
 * the producer meanwhile records into the other half.  After that, or at
 * exit and stop, they are counted lost as before.  One warning per
 * recording says it is trying again.  Consumer thread only.
 */
static bool may_retry_write(struct tracer_session *s, struct tracer_ring *r, bool live, uint64_t unwritten,
			    int err, const char *what)
{
	if (!live || unwritten > r->capacity / 2)
		return false;
	const uint64_t now = tracer_monotonic_ns();
	if (r->write_fail_ns == 0)
		r->write_fail_ns = now;
	if (now - r->write_fail_ns >= TRACER_WRITE_RETRY_NS)
		return false;
	if (!s->write_retry_reported) {
		mark_warn("mark: tracer cannot %s stream file %u in %s (%s); its events wait in its buffer "
			  "and are counted lost if this lasts 1 s or fills half the buffer\n",
			  what, r->index, s->dir, strerror(err));
		s->write_retry_reported = true;
	}
	return true;
}

/*
 * The exited thread's ring is written out: a new thread may claim it
 * (ring_claim()'s acquire CAS pairs with the release store).  What the
 * consumer kept about the last owner's stream goes first.
 */
static void ring_set_free(struct tracer_ring *r)
{
	r->write_fail_ns = 0;
	r->consumer_owed = 0;
	__atomic_store_n(&r->hdr->state, MARK_TF_RING_FREE, __ATOMIC_RELEASE);
}

/*
 * Write what the ring holds.  `final`: no producer can run any more
 * (stop), so overwrite-mode rings of live threads are written too.
 * Returns true if anything was written.
 */
static bool drain_ring(struct tracer_session *s, struct tracer_ring *r, bool final)
{
	struct mark_tf_ring *hdr = r->hdr;
	uint32_t state = __atomic_load_n(&hdr->state, __ATOMIC_ACQUIRE);
	if (s->mode == MARK_TRACE_OVERWRITE && !final && state != MARK_TF_RING_EXITED)
		return false;   /* flight recorder: written at snapshot, thread exit or stop */
	/* A triggered snapshot still has to copy it (its thread exited right
	 * after the trigger): leave it, so that no new thread reuses it first.
	 * Acquire pairs with tracer_trigger_service()'s release. */
	if (!final && __atomic_load_n(&r->hold, __ATOMIC_ACQUIRE))
		return false;
	const uint64_t head = __atomic_load_n(&hdr->head, __ATOMIC_ACQUIRE);
	uint64_t start = hdr->tail;
	if (s->mode == MARK_TRACE_OVERWRITE) {
		uint64_t oldest = __atomic_load_n(&hdr->oldest, __ATOMIC_RELAXED);
		if (oldest > start)
			start = oldest;
	}
	uint64_t lost = __atomic_load_n(&hdr->lost, __ATOMIC_RELAXED) + hdr->lost_consumer;
	const uint64_t reported_before = hdr->lost_reported;   /* consumer-owned: plain read */
	/* The holes inside [start, head) (events dropped between records) are
	 * reported where they are; those after head by the next round (the
	 * producer notes them at its next record) or, when no record can
	 * follow, by the empty packet below. */
	struct mark_tf_gap gaps[MARK_TF_RING_GAPS];
	unsigned ngaps = 0;
	/* Its thread may still record (not stopped, not exited): losses
	 * after the last record wait for the packet of the next one. */
	const bool live = !final && state == MARK_TF_RING_OWNED;
	const uint64_t first_lost = tracer_ring_losses(hdr, start, head, lost,
						       __atomic_load_n(&r->pending_gap, __ATOMIC_RELAXED), true,
						       reported_before, live ? &r->consumer_owed : NULL,
						       gaps, &ngaps);
	if (start == head && (lost == hdr->lost_reported || live)) {
		if (start != hdr->tail)
			__atomic_store_n(&hdr->tail, start, __ATOMIC_RELEASE);
		if (state == MARK_TF_RING_EXITED)
			ring_set_free(r);
		return false;
	}
	if (r->stream_fd >= 0) {
		/*
		 * A program that closes every descriptor (daemonising) may have
		 * closed ours and reused its number for a file of its own: never
		 * write there.  One fstat per drain.
		 */
		if (!fd_is_file(r->stream_fd, r->stream_ino, r->stream_dev))
			r->stream_fd = -1;   /* not ours any more: do not close it */
	}
	if (r->stream_fd < 0) {
		r->stream_fd = open_stream(s, r->index, r->stream_ino != 0);
		const int err = errno;
		struct stat st;
		if (r->stream_fd >= 0 && fstat(r->stream_fd, &st) == 0) {
			r->stream_ino = st.st_ino;
			r->stream_dev = st.st_dev;
		}
		if (r->stream_fd < 0 && may_retry_write(s, r, live, head - start, err, "create"))
			return false;   /* the records stay in the ring */
		if (r->stream_fd < 0 && !s->write_error_reported) {
			mark_warn("mark: tracer cannot create stream file %u in %s (%s); its events "
				"are counted lost\n", r->index, s->dir, strerror(err));
			s->write_error_reported = true;
		}
	}
	unsigned described = __atomic_load_n(&s->described, __ATOMIC_RELAXED);
	struct tracer_packet_sink sink = {
		.fd = r->stream_fd,
		.uuid = s->trace_uuid,
		.index = r->index,
		.tid = __atomic_load_n(&hdr->tid, __ATOMIC_RELAXED),
		.seq = hdr->packet_seq,
		.stream_bytes = hdr->stream_bytes,
		.commit = hdr,
		.lost = first_lost,
		.gaps = gaps,
		.ngaps = ngaps,
		.lost_before = hdr->lost_reported,
		.counts = s->marker_counts,
		.counts_cap = described < s->marker_counts_cap ? described : s->marker_counts_cap,
		.last_ts = r->last_ts,
		.freq = s->clock.freq,
		.live = live,
	};
	refresh_thread_name(r, sink.tid);
	tracer_ring_thread_name(r, sink.tid, sink.thread_name);
	uint64_t consumed = start;
	int rc = 0;
	if (sink.fd >= 0 && start < head) {
		rc = tracer_write_records(&sink, r->data, r->capacity, start, head, &consumed);
		if (rc == 0 && consumed < head) {
			/* A marker newer than the metadata: describe it, then go on. */
			tracer_describe_markers(s);
			described = __atomic_load_n(&s->described, __ATOMIC_RELAXED);
			sink.counts_cap = described < s->marker_counts_cap ? described : s->marker_counts_cap;
			rc = tracer_write_records(&sink, r->data, r->capacity, consumed, head, &consumed);
		}
	}
	const bool retry = rc < 0 && may_retry_write(s, r, live, head - consumed, -rc, "write");
	/* What the packets were to report up to `consumed` and did not (a
	 * first packet of a new file with no room before it, a write that
	 * failed: tracer_write_records() takes back the hole at the failed
	 * packet's start, which the next round sees again) waits for the next
	 * round's first packet: tracer_ring_losses() adds it. */
	r->consumer_owed = live && sink.lost > hdr->lost_reported ? sink.lost - hdr->lost_reported : 0;
	if (rc == 0 && sink.fd >= 0)
		r->write_fail_ns = 0;   /* a round without a failure ends the retry window */
	if (!retry && (rc < 0 || sink.fd < 0 || consumed < head)) {
		/* Could not write (or undecodable records): drop them, count them. */
		if (rc < 0 && !s->write_error_reported) {
			mark_warn("mark: tracer cannot write stream file %u in %s (%s); events are "
				"counted lost\n", r->index, s->dir, strerror(-rc));
			s->write_error_reported = true;
		}
		const uint64_t dropped = tracer_count_records(r->data, r->capacity, consumed, head);
		__atomic_store_n(&hdr->lost_consumer, hdr->lost_consumer + dropped, __ATOMIC_RELAXED);
		consumed = head;
		if (live) {
			/* Before the thread's next record: these, and the holes
			 * among them, which no later round sees. */
			r->consumer_owed += dropped;
			for (unsigned g = 0; g < sink.ngaps; g++)
				r->consumer_owed += sink.gaps[g].count;
		}
	}
	lost = __atomic_load_n(&hdr->lost, __ATOMIC_RELAXED) + hdr->lost_consumer;
	if (sink.fd >= 0 && lost != hdr->lost_reported && !sink.live && !retry) {
		/* Losses after the last record, and no record can follow: an
		 * empty packet carries the count.  Not while the thread may
		 * record: its next record's packet reports them in time order,
		 * whereas an empty packet just after our last record could be
		 * stamped later than that next record (the gap of
		 * tracer_tick_gap() is 98 ticks under qemu-user, events there
		 * come 31-62 ticks apart): babeltrace2 refuses such a stream. */
		sink.lost = lost;
		if (!sink.last_ts)
			sink.last_ts = tracer_now(s);
		tracer_write_empty_packet(&sink, consumed);
	}
	r->last_ts = sink.last_ts;
	s->bytes_written += sink.bytes;
	s->events_written += sink.events;
	/* The losses the packets now report: a chunk deleted later takes its
	 * share with it (chunks.c counts them in .mark-chunks). */
	s->lost_written += hdr->lost_reported - reported_before;
	/* Release: we are done reading [start, consumed) before the producer reuses it. */
	__atomic_store_n(&hdr->tail, consumed, __ATOMIC_RELEASE);
	if (state == MARK_TF_RING_EXITED && consumed == head)
		ring_set_free(r);
	return sink.bytes > 0;
}

/* Is there work that must not wait for the next tick? */
static bool urgent_work(struct tracer_session *s)
{
	if (__atomic_load_n(&s->trig_state, __ATOMIC_RELAXED) == TRIG_PENDING)
		return true;   /* a snapshot trigger: its thread drops events until served */
	struct tracer_ring *r;
	tracer_for_each_ring(s, r) {
		struct mark_tf_ring *h = r->hdr;
		if (__atomic_load_n(&h->state, __ATOMIC_ACQUIRE) == MARK_TF_RING_EXITED)
			return true;
		if (s->mode != MARK_TRACE_OVERWRITE &&
		    __atomic_load_n(&h->head, __ATOMIC_ACQUIRE) - h->tail > r->capacity / 2)
			return true;
	}
	return false;
}

/* ---- statistics file ---- */

int tracer_stats_open(struct tracer_session *s)
{
	const size_t counted_offset = sizeof(struct mark_tf_stats) + STATS_MAX_ENTRIES * sizeof(struct mark_tf_stats_entry);
	const size_t size = counted_offset + 2 * sizeof(struct mark_tf_counted);
	char path[PATH_MAX];
	tracer_path(path, sizeof(path), s->dir, MARK_TF_STATS, -1);
	void *map = MAP_FAILED;
	/* A new file in the session's (clean, private) directory. */
	const int dfd = tracer_dir_fd(s);
	int fd = dfd >= 0 ? mark_file_create_at(dfd, MARK_TF_STATS, O_RDWR) : -EBADF;
	if (fd < 0)
		errno = -fd;
	if (fd >= 0) {
		struct stat st;
		if (fstat(fd, &st) == 0) {
			s->stats_made = true;
			s->stats_dev = st.st_dev;
			s->stats_ino = st.st_ino;
		}
		if (fallocate(fd, 0, 0, (off_t)size) == 0)
			map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (map != MAP_FAILED) {
			tracer_map_no_readahead(map, size);
		} else {
			/* An empty .mark-stats is worse than none: the readers take it
			 * for a damaged trace (a full disk left one behind). */
			const int err = errno;
			tracer_stats_remove(s, dfd);
			errno = err;
		}
		close(fd);
	}
	if (map == MAP_FAILED) {
		mark_warn("mark: tracer cannot create %s (%s); live statistics are not available to "
			"other processes\n", path, strerror(errno));
		map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (map == MAP_FAILED)
			return -ENOMEM;
	}
	struct mark_tf_stats *st = map;
	st->version = MARK_TF_STATS_VERSION;
	st->header_size = sizeof(struct mark_tf_stats);
	st->entry_size = sizeof(struct mark_tf_stats_entry);
	st->max_entries = STATS_MAX_ENTRIES;
	st->pid = s->pid;
	st->mode = (uint32_t)s->mode;
	st->start_realtime_ns = tracer_realtime_ns();
	st->buffer_size = s->buffer_size;
	st->counted_offset = counted_offset;   /* set 0, all zero, is committed: nothing written yet */
	st->state = MARK_TF_STATE_STARTING;
	TRACER_FENCE(__ATOMIC_RELEASE);
	memcpy(st->magic, MARK_TF_STATS_MAGIC, 8);
	s->stats = st;
	s->stats_map_size = size;
	s->stats_entries = STATS_MAX_ENTRIES;
	s->counted = (struct mark_tf_counted *)((char *)map + counted_offset);
	s->counted_set = 0;
	s->marker_counts_cap = MARK_TF_MAX_ID + 1;
	s->marker_counts = calloc(s->marker_counts_cap, sizeof(uint64_t));
	if (!s->marker_counts)
		return -ENOMEM;
	return 0;
}

void tracer_stats_remove(struct tracer_session *s, int dirfd)
{
	/* By identity: a file that took the name since (the directory is
	 * private to this euid, so only its own processes could) stays. */
	if (s->stats_made)
		mark_remove_same_at(dirfd, MARK_TF_STATS, s->stats_dev, s->stats_ino, false);
	s->stats_made = false;
}

/* Events that had no buffer (probe.c, count_lost_no_ring()): counted in
 * the statistics file, which every published session has. */
static uint64_t tracer_lost_no_ring(const struct tracer_session *s)
{
	return s->stats ? __atomic_load_n(&s->stats->lost_no_ring, __ATOMIC_RELAXED) : 0;
}

void tracer_sum_rings(struct tracer_session *s, uint64_t *events, uint64_t *lost, uint64_t *buffers)
{
	uint64_t e = 0, l = tracer_lost_no_ring(s), b = 0;
	struct tracer_ring *r;
	tracer_for_each_ring(s, r) {
		e += __atomic_load_n(&r->hdr->events, __ATOMIC_RELAXED);
		l += __atomic_load_n(&r->hdr->lost, __ATOMIC_RELAXED) +
		     __atomic_load_n(&r->hdr->lost_consumer, __ATOMIC_RELAXED);
		b++;
	}
	*events = e;
	*lost = l;
	*buffers = b;
}

void tracer_counted_commit(struct tracer_session *s)
{
	struct mark_tf_stats *st = s->stats;
	if (!st || !s->counted)
		return;
	/* Consumer thread only (or the stopping thread once it is joined):
	 * the only writer of the sets, of counted_set and of the counts.
	 * Where the sets are and which one is committed come from the
	 * session, never from the file, which its owner's other processes
	 * can write: a planted counted_offset must not move our stores. */
	const unsigned next = s->counted_set ^ 1;
	struct mark_tf_counted *c = &s->counted[next];
	c->events_written = s->events_written;
	c->bytes_written = s->bytes_written;
	struct tracer_ring *r;
	tracer_for_each_ring(s, r)
		c->stream_bytes[r->index] = r->hdr->stream_bytes;   /* consumer-owned: plain read */
	const unsigned described = __atomic_load_n(&s->described, __ATOMIC_RELAXED);
	const unsigned ne = described < STATS_MAX_ENTRIES ? described : STATS_MAX_ENTRIES;
	memcpy(c->events, s->marker_counts, ne * sizeof(uint64_t));
	/*
	 * The commit.  What matters is the state a SIGKILL leaves, which a
	 * recovery reads after this thread is gone: every store before this
	 * one is in the shared page cache by then, whatever the order other
	 * CPUs would have seen them in.  Release for a reader in another
	 * process that loads counted_set with acquire (none does today).
	 */
	__atomic_store_n(&st->counted_set, next, __ATOMIC_RELEASE);
	s->counted_set = next;
}

void tracer_stats_update(struct tracer_session *s, uint32_t state)
{
	struct mark_tf_stats *st = s->stats;
	if (!st)
		return;
	uint64_t events, lost, buffers;
	tracer_sum_rings(s, &events, &lost, &buffers);
	/* Seqlock writer: odd seq, fence, fields, fence, even seq. */
	uint64_t seq = st->seq;
	__atomic_store_n(&st->seq, seq + 1, __ATOMIC_RELAXED);
	TRACER_FENCE(__ATOMIC_RELEASE);
	__atomic_store_n(&st->state, state, __ATOMIC_RELAXED);
	__atomic_store_n(&st->update_realtime_ns, tracer_realtime_ns(), __ATOMIC_RELAXED);
	__atomic_store_n(&st->events, events, __ATOMIC_RELAXED);
	__atomic_store_n(&st->lost, lost, __ATOMIC_RELAXED);
	__atomic_store_n(&st->events_written, s->events_written, __ATOMIC_RELAXED);
	__atomic_store_n(&st->bytes_written, s->bytes_written, __ATOMIC_RELAXED);
	__atomic_store_n(&st->buffers, buffers, __ATOMIC_RELAXED);
	/* (s->described: also raised by tracer_describe_markers() on the thread
	 * that registers an object, under tracer_fork_guard.) */
	const unsigned described = __atomic_load_n(&s->described, __ATOMIC_RELAXED);
	__atomic_store_n(&st->markers_described, described, __ATOMIC_RELAXED);
	__atomic_store_n(&st->snapshots, __atomic_load_n(&s->snapshots, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
	__atomic_store_n(&st->triggers_busy, __atomic_load_n(&s->trig_busy, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
	__atomic_store_n(&st->triggers_over_max, __atomic_load_n(&s->trig_over_max, __ATOMIC_RELAXED),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&st->triggers_in_interval, __atomic_load_n(&s->trig_in_interval, __ATOMIC_RELAXED),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&st->triggers_failed, __atomic_load_n(&s->trig_failed, __ATOMIC_RELAXED),
			 __ATOMIC_RELAXED);
	uint64_t hold_lost = 0;
	struct tracer_ring *r;
	tracer_for_each_ring(s, r)
		hold_lost += __atomic_load_n(&r->hold_lost, __ATOMIC_RELAXED);
	__atomic_store_n(&st->snapshot_hold_lost, hold_lost, __ATOMIC_RELAXED);
	/* Our own capacity, not the file's max_entries: anyone who can write
	 * the file could make that larger than what we mapped. */
	unsigned ne = described < STATS_MAX_ENTRIES ? described : STATS_MAX_ENTRIES;
	struct mark_tf_stats_entry *e = (struct mark_tf_stats_entry *)(st + 1);
	for (unsigned i = 0; i < ne; i++)
		__atomic_store_n(&e[i].events, s->marker_counts[i], __ATOMIC_RELAXED);
	__atomic_store_n(&st->nentries, ne, __ATOMIC_RELAXED);
	__atomic_store_n(&st->seq, seq + 2, __ATOMIC_RELEASE);
	tracer_counted_commit(s);
}

/*
 * Events that never had a buffer (its creation failed, a signal handler
 * nested deeper than TRACER_MAX_NESTING, an id past MARK_TF_MAX_ID:
 * count_lost_no_ring()) have no ring to report them.  They go in a stream
 * of their own, stream-TRACER_LOSS_STREAM (tid 0, thread name
 * "(no buffer)"), of empty packets whose events_discarded is the
 * session's count, so that babeltrace2 and mark stats count them with the
 * others.  Written when the count changed, at most every 100 ms and at
 * stop; its first packet says 0, as a reader reports a stream's losses as
 * the difference to its previous packet.  Each packet is stamped with the
 * consumer's clock, after the drops it reports.  Not rotated into chunks:
 * the file stays in pid-P, a few hundred bytes.  Consumer thread only (or
 * the final drain, after it stopped).
 */
static void write_no_ring_losses(struct tracer_session *s, bool final)
{
	const uint64_t lost = tracer_lost_no_ring(s);
	if (lost == s->loss_reported)
		return;
	const uint64_t now = tracer_monotonic_ns();
	if (!final && now - s->loss_written_ns < 100000000ull)
		return;
	s->loss_written_ns = now;
	if (s->loss_fd >= 0 && !fd_is_file(s->loss_fd, s->loss_ino, s->loss_dev))
		s->loss_fd = -1;   /* the program reused the number: not ours to close */
	if (s->loss_fd < 0) {
		s->loss_fd = open_stream(s, TRACER_LOSS_STREAM, s->loss_ino != 0);
		struct stat st;
		if (s->loss_fd >= 0 && fstat(s->loss_fd, &st) != 0) {
			close(s->loss_fd);   /* just opened: ours */
			s->loss_fd = -1;
		}
		if (s->loss_fd < 0) {
			if (!s->write_error_reported) {
				mark_warn("mark: tracer cannot create stream file %u in %s (%s); the %llu events "
					  "that had no buffer are counted in .mark-stats only\n", TRACER_LOSS_STREAM,
					  s->dir, strerror(errno), (unsigned long long)lost);
				s->write_error_reported = true;
			}
			return;
		}
		s->loss_ino = st.st_ino;
		s->loss_dev = st.st_dev;
	}
	const uint64_t ts = tracer_now(s);
	struct tracer_packet_sink sink = {
		.fd = s->loss_fd,
		.uuid = s->trace_uuid,
		.index = TRACER_LOSS_STREAM,
		.thread_name = "(no buffer)",
		.seq = s->loss_seq,
		.stream_bytes = s->loss_bytes,
		.lost = lost,
		.lost_before = s->loss_reported,
		.last_ts = ts > s->loss_last_ts ? ts : s->loss_last_ts,
		.freq = s->clock.freq,
	};
	if (tracer_write_empty_packet(&sink, 0) == 0)
		s->loss_reported = lost;
	s->loss_seq = sink.seq;
	s->loss_bytes = sink.stream_bytes;
	s->loss_last_ts = sink.last_ts;
	/* Not in s->bytes_written: a --rotate chunk is cut when events were
	 * written, and this file stays in pid-P (a few hundred bytes). */
}

/* ---- the thread ---- */

static void for_each_ring_drain(struct tracer_session *s, bool final, bool *work)
{
	struct tracer_ring *r;
	tracer_for_each_ring(s, r) {
		if (drain_ring(s, r, final))
			*work = true;
	}
	write_no_ring_losses(s, final);
}

static void *consumer_main(void *arg)
{
	struct tracer_session *s = arg;
	uint64_t last_stats = 0;
	/* Visible in top -H, ps -L, perf and /proc/PID/task/TID/comm. */
	pthread_setname_np(pthread_self(), "mark-consumer");
	s->last_refine_ns = tracer_monotonic_ns();
	for (;;) {
		if (tracer_family_stopped(s) && tracer_session_stop_by_family(s) == 0)
			return NULL;   /* the session is stopped and freed */
		bool stopping = __atomic_load_n(&s->stopping, __ATOMIC_ACQUIRE);
		tracer_describe_markers(s);
		/* First: the thread that fired a trigger drops its events until then. */
		tracer_trigger_service(s);
		bool work = false;
		for_each_ring_drain(s, false, &work);
		uint64_t now = tracer_monotonic_ns();
		tracer_chunks_tick(s, now);   /* MARK_MAX_SIZE / MARK_ROTATE: chunks.c */
		if (now - s->last_refine_ns > 1000000000ull) {
			/* A longer baseline gives a better TSC frequency: keep the
			 * metadata (read by recovery after a crash) current. */
			s->last_refine_ns = now;
			/* fork_guard also keeps a snapshot from reading a half-updated clock. */
			tracer_fork_guard_lock();
			if (!s->clock_frozen && tracer_clock_refine(&s->clock))
				tracer_metadata_write(tracer_dir_fd(s), s->dir, s, s->trace_uuid,
						      &s->described);
			tracer_fork_guard_unlock();
		}
		if (now - last_stats > 5000000ull || !work) {
			tracer_stats_update(s, MARK_TF_STATE_RUNNING);
			last_stats = now;
		}
		if (stopping)
			break;
		if (work)
			continue;
		__atomic_store_n(&s->consumer_waiting, 1, __ATOMIC_RELAXED);
		/* Pairs with the producer's fence in tracer_kick_consumer(): either
		 * it sees consumer_waiting, or we see its head / state below. */
		TRACER_FENCE(__ATOMIC_SEQ_CST);
		if (!urgent_work(s) && !__atomic_load_n(&s->stopping, __ATOMIC_ACQUIRE) &&
		    !__atomic_load_n(&s->kick, __ATOMIC_RELAXED)) {
			struct timespec ts = { 0, 10000000 };
			syscall(SYS_futex, &s->kick, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
		}
		__atomic_store_n(&s->consumer_waiting, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&s->kick, 0, __ATOMIC_RELAXED);
	}
	return NULL;
}

int tracer_consumer_start(struct tracer_session *s)
{
	sigset_t all, old;
	sigfillset(&all);
	/* The consumer takes no signals: they belong to the program's threads. */
	pthread_sigmask(SIG_SETMASK, &all, &old);
	__atomic_store_n(&s->consumer_alive, 1, __ATOMIC_RELEASE);
	int rc = pthread_create(&s->consumer, NULL, consumer_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		__atomic_store_n(&s->consumer_alive, 0, __ATOMIC_RELEASE);
		return -rc;
	}
	__atomic_store_n(&s->consumer_started, true, __ATOMIC_RELEASE);
	return 0;
}

/*
 * A forked child's session has no consumer thread until a ring needs
 * draining (the first kick: a ring past half full, or full in block mode),
 * so that a child that records a few events and then unshares, or that
 * never records, stays single-threaded; its rings are written at stop or
 * exit by tracer_drain_all_final().  One producer wins the exchange and
 * starts the thread; the others see consumer_lazy 0 and go on.  Stop reads
 * consumer_started after the RCU grace period that follows unpublishing the
 * session, by which time no producer can be in here (we run inside
 * mark__fire's read-side critical section).  Caveat, written down in
 * docs/tracer.md: if that first kick comes from a signal handler that
 * interrupted the C library's allocator, pthread_create may wait for it.
 */
void tracer_consumer_start_lazy(struct tracer_session *s)
{
	if (!__atomic_load_n(&s->consumer_lazy, __ATOMIC_RELAXED) ||
	    !__atomic_exchange_n(&s->consumer_lazy, 0, __ATOMIC_ACQ_REL))
		return;
	int rc = tracer_consumer_start(s);
	if (rc < 0)
		mark_warn("mark: tracer (pid %d): cannot start the consumer thread: %s; the events "
			"are written at exit, and those that do not fit the buffers are counted lost\n",
			(int)getpid(), strerror(-rc));
}

void tracer_consumer_stop(struct tracer_session *s)
{
	__atomic_store_n(&s->consumer_lazy, 0, __ATOMIC_RELAXED);
	if (!__atomic_load_n(&s->consumer_started, __ATOMIC_ACQUIRE))
		return;
	__atomic_store_n(&s->stopping, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&s->kick, 1, __ATOMIC_RELAXED);
	syscall(SYS_futex, &s->kick, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	pthread_join(s->consumer, NULL);
	__atomic_store_n(&s->consumer_started, false, __ATOMIC_RELAXED);
	__atomic_store_n(&s->consumer_alive, 0, __ATOMIC_RELEASE);
}

void tracer_drain_all_final(struct tracer_session *s)
{
	bool work = false;
	tracer_describe_markers(s);
	/* A trigger fired just before the stop (or in a child whose consumer
	 * never started): its snapshot first, then the rings. */
	tracer_trigger_service(s);
	for_each_ring_drain(s, true, &work);
}
