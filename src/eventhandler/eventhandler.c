/*
 * Event handler lists (FreeBSD EVENTHANDLER(9) semantics) on the marker
 * machinery.
 *
 * A list is found by name in a process-wide table and never freed, so an
 * invoke site may cache its pointer.  Its handlers are an array sorted by
 * (priority, registration order), published with a release store and
 * read under an RCU read-side critical section (liburcu-bp: a library
 * cannot ask application threads to register).  Every change builds a new
 * array; old arrays and removed handlers are freed after a grace period.
 *
 * Each EVENTHANDLER_INVOKE is a marker site of provider "eventhandler"
 * named after the list.  The list holds one reference on its marker's arm
 * count while it has handlers, so the registry keeps every invoke site -
 * in objects loaded now or later - armed exactly while someone listens.
 *
 * Locking and ordering:
 * - The registry lock (mark_registry_lock) serialises every change to the
 *   table, to a list's array and to arming.  Nothing under it waits for a
 *   grace period or calls into the dynamic loader (dladdr runs before it is
 *   taken), because constructors run with the loader's lock held and take
 *   the registry lock, and invocations may run while we hold it.
 * - Readers (mark__eh_enter) take no lock, not even the first time a site
 *   runs (list_find: the list table is insert-only, see list_hash): the
 *   urcu-bp read lock, an acquire load of the array, the calls.
 * - A handler's `dead` flag is set (relaxed atomic) before it leaves the
 *   array (or instead, when no smaller array can be allocated: it is then
 *   removed in place, and dropped by the list's next change; see
 *   removed_in_place_locked).  Readers test it before each call, so an invocation already
 *   iterating an old array on the deregistering thread itself - a handler
 *   that deregisters a later handler with NOWAIT - does not call it.  Other
 *   threads are covered by the grace period (DEREGISTER) or not at all
 *   (NOWAIT, which documents that one more call may happen).
 * - Memory a reader may still hold (a replaced array, a removed handler)
 *   goes on the `retired` list, under the registry lock, once it is out of
 *   reach of new readers (after the release store that replaced the array).
 *   reclaim() takes the whole list under the lock, waits for a grace period
 *   with the lock dropped, and frees what it took: every reader that could
 *   hold one of those objects began before the object was unpublished,
 *   hence before the grace period, and has ended when it returns.  It runs
 *   only outside a read-side section (a thread cannot wait for itself), at
 *   DEREGISTER (which waits anyway) and, once the list holds more than
 *   RECLAIM_BYTES, at any register or deregistration.  No call_rcu: its
 *   worker thread made every process with two handlers on one list
 *   multi-threaded, liburcu's fork handler started it again in every child
 *   (which then could not unshare(CLONE_NEWUSER)), and a handler that forked
 *   after a NOWAIT deregistration deadlocked with it.  libmark starts no
 *   thread for event handlers.
 */
#define _GNU_SOURCE
/*
 * Inline urcu-bp read-side fast paths, except under ASan+UBSan: liburcu-bp
 * (0.13) places its per-thread reader records in an mmap'ed arena at
 * addresses that do not honour the 128-byte alignment declared for struct
 * urcu_bp_reader, and UBSan aborts on the first inlined access.  The
 * fields are naturally aligned, which is all the loads and stores need;
 * the out-of-line read side in liburcu-bp.so is not instrumented.
 */
#if defined(__SANITIZE_ADDRESS__)
#define EH_URCU_OUT_OF_LINE 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer)
#define EH_URCU_OUT_OF_LINE 1
#endif
#endif
#ifndef EH_URCU_OUT_OF_LINE
#define _LGPL_SOURCE
#endif
#include "../core/internal.h"
#include "../util/printable.h"
#include <mark/eventhandler.h>

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <urcu-bp.h>
#include "core/rcu.h"

/*
 * ThreadSanitizer does not see a grace period as synchronisation.  Readers
 * release `tsan_grace` when they leave a read-side section; whoever frees
 * memory after a grace period acquires it first, which tells TSan what
 * the grace period guarantees: every reader access happened before the free.
 */
#ifdef MARK_TSAN
static char tsan_grace;
#endif
#define TSAN_READER_DONE() MARK_TSAN_RELEASE(&tsan_grace)
#define TSAN_BEFORE_FREE() MARK_TSAN_ACQUIRE(&tsan_grace)


/* A link of the retired list: an array or a handler waiting to be freed. */
struct eh_retired {
	struct eh_retired *next;
	bool is_handler;
};

struct eh_handler {
	struct mark__eh_entry pub;   /* first: the arrays point here              */
	/* The tag returned for this registration: a number, not an address.
	 * An address is reused by a later registration once this record is
	 * freed, and a second DEREGISTER of the old tag then removed that
	 * handler; numbers are never handed out twice (next_tag_id). */
	uintptr_t tag_id;
	int priority;
	struct mark__eh_list *list;
	/* Where the handler's code lives, from dladdr1() at registration; the
	 * debug check compares base and link map (as addresses only) with what
	 * dladdr1() says at invocation.  The path is for its message. */
	const void *object_base;
	const void *object_map;
	char *object_path;
	struct eh_retired retired;
};

struct eh_array {
	struct eh_retired retired;
	struct mark__eh_array pub;
	struct mark__eh_entry *slots[];
};

struct mark__eh_list {
	char *name;
	/* rcu_dereference()d by mark__eh_enter; assigned under the registry lock. */
	struct eh_array *handlers;
	struct mark_marker *marker;  /* set when the first handler arrives       */
	bool armed;                  /* holds one reference on marker's arm count */
	struct mark__eh_list *next;
};

/*
 * The lists, by name.  Written under the registry lock; read without it
 * (list_find), so that an invoke site's first run takes no lock: it may
 * run in a signal handler that interrupted this very thread inside
 * libmark, holding the registry lock.  Lists are only ever added, at the
 * head of a chain, with a release store after every field a reader reads
 * (name, next) is written; they are never removed, freed or renamed, and
 * `next` never changes once published.  So a reader walking a chain with
 * acquire loads sees complete lists, and any pointer it finds stays valid.
 */
#define LIST_HASH_SIZE 256
static struct mark__eh_list *list_hash[LIST_HASH_SIZE];

/*
 * The last tag handed out (registry lock).  Tags are 1, 2, 3, ... cast to
 * eventhandler_tag: never NULL, never dereferenced, unique in the process
 * (a 64-bit count does not wrap; a 32-bit one would after 2^32
 * registrations).  A forked child goes on counting from its parent's value,
 * so its tags stay distinct from those the parent gave it too.
 */
static uintptr_t next_tag_id;

/*
 * Debug mode: before each invocation, check that every handler's code is
 * still in the object it was registered from (see check_handlers_loaded).
 * On by default in unoptimised builds without NDEBUG (a Debug build of
 * libmark); MARK_EVENTHANDLER_DEBUG=1 or 0 (on/off, yes/no, true/false) in the environment overrides.
 * Written once (pthread_once) before any handler exists.
 */
static int debug_mode;
static pthread_once_t setup_once = PTHREAD_ONCE_INIT;

/*
 * Retired memory (see the header comment), registry lock.  A forked child
 * inherits the list; its own grace periods cover it (the parent's other
 * threads, and their read-side sections, do not exist in the child).
 */
static struct eh_retired *retired;
static size_t retired_bytes;
/* Above this, registrations and NOWAIT deregistrations reclaim too, so a
 * program that never calls DEREGISTER does not keep every array it
 * replaced (registering n handlers retires arrays of 1..n-1 slots). */
#define RECLAIM_BYTES (64 * 1024)

/*
 * exit().  EVENTHANDLER_DEFINE's destructor deregisters its handler with
 * MARK__EH_AT_UNLOAD, and waits for a grace period only because its object
 * is about to be unmapped (dlclose).  At exit nothing is unmapped, and the
 * wait would keep the process from exiting for as long as a handler blocks
 * on another thread (for ever if it waits for the exiting thread).
 *
 * `exiting` is set by eh_at_exit, an atexit handler.  exit() runs the
 * atexit handlers in reverse order of registration, and _dl_fini, which
 * runs the destructors, is itself one of them, registered by
 * __libc_start_main before the executable's constructors run and after
 * every constructor of the shared objects loaded at startup (libmark's
 * among them).  So a handler registered from libmark's constructor would
 * run after the destructors; eh_at_exit is registered instead at the first
 * EVENTHANDLER_REGISTER called from the main executable (its DEFINE
 * constructors, or later code), which is after _dl_fini's registration.  A
 * program whose executable never registers a handler keeps the old
 * behaviour (DEFINE destructors wait at exit).  atexit() from libmark
 * registers under libmark's own DSO handle: a dlclose of libmark itself
 * runs and removes it.
 *
 * Only the exiting thread writes `exiting` (relaxed: it is read by the
 * same thread's destructors, and a destructor on another thread that
 * misses it merely waits as before).  Deregistrations after it is set by
 * DEFINE destructors neither wait nor free (the memory stays on the
 * retired list: readers may still hold it).  An explicit
 * EVENTHANDLER_DEREGISTER still waits (its caller may free the handler's
 * argument next), and so would a dlclose made after eh_at_exit ran - except
 * that a DEFINE destructor cannot tell it from exit: documented.
 */
static int exiting;
static int exit_hook_late;   /* atomic: eh_at_exit registered from the executable */

static void eh_at_exit(void)
{
	__atomic_store_n(&exiting, 1, __ATOMIC_RELAXED);
}

/* mark__eh_register's caller is code of the main executable. */
static bool called_from_executable(const void *caller)
{
	Dl_info exe, in;
	const void *phdr = (const void *)(uintptr_t)getauxval(AT_PHDR);
	return phdr && dladdr(phdr, &exe) && dladdr(caller, &in) && exe.dli_fbase &&
	       exe.dli_fbase == in.dli_fbase;
}

static void setup_fn(void)
{
	/* secure_getenv: the caller of a setuid program does not pick its mode. */
	const char *env = secure_getenv("MARK_EVENTHANDLER_DEBUG");
#if defined(NDEBUG) || defined(__OPTIMIZE__)
	int debug = 0;
#else
	int debug = 1;
#endif
	/* The spellings of every MARK_* switch (=off was taken for on). */
	const int wanted = env && *env ? mark_env_bool(env) : debug;
	if (wanted < 0) {
		char value[100];
		mark_printable_brief(value, sizeof(value), env);
		mark_warn("mark: MARK_EVENTHANDLER_DEBUG=%s is not valid (use " MARK_ENV_BOOL_WORDS "); the checks "
			  "are %s, as this libmark was built\n", value, debug ? "on" : "off");
	} else {
		debug = wanted;
	}
	__atomic_store_n(&debug_mode, debug, __ATOMIC_RELAXED);
	mark_init();
}

static void setup(void)
{
	pthread_once(&setup_once, setup_fn);
}

static unsigned hash_name(const char *s)
{
	return mark_name_hash(s) % LIST_HASH_SIZE;
}

/* With or without the registry lock; async-signal-safe (no lock, no allocation). */
static struct mark__eh_list *list_find(const char *name)
{
	/* Acquire: pairs with the release in list_get_locked (name and next). */
	for (struct mark__eh_list *l = __atomic_load_n(&list_hash[hash_name(name)], __ATOMIC_ACQUIRE); l;
	     l = __atomic_load_n(&l->next, __ATOMIC_ACQUIRE))
		if (strcmp(l->name, name) == 0)
			return l;
	return NULL;
}

/* Find or create list `name` (registry lock held: the only writer). */
static struct mark__eh_list *list_get_locked(const char *name)
{
	struct mark__eh_list *l = list_find(name);
	if (l)
		return l;
	l = calloc(1, sizeof(*l));
	if (!l || !(l->name = strdup(name))) {
		free(l);
		return NULL;
	}
	unsigned h = hash_name(name);
	/* Relaxed: `l` is not published yet; the head only changes under our lock. */
	__atomic_store_n(&l->next, __atomic_load_n(&list_hash[h], __ATOMIC_RELAXED), __ATOMIC_RELAXED);
	/* Release: name and next are visible to whoever loads the new head. */
	__atomic_store_n(&list_hash[h], l, __ATOMIC_RELEASE);
	return l;
}

static void free_handler(struct eh_handler *h)
{
	free(h->object_path);
	free(h);
}

static struct eh_array *array_alloc(unsigned count)
{
	struct eh_array *a = malloc(sizeof(*a) + count * sizeof(a->slots[0]));
	if (a) {
		a->pub.count = count;
		a->pub.entries = a->slots;
	}
	return a;
}

static unsigned array_count(const struct eh_array *a)
{
	return a ? a->pub.count : 0;
}

/*
 * A handler deregistered in place (registry lock held).  Normally a
 * handler's `dead` flag is set under the lock together with the store that
 * publishes an array without it, so a published array holds no dead
 * handler - except one deregistered when no smaller array could be
 * allocated: that handler stays in the array, dead, until the list's next
 * change drops it (see mark__eh_deregister).  Under the lock, "dead and
 * still in the current array" therefore means exactly that.
 */
static bool removed_in_place_locked(const struct mark__eh_entry *e)
{
	return __atomic_load_n(&e->dead, __ATOMIC_RELAXED) != 0;
}

/* The handlers of `a` that are registered (registry lock held). */
static unsigned live_count_locked(const struct eh_array *a)
{
	unsigned live = 0;
	for (unsigned i = 0; i < array_count(a); i++)
		live += !removed_in_place_locked(a->slots[i]);
	return live;
}

/*
 * Put an object no new reader can reach on the retired list (registry
 * lock held, after the store that unpublished it: both happen under the
 * lock, so whoever takes the list later sees it unpublished).
 */
static void retire_locked(struct eh_retired *r, bool is_handler, size_t bytes)
{
	r->is_handler = is_handler;
	r->next = retired;
	retired = r;
	retired_bytes += bytes;
}

/* Publish `next` (NULL when empty) as the list's handlers and retire the old array. */
static void publish_locked(struct mark__eh_list *l, struct eh_array *next)
{
	struct eh_array *old = l->handlers;
	/* Release: the array's contents, and the handlers it points to, are
	 * visible before the pointer. */
	__atomic_store_n(&l->handlers, next, __ATOMIC_RELEASE);
	if (old)
		retire_locked(&old->retired, false, sizeof(*old) + old->pub.count * sizeof(old->slots[0]));
}

/*
 * Retire the handlers of `old` that are dead (registry lock held), once an
 * array without them has been published: those deregistered in place, and
 * those just deregistered.  No new reader can reach them.
 */
static void retire_removed_locked(const struct eh_array *old)
{
	for (unsigned i = 0; i < array_count(old); i++)
		if (removed_in_place_locked(old->slots[i]))
			retire_locked(&((struct eh_handler *)old->slots[i])->retired, true,
				      sizeof(struct eh_handler));
}

/*
 * Free the retired list after a grace period, if this thread may wait for
 * one (it is not inside an invocation or a probe: it would wait for
 * itself) and, unless `always`, the list has grown past RECLAIM_BYTES.
 * With `always` it waits for a grace period in any case.
 * Called without the registry lock: nothing waits for a grace period under
 * it (see the header comment).  Objects retired while we wait stay for the
 * next call.
 */
static void reclaim(bool always)
{
	if (mark_read_ongoing())
		return;
	mark_registry_lock();
	struct eh_retired *take = NULL;
	if (always || retired_bytes > RECLAIM_BYTES) {
		take = retired;
		retired = NULL;
		retired_bytes = 0;
	}
	mark_registry_unlock();
	/* `always` (DEREGISTER) waits even with nothing to free: another
	 * thread's reclaim may have taken this caller's handler and still be
	 * waiting, and DEREGISTER promises that no invocation still runs it. */
	if (!take && !always)
		return;
	/* Cannot return false: this thread is outside any read-side section. */
	if (!mark_grace_period()) {
		mark_registry_lock();   /* keep them rather than free them under readers */
		struct eh_retired *last = take;
		while (last->next)
			last = last->next;
		last->next = retired;
		retired = take;
		mark_registry_unlock();
		return;
	}
	TSAN_BEFORE_FREE();
	while (take) {
		struct eh_retired *r = take;
		take = r->next;
		if (r->is_handler)
			free_handler((struct eh_handler *)((char *)r - offsetof(struct eh_handler, retired)));
		else
			free((char *)r - offsetof(struct eh_array, retired));
	}
}

/* Bring the arming of the list's invoke sites in line with its handler count. */
static int update_arming_locked(struct mark__eh_list *l, unsigned count)
{
	if (count > 0 && !l->armed) {
		if (!l->marker)
			l->marker = mark_eventhandler_marker_get_locked(l->name);
		if (!l->marker)
			return mark_error(ENOMEM, "mark: EVENTHANDLER_REGISTER(%s): out of memory creating "
						  "the list's marker (or the name \"eventhandler:%s\" is taken "
						  "by a MARK() site)", l->name, l->name);
		int r = mark_eventhandler_arm_locked(l->marker, true);
		if (r < 0)
			return r;
		l->armed = true;
	} else if (count == 0 && l->armed) {
		/* On failure the sites stay armed and keep calling into an empty
		 * list (correct, only slower); the next last deregistration retries. */
		if (mark_eventhandler_arm_locked(l->marker, false) >= 0)
			l->armed = false;
		else
			mark_warn("mark: eventhandler list %s: could not disarm its invoke sites: %s\n",
				l->name, mark_last_error());
	}
	return 0;
}

eventhandler_tag mark__eh_register(const char *name, void (*func)(void), void *arg, int priority)
{
	if (!name || !*name || !func) {
		mark_error(EINVAL, "mark: EVENTHANDLER_REGISTER: %s is NULL or empty",
			   !func ? "the handler function" : "the list name");
		return NULL;
	}
	setup();
	mark_error_clear();
	struct eh_handler *h = calloc(1, sizeof(*h));
	if (!h) {
		mark_error(ENOMEM, "mark: EVENTHANDLER_REGISTER(%s): out of memory", name);
		return NULL;
	}
	h->pub.func = func;
	h->pub.arg = arg;
	h->priority = priority;
	/* Before the registry lock: dladdr takes the loader's lock. */
	if (!__atomic_load_n(&exit_hook_late, __ATOMIC_RELAXED) &&
	    called_from_executable(__builtin_extract_return_addr(__builtin_return_address(0))) &&
	    !__atomic_exchange_n(&exit_hook_late, 1, __ATOMIC_RELAXED) && atexit(eh_at_exit) != 0)
		__atomic_store_n(&exit_hook_late, 0, __ATOMIC_RELAXED);   /* try again next time */
	Dl_info info;
	void *map = NULL;
	if (dladdr1((const void *)func, &info, &map, RTLD_DL_LINKMAP) && info.dli_fbase) {
		h->object_base = info.dli_fbase;
		h->object_map = map;
		h->object_path = info.dli_fname ? strdup(info.dli_fname) : NULL;
	}

	mark_registry_lock();
	struct mark__eh_list *l = list_get_locked(name);
	struct eh_array *old = l ? l->handlers : NULL;
	unsigned n = array_count(old), live = live_count_locked(old);
	struct eh_array *next = l ? array_alloc(live + 1) : NULL;
	if (!next) {
		mark_registry_unlock();
		free_handler(h);
		mark_error(ENOMEM, "mark: EVENTHANDLER_REGISTER(%s): out of memory", name);
		return NULL;
	}
	h->list = l;
	if (++next_tag_id == 0)
		++next_tag_id;   /* never NULL */
	h->tag_id = next_tag_id;
	/* After every handler of lower or equal priority: equal priorities run
	 * in registration order.  Handlers removed in place are dropped. */
	unsigned k = 0;
	bool placed = false;
	for (unsigned i = 0; i < n; i++) {
		struct mark__eh_entry *e = old->slots[i];
		if (removed_in_place_locked(e))
			continue;
		if (!placed && ((struct eh_handler *)e)->priority > priority) {
			next->slots[k++] = &h->pub;
			placed = true;
		}
		next->slots[k++] = e;
	}
	if (!placed)
		next->slots[k++] = &h->pub;

	/* Arm before publishing: an invocation that runs in between finds the
	 * old array, which is what it would have found a moment earlier. */
	int r = update_arming_locked(l, live + 1);
	if (r < 0) {
		mark_registry_unlock();
		free(next);
		free_handler(h);
		return NULL;
	}
	publish_locked(l, next);
	retire_removed_locked(old);
	/* Read under the lock: once it is dropped, a deregistration on another
	 * thread may free h. */
	const uintptr_t tag_id = h->tag_id;
	mark_registry_unlock();
	reclaim(false);
	return (eventhandler_tag)tag_id;
}

/* Whether `tag` is the tag of handler `e` (see tag_id). */
static bool tag_names(const struct mark__eh_entry *e, eventhandler_tag tag)
{
	return ((const struct eh_handler *)e)->tag_id == (uintptr_t)tag;
}

/*
 * The function of the handler registered as `tag` on list `name`, or NULL;
 * only for a message (registry lock taken here: the record may be freed
 * as soon as it is dropped, the address of the code is what we keep).
 */
static void (*tag_func_unlocked(const char *name, eventhandler_tag tag))(void)
{
	void (*func)(void) = NULL;
	mark_registry_lock();
	const struct mark__eh_list *l = list_find(name);
	const struct eh_array *a = l ? l->handlers : NULL;
	for (unsigned i = 0; i < array_count(a); i++)
		if (tag_names(a->slots[i], tag))
			func = a->slots[i]->func;
	mark_registry_unlock();
	return func;
}

void mark__eh_define_failed(const char *name, const char *func)
{
	/* The names come from the program's source (#name, #func), but are
	 * escaped all the same: the line goes to a terminal or a log. */
	char list[128], handler[128];
	mark_printable_brief(list, sizeof(list), name ? name : "?");
	mark_printable_brief(handler, sizeof(handler), func ? func : "?");
	const char *why = mark_last_error();
	if (strncmp(why, "mark: ", 6) == 0)
		why += 6;   /* one "mark: " at the start of the line is enough */
	mark_warn("mark: EVENTHANDLER_DEFINE(%s, %s): the handler is not registered and will not be called: "
		  "%s\n", list, handler, why);
}

int mark__eh_deregister(const char *name, eventhandler_tag tag, int wait)
{
	if (!name || !*name)
		return mark_error(EINVAL, "mark: EVENTHANDLER_DEREGISTER: the list name is NULL or empty");
	setup();
	mark_error_clear();
	/* An EVENTHANDLER_DEFINE destructor at exit: see `exiting`. */
	bool at_exit = wait == MARK__EH_AT_UNLOAD && __atomic_load_n(&exiting, __ATOMIC_RELAXED);
	if (at_exit)
		wait = 0;
	if (wait && mark_read_ongoing()) {
		/* Waiting for the grace period from inside an invocation would wait
		 * for ourselves forever.  Do what the caller can safely get. */
		if (wait == MARK__EH_AT_UNLOAD) {
			/* dlclose from inside a handler: the object is unmapped when
			 * this destructor returns, and invocations on other threads
			 * may be running its handler (they crash there).  Nothing
			 * here can wait for them without waiting for this thread's
			 * own invocation too; say what happens and what to do. */
			Dl_info info;
			const char *object = "a shared object";
			if (tag && dladdr((const void *)tag_func_unlocked(name, tag), &info) && info.dli_fname)
				object = info.dli_fname;
			char printable[256];
			mark_printable_brief(printable, sizeof(printable), object);
			mark_warn("mark: %s is unloaded (dlclose) from inside an event handler while its handler "
				  "on list %s is registered: libmark cannot wait for other threads to leave that "
				  "handler, and a thread still running it will crash.  Call dlclose outside event "
				  "handlers (e.g. hand the unload to another thread).\n", printable, name);
		} else {
			mark_warn("mark: EVENTHANDLER_DEREGISTER(%s) called from inside an event handler "
				  "would wait for itself; deregistering without waiting. Use "
				  "EVENTHANDLER_DEREGISTER_NOWAIT inside handlers.\n", name);
		}
		wait = 0;
	}
	mark_registry_lock();
	struct mark__eh_list *l = list_find(name);
	struct eh_array *old = l ? l->handlers : NULL;
	unsigned n = array_count(old), live = live_count_locked(old);
	unsigned removed = 0;
	for (unsigned i = 0; i < n; i++)
		removed += !removed_in_place_locked(old->slots[i]) && (!tag || tag_names(old->slots[i], tag));
	if (removed == 0) {
		mark_registry_unlock();
		if (!tag)
			return 0;   /* "remove every handler" of an empty list */
		return mark_error(ENOENT, "mark: EVENTHANDLER_DEREGISTER(%s): this tag is not registered "
					  "on list %s (already deregistered, or registered on another list)",
				  name, name);
	}
	/*
	 * Without memory for the smaller array the handler is removed in
	 * place: marked dead and left in the array, which every invocation
	 * then skips it in, until the list's next change drops it.  A
	 * deregistration must not fail: an EVENTHANDLER_DEFINE destructor at
	 * dlclose cannot report a failure, and its code is unmapped next (out
	 * of memory there left the handler registered and the next invocation
	 * jumped into the unmapped object).
	 */
	struct eh_array *next = NULL;
	bool in_place = false;
	if (live > removed) {
		next = array_alloc(live - removed);
		in_place = !next;
	}
	unsigned k = 0;
	for (unsigned i = 0; i < n; i++) {
		struct mark__eh_entry *e = old->slots[i];
		if (removed_in_place_locked(e))
			continue;   /* removed in place before: retired below */
		if (!tag || tag_names(e, tag)) {
			/* Before it leaves the array (or, in place, instead): see
			 * "dead" in the header comment.  Relaxed: an invocation on
			 * another thread that still loads the array holding it began
			 * before the grace period that DEREGISTER waits for, or
			 * begins after it and sees the store (a grace period orders
			 * every store before it with every read-side section after it). */
			__atomic_store_n(&e->dead, 1, __ATOMIC_RELAXED);
		} else if (next) {
			next->slots[k++] = e;
		}
	}
	if (!in_place) {
		publish_locked(l, next);
		/* Unpublished by that store, under the same lock hold, before
		 * anyone can take the retired list. */
		retire_removed_locked(old);
	}
	update_arming_locked(l, live - removed);
	mark_registry_unlock();

	/* wait: every invocation that could still see the handler began before
	 * the new array was published; reclaim(true) returns after all of them
	 * end (its grace period begins after our unlock), and frees them.  At
	 * exit: neither wait nor free. */
	if (!at_exit)
		reclaim(wait != 0);
	return 0;
}

/*
 * Debug builds: a handler whose code is no longer where it was registered
 * (its object was dlclose'd while it was still registered) would be called
 * into unmapped memory or into whatever was mapped there since.  Say which
 * handler and which library, and stop before calling it.
 *
 * dladdr() takes the dynamic loader's lock, so it must not run inside a
 * read-side section: a dlclose holds that lock while the unloaded object's
 * EVENTHANDLER_DEFINE destructor (or any DEREGISTER in a destructor) waits
 * for a grace period, which waits for that section - each thread waited
 * for the other for ever.  So each handler is copied out under a short
 * section of its own (what it needs: the function, the argument, where it
 * was registered from), and checked after the section ends.  An
 * invocation nested in a handler is inside its caller's section already:
 * it is not checked (the outermost invocation checks).  A handler whose
 * object looks unloaded is looked up again by its tag (never reused): a
 * DEFINE destructor on another thread may have deregistered it, and the
 * object been unmapped, since it was copied; only a handler still
 * registered after its object went away is the error.
 */
/* Whether the handler with tag number tag_id is registered on l now (no
 * registry lock: this runs in invocations). */
static bool still_registered(const struct mark__eh_list *l, uintptr_t tag_id)
{
	bool found = false;
	mark_read_lock();
	const struct eh_array *a = __atomic_load_n(&l->handlers, __ATOMIC_ACQUIRE);
	for (unsigned i = 0; a && i < a->pub.count; i++)
		if (((const struct eh_handler *)a->slots[i])->tag_id == tag_id &&
		    !__atomic_load_n(&a->slots[i]->dead, __ATOMIC_RELAXED))
			found = true;
	mark__eh_exit();
	return found;
}

static __attribute__((noinline, cold)) void check_handlers_loaded(const struct mark__eh_list *l)
{
	if (mark_read_ongoing())
		return;
	for (unsigned i = 0;; i++) {
		void (*func)(void) = NULL;
		void *arg = NULL;
		const void *base = NULL, *object_map = NULL;
		uintptr_t tag_id = 0;
		char path[4096] = "";
		bool have_path = false, end = false;
		mark_read_lock();
		const struct eh_array *a = __atomic_load_n(&l->handlers, __ATOMIC_ACQUIRE);
		if (!a || i >= a->pub.count) {
			end = true;
		} else {
			const struct eh_handler *h = (const struct eh_handler *)a->slots[i];
			if (!__atomic_load_n(&h->pub.dead, __ATOMIC_RELAXED)) {
				func = h->pub.func;
				arg = h->pub.arg;
				base = h->object_base;
				object_map = h->object_map;
				tag_id = h->tag_id;
				if (h->object_path) {
					snprintf(path, sizeof(path), "%s", h->object_path);
					have_path = true;
				}
			}
		}
		mark__eh_exit();
		if (end)
			return;
		if (!base)
			continue;
		/* Only addresses are compared: what dladdr1() points to (the
		 * object's name, its link map) belongs to the loader, and a
		 * dlclose on another thread may free it as soon as we have it. */
		Dl_info info;
		void *map = NULL;
		bool loaded = dladdr1((const void *)func, &info, &map, RTLD_DL_LINKMAP) &&
			      info.dli_fbase == base && map == object_map;
		if (!loaded && still_registered(l, tag_id)) {
			mark_warn(
				"mark: eventhandler list %s: handler %p (arg %p) was registered from %s, which "
				"has been unloaded (dlclose) while the handler was still registered; calling it "
				"would jump into unmapped memory.  Deregister handlers before dlclose (e.g. in a "
				"destructor, or use EVENTHANDLER_DEFINE).  Aborting (MARK_EVENTHANDLER_DEBUG).\n",
				l->name, (void *)(uintptr_t)func, arg, have_path ? path : "?");
			abort();
		}
	}
}

/*
 * First invocation through an invoke site: find the list, remember it.
 * No lock and no setup() (pthread_once): the site may run in a signal
 * handler that interrupted this thread inside libmark.  An armed site's
 * list exists (it has handlers, so a registration created it, and ran
 * setup()); a list that does not exist has no handler to call, and is
 * neither created nor cached here (only a site that is never patched, under
 * MARK_DISABLE, comes back, and looks it up again).
 */
static __attribute__((noinline, cold)) struct mark__eh_list *lookup_and_cache(struct mark__eh_list **cache,
									   const char *name)
{
	struct mark__eh_list *l = list_find(name);
	if (l)
		__atomic_store_n(cache, l, __ATOMIC_RELEASE);
	return l;
}

const struct mark__eh_array *mark__eh_enter(struct mark__eh_list **cache, const char *name,
					     const struct mark__site *site)
{
	(void)site;   /* only its address escaping matters (see the header) */
	/* Acquire pairs with the release in lookup_and_cache: the list's fields are visible. */
	struct mark__eh_list *l = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
	if (__builtin_expect(l == NULL, 0))
		l = lookup_and_cache(cache, name);
	/* Before this invocation's section: see check_handlers_loaded. */
	if (__builtin_expect(__atomic_load_n(&debug_mode, __ATOMIC_RELAXED), 0) && l)
		check_handlers_loaded(l);
	mark_read_lock();
	if (!l)
		return NULL;   /* no such list yet: no handler */
	/* Acquire (consume would do): the array's contents and its handlers. */
	struct eh_array *a = __atomic_load_n(&l->handlers, __ATOMIC_ACQUIRE);
	if (!a)
		return NULL;
	return &a->pub;
}

void mark__eh_exit(void)
{
	TSAN_READER_DONE();
	mark_read_unlock();
}

unsigned mark_eventhandler_count(const char *name)
{
	if (!name)
		return 0;
	/* The lock keeps the array from being freed while we read its count. */
	mark_registry_lock();
	const struct mark__eh_list *l = list_find(name);
	unsigned n = l ? live_count_locked(l->handlers) : 0;
	mark_registry_unlock();
	return n;
}
