// usdt_target_prov.c compiled as C++.
#include "usdt_target_prov.c"
