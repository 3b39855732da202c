/* A shared object with handlers of list eh_dl: one defined (registered while
 * loading, deregistered while unloading), one registered on request. */
#include "eh_dl_common.h"

static void defined_handler(void *arg, int value)
{
	eh_dl_record((int)(__INTPTR_TYPE__)arg, value);
}
EVENTHANDLER_DEFINE(eh_dl, defined_handler, (void *)2, EVENTHANDLER_PRI_FIRST);

static void dynamic_handler(void *arg, int value)
{
	eh_dl_record((int)(__INTPTR_TYPE__)arg, value);
}

static eventhandler_tag dynamic_tag;

__attribute__((visibility("default"))) int eh_dl_handlers_register(void);
__attribute__((visibility("default"))) int eh_dl_handlers_deregister(void);
int eh_dl_handlers_register(void)
{
	dynamic_tag = EVENTHANDLER_REGISTER(eh_dl, dynamic_handler, (void *)3, EVENTHANDLER_PRI_LAST);
	return dynamic_tag != NULL;
}
int eh_dl_handlers_deregister(void)
{
	return EVENTHANDLER_DEREGISTER(eh_dl, dynamic_tag);
}
