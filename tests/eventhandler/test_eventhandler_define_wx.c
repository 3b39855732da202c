/*
 * EVENTHANDLER_DEFINE whose registration fails says so (found by a review).
 *
 * Its constructor stored the NULL tag of a failed EVENTHANDLER_REGISTER
 * and said nothing: the handler was never called, and nobody could be told
 * (a constructor returns nothing).  A W^X policy is the usual cause on a
 * production server (systemd's MemoryDenyWriteExecute=, SELinux execmem):
 * the first handler of a list must arm its jump invoke sites, which
 * patches code.  This test puts itself under the kernel's own such policy,
 * prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN), inherited across execve,
 * and runs itself again: the DEFINE constructor then runs under it, and
 * must print one line naming the list, the handler and the reason.
 */
#define _GNU_SOURCE
#include <mark/eventhandler.h>
#include "testutil.h"
#include "testutil_wait.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

#ifndef PR_SET_MDWE
#define PR_SET_MDWE 65
#endif
#ifndef PR_GET_MDWE
#define PR_GET_MDWE 66
#endif
#ifndef PR_MDWE_REFUSE_EXEC_GAIN
#define PR_MDWE_REFUSE_EXEC_GAIN 1
#endif

typedef void (*ev_fn)(void *arg, int level);
EVENTHANDLER_DECLARE(ehw_low_memory, ev_fn);

static int calls;
static void shrink_cache(void *arg, int level)
{
	(void)arg;
	calls += level;
}
EVENTHANDLER_DEFINE(ehw_low_memory, shrink_cache, NULL, EVENTHANDLER_PRI_ANY);

/* Under the policy: the constructor's registration failed (or, where the
 * sites need no patching, succeeded and the handler runs). */
static int child(void)
{
	if (prctl(PR_GET_MDWE, 0, 0, 0, 0) != PR_MDWE_REFUSE_EXEC_GAIN)
		return 3;
	EVENTHANDLER_INVOKE(ehw_low_memory, 1);
	printf("calls=%d count=%u\n", calls, mark_eventhandler_count("ehw_low_memory"));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "child") == 0)
		return child();
#if MARK__KIND == 3 /* generic */ || defined(MARK_DISABLE)
	TEST_SKIP("generic invoke sites are never patched: a W^X policy cannot make a registration fail");
#endif
	int out[2], err[2];
	if (pipe(out) != 0 || pipe(err) != 0)
		return 2;
	fflush(stdout);
	pid_t p = fork();
	if (p == 0) {
		if (prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN, 0, 0, 0) != 0)
			_exit(77);
		dup2(out[1], 1);
		dup2(err[1], 2);
		execl("/proc/self/exe", argv[0], "child", (char *)NULL);
		_exit(4);
	}
	close(out[1]);
	close(err[1]);
	static char so[4096], se[8192];
	ssize_t no = 0, ne = 0, r;
	while ((r = read(out[0], so + no, sizeof(so) - 1 - no)) > 0)
		no += r;
	while ((r = read(err[0], se + ne, sizeof(se) - 1 - ne)) > 0)
		ne += r;
	int st = 0;
	double secs;
	if (!testutil_wait_bounded(p, 10, &st, &secs)) {
		fprintf(stderr, "the child under PR_SET_MDWE did not exit within 10 s\n");
		return 1;
	}
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
		TEST_SKIP("prctl(PR_SET_MDWE) is not available here (Linux >= 6.3 needed)");
	printf("child: status 0x%x, stdout '%s', stderr '%s'\n", st, so, se);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (strstr(so, "calls=1 count=1"))
		TEST_SKIP("the kernel let this process patch its code under PR_SET_MDWE: nothing failed");
	CHECK(strstr(so, "calls=0 count=0") != NULL);
	/* One line naming the list, the handler, that it will not be called, and why. */
	const char *line = strstr(se, "EVENTHANDLER_DEFINE(ehw_low_memory, shrink_cache)");
	if (!line)
		fprintf(stderr, "the failed EVENTHANDLER_DEFINE said nothing naming itself on stderr\n");
	CHECK(line != NULL);
	CHECK(line && strstr(line, "will not be called") != NULL);
	CHECK(line && strstr(line, "refuses to make code writable") != NULL);
	TEST_DONE();
}
