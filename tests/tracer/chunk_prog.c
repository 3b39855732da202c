/*
 * Writes N events of about 200 bytes each as fast as it can (issue 13 §2:
 * bounded disk).  Usage: chunk_prog N.  The tracer is configured from the
 * environment (MARK_TRACE, MARK_MODE, MARK_MAX_SIZE, MARK_ROTATE); the
 * checker (test_chunks.py) knows that event i carries seq=i.
 * `chunk_prog N wait`: after the events, print the line and wait to be
 * killed (the crash recovery case: SIGKILL with events still in the rings).
 * `chunk_prog N stdin`: N events per line read from stdin, until EOF (the
 * test paces the batches by what it sees in the trace directory).
 */
#include <mark/mark.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	char pad[161];
	memset(pad, 'p', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = '\0';
	long total = 0;
	char line[64];
	bool batches = argc > 2 && strcmp(argv[2], "stdin") == 0;
	while (!batches || fgets(line, sizeof(line), stdin)) {
		for (long i = 0; i < n; i++) {
			unsigned long seq = (unsigned long)total++;
			MARK(t_chunk, "%lu %s", seq, pad);
		}
		if (!batches)
			break;
		printf("batch\n");
		fflush(stdout);
	}
	printf("produced %ld\n", total);
	fflush(stdout);
	if (argc > 2 && strcmp(argv[2], "wait") == 0)
		for (;;)
			pause();
	return 0;
}
