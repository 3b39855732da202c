/*
 * Architectures without a code patcher: only generic sites exist there (the
 * header refuses jump and immediate sites), so no batch ever reaches here.
 */
#include "../patch.h"
#include "../../core/internal.h"

#include <errno.h>

int mark_arch_patch(struct mark_patch *patches, size_t count)
{
	(void)patches;
	if (count == 0)
		return 0;
	return mark_error(ENOTSUP, "mark: code patching is not implemented on this architecture; "
				   "build with -DMARK_SITE=generic");
}

bool mark_arch_site_valid(const uint8_t *code, uint8_t kind)
{
	(void)code;
	(void)kind;
	return false;
}

unsigned long mark_arch_sync_count(void)
{
	return 0;
}
