/*
 * A failed arm leaves no half-written instruction.  A seccomp filter makes
 * membarrier() fail (as on kernels without SYNC_CORE, or in sandboxes), so
 * no core sync is possible: mark_arm must fail with an error that names
 * the cause, every site's bytes must equal what they were, the registry
 * must report the sites disarmed, and calling the sites must work.
 *
 * Two children: one where membarrier fails from the start (ENOSYS, never
 * registered), one where it worked for an earlier arm and then fails
 * (EPERM, filter installed after registration).
 */
#define _GNU_SOURCE
#include <mark/mark.h>
#include "testutil.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int hits;
/* Not inlined: each MARK() below is then exactly one site (clang inlined
 * fire() into its callers and the counts below became 5 and 9). */
__attribute__((noinline)) static int fire(void)
{
	MARK(mb_a, "%d", 1);
	MARK(mb_a, "%d", 2);
	return MARK_ENABLED(mb_a);
}

static int deny_membarrier(int err)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_membarrier, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((unsigned)err & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(filter) / sizeof(filter[0]), filter };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

struct bytes { unsigned char b[5][5]; int n, armed; };
static int save_bytes(const struct mark_site_info *s, void *arg)
{
	struct bytes *b = arg;
	if (s->kind != MARK_KIND_GENERIC && b->n < 5)
		memcpy(b->b[b->n++], s->address, 5);
	b->armed += s->armed;
	return 0;
}


static int child(int err, int register_first)
{
	CHECK_EQ(mark_probe_register_fast("mb_a", testutil_count_hit, &hits), 0);
	const struct mark_marker *mb = testutil_marker("mb_a");
	CHECK(mb != NULL);
	if (register_first) {
		/* membarrier works and is registered, then becomes unavailable. */
		CHECK_EQ(mark_arm("mb_*"), 3);
		CHECK(fire());
		CHECK_EQ(mark_disarm("mb_*"), 3);
		hits = 0;
	}
	struct bytes before = { 0 };
	mark_marker_sites(mb, save_bytes, &before);
	if (deny_membarrier(err) != 0) {
		printf("SKIP: cannot install a seccomp filter: %s\n", strerror(errno));
		return 77;
	}

	int r = mark_arm("mb_*");
#if MARK__KIND == 3
	CHECK_EQ(r, 3);   /* generic sites need no code patching, hence no core sync */
	CHECK(fire());
	CHECK_EQ(hits, 2);
#else
	CHECK(r < 0);
	const char *msg = mark_last_error();
	printf("mark_arm: %d: %s\n", r, msg);
	CHECK(strstr(msg, "membarrier") != NULL);
	CHECK(strstr(msg, "MARK_SITE=generic") != NULL);
	struct bytes after = { 0 };
	mark_marker_sites(mb, save_bytes, &after);
	CHECK_EQ(before.n, 3);
	for (int i = 0; i < before.n; i++)
		if (memcmp(before.b[i], after.b[i], 5) != 0) {
			const unsigned char *a = after.b[i];
			fprintf(stderr, "site %d: bytes now %02x %02x %02x %02x %02x, were %02x %02x %02x %02x %02x\n",
				i, a[0], a[1], a[2], a[3], a[4], before.b[i][0], before.b[i][1],
				before.b[i][2], before.b[i][3], before.b[i][4]);
			testutil_failures++;
		}
	CHECK_EQ(after.armed, 0);   /* the registry agrees with the code */
	fflush(stderr);
	CHECK(!fire());             /* and the code runs (a corrupt site would crash here) */
	CHECK_EQ(hits, 0);
	CHECK_EQ(mark_disarm("mb_*"), 0);
	/* A second attempt fails the same way and changes nothing. */
	CHECK(mark_arm("mb_a") < 0);
	CHECK(!fire());
#endif
	TEST_DONE();
}

int main(void)
{
	static const struct { int err, register_first; const char *what; } cases[] = {
		{ ENOSYS, 0, "membarrier unavailable from the start (ENOSYS)" },
		{ EPERM, 1, "membarrier denied after an earlier arm registered it (EPERM)" },
	};
	int skipped = 0;
	for (unsigned c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0)
			_exit(child(cases[c].err, cases[c].register_first));
		int status;
		CHECK(waitpid(pid, &status, 0) == pid);
		if (WIFSIGNALED(status)) {
			fprintf(stderr, "%s: killed by signal %d (%s)\n", cases[c].what, WTERMSIG(status),
				strsignal(WTERMSIG(status)));
			testutil_failures++;
		} else if (WEXITSTATUS(status) == 77) {
			skipped++;
		} else if (WEXITSTATUS(status) != 0) {
			fprintf(stderr, "%s: failed\n", cases[c].what);
			testutil_failures++;
		}
	}
	if (skipped && !testutil_failures)
		TEST_SKIP("seccomp is unavailable here");
	TEST_DONE();
}
