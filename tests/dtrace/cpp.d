/* Needs -C: #include through -I, #define, #if on -D. */
#include "cpp_types.h"
#define Oid unsigned int
#define LWLockMode int

provider cpp {
	probe lock__acquire(Oid rel, LWLockMode mode, CPP_ID_TYPE id);
#if defined(WITH_EXTRA)
	probe extra(const char *what);
#endif
#ifdef NOT_DEFINED
	this is not D and must disappear
#endif
};
