/*
 * tests/cli/trace_walk.c - how the readers find traces and open them
 * (cli/trace_native.c: trace_walk, trace_dir_open).
 *
 *   cli_trace_walk WORKDIR
 *
 * 1. The walk: under a trace directory holding mark-like traces and the
 *    things that must not count (a link to a trace, a dot-directory, a
 *    snapshot-N, a `metadata` that is a link, a trace 9 levels down),
 *    exactly the expected traces are found.
 * 2. The open: a trace directory the walk found is then swapped for a
 *    symbolic link to another user's directory (the race a user wins
 *    against root's `mark view` of the user's trace).  open() of the
 *    path, which the readers did before, follows the link; trace_dir_open
 *    refuses it (ELOOP or ENOTDIR), and still opens an untouched one.
 */
#define _GNU_SOURCE
#include "trace_native.h"
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[4096];

static void make_dir(const char *rel)
{
	char p[8192];
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	if (mkdir(p, 0700) != 0 && errno != EEXIST) {
		perror(p);
		exit(1);
	}
}

static void make_file(const char *rel)
{
	char p[8192];
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, "x", 1) != 1) {
		perror(p);
		exit(1);
	}
	close(fd);
}

static void make_link(const char *target, const char *rel)
{
	char p[8192];
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	if (symlink(target, p) != 0) {
		perror(p);
		exit(1);
	}
}

struct found {
	char list[16][256];
	int n;
};

static bool on_found(void *ctx, const char *rel)
{
	struct found *f = ctx;
	if (f->n < 16)
		snprintf(f->list[f->n], sizeof(f->list[0]), "%s", rel);
	f->n++;
	return false;
}

static int has(const struct found *f, const char *rel)
{
	int k = 0;
	for (int i = 0; i < f->n && i < 16; i++)
		k += strcmp(f->list[i], rel) == 0;
	return k;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: cli_trace_walk WORKDIR\n");
		return 2;
	}
	snprintf(root, sizeof(root), "%s/walk-XXXXXX", argv[1]);
	mkdir(argv[1], 0700);
	if (!mkdtemp(root)) {
		perror(root);
		return 1;
	}
	/* 1. What counts as a trace. */
	make_dir("t");
	make_file("t/metadata");
	make_dir("t/pid-1");
	make_file("t/pid-1/metadata");
	make_dir("t/pid-1/pid-2");
	make_file("t/pid-1/pid-2/metadata");
	make_link("pid-1", "t/link");                 /* a link to a trace: not followed */
	make_dir("t/.hidden");
	make_file("t/.hidden/metadata");
	make_dir("t/snapshot-1");
	make_file("t/snapshot-1/metadata");
	make_dir("t/x");
	make_link("../metadata", "t/x/metadata");     /* a `metadata` that is a link: not a trace */
	make_dir("t/x/y");
	make_file("t/x/y/metadata");
	char deep[256] = "t";
	for (int level = 1; level <= 9; level++) {
		size_t n = strlen(deep);
		snprintf(deep + n, sizeof(deep) - n, "/d%d", level);
		make_dir(deep);
		if (level >= 8) {
			char m[300];
			snprintf(m, sizeof(m), "%s/metadata", deep);
			make_file(m);   /* d8 is 8 levels below t: found; d9 is 9: not */
		}
	}
	char t[4200];
	snprintf(t, sizeof(t), "%s/t", root);
	int fd = open(t, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(fd >= 0);
	struct found f = { .n = 0 };
	char rel[4096];
	CHECK(!trace_walk(fd, true, 8, rel, sizeof(rel), 0, on_found, &f));
	close(fd);
	printf("walk found %d:", f.n);
	for (int i = 0; i < f.n && i < 16; i++)
		printf(" '%s'", f.list[i]);
	printf("\n");
	CHECK(f.n == 5);
	CHECK(has(&f, "") == 1);
	CHECK(has(&f, "pid-1") == 1);
	CHECK(has(&f, "pid-1/pid-2") == 1);
	CHECK(has(&f, "x/y") == 1);
	CHECK(has(&f, "d1/d2/d3/d4/d5/d6/d7/d8") == 1);

	/* 2. The directory found, swapped for a link before it is opened. */
	make_dir("other");
	make_dir("other/pid-2");
	make_file("other/pid-2/secret");
	char path[8192], moved[8192];
	snprintf(path, sizeof(path), "%s/pid-1/pid-2", t);
	int ok = trace_dir_open(t, path);
	CHECK(ok >= 0);
	if (ok >= 0)
		close(ok);
	snprintf(path, sizeof(path), "%s/pid-1", t);
	snprintf(moved, sizeof(moved), "%s/pid-1.moved", t);
	CHECK(rename(path, moved) == 0);
	make_link("../other", "t/pid-1");
	snprintf(path, sizeof(path), "%s/pid-1/pid-2", t);
	int plain = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	/* What the readers did before: the link is followed into other/. */
	CHECK(plain >= 0 && fstatat(plain, "secret", &st, 0) == 0);
	if (plain >= 0)
		close(plain);
	errno = 0;
	int safe = trace_dir_open(t, path);
	printf("trace_dir_open through the swapped link: %d (%s)\n", safe, safe < 0 ? strerror(errno) : "opened");
	CHECK(safe < 0 && (errno == ELOOP || errno == ENOTDIR));
	if (safe >= 0)
		close(safe);
	/* Untouched traces still open, also with a trailing slash on DIR. */
	snprintf(path, sizeof(path), "%s/x/y", t);
	safe = trace_dir_open(t, path);
	CHECK(safe >= 0 && fstatat(safe, "metadata", &st, AT_SYMLINK_NOFOLLOW) == 0);
	if (safe >= 0)
		close(safe);
	char tslash[4300];
	snprintf(tslash, sizeof(tslash), "%s/", t);
	snprintf(path, sizeof(path), "%s/x/y", tslash);
	safe = trace_dir_open(tslash, path);
	CHECK(safe >= 0);
	if (safe >= 0)
		close(safe);
	CHECK((safe = trace_dir_open(t, t)) >= 0);
	if (safe >= 0)
		close(safe);
	/* Not below DIR, or climbing out of it: refused. */
	errno = 0;
	CHECK(trace_dir_open(t, "/etc") < 0 && errno == EINVAL);
	snprintf(path, sizeof(path), "%s/../other", t);
	errno = 0;
	CHECK(trace_dir_open(t, path) < 0 && errno == EINVAL);
	snprintf(path, sizeof(path), "%sx", t);   /* DIRx is not below DIR */
	errno = 0;
	CHECK(trace_dir_open(t, path) < 0 && errno == EINVAL);

	char cmd[8300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", root);
	TEST_DONE();
}
