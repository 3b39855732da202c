/*
 * Internal interfaces of libmark's core: the registry (objects, markers,
 * sites, arming rules) and probes.  Not installed.
 *
 * Locking: one mutex, the registry lock, serialises every change to the
 * registry, to probe lists and to code.  The hot path (mark__fire) takes no
 * lock: it reads site->marker (acquire; written once) and the marker's
 * probe array under an RCU read-side critical section (liburcu-bp).
 */
#ifndef MARK_CORE_INTERNAL_H
#define MARK_CORE_INTERNAL_H

#include <mark/mark.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MARK_HIDDEN __attribute__((visibility("hidden")))

/*
 * Variables that a fork handler (pthread_atfork) writes: the registry's and
 * the tracer's locks, the agent's descriptor table and state.  At fork every
 * private writable page turns copy-on-write, so each page these handlers
 * write costs a page fault and a 4 KiB copy in the parent (its after-fork
 * unlocks) and again in every child: a forking server pays it per
 * connection.  Left in .data/.bss they were spread over five pages (half a
 * megabyte of caches lies between them); in a section of their own the
 * linker places them together, as one output section (an orphan section,
 * not matched by the default scripts' .data.* pattern, so the input
 * sections of every object are merged) -- in practice one page.  Test:
 * process_fork_state_page, which lists the variables.
 */
#define MARK_FORK_STATE __attribute__((section("mark_fork_state")))

/*
 * ThreadSanitizer builds.  TSan does not see some of our orderings (an
 * RCU grace period, liburcu being uninstrumented):
 * MARK_TSAN_RELEASE(p) / MARK_TSAN_ACQUIRE(p) state them; elsewhere they
 * are nothing.
 */
#if defined(__SANITIZE_THREAD__)
#define MARK_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MARK_TSAN 1
#endif
#endif
#ifdef MARK_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define MARK_TSAN_RELEASE(p) __tsan_release(p)
#define MARK_TSAN_ACQUIRE(p) __tsan_acquire(p)
#else
#define MARK_TSAN_RELEASE(p) ((void)0)
#define MARK_TSAN_ACQUIRE(p) ((void)0)
#endif

/* FNV-1a of a marker or list name, for the registries' hash tables. */
static inline unsigned mark_name_hash(const char *s)
{
	unsigned h = 2166136261u;
	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

/* ---- errors ---- */
/* Record the message returned by mark_last_error() on this thread; returns -err. */
MARK_HIDDEN int mark_error(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
MARK_HIDDEN void mark_error_clear(void);
/*
 * One line on stderr, printf-style.  Like mark_error()'s text, the line is
 * escaped (src/util/printable.h) except for its final newline: libmark's
 * messages repeat environment values, paths and globs chosen by whoever
 * started the program, and a terminal must not act on them.
 */
MARK_HIDDEN void mark_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Between these (nesting), mark_warn() keeps its lines and the outermost
 * release writes them: for code holding a lock that fork() takes, since a
 * write to stderr can block for ever (error.c). */
MARK_HIDDEN void mark_warn_hold(void);
MARK_HIDDEN void mark_warn_release(void);
/*
 * The value of a MARK_* variable that turns something on or off
 * (MARK_AGENT, MARK_EVENTHANDLER_DEBUG): 1 for 1, on, yes, true; 0 for 0,
 * off, no, false (any case); -EINVAL for anything else, which the caller
 * refuses with a line naming MARK_ENV_BOOL_WORDS, never guessing.
 */
MARK_HIDDEN int mark_env_bool(const char *value);
#define MARK_ENV_BOOL_WORDS "1, on, yes, true, or 0, off, no, false"
/* A module's hook, called (no lock held) after each object with markers
 * registers, and at once if one already has.  0, or -ENOSPC. */
MARK_HIDDEN int mark_core_on_object_registered(void (*hook)(void));

/* ---- formats ---- */
/* Parse a printf format into argument descriptions.  Returns the argument
 * count, or -EINVAL with a message naming the offending conversion. */
MARK_HIDDEN int mark_format_parse(const char *fmt, enum mark_arg_type *types, unsigned *sizes,
				  unsigned max, char *err, size_t errlen);
/* Field names (strdup'ed into names[0..nargs)): the word the format puts
 * before each conversion ("pid %d comm %s", "fd=%d"), else the argument
 * expression from the stringified argument list ("(void *)r" gives r,
 * req->len gives req_len), else argN. */
MARK_HIDDEN void mark_format_arg_names(const char *fmt, const char *arg_names, unsigned nargs, char **names);

/* ---- probes ---- */
struct mark_probe {
	mark_probe_fn va;
	mark_fast_probe_fn fast;
	void *priv;
};

/* RCU-protected: replaced as a whole, freed after a grace period. */
struct mark_probe_array {
	unsigned count;
	struct mark_probe probes[];
};

struct mark_site_rt;

/* The most arguments a marker's format may declare (MARK() itself stops
 * at MARK__MAX_ARGS; a hand-made descriptor may claim a few more). */
#define MARK_MAX_MARKER_ARGS (MARK__MAX_ARGS + 4)

struct mark_marker {
	char *name;            /* display name: "name" or "provider:name"      */
	char *provider;
	char *probe;           /* name without provider                         */
	char *format;          /* from the first site with arguments/format      */
	const char *first_file;
	unsigned first_line;
	unsigned id;
	unsigned nargs;
	struct mark_arg *args;
	bool format_known;
	bool eventhandler;     /* sites belong to an event-handler list          */
	bool user_armed;       /* mark_arm()/mark_disarm() rules say armed         */
	unsigned eh_arm_count; /* event handlers: armed while > 0                */
	/* rcu_dereference()d by mark__fire; assigned under the registry lock.   */
	struct mark_probe_array *probes;
	struct mark_site_rt **sites;
	size_t nsites, cap_sites;
	struct mark_marker *hash_next;
};

struct mark_object;

struct mark_site_rt {
	struct mark__site *desc;
	struct mark_object *object;
	struct mark_marker *marker;
	uint8_t *code;          /* NULL for generic sites                          */
	uint8_t *target;        /* jump: out-of-line block                          */
	uint8_t kind;
	bool armed;
	bool conflict;          /* format differs from the marker's: never armed    */
};

/* Registry lock helpers, for modules layered on the core (event handlers). */
MARK_HIDDEN void mark_registry_lock(void);
MARK_HIDDEN void mark_registry_unlock(void);
MARK_HIDDEN struct mark_marker *mark_marker_lookup_locked(const char *provider, const char *probe);
/* Arm/disarm the invoke sites of an event-handler list (reference counted). */
MARK_HIDDEN int mark_eventhandler_arm_locked(struct mark_marker *m, bool on);
/* The marker of event-handler list `name` (provider "eventhandler"), created
 * if no loaded object has an invoke site for it yet, so that its count can
 * be raised before such an object is loaded.  NULL: out of memory, or the
 * name belongs to a marker that is not an event-handler list. */
MARK_HIDDEN struct mark_marker *mark_eventhandler_marker_get_locked(const char *name);
/* Rebuild m->probes from the registered probes (registry lock held). */
MARK_HIDDEN void mark_probes_rebuild_locked(struct mark_marker *m, void ***retired, size_t *nretired);
/* Free what a rebuild retired, after a grace period (mark_grace_period();
 * kept, never freed, when there was none). */
MARK_HIDDEN void mark_probes_retire(void **retired, size_t nretired);
/*
 * Wait for an RCU grace period (urcu_bp_synchronize_rcu), unless the
 * calling thread is itself inside a read-side section: only it could end
 * that section, so the wait would never return.  A signal handler that
 * left a marker's probe with (sig)longjmp leaves its thread so, for good
 * (the probe's urcu_bp_read_unlock never runs), and the program's exit,
 * which stops the tracer, hung there.  Returns false, said once on
 * stderr, when it did not wait: the caller must then keep (leak) what it
 * would have freed, since other threads may still read it.
 */
MARK_HIDDEN bool mark_grace_period(void);
/*
 * libmark's read-side sections (probes.c, mark_read_lock_slow()): like
 * urcu_bp_read_lock()/unlock(), but a thread whose liburcu-bp registration
 * its exit has torn down is never registered again (that deadlocked inside
 * liburcu-bp's exit path); it takes a fallback section the grace periods
 * also wait for.  Include <urcu-bp.h> (with _LGPL_SOURCE) before using them.
 */
#if defined(__x86_64__)
#define MARK_TLS_IE __attribute__((tls_model("initial-exec")))
#else
#define MARK_TLS_IE
#endif
MARK_HIDDEN extern __thread unsigned mark_fallback_depth MARK_TLS_IE;
MARK_HIDDEN void mark_read_lock_slow(void);
MARK_HIDDEN void mark_read_unlock_fallback(void);
/* In a read-side section of either kind?  Never registers the thread. */
MARK_HIDDEN bool mark_read_ongoing(void);
MARK_HIDDEN void mark_read_fallback_after_fork_child(void);
/* The inline mark_read_lock()/mark_read_unlock(): core/rcu.h. */
MARK_HIDDEN bool mark_glob_match(const char *glob, const struct mark_marker *m);
/* glob.c: does glob match the marker shown as `display` ("name" or
 * "provider:name"; `probe` is the name without provider, or NULL)?  A glob
 * without ':' also matches the name without provider, and "__" in a glob
 * also matches "-" (request__start finds request-start). */
MARK_HIDDEN bool mark_name_glob_match(const char *glob, const char *display, const char *probe);
/* 0 if glob is a valid glob; else -1 with the reason (one line) in err. */
MARK_HIDDEN int mark_glob_check(const char *glob, char *err, size_t errlen);
/* Iterate every marker (registry lock held). */
MARK_HIDDEN struct mark_marker **mark_markers_locked(size_t *count);
/* One-time initialisation (fork handlers); safe to call often. */
MARK_HIDDEN void mark_init(void);

#endif
