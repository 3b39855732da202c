/*
 * The shortest-double text of `mark view/export` (cli/trace_value.c,
 * add_double) against the reference algorithm it replaced: the first
 * precision 1..17 whose %g text strtod reads back, then %.*e and, for
 * exponents -4..15, %.*f.  The fast paths (integers, binary search,
 * digits rebuilt from %e) must give the same text for every double:
 * edge values, then pseudo-random ones of several shapes (random bits,
 * i/7, decimals, tiny and huge, half-integers, large integers).
 */
#include "trace_value.c"

static void ref_double(struct strbuf *sb, double d, enum trace_value_style style)
{
	if (!isfinite(d)) {
		strbuf_addf(sb, style == TRACE_VALUE_JSON ? "\"%g\"" : "%g", d);
		return;
	}
	char text[512];
	int prec = 1;
	for (; prec < 17; prec++) {
		snprintf(text, sizeof(text), "%.*g", prec, d);
		double back = strtod(text, NULL);
		if (back == d && signbit(back) == signbit(d))
			break;
	}
	snprintf(text, sizeof(text), "%.*e", prec - 1, d);
	int exp10 = atoi(strchr(text, 'e') + 1);
	if (exp10 >= -4 && exp10 < 16)
		snprintf(text, sizeof(text), "%.*f", prec - 1 - exp10 > 0 ? prec - 1 - exp10 : 0, d);
	if (style == TRACE_VALUE_JSON && d == 0 && signbit(d))
		snprintf(text, sizeof(text), "-0.0");
	strbuf_addf(sb, "%s", text);
}

static long compared, bad;
static struct strbuf got, want;

static void one(double d)
{
	for (int st = 0; st < 2; st++) {
		strbuf_reset(&got);
		strbuf_reset(&want);
		add_double(&got, d, false, (enum trace_value_style)st);
		ref_double(&want, d, (enum trace_value_style)st);
		compared++;
		if (got.failed || want.failed || strcmp(got.data, want.data) != 0) {
			if (bad++ < 10)
				printf("%.17g (%s): %s, want %s\n", d, st ? "json" : "text", got.data, want.data);
		}
	}
}

/* base and the four doubles on each side of it */
static void neighbours(double base)
{
	double up = base, down = base;
	one(base);
	for (int u = 0; u < 4; u++) {
		up = nextafter(up, INFINITY);
		down = nextafter(down, -INFINITY);
		one(up);
		one(down);
	}
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;
	static const double edge[] = {
		-0.0, 0.0, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 1e15, 1e16,
		9.999999999999999e15, 123456789012345.6, 0.0001, 0.00001, 0.1, 0.3, 1.5, -2.75, 1e-5,
		9.9999e-5, 1e21, 1.0000000000000002, 4503599627370497.5, 9007199254740993.0, 0.5, 1.0 / 3,
	};
	for (size_t k = 0; k < sizeof(edge) / sizeof(edge[0]); k++)
		one(edge[k]);
	/* The ends of the exact 128-bit path of add_double (1e-5, 2^53), the
	 * powers of ten and two (a power of two's lower neighbour is half as
	 * far) and their neighbours a few ulps away, exact ties. */
	for (int p10 = -8; p10 <= 18; p10++) {
		neighbours(pow(10, p10));
		neighbours(-pow(10, p10));
	}
	for (int p2 = -20; p2 <= 56; p2++)
		neighbours(ldexp(1.0, p2));
	for (int i = 1; i < 2000; i++) {
		one(i + 0.5);
		one(i * 0.125);
		one(i * 1e-5);
		one(i / 1024.0 + 9.0e15);
	}
	uint64_t x = 88172645463325252ull;
	for (long i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		double d;
		switch (i % 11) {
		case 0: memcpy(&d, &x, 8); break;
		case 1: d = (double)i / 7.0; break;
		case 2: d = (double)(x % 100000) / 1000.0; break;
		case 3: d = (double)(x >> 11) * 1e-300 * ((i & 1) ? 1e290 : 1.0); break;
		case 4: d = ldexp((double)(x >> 11), (int)(x % 120) - 60); break;
		case 5: d = (double)(x % 100000000) * 1e8 + 0.5; break;
		case 6: d = -(double)(x % 1000) / 3.0 * pow(10, (double)(int)(x % 40) - 20); break;
		case 7: d = (double)(int64_t)(x % 20000000000000000ull) + ((i & 2) ? 0.25 : 0); break;
		case 8: d = ldexp((double)(x >> 11), -53 - (int)(x % 17)); break;   /* 1e-5 .. 1 */
		case 9: d = (double)(x % 1000000007) / (double)((x >> 40) % 1000 + 1); break;
		default: d = (double)(x >> 11) * 1e-16 * pow(10, (double)(int)(x % 22) - 5); break;
		}
		one(d);
	}
	/* strbuf_add_uint/int/hex and text_put_digits are checked against
	 * printf by cli_double_shortest (check_integers: the same values and
	 * widths, and more). */
	printf("%ld compared, %ld different\n", compared, bad);
	strbuf_release(&got);
	strbuf_release(&want);
	return bad != 0;
}
