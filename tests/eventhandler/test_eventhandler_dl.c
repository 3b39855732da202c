/*
 * Lists across objects: list eh_dl is invoked in a dlopen'ed shared object
 * (and here), with handlers here and in another dlopen'ed shared object.
 * A handler registered before any object with an invoke site is loaded
 * arms the sites of objects loaded later; dlclose of the handlers' object
 * deregisters its EVENTHANDLER_DEFINE handler.  Finally a child process
 * dlclose's an object that left a handler registered and must be stopped
 * by the debug check with a clear message (MARK_EVENTHANDLER_DEBUG=1 or
 * Yes), and is not with MARK_EVENTHANDLER_DEBUG=off; a value the variable
 * cannot read is refused with the accepted ones.
 */
#define _GNU_SOURCE
#include "eventhandler/eh_dl_common.h"
#include "eventhandler/eh_sites.h"
#include "testutil.h"

#include <dlfcn.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

static int trace[32], ntrace, last_value;

__attribute__((visibility("default"))) void eh_dl_record(int id, int value)
{
	if (ntrace < 32)
		trace[ntrace++] = id;
	last_value = value;
}

static void exe_handler(void *arg, int value)
{
	eh_dl_record((int)(intptr_t)arg, value);
}

static __attribute__((noinline)) void invoke_here(int value)
{
	EVENTHANDLER_INVOKE(eh_dl, value);
}

static void *open_or_die(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
		exit(1);
	}
	return h;
}

static void *sym(void *h, const char *name)
{
	void *p = dlsym(h, name);
	if (!p) {
		fprintf(stderr, "dlsym %s: %s\n", name, dlerror());
		exit(1);
	}
	return p;
}

#define EXPECT_TRACE(n_, a_, b_, c_)                                                       \
	do {                                                                               \
		int want_[3] = { a_, b_, c_ };                                             \
		CHECK_EQ(ntrace, n_);                                                      \
		for (int i_ = 0; i_ < (n_) && i_ < ntrace; i_++)                           \
			CHECK_EQ(trace[i_], want_[i_]);                                    \
		ntrace = 0;                                                                \
	} while (0)

/* Child: leave a handler of an unloaded object registered, then invoke. */
static int leak_child(void)
{
	void *leaky = open_or_die(EH_LEAKY);
	((void (*)(void))sym(leaky, "eh_dl_leak"))();
	invoke_here(1);
	if (ntrace != 1 || trace[0] != 9) {
		fprintf(stderr, "leak child: the leaked handler did not run while loaded\n");
		return 3;
	}
	dlclose(leaky);
	invoke_here(2);   /* the debug check must abort here */
	fprintf(stderr, "leak child: invocation returned\n");
	return 4;
}

/* The leak child run with MARK_EVENTHANDLER_DEBUG=value: its wait status, and its stderr in out. */
static int run_leak_child(const char *self, const char *value, char *out, size_t cap)
{
	/* posix_spawn, not fork: no atfork handlers, and no copy of the call_rcu
	 * thread's state (which ThreadSanitizer refuses to continue after). */
	int pipefd[2];
	CHECK_EQ(pipe(pipefd), 0);
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2);
	posix_spawn_file_actions_addclose(&fa, pipefd[0]);
	char *child_argv[] = { (char *)self, (char *)"leak", NULL };
	setenv("MARK_EVENTHANDLER_DEBUG", value, 1);
	pid_t pid;
	int err = posix_spawn(&pid, self, &fa, NULL, child_argv, environ);
	unsetenv("MARK_EVENTHANDLER_DEBUG");
	posix_spawn_file_actions_destroy(&fa);
	CHECK_EQ(err, 0);
	out[0] = '\0';
	if (err)
		return -1;
	close(pipefd[1]);
	size_t len = 0;
	ssize_t n;
	while (len < cap - 1 && (n = read(pipefd[0], out + len, cap - 1 - len)) > 0)
		len += (size_t)n;
	out[len] = '\0';
	close(pipefd[0]);
	int status = -1;
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	return status;
}

static void test_leak_detected(const char *self, const char *value)
{
	char out[4096];
	int status = run_leak_child(self, value, out, sizeof(out));
	if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT)) {
		fprintf(stderr, "leak child (MARK_EVENTHANDLER_DEBUG=%s): expected SIGABRT, got status 0x%x; its "
				"stderr:\n%s\n", value, status, out);
		testutil_failures++;
	}
	CHECK(strstr(out, "eventhandler list eh_dl") != NULL);
	CHECK(strstr(out, "has been unloaded (dlclose) while the handler was still registered") != NULL);
	CHECK(strstr(out, "eh_dl_leaky") != NULL);   /* names the library */
}

/*
 * MARK_EVENTHANDLER_DEBUG=off turns the check off: the child is not
 * stopped by it (it then calls into the unloaded object: whatever happens
 * there, it is not the check's abort).  The variable took anything but
 * "0" for on.  A value it cannot read is said, naming the accepted ones.
 */
static void test_debug_spellings(const char *self)
{
	char out[4096];
	int status = run_leak_child(self, "off", out, sizeof(out));
	/* Only the check's message tells: a sanitizer may turn the jump's
	 * SIGSEGV into an abort of its own. */
	if (strstr(out, "has been unloaded (dlclose)")) {
		fprintf(stderr, "leak child (MARK_EVENTHANDLER_DEBUG=off): the debug check ran (status 0x%x); its "
				"stderr:\n%s\n", status, out);
		testutil_failures++;
	}
	run_leak_child(self, "perhaps", out, sizeof(out));
	if (!strstr(out, "mark: MARK_EVENTHANDLER_DEBUG=perhaps is not valid (use 1, on, yes, true, or 0, off, no, "
			 "false)")) {
		fprintf(stderr, "leak child (MARK_EVENTHANDLER_DEBUG=perhaps): no line refusing the value; its "
				"stderr:\n%s\n", out);
		testutil_failures++;
	}
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "leak") == 0)
		return leak_child();

	/* Registered before any object with an invoke site... */
	eventhandler_tag exe = EVENTHANDLER_REGISTER(eh_dl, exe_handler, (void *)1, EVENTHANDLER_PRI_ANY);
	CHECK(exe != NULL);
	invoke_here(5);
	EXPECT_TRACE(1, 1, 0, 0);

	/* ...arms the sites of objects loaded afterwards. */
	void *inv = open_or_die(EH_INVOKER);
	void (*invoke_there)(int) = (void (*)(int))sym(inv, "eh_dl_invoke");
	struct eh_site_census c = eh_sites("eh_dl");
	CHECK_EQ(c.sites, 2);    /* here and in the invoker object */
	CHECK_EQ(c.armed, 2);
	CHECK_EQ(c.mismatched + c.bad_bytes, 0);
	invoke_there(6);
	EXPECT_TRACE(1, 1, 0, 0);
	CHECK_EQ(last_value, 6);

	/* Handlers in another object: its EVENTHANDLER_DEFINE ran on load. */
	void *hand = open_or_die(EH_HANDLERS);
	CHECK_EQ(mark_eventhandler_count("eh_dl"), 2);
	CHECK(((int (*)(void))sym(hand, "eh_dl_handlers_register"))());
	invoke_there(7);
	EXPECT_TRACE(3, 2, 1, 3);   /* FIRST (defined), ANY (exe), LAST (dynamic) */
	invoke_here(8);
	EXPECT_TRACE(3, 2, 1, 3);
	CHECK_EQ(((int (*)(void))sym(hand, "eh_dl_handlers_deregister"))(), 0);
	invoke_there(9);
	EXPECT_TRACE(2, 2, 1, 0);

	/* dlclose: the defined handler is deregistered by the object's destructor. */
	CHECK_EQ(dlclose(hand), 0);
	CHECK_EQ(mark_eventhandler_count("eh_dl"), 1);
	invoke_there(10);
	EXPECT_TRACE(1, 1, 0, 0);

	/* The last handler leaving disarms the sites of every object. */
	CHECK_EQ(EVENTHANDLER_DEREGISTER(eh_dl, exe), 0);
	c = eh_sites("eh_dl");
	CHECK_EQ(c.sites, 2);
	CHECK_EQ(c.disarmed, 2);
	invoke_there(11);
	invoke_here(11);
	EXPECT_TRACE(0, 0, 0, 0);

	/* Unload and reload the invoker: its site comes back disarmed, and is
	 * armed by the next registration. */
	CHECK_EQ(dlclose(inv), 0);
	CHECK_EQ(eh_sites("eh_dl").sites, 1);
	inv = open_or_die(EH_INVOKER);
	invoke_there = (void (*)(int))sym(inv, "eh_dl_invoke");
	c = eh_sites("eh_dl");
	CHECK_EQ(c.sites, 2);
	CHECK_EQ(c.disarmed, 2);
	exe = EVENTHANDLER_REGISTER(eh_dl, exe_handler, (void *)1, EVENTHANDLER_PRI_ANY);
	CHECK_EQ(eh_sites("eh_dl").armed, 2);
	invoke_there(12);
	EXPECT_TRACE(1, 1, 0, 0);
	/* Reload the handlers' object: registered again on load. */
	hand = open_or_die(EH_HANDLERS);
	invoke_there(13);
	EXPECT_TRACE(2, 2, 1, 0);
	CHECK_EQ(dlclose(hand), 0);
	CHECK_EQ(EVENTHANDLER_DEREGISTER(eh_dl, exe), 0);
	CHECK_EQ(dlclose(inv), 0);

	test_leak_detected("/proc/self/exe", "1");
	test_leak_detected("/proc/self/exe", "Yes");
	test_debug_spellings("/proc/self/exe");
	TEST_DONE();
}
