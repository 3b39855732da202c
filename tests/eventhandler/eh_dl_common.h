/* The list shared by test_eventhandler_dl.c and its shared objects. */
#ifndef EH_DL_COMMON_H
#define EH_DL_COMMON_H
#include <mark/eventhandler.h>

typedef void (*dl_fn)(void *arg, int value);
EVENTHANDLER_DECLARE(eh_dl, dl_fn);

/* Each handler appends its id here (provided by the executable). */
void eh_dl_record(int id, int value);
#endif
