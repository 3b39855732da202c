/*
 * bench/enabled/site.c - the armed sites of table 3 (jump kind, the
 * default).  site_once() is called from another translation unit so the
 * compiler cannot clone or inline it: the uprobe rows attach to exactly
 * this code.  The sweep_aN sites carry N int arguments for the
 * "cost against argument count" plot.
 */
#include <mark/mark.h>
#include <stdint.h>

#include "enabled.h"

__attribute__((noinline)) void site_once(int value, void *ptr)
{
	MARK(subsys_mark1, "%d %p", value, ptr);
}

__attribute__((noinline)) void sweep_once(unsigned nargs, int a)
{
	switch (nargs) {
	case 0: MARK(sweep_a0, ""); break;
	case 1: MARK(sweep_a1, "%d", a); break;
	case 2: MARK(sweep_a2, "%d %d", a, a); break;
	case 4: MARK(sweep_a4, "%d %d %d %d", a, a, a, a); break;
	case 8: MARK(sweep_a8, "%d %d %d %d %d %d %d %d", a, a, a, a, a, a, a, a); break;
	case 12: MARK(sweep_a12, "%d %d %d %d %d %d %d %d %d %d %d %d", a, a, a, a, a, a, a, a, a, a, a, a); break;
	default: break;
	}
}
