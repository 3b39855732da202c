/*
 * mark_synchronize() called from inside a probe (found by a review): it
 * waited for the grace period that its own probe holds open, for ever, and
 * liburcu blocked every signal meanwhile, so not even the program's alarm
 * could end it.  Now it returns -EDEADLK at once, says why, and the probe
 * and the program go on.  The alarm bounds the old behaviour (20 s; the
 * fixed call returns at once); it is left to kill the process.
 */
#include <mark/mark.h>

#include "testutil.h"

#include <errno.h>
#include <unistd.h>

static int sync_rc = 1, probe_runs;

static void probe(const struct mark_marker *m, void *priv, const uint64_t *args)
{
	(void)m;
	(void)priv;
	(void)args;
	probe_runs++;
	sync_rc = mark_synchronize();
}

int main(void)
{
	CHECK_EQ(mark_probe_register_fast("sync_in_probe", probe, NULL), 0);
	CHECK(mark_arm("sync_in_probe") > 0);
	alarm(20);
	MARK(sync_in_probe, "%d", 1);
	CHECK_EQ(probe_runs, 1);
	CHECK_EQ(sync_rc, -EDEADLK);
	CHECK(strstr(mark_last_error(), "inside a probe") != NULL);
	/* Outside any probe it waits and succeeds. */
	CHECK_EQ(mark_synchronize(), 0);
	CHECK_EQ(mark_probe_unregister_fast("sync_in_probe", probe, NULL), 0);
	TEST_DONE();
}
