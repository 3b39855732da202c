/*
 * Timestamps and CPU numbers for the tracer.
 *
 * Timestamps are raw ticks written into every event; the CTF clock in the
 * metadata turns them into wall-clock time (freq + offset).  Where the CPU
 * has an invariant TSC (CPUID 0x80000007 EDX bit 8: constant rate, runs in
 * every C/P state, synchronised across cores by the kernel) a tick is one
 * TSC cycle: rdtsc costs ~20 cycles and no system call.  Otherwise a tick
 * is one nanosecond of CLOCK_MONOTONIC (vDSO).
 *
 * Calibration: at start we take an anchor (TSC, CLOCK_MONOTONIC,
 * CLOCK_REALTIME) read back to back, keeping the tightest of a few tries,
 * and a second TSC/MONOTONIC pair 2 ms later for a first frequency.  The
 * consumer refines the frequency against the same anchor as time passes
 * (the error shrinks with the baseline) and rewrites the metadata; the
 * final metadata uses the whole session as baseline.  The wall-clock
 * origin is the anchor's CLOCK_REALTIME, so later NTP steps of the wall
 * clock do not bend the trace's time axis.
 *
 * aarch64: a tick is one count of CNTVCT_EL0 (tracer_counter()), at the
 * rate CNTFRQ_EL0 states; the consumer refines that rate against
 * CLOCK_MONOTONIC as it does the TSC's.
 *
 * CPU: the kernel keeps the current CPU in the thread's rseq area (glibc
 * registers one for every thread since 2.35); reading it is one load, on
 * x86-64 and aarch64.  Where rseq is unavailable, x86-64 reads TSC_AUX
 * (Linux stores the CPU number in its low 12 bits) with rdpid, or with
 * rdtscp on CPUs without rdpid; else sched_getcpu().
 */
#define _GNU_SOURCE
#include "tracer_internal.h"

#include <sched.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif
#if __has_include(<sys/rseq.h>)
#include <sys/rseq.h>
#endif

enum tracer_cpu_source tracer_cpu_source = CPU_GETCPU;
bool tracer_clock_is_tsc;

static uint64_t ns_of(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec;
}

uint64_t tracer_realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ns_of(&ts);
}

uint64_t tracer_monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ns_of(&ts);
}

static uint64_t read_tsc(void)
{
#if TRACER_HAVE_COUNTER
	return tracer_counter();
#else
	return tracer_monotonic_ns();
#endif
}

/* The counter's nominal rate in Hz where the hardware states it (aarch64's
 * CNTFRQ_EL0, set by firmware), else 0: measured (x86-64's TSC). */
static uint64_t counter_nominal_hz(void)
{
#if defined(__aarch64__)
	uint64_t f;
	__asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(f));
	return f;
#else
	return 0;
#endif
}

/* Is tracer_counter() a clock: constant rate, synchronised across cores? */
static bool cpu_has_invariant_tsc(void)
{
#if defined(__x86_64__)
	unsigned a, b, c, d;
	if (__get_cpuid(0x80000000u, &a, &b, &c, &d) == 0 || a < 0x80000007u)
		return false;
	__get_cpuid(0x80000007u, &a, &b, &c, &d);
	return (d >> 8) & 1;
#elif defined(__aarch64__)
	/* The architecture makes the generic timer system-wide and of
	 * constant frequency; a firmware that left CNTFRQ_EL0 at 0 gets
	 * CLOCK_MONOTONIC. */
	return counter_nominal_hz() >= 1000000;
#else
	return false;
#endif
}

/* TSC and CLOCK_MONOTONIC read as close together as we can manage. */
static void read_pair(uint64_t *tsc, uint64_t *mono, uint64_t *real)
{
	uint64_t best_window = UINT64_MAX;
	for (int i = 0; i < 5; i++) {
		uint64_t t0 = read_tsc();
		uint64_t m = tracer_monotonic_ns();
		uint64_t r = real ? tracer_realtime_ns() : 0;
		uint64_t t1 = read_tsc();
		if (t1 - t0 < best_window) {
			best_window = t1 - t0;
			*tsc = t0 + (t1 - t0) / 2;
			*mono = m;
			if (real)
				*real = r;
		}
	}
}

/* offset_s/offset from the anchor: realtime(tsc0) == real0. */
static void compute_offset(struct tracer_clock *c)
{
	/* X = real0 - ticks0 / freq, in ns; the CTF origin of tick 0. */
	__int128 ticks0_ns = (__int128)c->tsc0 * 1000000000 / (__int128)c->freq;
	__int128 x = (__int128)c->real0_ns - ticks0_ns;
	int64_t s = (int64_t)(x / 1000000000);
	__int128 rem = x - (__int128)s * 1000000000;
	if (rem < 0) {
		s -= 1;
		rem += 1000000000;
	}
	c->offset_s = s;
	c->offset = (int64_t)(rem * (__int128)c->freq / 1000000000);
}

void tracer_clock_init(struct tracer_clock *c)
{
	memset(c, 0, sizeof(*c));
	c->tsc = cpu_has_invariant_tsc();
	const uint64_t nominal_hz = counter_nominal_hz();
	if (c->tsc)
		read_pair(&c->tsc0, &c->mono0_ns, &c->real0_ns);
	if (c->tsc && nominal_hz) {
		/* A stated rate: no 2 ms measurement.  The consumer still refines
		 * it against CLOCK_MONOTONIC (NTP's frequency correction). */
		c->freq = nominal_hz;
	} else if (c->tsc) {
		struct timespec d = { 0, 2000000 };
		nanosleep(&d, NULL);
		uint64_t t1 = 0, m1 = 0;
		read_pair(&t1, &m1, NULL);
		if (m1 <= c->mono0_ns || t1 <= c->tsc0) {
			c->tsc = false;   /* a TSC that does not advance: do not trust it */
		} else {
			c->freq = (uint64_t)((__int128)(t1 - c->tsc0) * 1000000000 / (m1 - c->mono0_ns));
			if (c->freq < 1000000)
				c->tsc = false;
		}
	}
	if (!c->tsc) {
		c->freq = 1000000000;
		c->mono0_ns = tracer_monotonic_ns();
		c->real0_ns = tracer_realtime_ns();
		c->tsc0 = c->mono0_ns;
	}
	compute_offset(c);
	if (getrandom(c->uuid, sizeof(c->uuid), GRND_NONBLOCK) != (ssize_t)sizeof(c->uuid)) {
		uint64_t a = c->real0_ns ^ c->tsc0, b = c->mono0_ns * 0x9e3779b97f4a7c15ull;
		memcpy(c->uuid, &a, 8);
		memcpy(c->uuid + 8, &b, 8);
	}
	c->uuid[6] = (uint8_t)((c->uuid[6] & 0x0f) | 0x40);
	c->uuid[8] = (uint8_t)((c->uuid[8] & 0x3f) | 0x80);
	tracer_clock_is_tsc = c->tsc;
}

bool tracer_clock_refine(struct tracer_clock *c)
{
	if (!c->tsc)
		return false;
	uint64_t t = 0, m = 0;
	read_pair(&t, &m, NULL);
	if (m <= c->mono0_ns + 50000000ull || t <= c->tsc0)
		return false;   /* baseline under 50 ms: no better than what we have */
	uint64_t freq = (uint64_t)((__int128)(t - c->tsc0) * 1000000000 / (m - c->mono0_ns));
	if (freq == c->freq)
		return false;
	c->freq = freq;
	compute_offset(c);
	return true;
}

void tracer_cpu_init(void)
{
#if TRACER_HAVE_RSEQ
	if (__rseq_size >= 8) {
		tracer_cpu_source = CPU_RSEQ;
		return;
	}
#endif
#if defined(__x86_64__)
	unsigned a, b, c, d;
	if (__get_cpuid(0x80000001u, &a, &b, &c, &d) && ((d >> 27) & 1)) {
		/* Linux sets TSC_AUX on every CPU that has rdtscp (its vDSO
		 * getcpu reads it); rdpid (CPUID.7.0:ECX bit 22) reads the same
		 * register without serialising on the timestamp: rdtsc plus
		 * rdpid cost 28 cycles against rdtscp's 40 on the Xeon VM. */
		tracer_cpu_source = CPU_RDTSCP;
		if (__get_cpuid_count(7, 0, &a, &b, &c, &d) && ((c >> 22) & 1))
			tracer_cpu_source = CPU_RDPID;
		return;
	}
#endif
	tracer_cpu_source = CPU_GETCPU;
}
