/*
 * A system that refuses code patching: a seccomp filter makes
 * mprotect(PROT_WRITE|PROT_EXEC) fail with EACCES, as an SELinux
 * deny_execmem/execmod policy does.  mark_arm must fail with an error that
 * names the cause, leave every site untouched, and the generic kind must
 * keep working.
 *
 * Where no seccomp filter can be installed (qemu-user, which runs guest
 * filters on none of its own syscalls), the test program defines
 * mprotect() itself, which libmark's calls resolve to (the executable comes
 * first in symbol lookup, as in test_patch_rollback.c), and refuses the same
 * calls with the same errno.
 */
#define _GNU_SOURCE
#include <mark/mark.h>
#include "testutil.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static int hits;
static int fire(void)
{
	MARK(wx_a, "%d", 1);
	MARK(wx_a, "%d", 2);
	return MARK_ENABLED(wx_a);
}

/* Set when the seccomp filter could not be installed: mprotect() below
 * then refuses what the filter would have. */
static int refuse_in_process;

int mprotect(void *addr, size_t len, int prot)
{
	if (refuse_in_process && (prot & PROT_WRITE)) {
		errno = EACCES;
		return -1;
	}
	long r = syscall(SYS_mprotect, addr, len, prot);
	return r == 0 ? 0 : -1;   /* syscall() has set errno */
}

static int deny_writable_exec(void)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mprotect, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, PROT_WRITE, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EACCES & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(filter) / sizeof(filter[0]), filter };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

/* The bytes of every code site (at most 16; 5, the longest site). */
struct bytes { unsigned char b[16][5]; int n; };
static int save_bytes(const struct mark_site_info *s, void *arg)
{
	struct bytes *b = arg;
	if (s->kind != MARK_KIND_GENERIC && b->n < 16)
		memcpy(b->b[b->n++], s->address, 5);
	return 0;
}


int main(void)
{
	if (deny_writable_exec() != 0) {
		printf("no seccomp filter (%s): mprotect(PROT_WRITE) refused by the test's own mprotect()\n",
		       strerror(errno));
		refuse_in_process = 1;
	}
	CHECK_EQ(mark_probe_register_fast("wx_a", testutil_count_hit, &hits), 0);
	const struct mark_marker *wx = testutil_marker("wx_a");
	CHECK(wx != NULL);
	struct bytes before = { 0 };
	mark_marker_sites(wx, save_bytes, &before);

	int r = mark_arm("wx_*");
#if MARK__KIND == 3
	CHECK_EQ(r, 3);   /* generic sites need no patching */
	CHECK(fire());
	CHECK_EQ(hits, 2);
#else
	CHECK_EQ(r, -EACCES);
	const char *err = mark_last_error();
	printf("mark_arm error: %s\n", err);
	CHECK(strstr(err, "W^X") != NULL);
	CHECK(strstr(err, "Permission denied") != NULL);
	CHECK(strstr(err, "MARK_SITE=generic") != NULL);
	CHECK(!fire());
	CHECK_EQ(hits, 0);
	struct bytes after = { 0 };
	mark_marker_sites(wx, save_bytes, &after);
	/* 3 in the source; the compiler may copy fire() (aarch64 gcc makes 5). */
	CHECK(before.n >= 3);
	CHECK_EQ(after.n, before.n);
	CHECK(memcmp(before.b, after.b, sizeof(before.b)) == 0);   /* nothing half-patched */
	CHECK(mark_disarm("wx_*") == 0);
#endif
	TEST_DONE();
}
