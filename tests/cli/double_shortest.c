/*
 * The number text of `mark view/export` (cli/trace_value.c add_double,
 * cli/text.c text_put_digits and friends, cli/trace_time.c) against
 * references built on libc, for many values:
 *
 *  - doubles: the text must equal the reference (the first precision p
 *    whose correctly rounded %.{p-1}e strtod reads back as the same bits,
 *    then %.*e or, for exponents -4..15, the plain %.*f text: what
 *    add_double printed before its exact integer paths), must read back
 *    with strtod to the same bits, and must be the shortest (p - 1 digits
 *    do not read back).  Edge values (zeros, infinities, NaN, subnormals,
 *    the largest and smallest doubles, every power of two and of ten and
 *    their neighbours, the 1e-5 and 1e16 notation switches, 2^53), then
 *    random bit patterns, random doubles of the exact path's range and
 *    computed values (i / 7.0, as in the benchmark trace).
 *  - integers: text_put_digits (zero-padded, and fewer digits than the
 *    number has) against %0*llu, strbuf_add_uint/int/hex against printf.
 *  - times: trace_time_put_seconds/_wall against printf and strftime.
 *
 *     cli_double_shortest [RANDOM_DOUBLES]
 */
#include "trace_value.c"
#include "trace_time.h"

#include <float.h>
#include <time.h>

static long compared, bad;

/* The reference: libc's conversions only. */
static bool reads_back(double d, int prec, char *text, size_t size)
{
	snprintf(text, size, "%.*e", prec - 1, d);
	double back = strtod(text, NULL);
	return memcmp(&back, &d, sizeof(d)) == 0;
}

static void ref_text(char *out, size_t size, double d, enum trace_value_style style)
{
	if (!isfinite(d)) {
		snprintf(out, size, style == TRACE_VALUE_JSON ? "\"%g\"" : "%g", d);
		return;
	}
	char text[512];
	uint64_t bits;
	memcpy(&bits, &d, sizeof(bits));
	int prec;
	if ((bits & ((UINT64_C(1) << 52) - 1)) != 0) {
		/* Not a power of two: the doubles that read back as d are a
		 * symmetric interval, so reading back is monotonic in the
		 * precision (see shortest_double): a binary search. */
		int lo = 1, hi = 17;
		while (lo < hi) {
			int mid = (lo + hi) / 2;
			if (reads_back(d, mid, text, sizeof(text)))
				hi = mid;
			else
				lo = mid + 1;
		}
		prec = lo;
	} else {
		for (prec = 1; prec < 17 && !reads_back(d, prec, text, sizeof(text)); prec++)
			;
	}
	snprintf(text, sizeof(text), "%.*e", prec - 1, d);
	int exp10 = atoi(strchr(text, 'e') + 1);
	if (exp10 >= -4 && exp10 < 16)
		snprintf(text, sizeof(text), "%.*f", prec - 1 - exp10 > 0 ? prec - 1 - exp10 : 0, d);
	if (style == TRACE_VALUE_JSON && d == 0 && signbit(d))
		snprintf(text, sizeof(text), "-0.0");
	snprintf(out, size, "%s", text);
}

static struct strbuf got;

/* Significant digits of a decimal text: sign, point, exponent, leading
 * and trailing zeros not counted (1 for zero). */
static int significant_digits(const char *t)
{
	int n = 0, zeros = 0;
	bool lead = true;
	for (; *t && *t != 'e'; t++) {
		if (*t < '0' || *t > '9')
			continue;
		if (lead && *t == '0')
			continue;
		lead = false;
		n++;
		zeros = *t == '0' ? zeros + 1 : 0;
	}
	return n - zeros ? n - zeros : 1;
}

static void one(double d)
{
	char text_want[600];
	ref_text(text_want, sizeof(text_want), d, TRACE_VALUE_TEXT);
	for (int st = 0; st < 2; st++) {
		enum trace_value_style style = (enum trace_value_style)st;
		char want[600];
		strbuf_reset(&got);
		add_double(&got, d, false, style);
		/* JSON's text differs only for -0 and the non-finite values */
		if (st == 0 || (isfinite(d) && !(d == 0 && signbit(d))))
			snprintf(want, sizeof(want), "%s", text_want);
		else
			ref_text(want, sizeof(want), d, style);
		compared++;
		bool ok = !got.failed && got.data && strcmp(got.data, want) == 0;
		if (ok && st == 0 && isfinite(d)) {
			/* reads back, and one digit fewer would not (the plain text of
			 * a large integer may have more digits than it needs: 1e15
			 * prints as 1000000000000000, so only when there is no
			 * integer part longer than the digits) */
			double back = strtod(got.data, NULL);
			ok = memcmp(&back, &d, sizeof(d)) == 0;
			int p = significant_digits(got.data);
			char shorter[64];
			if (ok && p > 1 && p <= 17 && fabs(d) < 1e15)
				ok = !reads_back(d, p - 1, shorter, sizeof(shorter));
		}
		if (!ok && bad++ < 10) {
			uint64_t bits;
			memcpy(&bits, &d, sizeof(bits));
			printf("%.17g (bits %016" PRIx64 ", %s): %s, want %s\n", d, bits, st ? "json" : "text",
			       got.data ? got.data : "(null)", want);
		}
	}
}

static void neighbours(double base, int each_side)
{
	double up = base, down = base;
	one(base);
	for (int u = 0; u < each_side; u++) {
		up = nextafter(up, INFINITY);
		down = nextafter(down, -INFINITY);
		one(up);
		one(down);
		one(-up);
		one(-down);
	}
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_random(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void check_doubles(long n)
{
	static const double edge[] = {
		0.0, -0.0, INFINITY, -INFINITY, NAN, DBL_MAX, -DBL_MAX, DBL_MIN, DBL_TRUE_MIN, 4.9406564584124654e-324,
		2.2250738585072009e-308, 1e-5, 9.9999999999999991e-06, 1.0000000000000001e-05, 1e-4, 9.9999e-5,
		0.0001, 0.00010000000000000002, 1e15, 1e16, 9.999999999999998e15, 1e16 - 2, 1e16 + 2, 0x1p53,
		0x1p53 - 1, 0x1p53 + 2, 0x1p52 + 0.5, 123456789012345.67, 562949953421312.25, 0.1, 0.2, 0.3,
		1.0 / 3, 2.0 / 3, 5e-324, 1.7976931348623157e308, 9007199254740993.0, 4503599627370497.5,
	};
	for (size_t k = 0; k < sizeof(edge) / sizeof(edge[0]); k++) {
		one(edge[k]);
		one(-edge[k]);
	}
	for (int e = -1074; e <= 1023; e++)
		neighbours(ldexp(1.0, e), 2);
	for (int e = -323; e <= 308; e++) {
		char p10[16];   /* the double nearest 10^e (pow() may be an ulp off) */
		snprintf(p10, sizeof(p10), "1e%d", e);
		neighbours(strtod(p10, NULL), 3);
	}
	for (long i = 0; i < 200000; i++)
		one((double)i / 7.0);
	for (long i = 0; i < n; i++) {
		uint64_t x = next_random();
		double d;
		switch (i % 4) {
		case 0:
		case 1:   /* any bit pattern */
			memcpy(&d, &x, sizeof(d));
			break;
		case 2:   /* the exact integer path's range: 1e-5 .. 2^53 */
			d = ldexp((double)(x >> 11) / 0x1p53 + 0.5, (int)(x % 71) - 17);
			break;
		default:  /* subnormals */
			x &= (UINT64_C(1) << 52) - 1;
			memcpy(&d, &x, sizeof(d));
			break;
		}
		one(d);
	}
}

static void check_integers(long n)
{
	char ref[64], mine[64];
	long ibad = 0;
	for (long i = 0; i < n; i++) {
		uint64_t x = next_random();
		uint64_t u = x >> (x % 64);
		if (i < 64)
			u = i < 20 ? (uint64_t)pow(10, (double)i) - (i & 1) : ~UINT64_C(0) >> (i - 20);
		/* text_put_digits: n digits (the last n of u, zero-padded) */
		unsigned w = (unsigned)(next_random() % 23);
		memset(mine, 'x', sizeof(mine));
		text_put_digits(mine + 1 + w, u, w);
		snprintf(ref, sizeof(ref), "%024" PRIu64, u);
		bool ok = mine[0] == 'x' && mine[1 + w] == 'x' && memcmp(mine + 1, ref + 24 - w, w) == 0;
		/* strbuf_add_uint/int/hex */
		for (int kind = 0; kind < 3 && ok; kind++) {
			strbuf_reset(&got);
			strbuf_add_lit(&got, "<");
			if (kind == 0) {
				strbuf_add_uint(&got, u, w);
				snprintf(ref, sizeof(ref), "<%0*" PRIu64, (int)w, u);
			} else if (kind == 1) {
				strbuf_add_int(&got, (int64_t)u);
				snprintf(ref, sizeof(ref), "<%" PRId64, (int64_t)u);
			} else {
				strbuf_add_hex(&got, u);
				snprintf(ref, sizeof(ref), "<%" PRIx64, u);
			}
			ok = !got.failed && strcmp(got.data, ref) == 0 && got.len == strlen(ref);
		}
		compared++;
		if (!ok && ibad++ < 10)
			printf("integer %" PRIu64 " width %u: %s / %.*s, want %s\n", u, w, got.data, (int)w, mine + 1, ref);
	}
	/* every value below 10^6 at its own width and padded to 8 */
	for (uint64_t u = 0; u < 1000000; u++) {
		unsigned w = text_count_digits(u);
		text_put_digits(mine + w, u, w);
		text_put_digits(mine + w + 8, u, 8);
		snprintf(ref, sizeof(ref), "%" PRIu64 "%08" PRIu64, u, u);
		compared++;
		if (memcmp(mine, ref, w + 8) != 0 && ibad++ < 10)
			printf("digits of %" PRIu64 ": %.*s, want %s\n", u, (int)w + 8, mine, ref);
	}
	bad += ibad;
}

static void check_times(long n)
{
	char mine[TRACE_TIME_PUT_MAX + 1], ref[128];
	long tbad = 0;
	for (long i = 0; i < n; i++) {
		int64_t ns = (int64_t)(next_random() >> (i % 3 ? 2 : 20)) * (i & 1 ? -1 : 1);
		if (i % 5 == 0)
			ns = 1795000000000000000 + (int64_t)(next_random() % 100000000000000);
		uint64_t mag = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
		char *end = trace_time_put_seconds(mine, ns);
		snprintf(ref, sizeof(ref), "%s%" PRIu64 ".%09" PRIu64, ns < 0 ? "-" : "", mag / 1000000000, mag % 1000000000);
		bool ok = (size_t)(end - mine) == strlen(ref) && memcmp(mine, ref, strlen(ref)) == 0;
		if (ok && ns > 0) {
			end = trace_time_put_wall(mine, ns, 1);
			time_t t = (time_t)(ns / 1000000000);
			struct tm tm;
			gmtime_r(&t, &tm);
			size_t k = strftime(ref, sizeof(ref), "%Y-%m-%d %H:%M:%S", &tm);
			snprintf(ref + k, sizeof(ref) - k, ".%09" PRId64, ns % 1000000000);
			ok = (size_t)(end - mine) == strlen(ref) && memcmp(mine, ref, strlen(ref)) == 0;
		}
		compared++;
		if (!ok && tbad++ < 10)
			printf("time %" PRId64 ": %.*s, want %s\n", ns, (int)(end - mine), mine, ref);
	}
	bad += tbad;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	check_doubles(n);
	check_integers(n);
	check_times(n / 10);
	printf("%ld compared, %ld different\n", compared, bad);
	strbuf_release(&got);
	return bad != 0;
}
