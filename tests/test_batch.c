/*
 * Batching and placement of jump sites:
 *  - arming 1,000 sites costs 3 core syncs on x86-64 (1 on aarch64, where
 *    a site changes with one store), not one per site;
 *  - no site straddles a 64-byte cache line (5 bytes on x86-64, aligned by
 *    mark.h; one aligned 4-byte instruction on aarch64).
 * aarch64's gcc may emit a marker's site more than once (a duplicated
 * block): the batch then holds every copy, still with one sync.
 * Linked statically to read the patcher's sync counter.
 */
#include <mark/mark.h>
#include "testutil.h"

#include <stdint.h>

unsigned long mark_arch_sync_count(void);

#if defined(__aarch64__)
#define SITE_LEN 4
#define SYNCS_PER_BATCH 1
#else
#define SITE_LEN 5
#define SYNCS_PER_BATCH 3
#endif

#define S(n) MARK(batch_##n, "%d", x);
#define S10(n) S(n##0) S(n##1) S(n##2) S(n##3) S(n##4) S(n##5) S(n##6) S(n##7) S(n##8) S(n##9)
#define S100(n) S10(n##0) S10(n##1) S10(n##2) S10(n##3) S10(n##4) S10(n##5) S10(n##6) S10(n##7) S10(n##8) S10(n##9)

static int hits;

__attribute__((noinline)) static void all_sites(int x)
{
	S100(1) S100(2) S100(3) S100(4) S100(5) S100(6) S100(7) S100(8) S100(9) S100(10)
}

struct placement { int sites, straddling; };
static int check_site(const struct mark_site_info *s, void *arg)
{
	struct placement *p = arg;
	uintptr_t a = (uintptr_t)s->address;
	p->sites++;
	if (a / 64 != (a + SITE_LEN - 1) / 64)
		p->straddling++;
	return 0;
}
static int check_marker(const struct mark_marker *m, void *arg)
{
	return mark_marker_sites(m, check_site, arg);
}

int main(void)
{
	struct placement p = { 0, 0 };
	mark_list("batch_*", check_marker, &p);
#if defined(__x86_64__)
	CHECK_EQ(p.sites, 1000);
#else
	CHECK(p.sites >= 1000);
#endif
	CHECK_EQ(mark_probe_register_fast("batch_*", testutil_count_hit, &hits), 0);
	unsigned long syncs = mark_arch_sync_count();
	CHECK_EQ(mark_arm("batch_*"), p.sites);
	CHECK_EQ(mark_arch_sync_count() - syncs, SYNCS_PER_BATCH);
	all_sites(1);
	CHECK_EQ(hits, 1000);
	syncs = mark_arch_sync_count();
	CHECK_EQ(mark_disarm("batch_*"), p.sites);
	CHECK_EQ(mark_arch_sync_count() - syncs, SYNCS_PER_BATCH);
	all_sites(1);
	CHECK_EQ(hits, 1000);

	CHECK_EQ(p.straddling, 0);
	printf("%d sites, %d straddle a cache line\n", p.sites, p.straddling);
	TEST_DONE();
}
