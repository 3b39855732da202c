/*
 * %ls and %lc in marker formats (run_tracer_test.py, scenario wide): valid
 * printf conversions the compiler accepts, which libmark refuses when the
 * marker registers, so this program prints that on stderr at load time.
 * It has a program of its own because the other scenarios of tracer_prog
 * require an empty stderr.  Usage: tracer_wide_prog [N]: N rounds of
 * t_wide_s (L"hello"), t_wide_c (U+263A, whose low byte is ':') and t_seq
 * (the round number).
 */
#include <mark/mark.h>

#include <stdlib.h>
#include <wchar.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 5;
	const wchar_t *ws = L"hello";
	wint_t wc = 0x263a;
	for (long i = 0; i < n; i++) {
		MARK(t_wide_s, "%ls", ws);
		MARK(t_wide_c, "%lc", wc);
		MARK(t_seq, "%ld", i);
	}
	return 0;
}
