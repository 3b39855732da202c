/* Field values as text and JSON: see trace_value.h. */
#include "trace_value.h"
#include "trace_reader.h"
#include "tracer/trace_format.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The largest magnitude a JSON number keeps in every reader: chrome://tracing
 * and the Perfetto UI (JavaScript) parse numbers as doubles, which hold every
 * integer up to 2^53 and round beyond it (18446744073709551615 arrives as
 * 18446744073709552000).  A decimal integer of the JSON style beyond it is a
 * string of its digits, which arrives exactly.
 */
#define JSON_EXACT_INTEGER_MAX (UINT64_C(1) << 53)

static void add_unsigned(struct strbuf *sb, uint64_t v, bt_field_class_integer_preferred_display_base base,
			 enum trace_value_style style)
{
	if (style == TRACE_VALUE_OTLP) {
		/* intValue is an int64 (a decimal string in OTLP/JSON): a larger
		 * unsigned value, or one shown in another base (%p, %x), is a
		 * stringValue of the JSON export's text. */
		bool as_int = base == BT_FIELD_CLASS_INTEGER_PREFERRED_DISPLAY_BASE_DECIMAL && v <= INT64_MAX;
		if (as_int)
			strbuf_add_lit(sb, "{\"intValue\": \"");
		else
			strbuf_add_lit(sb, "{\"stringValue\": ");
		if (as_int || base == BT_FIELD_CLASS_INTEGER_PREFERRED_DISPLAY_BASE_DECIMAL) {
			if (!as_int)
				strbuf_add_lit(sb, "\"");
			strbuf_add_uint(sb, v, 1);
			strbuf_add_lit(sb, "\"}");
		} else {
			add_unsigned(sb, v, base, TRACE_VALUE_JSON);
			strbuf_add_lit(sb, "}");
		}
		return;
	}
	const char *q = style == TRACE_VALUE_JSON ? "\"" : "";
	switch (base) {
	case BT_FIELD_CLASS_INTEGER_PREFERRED_DISPLAY_BASE_HEXADECIMAL:
		if (style == TRACE_VALUE_JSON)
			strbuf_add_lit(sb, "\"0x");
		else
			strbuf_add_lit(sb, "0x");
		strbuf_add_hex(sb, v);
		if (style == TRACE_VALUE_JSON)
			strbuf_add_lit(sb, "\"");
		break;
	case BT_FIELD_CLASS_INTEGER_PREFERRED_DISPLAY_BASE_OCTAL:
		/* as printf("%#o"): a leading 0, and 0 itself is "0" */
		strbuf_addf(sb, v ? "%s0%" PRIo64 "%s" : "%s%" PRIo64 "%s", q, v, q);
		break;
	case BT_FIELD_CLASS_INTEGER_PREFERRED_DISPLAY_BASE_BINARY: {
		char bits[72];
		int n = 0;
		do {
			bits[n++] = (char)('0' + (v & 1));
			v >>= 1;
		} while (v && n < 64);
		strbuf_addf(sb, "%s0b", q);
		while (n--)
			strbuf_add(sb, &bits[n], 1);
		strbuf_addf(sb, "%s", q);
		break;
	}
	default:
		if (style == TRACE_VALUE_JSON && v > JSON_EXACT_INTEGER_MAX) {
			strbuf_add_lit(sb, "\"");
			strbuf_add_uint(sb, v, 1);
			strbuf_add_lit(sb, "\"");
		} else {
			strbuf_add_uint(sb, v, 1);
		}
	}
}

static void add_signed(struct strbuf *sb, int64_t v, bt_field_class_integer_preferred_display_base base,
		       enum trace_value_style style)
{
	if (base == BT_FIELD_CLASS_INTEGER_PREFERRED_DISPLAY_BASE_DECIMAL && style == TRACE_VALUE_OTLP) {
		strbuf_add_lit(sb, "{\"intValue\": \"");
		strbuf_add_int(sb, v);
		strbuf_add_lit(sb, "\"}");
	} else if (base == BT_FIELD_CLASS_INTEGER_PREFERRED_DISPLAY_BASE_DECIMAL) {
		/* the magnitude, without overflow for INT64_MIN */
		uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
		bool quoted = style == TRACE_VALUE_JSON && mag > JSON_EXACT_INTEGER_MAX;
		if (quoted)
			strbuf_add_lit(sb, "\"");
		strbuf_add_int(sb, v);
		if (quoted)
			strbuf_add_lit(sb, "\"");
	} else
		/* A non-decimal signed value shows its two's-complement bits, as printf("%x") does. */
		add_unsigned(sb, (uint64_t)v, base, style);
}

/*
 * The text add_double() gives a double that is not a power of two: the
 * first precision p whose %.{p-1}e text strtod reads back as d (the same
 * decimal as %.{p}g), found by binary search, then those p digits in plain
 * notation when -4 <= exponent < 16, else that %e text.  Why a binary
 * search is exact: the values that read back as d are the interval of half
 * an ulp on either side (not so for a power of two, whose interval below
 * is narrower: add_double searches linearly there), and the correctly
 * rounded (p+1)-digit decimal is no farther from d than the p-digit one
 * (which is also a (p+1)-digit decimal), so once a precision reads back,
 * every larger one does.  The plain text is built from the %e digits (the
 * same rounding position as %.*f with those decimals) instead of a second
 * conversion: each costs most of a microsecond.
 */
static void shortest_double(char *text, size_t size, double d)
{
	char probe[64];
	int lo = 1, hi = 17;
	bool have = false;   /* text holds %.{hi-1}e */
	bool first = true;
	while (lo < hi) {
		/* Computed values (i / 7.0) mostly need 16 or 17 digits: try 15
		 * first, which leaves one more probe for them. */
		int mid = first ? 15 : (lo + hi) / 2;
		first = false;
		snprintf(probe, sizeof(probe), "%.*e", mid - 1, d);
		double back = strtod(probe, NULL);
		if (back == d && signbit(back) == signbit(d)) {
			hi = mid;
			snprintf(text, size, "%s", probe);
			have = true;
		} else {
			lo = mid + 1;
		}
	}
	int prec = lo;
	if (!have || hi != prec)
		snprintf(text, size, "%.*e", prec - 1, d);
	const char *e = strchr(text, 'e');
	int exp10 = atoi(e + 1);
	if (exp10 < -4 || exp10 >= 16)
		return;
	if (prec - 1 - exp10 < 0) {   /* fewer digits than the integer part: %.0f prints it all */
		snprintf(text, size, "%.0f", d);
		return;
	}
	/* the digits of "-d.ddde+XX" without sign, point and exponent */
	char digits[32], out[64];
	const char *p = text;
	bool neg = *p == '-';
	if (neg)
		p++;
	size_t n = 0;
	for (; p < e && n + 1 < sizeof(digits); p++)
		if (*p != '.')
			digits[n++] = *p;
	size_t o = 0;
	if (neg)
		out[o++] = '-';
	if (exp10 >= 0) {
		/* integer part: digits[0..exp10], then the rest after the point */
		for (int i = 0; i <= exp10; i++)
			out[o++] = (size_t)i < n ? digits[i] : '0';
		if ((size_t)exp10 + 1 < n) {
			out[o++] = '.';
			for (size_t i = (size_t)exp10 + 1; i < n; i++)
				out[o++] = digits[i];
		}
	} else {
		out[o++] = '0';
		out[o++] = '.';
		for (int i = 0; i < -exp10 - 1; i++)
			out[o++] = '0';
		for (size_t i = 0; i < n; i++)
			out[o++] = digits[i];
	}
	out[o] = '\0';
	snprintf(text, size, "%s", out);
}

/*
 * Exact shortest digits without libc: the same text as shortest_double()
 * and the power-of-two search of add_double(), for the doubles traces
 * mostly hold (normal, 1e-5 <= |d| < 2^53, not an integer), in a few
 * 128-bit integer operations instead of several snprintf/strtod pairs.
 *
 * d = m * 2^e with e < 0, so d = V / 2^sh with V = 4m, sh = 2 - e: an
 * exact fraction whose denominator is a power of two.  The doubles that
 * read back as d are those within (V - 2) / 2^sh .. (V + 2) / 2^sh, half
 * an ulp each side ((V - 1) below a power of two, whose lower neighbour is
 * half as far), the ends included when m is even (strtod rounds a tie to
 * the even mantissa).  The p-digit %e text of d is d * 10^(p-1-k) rounded
 * to an integer, half to even as glibc's printf rounds an exact tie, for
 * the k with 10^k <= d < 10^(k+1).  Scaling V (or the denominator) by
 * that power of ten keeps everything an exact integer below 2^128, so the
 * rounding and the "does it read back" test are exact comparisons: no
 * floating point is involved, and nothing is approximated (the bounds
 * checks below fall back to the libc search where 128 bits would not do).
 * Grisu's idea (an exact integer fast path, a slow path for the rest),
 * with the interval test of Steele & White's shortest-digits criterion.
 */
typedef unsigned __int128 u128;

/* 10^s for 0 <= s <= 21 (10^19 is the largest power of ten in 64 bits) */
static u128 pow10_128(int s)
{
	static const uint64_t p10[20] = {
		1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull, 100000000ull,
		1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull, 10000000000000ull,
		100000000000000ull, 1000000000000000ull, 10000000000000000ull, 100000000000000000ull,
		1000000000000000000ull, 10000000000000000000ull,
	};
	return s < 20 ? (u128)p10[s] : (u128)p10[s - 2] * 100;
}

/*
 * The p significant digits of V / 2^sh correctly rounded (*digits, with
 * the decimal exponent *k10 of the first one) and whether that decimal
 * reads back as the double.  *k is the caller's guess of floor(log10(d)),
 * corrected here.  False in *ok means 128 bits do not suffice: use libc.
 */
static bool digits_at(u128 V, int sh, int p, bool narrow, bool even, int *k, uint64_t *digits, int *k10, bool *ok)
{
	*ok = false;
	u128 lo_p = pow10_128(p - 1), hi_p = lo_p * 10;
	for (int tries = 0; tries < 4; tries++) {
		int s = p - 1 - *k;
		u128 num, den, wu;
		if (s >= 0) {
			/* V < 2^55 and 10^21 < 2^70: the product stays below 2^125 */
			if (s > 21 || sh > 120)
				return false;
			num = V * pow10_128(s);
			den = (u128)1 << sh;
			wu = 2 * pow10_128(s);
		} else {
			/* 2^sh * 10^-s < 2^(sh + 4*(-s)) must fit */
			if (-s > 21 || sh + 4 * -s > 124)
				return false;
			num = V;
			den = ((u128)1 << sh) * pow10_128(-s);
			wu = 2;
		}
		/* a power-of-two denominator is a shift and a mask, not a 128-bit division */
		u128 q = s >= 0 ? num >> sh : num / den, r = s >= 0 ? num & (den - 1) : num % den;
		if (q >= hi_p) {   /* d >= 10^(k+1): the guess was low */
			(*k)++;
			continue;
		}
		if (q < lo_p) {    /* d < 10^k */
			(*k)--;
			continue;
		}
		u128 half = den >> 1;   /* den is even: sh >= 3 */
		bool up = r > half || (r == half && (q & 1));
		u128 dist = up ? den - r : r;
		u128 w = up || !narrow ? wu : wu / 2;
		*ok = true;
		bool inside = dist < w || (dist == w && even);
		*k10 = *k;
		if (up && ++q == hi_p) {   /* 9.99.. rounded up to 10.0: one more integer digit */
			q = lo_p;
			(*k10)++;
		}
		*digits = (uint64_t)q;
		return inside;
	}
	return false;
}

/*
 * The shortest digits of V / 2^sh (not a power of two: the interval of
 * the doubles that read back is symmetric) in one pass instead of the
 * binary search's four or five digits_at() calls, the idea of Ryu's digit
 * removal loop done with exact integers.  The value is scaled by 10^s so
 * that X = V * 10^s / 2^sh lies in [10^16, 10^17): 17 digits, which
 * always read back (half an ulp is more than 1/2 in X's units: the
 * nearest integer is inside).  The
 * integers in the interval (X - W .. X + W, W = 2 * 10^s / 2^sh, the ends
 * included when the mantissa is even) are a .. b; the shortest precision
 * 17 - j is the largest j for which some multiple of 10^j lies in a .. b.
 * Its digits are X / 10^j rounded half to even, as printf rounds: the
 * interval is symmetric about X, so when any multiple of 10^j is inside,
 * the nearest one is too, which makes this the precision and digits of
 * the search for the first %.{p-1}e that reads back.  k is floor(log10)
 * or one less (corrected here); false when 128 bits would not do.
 */
static bool shortest_symmetric(u128 V, int sh, bool even, int k, uint64_t *digits, int *prec, int *k10)
{
	static const uint64_t p10[18] = {
		1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull, 100000000ull,
		1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull, 10000000000000ull,
		100000000000000ull, 1000000000000000ull, 10000000000000000ull, 100000000000000000ull,
	};
	if (k < -5)   /* |d| >= 1e-5 (the double, a little above 10^-5): k >= -5 */
		k = -5;
	u128 N, mask = ((u128)1 << sh) - 1;
	uint64_t Q;
	int s;
	for (int tries = 0;; tries++) {
		/* s <= 21 and V < 2^55: N < 2^125, N + W below 2^126 */
		s = 16 - k;
		if (tries == 3 || s > 21 || s < 0)
			return false;
		N = V * pow10_128(s);
		u128 q = N >> sh;
		if (q >= p10[17])
			k++;
		else if (q < p10[16])
			k--;
		else {
			Q = (uint64_t)q;
			break;
		}
	}
	u128 W = 2 * pow10_128(s), lo = N - W, hi = N + W;
	/* a: the least integer in the interval, b the largest */
	uint64_t a = (uint64_t)(lo >> sh) + ((lo & mask) != 0 || !even);
	uint64_t b = (uint64_t)(hi >> sh) - ((hi & mask) == 0 && !even);
	/* 16 at most: one significant digit is the least %e prints (a
	 * multiple of 10^17 in the interval is 10^17, "1e(k+1)") */
	int j = 0;
	while (j < 16) {
		uint64_t a1 = (a + 9) / 10, b1 = b / 10;
		if (a1 > b1)
			break;
		a = a1;
		b = b1;
		j++;
	}
	uint64_t qj = Q, rj = 0;
	bool up;
	if (j == 0) {
		u128 r = N & mask, half = (u128)1 << (sh - 1);
		up = r > half || (r == half && (Q & 1));
	} else {
		/* X / 10^j = qj + (rj + r / 2^sh) / 10^j: exactly half only
		 * when rj is half and nothing is below 1 */
		uint64_t half = 5 * p10[j - 1];
		qj = Q / p10[j];
		rj = Q - qj * p10[j];
		up = rj > half || (rj == half && ((N & mask) != 0 || (qj & 1)));
	}
	*prec = 17 - j;
	*k10 = k;
	qj += up;
	if (qj == p10[*prec]) {   /* 9.99.. rounded up to 10.0: one more integer digit */
		qj = p10[*prec - 1];
		(*k10)++;
	}
	*digits = qj;
	return true;
}

/* The text of the shortest-digits search for d in text (NUL-terminated, at
 * least 40 bytes) and its length; 0 when d is outside this exact path's
 * range. */
static size_t exact_shortest_double(char *text, double d)
{
	uint64_t bits;
	memcpy(&bits, &d, sizeof(bits));
	int bexp = (int)((bits >> 52) & 0x7ff);
	uint64_t frac = bits & ((UINT64_C(1) << 52) - 1);
	double a = fabs(d);
	if (bexp == 0 || bexp == 0x7ff || !(a >= 1e-5) || a >= 0x1p53)
		return 0;
	uint64_t m = frac | (UINT64_C(1) << 52);
	int sh = 2 - (bexp - 1075);   /* e = bexp - 1075 < 0 here */
	u128 V = (u128)m << 2;
	bool narrow = frac == 0 && bexp > 1;
	bool even = (m & 1) == 0;
	/* floor(log10(a)) or one less: floor((bexp - 1023) * log10(2)) with
	 * log10(2) ~ 78913 / 2^18 (>> of a negative int floors with gcc and
	 * clang), raised by one where a reaches the next power of ten (exact
	 * doubles from 1 up; below 1 a guess, which digits_at corrects like
	 * any off-by-one guess).  1e-5 <= a < 2^53: k is -6 .. 15. */
	static const double p10d[22] = { 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1e0, 1e1, 1e2, 1e3, 1e4, 1e5,
					 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16 };
	int k = (bexp - 1023) * 78913 >> 18;
	if (k + 1 >= -5 && k + 1 <= 16 && a >= p10d[k + 1 + 5])
		k++;
	uint64_t dig = 0;
	int k10 = 0, prec;
	bool ok;
	if (!narrow) {
		if (!shortest_symmetric(V, sh, even, k, &dig, &prec, &k10))
			return 0;
	} else {
		/* a power of two: the first precision that reads back, 17 at most */
		for (prec = 1;; prec++) {
			bool in = digits_at(V, sh, prec, narrow, even, &k, &dig, &k10, &ok);
			if (!ok)
				return 0;
			if (in || prec == 17)
				break;
		}
	}
	/* The digits are written where they go, the part before the point
	 * and the part after it each by text_put_digits(): written into a
	 * scratch array and copied from there, the copy's wide loads waited
	 * for the narrow stores to retire (a failed store-to-load forwarding,
	 * the top line of add_double's profile). */
	static const uint64_t p10[17] = {
		1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull, 100000000ull,
		1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull, 10000000000000ull,
		100000000000000ull, 1000000000000000ull, 10000000000000000ull,
	};
	char *o = text;
	if (signbit(d))
		*o++ = '-';
	if (k10 < -4 || k10 >= 16) {
		/* %.{prec-1}e */
		uint64_t first = dig / p10[prec - 1];
		*o++ = (char)('0' + first);
		if (prec > 1) {
			*o++ = '.';
			text_put_digits(o + prec - 1, dig - first * p10[prec - 1], (unsigned)prec - 1);
			o += prec - 1;
		}
		*o++ = 'e';
		*o++ = k10 < 0 ? '-' : '+';
		int ax = k10 < 0 ? -k10 : k10;
		if (ax >= 100)
			*o++ = (char)('0' + ax / 100);
		*o++ = (char)('0' + ax / 10 % 10);
		*o++ = (char)('0' + ax % 10);
	} else if (prec - 1 - k10 < 0) {
		/* %.0f: the integer nearest d, half to even */
		u128 ip = V >> sh, r = V & (((u128)1 << sh) - 1), half = (u128)1 << (sh - 1);
		if (r > half || (r == half && (ip & 1)))
			ip++;
		unsigned t = text_count_digits((uint64_t)ip);
		text_put_digits(o + t, (uint64_t)ip, t);
		o += t;
	} else if (k10 >= 0) {
		/* k10 + 1 digits before the point, the other nf after it */
		int nf = prec - 1 - k10;
		uint64_t ip = nf ? dig / p10[nf] : dig;
		text_put_digits(o + k10 + 1, ip, (unsigned)k10 + 1);
		o += k10 + 1;
		if (nf) {
			*o++ = '.';
			text_put_digits(o + nf, dig - ip * p10[nf], (unsigned)nf);
			o += nf;
		}
	} else {
		/* "0.", -k10 - 1 zeros (at most 4), the digits */
		memcpy(o, "0.000000", 8);
		o += 1 - k10;
		text_put_digits(o + prec, dig, (unsigned)prec);
		o += prec;
	}
	*o = '\0';
	return (size_t)(o - text);
}

static void add_double(struct strbuf *sb, double d, bool single, enum trace_value_style style)
{
	if (style == TRACE_VALUE_OTLP) {
		/* the protobuf JSON mapping spells the non-finite doubles as strings */
		strbuf_add_lit(sb, "{\"doubleValue\": ");
		if (isnan(d))
			strbuf_add_lit(sb, "\"NaN\"");
		else if (isinf(d))
			strbuf_add(sb, d < 0 ? "\"-Infinity\"" : "\"Infinity\"", d < 0 ? 11 : 10);
		else
			add_double(sb, d, single, TRACE_VALUE_JSON);
		strbuf_add_lit(sb, "}");
		return;
	}
	if (!isfinite(d)) {
		strbuf_addf(sb, style == TRACE_VALUE_JSON ? "\"%g\"" : "%g", d);
		return;
	}
	/*
	 * The shortest decimal that reads back as the same value: the first
	 * precision (significant digits) whose %g text strtod (strtof for a
	 * single-precision field, so 0.1f prints 0.1) turns back into d.  17
	 * always does for a double, 9 for a float.  -0.0 prints as "-0"
	 * (strtod keeps the sign, and == does not tell the two zeros apart,
	 * so check the sign too).
	 */
	char text[512];   /* %.17g needs 25; room for what the compiler cannot bound */
	/*
	 * An integer below 1e15 (not -0) is its digits: the shortest %g that
	 * reads back has exactly its significant digits, and the plain
	 * notation below prints them without a fraction.  A fast path: a
	 * conversion costs a microsecond and a view may print millions.
	 */
	if (!single && d == trunc(d) && fabs(d) < 1e15 && !(d == 0 && signbit(d))) {
		strbuf_add_int(sb, (int64_t)d);
		return;
	}
	if (!single) {
		/* straight into the buffer, its length known: no copy, no strlen */
		if (strbuf_reserve(sb, 40) != 0)
			return;
		size_t n = exact_shortest_double(sb->data + sb->len, d);
		if (n) {
			sb->len += n;
			return;
		}
	}
	int prec = 1;
	uint64_t bits;
	memcpy(&bits, &d, sizeof(bits));
	if (!single && (bits & ((UINT64_C(1) << 52) - 1)) != 0) {
		shortest_double(text, sizeof(text), d);
	} else {
		for (; prec < (single ? 9 : 17); prec++) {
			snprintf(text, sizeof(text), "%.*g", prec, d);
			double back = single ? (double)strtof(text, NULL) : strtod(text, NULL);
			if (back == d && signbit(back) == signbit(d))
				break;
		}
		snprintf(text, sizeof(text), "%.*e", prec - 1, d);
		/* Those digits in plain notation where that is how people write the
		 * number (100, not 1e+02), in exponent notation for very large or
		 * small magnitudes (the rule of Python's repr). */
		int exp10 = atoi(strchr(text, 'e') + 1);
		if (exp10 >= -4 && exp10 < 16)
			snprintf(text, sizeof(text), "%.*f", prec - 1 - exp10 > 0 ? prec - 1 - exp10 : 0, d);
	}
	/* JSON readers take "-0" for the integer 0: keep the sign as -0.0 */
	if (style == TRACE_VALUE_JSON && d == 0 && signbit(d))
		snprintf(text, sizeof(text), "-0.0");
	strbuf_add(sb, text, strlen(text));
}

static void add_enum_labels(struct strbuf *sb, const bt_field *field, bool is_signed, enum trace_value_style style)
{
	bt_field_class_enumeration_mapping_label_array labels;
	uint64_t count = 0;
	bt_field_enumeration_get_mapping_labels_status st =
		is_signed ? bt_field_enumeration_signed_get_mapping_labels(field, &labels, &count)
			  : bt_field_enumeration_unsigned_get_mapping_labels(field, &labels, &count);
	if (st != BT_FIELD_ENUMERATION_GET_MAPPING_LABELS_STATUS_OK || count == 0)
		return;
	if (style == TRACE_VALUE_TEXT) {
		/* A label is text the trace's metadata chose (a TSDL string
		 * literal may hold any byte but NUL): escaped as an event name
		 * is, so a foreign trace cannot send escape sequences to the
		 * terminal through it. */
		strbuf_add(sb, " (", 2);
		for (uint64_t i = 0; i < count; i++) {
			if (i)
				strbuf_add(sb, ", ", 2);
			strbuf_add_terminal(sb, labels[i]);
		}
		strbuf_add(sb, ")", 1);
	}
}

/*
 * The type the tracer gives a %c (mark_char_t in its metadata): an 8-bit
 * unsigned enumeration with a label for each of the 256 values.
 */
static bool is_char_class(const bt_field_class *fc)
{
	return bt_field_class_get_type(fc) == BT_FIELD_CLASS_TYPE_UNSIGNED_ENUMERATION &&
	       bt_field_class_integer_get_field_value_range(fc) == 8 &&
	       bt_field_class_enumeration_get_mapping_count(fc) == 256;
}

/*
 * A %c: in the text view a C character literal ('a', '\n', '\'',
 * '\x01'), in JSON a string of that one byte (add_quoted's escapes; the
 * NUL byte, which ends a C string, as "\u0000").
 */
static void add_char(struct strbuf *sb, unsigned char c, enum trace_value_style style)
{
	if (style == TRACE_VALUE_OTLP) {
		strbuf_add_lit(sb, "{\"stringValue\": ");
		add_char(sb, c, TRACE_VALUE_JSON);
		strbuf_add_lit(sb, "}");
	} else if (style == TRACE_VALUE_JSON) {
		char one[2] = { (char)c, '\0' };
		if (c == 0)
			strbuf_add(sb, "\"\\u0000\"", 8);
		else
			strbuf_add_json_string(sb, one);
	} else if (c == '\'' || c == '\\') {
		strbuf_addf(sb, "'\\%c'", c);
	} else if (c == '\n' || c == '\t') {
		strbuf_addf(sb, "'\\%c'", c == '\n' ? 'n' : 't');
	} else if (c >= 0x20 && c < 0x7f) {
		strbuf_addf(sb, "'%c'", c);
	} else {
		strbuf_addf(sb, "'\\x%02x'", c);
	}
}

/* trace_value.h */
char trace_value_mark_string_tag(const bt_field *variant)
{
	const bt_field_class *fc = bt_field_borrow_class_const(variant);
	if (bt_field_class_variant_get_option_count(fc) != 4)
		return 0;
	static const char *const names[4] = { "empty", "text", "null", "truncated" };
	for (uint64_t i = 0; i < 4; i++) {
		const bt_field_class_variant_option *o = bt_field_class_variant_borrow_option_by_index_const(fc, i);
		if (strcmp(bt_field_class_variant_option_get_name(o), names[i]) != 0 ||
		    bt_field_class_get_type(bt_field_class_variant_option_borrow_field_class_const(o)) !=
			    BT_FIELD_CLASS_TYPE_STRING)
			return 0;
	}
	const uint64_t selected = bt_field_variant_get_selected_option_index(variant);
	return selected == 2 ? 'n' : selected == 3 ? 'c' : 0;
}

/* A variant's value: its selected option, or mark's NULL or cut %s. */
static void append_variant(struct strbuf *sb, const bt_field *variant, enum trace_value_style style)
{
	const bt_field *inner = bt_field_variant_borrow_selected_option_field_const(variant);
	const char tag = trace_value_mark_string_tag(variant);
	if (tag == 'n')
		trace_value_append_null(sb, style);
	else if (tag == 'c')
		trace_value_append_cut_string(sb, bt_field_string_get_value(inner), style);
	else
		trace_value_append(sb, inner, style);
}

/*
 * The OTLP AnyValue of the values that are not a scalar of the JSON text
 * (true if it appended one): a bool, a bit array (its hex as a string),
 * an array (arrayValue), a structure (kvlistValue), an option or a
 * variant (the selected value; an absent option is the empty AnyValue),
 * a type of no known mapping (the empty AnyValue).
 */
static bool append_otlp_compound(struct strbuf *sb, const bt_field *field, bt_field_class_type t,
				 const bt_field_class *fc)
{
	if (t == BT_FIELD_CLASS_TYPE_BOOL) {
		strbuf_addf(sb, "{\"boolValue\": %s}", bt_field_bool_get_value(field) ? "true" : "false");
	} else if (t == BT_FIELD_CLASS_TYPE_BIT_ARRAY) {
		strbuf_addf(sb, "{\"stringValue\": \"0x%" PRIx64 "\"}", bt_field_bit_array_get_value_as_integer(field));
	} else if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_ARRAY)) {
		uint64_t n = bt_field_array_get_length(field);
		strbuf_add_lit(sb, "{\"arrayValue\": {\"values\": [");
		for (uint64_t i = 0; i < n; i++) {
			if (i)
				strbuf_add_lit(sb, ", ");
			trace_value_append(sb, bt_field_array_borrow_element_field_by_index_const(field, i), TRACE_VALUE_OTLP);
		}
		strbuf_add_lit(sb, "]}}");
	} else if (t == BT_FIELD_CLASS_TYPE_STRUCTURE) {
		strbuf_add_lit(sb, "{\"kvlistValue\": {\"values\": ");
		trace_payload_append(sb, field, TRACE_VALUE_OTLP);
		strbuf_add_lit(sb, "}}");
	} else if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_OPTION)) {
		const bt_field *inner = bt_field_option_borrow_field_const(field);
		if (inner)
			trace_value_append(sb, inner, TRACE_VALUE_OTLP);
		else
			strbuf_add_lit(sb, "{}");
	} else if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_VARIANT)) {
		append_variant(sb, field, TRACE_VALUE_OTLP);
	} else if (is_char_class(fc) || bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_INTEGER) ||
		   t == BT_FIELD_CLASS_TYPE_SINGLE_PRECISION_REAL || t == BT_FIELD_CLASS_TYPE_DOUBLE_PRECISION_REAL ||
		   t == BT_FIELD_CLASS_TYPE_STRING) {
		return false;   /* scalars: trace_value_append's own branches */
	} else {
		strbuf_add_lit(sb, "{}");
	}
	return true;
}

void trace_value_append(struct strbuf *sb, const bt_field *field, enum trace_value_style style)
{
	bt_field_class_type t = bt_field_get_class_type(field);
	const bt_field_class *fc = bt_field_borrow_class_const(field);
	const bool json = style == TRACE_VALUE_JSON;

	if (style == TRACE_VALUE_OTLP && append_otlp_compound(sb, field, t, fc))
		return;
	if (t == BT_FIELD_CLASS_TYPE_BOOL) {
		strbuf_addf(sb, "%s", bt_field_bool_get_value(field) ? "true" : "false");
	} else if (t == BT_FIELD_CLASS_TYPE_BIT_ARRAY) {
		strbuf_addf(sb, json ? "\"0x%" PRIx64 "\"" : "0x%" PRIx64, bt_field_bit_array_get_value_as_integer(field));
	} else if (is_char_class(fc)) {
		add_char(sb, (unsigned char)bt_field_integer_unsigned_get_value(field), style);
	} else if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER)) {
		uint64_t v = bt_field_integer_unsigned_get_value(field);
		add_unsigned(sb, v, bt_field_class_integer_get_preferred_display_base(fc), style);
		if (t == BT_FIELD_CLASS_TYPE_UNSIGNED_ENUMERATION)
			add_enum_labels(sb, field, false, style);
	} else if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_SIGNED_INTEGER)) {
		add_signed(sb, bt_field_integer_signed_get_value(field),
			   bt_field_class_integer_get_preferred_display_base(fc), style);
		if (t == BT_FIELD_CLASS_TYPE_SIGNED_ENUMERATION)
			add_enum_labels(sb, field, true, style);
	} else if (t == BT_FIELD_CLASS_TYPE_SINGLE_PRECISION_REAL) {
		add_double(sb, bt_field_real_single_precision_get_value(field), true, style);
	} else if (t == BT_FIELD_CLASS_TYPE_DOUBLE_PRECISION_REAL) {
		add_double(sb, bt_field_real_double_precision_get_value(field), false, style);
	} else if (t == BT_FIELD_CLASS_TYPE_STRING) {
		/*
		 * The length, not the NUL: babeltrace2 2.0.4 empties a reused
		 * string field by setting its length to 0 and leaves the old
		 * text in place (an empty string would show an earlier event's).
		 */
		const char *s = bt_field_string_get_value(field);
		trace_value_append_string(sb, s && bt_field_string_get_length(field) > 0 ? s : "", style);
	} else if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_ARRAY)) {
		uint64_t n = bt_field_array_get_length(field);
		strbuf_add(sb, "[", 1);
		for (uint64_t i = 0; i < n; i++) {
			strbuf_add(sb, i ? ", " : (json ? "" : " "), i ? 2 : (json ? 0 : 1));
			trace_value_append(sb, bt_field_array_borrow_element_field_by_index_const(field, i), style);
		}
		strbuf_add(sb, json || n == 0 ? "]" : " ]", json || n == 0 ? 1 : 2);
	} else if (t == BT_FIELD_CLASS_TYPE_STRUCTURE) {
		uint64_t n = bt_field_class_structure_get_member_count(fc);
		strbuf_add(sb, "{", 1);
		for (uint64_t i = 0; i < n; i++) {
			const char *name = bt_field_class_structure_member_get_name(
				bt_field_class_structure_borrow_member_by_index_const(fc, i));
			if (i)
				strbuf_add(sb, ", ", 2);
			else if (!json)
				strbuf_add(sb, " ", 1);
			if (json) {
				strbuf_add_json_string(sb, name);
				strbuf_add(sb, ": ", 2);
			} else {
				strbuf_addf(sb, "%s = ", cli_text(name));
			}
			trace_value_append(sb, bt_field_structure_borrow_member_field_by_index_const(field, i), style);
		}
		strbuf_add(sb, json || n == 0 ? "}" : " }", json || n == 0 ? 1 : 2);
	} else if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_OPTION)) {
		const bt_field *inner = bt_field_option_borrow_field_const(field);
		if (inner)
			trace_value_append(sb, inner, style);
		else
			strbuf_addf(sb, json ? "null" : "(none)");
	} else if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_VARIANT)) {
		append_variant(sb, field, style);
	} else {
		strbuf_addf(sb, json ? "null" : "(?)");
	}
}

/* An unsigned enumeration mapping `label` to exactly [lower, upper]. */
static bool enum_maps(const bt_field_class *fc, const char *label, uint64_t lower, uint64_t upper)
{
	uint64_t n = bt_field_class_enumeration_get_mapping_count(fc);
	for (uint64_t i = 0; i < n; i++) {
		const bt_field_class_enumeration_unsigned_mapping *m =
			bt_field_class_enumeration_unsigned_borrow_mapping_by_index_const(fc, i);
		if (strcmp(bt_field_class_enumeration_mapping_get_label(
				   bt_field_class_enumeration_unsigned_mapping_as_mapping_const(m)),
			   label) != 0)
			continue;
		const bt_integer_range_set_unsigned *rs = bt_field_class_enumeration_unsigned_mapping_borrow_ranges_const(m);
		if (bt_integer_range_set_get_range_count(bt_integer_range_set_unsigned_as_range_set_const(rs)) != 1)
			return false;
		const bt_integer_range_unsigned *r = bt_integer_range_set_unsigned_borrow_range_by_index_const(rs, 0);
		return bt_integer_range_unsigned_get_lower(r) == lower && bt_integer_range_unsigned_get_upper(r) == upper;
	}
	return false;
}

/* Option i of variant class fc is a string named `name`. */
static bool string_option(const bt_field_class *fc, uint64_t i, const char *name)
{
	const bt_field_class_variant_option *o = bt_field_class_variant_borrow_option_by_index_const(fc, i);
	return strcmp(bt_field_class_variant_option_get_name(o), name) == 0 &&
	       bt_field_class_get_type(bt_field_class_variant_option_borrow_field_class_const(o)) ==
		       BT_FIELD_CLASS_TYPE_STRING;
}

/*
 * Whether member i of the payload structure class fc (of n members) is the
 * length byte mark's tracer writes before a %s (src/tracer/metadata.c
 * put_field, docs/tracer.md): an 8-bit unsigned enumeration
 * { empty = 0, text = 1 ... 253, null = 254, truncated = 255 } directly
 * followed by the variant it selects, of four strings of those names (an
 * older mark's: { empty = 0, text = 1 ... 255 }, two strings "empty" and
 * "text").  The string is the value;
 * that byte is not shown.  Any other selector is a field of the trace's
 * own and is shown, with its labels, as babeltrace2 does (found by a
 * review: every selector was hidden, so a foreign trace's
 * `enum {RETRY_COUNT, ERROR_CODE} kind; variant <kind> ...` lost its kind).
 * Members i and i + 1 only: constant time per member, so a payload costs
 * time linear in its members.
 */
static bool is_mark_length_byte(const bt_field_class *fc, uint64_t i, uint64_t n)
{
	if (i + 1 >= n)
		return false;
	const bt_field_class *len = bt_field_class_structure_member_borrow_field_class_const(
		bt_field_class_structure_borrow_member_by_index_const(fc, i));
	if (bt_field_class_get_type(len) != BT_FIELD_CLASS_TYPE_UNSIGNED_ENUMERATION ||
	    bt_field_class_integer_get_field_value_range(len) != 8)
		return false;
	const uint64_t mappings = bt_field_class_enumeration_get_mapping_count(len);
	const bool tagged = mappings == 4;
	if ((mappings != 2 && !tagged) || !enum_maps(len, "empty", 0, 0) ||
	    !enum_maps(len, "text", 1, tagged ? MARK_TF_STRING_TEXT_MAX : 255) ||
	    (tagged && (!enum_maps(len, "null", MARK_TF_STRING_NULL, MARK_TF_STRING_NULL) ||
			!enum_maps(len, "truncated", MARK_TF_STRING_CUT, MARK_TF_STRING_CUT))))
		return false;
	const bt_field_class *var = bt_field_class_structure_member_borrow_field_class_const(
		bt_field_class_structure_borrow_member_by_index_const(fc, i + 1));
	if (!bt_field_class_type_is(bt_field_class_get_type(var), BT_FIELD_CLASS_TYPE_VARIANT_WITH_SELECTOR_FIELD) ||
	    bt_field_class_variant_get_option_count(var) != mappings || !string_option(var, 0, "empty") ||
	    !string_option(var, 1, "text") ||
	    (tagged && (!string_option(var, 2, "null") || !string_option(var, 3, "truncated"))))
		return false;
	const bt_field_path *path = bt_field_class_variant_with_selector_field_borrow_selector_field_path_const(var);
	if (!path || bt_field_path_get_root_scope(path) != BT_FIELD_PATH_SCOPE_EVENT_PAYLOAD ||
	    bt_field_path_get_item_count(path) != 1)
		return false;
	const bt_field_path_item *item = bt_field_path_borrow_item_by_index_const(path, 0);
	return bt_field_path_item_get_type(item) == BT_FIELD_PATH_ITEM_TYPE_INDEX &&
	       bt_field_path_item_index_get_index(item) == i;
}

void trace_payload_append(struct strbuf *sb, const bt_field *payload, enum trace_value_style style)
{
	const bool otlp = style == TRACE_VALUE_OTLP;
	if (!payload || bt_field_get_class_type(payload) != BT_FIELD_CLASS_TYPE_STRUCTURE) {
		if (style != TRACE_VALUE_TEXT)
			strbuf_add(sb, otlp ? "[]" : "{}", 2);
		return;
	}
	const bt_field_class *fc = bt_field_borrow_class_const(payload);
	uint64_t n = bt_field_class_structure_get_member_count(fc);
	if (style != TRACE_VALUE_TEXT)
		strbuf_add(sb, otlp ? "[" : "{", 1);
	bool first = true;
	for (uint64_t i = 0; i < n; i++) {
		if (is_mark_length_byte(fc, i, n))
			continue;
		const char *name = bt_field_class_structure_member_get_name(
			bt_field_class_structure_borrow_member_by_index_const(fc, i));
		const bt_field *f = bt_field_structure_borrow_member_field_by_index_const(payload, i);
		if (otlp) {
			/* a KeyValue */
			if (!first)
				strbuf_add_lit(sb, ", ");
			strbuf_add_lit(sb, "{\"key\": ");
			strbuf_add_json_string(sb, name);
			strbuf_add_lit(sb, ", \"value\": ");
		} else if (style == TRACE_VALUE_JSON) {
			if (!first)
				strbuf_add(sb, ", ", 2);
			strbuf_add_json_string(sb, name);
			strbuf_add(sb, ": ", 2);
		} else {
			strbuf_addf(sb, "%s%s=", first ? "" : " ", cli_text(name));
		}
		first = false;
		trace_value_append(sb, f, style);
		if (otlp)
			strbuf_add_lit(sb, "}");
	}
	if (style != TRACE_VALUE_TEXT)
		strbuf_add(sb, otlp ? "]" : "}", 1);
}

/* The typed value of one field (trace_payload_args_each): a variant or an
 * option is its selected field; a composite value is its JSON text. */
static void field_arg(const bt_field *f, struct trace_arg *a, struct strbuf *scratch)
{
	bt_field_class_type t = bt_field_get_class_type(f);
	if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_VARIANT) && trace_value_mark_string_tag(f) == 'n') {
		a->type = TRACE_ARG_TEXT;   /* a NULL %s: JSON null */
		a->s = "null";
		return;
	}
	while (f && (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_VARIANT) ||
		     bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_OPTION))) {
		f = bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_VARIANT)
			    ? bt_field_variant_borrow_selected_option_field_const(f)
			    : bt_field_option_borrow_field_const(f);
		if (f)
			t = bt_field_get_class_type(f);
	}
	const bt_field_class *fc = f ? bt_field_borrow_class_const(f) : NULL;
	if (!f) {
		a->type = TRACE_ARG_TEXT;
		a->s = "null";
	} else if (t == BT_FIELD_CLASS_TYPE_BOOL) {
		a->type = TRACE_ARG_BOOL;
		a->u = bt_field_bool_get_value(f) ? 1 : 0;
	} else if (is_char_class(fc)) {
		a->type = TRACE_ARG_CHAR;
		a->u = bt_field_integer_unsigned_get_value(f);
	} else if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER)) {
		a->u = bt_field_integer_unsigned_get_value(f);
		a->type = bt_field_class_integer_get_preferred_display_base(fc) ==
					  BT_FIELD_CLASS_INTEGER_PREFERRED_DISPLAY_BASE_DECIMAL
				  ? TRACE_ARG_UINT
				  : TRACE_ARG_HEX;
	} else if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_SIGNED_INTEGER)) {
		a->type = TRACE_ARG_INT;
		a->i = bt_field_integer_signed_get_value(f);
	} else if (t == BT_FIELD_CLASS_TYPE_SINGLE_PRECISION_REAL) {
		a->type = TRACE_ARG_DOUBLE;
		a->d = bt_field_real_single_precision_get_value(f);
	} else if (t == BT_FIELD_CLASS_TYPE_DOUBLE_PRECISION_REAL) {
		a->type = TRACE_ARG_DOUBLE;
		a->d = bt_field_real_double_precision_get_value(f);
	} else if (t == BT_FIELD_CLASS_TYPE_STRING) {
		/* the length, not the NUL: see trace_value_append */
		const char *text = bt_field_string_get_value(f);
		a->type = TRACE_ARG_STRING;
		a->s = text && bt_field_string_get_length(f) > 0 ? text : "";
	} else {
		strbuf_reset(scratch);
		trace_value_append(scratch, f, TRACE_VALUE_JSON);
		a->type = TRACE_ARG_TEXT;
		a->s = scratch->data && !scratch->failed ? scratch->data : "null";
	}
}

void trace_payload_args_each(const bt_field *payload, void (*fn)(const struct trace_arg *a, void *ctx), void *ctx,
			     struct strbuf *scratch)
{
	if (!payload || bt_field_get_class_type(payload) != BT_FIELD_CLASS_TYPE_STRUCTURE)
		return;
	const bt_field_class *fc = bt_field_borrow_class_const(payload);
	uint64_t n = bt_field_class_structure_get_member_count(fc);
	for (uint64_t i = 0; i < n; i++) {
		if (is_mark_length_byte(fc, i, n))
			continue;
		struct trace_arg a = { .name = bt_field_class_structure_member_get_name(
					       bt_field_class_structure_borrow_member_by_index_const(fc, i)) };
		field_arg(bt_field_structure_borrow_member_field_by_index_const(payload, i), &a, scratch);
		fn(&a, ctx);
	}
}

/* ---- scalars for the native reader (trace_native.c): the same text as above ---- */

void trace_value_append_integer(struct strbuf *sb, uint64_t raw, bool is_signed, unsigned base,
				enum trace_value_style style)
{
	/* bt_field_class_integer_preferred_display_base's values are the bases themselves. */
	bt_field_class_integer_preferred_display_base b = (bt_field_class_integer_preferred_display_base)base;
	if (is_signed)
		add_signed(sb, (int64_t)raw, b, style);
	else
		add_unsigned(sb, raw, b, style);
}

void trace_value_append_real(struct strbuf *sb, double d, enum trace_value_style style)
{
	add_double(sb, d, false, style);
}

void trace_value_append_char(struct strbuf *sb, unsigned char c, enum trace_value_style style)
{
	add_char(sb, c, style);
}

void trace_value_append_null(struct strbuf *sb, enum trace_value_style style)
{
	if (style == TRACE_VALUE_OTLP)
		strbuf_add_lit(sb, "{}");
	else if (style == TRACE_VALUE_JSON)
		strbuf_add_lit(sb, "null");
	else
		strbuf_add_lit(sb, "NULL");
}

void trace_value_append_cut_string(struct strbuf *sb, const char *text, enum trace_value_style style)
{
	const size_t len = text ? strlen(text) : 0;
	if (style != TRACE_VALUE_TEXT || len < 3 || strcmp(text + len - 3, "...") != 0) {
		trace_value_append_string(sb, text ? text : "", style);
		return;
	}
	char *kept = strndup(text, len - 3);
	if (!kept) {
		sb->failed = 1;
		return;
	}
	strbuf_add_c_string(sb, kept);
	strbuf_add_lit(sb, "...");
	free(kept);
}

void trace_value_append_string(struct strbuf *sb, const char *text, enum trace_value_style style)
{
	if (style == TRACE_VALUE_OTLP) {
		strbuf_add_lit(sb, "{\"stringValue\": ");
		strbuf_add_json_string(sb, text);
		strbuf_add_lit(sb, "}");
	} else if (style == TRACE_VALUE_JSON)
		strbuf_add_json_string(sb, text);
	else
		strbuf_add_c_string(sb, text);
}
