/*
 * tests/aarch64/fork_thread_probe.c - does this emulator let the forked
 * child of a multi-threaded process create a thread?  Exit 0 if it does.
 *
 * qemu-user 7.2 (Debian 12) does not: the child aborts inside qemu
 * ("cpu_exec: assertion failed: (cpu == current_cpu)", or
 * "qemu_plugin_vcpu_init_hook: assertion failed"), with no libmark in the
 * process.  Tests whose forked children start a thread (an agent started
 * in the child, a tracer consumer) run in the cross build only where this
 * probe passes; elsewhere they skip, naming the emulator's defect.
 */
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static void *return_at_once(void *arg)
{
	return arg;
}

static void *sleep_forever(void *arg)
{
	for (;;)
		pause();
	return arg;
}

int main(void)
{
	pthread_t alive, child_thread;
	/* A thread alive across fork, as an agent or a consumer is. */
	if (pthread_create(&alive, NULL, sleep_forever, NULL) != 0)
		return 2;
	pid_t child = fork();
	if (child < 0)
		return 2;
	if (child == 0) {
		if (pthread_create(&child_thread, NULL, return_at_once, NULL) != 0)
			_exit(1);
		pthread_join(child_thread, NULL);
		_exit(0);
	}
	int status;
	if (waitpid(child, &status, 0) != child)
		return 2;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	fprintf(stderr, "fork_thread_probe: the forked child of a multi-threaded process died creating a thread "
			"(status 0x%x): this emulator cannot run such children\n", (unsigned)status);
	return 1;
}
