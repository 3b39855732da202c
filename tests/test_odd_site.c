/*
 * A jump site at an odd address, as an object built with a mark.h older
 * than the even-address rule has them, is refused when armed: its 2-byte
 * guard store could straddle an instruction-fetch block and be executed
 * half old, half new (docs/markers.md, "How code is patched safely").  The
 * refusal names the cause and the remedy, and the site's bytes stay the
 * 5-byte NOP.  x86-64 only: aarch64 instructions are 4-byte aligned.
 *
 * The site is made odd by redefining the header's private alignment of
 * jump sites (MARK__JUMP_ALIGN) to one padding byte after a 16-byte one.
 *
 * The refusal comes before any page is made writable: the program defines
 * mprotect() itself, which libmark's calls resolve to (the executable
 * comes first in symbol lookup, as in test_wx_refusal.c), and counts the
 * calls that add PROT_WRITE.  A refused batch must make none (a W^X audit
 * log would otherwise record a code page made writable for nothing).
 */
#include <mark/mark.h>

#include <stdio.h>

#if defined(__x86_64__) && !MARK__OFF && MARK__KIND == 1
#include "testutil.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static int writable_calls;

int mprotect(void *addr, size_t len, int prot)
{
	if (prot & PROT_WRITE)
		writable_calls++;
	long r = syscall(SYS_mprotect, addr, len, prot);
	return r == 0 ? 0 : -1;   /* syscall() has set errno */
}

/* One byte after a 16-byte boundary: odd, as an older header could place it. */
#undef MARK__JUMP_ALIGN
#define MARK__JUMP_ALIGN ".p2align 4\n.byte 0x90\n"

static int hits;

static __attribute__((noinline)) void odd_site(int i)
{
	MARK(odd_site_marker, "%d", i);
}

static int find_site(const struct mark_site_info *s, void *arg)
{
	*(const unsigned char **)arg = s->address;
	return 1;
}

static int find_marker(const struct mark_marker *m, void *arg)
{
	return mark_marker_sites(m, find_site, arg);
}

int main(void)
{
	const unsigned char *site = NULL;
	mark_list("odd_site_marker", find_marker, &site);
	CHECK(site != NULL);
	if (!site)
		return 1;
	printf("site at %p\n", (const void *)site);
	CHECK(((uintptr_t)site & 1) == 1);
	CHECK_EQ(mark_probe_register_fast("odd_site_marker", testutil_count_hit, &hits), 0);
	const int r = mark_arm("odd_site_marker");
	printf("mark_arm: %d: %s\n", r, mark_last_error());
	CHECK_EQ(r, -EINVAL);
	CHECK(strstr(mark_last_error(), "odd address") != NULL);
	CHECK(strstr(mark_last_error(), "Rebuild") != NULL);
	printf("mprotect calls adding PROT_WRITE: %d\n", writable_calls);
	CHECK_EQ(writable_calls, 0);
	static const unsigned char nop5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
	CHECK(memcmp(site, nop5, 5) == 0);
	odd_site(1);
	CHECK_EQ(hits, 0);
	TEST_DONE();
}
#else
int main(void)
{
	printf("SKIP: x86-64 jump sites only (aarch64 instructions are always 4-byte aligned)\n");
	return 77;
}
#endif
