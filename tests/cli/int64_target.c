/*
 * 64-bit integers at and around 2^53, the largest magnitude a JSON reader
 * that parses numbers as doubles (every JavaScript viewer) keeps exactly,
 * and at the ends of their types (test_cli.py case export_int64): each
 * event records one unsigned and one signed value, the unsigned one again
 * as a pointer, and a 32-bit value that always stays a JSON number.
 */
#include <mark/mark.h>

#include <stdint.h>

int main(void)
{
	const uint64_t two53 = UINT64_C(1) << 53;
	const unsigned long u[] = { two53 - 1, two53, two53 + 1, UINT64_MAX, 0, 0x7f0012345678u };
	const long s[] = { -(long)two53, -(long)two53 - 1, INT64_MIN, INT64_MAX, (long)two53 + 1, -1 };
	for (unsigned i = 0; i < sizeof(u) / sizeof(u[0]); i++) {
		void *p = (void *)(uintptr_t)u[i];
		unsigned small = UINT32_MAX - i;
		MARK(int64_values, "u %lu s %ld p %p small %u", u[i], s[i], p, small);
	}
	return 0;
}
