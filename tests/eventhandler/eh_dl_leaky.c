/* A shared object that registers a handler and never deregisters it. */
#include "eh_dl_common.h"

static void leaked_handler(void *arg, int value)
{
	eh_dl_record((int)(__INTPTR_TYPE__)arg, value);
}

__attribute__((visibility("default"))) void eh_dl_leak(void);
void eh_dl_leak(void)
{
	EVENTHANDLER_REGISTER(eh_dl, leaked_handler, (void *)9, EVENTHANDLER_PRI_ANY);
}
