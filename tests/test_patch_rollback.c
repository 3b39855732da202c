/*
 * All-or-nothing patching when a core sync fails in the middle of a batch,
 * while threads run the sites.  A seccomp filter can only make every
 * membarrier() call fail; here the test program defines syscall() itself,
 * which libmark's calls resolve to (the executable comes first in symbol
 * lookup), and fails exactly the k-th MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE
 * call of a batch:
 *   - jump sites, k = 1 or 2: the batch fails, every site has its original
 *     bytes, the registry agrees; k = 3 (the last sync, after two
 *     succeeded): the batch stands, every site has its final bytes;
 *   - immediate sites, k = 1 (their only sync): the batch fails and is undone.
 * Both for arming and for disarming, 200 rounds, with two threads (all
 * signals blocked) executing the sites throughout.
 * Also: a site holding a foreign byte (a debugger's int3) refuses the whole
 * batch with -EBUSY before anything is written.
 */
#define _GNU_SOURCE
#include <mark/mark.h>
#include "testutil.h"

#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static atomic_int fail_at;     /* 0: never; k: fail the k-th SYNC_CORE call */
static atomic_int sync_calls;

static long raw_syscall(long n, long a1, long a2, long a3, long a4, long a5, long a6)
{
	register long r10 __asm__("r10") = a4;
	register long r8 __asm__("r8") = a5;
	register long r9 __asm__("r9") = a6;
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	if (ret < 0 && ret > -4096) {
		errno = (int)-ret;
		return -1;
	}
	return ret;
}

/* Interposes on libc's syscall() for the whole process. */
long syscall(long n, ...)
{
	va_list ap;
	long a[6];
	va_start(ap, n);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (n == __NR_membarrier && a[0] == MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE) {
		int call = atomic_fetch_add(&sync_calls, 1) + 1;
		if (call == atomic_load(&fail_at)) {
			errno = EIO;
			return -1;
		}
	}
	return raw_syscall(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}

static atomic_int stop;
static atomic_int workers_running;
static void fire(int i)
{
	MARK(rb_a, "%d", i);
	MARK(rb_a, "%d", i + 1);
	MARK(rb_b, "%d", i);
}

static void *worker(void *arg)
{
	(void)arg;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	atomic_fetch_add(&workers_running, 1);
	for (int i = 0; !atomic_load_explicit(&stop, memory_order_relaxed); i++)
		fire(i);
	return NULL;
}

/* A store to code, in asm: ThreadSanitizer has no shadow memory for text. */
static void poke(unsigned char *addr, unsigned char value)
{
	__asm__ volatile("movb %b1, (%0)" : : "r"(addr), "q"(value) : "memory");
}

/* A site nobody runs, for the foreign-byte case. */
__attribute__((noinline, used)) static void never_run(void)
{
	MARK(rb_bp, "%d", 3);
}

#define MAXS 4
struct bytes { unsigned char b[MAXS][5]; int n, armed; };
static int save(const struct mark_site_info *s, void *arg)
{
	struct bytes *b = arg;
	if (b->n < MAXS)
		memcpy(b->b[b->n++], s->address, 5);
	b->armed += s->armed;
	return 0;
}

static int first_address(const struct mark_site_info *s, void *arg)
{
	*(unsigned char **)arg = (unsigned char *)(uintptr_t)s->address;
	return 1;
}

static int first_site_of(const struct mark_marker *m, void *arg)
{
	mark_marker_sites(m, first_address, arg);
	return 1;
}

static int save_marker(const struct mark_marker *m, void *arg)
{
	mark_marker_sites(m, save, arg);
	return 0;
}

static struct bytes snapshot(const char *glob)
{
	struct bytes b = { 0 };
	mark_list(glob, save_marker, &b);
	return b;
}

static int same(const struct bytes *x, const struct bytes *y)
{
	return x->n == y->n && memcmp(x->b, y->b, sizeof(x->b)) == 0;
}

/* One batch with the k-th sync failing; returns mark_arm/mark_disarm's result. */
static int batch(int arm, int k)
{
	atomic_store(&sync_calls, 0);
	atomic_store(&fail_at, k);
	int r = arm ? mark_arm("rb_[ab]") : mark_disarm("rb_[ab]");
	atomic_store(&fail_at, 0);
	return r;
}

static void check_round(int arm, int k, int syncs_per_batch)
{
	struct bytes before = snapshot("rb_[ab]");
	int r = batch(arm, k);
	struct bytes after = snapshot("rb_[ab]");
	if (k < syncs_per_batch || syncs_per_batch == 1) {
		/* Failed and undone: original bytes, registry unchanged. */
		if (r >= 0 || !same(&before, &after) || after.armed != before.armed) {
			fprintf(stderr, "%s, sync %d failing: result %d, bytes %s, armed %d -> %d\n",
				arm ? "arm" : "disarm", k, r, same(&before, &after) ? "kept" : "CHANGED",
				before.armed, after.armed);
			testutil_failures++;
		}
		if (r < 0 && !strstr(mark_last_error(), "membarrier")) {
			fprintf(stderr, "error does not name membarrier: %s\n", mark_last_error());
			testutil_failures++;
		}
	} else {
		/* The last sync of a jump batch: the batch stands. */
		if (r != 3 || after.armed != (arm ? 3 : 0)) {
			fprintf(stderr, "%s, last sync failing: result %d, armed %d (%s)\n",
				arm ? "arm" : "disarm", r, after.armed, mark_last_error());
			testutil_failures++;
		}
	}
}

static int hits;
static void probe(const struct mark_marker *m, void *priv, const uint64_t *args)
{
	(void)m, (void)priv, (void)args;
	__atomic_add_fetch(&hits, 1, __ATOMIC_RELAXED);
}

int main(void)
{
	CHECK_EQ(mark_probe_register_fast("rb_*", probe, NULL), 0);
	/* Warm up: registers membarrier; learn whether mark uses SYNC_CORE here. */
	atomic_store(&sync_calls, 0);
	CHECK_EQ(mark_arm("rb_[ab]"), 3);
	CHECK_EQ(mark_disarm("rb_[ab]"), 3);
	int per_batch = atomic_load(&sync_calls) / 2;
	if (per_batch == 0)
		TEST_SKIP("membarrier SYNC_CORE is not used on this kernel");
	printf("%d core syncs per batch\n", per_batch);
#if MARK__KIND == 1
	CHECK_EQ(per_batch, 3);
#else
	CHECK_EQ(per_batch, 1);
#endif

	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	/* The rounds are short: start them only once both workers run sites. */
	while (atomic_load(&workers_running) < 2)
		sched_yield();
	for (int round = 0; round < 200; round++) {
		for (int k = 1; k <= per_batch; k++) {
			/* From disarmed: arm with sync k failing. */
			check_round(1, k, per_batch);
			if (k == per_batch && per_batch == 3)
				CHECK_EQ(batch(0, 0), 3);   /* it stood: back to disarmed */
			/* From armed: disarm with sync k failing. */
			CHECK_EQ(batch(1, 0), 3);
			check_round(0, k, per_batch);
			if (k < per_batch || per_batch == 1)
				CHECK_EQ(batch(0, 0), 3);
		}
	}
	/* After 200 undone batches the sites still work: armed, the workers
	 * reach the probe.  The armed windows of the rounds are short, and a
	 * loaded machine may not have scheduled a worker inside any of them,
	 * so arm once more and give the workers up to 10 s to get there. */
	CHECK_EQ(batch(1, 0), 3);
	for (int ms = 0; __atomic_load_n(&hits, __ATOMIC_RELAXED) == 0 && ms < 10000; ms++)
		usleep(1000);
	CHECK(__atomic_load_n(&hits, __ATOMIC_RELAXED) > 0);
	CHECK_EQ(batch(0, 0), 3);
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);

	/* A foreign byte (a debugger's int3) on one site refuses the whole batch. */
	struct bytes bp = snapshot("rb_bp");
	CHECK_EQ(bp.n, 1);
	const long page = sysconf(_SC_PAGESIZE);
	unsigned char *code = NULL;
	mark_list("rb_bp", first_site_of, &code);
	CHECK(code != NULL);
	void *pg = (void *)((uintptr_t)code & ~(uintptr_t)(page - 1));
	if (code && mprotect(pg, (size_t)page * 2, PROT_READ | PROT_WRITE | PROT_EXEC) == 0) {
		unsigned char saved = code[0];
		poke(code, 0xcc);
		struct bytes others = snapshot("rb_[ab]");
		int r = mark_arm("rb_*");
		CHECK_EQ(r, -EBUSY);
		printf("with a breakpoint on a site: %s\n", mark_last_error());
		CHECK(strstr(mark_last_error(), "breakpoint") != NULL);
		struct bytes now = snapshot("rb_[ab]");
		CHECK(same(&others, &now));
		CHECK_EQ(now.armed, 0);
		poke(code, saved);
		mprotect(pg, (size_t)page * 2, PROT_READ | PROT_EXEC);
		CHECK_EQ(mark_arm("rb_*"), 4);
		CHECK_EQ(mark_disarm("rb_*"), 4);
	}
	(void)never_run;
	TEST_DONE();
}
