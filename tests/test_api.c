/* Unit tests for each call of the core API and its error paths. */
#include "test_api_shared.h"
#include "testutil.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>

static int va_hits, fast_hits, any_hits;
static int last_count;
static void *last_ptr;
static int order[8], norder;
static int expected_count;
static void *expected_ptr;

static void va_probe(const struct mark_marker *m, void *priv, const char *fmt, va_list *args)
{
	(void)m;
	CHECK_STR(fmt, "%d %p");
	last_count = va_arg(*args, int);
	last_ptr = va_arg(*args, void *);
	va_hits++;
	order[norder++ & 7] = (int)(intptr_t)priv;
}

static void fast_probe(const struct mark_marker *m, void *priv, const uint64_t *args)
{
	CHECK_EQ(mark_marker_nargs(m), 2);
	CHECK_EQ((int)args[0], expected_count);
	CHECK(args[1] == (uint64_t)(uintptr_t)expected_ptr);
	fast_hits++;
	order[norder++ & 7] = (int)(intptr_t)priv;
}

static void any_probe(const struct mark_marker *m, void *priv, const char *fmt, va_list *args)
{
	(void)priv;
	(void)args;
	CHECK_STR(fmt, mark_marker_format(m));
	any_hits++;
}

static void hit_basic(int count, void *ptr)
{
	expected_count = count;
	expected_ptr = ptr;
	MARK(api_basic, "%d %p", count, ptr);
}

static int types_seen;
static void types_probe(const struct mark_marker *m, void *priv, const char *fmt, va_list *args)
{
	(void)m;
	(void)priv;
	CHECK_STR(fmt, "%hd %c %s %f %llx %zu %ld");
	CHECK_EQ(va_arg(*args, int), -7);
	CHECK_EQ(va_arg(*args, int), 'q');
	CHECK_STR(va_arg(*args, const char *), "hello");
	double d = va_arg(*args, double);
	CHECK(d == 2.5);
	CHECK(va_arg(*args, unsigned long long) == 0x1234567890abcdefULL);
	CHECK_EQ(va_arg(*args, size_t), 77);
	CHECK_EQ(va_arg(*args, long), -5000000000L);
	types_seen++;
}

static void hit_types(const struct request *req)
{
	short s = -7;
	char c = 'q';
	float f = 2.5f;   /* promoted to double, as printf would */
	MARK(api_types, "%hd %c %s %f %llx %zu %ld", s, c, req->path, f, 0x1234567890abcdefULL,
	     (size_t)77, -5000000000L);
	MARK(api_names, "%d %d %s", req->len, req->len + 1, req[0].path);
}

static int count_markers(const struct mark_marker *m, void *arg)
{
	(void)m;
	(*(int *)arg)++;
	return 0;
}

static int find_basic(const struct mark_marker *m, void *arg)
{
	*(const struct mark_marker **)arg = m;
	return 1;
}

struct site_counts { int sites, armed, enabled_tests, kind; };
static int count_sites(const struct mark_site_info *s, void *arg)
{
	struct site_counts *c = arg;
	c->sites++;
	c->armed += s->armed;
	c->enabled_tests += s->is_enabled_test;
	c->kind = s->kind;
	CHECK(s->line > 0);
	CHECK(strstr(s->file, "test_api") != NULL);
	CHECK(strstr(s->object, "test_api") != NULL);
	return 0;
}

int main(void)
{
	int local;
	const struct mark_marker *basic = NULL;

	/* Registry: the marker and its descriptor. */
	CHECK_EQ(mark_list("api_basic", find_basic, &basic), 1);
	CHECK(basic != NULL);
	if (!basic)
		TEST_DONE();
	CHECK_STR(mark_marker_name(basic), "api_basic");
	CHECK_STR(mark_marker_provider(basic), "mark");
	CHECK_STR(mark_marker_format(basic), "%d %p");
	CHECK_EQ(mark_marker_nargs(basic), 2);
	CHECK_STR(mark_marker_args(basic)[0].name, "count");
	CHECK_EQ(mark_marker_args(basic)[0].type, MARK_ARG_SIGNED);
	CHECK_EQ(mark_marker_args(basic)[0].size, 4);
	CHECK_STR(mark_marker_args(basic)[1].name, "ptr");
	CHECK_EQ(mark_marker_args(basic)[1].type, MARK_ARG_POINTER);
	/* Two MARK sites and one MARK_ENABLED; the compiler may duplicate code
	 * (inlining, unrolling), each copy being a site of its own. */
	struct site_counts sc = { 0 };
	mark_marker_sites(basic, count_sites, &sc);
	const int basic_sites = sc.sites;
	CHECK(sc.sites >= 3);
	CHECK(sc.enabled_tests >= 1);
	CHECK_EQ(sc.armed, 0);
#if defined(MARK_SITE)
	CHECK_EQ(sc.kind, MARK__KIND);
#endif

	int n = 0;
	mark_list(NULL, count_markers, &n);
	CHECK_EQ(n, 4);   /* api_basic api_inline api_types api_names */
	n = 0;
	mark_list("api_?ames", count_markers, &n);
	CHECK_EQ(n, 1);

	/* Argument names: identifiers and member accesses (an index dropped), else argN. */
	const struct mark_marker *names = NULL;
	mark_list("api_names", find_basic, &names);
	CHECK(names && mark_marker_nargs(names) == 3);
	if (names) {
		CHECK_STR(mark_marker_args(names)[0].name, "req_len");
		CHECK_STR(mark_marker_args(names)[1].name, "arg1");
		CHECK_STR(mark_marker_args(names)[2].name, "req_path");
	}

	/* Probe errors. */
	CHECK_EQ(mark_probe_register("api_basic", "%d", va_probe, NULL), -EINVAL);
	CHECK(strstr(mark_last_error(), "\"%d\"") && strstr(mark_last_error(), "\"%d %p\""));
	CHECK_EQ(mark_probe_register("", NULL, va_probe, NULL), -EINVAL);
	CHECK_EQ(mark_probe_register("api_basic", NULL, NULL, NULL), -EINVAL);
	CHECK_EQ(mark_probe_unregister("api_basic", va_probe, NULL), -ENOENT);
	CHECK_EQ(mark_arm(""), -EINVAL);
	CHECK(strlen(mark_last_error()) > 0);
	CHECK_EQ(mark_arm(NULL), -EINVAL);
	CHECK_EQ(mark_disarm(""), -EINVAL);
	CHECK_EQ(mark_list(NULL, NULL, NULL), -EINVAL);
	CHECK_EQ(mark_marker_sites(NULL, count_sites, NULL), -EINVAL);
	CHECK_EQ(mark_marker_sites(basic, NULL, NULL), -EINVAL);
	CHECK_EQ(mark_probe_register_fast("api_basic", NULL, NULL), -EINVAL);
	CHECK_EQ(mark_probe_register_fast(NULL, fast_probe, NULL), -EINVAL);
	CHECK_EQ(mark_probe_unregister_fast("api_basic", fast_probe, NULL), -ENOENT);
	CHECK(strstr(mark_last_error(), "api_basic") != NULL);
	CHECK_EQ(mark_probe_unregister(NULL, va_probe, NULL), -EINVAL);
	CHECK_STR(mark_site_kind_name(MARK_KIND_JUMP), "jump");
	CHECK_STR(mark_site_kind_name(MARK_KIND_IMMEDIATE), "immediate");
	CHECK_STR(mark_site_kind_name(MARK_KIND_GENERIC), "generic");
	/* A probe for a name nothing defines yet is accepted (connected on load). */
	CHECK_EQ(mark_probe_register("not_loaded_yet", "%d", va_probe, NULL), 0);
	CHECK_EQ(mark_probe_unregister("not_loaded_yet", va_probe, NULL), 0);
	/* Errors are per thread and cleared by the next successful call. */
	CHECK_EQ(mark_arm("no_such_marker"), 0);
	CHECK_STR(mark_last_error(), "");

	/* Probes in registration order: va(1), fast(2), any(NULL fmt). */
	CHECK_EQ(mark_probe_register("api_basic", "%d %p", va_probe, (void *)1), 0);
	CHECK_EQ(mark_probe_register("api_basic", "%d %p", va_probe, (void *)1), -EEXIST);
	CHECK_EQ(mark_probe_register_fast("api_basic", fast_probe, (void *)2), 0);
	CHECK_EQ(mark_probe_register("api_*", NULL, any_probe, NULL), 0);
	CHECK_EQ(mark_marker_probe_count(basic), 3);

	/* Disarmed: nothing fires, MARK_ENABLED is false. */
	hit_basic(1, &local);
	api_other_tu_hit(2, &local);
	CHECK_EQ(va_hits + fast_hits + any_hits, 0);
	CHECK_EQ(api_other_tu_enabled(), 0);

	/* Arm by exact name: both sites and the MARK_ENABLED site. */
	CHECK_EQ(mark_arm("api_basic"), basic_sites);
	CHECK_EQ(mark_arm("api_basic"), 0);   /* already armed: nothing changes */
	CHECK_EQ(api_other_tu_enabled(), 1);
	norder = 0;
	hit_basic(41, &local);
	CHECK_EQ(va_hits, 1);
	CHECK_EQ(fast_hits, 1);
	CHECK_EQ(any_hits, 1);
	CHECK_EQ(last_count, 41);
	CHECK(last_ptr == &local);
	CHECK_EQ(order[0], 1);
	CHECK_EQ(order[1], 2);
	expected_count = 42;
	expected_ptr = NULL;
	api_other_tu_hit(42, NULL);
	CHECK_EQ(va_hits, 2);
	CHECK_EQ(last_count, 42);
	CHECK(last_ptr == NULL);
	CHECK_EQ(any_hits, 2);   /* api_inline is still disarmed */

	/* Globs: arm the inline marker in both translation units. */
	const struct mark_marker *inl = NULL;
	mark_list("api_inline", find_basic, &inl);
	struct site_counts ic = { 0 };
	if (inl)
		mark_marker_sites(inl, count_sites, &ic);
	CHECK(ic.sites >= 2);
	CHECK_EQ(mark_arm("api_inl?ne"), ic.sites);
	api_inline_hit(5);
	CHECK_EQ(any_hits, 3);
	CHECK_EQ(mark_arm("no_such_marker_*"), 0);

	/* Types follow the format, with printf's promotions. */
	CHECK_EQ(mark_probe_register("api_types", "%hd %c %s %f %llx %zu %ld", types_probe, NULL), 0);
	const struct mark_marker *types = NULL;
	mark_list("api_types", find_basic, &types);
	struct site_counts tc = { 0 };
	if (types)
		mark_marker_sites(types, count_sites, &tc);
	CHECK_EQ(mark_arm("api_t*"), tc.sites);
	struct request req = { 10, "hello" };
	hit_types(&req);
	CHECK_EQ(types_seen, 1);

	/* Unregister: the probe stops, the others keep running. */
	CHECK_EQ(mark_probe_unregister("api_basic", va_probe, (void *)1), 0);
	mark_synchronize();
	hit_basic(3, NULL);
	CHECK_EQ(va_hits, 2);
	CHECK_EQ(fast_hits, 3);

	/* Disarm everything. */
	int disarmed = mark_disarm("*");
	CHECK_EQ(disarmed, basic_sites + ic.sites + tc.sites);
	CHECK_EQ(api_other_tu_enabled(), 0);
	int before = fast_hits + any_hits + types_seen;
	hit_basic(1, NULL);
	api_other_tu_hit(1, NULL);
	hit_types(&req);
	CHECK_EQ(fast_hits + any_hits + types_seen, before);
	sc = (struct site_counts){ 0 };
	mark_marker_sites(basic, count_sites, &sc);
	CHECK_EQ(sc.armed, 0);

	CHECK_EQ(mark_probe_unregister_fast("api_basic", fast_probe, (void *)2), 0);
	CHECK_EQ(mark_probe_unregister("api_*", any_probe, NULL), 0);
	CHECK_EQ(mark_probe_unregister("api_types", types_probe, NULL), 0);
	CHECK_EQ(mark_marker_probe_count(basic), 0);
	TEST_DONE();
}
