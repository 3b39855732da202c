/* A translation unit with its own USDT provider (MARK_PROVIDER). */
#define MARK_PROVIDER usdtprov
#include <mark/mark.h>

void usdt_target_prov_hit(int v);

void usdt_target_prov_hit(int v)
{
	MARK(prov_hit, "%d", v);
}
