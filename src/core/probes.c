/*
 * Probes: registration, and the call from an armed site.
 *
 * Each marker holds an array of its probes, in registration order.  The
 * array is never modified in place: a change builds a new array, publishes
 * it with a release store, and frees the old one after an RCU grace period
 * (liburcu's bulletproof flavour: application threads need no
 * registration, which a library cannot demand of them).
 *
 * mark__fire() is the only hot function here.  It takes no lock and does no
 * atomic read-modify-write: an acquire load of site->marker (written once),
 * the urcu-bp read lock (a thread-local counter), a consume load of the
 * array, and the calls.
 */
#define _GNU_SOURCE
#define _LGPL_SOURCE   /* inline urcu-bp read-side fast paths */
#include "internal.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <urcu-bp.h>
#include "core/rcu.h"

/*
 * ThreadSanitizer does not see the grace period as synchronisation: tell it
 * that a reader's accesses to an array happen before the writer frees it.
 */
#define TSAN_RELEASE(p) MARK_TSAN_RELEASE(p)
#define TSAN_ACQUIRE(p) MARK_TSAN_ACQUIRE(p)

struct probe_registration {
	char *name;               /* name or glob */
	char *format;             /* NULL: any format */
	mark_probe_fn va;
	mark_fast_probe_fn fast;
	void *priv;
	struct probe_registration *next;
};

/* In registration order; protected by the registry lock. */
static struct probe_registration *registrations;

static bool registration_matches(const struct probe_registration *r, const struct mark_marker *m)
{
	if (m->eventhandler || !mark_glob_match(r->name, m))
		return false;
	return !r->format || (m->format_known && strcmp(r->format, m->format) == 0);
}

/* The probe array that marker m needs now (NULL: no probe matches), in
 * *out.  0, or -ENOMEM (nothing changed). */
static int probe_array_build_locked(const struct mark_marker *m, struct mark_probe_array **out)
{
	unsigned count = 0;
	for (const struct probe_registration *r = registrations; r; r = r->next)
		count += registration_matches(r, m);
	*out = NULL;
	if (!count)
		return 0;
	struct mark_probe_array *array = malloc(sizeof(*array) + count * sizeof(array->probes[0]));
	if (!array)
		return -ENOMEM;
	array->count = 0;
	for (const struct probe_registration *r = registrations; r; r = r->next) {
		if (!registration_matches(r, m))
			continue;
		struct mark_probe *p = &array->probes[array->count++];
		p->va = r->va;
		p->fast = r->fast;
		p->priv = r->priv;
	}
	*out = array;
	return 0;
}

/* Publish m's new array; the old one goes to retired[(*nretired)++], for
 * which the caller made room. */
static void probe_array_publish_locked(struct mark_marker *m, struct mark_probe_array *array, void **retired,
				       size_t *nretired)
{
	struct mark_probe_array *old = m->probes;
	/* Release: the array's contents are visible before the pointer. */
	__atomic_store_n(&m->probes, array, __ATOMIC_RELEASE);
	if (old)
		retired[(*nretired)++] = old;
}

void mark_probes_rebuild_locked(struct mark_marker *m, void ***retired, size_t *nretired)
{
	struct mark_probe_array *array;
	void **room = realloc(*retired, (*nretired + 1) * sizeof(void *));
	if (room)
		*retired = room;
	if (!room || probe_array_build_locked(m, &array) != 0) {
		/* A marker of an object being loaded: nobody to return an error to. */
		mark_warn("mark: out of memory connecting probes to %s; its probes are unchanged\n", m->name);
		return;
	}
	probe_array_publish_locked(m, array, *retired, nretired);
}

/*
 * The new probe arrays of every marker that `name` matches, built before
 * any is published, so that a registration or unregistration that runs out
 * of memory changes no marker (all or nothing).  Registry lock held.
 */
struct probe_rebuild {
	struct mark_marker **markers;
	struct mark_probe_array **arrays;
	size_t n;
	void **retired;       /* room for n old arrays */
	size_t nretired;
};

static int rebuild_prepare_locked(const char *name, struct probe_rebuild *rb)
{
	size_t n;
	struct mark_marker **ms = mark_markers_locked(&n);
	memset(rb, 0, sizeof(*rb));
	size_t matching = 0;
	for (size_t i = 0; i < n; i++)
		matching += mark_glob_match(name, ms[i]);
	if (!matching)
		return 0;
	rb->markers = malloc(matching * sizeof(*rb->markers));
	rb->arrays = malloc(matching * sizeof(*rb->arrays));
	rb->retired = malloc(matching * sizeof(*rb->retired));
	if (!rb->markers || !rb->arrays || !rb->retired)
		goto oom;
	for (size_t i = 0; i < n; i++) {
		if (!mark_glob_match(name, ms[i]))
			continue;
		rb->markers[rb->n] = ms[i];
		if (probe_array_build_locked(ms[i], &rb->arrays[rb->n]) != 0)
			goto oom;
		rb->n++;
	}
	return 0;
oom:
	for (size_t i = 0; i < rb->n; i++)
		free(rb->arrays[i]);
	free(rb->markers);
	free(rb->arrays);
	free(rb->retired);
	memset(rb, 0, sizeof(*rb));
	return -ENOMEM;
}

/* Publish what rebuild_prepare_locked() built (cannot fail); the old
 * arrays are retired by the caller after the registry lock
 * (mark_probes_retire(rb->retired, rb->nretired), which frees the list). */
static void rebuild_publish_locked(struct probe_rebuild *rb)
{
	for (size_t i = 0; i < rb->n; i++)
		probe_array_publish_locked(rb->markers[i], rb->arrays[i], rb->retired, &rb->nretired);
	free(rb->markers);
	free(rb->arrays);
}

/*
 * Read-side sections on a thread whose liburcu-bp registration was torn
 * down (review finding: signal handler during thread exit).
 *
 * liburcu-bp 0.13 unregisters an exiting thread from its TSD destructor
 * (urcu_bp_unregister: urcu_bp_reader = NULL), then restores the signal
 * mask and calls urcu_bp_exit(), which takes its init_lock.  A signal
 * handler that entered a read-side section there re-registered the thread
 * (urcu_bp_register -> _urcu_bp_init -> init_lock, held by this very
 * thread): a self-deadlock that then blocked every registering thread.
 *
 * So libmark registers a thread with liburcu-bp only once: the first time
 * it finds urcu_bp_reader NULL (rcu_registered still 0).  Found NULL again
 * later, the registration was torn down by the thread's exit, and this
 * thread may be inside urcu_bp_exit() holding init_lock: it never
 * registers again and takes a "fallback" section instead, a count of such
 * readers in fallback_readers that mark_grace_period()/mark_synchronize()
 * wait for after urcu_bp_synchronize_rcu().  Nothing is dropped: probes run
 * as usual, in signal handlers and in TSD destructors alike.
 *
 * Ordering (a Dekker pair): the reader's seq_cst increment is followed by
 * a seq_cst fence before it loads any RCU-protected pointer; the writer
 * unpublished its pointer before the grace period, and issues a seq_cst
 * fence before loading the count.  Either the writer sees the reader
 * counted (and waits for the decrement, whose release pairs with the
 * writer's acquire load, so the reader's accesses happen before the free),
 * or the reader's loads follow the writer's fence and see the new pointer.
 * The writer may in theory wait long while fallback readers overlap; they
 * exist only on exiting threads, for the length of one probe.
 *
 * rcu_registered and fallback_depth are this thread's own: touched by it
 * and its signal handlers only, which nest (a handler's changes are undone
 * before it returns), so relaxed atomics with signal fences suffice.  At
 * any instant the sections on one thread's stack are all of one kind:
 * urcu_bp_reader is NULL under a fallback section and nothing re-registers,
 * and the TSD destructor that clears it cannot run inside a urcu section.
 * So fallback_depth != 0 tells an unlock which kind to end.
 */
/* A seq_cst fence; ThreadSanitizer does not model fences (GCC refuses them
 * under -fsanitize=thread): there an RMW on a word of our own gives it the
 * same ordering edges (as TRACER_FENCE in the tracer). */
#ifdef MARK_TSAN
static int fallback_fence_word;
#define FALLBACK_FENCE() ((void)__atomic_fetch_add(&fallback_fence_word, 0, __ATOMIC_SEQ_CST))
#else
#define FALLBACK_FENCE() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#endif

static __thread unsigned char rcu_registered MARK_TLS_IE;
__thread unsigned mark_fallback_depth MARK_TLS_IE;
static unsigned long fallback_readers;

void mark_read_lock_slow(void)
{
	if (!__atomic_load_n(&rcu_registered, __ATOMIC_RELAXED)) {
		/* First section of this thread: register (a signal handler that
		 * registers it meanwhile is fine: urcu_bp_register checks again). */
		urcu_bp_read_lock();
		__atomic_store_n(&rcu_registered, 1, __ATOMIC_RELAXED);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		return;
	}
	__atomic_store_n(&mark_fallback_depth, mark_fallback_depth + 1, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_fetch_add(&fallback_readers, 1, __ATOMIC_SEQ_CST);
	FALLBACK_FENCE();
}

void mark_read_unlock_fallback(void)
{
	/* Release: this section's accesses happen before a waiting writer's free. */
	__atomic_fetch_sub(&fallback_readers, 1, __ATOMIC_RELEASE);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&mark_fallback_depth, mark_fallback_depth - 1, __ATOMIC_RELAXED);
}

bool mark_read_ongoing(void)
{
	/* Unlike urcu_bp_read_ongoing(), never registers the thread. */
	struct urcu_bp_reader *r = URCU_TLS(urcu_bp_reader);
	/* Copied out, not read through r: liburcu-bp's records may be
	 * misaligned for their declared type (UBSan; see eventhandler.c). */
	unsigned long ctr = 0;
	if (r)
		memcpy(&ctr, (const char *)r + offsetof(struct urcu_bp_reader, ctr), sizeof(ctr));
	return (ctr & URCU_BP_GP_CTR_NEST_MASK) ||
	       __atomic_load_n(&mark_fallback_depth, __ATOMIC_RELAXED) != 0;
}

void mark_read_fallback_after_fork_child(void)
{
	/* Only this thread exists in the child: its own sections remain. */
	__atomic_store_n(&fallback_readers, mark_fallback_depth, __ATOMIC_RELAXED);
}

static void synchronize_all(void)
{
	urcu_bp_synchronize_rcu();
	FALLBACK_FENCE();   /* see the Dekker pair above */
	while (__atomic_load_n(&fallback_readers, __ATOMIC_ACQUIRE) != 0) {
		struct timespec ts = { 0, 20000 };
		nanosleep(&ts, NULL);
	}
}

bool mark_grace_period(void)
{
	if (mark_read_ongoing()) {
		static int said;
		if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
			mark_warn("mark: this thread is inside a marker's probe (did a signal handler leave one "
				  "with longjmp?): libmark does not wait for other threads to leave the probes, "
				  "and keeps the memory they may read instead of freeing it\n");
		return false;
	}
	synchronize_all();
	return true;
}

void mark_probes_retire(void **retired, size_t nretired)
{
	if (nretired && !mark_grace_period()) {
		free(retired);   /* the list only: what it names is kept */
		return;
	}
	if (nretired) {
		for (size_t i = 0; i < nretired; i++) {
			TSAN_ACQUIRE(retired[i]);
			free(retired[i]);
		}
	}
	free(retired);
}

int mark_synchronize(void)
{
	/* Inside a probe this thread holds the read-side section that the
	 * grace period waits for: it would wait for itself, for ever (with
	 * every signal blocked by liburcu meanwhile). */
	if (mark_read_ongoing()) {
		static int said;
		if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
			mark_warn("mark: mark_synchronize() called inside a probe (or an event handler) cannot wait "
				  "for the probes to finish, its own among them; it returns -EDEADLK: call it "
				  "after the probe returns\n");
		return mark_error(EDEADLK, "mark: mark_synchronize() called inside a probe cannot wait for "
				  "probes to finish (its own is one); call it after the probe returns");
	}
	synchronize_all();
	return 0;
}

static int probe_register(const char *name, const char *fmt, mark_probe_fn va, mark_fast_probe_fn fast,
			  void *priv)
{
	if (!name || !*name)
		return mark_error(EINVAL, "mark: probe registration needs a marker name");
	if (!va && !fast)
		return mark_error(EINVAL, "mark: probe registration for %s: the probe function is NULL", name);
#if !defined(__x86_64__) && !defined(__aarch64__)
	if (va)
		return mark_error(ENOTSUP, "mark: varargs probes are not supported on this architecture; "
					   "use mark_probe_register_fast()");
#endif
	mark_init();
	mark_error_clear();
	mark_registry_lock();
	for (const struct probe_registration *r = registrations; r; r = r->next) {
		if (r->va == va && r->fast == fast && r->priv == priv && strcmp(r->name, name) == 0) {
			mark_registry_unlock();
			return mark_error(EEXIST, "mark: this probe is already registered for %s with the same "
						  "private data", name);
		}
	}
	if (fmt) {
		size_t n;
		struct mark_marker **ms = mark_markers_locked(&n);
		for (size_t i = 0; i < n; i++) {
			struct mark_marker *m = ms[i];
			if (m->eventhandler || !m->format_known || !mark_glob_match(name, m))
				continue;
			if (strcmp(m->format, fmt) != 0) {
				mark_registry_unlock();
				return mark_error(EINVAL,
					"mark: probe format \"%s\" does not match marker %s, whose format is "
					"\"%s\" (%s:%u)", fmt, m->name, m->format, m->first_file, m->first_line);
			}
		}
	}
	struct probe_registration *reg = calloc(1, sizeof(*reg));
	if (!reg || !(reg->name = strdup(name)) || (fmt && !(reg->format = strdup(fmt)))) {
		if (reg)
			free(reg->name);
		free(reg);
		mark_registry_unlock();
		return mark_error(ENOMEM, "mark: out of memory registering a probe for %s", name);
	}
	reg->va = va;
	reg->fast = fast;
	reg->priv = priv;
	struct probe_registration **tail = &registrations;
	while (*tail)
		tail = &(*tail)->next;
	*tail = reg;

	struct probe_rebuild rb;
	if (rebuild_prepare_locked(name, &rb) != 0) {
		*tail = NULL;   /* it was last */
		mark_registry_unlock();
		free(reg->name);
		free(reg->format);
		free(reg);
		return mark_error(ENOMEM, "mark: out of memory registering a probe for %s; nothing was changed", name);
	}
	rebuild_publish_locked(&rb);
	mark_registry_unlock();
	mark_probes_retire(rb.retired, rb.nretired);
	return 0;
}

static int probe_unregister(const char *name, mark_probe_fn va, mark_fast_probe_fn fast, void *priv)
{
	if (!name)
		return mark_error(EINVAL, "mark: probe unregistration needs a marker name");
	mark_error_clear();
	mark_registry_lock();
	struct probe_registration **pp = &registrations;
	while (*pp && !((*pp)->va == va && (*pp)->fast == fast && (*pp)->priv == priv &&
			strcmp((*pp)->name, name) == 0))
		pp = &(*pp)->next;
	struct probe_registration *reg = *pp;
	if (!reg) {
		mark_registry_unlock();
		return mark_error(ENOENT, "mark: no such probe is registered for %s", name);
	}
	*pp = reg->next;
	struct probe_rebuild rb;
	if (rebuild_prepare_locked(name, &rb) != 0) {
		*pp = reg;   /* still registered, still connected */
		mark_registry_unlock();
		return mark_error(ENOMEM, "mark: out of memory unregistering a probe for %s; it is still "
					  "registered (try again)", name);
	}
	rebuild_publish_locked(&rb);
	mark_registry_unlock();
	/* After this grace period no thread still runs the probe through an old array. */
	mark_probes_retire(rb.retired, rb.nretired);
	free(reg->name);
	free(reg->format);
	free(reg);
	return 0;
}

int mark_probe_register(const char *name, const char *fmt, mark_probe_fn probe, void *priv)
{
	if (!probe)
		return mark_error(EINVAL, "mark_probe_register: the probe function is NULL");
	return probe_register(name, fmt, probe, NULL, priv);
}

int mark_probe_unregister(const char *name, mark_probe_fn probe, void *priv)
{
	return probe_unregister(name, probe, NULL, priv);
}

int mark_probe_register_fast(const char *name, mark_fast_probe_fn probe, void *priv)
{
	if (!probe)
		return mark_error(EINVAL, "mark_probe_register_fast: the probe function is NULL");
	return probe_register(name, NULL, NULL, probe, priv);
}

int mark_probe_unregister_fast(const char *name, mark_fast_probe_fn probe, void *priv)
{
	return probe_unregister(name, NULL, probe, priv);
}

unsigned mark_marker_probe_count(const struct mark_marker *m)
{
	mark_read_lock();
	const struct mark_probe_array *a = __atomic_load_n(&m->probes, __ATOMIC_CONSUME);
	unsigned n = a ? a->count : 0;
	mark_read_unlock();
	return n;
}

/*
 * Build a va_list over the slots.  The slots are laid out exactly like the
 * stack area of a variadic call (8 bytes per argument), so a va_list whose
 * register areas are marked exhausted reads them in order.
 */
static void call_varargs_probe(const struct mark_probe *p, const struct mark_marker *m,
			       const uint64_t *args)
{
#if defined(__x86_64__)
	va_list ap;
	ap[0].gp_offset = 6 * 8;            /* all six integer registers consumed */
	ap[0].fp_offset = 6 * 8 + 8 * 16;   /* all eight vector registers consumed */
	ap[0].overflow_arg_area = (void *)args;
	ap[0].reg_save_area = NULL;
	p->va(m, p->priv, m->format, &ap);
#elif defined(__aarch64__)
	va_list ap;
	ap.__stack = (void *)args;
	ap.__gr_top = NULL;
	ap.__vr_top = NULL;
	ap.__gr_offs = 0;
	ap.__vr_offs = 0;
	p->va(m, p->priv, m->format, &ap);
#else
	(void)p;
	(void)m;
	(void)args;
#endif
}

/* Two or more probes, or a varargs one: out of mark__fire's frame. */
static void __attribute__((noinline)) fire_all(const struct mark_marker *m,
					       const struct mark_probe_array *a, const uint64_t *args)
{
	for (unsigned i = 0; i < a->count; i++) {
		const struct mark_probe *p = &a->probes[i];
		if (p->fast)
			p->fast(m, p->priv, args);
		else
			call_varargs_probe(p, m, args);
	}
}

/* Out of line, so that mark__fire() can end with a tail call to it. */
static void __attribute__((noinline)) read_unlock(void)
{
	urcu_bp_read_unlock();
}

/*
 * The probes of an armed site, called inside a read-side section (either
 * kind).  Inlined in both callers, so that mark__fire() keeps its shape.
 */
static inline __attribute__((always_inline)) void call_probes(struct mark__site *site, struct mark_marker *m,
							      const uint64_t *args)
{
	/* Inside the read-side section: see struct mark__site.armed. */
	struct mark_probe_array *a = __atomic_load_n(&site->armed, __ATOMIC_RELAXED)
					     ? __atomic_load_n(&m->probes, __ATOMIC_CONSUME) : NULL;
	if (a) {
		const struct mark_probe *p = &a->probes[0];
		if (__builtin_expect(a->count == 1 && p->fast != NULL, 1)) {
			p->fast(m, p->priv, args);
			/* For TSan, the probe's accesses too happen before the
			 * array (and, after the same grace period, what the probe
			 * used) is freed.  Nothing otherwise. */
			TSAN_RELEASE(a);
		} else {
			fire_all(m, a, args);
			TSAN_RELEASE(a);
		}
	}
}

/*
 * mark__fire() on a thread not registered with liburcu-bp: its first
 * event, or one during its exit (see mark_read_lock_slow()).
 */
static void __attribute__((noinline, cold)) fire_unregistered(struct mark__site *site,
								struct mark_marker *m,
								const uint64_t *args)
{
	mark_read_lock();
	call_probes(site, m, args);
	mark_read_unlock();
}

/*
 * One fast probe (the tracer, a bench or a user's) is the case that
 * counts: it is called straight from here, and the read-side section is
 * closed by a tail call, so that this frame keeps nothing live across the
 * probe call and saves no registers.
 */
void mark__fire(struct mark__site *site, const uint64_t *args)
{
	struct mark_marker *m = __atomic_load_n(&site->marker, __ATOMIC_ACQUIRE);
	if (__builtin_expect(m == NULL, 0))
		return;   /* constructor not run yet */
	/* The same TLS load as urcu_bp_read_lock()'s own check (merged): the
	 * fast path costs nothing more. */
	if (__builtin_expect(MARK_URCU_BP_READER() == NULL, 0)) {
		fire_unregistered(site, m, args);
		return;
	}
	urcu_bp_read_lock();
	call_probes(site, m, args);
	read_unlock();
}
