// Markers in C++: inline functions, templates and class members, in a shared object.
#include <mark/mark.h>
#include "cxx_lib.h"

int cxx_lib_call(int v)
{
	return cxx_inline(v) + cxx_template<long>(v) + Widget().poke(v);
}
