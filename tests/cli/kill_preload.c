/*
 * LD_PRELOAD module for cli_record_kill_writing: kills the traced process
 * right after its tracer's consumer thread has written a packet, before it
 * commits the packet in the ring header and before it publishes its
 * counts in .mark-stats -- the moment a SIGKILL is most likely to find
 * under load, made certain.
 * MARK_TEST_KILL_AFTER_WRITEV=N: the N-th writev() of the thread named
 * "mark-consumer" completes, then the process gets SIGKILL.  Other threads
 * and processes (mark itself) are not touched.  Unset: libc's writev.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/uio.h>

static int writes;   /* the consumer's only: one thread counts */

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	ssize_t (*real)(int, const struct iovec *, int) =
		(ssize_t (*)(int, const struct iovec *, int))dlsym(RTLD_NEXT, "writev");
	ssize_t n = real(fd, iov, cnt);
	const char *after = getenv("MARK_TEST_KILL_AFTER_WRITEV");
	char name[16] = { 0 };
	if (after && n > 0 && prctl(PR_GET_NAME, name, 0, 0, 0) == 0 && strcmp(name, "mark-consumer") == 0 &&
	    ++writes == atoi(after))
		raise(SIGKILL);
	return n;
}
