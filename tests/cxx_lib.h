#ifndef CXX_LIB_H
#define CXX_LIB_H
#include <mark/mark.h>
#include <string>

inline int cxx_inline(int v)
{
	MARK(cxx_inline, "%d", v);
	return MARK_ENABLED(cxx_inline) ? 1 : 0;
}

template <class T> int cxx_template(T v)
{
	MARK(cxx_template, "%ld %s", (long)v, "tmpl");
	return 0;
}

struct Widget {
	std::string name = "widget";
	int poke(int v)
	{
		MARK(cxx_member, "%d %s %p", v, name.c_str(), this);
		return 0;
	}
};

int cxx_lib_call(int v);
#endif
