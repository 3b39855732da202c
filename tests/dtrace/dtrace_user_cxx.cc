// The generated headers compile as C++ too (one probe per function: see
// docs/usdt.md about clang++ 14 and several asm-goto sites in one function).
#include "basic.h"
#include "types.h"

struct foo { int a; };

void cxx_done(int id, const char *status);
void cxx_strings(const char *s);
void cxx_pointers(foo *f);
bool cxx_enabled();

void cxx_done(int id, const char *status) { BASIC_TRANSACTION_DONE(id, status); }
void cxx_strings(const char *s) { TYPES_STRINGS(s, s, (unsigned char *)nullptr, nullptr, "e"); }
void cxx_pointers(foo *f) { TYPES_TRANSLATED(f, 1); }
bool cxx_enabled() { return BASIC_TICK_ENABLED(); }

int main()
{
	cxx_done(1, "x");
	cxx_strings("s");
	cxx_pointers(nullptr);
	return cxx_enabled() ? 1 : 0;   // nothing armed
}
