/* Instantiates the LTTng-UST probe and the tracepoint definitions. */
#define TRACEPOINT_CREATE_PROBES
#define TRACEPOINT_DEFINE
#include "bench_tp.h"
