/* Shared declarations of bench/eventhandler. */
#ifndef EH_BENCH_H
#define EH_BENCH_H
#include <mark/eventhandler.h>
#include <stdint.h>

typedef void (*bench_ev_fn)(void *arg, int value);
EVENTHANDLER_DECLARE(bench_ev, bench_ev_fn);

struct bench_fn_slot {
	bench_ev_fn fn;
	void *arg;
};
extern struct bench_fn_slot bench_array[8];
extern unsigned bench_array_count;

void bench_loop_none(uint64_t n);
void bench_loop_array(uint64_t n);
void bench_loop_eh_jump(uint64_t n);
void bench_loop_eh_immediate(uint64_t n);
void bench_loop_eh_generic(uint64_t n);
#endif
