// The USDT target compiled as C++: its descriptors take the C++ path of mark.h.
#include "usdt_target.c"
