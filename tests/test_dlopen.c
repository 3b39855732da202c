/*
 * dlopen, arm, hit, dlclose a library with markers 1,000 times while other
 * threads run their own markers and arm/disarm them.  The arming rule and
 * the probe are given before the library is first loaded, so both must be
 * applied to each new load.  ASan's leak checker runs at exit.
 */
#include <mark/mark.h>
#include "testutil.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>

static atomic_long dl_hits, other_hits;
static atomic_int stop;

static void dl_probe(const struct mark_marker *m, void *priv, const uint64_t *args)
{
	(void)priv;
	const char *who = (const char *)(uintptr_t)args[1];
	if ((int)args[0] != 7 || strcmp(who, "loader") != 0 || strcmp(mark_marker_name(m), "dl_rx") != 0)
		fprintf(stderr, "dl_rx: wrong arguments\n"), abort();
	atomic_fetch_add(&dl_hits, 1);
}

static void other_probe(const struct mark_marker *m, void *priv, const uint64_t *args)
{
	(void)m;
	(void)priv;
	(void)args;
	atomic_fetch_add_explicit(&other_hits, 1, memory_order_relaxed);
}

static void *runner(void *arg)
{
	(void)arg;
	for (int i = 0; !atomic_load_explicit(&stop, memory_order_relaxed); i++)
		MARK(dlt_other, "%d", i);
	return NULL;
}

static void *armer(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		mark_arm("dlt_*");
		mark_disarm("dlt_*");
	}
	return NULL;
}

static int count_dl(const struct mark_marker *m, void *arg)
{
	(void)m;
	(*(int *)arg)++;
	return 0;
}

int main(void)
{
	CHECK_EQ(mark_probe_register_fast("dl_rx", dl_probe, NULL), 0);   /* not loaded yet */
	CHECK_EQ(mark_probe_register_fast("dlt_other", other_probe, NULL), 0);
	CHECK_EQ(mark_arm("dl_*"), 0);                                     /* nothing to arm yet */

	pthread_t threads[2];
	pthread_create(&threads[0], NULL, runner, NULL);
	pthread_create(&threads[1], NULL, armer, NULL);

	const int rounds = 1000;
	for (int i = 0; i < rounds; i++) {
		void *h = dlopen(DL_MARKERS_PATH, RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			fprintf(stderr, "dlopen: %s\n", dlerror());
			return 1;
		}
		int (*hit)(int, const char *) = (int (*)(int, const char *))dlsym(h, "dl_rx_hit");
		CHECK(hit != NULL);
		if (hit)
			CHECK_EQ(hit(7, "loader"), 1);   /* armed by the rule given before loading */
		CHECK_EQ(dlclose(h), 0);
	}
	int listed = 0;
	mark_list("dl_rx", count_dl, &listed);
	CHECK_EQ(listed, 0);   /* unloaded: no site left */

	atomic_store(&stop, 1);
	pthread_join(threads[0], NULL);
	pthread_join(threads[1], NULL);
	CHECK_EQ(atomic_load(&dl_hits), rounds);
	CHECK_EQ(mark_probe_unregister_fast("dl_rx", dl_probe, NULL), 0);
	CHECK_EQ(mark_probe_unregister_fast("dlt_other", other_probe, NULL), 0);
	printf("dl hits %ld, other hits %ld\n", atomic_load(&dl_hits), atomic_load(&other_hits));
	TEST_DONE();
}
