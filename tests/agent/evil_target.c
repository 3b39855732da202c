/*
 * A hostile target for the escaping test (agent_cli_escape): its marker name,
 * format and source path and its process name carry terminal control
 * sequences (ESC [ ... , OSC ... BEL, CR, DEL, a C1 CSI byte).  Every `mark`
 * command that prints them must escape them.
 *
 *   evil_target [--exit-after MS]
 *
 * First re-executes itself with an argv[0] holding escapes too (the command
 * line `mark ps` shows).  Prints "ready PID" once running; fires its marker
 * until SIGTERM (exit 0).
 */
#define _GNU_SOURCE
#include <mark/mark.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* The file name the marker's site records (gcc rejects a CR in it). */
#line 40 "/src/evil\x1b]0;pwned\x07\x7f.c"
static void fire(int i)
{
	/* MARK() takes an identifier; MARK__SITE takes the name as a string,
	 * which is how a crafted object could name a marker anything. */
	MARK__SITE(MARK_PROVIDER, "evil\x1b[2J\r\x07name", "evil_name", 0, "i, \"arg\\x1b[1m\"", "%d \x1b[31mred\x9b %s", i,
		   "arg\x1b[1m");
}

int main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "--hostile-argv0") != 0) {
		char *args[5] = { "ev\x1b[5mil\r", "--hostile-argv0", NULL, NULL, NULL };
		if (argc > 2) {
			args[2] = argv[1];
			args[3] = argv[2];
		}
		execv("/proc/self/exe", args);
		perror("evil_target: execv /proc/self/exe");
		return 1;
	}
	long exit_after = -1;
	if (argc > 3 && strcmp(argv[2], "--exit-after") == 0)
		exit_after = atol(argv[3]);
	prctl(PR_SET_NAME, "ev\x1b[7mil\r", 0, 0, 0);
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	struct timespec start, now, tick = { 0, 2000000 };
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (int i = 0; !stop; i++) {
		fire(i);
		nanosleep(&tick, NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (exit_after >= 0 &&
		    (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 >= exit_after)
			break;
	}
	return 0;
}
