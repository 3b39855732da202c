/* A shared object with an invoke site of list eh_dl and no handler. */
#include "eh_dl_common.h"

__attribute__((visibility("default"))) void eh_dl_invoke(int value);
void eh_dl_invoke(int value)
{
	EVENTHANDLER_INVOKE(eh_dl, value);
}
