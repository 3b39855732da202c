/* A shared object with a marker, dlopen()ed by tracer_prog after tracing started. */
#include <mark/mark.h>

void tracer_dso_fire(long n);

void tracer_dso_fire(long n)
{
	for (long i = 0; i < n; i++)
		MARK(t_dso, "%ld %x", i, (unsigned)(i * 16));
}
