/* A shared object with markers, loaded and unloaded by test_dlopen. */
#include <mark/mark.h>

int dl_rx_hit(int len, const char *who)
{
	MARK(dl_rx, "%d %s", len, who);
	return MARK_ENABLED(dl_rx) ? 1 : 0;
}
