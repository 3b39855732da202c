/*
 * A traced program with 5000 markers (more than the 4096 entries of its
 * .mark-stats), for ctest tracer_stats_max_entries: it prints "ready", waits
 * for a line on stdin, fires one marker and lets the consumer update the
 * statistics a few times before it exits 0.  Built with -O0: 5000 marker
 * sites take a while to optimise, and speed does not matter here.
 *
 * `many_markers exec_at_once` (ctest tracer_exec_at_once): fires every
 * marker as soon as main() runs, then execs itself (`exit`), before the
 * consumer's first round could describe 5000 markers: their events must
 * reach the trace all the same.
 */
#include <mark/mark.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Five thousand distinct marker names, m_0000 .. m_4999. */
#define M(a, b, c, d) MARK(m_##a##b##c##d, "%d", x);
#define D(a, b, c) M(a, b, c, 0) M(a, b, c, 1) M(a, b, c, 2) M(a, b, c, 3) M(a, b, c, 4) \
	M(a, b, c, 5) M(a, b, c, 6) M(a, b, c, 7) M(a, b, c, 8) M(a, b, c, 9)
#define C(a, b) D(a, b, 0) D(a, b, 1) D(a, b, 2) D(a, b, 3) D(a, b, 4) D(a, b, 5) D(a, b, 6) \
	D(a, b, 7) D(a, b, 8) D(a, b, 9)
#define B(a) C(a, 0) C(a, 1) C(a, 2) C(a, 3) C(a, 4) C(a, 5) C(a, 6) C(a, 7) C(a, 8) C(a, 9)

static void fire(int x, int all)
{
	if (all) {
		B(0) B(1) B(2) B(3) B(4)
	}
	MARK(m_last, "%d", x);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "exit") == 0)
		return 0;
	if (argc > 1 && strcmp(argv[1], "exec_at_once") == 0) {
		fire(1, 1);
		execl(argv[0], argv[0], "exit", (char *)NULL);
		return 127;
	}
	printf("ready\n");
	fflush(stdout);
	char line[16];
	if (!fgets(line, sizeof(line), stdin))
		return 2;
	fire(1, line[0] == 'a');
	usleep(200000);   /* the consumer updates .mark-stats every 5-10 ms */
	return 0;
}
