/* The sys/sdt.h comparison probe: `dtrace -h` makes the header with the
 * semaphore test (BENCH_SUBSYS_MARK1_ENABLED), `dtrace -G` the semaphore. */
provider bench {
	probe subsys_mark1(int, void *);
};
