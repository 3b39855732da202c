/* Stand-in for ruby's vm_opts.h (the only setting probes.d reads). */
#define VM_COLLECT_USAGE_DETAILS 0
