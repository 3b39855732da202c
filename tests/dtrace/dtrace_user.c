/*
 * A program instrumented the DTrace way: it includes the headers that
 * `mark dtrace -h` generated from the .d files of tests/dtrace and links the object of
 * `mark dtrace -G`.  Checks, with a fast probe on every marker:
 *   - marker names ("provider:probe-name", "__" shown as "-") and formats
 *     derived from the argument types;
 *   - the recorded values: sizes and signedness, strings (NULL as "(null)"),
 *     pointers, doubles;
 *   - PROVIDER_PROBE_ENABLED() follows arming, and a disarmed probe records nothing.
 * Compiled with -pedantic -Werror (projects do that), once per site kind.
 */
#include "basic.h"
#include "cpp.h"
#include "multi.h"
#include "types.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "testutil.h"

struct foo { int a; };
struct conn { int fd; };

#define MAX_EVENTS 16
static struct {
	char name[64];
	unsigned nargs;
	uint64_t args[12];
	char strs[12][32];
} events[MAX_EVENTS];
static unsigned nevents;

static void capture(const struct mark_marker *m, void *priv, const uint64_t *args)
{
	(void)priv;
	if (nevents == MAX_EVENTS)
		return;
	unsigned n = mark_marker_nargs(m);
	const struct mark_arg *a = mark_marker_args(m);
	snprintf(events[nevents].name, sizeof(events[nevents].name), "%s", mark_marker_name(m));
	events[nevents].nargs = n;
	for (unsigned i = 0; i < n && i < 12; i++) {
		events[nevents].args[i] = args[i];
		if (a[i].type == MARK_ARG_STRING)
			snprintf(events[nevents].strs[i], sizeof(events[nevents].strs[i]), "%s",
				 (const char *)(uintptr_t)args[i]);
	}
	nevents++;
}

static const struct {
	const char *name, *format;
} expected_markers[] = {
	{ "basic:transaction-start", "%d" },
	{ "basic:transaction-done", "%d %s" },
	{ "basic:tick", "" },
	{ "basic:idle", "" },
	{ "basic:spread_over_lines", "%u %ld" },
	{ "types:ints", "%d %d %d %ld %lld %d" },
	{ "types:uints", "%u %u %u %lu %llu %u" },
	{ "types:fixed", "%d %u %d %u %d %u %lld %llu %llu %lld %llu %d" },
	{ "types:strings", "%s %s %s %s %s" },
	{ "types:pointers", "%p %p %p %p %p %p %p" },
	{ "types:typedefs", "%llu %d %d %lld %d %lld" },
	{ "types:translated", "%p %d" },
	{ "types:floating", "%f %f" },
	{ "types:unnamed", "%d %s %p" },
	{ "types:twelve", "%d %d %d %d %d %d %d %d %d %d %d %d" },
	{ "cpp:lock-acquire", "%u %d %u" },
	{ "cpp:extra", "%s" },
	{ "first:a", "%d" },
	{ "first:b-c", "" },
	{ "second:a", "%s" },
};

static int find_marker(const struct mark_marker *m, void *arg)
{
	*(const struct mark_marker **)arg = m;
	return 1;
}

static const struct mark_marker *marker(const char *name)
{
	const struct mark_marker *m = NULL;
	mark_list(name, find_marker, &m);
	return m;
}

/* Every probe once; each in its own statement so one call fires one event. */
static void fire_all(struct foo *f, struct conn *c)
{
	int arr[4] = { 0 };
	char *argv_like[2] = { NULL, NULL };
	if (BASIC_TRANSACTION_START_ENABLED())
		BASIC_TRANSACTION_START(17);
	BASIC_TRANSACTION_DONE(17, NULL);
	BASIC_TICK();
	BASIC_IDLE();
	BASIC_SPREAD_OVER_LINES(4000000000u, -5L);
	TYPES_INTS((char)-5, (short)-300, -70000, -5000000000L, -9000000000000000000LL, (signed char)-128);
	TYPES_UINTS((unsigned char)250, (unsigned short)65000, 4000000000u, 18000000000000000000UL,
		    18446744073709551615ULL, 7u);
	TYPES_FIXED((int8_t)-1, (uint8_t)255, (int16_t)-2, (uint16_t)65535, (int32_t)-3, (uint32_t)4294967295u,
		    INT64_MIN, UINT64_MAX, (size_t)123456789012ULL, (ssize_t)-42, (uintptr_t)f, 1);
	TYPES_STRINGS("a", "bb", (unsigned char *)"ccc", NULL, "eeeee");
	TYPES_POINTERS((void *)f, (const void *)c, f, c, argv_like, &arr[1], arr);
	TYPES_TYPEDEFS(1ULL << 63, -7, 1, (off_t)-1, (pid_t)1234, 99);
	TYPES_TRANSLATED(f, 3);
	TYPES_FLOATING(2.5, 1.5f);
	TYPES_UNNAMED(1, "u", f);
	TYPES_TWELVE(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12);
	CPP_LOCK_ACQUIRE(16384u, 2, 77u);
	CPP_EXTRA("extra");
	FIRST_A(-1);
	FIRST_B_C();
	SECOND_A("second");
}

static unsigned find_event(const char *name)
{
	for (unsigned i = 0; i < nevents; i++)
		if (strcmp(events[i].name, name) == 0)
			return i;
	fprintf(stderr, "no event %s\n", name);
	testutil_failures++;
	return MAX_EVENTS - 1;
}

int main(void)
{
	struct foo f = { 1 };
	struct conn c = { 2 };
	unsigned n = sizeof(expected_markers) / sizeof(expected_markers[0]);
	for (unsigned i = 0; i < n; i++) {
		const struct mark_marker *m = marker(expected_markers[i].name);
		if (!m) {
			fprintf(stderr, "marker %s is missing\n", expected_markers[i].name);
			testutil_failures++;
			continue;
		}
		CHECK_STR(mark_marker_format(m), expected_markers[i].format);
	}
	/* The marker shows "-"; a glob in the .d spelling ("__") finds it too. */
	CHECK(marker("basic:transaction__start") != NULL &&
	      marker("basic:transaction__start") == marker("basic:transaction-start"));

	/* Disarmed: nothing recorded, _ENABLED() false. */
	CHECK_EQ(mark_probe_register_fast("*:*", capture, NULL), 0);
	fire_all(&f, &c);
	CHECK_EQ(nevents, 0);
	CHECK(!BASIC_TRANSACTION_START_ENABLED());

	CHECK(mark_arm("basic:*") > 0);
	CHECK(mark_arm("types:*") > 0);
	CHECK(mark_arm("cpp:*") > 0);
	CHECK(mark_arm("first:*") > 0);
	CHECK(mark_arm("second:*") > 0);
	CHECK(BASIC_TRANSACTION_START_ENABLED());
	fire_all(&f, &c);
	CHECK_EQ(nevents, MAX_EVENTS);   /* 20 events, the first 16 kept */
	nevents = 0;
	mark_disarm("basic:*");
	mark_disarm("first:*");
	mark_disarm("second:*");
	fire_all(&f, &c);   /* types (10) + cpp (2) */
	CHECK_EQ(nevents, 12);

	unsigned e = find_event("types:ints");
	/* Plain char is the platform's: signed on x86-64, unsigned on aarch64
	 * (the AAPCS64), where (char)-5 is 251.  The probe records the value
	 * of the declared type, as sys/sdt.h's dtrace does. */
	CHECK_EQ((int32_t)events[e].args[0], (int)(char)-5);
	CHECK_EQ((int32_t)events[e].args[1], -300);
	CHECK_EQ((int32_t)events[e].args[2], -70000);
	CHECK_EQ((int64_t)events[e].args[3], -5000000000LL);
	CHECK_EQ((int64_t)events[e].args[4], -9000000000000000000LL);
	CHECK_EQ((int32_t)events[e].args[5], -128);
	e = find_event("types:uints");
	CHECK_EQ((uint32_t)events[e].args[0], 250);
	CHECK_EQ((uint32_t)events[e].args[1], 65000);
	CHECK_EQ((uint32_t)events[e].args[2], 4000000000u);
	CHECK(events[e].args[3] == 18000000000000000000ULL);
	CHECK(events[e].args[4] == UINT64_MAX);
	e = find_event("types:fixed");
	CHECK_EQ((int32_t)events[e].args[0], -1);
	CHECK_EQ((uint32_t)events[e].args[1], 255);
	CHECK_EQ((uint32_t)events[e].args[5], 4294967295u);
	CHECK_EQ((int64_t)events[e].args[6], INT64_MIN);
	CHECK(events[e].args[7] == UINT64_MAX);
	CHECK(events[e].args[8] == 123456789012ULL);
	CHECK_EQ((int64_t)events[e].args[9], -42);
	CHECK(events[e].args[10] == (uintptr_t)&f);
	e = find_event("types:strings");
	CHECK_STR(events[e].strs[0], "a");
	CHECK_STR(events[e].strs[1], "bb");
	CHECK_STR(events[e].strs[2], "ccc");
	CHECK_STR(events[e].strs[3], "(null)");
	CHECK_STR(events[e].strs[4], "eeeee");
	e = find_event("types:pointers");
	CHECK(events[e].args[0] == (uintptr_t)&f);
	CHECK(events[e].args[1] == (uintptr_t)&c);
	CHECK(events[e].args[2] == (uintptr_t)&f);
	e = find_event("types:typedefs");
	CHECK(events[e].args[0] == 1ULL << 63);
	CHECK_EQ((int32_t)events[e].args[1], -7);
	CHECK_EQ((int64_t)events[e].args[3], -1);
	CHECK_EQ((int64_t)events[e].args[5], 99);
	e = find_event("types:floating");
	double d1, d2;
	memcpy(&d1, &events[e].args[0], sizeof(d1));
	memcpy(&d2, &events[e].args[1], sizeof(d2));
	CHECK(d1 == 2.5);
	CHECK(d2 == 1.5);
	e = find_event("types:twelve");
	CHECK_EQ((int32_t)events[e].args[11], 12);
	e = find_event("cpp:lock-acquire");
	CHECK_EQ((uint32_t)events[e].args[0], 16384);
	e = find_event("cpp:extra");
	CHECK_STR(events[e].strs[0], "extra");
	TEST_DONE();
}
