/* included by cpp.d through -I */
#define CPP_ID_TYPE unsigned int
