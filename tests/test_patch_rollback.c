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
	long ret;
#if defined(__aarch64__)
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a1;
	register long x1 __asm__("x1") = a2;
	register long x2 __asm__("x2") = a3;
	register long x3 __asm__("x3") = a4;
	register long x4 __asm__("x4") = a5;
	register long x5 __asm__("x5") = a6;
	__asm__ volatile("svc #0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			 : "memory");
	ret = x0;
#else
	register long r10 __asm__("r10") = a4;
	register long r8 __asm__("r8") = a5;
	register long r9 __asm__("r9") = a6;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
#endif
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
#if defined(__aarch64__)
	__asm__ volatile("strb %w1, [%0]" : : "r"(addr), "r"(value) : "memory");
	__builtin___clear_cache((char *)addr, (char *)addr + 1);
#else
	__asm__ volatile("movb %b1, (%0)" : : "r"(addr), "q"(value) : "memory");
#endif
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

/* Sites of rb_a and rb_b: 3 as written (fire()); a compiler may emit a
 * site twice (aarch64's gcc duplicates a block of fire()), at most MAXS. */
static int nsites;

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
		if (r != nsites || after.armed != (arm ? nsites : 0)) {
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
	nsites = snapshot("rb_[ab]").n;
	CHECK(nsites >= 3 && nsites <= MAXS);
	/* Warm up: registers membarrier; learn whether mark uses SYNC_CORE here. */
	atomic_store(&sync_calls, 0);
	CHECK_EQ(mark_arm("rb_[ab]"), nsites);
	CHECK_EQ(mark_disarm("rb_[ab]"), nsites);
	int per_batch = atomic_load(&sync_calls) / 2;
	if (per_batch == 0)
		TEST_SKIP("membarrier SYNC_CORE is not used on this kernel");
	printf("%d core syncs per batch\n", per_batch);
#if MARK__KIND == 1 && defined(__x86_64__)
	CHECK_EQ(per_batch, 3);   /* guard, tail, head */
#else   /* one store per site: immediate sites, and every site on aarch64 */
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
				CHECK_EQ(batch(0, 0), nsites);   /* it stood: back to disarmed */
			/* From armed: disarm with sync k failing. */
			CHECK_EQ(batch(1, 0), nsites);
			check_round(0, k, per_batch);
			if (k < per_batch || per_batch == 1)
				CHECK_EQ(batch(0, 0), nsites);
		}
	}
	/* After 200 undone batches the sites still work: armed, the workers
	 * reach the probe.  The armed windows of the rounds are short, and a
	 * loaded machine may not have scheduled a worker inside any of them,
	 * so arm once more and give the workers up to 10 s to get there. */
	CHECK_EQ(batch(1, 0), nsites);
	for (int ms = 0; __atomic_load_n(&hits, __ATOMIC_RELAXED) == 0 && ms < 10000; ms++)
		usleep(1000);
	CHECK(__atomic_load_n(&hits, __ATOMIC_RELAXED) > 0);
	CHECK_EQ(batch(0, 0), nsites);
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
		CHECK_EQ(mark_arm("rb_*"), nsites + 1);
		CHECK_EQ(mark_disarm("rb_*"), nsites + 1);
	}
	(void)never_run;
	TEST_DONE();
}
