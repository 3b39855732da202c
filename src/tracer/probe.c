/*
 * The tracer's fast probe: records one event into the calling thread's ring.
 *
 * Hot path (no string arguments, ring not full): one acquire load of the
 * session pointer, the thread's nesting depth and ring (initial-exec TLS),
 * rdtsc, the CPU number (one load from the rseq area), 2 + nargs relaxed
 * 64-bit stores into the ring, a release store of head (a plain store on
 * x86-64) and a store of the event counter.  No lock, no atomic
 * read-modify-write, no system call.
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

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <urcu-bp.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif
#if __has_include(<sys/rseq.h>)
#include <sys/rseq.h>
#endif

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

struct tracer_session *tracer_current;
#ifdef TRACER_TSAN
int tracer_fence_word;
#endif

/*
 * Per-thread state.  initial-exec TLS: one %fs-relative load, no
 * __tls_get_addr call (libmark is loaded at program start; a dlopen of
 * libmark still works while the static TLS surplus lasts).
 */
struct thread_rings {
	struct tracer_ring *rings[TRACER_MAX_NESTING];
	/* The session rings[] belong to, by generation: a new session may be
	 * allocated at the address of a freed one, a generation never repeats. */
	uint64_t generation;
	/* This thread's rseq cpu_id (kernel-updated), or NULL: current_cpu() below. */
	const uint32_t *rseq_cpu;
	unsigned depth;
	bool key_set;
};
static __thread struct thread_rings tls __attribute__((tls_model("initial-exec")));

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
#if defined(__x86_64__)
	if (likely(tracer_clock_is_tsc))
		return __rdtsc();
#endif
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint32_t current_cpu(void)
{
#if __has_include(<sys/rseq.h>) && defined(__x86_64__)
	if (likely(tracer_cpu_source == CPU_RSEQ)) {
		const struct rseq *rs;
		char *tp;
		__asm__("mov %%fs:0, %0" : "=r"(tp));
		rs = (const struct rseq *)(tp + __rseq_offset);
		uint32_t cpu = __atomic_load_n(&rs->cpu_id, __ATOMIC_RELAXED);
		if (likely(cpu != (uint32_t)-1 && cpu != (uint32_t)-2))
			return cpu;
		int c = sched_getcpu();
		return c < 0 ? 0 : (uint32_t)c;
	}
#endif
#if defined(__x86_64__)
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
	/* Slow path only (no ring at all): an atomic add is fine here. */
	__atomic_fetch_add(&s->lost_no_ring, 1, __ATOMIC_RELAXED);
}

/* ---- ring creation and claiming (slow path, async-signal-safe) ---- */

static void write_err(const char *a, const char *b)
{
	/* write(2) is async-signal-safe, fprintf is not. */
	ssize_t r = write(2, a, strlen(a));
	if (b)
		r = write(2, b, strlen(b));
	r = write(2, "\n", 1);
	(void)r;
}

static struct tracer_ring *ring_create(struct tracer_session *s, unsigned nesting)
{
	unsigned index = __atomic_fetch_add(&s->next_index, 1, __ATOMIC_RELAXED);
	if (index >= TRACER_MAX_RINGS) {
		__atomic_store_n(&s->next_index, TRACER_MAX_RINGS, __ATOMIC_RELAXED);
		return NULL;
	}
	char path[4096];
	tracer_path(path, sizeof(path), s->dir, MARK_TF_RING_PREFIX, index);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		write_err("mark: tracer cannot create its buffer file ", path);
		return NULL;
	}
	size_t total = MARK_TF_RING_HEADER_SIZE + s->buffer_size;
	/*
	 * Reserve the blocks now: a store into a hole of a shared mapping on a
	 * full file system raises SIGBUS in the traced program.
	 */
	if (fallocate(fd, 0, 0, (off_t)total) != 0) {
		write_err("mark: tracer cannot reserve space for its buffer file (disk full or no "
			  "fallocate support); events of this thread are lost: ", path);
		close(fd);
		unlink(path);
		return NULL;
	}
	void *map = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		write_err("mark: tracer cannot map its buffer file: ", path);
		unlink(path);
		return NULL;
	}
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
	hdr->tid = (uint32_t)syscall(SYS_gettid);
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
	r->kicked_tail = UINT64_MAX;
	r->stream_fd = -1;
	/* Publish to the consumer and to other claimers. */
	__atomic_store_n(&r->ready, 1, __ATOMIC_RELEASE);
	return r;
}

static struct tracer_ring *ring_claim(struct tracer_session *s, unsigned depth)
{
	if (tls.generation != s->generation) {
		/* Rings of an earlier session (or of the parent before fork). */
		memset(tls.rings, 0, sizeof(tls.rings));
		tls.generation = s->generation;
	}
#if __has_include(<sys/rseq.h>) && defined(__x86_64__)
	if (!tls.rseq_cpu && tracer_cpu_source == CPU_RSEQ) {
		char *tp;
		__asm__("mov %%fs:0, %0" : "=r"(tp));
		const struct rseq *rs = (const struct rseq *)(tp + __rseq_offset);
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
	unsigned n = __atomic_load_n(&s->next_index, __ATOMIC_RELAXED);
	if (n > TRACER_MAX_RINGS)
		n = TRACER_MAX_RINGS;
	for (unsigned i = 0; i < n; i++) {
		struct tracer_ring *r = &s->rings[i];
		if (!__atomic_load_n(&r->ready, __ATOMIC_ACQUIRE) || r->nesting != depth)
			continue;
		uint32_t expected = MARK_TF_RING_FREE;
		/* Acquire: the consumer's drain (release store of FREE) happens before our writes. */
		if (__atomic_compare_exchange_n(&r->hdr->state, &expected, MARK_TF_RING_OWNED, false,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
			__atomic_store_n(&r->hdr->tid, (uint32_t)syscall(SYS_gettid), __ATOMIC_RELAXED);
			if (s->mode == MARK_TRACE_OVERWRITE) {
				/* Drained to head before it was freed: start empty. */
				uint64_t head = __atomic_load_n(&r->hdr->head, __ATOMIC_RELAXED);
				__atomic_store_n(&r->hdr->oldest, head, __ATOMIC_RELAXED);
				r->cached_tail = head;
			} else {
				r->cached_tail = __atomic_load_n(&r->hdr->tail, __ATOMIC_ACQUIRE);
			}
			tls.rings[depth] = r;
			return r;
		}
	}
	struct tracer_ring *r = ring_create(s, depth);
	tls.rings[depth] = r;
	return r;
}

void tracer_thread_release(void)
{
	urcu_bp_read_lock();   /* the session is freed only after a grace period */
	struct tracer_session *s = __atomic_load_n(&tracer_current, __ATOMIC_ACQUIRE);
	/*
	 * Detach the rings from the thread before handing them over: a signal
	 * handler that fires a marker from here on claims a ring of its own
	 * instead of writing one the consumer may already have freed.
	 */
	struct tracer_ring *mine[TRACER_MAX_NESTING];
	memcpy(mine, tls.rings, sizeof(mine));
	bool ours = s && tls.generation == s->generation;
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
	urcu_bp_read_unlock();
}

void tracer_thread_forget(void)
{
	memset(tls.rings, 0, sizeof(tls.rings));
	tls.generation = 0;
	tls.depth = 0;
}

/* ---- making room ---- */

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
		 * Drop the oldest records until the new one fits.  Their sizes
		 * are in our own earlier writes; cached_tail mirrors `oldest`.
		 */
		uint64_t oldest = r->cached_tail, dropped = 0;
		const uint64_t mask = cap / 8 - 1;
		while (head + size - oldest > cap) {
			uint64_t w = __atomic_load_n(&r->data[(oldest / 8 + 1) & mask], __ATOMIC_RELAXED);
			uint64_t rsize = MARK_TF_RECORD_SPAN((w >> 16) & 0xffff);
			if (rsize < 16 || oldest + rsize > head) {
				oldest = head;   /* cannot happen; restart empty rather than loop */
				break;
			}
			oldest += rsize;
			dropped++;
		}
		r->cached_tail = oldest;
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
		if (s->mode == MARK_TRACE_DISCARD ||
		    !__atomic_load_n(&s->consumer_alive, __ATOMIC_ACQUIRE)) {
			/* Discard mode, or block mode with no consumer left to wait for
			 * (never deadlock): count the event. */
			__atomic_store_n(&hdr->lost, hdr->lost + 1, __ATOMIC_RELAXED);
			if (s->mode == MARK_TRACE_DISCARD)
				tracer_kick_consumer(s);
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

/* ---- strings ---- */

/*
 * A record with %s arguments is laid out exactly as a CTF decoder reads
 * it: integers and doubles at 8-byte aligned offsets (align = 64 in the
 * metadata) occupying their `size` bytes, strings (byte aligned) right
 * after the previous field, NUL-terminated.  The record is assembled on
 * the stack (at most 16 + 12 * (256 + 8) bytes) and then stored into the
 * ring word by word.  A string longer than string_max - 1 bytes keeps its
 * first string_max - 4 bytes followed by "..." (the truncation mark).
 */
#define RECORD_MAX (16 + MARK__MAX_ARGS * (MARK_TF_STRING_MAX + 8) + 8)

static void __attribute__((noinline)) record_with_strings(struct tracer_session *s,
							  struct tracer_ring *r,
							  const struct mark_marker *m,
							  const uint64_t *args)
{
	const unsigned n = m->nargs;
	const struct mark_arg *a = m->args;
	const unsigned max = s->string_max <= MARK_TF_STRING_MAX ? s->string_max : MARK_TF_STRING_MAX;
	uint64_t buf[RECORD_MAX / 8];
	unsigned char *b = (unsigned char *)buf;
	size_t off = 16;
	for (unsigned i = 0; i < n && i < MARK__MAX_ARGS; i++) {
		if (a[i].type == MARK_ARG_STRING) {
			const char *p = (const char *)(uintptr_t)args[i];
			if (!p)
				p = "(null)";
			size_t len = strnlen(p, max);
			if (len >= max) {
				memcpy(b + off, p, max - 4);
				memcpy(b + off + max - 4, "...", 4);
				off += max;
			} else {
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
	const uint64_t size = end;
	struct mark_tf_ring *hdr = r->hdr;
	uint64_t head = hdr->head;
	if (unlikely(size > r->capacity)) {
		__atomic_store_n(&hdr->lost, hdr->lost + 1, __ATOMIC_RELAXED);
		return;
	}
	if (head + size - r->cached_tail > r->capacity && !make_room(s, r, head, size))
		return;
	buf[0] = now_ticks();
	buf[1] = (uint64_t)m->id | (uint64_t)off << 16 | (uint64_t)current_cpu() << 32;
	const uint64_t mask = r->capacity / 8 - 1;
	const uint64_t w = head / 8;
	for (uint64_t i = 0; i < size / 8; i++)
		ring_put(r->data, mask, w + i, buf[i]);
	uint64_t new_head = head + size;
	__atomic_store_n(&hdr->head, new_head, __ATOMIC_RELEASE);
	__atomic_store_n(&hdr->events, hdr->events + 1, __ATOMIC_RELAXED);
	if (s->mode != MARK_TRACE_OVERWRITE && unlikely(new_head - r->cached_tail > r->capacity / 2))
		maybe_kick(s, r, new_head);
}

/* ---- the probe ---- */

/*
 * Per-marker shape, cached by id: 0 = not computed yet, 1 = has strings,
 * else (record span) | (CTF length << 16) for a marker without strings:
 * the span is 16 + 8 * nargs, the CTF length ends after the last
 * argument's `size` bytes.  Computed from the marker's immutable argument
 * layout; racing threads store the same value (relaxed atomics).
 */
static uint32_t shape_cache[MARK_TF_MAX_ID + 1];

static uint32_t __attribute__((noinline)) compute_shape(const struct mark_marker *m, unsigned id)
{
	uint32_t span = 16 + 8 * m->nargs, len = 16;
	for (unsigned i = 0; i < m->nargs; i++) {
		const struct mark_arg *a = &m->args[i];
		unsigned size = a->type == MARK_ARG_DOUBLE || a->type == MARK_ARG_POINTER ? 8 : a->size;
		if (size == 0 || size > 8)
			size = 8;
		len = 16 + 8 * i + size;
	}
	uint32_t shape = span | len << 16;
	for (unsigned i = 0; i < m->nargs; i++)
		if (m->args[i].type == MARK_ARG_STRING)
			shape = 1;
	__atomic_store_n(&shape_cache[id], shape, __ATOMIC_RELAXED);
	return shape;
}

/* Everything but the common case: first event of a thread or marker, strings, limits. */
static void __attribute__((noinline, cold)) probe_slow(struct tracer_session *s, unsigned depth,
						       const struct mark_marker *m, const uint64_t *args)
{
	const unsigned id = m->id;
	if (depth >= TRACER_MAX_NESTING || id > MARK_TF_MAX_ID) {
		count_lost_no_ring(s);
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
	uint32_t shape = __atomic_load_n(&shape_cache[id], __ATOMIC_RELAXED);
	if (shape == 0)
		shape = compute_shape(m, id);
	if (shape == 1) {
		record_with_strings(s, r, m, args);
		return;
	}
	/* A fixed-size event: now the fast path applies. */
	struct mark_tf_ring *hdr = r->hdr;
	const uint64_t size = shape & 0xffff, head = hdr->head;
	if (head + size - r->cached_tail > r->capacity && !make_room(s, r, head, size))
		return;
	const uint64_t mask = r->capacity / 8 - 1, w = head / 8;
	ring_put(r->data, mask, w, now_ticks());
	ring_put(r->data, mask, w + 1, (uint64_t)id | (uint64_t)(shape >> 16) << 16 |
					       (uint64_t)current_cpu() << 32);
	for (unsigned i = 0; i < (size - 16) / 8; i++)
		ring_put(r->data, mask, w + 2 + i, args[i]);
	__atomic_store_n(&hdr->head, head + size, __ATOMIC_RELEASE);
	__atomic_store_n(&hdr->events, hdr->events + 1, __ATOMIC_RELAXED);
}

void tracer_probe(const struct mark_marker *m, void *priv, const uint64_t *args)
{
	(void)priv;
	/* Acquire: the session's fields are initialised before it is published. */
	struct tracer_session *s = __atomic_load_n(&tracer_current, __ATOMIC_ACQUIRE);
	if (unlikely(!s))
		return;
	const unsigned depth = tls.depth;
	tls.depth = depth + 1;
	/* A signal handler on this thread sees depth+1 before we touch ring[depth]. */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);

	const unsigned id = m->id;
	struct tracer_ring *r = likely(depth < TRACER_MAX_NESTING) ? tls.rings[depth] : NULL;
	uint32_t shape = likely(id <= MARK_TF_MAX_ID) ? __atomic_load_n(&shape_cache[id], __ATOMIC_RELAXED) : 0;
	if (unlikely(!r || tls.generation != s->generation || shape <= 1)) {
		probe_slow(s, depth, m, args);
	} else {
		struct mark_tf_ring *hdr = r->hdr;
		uint64_t *const data = r->data;   /* locals: the atomic stores below cannot change them */
		const uint64_t cap = r->capacity, mask = cap / 8 - 1;
		const uint64_t size = shape & 0xffff;
		const uint64_t head = hdr->head;   /* producer-owned: we wrote it last */
		const uint64_t tail = r->cached_tail;
		if (likely(head + size - tail <= cap) || make_room(s, r, head, size)) {
			const uint64_t w = head / 8;
			ring_put(data, mask, w, now_ticks());
			const uint32_t *rc = tls.rseq_cpu;
			const uint32_t cpu = likely(rc != NULL) ? __atomic_load_n(rc, __ATOMIC_RELAXED) : current_cpu();
			ring_put(data, mask, w + 1, (uint64_t)id | (uint64_t)(shape >> 16) << 16 | (uint64_t)cpu << 32);
			const unsigned n = (unsigned)(size - 16) / 8;
			for (unsigned i = 0; i < n; i++)
				ring_put(data, mask, w + 2 + i, args[i]);
			const uint64_t new_head = head + size;
			/* Release: the record's bytes are visible before the new head. */
			__atomic_store_n(&hdr->head, new_head, __ATOMIC_RELEASE);
			__atomic_store_n(&hdr->events, hdr->events + 1, __ATOMIC_RELAXED);
			if (unlikely(new_head - tail > cap / 2) && s->mode != MARK_TRACE_OVERWRITE)
				maybe_kick(s, r, new_head);
		}
	}
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	tls.depth = depth;
}
