/*
 * A program that does not link libmark loads it at run time, through a
 * library with markers (a plug-in): libmark's initial-exec TLS must fit
 * the static TLS that glibc keeps for dlopen, its constructors must run,
 * and arming and probes must work from there.  Built without -lmark.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>

static int hits, last_len;

static void probe(const void *m, void *priv, const uint64_t *args)
{
	(void)m, (void)priv;
	hits++;
	last_len = (int)args[0];
}

int main(void)
{
	void *plugin = dlopen(DL_MARKERS_PATH, RTLD_NOW | RTLD_LOCAL);
	if (!plugin) {
		fprintf(stderr, "FAIL: dlopen of a library that needs libmark: %s\n", dlerror());
		return 1;
	}
	void *libmark = dlopen(LIBMARK_PATH, RTLD_NOW | RTLD_NOLOAD);
	int (*arm)(const char *) = libmark ? (int (*)(const char *))dlsym(libmark, "mark_arm") : NULL;
	int (*reg)(const char *, void (*)(const void *, void *, const uint64_t *), void *) =
		libmark ? (int (*)(const char *, void (*)(const void *, void *, const uint64_t *), void *))
				  dlsym(libmark, "mark_probe_register_fast")
			: NULL;
	int (*rx)(int, const char *) = (int (*)(int, const char *))dlsym(plugin, "dl_rx_hit");
	if (!arm || !reg || !rx) {
		fprintf(stderr, "FAIL: libmark was not loaded with the plug-in, or symbols are missing\n");
		return 1;
	}
	int rc_reg = reg("dl_rx", probe, NULL), rc_arm = arm("dl_*");
	/* Two sites: MARK and MARK_ENABLED.  aarch64's gcc may emit one twice
	 * (a duplicated block; each copy has its own entry and is armed). */
#if defined(__x86_64__)
	const int sites_ok = rc_arm == 2;
#else
	const int sites_ok = rc_arm >= 2;
#endif
	if (rc_reg < 0 || !sites_ok) {
		fprintf(stderr, "FAIL: registering the probe (%d) or arming dl_rx (%d sites, expected 2)\n",
			rc_reg, rc_arm);
		return 1;
	}
	int enabled = rx(42, "plugin");
	if (hits != 1 || last_len != 42 || enabled != 1) {
		fprintf(stderr, "FAIL: hits %d, len %d, enabled %d; expected 1, 42, 1\n", hits, last_len, enabled);
		return 1;
	}
	printf("dlopened libmark: probe called with len %d\n", last_len);
	return 0;
}
