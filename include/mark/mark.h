/*
 * mark/mark.h - static instrumentation markers.
 *
 *   #include <mark/mark.h>
 *   MARK(subsys_event, "%d %p", count, ptr);     // a marker site
 *   if (MARK_ENABLED(subsys_event)) { ... }      // is-enabled test
 *
 * A disarmed site costs a 5-byte NOP (jump kind), an immediate load and a
 * predicted branch (immediate kind), or a flag load and a predicted branch
 * (generic kind).  The argument set-up lives out of line and runs only when
 * the site is armed with mark_arm().  Link with `pkg-config --libs mark`.
 *
 * Site kind, per build or per translation unit:
 *   -DMARK_SITE=jump        default where the compiler has asm goto (x86-64)
 *   -DMARK_SITE=immediate   x86-64: "movb $imm8,%al; test; jne"
 *   -DMARK_SITE=generic     any architecture: load flag, test, branch
 *   -DMARK_DISABLE          every marker compiled out (format still checked)
 *
 * USDT: every site is also a <sys/sdt.h>-style probe (.note.stapsdt) with
 * provider MARK_PROVIDER (default "mark"), so bpftrace/perf/gdb/systemtap see
 * it.  Define MARK_PROVIDER before including this header (or with -D) to set
 * the provider of a translation unit.
 *
 * This header compiles as C (C99 or later, gnu89) and C++ (C++11 or later),
 * with gcc and clang, in every -std mode and under -pedantic -Werror.  In
 * strict C89 (-std=c89, -ansi) and C++98 the markers compile out, as with
 * MARK_DISABLE: see docs/markers.md.
 *
 * Compile-time checks, in every build whatever the warning flags: the format
 * must match the arguments (-Wformat is made an error around the check),
 * every argument must fit a 64-bit slot (no long double, __int128 or wide
 * struct), and %n is refused.
 */
#ifndef MARK_MARK_H
#define MARK_MARK_H

/*
 * The markers use GNU C (statement expressions, asm goto, __typeof__,
 * _Generic before C11, ", ##__VA_ARGS__").  A system header's macros raise
 * no -pedantic or -W diagnostic where the user expands them, which is how
 * <sys/sdt.h> stays quiet in -pedantic -Werror builds; mark.h is often
 * installed outside /usr/include, so it says so itself.  The checks that
 * must reach the user are errors (pragmas and negative array sizes below),
 * which a system header does not silence.
 */
#pragma GCC system_header

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default)

/* ------------------------------------------------------------------ */
/* Public run-time API                                                 */
/* ------------------------------------------------------------------ */

struct mark_marker;   /* one per marker name (all its sites), owned by libmark */

/* Argument types, derived from the conversion in the format string. */
enum mark_arg_type {
	MARK_ARG_SIGNED = 1,   /* %d %i %ld %lld %zd %hd ...          */
	MARK_ARG_UNSIGNED,     /* %u %lu %llu %zu ...                  */
	MARK_ARG_HEX,          /* %x %lx %llx %X                       */
	MARK_ARG_POINTER,      /* %p                                   */
	MARK_ARG_STRING,       /* %s: slot holds a const char *        */
	MARK_ARG_DOUBLE,       /* %f %e %g %a                          */
	MARK_ARG_CHAR,         /* %c                                   */
	MARK_ARG_OCTAL,        /* %o %lo ...: unsigned, shown in octal
				  (last: the values above keep theirs) */
};

/*
 * The compile-time argument layout: argument i of a site is stored in
 * args[i], one 64-bit slot each.  The low `size` bytes of the slot hold the
 * value (little endian on x86-64); a double occupies the whole slot; a
 * string slot holds the pointer.  `name` is the argument expression when it
 * is an identifier or member access (req->len becomes "req_len"), otherwise
 * "argN".
 */
struct mark_arg {
	const char *name;
	enum mark_arg_type type;
	unsigned size;          /* bytes of the slot that hold the value */
};

/* Varargs probe: receives the arguments as the program passed them. */
typedef void (*mark_probe_fn)(const struct mark_marker *marker, void *priv,
			      const char *fmt, va_list *args);
/* Fast probe: receives the slots laid out at compile time; no parsing. */
typedef void (*mark_fast_probe_fn)(const struct mark_marker *marker, void *priv,
				   const uint64_t *args);

/*
 * Arm or disarm every site whose marker name matches `glob` (`*`, `?`, and
 * `[...]`), now and in objects loaded later.  Returns the number of sites
 * changed, or -errno; on failure mark_last_error() says why.
 */
int mark_arm(const char *glob);
int mark_disarm(const char *glob);

/*
 * Connect a probe to marker `name` (a glob is accepted too).  `fmt` must be
 * equal to the marker's format, or NULL to accept any format.  Probes of a
 * marker run in registration order.  A probe for a name that no loaded
 * object defines yet is connected when such an object is loaded.
 * Errors: -EINVAL (format mismatch: see mark_last_error()), -EEXIST (same
 * probe and priv already registered for this name), -ENOMEM.
 */
int mark_probe_register(const char *name, const char *fmt, mark_probe_fn probe, void *priv);
int mark_probe_unregister(const char *name, mark_probe_fn probe, void *priv);
int mark_probe_register_fast(const char *name, mark_fast_probe_fn probe, void *priv);
int mark_probe_unregister_fast(const char *name, mark_fast_probe_fn probe, void *priv);

/*
 * Wait until no probe unregistered before this call is still running.
 * Returns 0, or -EDEADLK without waiting when called inside a probe (or an
 * event handler): that thread's own probe is one of those it would wait
 * for.
 */
int mark_synchronize(void);

/* The message of the last failed call on this thread ("" if none). */
const char *mark_last_error(void);

/*
 * Start the control agent in this process, if it has none (docs/control.md).
 * A forked child has no agent until it execs a program with markers or
 * calls this: a forking server whose workers should be controllable with
 * `mark` calls it in each worker (after any unshare()/setns(), which a
 * multi-threaded process cannot do).  0, or -errno (-ENOTSUP: MARK_AGENT=0).
 */
int mark_agent_start(void);

/*
 * Serve the control agent from the program's own event loop instead of a
 * thread (docs/control.md, "Event-loop mode"): a process with no thread
 * forks as cheaply as one built without mark (docs/markers.md, fork).  Put
 *     MARK_AGENT_EVENT_LOOP;
 * at file scope in one source file of the executable; libmark then starts
 * no agent thread.  mark_agent_fd() creates the agent's socket (the first
 * call in a process) and returns a descriptor to poll for reading with the
 * program's own; whenever it is readable, call mark_agent_dispatch(), which
 * serves what is pending without blocking.  Requests (arming, recording)
 * run inside mark_agent_dispatch(), on the calling thread: call it where
 * the program holds no lock a probe might need, and not from a signal
 * handler.  The descriptor stays the same for the life of the process; a
 * forked child finds it empty (no agent) until it calls mark_agent_fd().
 * Both return -errno on failure (-ENOTSUP: no MARK_AGENT_EVENT_LOOP, or
 * MARK_AGENT=0); mark_agent_fd() returns the descriptor, dispatch 0.
 */
#ifdef __cplusplus
#define MARK_AGENT_EVENT_LOOP \
	extern "C" __attribute__((visibility("default"), used)) const int mark_agent_event_loop = 1
#else
#define MARK_AGENT_EVENT_LOOP \
	__attribute__((visibility("default"), used)) const int mark_agent_event_loop = 1
#endif
int mark_agent_fd(void);
int mark_agent_dispatch(void);

const char *mark_marker_name(const struct mark_marker *marker);     /* "name" or "provider:name" */
const char *mark_marker_provider(const struct mark_marker *marker);
const char *mark_marker_format(const struct mark_marker *marker);
unsigned mark_marker_nargs(const struct mark_marker *marker);
const struct mark_arg *mark_marker_args(const struct mark_marker *marker);
unsigned mark_marker_id(const struct mark_marker *marker);          /* dense, stable for the process */
unsigned mark_marker_probe_count(const struct mark_marker *marker);

/* Call cb for each marker matching glob (NULL = all); stops if cb returns non-zero, which is returned. */
int mark_list(const char *glob, int (*cb)(const struct mark_marker *m, void *arg), void *arg);

/* Per-site details. */
enum mark_site_kind { MARK_KIND_JUMP = 1, MARK_KIND_IMMEDIATE = 2, MARK_KIND_GENERIC = 3 };
struct mark_site_info {
	const char *file;
	unsigned line;
	const char *object;      /* path of the executable or shared object */
	enum mark_site_kind kind;
	int armed;
	int is_enabled_test;     /* a MARK_ENABLED() site */
	const void *address;     /* patched instruction, or the flag for generic */
};
int mark_marker_sites(const struct mark_marker *marker,
		      int (*cb)(const struct mark_site_info *site, void *arg), void *arg);

const char *mark_site_kind_name(enum mark_site_kind kind);

/* ------------------------------------------------------------------ */
/* Site machinery (private: used by the macros below)                  */
/* ------------------------------------------------------------------ */

#define MARK__ABI 1
#define MARK__MAX_ARGS 12

#define MARK__F_ENABLED_TEST 0x1   /* MARK_ENABLED(): no arguments, no call   */
#define MARK__F_EVENTHANDLER 0x2   /* an EVENTHANDLER_INVOKE site              */

/*
 * One descriptor per site, in section __mark_descs (found at load time
 * through __start___mark_descs/__stop___mark_descs of each object).  64-byte
 * aligned and sized so that descriptors from different translation units
 * lie back to back with no padding.  Fields after `marker` are written by
 * libmark under its registry lock.
 */
struct mark__site {
	uint32_t abi;
	uint8_t kind;                 /* enum mark_site_kind                    */
	uint8_t nargs;
	uint16_t flags;
	const char *provider;
	const char *name;
	const char *format;
	const char *arg_names;        /* the argument expressions, stringified  */
	const char *file;
	uint32_t line;
	/* generic kind: the enable flag, also the USDT semaphore.  mark_arm()
	 * adds and subtracts its own count atomically; the kernel adds and
	 * subtracts one per attached uprobe with a plain read-modify-write
	 * through the page, so an attach racing with mark_arm() can lose one
	 * update (a known limitation of USDT semaphores). */
	unsigned short semaphore;
	/* set once by libmark (release) before the site can be armed; read with
	 * acquire by mark__fire(); never changes afterwards (markers live until exit). */
	struct mark_marker *marker;
	/* 1 while libmark has the site armed.  mark__fire() reads it inside its
	 * RCU read-side critical section, so once a disarm has returned and a
	 * grace period has passed, no thread can still call a probe from this
	 * site, even one that had already taken the jump. */
	uint8_t armed;
	uint8_t reserved8[7];
	uintptr_t reserved;
} __attribute__((aligned(64)));

/*
 * One entry per patchable code site, in section __mark_sites, emitted by the
 * asm of jump and immediate sites.  Every field is PC-relative, so PIE and
 * shared objects need no relocation for it.
 */
struct mark__code_entry {
	int32_t code;      /* the 5-byte NOP (jump) or the movb (immediate); 0 for a
			      data-only entry that just announces a generic descriptor */
	int32_t target;    /* jump: out-of-line block; immediate: 0               */
	int32_t desc;      /* its struct mark__site                              */
};

/*
 * Armed sites call mark__fire through the GOT rather than a PLT stub (one
 * indirect jump less per event); GCC only, clang has no such attribute.
 */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define MARK__NOPLT __attribute__((noplt))
#else
#define MARK__NOPLT
#endif
MARK__NOPLT void mark__fire(struct mark__site *site, const uint64_t *args);
void mark__register_object(const void *descs_begin, const void *descs_end,
			   const void *codes_begin, const void *codes_end);
void mark__unregister_object(const void *descs_begin, const void *codes_begin);

#pragma GCC visibility pop
#ifdef __cplusplus
} /* extern "C" */
#endif

/*
 * clang in C cannot fold __builtin_strstr, but it evaluates a diagnose_if
 * condition on the literal passed as `fmt`: a %n (%hn, %ln, %lln... ) in
 * the first 256 characters is an error there.  Each position is guarded by
 * the length, so the evaluation never reads past the literal; a '%' right
 * after another '%' is a literal percent ("%%n" is text).
 */
#if defined(__clang__) && !defined(__cplusplus)
#define MARK__IS_LEN(c) ((c) == 'h' || (c) == 'l' || (c) == 'z' || (c) == 'j' || (c) == 't' || (c) == 'q' || (c) == 'L')
#define MARK__N_AT(f, i)                                                                       \
	(__builtin_strlen(f) > (i) + 1 && (f)[i] == '%' && ((i) == 0 || (f)[(i) ? (i) - 1 : 0] != '%') && \
	 ((f)[(i) + 1] == 'n' ||                                                               \
	  (MARK__IS_LEN((f)[(i) + 1]) && __builtin_strlen(f) > (i) + 2 &&                      \
	   ((f)[(i) + 2] == 'n' ||                                                             \
	    (MARK__IS_LEN((f)[(i) + 2]) && __builtin_strlen(f) > (i) + 3 && (f)[(i) + 3] == 'n')))))
#define MARK__N_4(f, i) MARK__N_AT(f, i) || MARK__N_AT(f, (i) + 1) || MARK__N_AT(f, (i) + 2) || MARK__N_AT(f, (i) + 3)
#define MARK__N_16(f, i) MARK__N_4(f, i) || MARK__N_4(f, (i) + 4) || MARK__N_4(f, (i) + 8) || MARK__N_4(f, (i) + 12)
#define MARK__N_64(f, i) MARK__N_16(f, i) || MARK__N_16(f, (i) + 16) || MARK__N_16(f, (i) + 32) || MARK__N_16(f, (i) + 48)
#define MARK__N_256(f) MARK__N_64(f, 0) || MARK__N_64(f, 64) || MARK__N_64(f, 128) || MARK__N_64(f, 192)
#define MARK__NO_N_ATTR \
	__attribute__((diagnose_if(MARK__N_256(fmt), "mark: %n in a marker format: markers record, they never write; remove it", "error")))
#else
#define MARK__NO_N_ATTR
#endif

/* printf-style check of the format against the arguments: compile-time only
 * (called in an "if (0)" branch).  __inline__: C89 has no inline. */
static __inline__ __attribute__((format(printf, 1, 2), unused))
void mark__check_format(const char *fmt, ...) MARK__NO_N_ATTR;
static __inline__ void mark__check_format(const char *fmt, ...) { (void)fmt; }

/* ---------------- argument counting and iteration ------------------ */

#define MARK__CAT_(a, b) a##b
#define MARK__CAT(a, b) MARK__CAT_(a, b)
#define MARK__STR_(x) #x
#define MARK__STR(x) MARK__STR_(x)

/*
 * MARK__NARGS(fmt, args...) counts args.  The format always travels as the
 * first variadic argument and the helper gets a spare trailing argument, so
 * no variadic macro inside this header is ever invoked with an empty "...":
 * that is a -pedantic diagnostic before C2x/C++20 that clang reports at the
 * user's line even for a system header's macros.
 */
#define MARK__NARGS(...) MARK__NARGS_(__VA_ARGS__, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, ~)
#define MARK__NARGS_(f, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, n, ...) n
#define MARK__FIRST(...) MARK__FIRST_(__VA_ARGS__, ~)
#define MARK__FIRST_(f, ...) f

/* MARK__EACH(M, fmt, a, b, c) -> M(0, a) M(1, b) M(2, c) */
#define MARK__EACH(M, ...) MARK__CAT(MARK__EACH_, MARK__NARGS(__VA_ARGS__))(M, __VA_ARGS__)
#define MARK__EACH_0(M, f)
#define MARK__EACH_1(M, f, a) M(0, a)
#define MARK__EACH_2(M, f, a, b) M(0, a) M(1, b)
#define MARK__EACH_3(M, f, a, b, c) MARK__EACH_2(M, f, a, b) M(2, c)
#define MARK__EACH_4(M, f, a, b, c, d) MARK__EACH_3(M, f, a, b, c) M(3, d)
#define MARK__EACH_5(M, f, a, b, c, d, e) MARK__EACH_4(M, f, a, b, c, d) M(4, e)
#define MARK__EACH_6(M, f, a, b, c, d, e, g) MARK__EACH_5(M, f, a, b, c, d, e) M(5, g)
#define MARK__EACH_7(M, f, a, b, c, d, e, g, h) MARK__EACH_6(M, f, a, b, c, d, e, g) M(6, h)
#define MARK__EACH_8(M, f, a, b, c, d, e, g, h, i) MARK__EACH_7(M, f, a, b, c, d, e, g, h) M(7, i)
#define MARK__EACH_9(M, f, a, b, c, d, e, g, h, i, j) MARK__EACH_8(M, f, a, b, c, d, e, g, h, i) M(8, j)
#define MARK__EACH_10(M, f, a, b, c, d, e, g, h, i, j, k) MARK__EACH_9(M, f, a, b, c, d, e, g, h, i, j) M(9, k)
#define MARK__EACH_11(M, f, a, b, c, d, e, g, h, i, j, k, l) MARK__EACH_10(M, f, a, b, c, d, e, g, h, i, j, k) M(10, l)
#define MARK__EACH_12(M, f, a, b, c, d, e, g, h, i, j, k, l, m) MARK__EACH_11(M, f, a, b, c, d, e, g, h, i, j, k, l) M(11, m)

/*
 * The promoted type of an argument, as a variadic call would pass it:
 * arrays decay, char/short/bool/bit-fields become int, float becomes double.
 */
/*
 * C++98 has no constexpr (the C++ descriptor below needs it) and no
 * nullptr: there the markers compile out, format still checked.
 */
#if defined(__cplusplus) && __cplusplus < 201103L && !defined(MARK_DISABLE)
#define MARK__OFF 1
#if defined(__GNUC__) && !defined(__clang__)
#pragma message("mark: C++98: every MARK() of this file is compiled out; build with -std=c++11 or later to trace it")
#endif
#elif defined(MARK_DISABLE)
#define MARK__OFF 1
#else
#define MARK__OFF 0
#endif

#if defined(__cplusplus)
extern "C++" {
namespace mark_detail {
template <class T> T promote(T v);
int promote(bool);
int promote(char);
int promote(signed char);
int promote(unsigned char);
int promote(short);
int promote(unsigned short);
double promote(float);
template <class T> struct arg_sign { enum { value = (T)-1 < (T)0 ? -1 : 1 }; };
template <class T> struct arg_sign<T *> { enum { value = 1 }; };
template <> struct arg_sign<double> { enum { value = 1 }; };
#if __cplusplus >= 201103L
template <> struct arg_sign<decltype(nullptr)> { enum { value = 1 }; };
/*
 * Does the format have a %n conversion (any flags, width and length)?
 * "%%" is a literal percent.  C++11 constexpr: one return statement each.
 */
constexpr bool is_modifier(char c)
{
	return c == '-' || c == '+' || c == ' ' || c == '#' || c == '\'' || c == '.' || c == '*' ||
	       (c >= '0' && c <= '9') || c == 'h' || c == 'l' || c == 'L' || c == 'q' || c == 'j' ||
	       c == 'z' || c == 't' || c == 'I';
}
constexpr const char *skip_modifiers(const char *f)
{
	return *f && is_modifier(*f) ? skip_modifiers(f + 1) : f;
}
constexpr bool has_percent_n(const char *f)
{
	return *f == '\0' ? false
	       : *f != '%' ? has_percent_n(f + 1)
	       : f[1] == '%' ? has_percent_n(f + 2)
	       : *skip_modifiers(f + 1) == 'n' ? true
	       : has_percent_n(f + 1);
}
#endif /* C++11 */
} /* namespace mark_detail */
}
#define MARK__PROMOTED_TYPE(x) __typeof__(::mark_detail::promote(x))
#define MARK__SIGN(T) ((int)::mark_detail::arg_sign<T>::value)
#else
#define MARK__PROMOTED_TYPE(x) \
	__typeof__(__extension__ _Generic((1 ? (x) : (x)), float: (double)0, default: (1 ? (x) : (x))))
#define MARK__SIGN(T) \
	__extension__ _Generic((T)0, signed char: -1, short: -1, int: -1, long: -1, long long: -1, default: 1)
#endif

/* Store argument i into slot i: the promoted value's bytes, the rest zero
 * (no stack garbage reaches a trace's padding).  A block of its own, so that
 * no declaration follows a statement (-Wdeclaration-after-statement). */
#define MARK__STORE(i, x)                                                        \
	{                                                                        \
		MARK__PROMOTED_TYPE(x) mark__v = (x);                            \
		uint64_t mark__w = 0;   /* built in a register: one store */     \
		__builtin_memcpy(&mark__w, &mark__v, sizeof(mark__v));           \
		mark__slots[i] = mark__w;                                        \
	}

/*
 * The compile-time checks of a site, in an "if (0)" branch (no code):
 *  - every argument fits its 64-bit slot: a long double, __int128 or wider
 *    struct would be cut (the negative array size names the argument);
 *  - no %n: a marker records, it never writes through an argument (gcc in C
 *    folds __builtin_strstr on the literal; C++ scans it with constexpr;
 *    clang in C, which folds neither, evaluates the diagnose_if attribute of
 *    mark__check_format);
 *  - the printf check of the format against the arguments, with -Wformat
 *    made an error whatever the command line says.
 */
#if defined(__cplusplus) && __cplusplus >= 201103L
#define MARK__ARG_CHECK(i, x)                                                                  \
	static_assert(sizeof(MARK__PROMOTED_TYPE(x)) <= 8,                                     \
		      "mark: argument " #i " (" #x ") is wider than 64 bits (long double, "      \
		      "__int128, a struct): cast it to double or to a narrower integer type");
#define MARK__NO_PERCENT_N(fmt)                                                                \
	static_assert(!::mark_detail::has_percent_n(fmt),                                      \
		      "mark: %n in a marker format: markers record, they never write; remove it");
#else
#define MARK__ARG_CHECK(i, x)                                                                  \
	typedef char mark__argument_##i##_is_wider_than_64_bits_cast_it_to_double_or_a_narrower_int \
		[sizeof(MARK__PROMOTED_TYPE(x)) <= 8 ? 1 : -1] __attribute__((__unused__));
#if defined(__clang__) || defined(__cplusplus)
#define MARK__NO_PERCENT_N(fmt)
#else
#define MARK__NO_PERCENT_N(fmt)                                                                \
	typedef char mark__format_has_percent_n_markers_never_write_remove_it                     \
		[__builtin_strstr(fmt, "%n") || __builtin_strstr(fmt, "%hn") ||                  \
		 __builtin_strstr(fmt, "%hhn") || __builtin_strstr(fmt, "%ln") ||                \
		 __builtin_strstr(fmt, "%lln") || __builtin_strstr(fmt, "%zn") ||                \
		 __builtin_strstr(fmt, "%jn") || __builtin_strstr(fmt, "%tn") ? -1 : 1]         \
		__attribute__((__unused__));
#endif
#endif
/*
 * The format is passed as the user wrote it, with no prefix: gcc places a
 * format diagnostic at the format string, and a string spelled in this
 * (system) header would silence it.  An empty format is fine, hence
 * -Wformat-zero-length off.
 */
#define MARK__FORMAT_ERRORS_BEGIN                                     \
	_Pragma("GCC diagnostic push")                                \
	_Pragma("GCC diagnostic error \"-Wformat\"")                  \
	_Pragma("GCC diagnostic error \"-Wformat-extra-args\"")       \
	_Pragma("GCC diagnostic ignored \"-Wformat-zero-length\"")
#define MARK__FORMAT_ERRORS_END _Pragma("GCC diagnostic pop")
#define MARK__CHECK(...)                                                       \
	if (0) {                                                               \
		MARK__EACH(MARK__ARG_CHECK, __VA_ARGS__)                       \
		MARK__NO_PERCENT_N(MARK__FIRST(__VA_ARGS__))                   \
		MARK__FORMAT_ERRORS_BEGIN                                      \
		mark__check_format(__VA_ARGS__);                               \
		MARK__FORMAT_ERRORS_END                                        \
	}

#ifndef MARK_PROVIDER
#define MARK_PROVIDER mark
#endif

/* ---------------- choosing the site kind ---------------------------- */

#define MARK__KIND_jump 1
#define MARK__KIND_immediate 2
#define MARK__KIND_generic 3
#define MARK__KIND_OF_(k) MARK__KIND_##k
#define MARK__KIND_OF(k) MARK__KIND_OF_(k)

#if !defined(MARK_SITE)
#if defined(__x86_64__) && defined(__cplusplus) && defined(__clang__) && __clang_major__ < 17
/*
 * clang++ before 17 assumes any asm goto of a function may reach any
 * asm-goto label in it, so an initialised variable between two jump sites
 * is a hard error ("cannot jump from this asm goto statement").  Default to
 * immediate sites there; -DMARK_SITE=jump still works in functions without
 * such variables.
 */
#define MARK__KIND 2
#elif (defined(__x86_64__) || defined(__aarch64__)) && (defined(__GNUC__) || defined(__clang__))
#define MARK__KIND 1
#else
#define MARK__KIND 3
#endif
#else
#define MARK__KIND MARK__KIND_OF(MARK_SITE)
#if MARK__KIND != 1 && MARK__KIND != 2 && MARK__KIND != 3
#error "mark: MARK_SITE must be jump, immediate or generic (-DMARK_SITE=jump|immediate|generic)"
/* names the value that was given, in the next error */
typedef char MARK__CAT(mark_site_kind_is_not_jump_immediate_or_generic__, MARK_SITE)[-1];
#endif
#endif

#if (MARK__KIND == 1 || MARK__KIND == 2) && !defined(__x86_64__) && !defined(__aarch64__)
#error "mark: MARK_SITE=jump and MARK_SITE=immediate need x86-64 or aarch64; use -DMARK_SITE=generic"
#endif

/*
 * The asm operand that names the descriptor's address as a link-time
 * constant (printed with %c): "i" on x86-64; aarch64 wants "S" (a symbolic
 * address) for it in position-independent code.
 */
#if defined(__aarch64__)
#define MARK__ADDR "S"
#else
#define MARK__ADDR "i"
#endif

/*
 * The descriptor.  In C it is a static local.  In C++ a static local of an
 * inline function or template has vague linkage, which an "i" asm operand
 * cannot name in PIC code; a static member of a class template instantiated
 * with a type from an unnamed namespace has internal linkage instead.
 */
#define MARK__DESC_INIT(kind, flags, prov, nm, fmt, argnames, nargs)          \
	{ MARK__ABI, (uint8_t)(kind), (uint8_t)(nargs), (uint16_t)(flags),    \
	  MARK__STR(prov), nm, fmt, argnames, __FILE__, (uint32_t)__LINE__, 0, 0, 0, { 0 }, 0 }

#ifdef __cplusplus
extern "C++" {
namespace {
struct mark__tu_tag {};
}
namespace mark_detail {
template <class TU, class Local> struct site_holder {
	static struct mark__site desc __attribute__((section("__mark_descs")));
};
template <class TU, class Local>
struct mark__site site_holder<TU, Local>::desc __attribute__((section("__mark_descs"), used)) = Local::make();
} /* namespace mark_detail */
}
#define MARK__DEFINE_DESC(var, kind, flags, prov, nm, fmt, argnames, nargs)               \
	struct mark__local_tag {                                                          \
		static constexpr struct mark__site make() {                               \
			return MARK__DESC_INIT(kind, flags, prov, nm, fmt, argnames, nargs); \
		}                                                                         \
	}
#define MARK__DESC_REF(var) (::mark_detail::site_holder<mark__tu_tag, mark__local_tag>::desc)
#else
/* `used`: libmark and the kernel (USDT semaphore) write the flag, so the
 * compiler must not fold its loads to the initial 0 (clang does otherwise). */
#define MARK__DEFINE_DESC(var, kind, flags, prov, nm, fmt, argnames, nargs)              \
	static struct mark__site var __attribute__((section("__mark_descs"), used)) = \
		MARK__DESC_INIT(kind, flags, prov, nm, fmt, argnames, nargs)
#define MARK__DESC_REF(var) (var)
#endif

/* ---------------- the is-armed test of each kind -------------------- */

/*
 * Jump: one 5-byte NOP at an even address, never straddling a 64-byte line
 * (at most 1 + 4 bytes of padding, see below).  Arming rewrites it into "jmp rel32"
 * to the out-of-line block.  The statement expression yields 1 only on the
 * jump path, so the compiler places the block out of line.
 */
#if defined(__aarch64__)
/*
 * aarch64: one 4-byte NOP (every instruction is aligned); arming rewrites
 * it into "b" to the out-of-line block (src/arch/aarch64/patch.c).
 */
#define MARK__JUMP_ASM(desc, label)                                        \
	__asm__ goto("1: nop\n"                                            \
		     ".pushsection __mark_sites, \"a?\"\n"                 \
		     ".balign 4\n"                                         \
		     ".long 1b - ., %l[" #label "] - ., %c0 - .\n"         \
		     ".popsection\n"                                       \
		     : : MARK__ADDR(&(desc)) : : label)
#else
/*
 * x86-64: the 5-byte NOP at an even address (its first two bytes, which
 * arming replaces with one 2-byte store, then lie in one fetch block) and
 * inside one cache line (".p2align 6,,4": to the next line when fewer
 * than 5 bytes are left in this one).  The order matters: evening up
 * first can push a site across the line's end; the line check comes last.
 * (tests/test_odd_site.c redefines MARK__JUMP_ALIGN to build the odd site
 * of an older header.)
 */
#define MARK__JUMP_ALIGN ".p2align 1\n.p2align 6,,4\n"
#define MARK__JUMP_ASM(desc, label)                                        \
	__asm__ goto(MARK__JUMP_ALIGN                                      \
		     "1: .byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n"             \
		     ".pushsection __mark_sites, \"a?\"\n"                 \
		     ".balign 4\n"                                         \
		     ".long 1b - ., %l[" #label "] - ., %c0 - .\n"         \
		     ".popsection\n"                                       \
		     : : MARK__ADDR(&(desc)) : : label)
#endif

#define MARK__TEST_JUMP(desc)                                                  \
	__extension__({                                                                     \
		__label__ mark__on;                                            \
		int mark__r; /* assigned, not initialised: clang++ < 17 */      \
		mark__r = 0;                                                   \
		MARK__JUMP_ASM(desc, mark__on);                                \
		if (0) {                                                       \
		mark__on:                                                      \
			mark__r = 1;                                           \
		}                                                              \
		mark__r;                                                       \
	})

/*
 * Immediate: "movb $imm8, %al" (b0 ib); arming patches the immediate byte.
 * The compiler adds the test and the predicted branch.
 *
 * aarch64 may only patch NOP <-> B while other threads run the code (ARM
 * ARM B2.2.5), not a MOVZ's immediate, so there the value comes from two
 * movs and a branch that skips the second: "mov w, #0; b .+8; mov w, #1"
 * yields 0, and arming turns the branch into a NOP, which yields 1.
 */
#if defined(__aarch64__)
#define MARK__TEST_IMMEDIATE(desc)                                            \
	__extension__({                                                                    \
		unsigned int mark__imm;                                       \
		__asm__ volatile("mov %w0, #0\n"                              \
				 "1: b 2f\n"                                  \
				 "mov %w0, #1\n"                              \
				 "2:\n"                                       \
				 ".pushsection __mark_sites, \"a?\"\n"        \
				 ".balign 4\n"                                \
				 ".long 1b - ., 0, %c1 - .\n"                 \
				 ".popsection\n"                              \
				 : "=r"(mark__imm) : MARK__ADDR(&(desc)));    \
		mark__imm;                                                    \
	})
#else
#define MARK__TEST_IMMEDIATE(desc)                                            \
	__extension__({                                                                    \
		unsigned char mark__imm;                                      \
		__asm__ volatile("1: movb $0, %0\n"                           \
				 ".pushsection __mark_sites, \"a?\"\n"        \
				 ".balign 4\n"                                \
				 ".long 1b - ., 0, %c1 - .\n"                 \
				 ".popsection\n"                              \
				 : "=a"(mark__imm) : MARK__ADDR(&(desc)));    \
		mark__imm;                                                    \
	})
#endif

/* Generic: a plain load of the per-site flag, a test and a predicted branch. */
#ifdef __cplusplus
/*
 * GCC ignores the section attribute of a class template's static member, so
 * in C++ the descriptor is also announced by a data-only entry (code 0) in
 * __mark_sites.  It emits no instruction.
 */
#define MARK__TEST_GENERIC(desc)                                                       \
	__extension__({                                                                             \
		__asm__(".pushsection __mark_sites, \"a?\"\n"                          \
			".balign 4\n"                                                  \
			".long 0, 0, %c0 - .\n"                                        \
			".popsection\n" : : MARK__ADDR(&(desc)));                      \
		__atomic_load_n(&(desc).semaphore, __ATOMIC_RELAXED) != 0;             \
	})
#else
#define MARK__TEST_GENERIC(desc) (__atomic_load_n(&(desc).semaphore, __ATOMIC_RELAXED) != 0)
#endif

#if MARK__KIND == 1
#define MARK__TEST(desc) MARK__TEST_JUMP(desc)
#elif MARK__KIND == 2
#define MARK__TEST(desc) MARK__TEST_IMMEDIATE(desc)
#else
#define MARK__TEST(desc) MARK__TEST_GENERIC(desc)
#endif

/* ---------------- USDT (.note.stapsdt) ------------------------------ */

#if (defined(__x86_64__) || defined(__aarch64__)) && !defined(MARK_NO_USDT)
#define MARK__USDT_SEP_0 ""
#define MARK__USDT_SEP_1 " "
#define MARK__USDT_SEP_2 " "
#define MARK__USDT_SEP_3 " "
#define MARK__USDT_SEP_4 " "
#define MARK__USDT_SEP_5 " "
#define MARK__USDT_SEP_6 " "
#define MARK__USDT_SEP_7 " "
#define MARK__USDT_SEP_8 " "
#define MARK__USDT_SEP_9 " "
#define MARK__USDT_SEP_10 " "
#define MARK__USDT_SEP_11 " "
#define MARK__USDT_SPEC(i, x) MARK__USDT_SEP_##i "%c[s" #i "]@%[a" #i "]"
/*
 * Argument i: its size (negative when signed) and its value, taken from the
 * 64-bit slot (low bytes = the value, little endian) rather than from the
 * promoted variable.  The slot is an integer, so a constant argument becomes
 * an immediate ("8@$4612811918334230528" for 2.5) instead of a constant-pool
 * label ("8@.LC6(%rip)", which GCC uses for a double and clang for any type
 * under "or"): bcc, hence bpftrace, cannot parse such labels.
 */
#define MARK__USDT_OPS(i, x)                                                                  \
	, [s##i] "n"((int)sizeof(MARK__PROMOTED_TYPE(x)) * MARK__SIGN(MARK__PROMOTED_TYPE(x))), \
	  [a##i] "nor"(mark__slots[i])
/*
 * The note of sys/sdt.h's format (type 3, owner "stapsdt"): probe address,
 * link-time address of .stapsdt.base, semaphore, provider, name, argument
 * specs.  The single-byte NOP is the probe location, where the arguments
 * are live.  The semaphore is the site flag for generic sites, 0 otherwise.
 */
#define MARK__USDT(desc, sem, prov, nm, ...)                                                  \
	__asm__ volatile("990: nop\n"                                                         \
			 ".pushsection .note.stapsdt, \"?\", \"note\"\n"                      \
			 ".balign 4\n"                                                        \
			 ".4byte 992f-991f, 994f-993f, 3\n"                                   \
			 "991: .asciz \"stapsdt\"\n"                                          \
			 "992: .balign 4\n"                                                   \
			 "993: .8byte 990b\n"                                                 \
			 ".8byte _.stapsdt.base\n"                                            \
			 ".8byte %c[mark_sem] + %c[mark_sem_off]\n"                          \
			 ".asciz \"" prov "\"\n"                                              \
			 ".asciz \"" nm "\"\n"                                                \
			 ".asciz \"" MARK__EACH(MARK__USDT_SPEC, __VA_ARGS__) "\"\n"         \
			 "994: .balign 4\n"                                                   \
			 ".popsection\n"                                                      \
			 ".ifndef _.stapsdt.base\n"                                           \
			 ".pushsection .stapsdt.base, \"aG\", \"progbits\", .stapsdt.base, comdat\n" \
			 ".weak _.stapsdt.base\n"                                             \
			 ".hidden _.stapsdt.base\n"                                           \
			 "_.stapsdt.base: .space 1\n"                                         \
			 ".size _.stapsdt.base, 1\n"                                          \
			 ".popsection\n"                                                      \
			 ".endif\n"                                                           \
			 MARK__USDT_PROBES_ANCHOR                                             \
			 : : [mark_sem] MARK__USDT_SEM_OPERAND(sem),                         \
			   [mark_sem_off] "n"(MARK__USDT_SEM_OFF) MARK__EACH(MARK__USDT_OPS, __VA_ARGS__))
#else
#define MARK__USDT(desc, sem, prov, nm, ...) ((void)0)
#endif

/*
 * Semaphores.  A generic site's semaphore is its enable flag, inside the
 * descriptor in section __mark_descs.  Tools turn the semaphore's link-time
 * address into the file offset the kernel's uprobe reference counter wants
 * (ref_ctr_offset) with the formula of sys/sdt.h's layout:
 *     offset = sem - shdr(".probes").sh_addr + shdr(".probes").sh_offset
 * (bcc, hence bpftrace; perf).  Without a ".probes" section they compute no
 * offset and the semaphore is never incremented.  The formula holds for any
 * address in the same PT_LOAD segment as .probes, because a segment maps
 * file offsets to addresses by one constant.  Both .probes and __mark_descs
 * are writable PROGBITS orphan sections, which the linkers (ld.bfd, gold,
 * lld) place in the same read-write segment, so each object with generic
 * sites carries one 2-byte anchor ".probes" section (a comdat group: one
 * per link; "R" keeps it under --gc-sections).  tests/usdt checks the
 * resulting offsets against the program headers of real binaries.
 */
#if MARK__KIND == 3
/* The descriptor's address plus the field's offset: clang's aarch64 "S"
 * takes a symbol, not the address of a member. */
#define MARK__USDT_SEM(desc) (&(desc))
#define MARK__USDT_SEM_OFF __builtin_offsetof(struct mark__site, semaphore)
#define MARK__USDT_SEM_OPERAND MARK__ADDR
#define MARK__USDT_PROBES_ANCHOR                                                                \
	".ifndef _.mark.probes.anchor\n"                                                      \
	".pushsection .probes, \"awGR\", \"progbits\", _.mark.probes.anchor, comdat\n"        \
	".weak _.mark.probes.anchor\n"                                                        \
	".hidden _.mark.probes.anchor\n"                                                      \
	"_.mark.probes.anchor: .space 2\n"                                                    \
	".size _.mark.probes.anchor, 2\n"                                                     \
	".popsection\n"                                                                       \
	".endif\n"
#else
#define MARK__USDT_SEM(desc) 0
#define MARK__USDT_SEM_OFF 0
#define MARK__USDT_SEM_OPERAND "i"   /* the constant 0: no semaphore */
#define MARK__USDT_PROBES_ANCHOR ""
#endif

/* ---------------- the user-facing macros ---------------------------- */

/* The note's asm text is longer than the 509 characters C90 promises, which
 * clang reports at the user's line under -std=c89 -pedantic. */
#if defined(__clang__)
#define MARK__LONG_STRING_BEGIN \
	_Pragma("clang diagnostic push") _Pragma("clang diagnostic ignored \"-Woverlength-strings\"")
#define MARK__LONG_STRING_END _Pragma("clang diagnostic pop")
#else
#define MARK__LONG_STRING_BEGIN
#define MARK__LONG_STRING_END
#endif

/*
 * MARK__SITE(provider, name_string, usdt_name_string, flags, arg_names,
 * fmt, args...): shared by MARK() and the code that `mark dtrace -h`
 * generates.  arg_names is a string literal: the arguments as written,
 * separated by ", " (MARK() stringifies its arguments; `mark dtrace` passes
 * the .d file's parameter names); libmark names the trace fields from it.
 *
 * Every block starts with its declarations (-Wdeclaration-after-statement),
 * and every GNU statement expression carries __extension__.
 */
#define MARK__SITE_BODY(desc, prov, usdtnm, ...)                                          \
	/* one spare slot, zeroed, so that a marker without arguments passes an   \
	 * initialised array */                                                   \
	uint64_t mark__slots[MARK__NARGS(__VA_ARGS__) + 1];                               \
	mark__slots[MARK__NARGS(__VA_ARGS__)] = 0;                                        \
	MARK__EACH(MARK__STORE, __VA_ARGS__)                                              \
	MARK__LONG_STRING_BEGIN                                                           \
	MARK__USDT(desc, MARK__USDT_SEM(desc), MARK__STR(prov), usdtnm, __VA_ARGS__);     \
	MARK__LONG_STRING_END                                                             \
	mark__fire(&(desc), mark__slots);

#if MARK__OFF
#define MARK__SITE(prov, nm, usdtnm, flags, argnames, ...) \
	do {                                               \
		MARK__CHECK(__VA_ARGS__)                   \
	} while (0)
#define MARK__ENABLED(prov, nm, flags) 0
#elif MARK__KIND == 1 && !defined(__OPTIMIZE__)
/*
 * Unoptimised builds: the asm goto jumps straight into the out-of-line
 * block, so the straight-line path is the NOP and one jmp over the block
 * (the statement-expression form would also store, reload and test a flag).
 * __extension__ ({ }) is there for the label declaration (-pedantic).
 */
#define MARK__SITE(prov, nm, usdtnm, flags, argnames, ...)                                   \
	do {                                                                                 \
		MARK__DEFINE_DESC(mark__desc, MARK__KIND, flags, prov, nm,                   \
				  MARK__FIRST(__VA_ARGS__), argnames, MARK__NARGS(__VA_ARGS__)); \
		MARK__CHECK(__VA_ARGS__)                                                     \
		__extension__({                                                              \
			__label__ mark__on;                                                  \
			MARK__JUMP_ASM(MARK__DESC_REF(mark__desc), mark__on);                \
			if (0) {                                                             \
			mark__on:;                                                           \
				{ /* declarations open a block: not after the label */       \
					MARK__SITE_BODY(MARK__DESC_REF(mark__desc), prov,    \
							usdtnm, __VA_ARGS__)                 \
				}                                                            \
			}                                                                    \
		});                                                                          \
	} while (0)
#else
#define MARK__SITE(prov, nm, usdtnm, flags, argnames, ...)                                   \
	do {                                                                                 \
		MARK__DEFINE_DESC(mark__desc, MARK__KIND, flags, prov, nm,                   \
				  MARK__FIRST(__VA_ARGS__), argnames, MARK__NARGS(__VA_ARGS__)); \
		MARK__CHECK(__VA_ARGS__)                                                     \
		if (__builtin_expect(MARK__TEST(MARK__DESC_REF(mark__desc)), 0)) {          \
			MARK__SITE_BODY(MARK__DESC_REF(mark__desc), prov, usdtnm,            \
					__VA_ARGS__)                                         \
		}                                                                            \
	} while (0)
#endif

#if !MARK__OFF
#define MARK__ENABLED(prov, nm, flags)                                                    \
	__builtin_expect(__extension__({                                                  \
		MARK__DEFINE_DESC(mark__desc, MARK__KIND, (flags) | MARK__F_ENABLED_TEST, prov, \
				  nm, "", "", 0);                                         \
		MARK__TEST(MARK__DESC_REF(mark__desc));                                   \
	}), 0)
#endif

#if MARK__OFF
#define MARK(name, fmt, ...)                            \
	do {                                            \
		MARK__CHECK(fmt, ##__VA_ARGS__)         \
	} while (0)
#define MARK_ENABLED(name) 0
#else
/* MARK(name, "fmt", args...): a marker site.  name is a C identifier.  The
 * arguments are stringified here, before any macro in them is expanded. */
#define MARK(name, fmt, ...) \
	MARK__SITE(MARK_PROVIDER, #name, #name, 0, #__VA_ARGS__, fmt, ##__VA_ARGS__)
/* MARK_ENABLED(name): non-zero when marker `name` is armed at this site. */
#define MARK_ENABLED(name) MARK__ENABLED(MARK_PROVIDER, #name, 0)

/*
 * Every object that includes this header registers its descriptors with
 * libmark at load time and unregisters them at unload (dlclose).  The
 * section bounds are hidden, so each executable or shared object sees its
 * own.  Registration is idempotent, so one constructor per translation
 * unit is harmless.
 */
#ifdef __cplusplus
extern "C" {
#endif
extern const struct mark__site __start___mark_descs[] __attribute__((weak, visibility("hidden")));
extern const struct mark__site __stop___mark_descs[] __attribute__((weak, visibility("hidden")));
extern const struct mark__code_entry __start___mark_sites[] __attribute__((weak, visibility("hidden")));
extern const struct mark__code_entry __stop___mark_sites[] __attribute__((weak, visibility("hidden")));
#ifdef __cplusplus
}
#endif

static void __attribute__((constructor, used)) mark__object_ctor(void)
{
	mark__register_object(__start___mark_descs, __stop___mark_descs,
			      __start___mark_sites, __stop___mark_sites);
}
static void __attribute__((destructor, used)) mark__object_dtor(void)
{
	mark__unregister_object(__start___mark_descs, __start___mark_sites);
}
#endif /* MARK__OFF */

#endif /* MARK_MARK_H */
