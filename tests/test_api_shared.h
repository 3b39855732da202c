#ifndef TEST_API_SHARED_H
#define TEST_API_SHARED_H
#include <mark/mark.h>
struct request { int len; const char *path; };
/* The same marker name in a header inline function: one site per TU. */
static inline void api_inline_hit(int v)
{
	MARK(api_inline, "%d", v);
}
void api_other_tu_hit(int count, void *ptr);
int api_other_tu_enabled(void);
#endif
