/*
 * The program the USDT tests trace with real tools (bpftrace, perf, gdb,
 * readelf).  Built once per site kind.
 *
 *   usdt_target run N        N hits of usdt_hit (and one of usdt_noargs, prov_hit)
 *   usdt_target arm N        mark_arm("usdt_*") and "usdtprov:*" first, then as run
 *   usdt_target wait-sem N   generic kind: wait until a tool increments the
 *                            semaphore of usdt_hit, make N hits, then wait until
 *                            the tool detaches (semaphore back to 0); prints each step
 *   usdt_target wait-armed N wait until usdt_hit is armed from outside
 *                            (`mark enable PID usdt_hit`), then N hits
 *
 * Hit i passes (i, -3*i, "usdt-string", &anchor, i * 1000000007ULL), so a
 * tool can check every argument: sum(arg0) = N(N-1)/2, min(arg1) = -3(N-1).
 */
#include <mark/mark.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void usdt_target_prov_hit(int v);   /* usdt_target_prov.c: provider "usdtprov" */

static int anchor;

static void hit(int i)
{
	MARK(usdt_hit, "%d %ld %s %p %llu", i, -3L * i, "usdt-string", (void *)&anchor,
	     (unsigned long long)i * 1000000007ULL);
}

static int find_site(const struct mark_site_info *s, void *arg)
{
	if (!s->is_enabled_test) {
		*(const void **)arg = s->address;
		return 1;
	}
	return 0;
}

static int find_marker(const struct mark_marker *m, void *arg)
{
	return mark_marker_sites(m, find_site, arg);
}

/* The generic site's flag, which is also its USDT semaphore. */
static volatile unsigned short *semaphore(void)
{
	const void *addr = NULL;
	mark_list("usdt_hit", find_marker, &addr);
	return (volatile unsigned short *)addr;
}

static int site_armed(const struct mark_site_info *s, void *arg)
{
	if (!s->is_enabled_test && s->armed)
		*(int *)arg = 1;
	return 0;
}

static int marker_armed(const struct mark_marker *m, void *arg)
{
	return mark_marker_sites(m, site_armed, arg);
}

static int wait_for(volatile unsigned short *sem, int nonzero, const char *what)
{
	for (int ms = 0; ms < 30000; ms += 5) {
		if ((__atomic_load_n(sem, __ATOMIC_RELAXED) != 0) == nonzero)
			return 0;
		struct timespec ts = { 0, 5 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	printf("FAIL: timed out waiting for %s (semaphore = %u)\n", what, *sem);
	return 1;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: usdt_target run|arm|wait-sem|wait-armed N\n");
		return 2;
	}
	int n = atoi(argv[2]);
	if (strcmp(argv[1], "arm") == 0) {
		if (mark_arm("usdt_*") < 0 || mark_arm("usdtprov:*") < 0) {
			fprintf(stderr, "mark_arm: %s\n", mark_last_error());
			return 1;
		}
	} else if (strcmp(argv[1], "wait-sem") == 0) {
		volatile unsigned short *sem = semaphore();
		if (!sem) {
			printf("FAIL: no site for usdt_hit\n");
			return 1;
		}
		if (wait_for(sem, 1, "a tool to attach"))
			return 1;
		printf("attached: semaphore = %u\n", *sem);
		fflush(stdout);
		/* The kernel sets the semaphore when it registers the uprobe, which
		 * can be a moment before the tool has connected its program to it;
		 * hits in that window fire the site but nobody counts them. */
		struct timespec settle = { 0, 300 * 1000 * 1000 };
		nanosleep(&settle, NULL);
		for (int i = 0; i < n; i++)
			hit(i);
		printf("hits done\n");
		fflush(stdout);
		if (wait_for(sem, 0, "the tool to detach"))
			return 1;
		printf("detached: semaphore = %u\n", *sem);
		return 0;
	} else if (strcmp(argv[1], "wait-armed") == 0) {
		int armed = 0;
		for (int ms = 0; !armed; ms += 5) {
			if (ms > 30000) {
				printf("FAIL: usdt_hit was never armed\n");
				return 1;
			}
			mark_list("usdt_hit", marker_armed, &armed);
			struct timespec ts = { 0, 5 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
		printf("armed\n");
		for (int i = 0; i < n; i++)
			hit(i);
		printf("done %d\n", n);
		return 0;
	} else if (strcmp(argv[1], "run") != 0) {
		fprintf(stderr, "usage: usdt_target run|arm|wait-sem|wait-armed N\n");
		return 2;
	}
	for (int i = 0; i < n; i++)
		hit(i);
	MARK(usdt_noargs, "");
	usdt_target_prov_hit(42);
	printf("done %d\n", n);
	return 0;
}
