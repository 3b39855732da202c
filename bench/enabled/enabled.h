/* bench/enabled: the sites (site.c) seen from the driver (enabled.c). */
#ifndef BENCH_ENABLED_H
#define BENCH_ENABLED_H
void site_once(int value, void *ptr);
void sweep_once(unsigned nargs, int a);
#endif
