/*
 * Marker-name globs, one definition for the core (mark_arm, MARK_ENABLE,
 * the agent) and the CLI (view -e, list FILE, record -e).
 */
#include "internal.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * glob against a marker's display name ("name" or "provider:name") and,
 * for a glob without ':', against `probe`, the name without its provider
 * (NULL if the marker has none).
 */
static bool match_spelling(const char *glob, const char *display, const char *probe)
{
	if (fnmatch(glob, display, 0) == 0)
		return true;
	return probe && strchr(glob, ':') == NULL && fnmatch(glob, probe, 0) == 0;
}

bool mark_name_glob_match(const char *glob, const char *display, const char *probe)
{
	if (match_spelling(glob, display, probe))
		return true;
	/*
	 * The DTrace/systemtap/bpftrace spelling: a probe declared as
	 * request__start in a .d file is the marker request-start (DTrace's
	 * display convention, as mark-dtrace names it), and users type the
	 * declared name.  So "__" in a glob also matches "-".
	 */
	if (!strstr(glob, "__"))
		return false;
	size_t len = strlen(glob);
	char small[256];
	char *alt = len < sizeof(small) ? small : malloc(len + 1);
	if (!alt)
		return false;
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		if (glob[i] == '\\' && i + 1 < len) {   /* an escaped character stays as it is */
			alt[o++] = glob[i++];
			alt[o++] = glob[i];
		} else if (glob[i] == '_' && glob[i + 1] == '_') {
			alt[o++] = '-';
			i++;
		} else {
			alt[o++] = glob[i];
		}
	}
	alt[o] = '\0';
	bool m = match_spelling(alt, display, probe);
	if (alt != small)
		free(alt);
	return m;
}

int mark_glob_check(const char *glob, char *err, size_t errlen)
{
	if (!glob || !*glob) {
		snprintf(err, errlen, "the glob is empty; give a marker name or a pattern such as \"net_*\"");
		return -1;
	}
	for (const char *p = glob; *p; p++) {
		if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			snprintf(err, errlen, "the glob has a control character (byte 0x%02x); marker names have none",
				 (unsigned char)*p);
			return -1;
		}
		if (*p == '\\') {
			if (!p[1]) {
				snprintf(err, errlen, "the glob ends in a lone \"\\\"; write \"\\\\\" for a backslash");
				return -1;
			}
			p++;
		} else if (*p == '[') {
			/* [!...] or [^...]; a ']' first is a member; [:class:] inside */
			const char *q = p + 1;
			if (*q == '!' || *q == '^')
				q++;
			if (*q == ']')
				q++;
			while (*q && *q != ']') {
				if (q[0] == '[' && q[1] == ':') {
					const char *end = strstr(q + 2, ":]");
					if (!end)
						break;
					q = end + 2;
				} else {
					q++;
				}
			}
			if (*q != ']') {
				snprintf(err, errlen, "the \"[\" at offset %d is never closed by \"]\" (write \"\\[\" for "
						      "a literal bracket)", (int)(p - glob));
				return -1;
			}
			p = q;
		}
	}
	return 0;
}
