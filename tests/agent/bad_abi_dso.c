/*
 * A library whose one marker descriptor claims another ABI, so that loading
 * it makes libmark warn while it holds the registry lock (the warning is
 * written once the lock is released).  For tests/agent/test_stderr_full.py.
 * The descriptor is changed by a constructor that runs before the one
 * mark.h adds to register the object (lower priority number runs first).
 */
#include <mark/mark.h>

void bad_abi_fire(int x)
{
	MARK(bad_abi_marker, "%d", x);
}

__attribute__((constructor(101), used)) static void spoil_abi(void)
{
	/* mark.h declares the section const; it is writable data (the
	 * registry writes it), and the empty asm keeps the compiler from
	 * treating the store as one into a const object. */
	struct mark__site *d = (struct mark__site *)__start___mark_descs;
	__asm__("" : "+r"(d));
	if (d && (const struct mark__site *)d != __stop___mark_descs)
		d->abi = MARK__ABI + 100;
}
