/*
 * tests/process/fork_exit_children.c - a program with libmark linked (one
 * site, nothing armed) that forks COUNT children which _exit(0) at once, as
 * a forking server's short-lived workers do.  Prints its own pid, so that
 * test_fork_lazy_binding.sh can tell the parent's loader log from the
 * children's.
 *
 *   fork_exit_children [COUNT]
 */
#define _GNU_SOURCE
#include <mark/mark.h>

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int count = argc > 1 ? atoi(argv[1]) : 3;
	printf("%d\n", (int)getpid());
	fflush(stdout);
	for (int i = 0; i < count; i++) {
		MARK(fork_exit_children_site, "%d", i);
		pid_t p = fork();
		if (p < 0) {
			perror("fork_exit_children: fork");
			return 1;
		}
		if (p == 0)
			_exit(0);
		int st;
		if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "fork_exit_children: child %d did not exit cleanly\n", (int)p);
			return 1;
		}
	}
	return 0;
}
