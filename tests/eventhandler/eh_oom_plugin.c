/* A shared object with an EVENTHANDLER_DEFINE handler on list eh_oom, for
 * test_eventhandler_oom: unloaded while memory is short. */
#include <mark/eventhandler.h>

typedef void (*eh_oom_fn)(void *arg, int *calls);
EVENTHANDLER_DECLARE(eh_oom, eh_oom_fn);

static int plugin_weight = 1000;

static void plugin_handler(void *arg, int *calls)
{
	*calls += *(int *)arg;
}
EVENTHANDLER_DEFINE(eh_oom, plugin_handler, &plugin_weight, EVENTHANDLER_PRI_ANY);
