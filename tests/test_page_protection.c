/*
 * Arming restores exactly the protection each code page had.  A page that
 * holds a site is made read-write-execute first (as a JIT's code pages
 * are); after arming and after disarming it must still be rwx in
 * /proc/self/maps, and the armed site must run.  A site on an ordinary
 * r-x page stays r-x.
 */
#define _GNU_SOURCE
#include <mark/mark.h>
#include "testutil.h"

#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

static int hits;
static void probe(const struct mark_marker *m, void *priv, const uint64_t *args)
{
	(void)m, (void)priv, (void)args;
	hits++;
}

/* Two markers in functions aligned to different pages. */
__attribute__((noinline, aligned(4096))) static int fire_rwx(void)
{
	MARK(prot_rwx, "%d", 1);
	return MARK_ENABLED(prot_rwx);
}

__attribute__((noinline, aligned(4096))) static int fire_rx(void)
{
	MARK(prot_rx, "%d", 2);
	return MARK_ENABLED(prot_rx);
}

/* The permissions ("rwxp") of the mapping holding addr, from /proc/self/maps. */
static void perms_of(const void *addr, char out[5])
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	strcpy(out, "????");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long start, end;
		char perms[5];
		if (sscanf(line, "%lx-%lx %4s", &start, &end, perms) == 3 &&
		    (uintptr_t)addr >= start && (uintptr_t)addr < end) {
			memcpy(out, perms, 5);
			break;
		}
	}
	fclose(f);
}

static const void *site_addr;
static int first_site(const struct mark_site_info *s, void *arg)
{
	(void)arg;
	if (!s->is_enabled_test) {
		site_addr = s->address;
		return 1;
	}
	return 0;
}

static const struct mark_marker *found;
static int find_marker(const struct mark_marker *m, void *arg)
{
	(void)arg;
	found = m;
	return 1;
}

static const void *site_of(const char *name)
{
	found = NULL;
	site_addr = NULL;
	mark_list(name, find_marker, NULL);
	if (found)
		mark_marker_sites(found, first_site, NULL);
	return site_addr;
}

int main(void)
{
	CHECK_EQ(mark_probe_register_fast("prot_*", probe, NULL), 0);
	const void *rwx_site = site_of("prot_rwx");
	const void *rx_site = site_of("prot_rx");
	CHECK(rwx_site && rx_site);
	if (!rwx_site || !rx_site)
		TEST_DONE();
#if MARK__KIND != 3
	/* Code sites: both in the executable's text. */
	const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	CHECK((uintptr_t)rwx_site / page != (uintptr_t)rx_site / page);
	void *rwx_page = (void *)((uintptr_t)rwx_site & ~(page - 1));
	if (mprotect(rwx_page, page, PROT_READ | PROT_WRITE | PROT_EXEC) != 0)
		TEST_SKIP("cannot make a code page rwx (W^X policy): %s", strerror(errno));
#endif
	char before_rwx[5], before_rx[5], p[5];
	perms_of(rwx_site, before_rwx);
	perms_of(rx_site, before_rx);
	printf("before: %s %s\n", before_rwx, before_rx);

	CHECK_EQ(mark_arm("prot_*"), 4);
	CHECK(fire_rwx());
	CHECK(fire_rx());
	CHECK_EQ(hits, 2);
	perms_of(rwx_site, p);
	printf("armed: %s", p);
	CHECK_STR(p, before_rwx);
	perms_of(rx_site, p);
	printf(" %s\n", p);
	CHECK_STR(p, before_rx);

	CHECK_EQ(mark_disarm("prot_*"), 4);
	CHECK(!fire_rwx());
	CHECK(!fire_rx());
	CHECK_EQ(hits, 2);
	perms_of(rwx_site, p);
	printf("disarmed: %s", p);
	CHECK_STR(p, before_rwx);
	perms_of(rx_site, p);
	printf(" %s\n", p);
	CHECK_STR(p, before_rx);
#if MARK__KIND != 3
	CHECK_STR(before_rwx, "rwxp");
	CHECK_STR(before_rx, "r-xp");
#endif
	TEST_DONE();
}
