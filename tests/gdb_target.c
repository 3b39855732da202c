/* Run under gdb by test_gdb.sh: threads execute sites while they are patched. */
#include <mark/mark.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

static atomic_int stop;
static atomic_long hits;

static void probe(const struct mark_marker *m, void *priv, const uint64_t *args)
{
	(void)m;
	(void)priv;
	(void)args;
	atomic_fetch_add_explicit(&hits, 1, memory_order_relaxed);
}

static void *hammer(void *arg)
{
	(void)arg;
	for (int i = 0; !atomic_load_explicit(&stop, memory_order_relaxed); i++)
		MARK(gdb_site, "%d", i);
	return NULL;
}

__attribute__((noinline)) void gdb_checkpoint(long n)
{
	__asm__ volatile("" : : "r"(n) : "memory");
}

int main(void)
{
	mark_probe_register_fast("gdb_site", probe, NULL);
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, hammer, NULL);
	for (int i = 0; i < 3000; i++) {
		if (mark_arm("gdb_site") < 0 || mark_disarm("gdb_site") < 0) {
			fprintf(stderr, "arm failed: %s\n", mark_last_error());
			return 1;
		}
	}
	mark_arm("gdb_site");
	gdb_checkpoint(atomic_load(&hits));
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("gdb_target done, %ld hits\n", atomic_load(&hits));
	return atomic_load(&hits) > 0 ? 0 : 1;
}
