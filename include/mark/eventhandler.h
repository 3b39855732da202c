/*
 * mark/eventhandler.h - event handler lists with FreeBSD EVENTHANDLER(9)
 * names, free to invoke when nobody listens.
 *
 *   typedef void (*low_memory_fn)(void *arg, int severity);
 *   EVENTHANDLER_DECLARE(low_memory, low_memory_fn);          // in a header
 *
 *   static void shrink_cache(void *arg, int severity) { ... }
 *   EVENTHANDLER_DEFINE(low_memory, shrink_cache, &cache, EVENTHANDLER_PRI_ANY);
 *   eventhandler_tag t = EVENTHANDLER_REGISTER(low_memory, shrink_cache, &cache,
 *                                              EVENTHANDLER_PRI_FIRST);
 *   EVENTHANDLER_INVOKE(low_memory, 3);        // shrink_cache(&cache, 3), ...
 *   EVENTHANDLER_DEREGISTER(low_memory, t);    // returns once no call of it runs
 *
 * Every EVENTHANDLER_INVOKE is a marker site (provider "eventhandler", the
 * list's name): while the list has no handler it is a 5-byte NOP (or the
 * immediate/generic test of the site kind chosen with MARK_SITE, see
 * <mark/mark.h>).  The first handler registered arms every invoke site of
 * the list, in the executable and in every shared object, including those
 * loaded later; the last one deregistered disarms them.  mark_arm() globs
 * and probes never touch these sites.
 *
 * Lists are found by name, process-wide.  Handlers run in priority order
 * (lower first; equal priorities in registration order).  Invocations may
 * run on any number of threads, concurrently with registration and
 * deregistration (RCU), may nest, and a handler may invoke another list or
 * deregister itself with EVENTHANDLER_DEREGISTER_NOWAIT.
 *
 * Handlers registered by a shared object must be deregistered before it is
 * dlclose'd (EVENTHANDLER_DEFINE does that itself).  See docs/eventhandler.md.
 *
 * This header compiles as C (gnu11) and C++ (gnu++11 or later).
 */
#ifndef MARK_EVENTHANDLER_H
#define MARK_EVENTHANDLER_H

#include <mark/mark.h>

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default)

/* Priorities (FreeBSD's values): lower numbers run first. */
#define EVENTHANDLER_PRI_FIRST 0
#define EVENTHANDLER_PRI_ANY 10000
#define EVENTHANDLER_PRI_LAST 20000

/*
 * One registered handler.  The fields are private; they are in this header
 * only because EVENTHANDLER_INVOKE calls the handlers inline.
 */
struct mark__eh_entry {
	void (*func)(void);   /* the handler, called through the declared type */
	void *arg;            /* its first argument                           */
	int dead;             /* set (atomic) when deregistered: never called again */
};
/*
 * Names one registration, and no other ever (not even one made after this
 * one was deregistered and freed).  Opaque: it does not point to a
 * struct mark__eh_entry; only NULL (failure) is meaningful to compare.
 */
typedef struct mark__eh_entry *eventhandler_tag;

/* A list's handlers, sorted; replaced as a whole under RCU, never modified. */
struct mark__eh_array {
	unsigned count;
	struct mark__eh_entry *const *entries;
};

struct mark__eh_list;

/*
 * Number of handlers registered on list `name` (0 for a list nobody has
 * used).  For tools and tests; the answer may be stale by the time it is used.
 */
unsigned mark_eventhandler_count(const char *name);

/* Private: used by the macros below.  wait: 0 NOWAIT, 1 DEREGISTER,
 * MARK__EH_AT_UNLOAD an EVENTHANDLER_DEFINE destructor (waits at dlclose,
 * not at exit, where nothing is unmapped). */
#define MARK__EH_AT_UNLOAD 2
eventhandler_tag mark__eh_register(const char *name, void (*func)(void), void *arg, int priority);
/* An EVENTHANDLER_DEFINE constructor whose registration failed: says so on
 * stderr with mark_last_error() (nobody else can be told). */
void mark__eh_define_failed(const char *name, const char *func);
int mark__eh_deregister(const char *name, eventhandler_tag tag, int wait);
/*
 * Begin an invocation: enters an RCU read-side critical section (always,
 * even on failure) and returns the handlers to call, or NULL.  *cache holds
 * the list once it has been looked up by name (lists are never freed).
 * `site` is the invoke site's descriptor: passing its address out of the
 * translation unit is what keeps an optimiser from proving that a generic
 * site's flag is never written and deleting the site.
 */
const struct mark__eh_array *mark__eh_enter(struct mark__eh_list **cache, const char *name,
					     const struct mark__site *site);
/* End an invocation begun by mark__eh_enter(). */
void mark__eh_exit(void);

#pragma GCC visibility pop
#ifdef __cplusplus
} /* extern "C" */
#endif

/*
 * EVENTHANDLER_DECLARE(name, handler_type): the type of list `name`'s
 * handlers, a pointer to a function whose first parameter is void *.  May
 * be repeated (in a header included everywhere).
 */
#define EVENTHANDLER_DECLARE(name, handler_type) typedef handler_type mark__eh_type_##name

/*
 * The compile-time check of a handler against the declared type.  In C a
 * mismatch is a hard error naming the list (and a -Wincompatible-pointer-
 * types diagnostic); in C++ the initialisation itself is ill-formed.
 */
#ifdef __cplusplus
#define MARK__EH_TYPECHECK(name, func) ((void)0)
#else
#define MARK__EH_TYPECHECK(name, func)                                                       \
	_Static_assert(__builtin_types_compatible_p(__typeof__(&*(func)), mark__eh_type_##name), \
		       "EVENTHANDLER: handler " #func " does not have the type declared by "       \
		       "EVENTHANDLER_DECLARE(" #name ", ...)")
#endif

/*
 * EVENTHANDLER_REGISTER(name, func, arg, priority): add func to list `name`;
 * it will be called as func(arg, ...).  Returns the tag for
 * EVENTHANDLER_DEREGISTER, or NULL on failure (mark_last_error() says why).
 */
#ifdef __cplusplus
/*
 * C++: a plain call, usable where C++ allows an initialiser but not a
 * statement expression - a namespace-scope variable, a default member
 * initialiser.  The handler is converted to the declared type on the way
 * in (the parameter of mark__eh_erase, in a non-deduced context), so a
 * handler of another type is ill-formed, an overloaded name picks the
 * overload of the declared type, and a captureless lambda converts.
 */
extern "C++" {   /* also when the header is included inside extern "C" { } */
template <class T> struct mark__eh_identity {
	typedef T type;
};
template <class T> inline void (*mark__eh_erase(typename mark__eh_identity<T>::type func))(void)
{
	return reinterpret_cast<void (*)(void)>(func);
}
}
#define EVENTHANDLER_REGISTER(name, func, arg, priority)                                      \
	mark__eh_register(#name, ::mark__eh_erase<mark__eh_type_##name>(func), (void *)(arg),  \
			  (int)(priority))
#else
#define EVENTHANDLER_REGISTER(name, func, arg, priority)                                      \
	__extension__({                                                                       \
		MARK__EH_TYPECHECK(name, func);                                               \
		mark__eh_type_##name mark__eh_typed = (func);                                 \
		mark__eh_register(#name, (void (*)(void))mark__eh_typed, (void *)(arg),       \
				  (int)(priority));                                           \
	})
#endif

/*
 * EVENTHANDLER_DEREGISTER(name, tag): remove a handler (tag NULL: every
 * handler of the list).  Returns after every invocation that might still
 * call it has finished (an RCU grace period), so the handler's code and
 * argument may be freed then.  Must not be called from inside a handler
 * (that would wait for itself); use EVENTHANDLER_DEREGISTER_NOWAIT there.
 * Evaluates to 0, or -ENOENT if tag is not registered on list `name`; it
 * does not fail for want of memory (the handler is then removed in place).
 */
#define EVENTHANDLER_DEREGISTER(name, tag) mark__eh_deregister(#name, (tag), 1)

/*
 * EVENTHANDLER_DEREGISTER_NOWAIT(name, tag): remove a handler without
 * waiting: safe inside a handler.  Invocations that start afterwards, and
 * the rest of the calling thread's current invocations, do not call it;
 * an invocation already running on another thread may still call it once.
 */
#define EVENTHANDLER_DEREGISTER_NOWAIT(name, tag) mark__eh_deregister(#name, (tag), 0)

/*
 * EVENTHANDLER_DEFINE(name, func, arg, priority): register func when this
 * object is loaded, deregister it when it is unloaded (exit or dlclose).
 * A registration that fails (out of memory, a W^X policy refusing to arm
 * the invoke sites) is said on stderr: the handler is then never called.
 * At dlclose the destructor waits until no invocation runs func (its code
 * is unmapped next); at exit it does not wait (see docs/eventhandler.md).
 * func must be an identifier.
 */
#define EVENTHANDLER_DEFINE(name, func, arg, priority)                                          \
	static eventhandler_tag mark__eh_tag_##name##_##func;                                   \
	static void __attribute__((constructor, used)) mark__eh_init_##name##_##func(void)      \
	{                                                                                       \
		mark__eh_tag_##name##_##func = EVENTHANDLER_REGISTER(name, func, arg, priority); \
		if (!mark__eh_tag_##name##_##func)                                              \
			mark__eh_define_failed(#name, #func);                                   \
	}                                                                                       \
	static void __attribute__((destructor, used)) mark__eh_fini_##name##_##func(void)       \
	{                                                                                       \
		if (mark__eh_tag_##name##_##func)                                               \
			mark__eh_deregister(#name, mark__eh_tag_##name##_##func,                \
					    MARK__EH_AT_UNLOAD);                                \
	}                                                                                       \
	struct mark__eh_semicolon

/*
 * The end of an invocation's read-side section.  In C++ a handler may throw:
 * the exception unwinds through the invoking code, and a call to
 * mark__eh_exit() after the loop would be skipped, leaving the thread
 * inside the section for ever (every EVENTHANDLER_DEREGISTER then waited
 * for it for ever).  So C++ ends the section in a destructor, which runs
 * on the normal path and on unwinding alike.  C has no unwinding; a
 * handler must not longjmp out of an invocation (docs/eventhandler.md).
 */
#ifdef __cplusplus
struct mark__eh_section {
	~mark__eh_section() { mark__eh_exit(); }
};
/* Constructed right after mark__eh_enter(), which cannot throw. */
#define MARK__EH_SECTION_BEGIN ::mark__eh_section mark__eh_section_guard; (void)mark__eh_section_guard;
#define MARK__EH_SECTION_END
#else
#define MARK__EH_SECTION_BEGIN
#define MARK__EH_SECTION_END mark__eh_exit();
#endif

/* The out-of-line part of an invocation: call every live handler. */
#define MARK__EH_CALL_ALL(site, name, ...)                                                    \
	do {                                                                                  \
		static struct mark__eh_list *mark__eh_cache;                                  \
		const struct mark__eh_array *mark__eh_a =                                     \
			mark__eh_enter(&mark__eh_cache, #name, site);                         \
		MARK__EH_SECTION_BEGIN                                                        \
		if (mark__eh_a) {                                                             \
			for (unsigned mark__eh_i = 0; mark__eh_i < mark__eh_a->count; mark__eh_i++) { \
				struct mark__eh_entry *mark__eh_e = mark__eh_a->entries[mark__eh_i]; \
				/* Relaxed: a thread sees its own NOWAIT deregistration;   \
				 * others are covered by the grace period. */              \
				if (!__atomic_load_n(&mark__eh_e->dead, __ATOMIC_RELAXED))    \
					((mark__eh_type_##name)mark__eh_e->func)(mark__eh_e->arg, \
										##__VA_ARGS__); \
			}                                                                     \
		}                                                                             \
		MARK__EH_SECTION_END                                                          \
	} while (0)

/*
 * EVENTHANDLER_INVOKE(name, args...): call every handler of list `name` as
 * func(arg, args...).  With no handler registered this is one disarmed
 * marker site of provider "eventhandler"; the arguments are not evaluated
 * then.  Under MARK_DISABLE there are no sites, so every invocation looks
 * the list up (still correct, not free).
 */
#if MARK__OFF /* MARK_DISABLE, or C++98: see mark.h */
#define EVENTHANDLER_INVOKE(name, ...) MARK__EH_CALL_ALL(NULL, name, ##__VA_ARGS__)
#else
#define EVENTHANDLER_INVOKE(name, ...)                                                         \
	do {                                                                                   \
		MARK__DEFINE_DESC(mark__desc, MARK__KIND, MARK__F_EVENTHANDLER, eventhandler,  \
				  #name, "", "", 0);                                           \
		if (__builtin_expect(MARK__TEST(MARK__DESC_REF(mark__desc)), 0))              \
			MARK__EH_CALL_ALL(&MARK__DESC_REF(mark__desc), name, ##__VA_ARGS__);   \
	} while (0)
#endif

#endif /* MARK_EVENTHANDLER_H */
