/*
 * Arming restores exactly the protection each code page had.  A page that
 * holds a site is made read-write-execute first (as a JIT's code pages
 * are); after arming and after disarming it must still be rwx in
 * /proc/self/maps, and the armed site must run.  A site on an ordinary
 * r-x page stays r-x.
 *
 * Then an attack on the source of those protections: in a child with its
 * own mount namespace, a file claiming every page is rwx is bound over
 * /proc/PID/maps.  mark must not believe it (believing it, mark would
 * write to an r-x page without mprotect and crash the program); arming
 * works and the page is read-only afterwards.  Skips that part (77 only if
 * nothing else ran) without the privilege to make a mount namespace.
 */
#define _GNU_SOURCE
#include <mark/mark.h>
#include "testutil.h"

#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <sys/wait.h>
#include <unistd.h>

static int hits;
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


static const void *site_of(const char *name)
{
	site_addr = NULL;
	const struct mark_marker *found = testutil_marker(name);
	if (found)
		mark_marker_sites(found, first_site, NULL);
	return site_addr;
}

#if MARK__KIND != 3
/* Whether the kernel may write at addr for us: read() from a pipe into it
 * fails with EFAULT on a read-only page.  The byte written is the one
 * already there, so a writable page is left unchanged. */
static int kernel_can_write(const void *addr)
{
	int p[2];
	if (pipe(p) != 0)
		return -1;
	unsigned char b = *(const volatile unsigned char *)addr;
	int ok = write(p[1], &b, 1) == 1 && read(p[0], (void *)(uintptr_t)addr, 1) == 1;
	close(p[0]);
	close(p[1]);
	return ok;
}

static int fake_maps_child(const void *site)
{
	if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
		printf("SKIP fake maps: no mount namespace: %s\n", strerror(errno));
		return 77;
	}
	char path[] = "/tmp/mark-fake-maps-XXXXXX";
	int fd = mkstemp(path);
	static const char line[] = "00000000-7ffffffff000 rwxp 00000000 00:00 0\n";
	if (fd < 0 || write(fd, line, sizeof(line) - 1) != (ssize_t)(sizeof(line) - 1))
		return 1;
	close(fd);
	char target[64];
	snprintf(target, sizeof(target), "/proc/%d/maps", (int)getpid());
	int r = mount(path, target, NULL, MS_BIND, NULL);
	unlink(path);
	if (r != 0) {
		printf("SKIP fake maps: cannot bind over %s: %s\n", target, strerror(errno));
		return 77;
	}
	char p[5];
	perms_of(site, p);
	CHECK_STR(p, "rwxp");   /* the fake is what /proc/self/maps shows now */
	CHECK_EQ(mark_arm("prot_rx"), 2);
	CHECK(fire_rx());
	CHECK_EQ(mark_disarm("prot_rx"), 2);
	CHECK(!fire_rx());
	CHECK_EQ(kernel_can_write(site), 0);   /* left read-only, not "restored" to rwx */
	printf("with a fake /proc/self/maps: armed and disarmed, page still read-only\n");
	return testutil_failures ? 1 : 0;
}
#endif

/* mark reads protections only from a real procfs (src/arch/common):
 * qemu-user answers opens of /proc/self/maps with a file of its own. */
static int maps_is_procfs(void)
{
	struct statfs fs;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	int ok = fd >= 0 && fstatfs(fd, &fs) == 0 && fs.f_type == PROC_SUPER_MAGIC;
	if (fd >= 0)
		close(fd);
	return ok;
}

int main(void)
{
	if (!maps_is_procfs())
		TEST_SKIP("/proc/self/maps is not served by procfs here (qemu-user emulates it), so mark takes "
			  "code pages to be r-x and cannot restore an rwx page: nothing to check");
	CHECK_EQ(mark_probe_register_fast("prot_*", testutil_count_hit, &hits), 0);
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
	CHECK_EQ(kernel_can_write(rx_site), 0);
	CHECK_EQ(kernel_can_write(rwx_site), 1);

	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		int rc = fake_maps_child(rx_site);
		fflush(stdout);   /* _exit does not flush */
		_exit(rc);
	}
	int status;
	CHECK(waitpid(pid, &status, 0) == pid);
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "with a fake /proc/self/maps: killed by signal %d (%s)\n", WTERMSIG(status),
			strsignal(WTERMSIG(status)));
		testutil_failures++;
	} else if (WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 77) {
		fprintf(stderr, "with a fake /proc/self/maps: failed\n");
		testutil_failures++;
	}
#endif
	TEST_DONE();
}
