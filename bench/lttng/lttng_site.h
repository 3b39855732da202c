#ifndef BENCH_LTTNG_SITE_H
#define BENCH_LTTNG_SITE_H
void lttng_once(int value, void *ptr);
int lttng_site_enabled(void);
#endif
