/*
 * bench/size/site.c - table 4: the seeds' my_open() with one marker, and
 * my_work(), a function with a frame of its own, compiled per variant (see common/site_variant.h); the "none" build has no
 * site at all.  size.py reads the object code: bytes up to the first ret
 * are the straight-line ("likely") path, the rest of the function and its
 * .cold part are out of line.
 */
#include <stddef.h>

#ifdef BENCH_SIZE_NONE
#define SITE() do { } while (0)
#define FN(base) base##none
#else
#include "site_variant.h"
#endif

int FN(my_open_)(void *inode, void *file);
int FN(my_work_)(int x);
int bench_size_ext(int x);

int FN(my_open_)(void *inode, void *file)
{
	(void)inode, (void)file;
	SITE();
	return -1;   /* -EPERM, as in the seeds */
}

/* A function with a stack frame and live registers of its own, where the
 * site's out-of-line needs meet the function's register allocation. */
int FN(my_work_)(int x)
{
	SITE();
	return bench_size_ext(x) + bench_size_ext(x + 1);
}
