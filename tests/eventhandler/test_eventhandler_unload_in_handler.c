/*
 * dlclose from inside an event handler (found by a review).
 *
 * A handler that unloads a plugin (a "config reloaded" event) runs the
 * plugin's EVENTHANDLER_DEFINE destructor inside an invocation: it cannot
 * wait for other threads to leave the plugin's handler (it would wait for
 * its own invocation too), and a thread still running that handler
 * crashes once the object is unmapped.  libmark cannot prevent that; it
 * said "EVENTHANDLER_DEREGISTER(list) called from inside an event handler
 * ... Use EVENTHANDLER_DEREGISTER_NOWAIT", naming a call the program never
 * made.  Now the line names the object, the list, the danger and the
 * remedy.  Single-threaded here (nothing can crash); the line is checked.
 */
#define _GNU_SOURCE
#include <mark/eventhandler.h>
#include "testutil.h"
#include "testutil_wait.h"

#include <dlfcn.h>
#include <unistd.h>

typedef void (*eh_oom_fn)(void *arg, int *calls);
EVENTHANDLER_DECLARE(eh_oom, eh_oom_fn);
typedef void (*reload_fn)(void *arg);
EVENTHANDLER_DECLARE(ehu_reload, reload_fn);

static void *plugin;

static void unload_plugin(void *arg)
{
	(void)arg;
	CHECK_EQ(dlclose(plugin), 0);
	plugin = NULL;
}

static int scenario(void)
{
	plugin = dlopen(EH_OOM_PLUGIN, RTLD_NOW);
	if (!plugin) {
		fprintf(stderr, "dlopen %s: %s\n", EH_OOM_PLUGIN, dlerror());
		return 1;
	}
	CHECK_EQ(mark_eventhandler_count("eh_oom"), 1);
	CHECK(EVENTHANDLER_REGISTER(ehu_reload, unload_plugin, NULL, EVENTHANDLER_PRI_ANY) != NULL);
	EVENTHANDLER_INVOKE(ehu_reload);
	CHECK(plugin == NULL);
	CHECK_EQ(mark_eventhandler_count("eh_oom"), 0);
	int calls = 0;
	EVENTHANDLER_INVOKE(eh_oom, &calls);   /* the unloaded handler is not called */
	CHECK_EQ(calls, 0);
	return testutil_failures ? 1 : 0;
}

int main(void)
{
	int err[2];
	if (pipe(err) != 0)
		return 2;
	fflush(stdout);
	pid_t p = fork();
	if (p == 0) {
		dup2(err[1], 2);
		_exit(scenario());
	}
	close(err[1]);
	static char se[8192];
	ssize_t ne = 0, r;
	while ((r = read(err[0], se + ne, sizeof(se) - 1 - ne)) > 0)
		ne += r;
	int st = 0;
	double secs;
	if (!testutil_wait_bounded(p, 10, &st, &secs)) {
		fprintf(stderr, "the scenario did not end within 10 s\n");
		return 1;
	}
	printf("child: status 0x%x, stderr '%s'\n", st, se);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	const char *line = strstr(se, "is unloaded (dlclose) from inside an event handler");
	if (!line)
		fprintf(stderr, "no line saying that the object is unloaded from inside an event handler\n");
	CHECK(line != NULL);
	CHECK(strstr(se, "eh_oom_plugin") != NULL);
	CHECK(strstr(se, "on list eh_oom") != NULL);
	CHECK(strstr(se, "Call dlclose outside event handlers") != NULL);
	CHECK(strstr(se, "EVENTHANDLER_DEREGISTER") == NULL);
	TEST_DONE();
}
