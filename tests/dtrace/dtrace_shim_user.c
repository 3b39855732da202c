/*
 * A program linked the way `./configure DTRACE=mark-dtrace` links one: the
 * object of `mark dtrace -G` and no libmark.  The object loads libmark at
 * start-up; the program reaches libmark's API only through dlsym, as a
 * tracer attaching from outside would.  Checks that the markers registered
 * (they are listed), fire when armed, and stay silent when disarmed.
 *
 * usage: dtrace_shim_user
 */
#include "basic.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int hits, last_id;
static char last_status[32];

static void capture(const struct mark_marker *m, void *priv, const uint64_t *args)
{
	(void)m;
	(void)priv;
	hits++;
	last_id = (int)args[0];
	snprintf(last_status, sizeof(last_status), "%s", (const char *)(uintptr_t)args[1]);
}

static void fire(int id, const char *status)
{
	BASIC_TRANSACTION_DONE(id, status);
}

int main(void)
{
	/* RTLD_NOLOAD: libmark must already be in the process, loaded by the -G object. */
	void *h = dlopen("libmark.so.0", RTLD_NOW | RTLD_NOLOAD);
	if (!h) {
		printf("FAIL: the -G object did not load libmark: %s\n", dlerror());
		return 1;
	}
	int (*arm)(const char *) = (int (*)(const char *))dlsym(h, "mark_arm");
	int (*disarm)(const char *) = (int (*)(const char *))dlsym(h, "mark_disarm");
	int (*reg)(const char *, mark_fast_probe_fn, void *) =
		(int (*)(const char *, mark_fast_probe_fn, void *))dlsym(h, "mark_probe_register_fast");
	if (!arm || !disarm || !reg) {
		printf("FAIL: libmark lacks mark_arm/mark_probe_register_fast\n");
		return 1;
	}
	int fails = 0;
	if (reg("basic:transaction-done", capture, NULL) != 0) {
		printf("FAIL: registering a probe on basic:transaction-done\n");
		fails++;
	}
	fire(1, "off");
	int n = arm("basic:*");
	if (n < 1) {
		printf("FAIL: mark_arm(\"basic:*\") armed %d sites: the markers did not register\n", n);
		fails++;
	}
	fire(2, "on");
	fire(3, NULL);
	disarm("basic:*");
	fire(4, "off again");
	if (hits != 2 || last_id != 3 || strcmp(last_status, "(null)") != 0) {
		printf("FAIL: hits=%d last_id=%d last_status=%s, expected 2, 3, (null)\n", hits, last_id, last_status);
		fails++;
	}
	if (fails)
		return 1;
	printf("ok: %d hits through the -G object\n", hits);
	return 0;
}
