// expect: include_without_C.d:2: error: preprocessor directive "#include" needs the C preprocessor: run with -C (and -I/-D as needed)
#include "x.h"
provider p { probe x(); };
