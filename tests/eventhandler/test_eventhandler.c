/*
 * Event handler lists: ordering, FIFO among equal priorities, arguments,
 * arming of the invoke sites (read from the code), self-deregistration
 * inside a handler, nested invocation, errors.  Built once per site kind.
 */
#include <mark/eventhandler.h>
#include "eventhandler/eh_sites.h"
#include "testutil.h"

#include <errno.h>
#include <stdint.h>

/* ---------------- recording calls ---------------- */

static int trace[64], ntrace;
static void record(int id)
{
	if (ntrace < 64)
		trace[ntrace++] = id;
}
static void reset(void)
{
	ntrace = 0;
}
static int trace_is(const int *want, int n)
{
	if (ntrace != n)
		return 0;
	for (int i = 0; i < n; i++)
		if (trace[i] != want[i])
			return 0;
	return 1;
}
#define CHECK_TRACE(...)                                                               \
	do {                                                                           \
		static const int want_[] = { __VA_ARGS__ };                            \
		int n_ = (int)(sizeof(want_) / sizeof(want_[0]));                      \
		if (!trace_is(want_, n_)) {                                            \
			fprintf(stderr, "%s:%d: trace is", __FILE__, __LINE__);        \
			for (int i_ = 0; i_ < ntrace; i_++)                            \
				fprintf(stderr, " %d", trace[i_]);                     \
			fprintf(stderr, ", expected %s\n", #__VA_ARGS__);              \
			testutil_failures++;                                           \
		}                                                                      \
	} while (0)

/* ---------------- lists ---------------- */

typedef void (*order_fn)(void *arg, int value);
EVENTHANDLER_DECLARE(eh_order, order_fn);
EVENTHANDLER_DECLARE(eh_order, order_fn);   /* repeating a declaration is fine */

typedef void (*args_fn)(void *arg, int i, const char *s, double d, uint64_t u);
EVENTHANDLER_DECLARE(eh_args, args_fn);

typedef void (*noargs_fn)(void *arg);
EVENTHANDLER_DECLARE(eh_arm, noargs_fn);
EVENTHANDLER_DECLARE(eh_self, noargs_fn);
EVENTHANDLER_DECLARE(eh_outer, order_fn);
EVENTHANDLER_DECLARE(eh_inner, order_fn);
EVENTHANDLER_DECLARE(eh_never, noargs_fn);

static int last_value;
static void order_handler(void *arg, int value)
{
	last_value = value;
	record((int)(intptr_t)arg);
}

/* Not inlined, so the invoke site exists once and where we expect it. */
static __attribute__((noinline)) void invoke_order(int v)
{
	EVENTHANDLER_INVOKE(eh_order, v);
}

static int evaluated;
static int side_effect(void)
{
	return ++evaluated;
}

static __attribute__((noinline)) void invoke_arm(void)
{
	EVENTHANDLER_INVOKE(eh_arm);
}

static __attribute__((noinline)) void invoke_never(void)
{
	/* Arguments are not evaluated while the site is disarmed. */
	EVENTHANDLER_INVOKE(eh_order, side_effect());
}

static void arm_handler(void *arg)
{
	(*(int *)arg)++;
}

static void test_ordering(void)
{
	reset();
	eventhandler_tag t_last = EVENTHANDLER_REGISTER(eh_order, order_handler, (void *)5, EVENTHANDLER_PRI_LAST);
	eventhandler_tag t_any = EVENTHANDLER_REGISTER(eh_order, order_handler, (void *)3, EVENTHANDLER_PRI_ANY);
	eventhandler_tag t_first = EVENTHANDLER_REGISTER(eh_order, order_handler, (void *)1, EVENTHANDLER_PRI_FIRST);
	eventhandler_tag t_early = EVENTHANDLER_REGISTER(eh_order, order_handler, (void *)2, 5);
	eventhandler_tag t_late = EVENTHANDLER_REGISTER(eh_order, order_handler, (void *)4, EVENTHANDLER_PRI_ANY + 1);
	CHECK(t_last && t_any && t_first && t_early && t_late);
	CHECK_EQ(mark_eventhandler_count("eh_order"), 5);
	invoke_order(42);
	CHECK_TRACE(1, 2, 3, 4, 5);
	CHECK_EQ(last_value, 42);

	/* Removing one keeps the others in order. */
	CHECK_EQ(EVENTHANDLER_DEREGISTER(eh_order, t_any), 0);
	reset();
	invoke_order(7);
	CHECK_TRACE(1, 2, 4, 5);
	/* Negative priorities run before PRI_FIRST. */
	eventhandler_tag t_neg = EVENTHANDLER_REGISTER(eh_order, order_handler, (void *)9, -1);
	reset();
	invoke_order(7);
	CHECK_TRACE(9, 1, 2, 4, 5);

	/* NULL tag: every handler of the list, as in FreeBSD. */
	(void)t_neg;
	CHECK_EQ(EVENTHANDLER_DEREGISTER(eh_order, NULL), 0);
	CHECK_EQ(mark_eventhandler_count("eh_order"), 0);
	reset();
	invoke_order(1);
	CHECK_EQ(ntrace, 0);
	(void)t_last;
	(void)t_first;
	(void)t_early;
	(void)t_late;
}

static void test_fifo(void)
{
	eventhandler_tag tags[6];
	for (int i = 0; i < 6; i++)
		tags[i] = EVENTHANDLER_REGISTER(eh_order, order_handler, (void *)(intptr_t)(10 + i),
						EVENTHANDLER_PRI_ANY);
	reset();
	invoke_order(0);
	CHECK_TRACE(10, 11, 12, 13, 14, 15);
	/* Re-registering goes to the end of its priority class. */
	CHECK_EQ(EVENTHANDLER_DEREGISTER(eh_order, tags[1]), 0);
	tags[1] = EVENTHANDLER_REGISTER(eh_order, order_handler, (void *)11, EVENTHANDLER_PRI_ANY);
	/* A same-priority newcomer follows everyone already there. */
	eventhandler_tag extra = EVENTHANDLER_REGISTER(eh_order, order_handler, (void *)16, EVENTHANDLER_PRI_ANY);
	eventhandler_tag first = EVENTHANDLER_REGISTER(eh_order, order_handler, (void *)1, EVENTHANDLER_PRI_FIRST);
	reset();
	invoke_order(0);
	CHECK_TRACE(1, 10, 12, 13, 14, 15, 11, 16);
	for (int i = 0; i < 6; i++)
		CHECK_EQ(EVENTHANDLER_DEREGISTER(eh_order, tags[i]), 0);
	CHECK_EQ(EVENTHANDLER_DEREGISTER(eh_order, extra), 0);
	CHECK_EQ(EVENTHANDLER_DEREGISTER(eh_order, first), 0);
	CHECK_EQ(mark_eventhandler_count("eh_order"), 0);
}

static int args_seen;
static void args_handler(void *arg, int i, const char *s, double d, uint64_t u)
{
	CHECK(arg == (void *)&args_seen);
	CHECK_EQ(i, -3);
	CHECK_STR(s, "hello");
	CHECK(d == 2.5);
	CHECK(u == 0x1234567890abcdefULL);
	args_seen++;
}

static void test_args(void)
{
	eventhandler_tag t = EVENTHANDLER_REGISTER(eh_args, args_handler, &args_seen, EVENTHANDLER_PRI_ANY);
	CHECK(t != NULL);
	EVENTHANDLER_INVOKE(eh_args, -3, "hello", 2.5, 0x1234567890abcdefULL);
	CHECK_EQ(args_seen, 1);
	CHECK_EQ(EVENTHANDLER_DEREGISTER(eh_args, t), 0);
	EVENTHANDLER_INVOKE(eh_args, -3, "hello", 2.5, 0x1234567890abcdefULL);
	CHECK_EQ(args_seen, 1);
}

static void expect_sites(const char *list, int armed, int line)
{
	struct eh_site_census c = eh_sites(list);
	if (c.sites < 1 || c.bad_bytes || c.mismatched || (armed ? c.disarmed : c.armed)) {
		fprintf(stderr, "line %d: list %s: %d sites, %d armed, %d disarmed, %d mismatched, %d bad; "
				"expected all %s\n", line, list, c.sites, c.armed, c.disarmed, c.mismatched,
			c.bad_bytes, armed ? "armed" : "disarmed");
		testutil_failures++;
	}
}
#define EXPECT_SITES(list, armed) expect_sites(list, armed, __LINE__)

static int stray_probe_calls;
static void stray_probe(const struct mark_marker *m, void *priv, const uint64_t *args)
{
	(void)m;
	(void)priv;
	(void)args;
	stray_probe_calls++;
}

static void test_arming(void)
{
	int calls = 0;
	invoke_arm();                 /* make sure the site is reachable code */
	EXPECT_SITES("eh_arm", 0);

	/* User globs and probes never arm an invoke site. */
	CHECK(mark_arm("*") >= 0);
	CHECK(mark_arm("eventhandler:*") >= 0);
	EXPECT_SITES("eh_arm", 0);
	CHECK(mark_disarm("*") >= 0);
	CHECK_EQ(mark_probe_register_fast("eventhandler:*", stray_probe, NULL), 0);
	CHECK_EQ(mark_probe_register_fast("eh_arm", stray_probe, NULL), 0);
	EXPECT_SITES("eh_arm", 0);

	eventhandler_tag a = EVENTHANDLER_REGISTER(eh_arm, arm_handler, &calls, EVENTHANDLER_PRI_ANY);
	EXPECT_SITES("eh_arm", 1);
	invoke_arm();
	CHECK_EQ(calls, 1);
	CHECK_EQ(stray_probe_calls, 0);   /* an armed invoke site fires no probe */
	/* A second handler changes nothing in the code; the first leaving neither. */
	eventhandler_tag b = EVENTHANDLER_REGISTER(eh_arm, arm_handler, &calls, EVENTHANDLER_PRI_ANY);
	EXPECT_SITES("eh_arm", 1);
	CHECK_EQ(EVENTHANDLER_DEREGISTER(eh_arm, a), 0);
	EXPECT_SITES("eh_arm", 1);
	/* mark_disarm("*") does not disarm it either. */
	CHECK(mark_disarm("*") >= 0);
	EXPECT_SITES("eh_arm", 1);
	invoke_arm();
	CHECK_EQ(calls, 2);
	/* The last one leaving disarms. */
	CHECK_EQ(EVENTHANDLER_DEREGISTER(eh_arm, b), 0);
	EXPECT_SITES("eh_arm", 0);
	invoke_arm();
	CHECK_EQ(calls, 2);
	CHECK_EQ(mark_probe_unregister_fast("eventhandler:*", stray_probe, NULL), 0);
	CHECK_EQ(mark_probe_unregister_fast("eh_arm", stray_probe, NULL), 0);

	/* Disarmed: the arguments are not even evaluated. */
	invoke_never();
	CHECK_EQ(evaluated, 0);
	eventhandler_tag c = EVENTHANDLER_REGISTER(eh_order, order_handler, (void *)1, EVENTHANDLER_PRI_ANY);
	invoke_never();
	CHECK_EQ(evaluated, 1);
	CHECK_EQ(EVENTHANDLER_DEREGISTER(eh_order, c), 0);

	/* A list nobody invokes or registers: no marker at all. */
	CHECK_EQ(eh_sites("eh_never").sites, 0);
	CHECK_EQ(mark_eventhandler_count("eh_never"), 0);
}

/* ---------------- deregistering from inside a handler ---------------- */

struct self_ctx {
	eventhandler_tag self;
	eventhandler_tag victim;   /* a later handler removed by this one */
	int calls;
};
static struct self_ctx self_a, self_b, self_c;

static void self_remover(void *arg)
{
	struct self_ctx *c = (struct self_ctx *)arg;
	c->calls++;
	CHECK_EQ(EVENTHANDLER_DEREGISTER_NOWAIT(eh_self, c->self), 0);
	if (c->victim)
		CHECK_EQ(EVENTHANDLER_DEREGISTER_NOWAIT(eh_self, c->victim), 0);
}

static void self_counter(void *arg)
{
	((struct self_ctx *)arg)->calls++;
}

static void self_waiter(void *arg)
{
	struct self_ctx *c = (struct self_ctx *)arg;
	c->calls++;
	/* The blocking form inside a handler must not deadlock (it falls back). */
	CHECK_EQ(EVENTHANDLER_DEREGISTER(eh_self, c->self), 0);
}

static __attribute__((noinline)) void invoke_self(void)
{
	EVENTHANDLER_INVOKE(eh_self);
}

static void test_self_deregister(void)
{
	/* a removes itself and c (later in the list); b keeps running. */
	self_a.self = EVENTHANDLER_REGISTER(eh_self, self_remover, &self_a, 1);
	self_b.self = EVENTHANDLER_REGISTER(eh_self, self_counter, &self_b, 2);
	self_c.self = EVENTHANDLER_REGISTER(eh_self, self_counter, &self_c, 3);
	self_a.victim = self_c.self;
	invoke_self();
	CHECK_EQ(self_a.calls, 1);
	CHECK_EQ(self_b.calls, 1);
	CHECK_EQ(self_c.calls, 0);   /* deregistered (NOWAIT) earlier in this very invocation */
	invoke_self();
	CHECK_EQ(self_a.calls, 1);
	CHECK_EQ(self_b.calls, 2);
	CHECK_EQ(mark_eventhandler_count("eh_self"), 1);
	/* The last handler removing itself disarms the sites. */
	self_b.victim = NULL;
	CHECK_EQ(EVENTHANDLER_DEREGISTER(eh_self, self_b.self), 0);
	self_b.self = EVENTHANDLER_REGISTER(eh_self, self_remover, &self_b, 1);
	EXPECT_SITES("eh_self", 1);
	invoke_self();
	CHECK_EQ(self_b.calls, 3);
	EXPECT_SITES("eh_self", 0);
	invoke_self();
	CHECK_EQ(self_b.calls, 3);

	/* The blocking form from inside a handler. */
	struct self_ctx w = { NULL, NULL, 0 };
	w.self = EVENTHANDLER_REGISTER(eh_self, self_waiter, &w, 1);
	invoke_self();
	invoke_self();
	CHECK_EQ(w.calls, 1);
	CHECK_EQ(mark_eventhandler_count("eh_self"), 0);
	mark_synchronize();   /* let deferred frees happen before exit (ASan leak check) */
}

/* ---------------- nesting ---------------- */

static void inner_handler(void *arg, int depth);
static __attribute__((noinline)) void invoke_outer(int depth)
{
	EVENTHANDLER_INVOKE(eh_outer, depth);
}

static void outer_handler(void *arg, int depth)
{
	record(100 + depth);
	EVENTHANDLER_INVOKE(eh_inner, depth);
	(void)arg;
}

static void inner_handler(void *arg, int depth)
{
	record(200 + depth);
	(void)arg;
	if (depth < 3)
		invoke_outer(depth + 1);   /* recursion through both lists */
}

static void inner_registers(void *arg, int depth)
{
	/* Registering from inside a handler must not wait for itself. */
	eventhandler_tag *slot = (eventhandler_tag *)arg;
	if (depth == 0 && !*slot)
		*slot = EVENTHANDLER_REGISTER(eh_inner, inner_handler, NULL, EVENTHANDLER_PRI_LAST);
}

static void test_nesting(void)
{
	eventhandler_tag o = EVENTHANDLER_REGISTER(eh_outer, outer_handler, NULL, EVENTHANDLER_PRI_ANY);
	eventhandler_tag added = NULL;
	eventhandler_tag r = EVENTHANDLER_REGISTER(eh_inner, inner_registers, &added, EVENTHANDLER_PRI_FIRST);
	reset();
	invoke_outer(0);
	/* The handler added during the invocation is not in the array being run. */
	CHECK_TRACE(100);
	CHECK(added != NULL);
	reset();
	invoke_outer(0);
	CHECK_TRACE(100, 200, 101, 201, 102, 202, 103, 203);
	CHECK_EQ(EVENTHANDLER_DEREGISTER(eh_outer, o), 0);
	CHECK_EQ(EVENTHANDLER_DEREGISTER(eh_inner, r), 0);
	CHECK_EQ(EVENTHANDLER_DEREGISTER(eh_inner, added), 0);
}

/* ---------------- errors ---------------- */

static void test_errors(void)
{
	eventhandler_tag t = EVENTHANDLER_REGISTER(eh_order, order_handler, (void *)1, EVENTHANDLER_PRI_ANY);
	CHECK(t != NULL);
	/* Wrong list. */
	CHECK_EQ(mark__eh_deregister("eh_args", t, 1), -ENOENT);
	CHECK(strstr(mark_last_error(), "not registered") != NULL);
	CHECK_EQ(EVENTHANDLER_DEREGISTER(eh_order, t), 0);
	/* Twice. */
	CHECK_EQ(EVENTHANDLER_DEREGISTER(eh_order, t), -ENOENT);
	CHECK_EQ(EVENTHANDLER_DEREGISTER_NOWAIT(eh_order, t), -ENOENT);
	/* NULL handler / name. */
	CHECK(mark__eh_register("eh_order", NULL, NULL, 0) == NULL);
	CHECK(strstr(mark_last_error(), "handler function") != NULL);
	CHECK(mark__eh_register("", (void (*)(void))order_handler, NULL, 0) == NULL);
	CHECK_EQ(mark__eh_deregister(NULL, NULL, 1), -EINVAL);
	/* Deregistering everything from an empty or unknown list is not an error. */
	CHECK_EQ(mark__eh_deregister("eh_no_such_list", NULL, 1), 0);
	CHECK_EQ(mark_eventhandler_count("eh_no_such_list"), 0);
	CHECK_EQ(mark_eventhandler_count(NULL), 0);
}

int main(void)
{
	test_arming();
	test_ordering();
	test_fifo();
	test_args();
	test_self_deregister();
	test_nesting();
	test_errors();
	TEST_DONE();
}
