/*
 * x86-64 code patching, safe against threads executing the site.
 *
 * The protocol is the one the Linux kernel proved in text_poke_bp():
 *   1. write int3 over the first byte of every site, sync all cores;
 *   2. write the remaining bytes of every site, sync;
 *   3. write the final first byte of every site, sync.
 * A thread that executes a site between steps 1 and 3 traps; the SIGTRAP
 * handler below moves it to where the new instruction would have taken
 * it.  A whole batch costs three core syncs, whatever its size.
 *
 * Under a debugger (ptrace), an int3 that is not the debugger's own stops
 * the process and, with gdb's default "handle SIGTRAP nopass", is never
 * delivered to our handler, so the thread would resume in the middle of
 * an instruction.  When the process is traced the guard is instead a
 * two-byte self-jump (eb fe): a thread that reaches the site spins there
 * until the final bytes land, and no signal is involved.  Both guard and
 * final first bytes are written with one 2-byte store, atomic because a
 * site never straddles a cache line (Intel SDM 8.1.1).  The patching
 * thread blocks signals meanwhile, so no handler of its own can spin on
 * a site it is patching.
 *
 * Core sync: membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE) makes
 * every running thread of the process execute a core-serialising
 * instruction before it returns, so no core keeps executing stale bytes
 * (Intel SDM 8.1.3, cross-modifying code).
 */
#define _GNU_SOURCE
#include "../patch.h"
#include "../../core/internal.h"

#include <errno.h>
#include <pthread.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#define INT3 0xcc
#define SELF_JUMP 0xfeeb   /* "jmp ." as a little-endian 16-bit value */
#define JMP_REL32 0xe9
#define MOVB_AL 0xb0
#define JUMP_LEN 5
#define IMMEDIATE_LEN 2

static const uint8_t nop5[JUMP_LEN] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };

/*
 * The batch in flight, sorted by code address, for the trap handler.
 * Published with a seq_cst store before the first int3 is written and
 * withdrawn after the last sync.  handlers_running counts handlers that
 * may be reading it: a handler increments it before loading the pointer,
 * so once the patcher has withdrawn the pointer and seen the count at
 * zero, no handler can still read the array (seq_cst total order).
 */
struct trap_table {
	const struct mark_patch *patches;
	size_t count;
};
static struct trap_table *active_table;
static unsigned handlers_running;
static unsigned long batch_generation;   /* odd while a batch is in flight */
static unsigned long sync_count;

static struct sigaction previous_trap_action;
static bool trap_handler_installed;
static int membarrier_cmd;   /* 0 until registered; -1 if unavailable */

static void trap_handler(int sig, siginfo_t *info, void *ctx);

unsigned long mark_arch_sync_count(void)
{
	return __atomic_load_n(&sync_count, __ATOMIC_RELAXED);
}

static void desired_bytes(const struct mark_patch *p, uint8_t out[JUMP_LEN], size_t *len)
{
	if (p->kind == MARK_PATCH_JUMP) {
		*len = JUMP_LEN;
		if (p->arm) {
			int32_t rel = (int32_t)(p->target - (p->code + JUMP_LEN));
			out[0] = JMP_REL32;
			memcpy(out + 1, &rel, sizeof(rel));
		} else {
			memcpy(out, nop5, JUMP_LEN);
		}
	} else {
		*len = IMMEDIATE_LEN;
		out[0] = MOVB_AL;
		out[1] = p->arm ? 1 : 0;
	}
}

bool mark_arch_site_valid(const uint8_t *code, uint8_t kind)
{
	if (kind == MARK_PATCH_JUMP)
		return memcmp(code, nop5, JUMP_LEN) == 0 || code[0] == JMP_REL32;
	return code[0] == MOVB_AL;
}

static int sync_cores(void)
{
	if (membarrier_cmd == 0) {
		if (syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) == 0)
			membarrier_cmd = MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE;
		else if (syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0)
			/* The IPI's return to user space (iret) serialises on x86. */
			membarrier_cmd = MEMBARRIER_CMD_PRIVATE_EXPEDITED;
		else
			membarrier_cmd = -1;
	}
	__atomic_add_fetch(&sync_count, 1, __ATOMIC_RELAXED);
	if (membarrier_cmd > 0 && syscall(__NR_membarrier, membarrier_cmd, 0, 0) == 0)
		return 0;
	return mark_error(ENOSYS, "mark: membarrier() cannot synchronise cores on this kernel "
				  "(needs Linux >= 4.14); code patching is unsafe, use -DMARK_SITE=generic");
}

static int compare_patch(const void *a, const void *b)
{
	const struct mark_patch *x = a, *y = b;
	return x->code < y->code ? -1 : x->code > y->code;
}

static const struct mark_patch *find_patch(const struct trap_table *t, const uint8_t *code)
{
	size_t lo = 0, hi = t->count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->patches[mid].code == code)
			return &t->patches[mid];
		if (t->patches[mid].code < code)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Hand a trap that is not ours to whatever handled SIGTRAP before us. */
static void chain_trap(int sig, siginfo_t *info, void *ctx)
{
	const struct sigaction *old = &previous_trap_action;
	if (old->sa_flags & SA_SIGINFO) {
		if (old->sa_sigaction)
			old->sa_sigaction(sig, info, ctx);
		return;
	}
	if (old->sa_handler == SIG_IGN)
		return;
	if (old->sa_handler == SIG_DFL) {
		/* Default action: die with SIGTRAP, as without us.  The signal is
		 * blocked in this handler, so it is delivered on return. */
		signal(SIGTRAP, SIG_DFL);
		raise(SIGTRAP);
		return;
	}
	old->sa_handler(sig);
}

static void trap_handler(int sig, siginfo_t *info, void *ctx)
{
	ucontext_t *uc = ctx;
	greg_t *gregs = uc->uc_mcontext.gregs;
	uint8_t *code = (uint8_t *)gregs[REG_RIP] - 1;   /* int3 leaves RIP after itself */

	while (info->si_code == SI_KERNEL) {
		/* batch_generation is odd while a batch is in flight (seqlock
		 * style).  If it did not move while we looked, an int3 we find
		 * at `code` that is in no published table is not ours. */
		unsigned long generation = __atomic_load_n(&batch_generation, __ATOMIC_SEQ_CST);
		__atomic_add_fetch(&handlers_running, 1, __ATOMIC_SEQ_CST);
		const struct trap_table *t = __atomic_load_n(&active_table, __ATOMIC_SEQ_CST);
		const struct mark_patch *p = t ? find_patch(t, code) : NULL;
		if (p) {
			/* Emulate the new instruction. */
			if (p->kind == MARK_PATCH_JUMP) {
				gregs[REG_RIP] = (greg_t)(p->arm ? p->target : p->code + JUMP_LEN);
			} else {
				gregs[REG_RAX] = (gregs[REG_RAX] & ~(greg_t)0xff) | (p->arm ? 1 : 0);
				gregs[REG_RIP] = (greg_t)(p->code + IMMEDIATE_LEN);
			}
		}
		__atomic_sub_fetch(&handlers_running, 1, __ATOMIC_SEQ_CST);
		if (p)
			return;
		/* A trap on an int3 that is gone by now: one of ours whose batch
		 * completed while this thread was on its way here.  Re-execute
		 * the instruction that stands there now. */
		uint8_t now;
		__asm__ volatile("movb (%1), %0" : "=q"(now) : "r"(code) : "memory");
		if (now != INT3) {
			gregs[REG_RIP] = (greg_t)code;
			return;
		}
		if (__atomic_load_n(&batch_generation, __ATOMIC_SEQ_CST) == generation)
			break;   /* a foreign int3 */
	}
	chain_trap(sig, info, ctx);
}

/* Install (or re-install, if the application replaced it) our handler. */
static int ensure_trap_handler(void)
{
	struct sigaction current;
	if (sigaction(SIGTRAP, NULL, &current) != 0)
		return mark_error(errno, "mark: cannot read the SIGTRAP action: %s", strerror(errno));
	if (trap_handler_installed && (current.sa_flags & SA_SIGINFO) &&
	    current.sa_sigaction == trap_handler)
		return 0;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = trap_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTRAP, &sa, &previous_trap_action) != 0)
		return mark_error(errno, "mark: cannot install the SIGTRAP handler: %s", strerror(errno));
	trap_handler_installed = true;
	return 0;
}

/*
 * Code bytes are written in asm: they are instructions, not data a
 * sanitizer could track (TSan has no shadow memory for text), and the
 * 2-byte store may be at an odd address.  Single stores are atomic; the
 * protocol orders them with the core syncs, not with memory barriers.
 */
static void write_byte(uint8_t *addr, uint8_t value)
{
	__asm__ volatile("movb %b1, (%0)" : : "r"(addr), "q"(value) : "memory");
}

static void write_two_bytes(uint8_t *addr, uint16_t value)
{
	__asm__ volatile("movw %w1, (%0)" : : "r"(addr), "r"(value) : "memory");
}

static bool process_is_traced(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	long tracer = 0;
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "TracerPid: %ld", &tracer) == 1)
			break;
	fclose(f);
	return tracer != 0;
}

/* The three steps, with int3 or with a self-jump as the guard. */
static int write_batch(const struct mark_patch *patches, size_t count, bool spin_guard)
{
	uint8_t bytes[JUMP_LEN];
	size_t len;
	for (size_t i = 0; i < count; i++) {
		if (spin_guard)
			write_two_bytes(patches[i].code, SELF_JUMP);
		else
			write_byte(patches[i].code, INT3);
	}
	int err = sync_cores();
	for (size_t i = 0; !err && i < count; i++) {
		desired_bytes(&patches[i], bytes, &len);
		for (size_t b = spin_guard ? 2 : 1; b < len; b++)
			write_byte(patches[i].code + b, bytes[b]);
	}
	if (!err)
		err = sync_cores();
	for (size_t i = 0; i < count; i++) {
		/* Even after a failed sync the guard is replaced: none stays behind. */
		desired_bytes(&patches[i], bytes, &len);
		if (spin_guard)
			write_two_bytes(patches[i].code, (uint16_t)(bytes[0] | bytes[1] << 8));
		else
			write_byte(patches[i].code, bytes[0]);
	}
	int err2 = sync_cores();
	return err ? err : err2;
}

/* Page-granular protection changes over the sorted batch. */
static int set_protection(const struct mark_patch *p, size_t count, int prot, size_t *done)
{
	const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t run_start = 0, run_end = 0;
	size_t i = 0;
	*done = 0;
	for (;;) {
		uintptr_t start = 0, end = 0;
		if (i < count) {
			start = (uintptr_t)p[i].code & ~(page - 1);
			end = (((uintptr_t)p[i].code + JUMP_LEN - 1) & ~(page - 1)) + page;
		}
		if (i < count && run_end != 0 && start <= run_end) {
			if (end > run_end)
				run_end = end;
		} else {
			if (run_end != 0) {
				if (mprotect((void *)run_start, run_end - run_start, prot) != 0)
					return -errno;
				*done = i;
			}
			if (i >= count)
				break;
			run_start = start;
			run_end = end;
		}
		i++;
	}
	*done = count;
	return 0;
}

int mark_arch_patch(struct mark_patch *patches, size_t count)
{
	if (count == 0)
		return 0;
	qsort(patches, count, sizeof(*patches), compare_patch);

	bool spin_guard = process_is_traced();
	int err = spin_guard ? 0 : ensure_trap_handler();
	if (err)
		return err;

	size_t done;
	err = set_protection(patches, count, PROT_READ | PROT_WRITE | PROT_EXEC, &done);
	if (err) {
		size_t ignored;
		if (done)
			set_protection(patches, done, PROT_READ | PROT_EXEC, &ignored);
		return mark_error(-err,
			"mark: the system refuses to make code writable (mprotect(PROT_WRITE|PROT_EXEC) "
			"near %p: %s). A W^X policy forbids code patching here (SELinux deny_execmem or "
			"execmod, PaX MPROTECT, or a seccomp filter); no site was changed. Sites built "
			"with -DMARK_SITE=generic need no code patching.",
			(void *)patches[done < count ? done : 0].code, strerror(-err));
	}

	sigset_t all, saved;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &saved);

	struct trap_table table = { patches, count };
	__atomic_add_fetch(&batch_generation, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&active_table, &table, __ATOMIC_SEQ_CST);
	err = write_batch(patches, count, spin_guard);
	__atomic_store_n(&active_table, NULL, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&batch_generation, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&handlers_running, __ATOMIC_SEQ_CST) != 0)
		sched_yield();

	pthread_sigmask(SIG_SETMASK, &saved, NULL);

	size_t ignored;
	set_protection(patches, count, PROT_READ | PROT_EXEC, &ignored);
	return err;
}
