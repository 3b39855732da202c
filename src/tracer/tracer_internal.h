/*
 * Internals of the built-in tracer (not installed).
 *
 * Modules:
 *   clock.c     timestamp source (calibrated invariant TSC or CLOCK_MONOTONIC), CPU number
 *   probe.c     the fast probe: per-thread rings, claim/recycle, thread exit
 *   consumer.c  the consumer thread: rings -> CTF packets, live stats
 *   metadata.c  the CTF 1.8 TSDL metadata
 *   session.c   start/stop/snapshot, fork, environment configuration
 *   recover.c   turning the rings of a dead process into packets
 *
 * Concurrency overview (details at each site):
 * - A ring has one producer at a time (its owning thread at one signal
 *   nesting depth) and one consumer (the consumer thread, or stop/recovery
 *   once no producer can run).  Producer -> consumer: release store of
 *   head, acquire load by the consumer.  Consumer -> producer: release
 *   store of tail, acquire load by the producer.
 * - Ring slots of the process-local table are claimed with a CAS on the
 *   shared state word (slow path only); new rings get an index from an
 *   atomic counter (slow path only) and are published with a release store
 *   of `ready`.
 * - The control functions (start/stop/snapshot) are serialised by
 *   control_mutex, which the hot path never takes.
 */
#ifndef MARK_TRACER_INTERNAL_H
#define MARK_TRACER_INTERNAL_H

#include "../core/internal.h"
#include "trace_format.h"
#include "tracer.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>

/*
 * Memory fences.  ThreadSanitizer does not model atomic_thread_fence (GCC
 * refuses it under -fsanitize=thread); there an RMW on a global word gives
 * TSan the same ordering edges (slower, but only in TSan builds).
 */
#ifdef MARK_TSAN
extern MARK_HIDDEN int tracer_fence_word;
#define TRACER_FENCE(order) ((void)__atomic_fetch_add(&tracer_fence_word, 0, __ATOMIC_SEQ_CST))
#else
#define TRACER_FENCE(order) __atomic_thread_fence(order)
#endif

#define TRACER_MAX_RINGS 4096       /* per process, live + recycled-free        */
/* stream-N of the events that had no buffer (consumer.c): past every ring's N. */
#define TRACER_LOSS_STREAM TRACER_MAX_RINGS
/* After a thread's ring creation fails, its next try waits this long. */
#define TRACER_NO_RING_BACKOFF_NS 100000000ull
/* A stream file that cannot be created or written: retried this long. */
#define TRACER_WRITE_RETRY_NS 1000000000ull
/* Overwrite mode drops the oldest records a chunk (capacity / this) at a time. */
#define TRACER_OVERWRITE_CHUNKS 16
#define TRACER_MAX_NESTING 4        /* thread context + 3 signal handler levels */
#define TRACER_DEFAULT_BUFFER MARK_TRACE_BUFFER_DEFAULT
#define TRACER_MIN_BUFFER MARK_TRACE_BUFFER_MIN
#define TRACER_MAX_BUFFER MARK_TRACE_BUFFER_MAX
/* Sealed chunks kept under max_size: the chunk size is max_size / 8, so
 * at most 8 are ever on disk; the rest is headroom. */
#define TRACER_MAX_CHUNKS 16
#define TRACER_PACKET_MAX (1u << 20)  /* bytes of records per packet            */

/* ---- clock.c ---- */
struct tracer_clock {
	bool tsc;                   /* ticks are tracer_counter() (TSC, CNTVCT), else CLOCK_MONOTONIC ns */
	uint64_t freq;              /* ticks per second                           */
	/* realtime(ticks) = offset_s + (offset + ticks) / freq  (CTF clock) */
	int64_t offset_s;
	int64_t offset;
	/* calibration anchor */
	uint64_t tsc0;
	uint64_t mono0_ns;
	uint64_t real0_ns;
	uint8_t uuid[16];
};
MARK_HIDDEN void tracer_clock_init(struct tracer_clock *c);
/* Re-measure the TSC frequency against CLOCK_MONOTONIC since the anchor;
 * returns true if freq/offset changed. */
MARK_HIDDEN bool tracer_clock_refine(struct tracer_clock *c);
MARK_HIDDEN void tracer_cpu_init(void);

/*
 * The hardware counter the fast path stamps events with (c->tsc: "ticks
 * are the counter"):
 *   x86-64   rdtsc, where the TSC is invariant (clock.c checks CPUID);
 *   aarch64  CNTVCT_EL0, the generic timer's virtual count, which the
 *            kernel lets user space read (the vDSO does) and keeps
 *            synchronised across cores; its rate is CNTFRQ_EL0.  The ISB
 *            before it keeps the read from being speculated ahead of the
 *            instructions before it (as the kernel's own reads do), so a
 *            thread's timestamps follow its program order.
 * Elsewhere there is none and the ticks are CLOCK_MONOTONIC ns.
 */
#if defined(__x86_64__)
#define TRACER_COUNTER_NAME "TSC"
#define TRACER_COUNTER_SOURCE "invariant TSC, calibrated against CLOCK_MONOTONIC"
#elif defined(__aarch64__)
#define TRACER_COUNTER_NAME "CNTVCT_EL0"
#define TRACER_COUNTER_SOURCE "CNTVCT_EL0 at CNTFRQ_EL0, refined against CLOCK_MONOTONIC"
#else   /* no counter: c->tsc is never set, the metadata says CLOCK_MONOTONIC */
#define TRACER_COUNTER_NAME "CLOCK_MONOTONIC"
#define TRACER_COUNTER_SOURCE "CLOCK_MONOTONIC"
#endif
#if defined(__x86_64__) || defined(__aarch64__)
#define TRACER_HAVE_COUNTER 1
static inline uint64_t tracer_counter(void)
{
#if defined(__x86_64__)
	return __builtin_ia32_rdtsc();
#else
	uint64_t v;
	__asm__ __volatile__("isb\n\tmrs %0, cntvct_el0" : "=r"(v) : : "memory");
	return v;
#endif
}
#else
#define TRACER_HAVE_COUNTER 0
#endif

/*
 * The thread pointer, which glibc's __rseq_offset is relative to (the
 * rseq area lives in the thread control block): %fs:0 on x86-64,
 * TPIDR_EL0 on aarch64.  TRACER_HAVE_RSEQ: this file can find the rseq
 * area; tracer_cpu_init() still checks that glibc registered one.
 */
#if __has_include(<sys/rseq.h>) && (defined(__x86_64__) || defined(__aarch64__))
#define TRACER_HAVE_RSEQ 1
static inline char *tracer_thread_pointer(void)
{
	char *tp;
#if defined(__x86_64__)
	__asm__("mov %%fs:0, %0" : "=r"(tp));
#else
	__asm__("mrs %0, tpidr_el0" : "=r"(tp));
#endif
	return tp;
}
#else
#define TRACER_HAVE_RSEQ 0
#endif

/*
 * Where the CPU number comes from, chosen once by tracer_cpu_init():
 *   CPU_RSEQ    the thread's rseq area (one load);
 *   CPU_RDPID   x86-64 without rseq: rdpid reads TSC_AUX, which Linux sets
 *               to node << 12 | cpu (~5 cycles; the timestamp stays rdtsc);
 *   CPU_RDTSCP  x86-64 without rseq or rdpid: one rdtscp gives both
 *               (~17 cycles more than rdtsc on the Xeon VM);
 *   CPU_GETCPU  sched_getcpu(), a call: such events take the slow path.
 */
enum tracer_cpu_source { CPU_RSEQ, CPU_RDTSCP, CPU_GETCPU, CPU_RDPID };
extern MARK_HIDDEN enum tracer_cpu_source tracer_cpu_source;
extern MARK_HIDDEN bool tracer_clock_is_tsc;

#if defined(__x86_64__)
/* TSC_AUX without the timestamp rdtscp would also read.  Volatile: the
 * thread may move to another CPU between two calls. */
static inline uint32_t tracer_rdpid(void)
{
	uint64_t aux;
	__asm__ volatile("rdpid %0" : "=r"(aux));
	return (uint32_t)aux;
}
#endif

/*
 * A ring or statistics file is fallocate()d and then mapped shared.  Its
 * first page fault used to read around: the kernel zero-filled a window
 * of the fresh file's unwritten blocks as large as the disk's read-ahead
 * (read_ahead_kb: 8 MB on the Xeon VM's disk, so the whole 2 MB ring and
 * the statistics file, then 512 KB), 81 % of what a forked child that records
 * one event cost (`perf record`, about 3 ms per fork).  MADV_RANDOM turns
 * read-ahead off for the mapping, so each page is zeroed when it is first
 * touched; a ring's first pass pays one fault per page instead (no
 * difference in table 3b's rows, 64 MB ring included).  A system call
 * only: ring_create() may run in a signal handler.  Failure is harmless.
 */
static inline void tracer_map_no_readahead(void *map, size_t len)
{
	(void)madvise(map, len, MADV_RANDOM);
}

/* ---- probe.c / session ---- */

/* Process-local handle of one ring (its shared header is in the mmap). */
struct tracer_ring {
	struct mark_tf_ring *hdr;   /* mmap of .mark-ring-N                        */
	uint64_t *data;             /* hdr + MARK_TF_RING_HEADER_SIZE                */
	uint64_t capacity;          /* bytes, power of two                           */
	unsigned index;
	unsigned nesting;
	int ready;                  /* release-stored 1 once the fields above are set */
	/* Producer-private (only the owning thread touches these), on a cache
	 * line of their own so the consumer's writes below never pull it away
	 * from the producer's core. */
	uint64_t cached_tail __attribute__((aligned(64)));   /* last tail seen (overwrite: = oldest); reloaded when the ring looks full */
	uint64_t kicked_tail;       /* tail at the last wake-up of the consumer     */
	/* Events dropped since the ring's last record, in any mode (a
	 * trigger's hold; a full ring in discard mode, or in block mode with
	 * no consumer; a record larger than the ring): the current hole, not
	 * yet noted in the ring header's gaps (ring_note_gap(): at the next
	 * record).  Written by the producer only, on its line (every drop
	 * adds one, count_hole(): a release store after the loss count's) and
	 * atomically, since the consumer (once per drain) and snapshots (with
	 * acquire) read it to leave out losses after the last record they
	 * write. */
	uint64_t pending_gap;
	/* head - cached_tail above this: see whether to wake the consumer
	 * (capacity / 2; never in overwrite mode, where nobody drains). */
	uint64_t kick_threshold;
	/* Overwrite mode: the ring is cut into TRACER_OVERWRITE_CHUNKS chunks;
	 * chunk_first[k] is the position of the first record that starts in
	 * chunk k in its latest cycle, chunk_events[k] that record's event
	 * index (hdr->events before it).  Dropping the oldest records is then
	 * a jump to the next chunk's first record, with an exact count, and
	 * never a walk over every record's header. */
	uint64_t oldest_events;     /* event index of the record at cached_tail     */
	uint64_t chunk_first[TRACER_OVERWRITE_CHUNKS];
	uint64_t chunk_events[TRACER_OVERWRITE_CHUNKS];
	/* Consumer-private.  stream_fd is -1 from ring_create() until the
	 * consumer opens the stream file (0 in a ring never created: such a
	 * ring is not ready, and nothing reads it; see session_alloc()). */
	int stream_fd __attribute__((aligned(64)));
	uint64_t stream_ino, stream_dev;   /* identity of stream_fd's file         */
	uint64_t last_ts;           /* timestamp of the last event written           */
	/* Losses before the next record that the packets written so far do
	 * not report (records the consumer dropped; see drain_ring()). */
	uint64_t consumer_owed;
	/* CLOCK_MONOTONIC ns of the first of the current run of failures to
	 * create or write the stream file; 0: none (consumer.c). */
	uint64_t write_fail_ns;
	/*
	 * Snapshot triggers: set (plain store) by the ring's own producer when
	 * one of its events fired a trigger whose request it published; while
	 * set, make_room() drops new events (counted lost) instead of
	 * overwriting the oldest, so the records up to the trigger stay until
	 * the consumer has copied them; it clears it (release store) after the
	 * copy, which the producer loads with acquire.  drain_ring() leaves a
	 * held ring alone (a thread that exits after its trigger).
	 */
	int hold;
	uint64_t hold_lost;         /* events so dropped (producer-owned; relaxed)   */
	/*
	 * The owner's name for the packets the consumer writes: read from
	 * /proc/self/task/TID/comm (renames show within a second), else the
	 * name the owner stored when it claimed the ring.  name_words are
	 * written by the consumer with relaxed atomics (a snapshot may read
	 * them meanwhile); name_tid and name_read_ns are consumer-private.
	 */
	uint64_t name_words[2];
	uint32_t name_tid;
	uint64_t name_read_ns;
};

struct tracer_session {
	uint64_t generation;        /* unique per session in this process, never 0 */
	char *base_dir;             /* the directory the user gave                 */
	char *dir;                  /* base_dir/pid-<pid>: this process's trace     */
	/*
	 * Descriptors of base_dir and dir, opened when the session starts
	 * (after the ownership and mode checks): every file of the trace is
	 * created relative to them, so a path swapped later is never followed.
	 * Use them through tracer_base_fd()/tracer_dir_fd(), which notice a
	 * program that closed them (daemons close every descriptor) and open
	 * the directory again.  Written under control_mutex or, when the
	 * descriptor was lost, by an atomic compare-and-swap (see session.c).
	 */
	int base_fd, dir_fd;
	uint64_t base_dev, base_ino, dir_dev, dir_ino;
	enum mark_trace_mode mode;
	uint64_t buffer_size;
	char **globs;
	size_t nglobs;
	pid_t pid;
	uint8_t trace_uuid[16];
	struct tracer_clock clock;

	/* rings[0 .. next_index) may be in use; check `ready`. */
	struct tracer_ring rings[TRACER_MAX_RINGS];
	unsigned next_index;        /* atomic fetch_add on ring creation           */
	/* Indices below next_index whose ring could not be created (bit i % 64
	 * of word i / 64), taken again by the next creation: a failure (no
	 * descriptor, disk full) must not use up the 4096 indices for good.
	 * Atomic fetch_or / fetch_and, ring creation only. */
	uint64_t free_index_bits[TRACER_MAX_RINGS / 64];
	unsigned no_ring_warned;    /* atomic exchange: one warning per session    */
	/* Events that had no buffer are counted in stats->lost_no_ring (probe.c,
	 * count_lost_no_ring()); their stream file (write_no_ring_losses(),
	 * consumer-private): */
	int loss_fd;
	uint64_t loss_ino, loss_dev, loss_seq, loss_bytes, loss_last_ts, loss_written_ns;
	uint64_t loss_reported;     /* events_discarded of its last packet           */

	/* Consumer */
	pthread_t consumer;
	bool consumer_started;      /* atomic: may be set by a producer (lazy start) */
	/*
	 * The stop of a session reaches the processes forked while it ran:
	 * one shared anonymous word per session family (MAP_SHARED, so fork
	 * shares it; exec drops it), set (release) by the root session -- the
	 * one mark_tracer_start or MARK_TRACE started -- when it is stopped,
	 * read (acquire) by the descendants' consumers and slow paths, which
	 * then stop their own sessions.  NULL if the page could not be mapped.
	 */
	uint32_t *family_stop;
	bool family_root;           /* this process started the session          */
	bool from_env;              /* MARK_TRACE: exit does not stop the family */
	int consumer_lazy;          /* atomic: a forked child's consumer starts at the
				     * first kick (see tracer_consumer_start_lazy)  */
	int consumer_alive;         /* producers in block mode wait only while set  */
	int stopping;
	int consumer_waiting;       /* consumer is (about to be) asleep on `kick`   */
	int kick;                   /* futex word                                   */

	/* What this session's start created: the statistics file (by its
	 * identity) and DIR/pid-P.  A start that fails removes them, and
	 * nothing else (tracer_stats_remove, session.c undo_start). */
	bool stats_made, dir_made;
	uint64_t stats_dev, stats_ino;

	/* Consumer-private bookkeeping */
	struct mark_tf_stats *stats;
	size_t stats_map_size;
	unsigned stats_entries;     /* entries mapped (not the file's max_entries) */
	/* The two counted sets in the stats mapping, and the one committed
	 * (tracer_counted_commit()); never read back from the file. */
	struct mark_tf_counted *counted;
	unsigned counted_set;
	uint64_t *marker_counts;    /* by id, events written                        */
	unsigned marker_counts_cap;
	unsigned described;         /* ids 0..described-1 are in metadata           */
	uint64_t events_written;
	uint64_t lost_written;      /* losses reported in packets (discarded counts) */
	uint64_t bytes_written;
	uint64_t last_refine_ns;
	bool write_error_reported;
	bool write_retry_reported;  /* may_retry_write()'s warning was printed      */
	/*
	 * Chunks (chunks.c, docs/tracer.md).  Configuration (set before the
	 * consumer starts, read-only after), then consumer-private state: only
	 * the consumer thread, or stop once it is joined, touches it.
	 */
	uint64_t max_size;          /* 0: no deletion                              */
	uint64_t chunk_size;        /* cut after this many bytes; 0: no size cut    */
	uint64_t rotate_ns;         /* cut after this long; 0: no time cut          */
	uint64_t chunk_base_bytes;  /* bytes_written when the live chunk began      */
	uint64_t chunk_base_events; /* events_written then                          */
	uint64_t chunk_base_lost;   /* lost_written then                            */
	uint64_t chunk_start_ns;
	unsigned chunk_next;        /* K of the next sealed DIR/pid-P.chunk-K       */
	unsigned nchunks;           /* sealed chunks still on disk (max_size only)   */
	struct tracer_chunk {
		unsigned k;
		uint64_t bytes, events, lost, dev, ino;
	} chunks[TRACER_MAX_CHUNKS];
	uint64_t rotated_events, rotated_lost, rotated_chunks;
	/* Set when the first chunk is sealed: from then on the clock is not
	 * refined.  Every chunk is a trace of the same UUID, which readers
	 * merge stream by stream; a sealed chunk's metadata keeps the clock it
	 * was written with, so a later frequency in the live chunk would move
	 * its events against the sealed ones (babeltrace2 refused the merged
	 * trace: "timestamp is less than ... last returned timestamp"). */
	bool clock_frozen;
	bool rotated_created;       /* DIR/pid-P/.mark-chunks made (write_rotated)  */
	bool chunk_error_reported;
	/*
	 * Snapshot triggers (--snapshot-on, snapshot.c, docs/tracer.md
	 * "Triggers").  The request slot: a producer whose event fires the
	 * trigger claims it with a CAS of trig_state from TRIG_FREE to
	 * TRIG_FILLING (slow path, rare: once per trigger, never per event),
	 * writes trig_ring/trig_end/trig_ts (plain stores), then stores
	 * TRIG_PENDING with release and kicks the consumer; the consumer loads
	 * it with acquire (so it sees the three fields and the ring's hold),
	 * writes the snapshot, clears the hold (release) and stores TRIG_FREE
	 * (release).  Configuration (max_snapshots, snapshot_interval_ticks)
	 * is set before the session is published and read-only after.
	 * trig_closed and trig_quiet_until are written by the consumer alone
	 * (relaxed) and read by producers (relaxed): a stale value costs one
	 * request that the consumer then refuses itself, never a wrong
	 * snapshot.  The counters are atomic adds (producers and consumer).
	 */
	int trig_state;
	unsigned trig_ring;         /* index of the ring holding the trigger event   */
	uint64_t trig_end;          /* its position just after the trigger record     */
	uint64_t trig_ts;           /* the trigger event's timestamp                 */
	uint64_t trig_lost;         /* its ring's lost count just after the trigger    */
	unsigned max_snapshots;     /* 0: triggers off                               */
	uint64_t snapshot_interval_ms;
	uint64_t snapshot_interval_ticks;   /* the same in clock ticks                */
	int trig_closed;            /* max_snapshots written: triggers only count    */
	uint64_t trig_quiet_until;  /* no snapshot for a trigger stamped before this */
	uint64_t snapshots;         /* atomic: written                                */
	uint64_t trig_busy;         /* atomic: fired while another was being written  */
	uint64_t trig_over_max;     /* atomic: fired after max_snapshots were written */
	uint64_t trig_in_interval;  /* atomic: fired within snapshot_interval        */
	uint64_t trig_failed;       /* atomic: the snapshot could not be written      */
	unsigned snapshot_next;     /* consumer: N of the next DIR/snapshot-N to try  */
	bool snapshot_error_reported;
};

enum { TRIG_FREE = 0, TRIG_FILLING = 1, TRIG_PENDING = 2 };

/* How many of s->rings may be in use.  Relaxed: a ring created meanwhile
 * is seen on the next pass; its `ready` flag says whether it is usable. */
static inline unsigned tracer_ring_count(struct tracer_session *s)
{
	unsigned n = __atomic_load_n(&s->next_index, __ATOMIC_RELAXED);
	return n < TRACER_MAX_RINGS ? n : TRACER_MAX_RINGS;
}

/*
 * For each ring of s whose fields are published (acquire load of `ready`,
 * paired with ring_create()'s release store); `continue` and `break` work
 * as in a plain for loop.
 */
#define tracer_for_each_ring(s, r)                                                           \
	for (unsigned tracer__i = 0, tracer__n = tracer_ring_count(s); tracer__i < tracer__n; \
	     tracer__i++)                                                                    \
		if (!__atomic_load_n(&((r) = &(s)->rings[tracer__i])->ready, __ATOMIC_ACQUIRE)) { \
		} else

/* The active session of this process, or NULL.  Loaded by the slow path. */
extern MARK_HIDDEN struct tracer_session *tracer_current;
/* Its generation, or TRACER_NO_GENERATION: all the fast path loads (it
 * compares it with the thread's cached ring).  Set with tracer_current by
 * tracer_set_current(). */
#define TRACER_NO_GENERATION UINT64_MAX
extern MARK_HIDDEN uint64_t tracer_current_generation;
MARK_HIDDEN void tracer_set_current(struct tracer_session *s);

MARK_HIDDEN void tracer_probe(const struct mark_marker *m, void *priv, const uint64_t *args);
MARK_HIDDEN void tracer_probe_init(void);
/* Release the calling thread's rings (thread exit, fork child). */
MARK_HIDDEN void tracer_thread_release(void);
MARK_HIDDEN void tracer_thread_forget(void);
/* Events the calling thread sent through the probe's slow path (tests
 * check that ordinary events do not; diagnostic, per thread). */
MARK_HIDDEN uint64_t tracer_thread_slow_events(void);
MARK_HIDDEN void tracer_kick_consumer(struct tracer_session *s);

/* ---- consumer.c ---- */
MARK_HIDDEN int tracer_consumer_start(struct tracer_session *s);
MARK_HIDDEN void tracer_consumer_start_lazy(struct tracer_session *s);
MARK_HIDDEN int tracer_session_stop_by_family(struct tracer_session *s);
/* mark_trace_recover() on an open directory (path: for messages only). */
MARK_HIDDEN int tracer_trace_recover_at(int fd, const char *path);

/* Has the root of this session's family been stopped (a forked child's view)? */
static inline bool tracer_family_stopped(const struct tracer_session *s)
{
	return !s->family_root && s->family_stop && __atomic_load_n(s->family_stop, __ATOMIC_ACQUIRE);
}
MARK_HIDDEN void tracer_consumer_stop(struct tracer_session *s);
/* Drain every ring completely (no producer may run). */
MARK_HIDDEN void tracer_drain_all_final(struct tracer_session *s);
MARK_HIDDEN int tracer_stats_open(struct tracer_session *s);
/* Remove the statistics file tracer_stats_open() created, if it is still
 * the one under that name in the directory dirfd (a start that failed). */
MARK_HIDDEN void tracer_stats_remove(struct tracer_session *s, int dirfd);
/* Events, lost events and buffers of every ready ring of the session, summed
 * with relaxed loads (counters each ring's producer or consumer updates). */
MARK_HIDDEN void tracer_sum_rings(struct tracer_session *s, uint64_t *events, uint64_t *lost,
				  uint64_t *buffers);
MARK_HIDDEN void tracer_stats_update(struct tracer_session *s, uint32_t state);
/* Commit the counts with the stream lengths they include, for recovery
 * (mark_tf_counted, trace_format.h).  Consumer thread (or after it). */
MARK_HIDDEN void tracer_counted_commit(struct tracer_session *s);
/*
 * Rewrite the metadata if markers registered since it was written, and
 * raise .mark-stats' markers_described at once.  The consumer, and the
 * thread that registers an object (session.c's hook); under
 * tracer_fork_guard.
 */
MARK_HIDDEN void tracer_describe_markers(struct tracer_session *s);

/*
 * Where packets go: a stream file, its identity, and (for live rings and
 * recovery) the ring header whose consumer fields carry the per-packet
 * commit protocol (trace_format.h).
 */
struct tracer_packet_sink {
	int fd;
	const uint8_t *uuid;
	uint32_t index, tid;
	char thread_name[16];       /* the packets' thread_name (cleaned, zero-padded) */
	uint64_t seq;               /* packet_seq_num of the next packet            */
	uint64_t stream_bytes;      /* committed stream length                      */
	struct mark_tf_ring *commit; /* NULL: no commit protocol (snapshots)        */
	uint64_t lost;              /* events_discarded to put in the packets        */
	/* Holes inside the records written (ascending): from gaps->pos on,
	 * packets report lost + gaps->count (see tracer_ring_losses()). */
	const struct mark_tf_gap *gaps;
	unsigned ngaps;
	/* events_discarded already reported in earlier files of this stream
	 * (earlier chunks): a new file starts with an empty packet carrying it,
	 * so the losses in this file are differences a reader can see. */
	uint64_t lost_before;
	uint64_t *counts;           /* by id, incremented per event written; or NULL */
	unsigned counts_cap;        /* ids >= this are not in the metadata           */
	uint64_t events;            /* out: events written                          */
	uint64_t bytes;             /* out: bytes written                           */
	uint64_t last_ts;           /* in/out: timestamp of the last event written   */
	uint64_t freq;              /* the trace clock's ticks per second; 0: unknown */
	/* The ring's thread may still record after `end`: losses not yet
	 * reported when the records end wait for its next packet instead of
	 * an empty packet (whose stamp could come after that next record). */
	bool live;
};

/*
 * Write records [begin, end) of a ring image (`data`, `capacity`) as
 * packets.  Stops early at a record whose id is >= counts_cap or that is
 * damaged; *consumed is where it stopped.  Returns 0 or -errno (a failed
 * packet is cut off again, so the stream stays valid).
 */
MARK_HIDDEN int tracer_write_records(struct tracer_packet_sink *sink, const uint64_t *data,
				     uint64_t capacity, uint64_t begin, uint64_t end, uint64_t *consumed);
/*
 * Where the losses of a ring window [begin, end) go: `total` events lost
 * in all (the ring header's lost count, as loaded by the caller), of which
 * `pending` are known to follow the last record (a hole not yet noted).
 * Fills gaps (MARK_TF_RING_GAPS entries) with the holes strictly inside
 * the window, for tracer_packet_sink.gaps, and returns what the window's
 * first packet reports: total less those, less the holes at or after
 * `end` and `pending`.  Never below `floor` (what the stream already
 * reported): counts that do not add up give no gaps and `total`.
 * !later_in_total: `total` was loaded at `end` (a snapshot's trigger), so
 * the holes noted at or after `end` are not in it.
 * `live_owed` non-NULL: the ring's thread may still drop events, so
 * `total` and `pending` are not trusted; the first packet reports floor,
 * plus the hole noted at `begin`, plus *live_owed (counts that do not add
 * up: floor, no gaps).
 */
MARK_HIDDEN uint64_t tracer_ring_losses(const struct mark_tf_ring *hdr, uint64_t begin, uint64_t end,
					uint64_t total, uint64_t pending, bool later_in_total, uint64_t floor,
					const uint64_t *live_owed, struct mark_tf_gap *gaps, unsigned *ngaps);
/* A packet without events: carries a new events_discarded value. */
MARK_HIDDEN int tracer_write_empty_packet(struct tracer_packet_sink *sink, uint64_t ring_pos);
/*
 * Ticks between two stamps near `ticks` on a clock of `freq` Hz (0:
 * unknown, taken as ns) that any reader sees as different nanoseconds,
 * also babeltrace2, which converts in double precision (its nanoseconds
 * are coarser than a tick beyond 2^53 ticks).  At least 8.
 */
MARK_HIDDEN uint64_t tracer_tick_gap(uint64_t freq, uint64_t ticks);
/* Number of records in [pos, end) (a damaged record ends the count). */
MARK_HIDDEN uint64_t tracer_count_records(const uint64_t *data, uint64_t capacity, uint64_t pos,
					  uint64_t end);

/* ---- chunks.c ---- */
/* After a drain pass: seal the live chunk if it is due, delete the oldest
 * under max_size.  Consumer thread only. */
MARK_HIDDEN void tracer_chunks_tick(struct tracer_session *s, uint64_t now_ns);
MARK_HIDDEN void tracer_chunks_close(struct tracer_session *s);
/* The session's chunk configuration from a start config; -errno (error set). */
MARK_HIDDEN int tracer_chunks_config(struct tracer_session *s, const struct tracer_chunk_limits *limits);
/* Remove the trace files (names the tracer writes, regular, this euid) in fd,
 * and empty pid-N sub-directories (session.c). */
MARK_HIDDEN void tracer_clean_trace_dir(int fd, int depth);

/* ---- metadata.c ---- */
/* Write metadata into the directory dirfd (named dir in messages),
 * atomically: a new temp file, then rename, never through a link; it describes marker
 * ids 0 .. count-1.  Takes the registry lock. */
MARK_HIDDEN int tracer_metadata_write(int dirfd, const char *dir, const struct tracer_session *s,
				      const uint8_t *trace_uuid, unsigned *described);

/*
 * Held by the consumer thread while it allocates memory (metadata writes)
 * or refines the clock, by snapshots while they read the clock, and by
 * fork's prepare handler (so the child copies a consistent clock): a child must not inherit an allocator lock
 * held by the parent's consumer (glibc's malloc is fork-safe, but
 * sanitizer allocators are not).  Order: fork_guard, then registry lock.
 */
extern MARK_HIDDEN pthread_mutex_t tracer_fork_guard;
/* tracer_fork_guard is taken by the fork prepare handler: warnings raised
 * under it are written once it is released (mark_warn_hold). */
static inline void tracer_fork_guard_lock(void)
{
	pthread_mutex_lock(&tracer_fork_guard);
	mark_warn_hold();
}

static inline void tracer_fork_guard_unlock(void)
{
	pthread_mutex_unlock(&tracer_fork_guard);
	mark_warn_release();
}

/* ---- small helpers (session.c) ---- */
MARK_HIDDEN uint64_t tracer_realtime_ns(void);
MARK_HIDDEN uint64_t tracer_monotonic_ns(void);
/* "DIR/NAMEnum" into buf, or "NAMEnum" when dir is NULL (async-signal-safe). */
MARK_HIDDEN void tracer_path(char *buf, size_t len, const char *dir, const char *name, long num);
MARK_HIDDEN int tracer_write_full(int fd, const void *buf, size_t len);
/* The session's directory descriptors, checked (see struct tracer_session);
 * -errno if the directory cannot be opened again. */
MARK_HIDDEN int tracer_dir_fd(struct tracer_session *s);
MARK_HIDDEN int tracer_base_fd(struct tracer_session *s);

/* ---- field names (metadata.c) and filters (filter_probe.c) ---- */
#define TRACER_FIELD_NAME_MAX 128
/*
 * The CTF field names of a marker's n arguments, names[0..n), and of the
 * length byte of each %s argument, names[n + i] (names has room for 2n):
 * the names the trace shows, and so the names a --filter expression uses.
 */
MARK_HIDDEN void tracer_field_names(const struct mark_arg *args, unsigned n,
				    char (*names)[TRACER_FIELD_NAME_MAX]);

struct mark_filter;
/*
 * The session's filter (`--filter`, MARK_FILTER, `mark enable --filter`)
 * with, per marker id, how its fields bind to the marker's argument slots
 * (see filter_probe.c).  Published by tracer_filter_set() with a release
 * store; the probe loads it (acquire) inside the read-side critical
 * section mark__fire holds, and a replaced filter is freed only after a
 * grace period.  NULL: every event is recorded.
 */
struct tracer_filter {
	struct mark_filter *filter;   /* NULL: a trigger without "if" (always true)  */
	/* Triggers only: the marker glob; markers it does not match bind to
	 * "missing" (never trigger).  NULL for --filter. */
	char *glob;
	/* "FIELD OP N" (mark_filter_simple): judged without the evaluator. */
	bool simple;
	int simple_op;
	uint64_t simple_value;
	uint64_t bind[MARK_TF_MAX_ID + 1];
};
extern struct tracer_filter *tracer_filter;
/*
 * Nonzero while a filter or a snapshot trigger is installed: the fast
 * path's one word (relaxed load) before it leaves for the code that judges
 * events.  Written by filter_install() (callers serialise) with release
 * after the pointer it describes; a probe that reads it 0 while a filter
 * is being installed is an event racing with the installation, which may
 * go either way (tracer_filter_set()).  A session installs both before it
 * registers its probe, so no event of it is ever recorded unjudged.
 */
extern int tracer_judging;
/* Parse `text` (NULL or "": no filter) and make it the filter, replacing
 * (and, after a grace period, freeing) the previous one.  Not from a
 * probe; callers serialise (control_mutex).  0, or -EINVAL/-ENOMEM with
 * mark_last_error() saying "<what>: column N: ...". */
MARK_HIDDEN int tracer_filter_set(const char *text, const char *what);
/* Should the event not be recorded?  The probe's side; no lock, no
 * allocation. */
/*
 * The session's snapshot trigger (--snapshot-on): a tracer_filter whose
 * glob selects the markers that carry it; published, read and retired
 * exactly as tracer_filter (same rules), by tracer_trigger_set() (spec
 * NULL or "": none).  -EINVAL with "column N" for a bad spec.
 */
extern struct tracer_filter *tracer_trigger;
MARK_HIDDEN int tracer_trigger_set(const char *spec, const char *what);
/* Would tracer_trigger_set() accept spec?  Installs nothing. */
MARK_HIDDEN int tracer_trigger_check(const char *spec, const char *what);
/*
 * The consumer's side of a trigger request (snapshot.c; the consumer
 * calls it at the start of each pass, before it drains any ring): write
 * DIR/snapshot-N/pid-P if a request is pending, then release the ring's
 * hold and the request slot.
 */
MARK_HIDDEN void tracer_trigger_service(struct tracer_session *s);
/* A new random trace UUID (session.c). */
MARK_HIDDEN void tracer_new_uuid(uint8_t *u);
/* The name of thread `tid`, owner of r, for a packet (consumer.c): the
 * consumer's last reading if it is of that thread, else the ring's. */
MARK_HIDDEN void tracer_ring_thread_name(const struct tracer_ring *r, uint32_t tid, char out[16]);
/*
 * Write the session's buffers as a CTF trace into the directory dirfd
 * (named `directory` in messages), with a new trace UUID.  `cut` NULL:
 * everything each buffer holds now (`mark snapshot`); otherwise the
 * snapshot ends with a trigger event: its ring up to cut_end (copied
 * first, then its hold is released), the other rings up to their last
 * event stamped before cut_ts; cut_lost is the trigger ring's lost count
 * at the trigger (what its stream reports).  0 or -errno.
 */
MARK_HIDDEN int tracer_snapshot_write(struct tracer_session *s, int dirfd, const char *directory,
				      struct tracer_ring *cut_ring, uint64_t cut_end, uint64_t cut_ts,
				      uint64_t cut_lost);
MARK_HIDDEN bool tracer_filter_rejects(struct tracer_filter *tf, const struct mark_marker *m,
				       const uint64_t *args);

#endif
