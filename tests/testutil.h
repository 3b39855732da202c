/* Minimal assertion helpers shared by the C tests. */
#ifndef MARK_TESTUTIL_H
#define MARK_TESTUTIL_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int testutil_failures;

#define CHECK(cond)                                                                    \
	do {                                                                           \
		if (!(cond)) {                                                         \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
			testutil_failures++;                                           \
		}                                                                      \
	} while (0)

#define CHECK_EQ(a, b)                                                                 \
	do {                                                                           \
		long long check_a = (long long)(a), check_b = (long long)(b);          \
		if (check_a != check_b) {                                              \
			fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %lld, %s == %lld\n", \
				__FILE__, __LINE__, #a, check_a, #b, check_b);         \
			testutil_failures++;                                           \
		}                                                                      \
	} while (0)

#define CHECK_STR(a, b)                                                                \
	do {                                                                           \
		const char *check_a = (a), *check_b = (b);                             \
		if (!check_a || !check_b || strcmp(check_a, check_b) != 0) {           \
			fprintf(stderr, "%s:%d: CHECK_STR failed: %s == \"%s\", expected \"%s\"\n", \
				__FILE__, __LINE__, #a, check_a ? check_a : "(null)",  \
				check_b ? check_b : "(null)");                         \
			testutil_failures++;                                           \
		}                                                                      \
	} while (0)

/* Print a closing line and exit non-zero on any failure. */
#define TEST_DONE()                                                                    \
	do {                                                                           \
		if (testutil_failures) {                                               \
			fprintf(stderr, "FAILED: %d check(s)\n", testutil_failures);   \
			return 1;                                                      \
		}                                                                      \
		printf("ok\n");                                                        \
		return 0;                                                              \
	} while (0)

/* Skip with a printed reason (ctest SKIP_RETURN_CODE 77). */
#define TEST_SKIP(...)                                                                 \
	do {                                                                           \
		printf("SKIP: ");                                                      \
		printf(__VA_ARGS__);                                                   \
		printf("\n");                                                          \
		exit(77);                                                              \
	} while (0)

#include <dirent.h>

/* Entries of a directory, "." and ".." aside (/proc/self/fd, /proc/self/task). */
static inline int testutil_count_entries(const char *dir)
{
	int n = 0;
	DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d)))
		n += de->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

#ifdef MARK_MARK_H
/* The marker that glob `name` matches first (mark_list order), or NULL.
 * Only where the test includes <mark/mark.h> first: testutil.h itself
 * pulls in no libmark symbol (test_dlopen_libmark does not link it). */
static inline int testutil_take_marker(const struct mark_marker *m, void *arg)
{
	*(const struct mark_marker **)arg = m;
	return 1;
}
static inline const struct mark_marker *testutil_marker(const char *name)
{
	const struct mark_marker *m = NULL;
	mark_list(name, testutil_take_marker, &m);
	return m;
}
/* A fast probe that counts its calls in the int its private pointer names
 * (single-threaded tests: a plain increment). */
static inline void testutil_count_hit(const struct mark_marker *m, void *priv, const uint64_t *args)
{
	(void)m;
	(void)args;
	++*(int *)priv;
}
#endif

#endif
