/*
 * A program for the multi-process and --follow tests
 * (tests/agent/test_multi.py): it records one event per request, so the
 * test decides exactly which events exist and in which order, through
 * pipes, never through sleeps.
 *
 *   step_target COMM
 *
 * Sets its name (/proc/PID/comm) to COMM, so that `mark record --name`
 * finds exactly the test's processes, prints "ready PID" once running, then
 * reads lines from stdin:
 *   "N"      fires multi_step(N, pid) once and answers "done N" on stdout:
 *            the answer is written after the event was recorded, so an
 *            event the test asks of another process afterwards is later;
 *   "exec"   executes this program again (same pid, same stdin and
 *            stdout), which prints "ready PID" again: the test writes no
 *            further line before it, so stdio has read nothing beyond
 *            this one that the exec would throw away;
 *   EOF      exits with status 0.
 */
#define _GNU_SOURCE
#include <mark/mark.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: step_target COMM\n");
		return 2;
	}
	if (prctl(PR_SET_NAME, argv[1], 0, 0, 0) != 0) {
		perror("prctl(PR_SET_NAME)");
		return 1;
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	char line[64];
	while (fgets(line, sizeof(line), stdin)) {
		if (strcmp(line, "exec\n") == 0) {
			execl("/proc/self/exe", argv[0], argv[1], (char *)NULL);
			perror("step_target: execl(/proc/self/exe)");
			return 1;
		}
		int n = atoi(line);
		MARK(multi_step, "%d %d", n, (int)getpid());
		printf("done %d\n", n);
		fflush(stdout);
	}
	return 0;
}
