/*
 * The tracer's fast probe: records one event into the calling thread's ring.
 *
 * Hot path (no string arguments, room in the ring): a relaxed load of the
 * session's generation, compared with the thread's cached copy of its ring
 * (struct hot_ring, initial-exec TLS, one per nesting depth); the head;
 * one comparison for room; the counter (rdtsc; aarch64: isb and CNTVCT_EL0,
 * tracer_counter()); the CPU number (one load from the rseq area; on
 * x86-64 without rseq rdpid, or on CPUs without it one rdtscp for both
 * timestamp and CPU; aarch64 without rseq has no such instruction and
 * takes the slow path); 2 + nargs
 * relaxed 64-bit stores of contiguous words; a release store of head (a
 * plain store on x86-64) and a store of the event counter.  No lock, no
 * atomic read-modify-write, no system call, no call.  Everything else
 * (first event of a thread or a marker, strings, a ring that is full, past
 * half full or about to wrap, a new overwrite chunk) takes the slow path,
 * which refills the cached copy.
 *
 * Signal handlers: a thread has one ring per signal nesting depth.  The
 * probe bumps a thread-local depth counter on entry (compiler barrier via
 * atomic_signal_fence: a handler runs on the same thread, so only the
 * compiler can reorder against it) and uses ring[depth].  A handler that
 * interrupts the probe therefore writes another ring, and each ring keeps
 * exactly one writer at any moment.  Deeper than TRACER_MAX_NESTING: the
 * event is counted lost.
 *
 * Everything the slow path does (claim a ring, create one: open,
 * fallocate, mmap) uses only async-signal-safe calls and lock-free
 * updates, so a marker may fire in a signal handler, even the thread's
 * very first one.
 *
 * Overwrite-mode snapshots read a ring while its producer writes it, as a
 * seqlock reader: the producer stores `oldest` (the first record it has
 * not overwritten), issues a release fence, and only then overwrites
 * bytes; all data stores are relaxed atomics, so the reader, after copying
 * and an acquire fence, re-reads `oldest` and keeps only [oldest, head).
 */
#define _GNU_SOURCE
#define _LGPL_SOURCE
#include "tracer_internal.h"
#include "util/printable.h"
#include "util/safe_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <urcu-bp.h>
#include "core/rcu.h"
#if defined(__x86_64__)
#include <x86intrin.h>
#endif
#if __has_include(<sys/rseq.h>)
#include <sys/rseq.h>
#endif

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

struct tracer_session *tracer_current;
uint64_t tracer_current_generation = TRACER_NO_GENERATION;

/*
 * Publish or retire the session.  A probe that sees the new generation
 * takes the slow path (no thread's cached ring has it yet), which loads
 * tracer_current with acquire; so the generation needs no ordering of its
 * own beyond coming after tracer_current when a session starts.  When it
 * stops, both are retired before the grace period that precedes freeing.
 */
void tracer_set_current(struct tracer_session *s)
{
	if (s) {
		/* Release: the session's fields are visible before s is. */
		__atomic_store_n(&tracer_current, s, __ATOMIC_RELEASE);
		__atomic_store_n(&tracer_current_generation, s->generation, __ATOMIC_RELEASE);
	} else {
		__atomic_store_n(&tracer_current_generation, TRACER_NO_GENERATION, __ATOMIC_RELAXED);
		__atomic_store_n(&tracer_current, NULL, __ATOMIC_RELEASE);
	}
}
#ifdef MARK_TSAN
int tracer_fence_word;
#endif

/*
 * Per-thread state.  initial-exec TLS: one %fs-relative load, no
 * __tls_get_addr call (libmark is loaded at program start; a dlopen of
 * libmark still works while the static TLS surplus lasts).
 */
/*
 * What the fast path needs of the ring at one nesting depth, copied out of
 * struct tracer_ring so that an event costs no pointer chasing and one
 * comparison for room.  Filled by hot_fill() after every slow-path visit;
 * generation 0 sends the next event to the slow path.  Only the owning
 * thread (and its signal handlers, each at its own depth) touches it.
 */
struct hot_ring {
	uint64_t generation;        /* the session's, or 0                         */
	struct mark_tf_ring *hdr;
	uint64_t *data;
	uint64_t mask;              /* capacity / 8 - 1: ring words                 */
	/* A record may take the fast path if head + size <= limit: it fits by
	 * the cached tail, it does not wrap around the ring's end, and in
	 * overwrite mode it does not start a new chunk. */
	uint64_t limit;
} __attribute__((aligned(64)));   /* one cache line each, and indexing is a shift */

struct thread_rings {
	struct hot_ring hot[TRACER_MAX_NESTING];   /* first: no padding before it */
	struct tracer_ring *rings[TRACER_MAX_NESTING];
	/* The session rings[] belong to, by generation: a new session may be
	 * allocated at the address of a freed one, a generation never repeats. */
	uint64_t generation;
	/* This thread's rseq cpu_id (kernel-updated), or NULL: current_cpu() below. */
	const uint32_t *rseq_cpu;
	unsigned depth;
	bool key_set;
	/* After a failed ring creation in session `no_ring_generation`, none
	 * is tried again before no_ring_retry (CLOCK_MONOTONIC_COARSE, ns):
	 * retried on every event, the creation's system calls were the cost
	 * of each one. */
	uint64_t no_ring_generation, no_ring_retry;
	/* Events that went through record_slow(): a plain per-thread count
	 * (slow path only; a signal handler's increment between our load and
	 * store may be lost, acceptable for a diagnostic). */
	uint64_t slow_events;
};
/*
 * x86-64: initial-exec.  aarch64: the default model, which gcc compiles
 * with TLS descriptors (the resolver returns a static offset once libmark
 * is in static TLS): glibc's static TLS surplus for dlopen (512 bytes) has
 * no room there for this 64-byte-aligned block next to liburcu-bp's, and
 * a dlopen'd plug-in that needs libmark failed to load (test
 * test_dlopen_libmark under make test-aarch64).
 */
#if defined(__x86_64__)
#define TRACER_TLS_MODEL __attribute__((tls_model("initial-exec")))
#else
#define TRACER_TLS_MODEL
#endif
static __thread struct thread_rings tls TRACER_TLS_MODEL;

static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

static void thread_exit_destructor(void *unused)
{
	(void)unused;
	tls.key_set = false;
	tracer_thread_release();
}

static void make_exit_key(void)
{
	if (pthread_key_create(&exit_key, thread_exit_destructor) != 0)
		exit_key = (pthread_key_t)-1;
}

void tracer_probe_init(void)
{
	pthread_once(&exit_key_once, make_exit_key);
}

static inline uint64_t now_ticks(void)
{
#if TRACER_HAVE_COUNTER
	if (likely(tracer_clock_is_tsc))
		return tracer_counter();
#endif
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint32_t current_cpu(void)
{
#if TRACER_HAVE_RSEQ
	if (likely(tracer_cpu_source == CPU_RSEQ)) {
		const struct rseq *rs = (const struct rseq *)(tracer_thread_pointer() + __rseq_offset);
		uint32_t cpu = __atomic_load_n(&rs->cpu_id, __ATOMIC_RELAXED);
		if (likely(cpu != (uint32_t)-1 && cpu != (uint32_t)-2))
			return cpu;
		int c = sched_getcpu();
		return c < 0 ? 0 : (uint32_t)c;
	}
#endif
#if defined(__x86_64__)
	if (tracer_cpu_source == CPU_RDPID)
		return tracer_rdpid() & 0xfff;
	if (tracer_cpu_source == CPU_RDTSCP) {
		unsigned aux;
		__rdtscp(&aux);
		return aux & 0xfff;
	}
#endif
	int c = sched_getcpu();
	return c < 0 ? 0 : (uint32_t)c;
}

static inline void ring_put(uint64_t *data, uint64_t mask_words, uint64_t word, uint64_t v)
{
	__atomic_store_n(&data[word & mask_words], v, __ATOMIC_RELAXED);
}

void tracer_kick_consumer(struct tracer_session *s)
{
	tracer_consumer_start_lazy(s);   /* a forked child's first kick starts its consumer */
	/* Pairs with the consumer's seq_cst fence between setting
	 * consumer_waiting and its last check for work (consumer.c). */
	TRACER_FENCE(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&s->consumer_waiting, __ATOMIC_RELAXED)) {
		__atomic_store_n(&s->kick, 1, __ATOMIC_RELAXED);
		syscall(SYS_futex, &s->kick, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
}

static void count_lost_no_ring(struct tracer_session *s)
{
	/* Slow path only (no ring at all): atomic read-modify-writes are
	 * fine here.  In the statistics file's mapping (mapped before s was
	 * published, unmapped only after the grace period that ends the
	 * session), so that a recovery after SIGKILL finds every one: see
	 * mark_tf_stats.lost_no_ring.  Relaxed: nothing else is published
	 * with them; the stamp only ever rises (CAS loop), so it is at or
	 * after the last drop counted. */
	struct mark_tf_stats *st = s->stats;
	__atomic_fetch_add(&st->lost_no_ring, 1, __ATOMIC_RELAXED);
	const uint64_t now = now_ticks();
	uint64_t seen = __atomic_load_n(&st->lost_no_ring_ts, __ATOMIC_RELAXED);
	while (seen < now && !__atomic_compare_exchange_n(&st->lost_no_ring_ts, &seen, now, true,
							 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* ---- ring creation and claiming (slow path, async-signal-safe) ---- */

/*
 * The calling thread becomes the ring's owner: its tid, and its name now
 * (one prctl, once per thread and session: never on the per-event path)
 * for the packets' thread_name and for recovery.  Relaxed stores: the
 * consumer and recovery read the words relaxed, and a name torn by a
 * concurrent claim is still 16 cleaned bytes.
 */
static void ring_set_owner(struct mark_tf_ring *hdr)
{
	char raw[16] = { 0 }, name[16];
	if (prctl(PR_GET_NAME, raw, 0, 0, 0) != 0)
		raw[0] = '\0';
	mark_thread_name_clean(name, raw, sizeof(raw));
	uint64_t w[2];
	memcpy(w, name, sizeof(w));
	__atomic_store_n(&hdr->thread_name[0], w[0], __ATOMIC_RELAXED);
	__atomic_store_n(&hdr->thread_name[1], w[1], __ATOMIC_RELAXED);
	__atomic_store_n(&hdr->tid, (uint32_t)syscall(SYS_gettid), __ATOMIC_RELAXED);
}

/* A ring index: one a failed creation gave back, else the next new one;
 * TRACER_MAX_RINGS when all are used. */
static unsigned take_index(struct tracer_session *s)
{
	for (unsigned w = 0; w < TRACER_MAX_RINGS / 64; w++) {
		uint64_t bits = __atomic_load_n(&s->free_index_bits[w], __ATOMIC_RELAXED);
		while (bits) {
			const uint64_t bit = bits & (0 - bits);
			const uint64_t old = __atomic_fetch_and(&s->free_index_bits[w], ~bit, __ATOMIC_RELAXED);
			if (old & bit)
				return w * 64 + (unsigned)__builtin_ctzll(bit);
			bits = old & ~bit;   /* another creator took it */
		}
	}
	unsigned index = __atomic_fetch_add(&s->next_index, 1, __ATOMIC_RELAXED);
	if (index >= TRACER_MAX_RINGS) {
		__atomic_store_n(&s->next_index, TRACER_MAX_RINGS, __ATOMIC_RELAXED);
		return TRACER_MAX_RINGS;
	}
	return index;
}

/* The system's reason in words, without strerror() (not async-signal-safe). */
static const char *errno_text(int err)
{
	switch (err) {
	case EMFILE: return "too many open files in the process (EMFILE)";
	case ENFILE: return "too many open files in the system (ENFILE)";
	case ENOSPC: return "no space left on the device (ENOSPC)";
	case EDQUOT: return "disk quota exceeded (EDQUOT)";
	case ENOMEM: return "out of memory (ENOMEM)";
	case EACCES: return "permission denied (EACCES)";
	case EEXIST: return "the file exists (EEXIST)";
	case ENOENT: return "the trace directory is gone (ENOENT)";
	case EOPNOTSUPP: return "fallocate is not supported there (EOPNOTSUPP)";
	default: return "a system call failed";
	}
}

/*
 * Creating this thread's ring failed: give the index back, back off, and
 * say so once per session.  Its events are counted lost (lost_no_ring).
 */
static void ring_create_failed(struct tracer_session *s, unsigned index, const char *what, const char *path,
			       int err)
{
	__atomic_fetch_or(&s->free_index_bits[index / 64], UINT64_C(1) << (index % 64), __ATOMIC_RELAXED);
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
	tls.no_ring_generation = s->generation;
	tls.no_ring_retry = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec + TRACER_NO_RING_BACKOFF_NS;
	if (__atomic_exchange_n(&s->no_ring_warned, 1, __ATOMIC_RELAXED))
		return;
	const char *const parts[] = {
		"mark: tracer cannot ", what, " ", path, ": ", errno_text(err),
		"; events of threads without a buffer are lost and counted (the summary, .mark-stats); "
		"a thread tries again after 100 ms; said once per recording\n",
	};
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		ssize_t w = write(2, parts[i], strlen(parts[i]));   /* async-signal-safe */
		(void)w;
	}
}

/* Whether this thread's last ring creation failed less than the back-off ago. */
static bool ring_create_backing_off(const struct tracer_session *s)
{
	if (tls.no_ring_generation != s->generation || !tls.no_ring_retry)
		return false;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
	return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec < tls.no_ring_retry;
}

static struct tracer_ring *ring_create(struct tracer_session *s, unsigned nesting)
{
	if (ring_create_backing_off(s))
		return NULL;
	const unsigned index = take_index(s);
	if (index >= TRACER_MAX_RINGS)
		return NULL;
	char path[4096], name[64];
	tracer_path(path, sizeof(path), s->dir, MARK_TF_RING_PREFIX, index);
	tracer_path(name, sizeof(name), NULL, MARK_TF_RING_PREFIX, index);
	/* A new file (O_EXCL, 0600, never through a link) in the session's
	 * directory; tracer_dir_fd() makes only system calls. */
	const int dfd = tracer_dir_fd(s);
	int fd = dfd < 0 ? dfd : mark_file_create_at(dfd, name, O_RDWR);
	if (fd < 0) {
		ring_create_failed(s, index, "create a thread's buffer file", path, -fd);
		return NULL;
	}
	size_t total = MARK_TF_RING_HEADER_SIZE + s->buffer_size;
	/*
	 * Reserve the blocks now: a store into a hole of a shared mapping on a
	 * full file system raises SIGBUS in the traced program.
	 */
	if (fallocate(fd, 0, 0, (off_t)total) != 0) {
		const int err = errno;
		close(fd);
		unlinkat(dfd, name, 0);
		ring_create_failed(s, index, "reserve space for a thread's buffer file", path, err);
		return NULL;
	}
	void *map = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	const int map_err = errno;
	close(fd);
	if (map == MAP_FAILED) {
		unlinkat(dfd, name, 0);
		ring_create_failed(s, index, "map a thread's buffer file", path, map_err);
		return NULL;
	}
	tracer_map_no_readahead(map, total);
	struct mark_tf_ring *hdr = map;
	/* The file is fresh (zero-filled): only non-zero fields need storing. */
	hdr->version = MARK_TF_RING_VERSION;
	hdr->header_size = MARK_TF_RING_HEADER_SIZE;
	hdr->capacity = s->buffer_size;
	hdr->pid = s->pid;
	hdr->stream_index = index;
	hdr->mode = (uint32_t)s->mode;
	hdr->nesting = nesting;
	memcpy(hdr->trace_uuid, s->trace_uuid, 16);
	ring_set_owner(hdr);
	hdr->state = MARK_TF_RING_OWNED;
	/* Magic last: recovery ignores a ring whose header is incomplete. */
	TRACER_FENCE(__ATOMIC_RELEASE);
	memcpy(hdr->magic, MARK_TF_RING_MAGIC, 8);

	struct tracer_ring *r = &s->rings[index];
	r->hdr = hdr;
	r->data = (uint64_t *)((char *)map + MARK_TF_RING_HEADER_SIZE);
	r->capacity = s->buffer_size;
	r->index = index;
	r->nesting = nesting;
	r->cached_tail = 0;
	r->oldest_events = 0;
	memset(r->chunk_first, 0, sizeof(r->chunk_first));
	memset(r->chunk_events, 0, sizeof(r->chunk_events));
	r->kicked_tail = UINT64_MAX;
	r->kick_threshold = s->mode == MARK_TRACE_OVERWRITE ? UINT64_MAX : s->buffer_size / 2;
	r->stream_fd = -1;
	r->pending_gap = 0;
	r->consumer_owed = 0;
	r->write_fail_ns = 0;
	/* Publish to the consumer and to other claimers. */
	__atomic_store_n(&r->ready, 1, __ATOMIC_RELEASE);
	return r;
}

/*
 * Note where dropped events left a hole in the ring: before the record
 * that will start at `head` (mark_tf_ring.gaps, trace_format.h), so that
 * writers report the loss there, after the records that came before it,
 * and not before the first record they write.
 * Producer only (or the claimer of a ring whose last owner left a hole).
 * The entry first, then (release) gaps_next: a reader that acquires
 * gaps_next, or a head past `head`, sees the entry whole.  A reader may
 * race with the entry 16 gaps later overwriting this one; readers take
 * only entries inside the window they copied (see tracer_ring_losses()).
 */
static void ring_note_gap(struct tracer_ring *r, uint64_t head)
{
	struct mark_tf_ring *hdr = r->hdr;
	struct mark_tf_gap *g = &hdr->gaps[hdr->gaps_next % MARK_TF_RING_GAPS];
	__atomic_store_n(&g->pos, head, __ATOMIC_RELAXED);
	__atomic_store_n(&g->count, r->pending_gap, __ATOMIC_RELAXED);
	__atomic_store_n(&hdr->gaps_next, hdr->gaps_next + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&r->pending_gap, 0, __ATOMIC_RELAXED);
}

static struct tracer_ring *ring_claim(struct tracer_session *s, unsigned depth)
{
	if (tls.generation != s->generation) {
		/* Rings of an earlier session (or of the parent before fork). */
		memset(tls.rings, 0, sizeof(tls.rings));
		/* Only the generations: a probe this signal handler interrupted
		 * may be between its generation check and its loads of the
		 * other fields (RCU keeps what they point to mapped). */
		for (unsigned d = 0; d < TRACER_MAX_NESTING; d++)
			__atomic_store_n(&tls.hot[d].generation, 0, __ATOMIC_RELAXED);
		tls.generation = s->generation;
	}
#if TRACER_HAVE_RSEQ
	if (!tls.rseq_cpu && tracer_cpu_source == CPU_RSEQ) {
		const struct rseq *rs = (const struct rseq *)(tracer_thread_pointer() + __rseq_offset);
		uint32_t cpu = __atomic_load_n(&rs->cpu_id, __ATOMIC_RELAXED);
		if (cpu != (uint32_t)-1 && cpu != (uint32_t)-2)
			tls.rseq_cpu = &rs->cpu_id;   /* registered: the kernel keeps it current */
	}
#endif
	if (!tls.key_set && exit_key != (pthread_key_t)-1) {
		/* glibc keeps the first 32 keys' values in the thread descriptor:
		 * no allocation, so this is safe in a signal handler too. */
		pthread_setspecific(exit_key, (void *)1);
		tls.key_set = true;
	}
	struct tracer_ring *r;
	tracer_for_each_ring(s, r) {
		if (r->nesting != depth)
			continue;
		uint32_t expected = MARK_TF_RING_FREE;
		/* Acquire: the consumer's drain (release store of FREE) happens before our writes. */
		if (__atomic_compare_exchange_n(&r->hdr->state, &expected, MARK_TF_RING_OWNED, false,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
			ring_set_owner(r->hdr);
			if (s->mode == MARK_TRACE_OVERWRITE) {
				/* Drained to head before it was freed: start empty. */
				uint64_t head = __atomic_load_n(&r->hdr->head, __ATOMIC_RELAXED);
				/* The last owner's hold dropped events after its last
				 * record: the hole lies before our first one.  (The
				 * acquire CAS above ordered its producer-side stores.) */
				if (r->pending_gap)
					ring_note_gap(r, head);
				__atomic_store_n(&r->hdr->oldest, head, __ATOMIC_RELAXED);
				r->cached_tail = head;
				r->oldest_events = r->hdr->events;
			} else {
				r->cached_tail = __atomic_load_n(&r->hdr->tail, __ATOMIC_ACQUIRE);
				/* The last owner's drops after its last record went
				 * out in the empty packet its exit's drain wrote (the
				 * ring is FREE only after that drain): no hole for us. */
				__atomic_store_n(&r->pending_gap, 0, __ATOMIC_RELAXED);
			}
			/* The previous owner's last kick says nothing about ours. */
			r->kicked_tail = UINT64_MAX;
			tls.rings[depth] = r;
			return r;
		}
	}
	/*
	 * No cancellation point may act while the ring is created (openat,
	 * fallocate): a thread cancelled between its buffer file's creation
	 * and its close left the descriptor open and a file nobody maps, and
	 * the trace incomplete.  The cancellation acts at the thread's next
	 * cancellation point instead.  (pthread_setcancelstate is not on
	 * POSIX's async-signal-safe list; glibc's is one atomic update of the
	 * calling thread's own cancellation word, so a signal handler's first
	 * event may come through here too.)
	 */
	int cancel_state;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
	r = ring_create(s, depth);
	pthread_setcancelstate(cancel_state, NULL);
	tls.rings[depth] = r;
	return r;
}

void tracer_thread_release(void)
{
	mark_read_lock();   /* the session is freed only after a grace period */
	struct tracer_session *s = __atomic_load_n(&tracer_current, __ATOMIC_ACQUIRE);
	/*
	 * Detach the rings from the thread before handing them over: a signal
	 * handler that fires a marker from here on claims a ring of its own
	 * instead of writing one the consumer may already have freed.
	 */
	struct tracer_ring *mine[TRACER_MAX_NESTING];
	memcpy(mine, tls.rings, sizeof(mine));
	bool ours = s && tls.generation == s->generation;
	memset(tls.hot, 0, sizeof(tls.hot));
	memset(tls.rings, 0, sizeof(tls.rings));
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (ours) {
		bool any = false;
		for (unsigned d = 0; d < TRACER_MAX_NESTING; d++) {
			if (!mine[d])
				continue;
			/* tid stays: the consumer labels this thread's last packets with it. */
			/* Release: our last head store is visible before EXITED. */
			__atomic_store_n(&mine[d]->hdr->state, MARK_TF_RING_EXITED, __ATOMIC_RELEASE);
			any = true;
		}
		if (any)
			tracer_kick_consumer(s);
		/*
		 * Wait (at most 20 ms) until the consumer has written and freed our
		 * rings, so that the next thread reuses them instead of creating
		 * new ones: memory stays bounded by the threads alive at once.
		 */
		for (int i = 0; any && i < 400; i++) {
			bool pending = false;
			for (unsigned d = 0; d < TRACER_MAX_NESTING; d++)
				if (mine[d] && __atomic_load_n(&mine[d]->hdr->state, __ATOMIC_ACQUIRE) ==
						       MARK_TF_RING_EXITED)
					pending = true;
			if (!pending || !__atomic_load_n(&s->consumer_alive, __ATOMIC_ACQUIRE))
				break;
			struct timespec ts = { 0, 50000 };
			nanosleep(&ts, NULL);
		}
	}
	mark_read_unlock();
}

uint64_t tracer_thread_slow_events(void)
{
	return tls.slow_events;
}

void tracer_thread_forget(void)
{
	memset(tls.hot, 0, sizeof(tls.hot));
	memset(tls.rings, 0, sizeof(tls.rings));
	tls.generation = 0;
	tls.depth = 0;
}

/* ---- making room ---- */

/*
 * Overwrite mode: remember where the first record of each chunk starts
 * (see struct tracer_ring).  Called before writing a record at `head`.
 */
static inline void overwrite_note_record(struct tracer_session *s, struct tracer_ring *r, uint64_t head)
{
	if (s->mode != MARK_TRACE_OVERWRITE)
		return;
	const uint64_t chunk = r->capacity / TRACER_OVERWRITE_CHUNKS, b = head / chunk * chunk;
	const unsigned k = (unsigned)(head / chunk % TRACER_OVERWRITE_CHUNKS);
	if (r->chunk_first[k] < b || r->chunk_first[k] >= b + chunk) {
		r->chunk_first[k] = head;
		r->chunk_events[k] = r->hdr->events;
	}
}

/*
 * Count one event dropped between the ring's records (the owning thread
 * only): the ring's loss count, and the hole that ring_write_record()
 * notes at the next record.  Plain loads and stores; relaxed, for readers
 * of a live ring (the consumer, snapshots).
 */
static void count_hole(struct tracer_ring *r)
{
	__atomic_store_n(&r->hdr->lost, r->hdr->lost + 1, __ATOMIC_RELAXED);
	/* Release: a reader that sees this drop in pending_gap sees it in
	 * lost (snapshot.c loads them in that order). */
	__atomic_store_n(&r->pending_gap, r->pending_gap + 1, __ATOMIC_RELEASE);
}

/*
 * Count one event the full ring cannot take (the owning thread only: a
 * plain load and store, no read-modify-write).  Discard mode wakes the
 * consumer once per tail it leaves, not per lost event: the kick's
 * seq_cst fence made every discarded event dearer while the full ring
 * waited for a consumer already awake (issue 14).  A consumer that sleeps
 * has drained, so the tail has moved and the next lost event kicks again;
 * the consumer's 10 ms timeout bounds the rest.
 */
static void count_dropped(struct tracer_session *s, struct tracer_ring *r)
{
	count_hole(r);
	if (s->mode == MARK_TRACE_DISCARD && r->kicked_tail != r->cached_tail) {
		r->kicked_tail = r->cached_tail;
		tracer_kick_consumer(s);
	}
}

/*
 * The ring has no room for `size` more bytes at `head` according to the
 * cached tail.  Returns true when the record may be written.
 */
static bool __attribute__((noinline)) make_room(struct tracer_session *s, struct tracer_ring *r,
						uint64_t head, uint64_t size)
{
	struct mark_tf_ring *hdr = r->hdr;
	const uint64_t cap = r->capacity;
	if (s->mode == MARK_TRACE_OVERWRITE) {
		/*
		 * Drop the oldest records a chunk at a time until the new one
		 * fits: `oldest` jumps to the first record that starts in a later
		 * chunk (chunks where no record starts, inside a long one, are
		 * skipped), or to head when there is none, emptying the ring.
		 * The ring so keeps between (chunks - 1) / chunks and all of its
		 * capacity of newest events, as LTTng keeps whole sub-buffers.
		 * cached_tail mirrors `oldest`.
		 */
		/*
		 * A snapshot trigger of this ring waits for the consumer to copy
		 * the records up to it: drop the new event (counted lost) rather
		 * than overwrite them.  Acquire pairs with the consumer's release
		 * store of 0 after its copy: it has read the bytes we overwrite
		 * once we see the hold gone.
		 */
		if (unlikely(__atomic_load_n(&r->hold, __ATOMIC_ACQUIRE))) {
			__atomic_store_n(&r->hold_lost, r->hold_lost + 1, __ATOMIC_RELAXED);
			count_hole(r);
			return false;
		}
		const uint64_t chunk = cap / TRACER_OVERWRITE_CHUNKS;
		uint64_t oldest = r->cached_tail, oldest_events = r->oldest_events;
		const uint64_t events = hdr->events;
		uint64_t dropped = 0;
		while (head + size - oldest > cap) {
			uint64_t next = head, next_events = events;
			for (uint64_t b = (oldest / chunk + 1) * chunk; b < head; b += chunk) {
				const unsigned k = (unsigned)(b / chunk % TRACER_OVERWRITE_CHUNKS);
				if (r->chunk_first[k] >= b && r->chunk_first[k] < b + chunk) {
					next = r->chunk_first[k];
					next_events = r->chunk_events[k];
					break;
				}
			}
			dropped += next_events - oldest_events;
			oldest = next;
			oldest_events = next_events;
		}
		r->cached_tail = oldest;
		r->oldest_events = oldest_events;
		__atomic_store_n(&hdr->oldest, oldest, __ATOMIC_RELAXED);
		/* Snapshot readers: `oldest` is visible before any byte we overwrite. */
		TRACER_FENCE(__ATOMIC_RELEASE);
		__atomic_store_n(&hdr->lost, hdr->lost + dropped, __ATOMIC_RELAXED);
		return true;
	}
	for (unsigned spins = 0;; spins++) {
		/* Acquire: the consumer has finished reading the bytes before tail. */
		r->cached_tail = __atomic_load_n(&hdr->tail, __ATOMIC_ACQUIRE);
		if (head + size - r->cached_tail <= cap)
			return true;
		tracer_consumer_start_lazy(s);   /* block mode must have a consumer to wait for */
		if (s->mode == MARK_TRACE_DISCARD ||
		    !__atomic_load_n(&s->consumer_alive, __ATOMIC_ACQUIRE)) {
			/* Discard mode, or block mode with no consumer left to wait for
			 * (never deadlock): count the event. */
			count_dropped(s, r);
			return false;
		}
		/* Block mode: wake the consumer and wait for it (nanosleep is
		 * async-signal-safe, so this also works in a signal handler). */
		tracer_kick_consumer(s);
		if (spins < 16) {
			sched_yield();
		} else {
			struct timespec ts = { 0, 20000 };
			nanosleep(&ts, NULL);
		}
	}
}

/* Discard/block: wake the consumer once per crossing of the half-full mark. */
static void __attribute__((noinline)) maybe_kick(struct tracer_session *s, struct tracer_ring *r,
						 uint64_t head)
{
	r->cached_tail = __atomic_load_n(&r->hdr->tail, __ATOMIC_ACQUIRE);
	if (head - r->cached_tail > r->capacity / 2 && r->kicked_tail != r->cached_tail) {
		r->kicked_tail = r->cached_tail;   /* once per consumer step, not per event */
		tracer_kick_consumer(s);
	}
}

/*
 * The slow path's way to store one record: rec[2..] holds the payload,
 * `size` bytes in all (a multiple of 8, header included); rec[0] and
 * rec[1] are filled here with the timestamp and the header word
 * (header_low | CPU << 32).  Makes room or counts the event lost, handles
 * wrap-around, and wakes the consumer past half full.
 */
static void ring_write_record(struct tracer_session *s, struct tracer_ring *r, uint64_t *rec,
			      uint64_t size, uint64_t header_low)
{
	struct mark_tf_ring *hdr = r->hdr;
	const uint64_t head = hdr->head;
	if (unlikely(size > r->capacity)) {
		count_hole(r);
		return;
	}
	if (head + size - r->cached_tail > r->capacity && !make_room(s, r, head, size))
		return;
	/* The first record after dropped events: the hole is before it.  A
	 * record after a hole always comes this way: the fast path's limit is
	 * 0 while a hole is pending (probe_drop(), hot_fill()). */
	if (unlikely(r->pending_gap))
		ring_note_gap(r, head);
	overwrite_note_record(s, r, head);
	rec[0] = now_ticks();
	rec[1] = header_low | (uint64_t)current_cpu() << 32;
	const uint64_t mask = r->capacity / 8 - 1, w = head / 8;
	for (uint64_t i = 0; i < size / 8; i++)
		ring_put(r->data, mask, w + i, rec[i]);
	const uint64_t new_head = head + size;
	__atomic_store_n(&hdr->head, new_head, __ATOMIC_RELEASE);
	__atomic_store_n(&hdr->events, hdr->events + 1, __ATOMIC_RELAXED);
	if (unlikely(new_head - r->cached_tail > r->kick_threshold))
		maybe_kick(s, r, new_head);
}

/* ---- strings ---- */

/*
 * A record with %s arguments is laid out exactly as a CTF decoder reads
 * it: integers and doubles at 8-byte aligned offsets (align = 64 in the
 * metadata) occupying their `size` bytes, strings (byte aligned) right
 * after the previous field: a tag byte, the bytes, a NUL.  The tag
 * selects the CTF variant's option (trace_format.h, MARK_TF_STRING_*):
 * "empty", "text" (its length), "null" or "truncated", so that a reader
 * tells a NULL from "(null)" and a cut string from one ending in "...",
 * and never reuses a string field for both an empty and a non-empty
 * value: an empty string field of babeltrace2 2.0.4 shows the text an
 * earlier event left in it (docs/tracer.md, "CTF mapping").  The record
 * is assembled on the stack (at most 16 + 12 * (1 + 256 + 8) bytes) and
 * then stored into the ring word by word.
 */
#define RECORD_MAX (16 + MARK__MAX_ARGS * (1 + MARK_TF_STRING_MAX + 8) + 8)

static void __attribute__((noinline)) record_with_strings(struct tracer_session *s,
							  struct tracer_ring *r,
							  const struct mark_marker *m,
							  const uint64_t *args)
{
	const unsigned n = m->nargs;
	const struct mark_arg *a = m->args;
	uint64_t buf[RECORD_MAX / 8];
	unsigned char *b = (unsigned char *)buf;
	size_t off = 16;
	for (unsigned i = 0; i < n && i < MARK__MAX_ARGS; i++) {
		if (a[i].type == MARK_ARG_STRING) {
			const char *p = (const char *)(uintptr_t)args[i];
			size_t len = p ? strnlen(p, MARK_TF_STRING_TEXT_MAX + 1) : 0;
			if (!p) {
				b[off++] = MARK_TF_STRING_NULL;
				b[off++] = '\0';
			} else if (len > MARK_TF_STRING_TEXT_MAX) {
				b[off++] = MARK_TF_STRING_CUT;
				memcpy(b + off, p, MARK_TF_STRING_CUT_KEPT);
				memcpy(b + off + MARK_TF_STRING_CUT_KEPT, "...", 4);
				off += MARK_TF_STRING_CUT_KEPT + 4;
			} else {
				b[off++] = (unsigned char)len;
				memcpy(b + off, p, len + 1);
				off += len + 1;
			}
		} else {
			unsigned size = a[i].type == MARK_ARG_DOUBLE || a[i].type == MARK_ARG_POINTER ? 8 : a[i].size;
			if (size == 0 || size > 8)
				size = 8;
			off = (off + 7) & ~(size_t)7;
			memcpy(b + off, &args[i], size);   /* little endian: the low bytes */
			off += size;
		}
	}
	size_t end = (off + 7) & ~(size_t)7;
	memset(b + off, 0, end - off);
	ring_write_record(s, r, buf, end, (uint64_t)m->id | (uint64_t)off << 16);
}

/* ---- the probe ---- */

/*
 * Per-marker shape, cached by id: 0 = not computed yet, 1 = has strings,
 * else, for a marker without strings, the record's span (16 + 8 * nargs)
 * in the high 32 bits and the low 32 bits of its header word in the low:
 * id | CTF length << 16, the length ending after the last argument's
 * `size` bytes.  Computed from the marker's immutable argument layout;
 * racing threads store the same value (relaxed atomics).
 */
static uint64_t shape_cache[MARK_TF_MAX_ID + 1];

#define SHAPE_SPAN(shape) ((shape) >> 32)
#define SHAPE_HEADER(shape) ((shape) & 0xffffffffu)

static uint64_t __attribute__((noinline)) compute_shape(const struct mark_marker *m, unsigned id)
{
	uint64_t span = 16 + 8 * m->nargs, len = 16;
	for (unsigned i = 0; i < m->nargs; i++) {
		const struct mark_arg *a = &m->args[i];
		unsigned size = a->type == MARK_ARG_DOUBLE || a->type == MARK_ARG_POINTER ? 8 : a->size;
		if (size == 0 || size > 8)
			size = 8;
		len = 16 + 8 * i + size;
	}
	uint64_t shape = span << 32 | len << 16 | id;
	for (unsigned i = 0; i < m->nargs; i++)
		if (m->args[i].type == MARK_ARG_STRING)
			shape = 1;
	__atomic_store_n(&shape_cache[id], shape, __ATOMIC_RELAXED);
	return shape;
}

/*
 * Make tls.hot[depth] current after a slow-path visit, or leave it sending
 * events to the slow path: when the thread has no usable ring here, or the
 * clock is not the TSC, or the kernel does not keep an rseq CPU number for
 * this thread (the fast path neither reads CLOCK_MONOTONIC nor calls
 * sched_getcpu(): calls would make it save registers).  Without rseq
 * (glibc.pthread.rseq=0, an old glibc or kernel) the fast path reads the
 * CPU number with rdpid, or timestamp and CPU with one rdtscp.
 */
static void hot_fill(struct tracer_session *s, unsigned depth)
{
	struct hot_ring *h = &tls.hot[depth];
	struct tracer_ring *r = tls.rings[depth];
	/* The fast path reads tracer_counter(), never CLOCK_MONOTONIC. */
	const bool fast_clock = TRACER_HAVE_COUNTER && tracer_clock_is_tsc;
	/* The CPU number: rseq's cpu_id, or, without rseq, TSC_AUX by rdpid
	 * or by rdtscp (which then also gives the timestamp). */
	const bool fast_cpu = tls.rseq_cpu || tracer_cpu_source == CPU_RDPID || tracer_cpu_source == CPU_RDTSCP;
	if (!r || tls.generation != s->generation || !fast_cpu || !fast_clock) {
		h->generation = 0;
		return;
	}
	h->hdr = r->hdr;
	h->data = r->data;
	h->mask = r->capacity / 8 - 1;
	h->limit = r->cached_tail + r->capacity;
	/*
	 * Discard/block: past the half-full mark the slow path also sees
	 * whether to wake the consumer (maybe_kick()).  Once it has woken the
	 * consumer for this tail, looking again at every event is waste: the
	 * tail moves only when the consumer has written a step, and a consumer
	 * slower than the producer kept 15-20 % of all events on the slow path
	 * (issue 14).  So after a kick the next look is an eighth of the ring
	 * later: it reloads the tail and wakes the consumer again if it went
	 * back to sleep with the ring still past half full.  At most 8 slow
	 * visits per ring's worth of events; the ring's end by the cached tail
	 * (the limit above) still bounds it.
	 */
	if (r->kick_threshold != UINT64_MAX) {
		uint64_t look = r->cached_tail + r->kick_threshold;
		if (r->kicked_tail == r->cached_tail)
			look = r->hdr->head + r->capacity / 8;
		if (look < h->limit)
			h->limit = look;
	}
	/* Records that wrap go through the slow path (the fast one stores
	 * contiguous words), and so, in overwrite mode, do those that would
	 * start a new chunk: see overwrite_note_record(). */
	const uint64_t piece = s->mode == MARK_TRACE_OVERWRITE ? r->capacity / TRACER_OVERWRITE_CHUNKS
							      : r->capacity;
	const uint64_t boundary = (r->hdr->head / piece + 1) * piece;
	if (boundary < h->limit)
		h->limit = boundary;
	/* Events were dropped (a full ring, a trigger's hold): the next
	 * record notes the hole, on the slow path (ring_write_record()). */
	if (r->pending_gap)
		h->limit = 0;
	h->generation = s->generation;
}

/*
 * Everything but the common case: first event of a thread or marker,
 * strings, a full ring, limits.  Called with tls.depth already raised past
 * `depth`, so the ring at `depth` is ours alone.
 */
static void record_slow(struct tracer_session *s, unsigned depth, const struct mark_marker *m,
			const uint64_t *args)
{
	const unsigned id = m->id;
	tls.slow_events++;
	if (depth >= TRACER_MAX_NESTING || id > MARK_TF_MAX_ID) {
		count_lost_no_ring(s);
		return;
	}
	if (unlikely(tracer_family_stopped(s))) {
		/* The recording that forked us was stopped: record nothing more;
		 * the kick starts our consumer, which stops our session. */
		tracer_kick_consumer(s);
		return;
	}
	struct tracer_ring *r = tls.rings[depth];
	if (!r || tls.generation != s->generation) {
		r = ring_claim(s, depth);
		if (!r) {
			count_lost_no_ring(s);
			return;
		}
	}
	uint64_t shape = __atomic_load_n(&shape_cache[id], __ATOMIC_RELAXED);
	if (shape == 0)
		shape = compute_shape(m, id);
	if (shape == 1) {
		record_with_strings(s, r, m, args);
	} else {
		uint64_t rec[2 + MARK_MAX_MARKER_ARGS];
		const uint64_t size = SHAPE_SPAN(shape);
		memcpy(rec + 2, args, size - 16);
		ring_write_record(s, r, rec, size, SHAPE_HEADER(shape));
	}
	hot_fill(s, depth);
}

/*
 * Discard mode, the thread's ring full even by a fresh look at the tail:
 * count the event lost and return true, without the slow path's set-up
 * (a producer that outruns the disk drops most of its events; each drop
 * must be cheap).  False sends the event on to record_slow(): another
 * session, room after all, a stopped recording.  The caller has raised
 * tls.depth: the ring is ours; `shape` is the fast path's (> 1).
 */
static bool probe_drop(struct tracer_session *s, unsigned depth, uint64_t shape)
{
	struct tracer_ring *r = tls.rings[depth];
	if (s->mode != MARK_TRACE_DISCARD || !r || tls.generation != s->generation ||
	    tracer_family_stopped(s))
		return false;
	/* Acquire: the consumer has finished reading the bytes before tail. */
	r->cached_tail = __atomic_load_n(&r->hdr->tail, __ATOMIC_ACQUIRE);
	if (r->hdr->head + SHAPE_SPAN(shape) - r->cached_tail <= r->capacity)
		return false;
	count_dropped(s, r);
	/* The next record notes the hole (ring_write_record()): not the fast
	 * path, whose limit a smaller record may still be under. */
	tls.hot[depth].limit = 0;
	return true;
}

/*
 * The fast path's ways out: the slow path with its bracket of tls.depth,
 * and the same when the ring looked full or past its kick mark (depth
 * already raised).  They load the session themselves rather than have the
 * fast path keep it in a register: the fast path only compares
 * generations.  Should a new session have replaced the one whose ring the
 * thread has, the event goes to the new one (record_slow() sees the
 * generation change), and the old one stays valid until our caller's
 * read-side section ends.
 */
static void __attribute__((noinline)) probe_full(unsigned depth, const struct mark_marker *m,
						 const uint64_t *args, uint64_t shape)
{
	/* Acquire: the session's fields are initialised before it is published. */
	struct tracer_session *s = __atomic_load_n(&tracer_current, __ATOMIC_ACQUIRE);
	/* tls.depth is raised: the ring is ours. */
	if (s && (shape <= 1 || !probe_drop(s, depth, shape)))
		record_slow(s, depth, m, args);   /* else between sessions, or dropped */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	tls.depth = depth;
}

static void __attribute__((noinline, cold)) probe_slow(unsigned depth, const struct mark_marker *m,
						       const uint64_t *args)
{
	tls.depth = depth + 1;
	/* A signal handler on this thread sees depth+1 before we touch ring[depth]. */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	probe_full(depth, m, args, 0);
}

/*
 * An event that fires the session's snapshot trigger (--snapshot-on):
 * record it as any event, then, if it was recorded, ask the consumer for
 * a snapshot that ends with it (snapshot.c).  The request slot is claimed
 * with a CAS (once per trigger, not per event); a trigger that finds it
 * taken is counted busy, one within --snapshot-interval of the last
 * snapshot or after --max-snapshots is only counted.  Before the request
 * is published (release store of TRIG_PENDING) the ring is put on hold:
 * from then on this thread drops its new events (counted lost) rather
 * than overwrite the records up to the trigger, until the consumer has
 * copied them (make_room()).  Nothing is written to disk here.
 */
static void __attribute__((noinline, cold)) probe_trigger(unsigned depth, const struct mark_marker *m,
							  const uint64_t *args)
{
	tls.depth = depth + 1;
	/* A signal handler on this thread sees depth+1 before we touch ring[depth]. */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	/* Acquire: the session's fields are initialised before it is published. */
	struct tracer_session *s = __atomic_load_n(&tracer_current, __ATOMIC_ACQUIRE);
	if (s && depth < TRACER_MAX_NESTING && s->max_snapshots) {
		struct tracer_ring *r = tls.generation == s->generation ? tls.rings[depth] : NULL;
		if (!r)
			r = ring_claim(s, depth);   /* record_slow() then uses it */
		const uint64_t head0 = r ? r->hdr->head : 0, events0 = r ? r->hdr->events : 0;
		record_slow(s, depth, m, args);
		if (r && tls.rings[depth] == r && r->hdr->events != events0) {
			/* Recorded at head0 (a record starts where head was): its
			 * timestamp is its first word.  Producer-owned: plain reads. */
			const uint64_t ts = r->data[(head0 / 8) & (r->capacity / 8 - 1)];
			int expected = TRIG_FREE;
			if (__atomic_load_n(&s->trig_closed, __ATOMIC_RELAXED)) {
				__atomic_fetch_add(&s->trig_over_max, 1, __ATOMIC_RELAXED);
			} else if (ts < __atomic_load_n(&s->trig_quiet_until, __ATOMIC_RELAXED)) {
				__atomic_fetch_add(&s->trig_in_interval, 1, __ATOMIC_RELAXED);
			} else if (__atomic_compare_exchange_n(&s->trig_state, &expected, TRIG_FILLING, false,
							       __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
				__atomic_store_n(&r->hold, 1, __ATOMIC_RELAXED);
				s->trig_ring = r->index;
				s->trig_end = r->hdr->head;
				s->trig_ts = ts;
				s->trig_lost = r->hdr->lost;   /* the losses up to the trigger */
				/* Release: the hold and the four fields above first. */
				__atomic_store_n(&s->trig_state, TRIG_PENDING, __ATOMIC_RELEASE);
				tracer_kick_consumer(s);
			} else {
				__atomic_fetch_add(&s->trig_busy, 1, __ATOMIC_RELAXED);
			}
		}
	} else if (s) {
		record_slow(s, depth, m, args);
	}
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	tls.depth = depth;
}

/*
 * A trigger is installed (tracer_judging bit 1): true when the event fires
 * it and was recorded here.  The acquire load pairs with filter_install()'s
 * exchange; mark__fire's read-side section keeps the program alive.  The
 * trigger's glob makes the markers it does not match bind to "missing":
 * one load and a bit test.
 */
static bool __attribute__((noinline)) probe_triggered(const struct mark_marker *m, const uint64_t *args)
{
	struct tracer_filter *const tt = __atomic_load_n(&tracer_trigger, __ATOMIC_ACQUIRE);
	if (tt != NULL && !tracer_filter_rejects(tt, m, args)) {
		probe_trigger(tls.depth, m, args);
		return true;
	}
	return false;
}

/*
 * The fast path, kept small: few registers, no call except in tail
 * position, one comparison of the thread's cached ring against the
 * session's generation.  It must raise tls.depth before it reads the
 * ring's head: a signal handler interrupting us after that point writes
 * the next depth's ring, not ours.  What it reads before (tls.hot[depth],
 * the shape) a handler never changes under us: handlers only fill deeper
 * entries.
 */
void tracer_probe(const struct mark_marker *m, void *priv, const uint64_t *args)
{
	(void)priv;
	/* --filter and --snapshot-on: one relaxed load when neither is set.
	 * The filter is judged before anything else, so that a rejected event
	 * costs that load, one more and the program.  Acquire pairs with
	 * filter_install()'s exchange; mark__fire's read-side section keeps
	 * the program alive. */
	const int judging = __atomic_load_n(&tracer_judging, __ATOMIC_RELAXED);
	if (unlikely(judging)) {
		struct tracer_filter *const tf = __atomic_load_n(&tracer_filter, __ATOMIC_ACQUIRE);
		if (tf != NULL && tracer_filter_rejects(tf, m, args))
			return;
		if ((judging & 2) && probe_triggered(m, args))
			return;
	}
	/* Relaxed: a generation the thread has not cached sends it to the slow
	 * path, which acquires the session. */
	const uint64_t generation = __atomic_load_n(&tracer_current_generation, __ATOMIC_RELAXED);
	const unsigned depth = tls.depth;
	const unsigned id = m->id;
	if (unlikely(depth >= TRACER_MAX_NESTING || id > MARK_TF_MAX_ID)) {
		probe_slow(depth, m, args);
		return;
	}
	const struct hot_ring *h = &tls.hot[depth];
	const uint64_t shape = __atomic_load_n(&shape_cache[id], __ATOMIC_RELAXED);
	if (unlikely(h->generation != generation || shape <= 1)) {
		probe_slow(depth, m, args);
		return;
	}
	tls.depth = depth + 1;
	/* A signal handler on this thread sees depth+1 before we touch ring[depth]. */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	struct mark_tf_ring *const hdr = h->hdr;
	const uint64_t head = hdr->head;   /* producer-owned: we wrote it last */
	const uint64_t new_head = head + SHAPE_SPAN(shape);
	if (unlikely(new_head > h->limit)) {
		probe_full(depth, m, args, shape);
		return;
	}
	/* The record does not wrap (see hot_ring.limit): contiguous words. */
	uint64_t *const rec = h->data + (head / 8 & h->mask);
	uint64_t ts;
	uint32_t cpu;
	const uint32_t *const rseq_cpu = tls.rseq_cpu;
#if defined(__x86_64__)
	/* hot_fill() checked the clock is the TSC, and that without rseq the
	 * CPU source is rdpid or rdtscp: Linux keeps TSC_AUX = node << 12 |
	 * cpu.  With rseq or rdpid, the CPU is read apart from the timestamp:
	 * a migration between the two reads records the CPU the thread ran on
	 * an instant later, as rdtscp's own result may be by the time it is
	 * stored; sched_getcpu() gives no more than that. */
	if (likely(rseq_cpu != NULL)) {
		ts = __rdtsc();
		cpu = __atomic_load_n(rseq_cpu, __ATOMIC_RELAXED);
	} else if (tracer_cpu_source == CPU_RDPID) {
		ts = __rdtsc();
		cpu = tracer_rdpid() & 0xfff;
	} else {
		unsigned aux;
		ts = __rdtscp(&aux);
		cpu = aux & 0xfff;
	}
#elif TRACER_HAVE_COUNTER
	/* hot_fill() checked the clock is the counter and the thread has an
	 * rseq area (no rdtscp here). */
	ts = tracer_counter();
	cpu = __atomic_load_n(rseq_cpu, __ATOMIC_RELAXED);
#else
	(void)rseq_cpu;
	ts = now_ticks();   /* not reached: hot_fill() leaves such threads slow */
	cpu = current_cpu();
#endif
	__atomic_store_n(&rec[0], ts, __ATOMIC_RELAXED);
	__atomic_store_n(&rec[1], SHAPE_HEADER(shape) | (uint64_t)cpu << 32, __ATOMIC_RELAXED);
	const unsigned n = (unsigned)(SHAPE_SPAN(shape) - 16) / 8;
	for (unsigned i = 0; i < n; i++)
		__atomic_store_n(&rec[2 + i], args[i], __ATOMIC_RELAXED);
	/* Release: the record's bytes are visible before the new head. */
	__atomic_store_n(&hdr->head, new_head, __ATOMIC_RELEASE);
	__atomic_store_n(&hdr->events, hdr->events + 1, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	tls.depth = depth;
}
