/*
 * LD_PRELOAD module for test_bt2_crash.sh: makes mark's own code crash at
 * a chosen point while it reads a trace with libbabeltrace2, so the test
 * can check that the crash is blamed on mark, not on the library.
 * MARK_TEST_CRASH_IN=strftime: the first strftime() call (mark view
 * formats an event's wall-clock time with it, in its event callback);
 * =fflush_stdout: the first fflush(stdout) (mark stats prints its table
 * after the reading).  Only in a process forked by the one it was
 * loaded into (the child that reads with libbabeltrace2): the parent,
 * which reports the crash and then ends its command, must not crash too.
 * Unset: both behave as libc's.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pid_t loaded_into;

__attribute__((constructor)) static void remember_pid(void)
{
	loaded_into = getpid();
}

static int crash_in(const char *what)
{
	const char *v = getenv("MARK_TEST_CRASH_IN");
	return v && strcmp(v, what) == 0 && getpid() != loaded_into;
}

size_t strftime(char *s, size_t max, const char *fmt, const struct tm *tm)
{
	if (crash_in("strftime"))
		raise(SIGSEGV);
	size_t (*real)(char *, size_t, const char *, const struct tm *) =
		(size_t (*)(char *, size_t, const char *, const struct tm *))dlsym(RTLD_NEXT, "strftime");
	return real(s, max, fmt, tm);
}

int fflush(FILE *f)
{
	if (f == stdout && crash_in("fflush_stdout"))
		raise(SIGSEGV);
	int (*real)(FILE *) = (int (*)(FILE *))dlsym(RTLD_NEXT, "fflush");
	return real(f);
}
