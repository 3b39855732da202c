#include "test_api_shared.h"

void api_other_tu_hit(int count, void *ptr)
{
	MARK(api_basic, "%d %p", count, ptr);
	api_inline_hit(count);
}

int api_other_tu_enabled(void)
{
	return MARK_ENABLED(api_basic) ? 1 : 0;
}
