/*
 * Compiled by tests/eventhandler.cmake as C and as C++, once as is (must
 * compile with -Wall -Wextra -Werror) and once per -DBAD_* (must not).
 */
#include <mark/eventhandler.h>

typedef void (*typed_fn)(void *arg, int value);
EVENTHANDLER_DECLARE(eh_typed, typed_fn);

static void good_handler(void *arg, int value)
{
	(void)arg;
	(void)value;
}

static void wrong_handler(void *arg, const char *value)   /* second parameter differs */
{
	(void)arg;
	(void)value;
}

#ifdef BAD_DEFINE
EVENTHANDLER_DEFINE(eh_typed, wrong_handler, NULL, EVENTHANDLER_PRI_ANY);
#else
EVENTHANDLER_DEFINE(eh_typed, good_handler, NULL, EVENTHANDLER_PRI_ANY);
#endif

int use(int v);
int use(int v)
{
#ifdef BAD_REGISTER
	eventhandler_tag t = EVENTHANDLER_REGISTER(eh_typed, wrong_handler, NULL, 0);
#else
	eventhandler_tag t = EVENTHANDLER_REGISTER(eh_typed, good_handler, NULL, 0);
	(void)wrong_handler;
#endif
#ifdef BAD_INVOKE
	EVENTHANDLER_INVOKE(eh_typed, "not an int");
#else
	EVENTHANDLER_INVOKE(eh_typed, v);
#endif
	return EVENTHANDLER_DEREGISTER(eh_typed, t);
}
