/*
 * x86-64 code patching, safe against threads executing the site, whatever
 * their signal masks and handlers: no thread can ever trap on or spin at a
 * site that is being patched.  docs/markers.md ("How code is patched
 * safely") argues the protocol against the Intel SDM and the AMD APM.
 *
 * Jump sites (5 bytes: nop5 "0f 1f 44 00 00" <-> "e9 rel32"):
 *   1. replace the first two bytes of every site with "eb 03" (jmp +3,
 *      which skips the rest of the site: the site acts disarmed), with one
 *      2-byte store; sync all cores;
 *   2. write bytes 2..4 of every site (behind the skip, never executed); sync;
 *   3. replace the first two bytes with their final value, one 2-byte
 *      store; sync.
 * Every byte sequence a core can observe at the site is then one complete
 * instruction ending at the same place (old, skip, new); the 2-byte stores
 * are single atomic accesses because a site never straddles a cache line
 * (the .p2align in mark.h; Intel SDM vol 3 8.1.1).  A thread that runs the
 * site during the batch skips it as if disarmed: it neither traps (an
 * int3 guard kills a thread that has SIGTRAP blocked) nor waits for the
 * patcher (an "eb fe" guard hangs a real-time thread that outranks the
 * patcher on its CPU).
 *
 * Immediate sites ("b0 00" <-> "b0 01"): only the immediate byte changes,
 * with one 1-byte store, so there is no intermediate state at all; the
 * byte is written in step 3 and the batch's last sync publishes it.
 *
 * Core sync: membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE) makes
 * every running thread of the process execute a core-serialising
 * instruction before it returns, so no core keeps executing bytes fetched
 * before the sync (Intel SDM 8.1.3, AMD APM vol 2 7.6.1).
 *
 * All or nothing: if a sync fails, every site of the batch gets its
 * original bytes back, in the reverse order of the steps (each store again
 * going from one complete instruction to another), and the batch fails.
 * Page protections are read from /proc/self/maps once per batch and
 * restored exactly.
 *
 * Callers hold the registry lock: one batch at a time, so the statics
 * below need no further synchronisation except sync_count, which tests
 * read from any thread.
 */
#define _GNU_SOURCE
#include "../patch.h"
#include "../../core/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/membarrier.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#define JMP_REL32 0xe9
#define MOVB_AL 0xb0
#define SKIP_GUARD 0x03eb   /* "jmp .+5" (eb 03) as a little-endian 16-bit value */
#define JUMP_LEN 5
#define IMMEDIATE_LEN 2

static const uint8_t nop5[JUMP_LEN] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };

static unsigned long sync_count;
static int membarrier_cmd;      /* 0 until registered; -1 if registration failed */
static int membarrier_errno;    /* why registration failed */

unsigned long mark_arch_sync_count(void)
{
	return __atomic_load_n(&sync_count, __ATOMIC_RELAXED);
}

static size_t site_len(const struct mark_patch *p)
{
	return p->kind == MARK_PATCH_JUMP ? JUMP_LEN : IMMEDIATE_LEN;
}

static void desired_bytes(const struct mark_patch *p, uint8_t out[JUMP_LEN])
{
	if (p->kind == MARK_PATCH_JUMP) {
		if (p->arm) {
			int32_t rel = (int32_t)(p->target - (p->code + JUMP_LEN));
			out[0] = JMP_REL32;
			memcpy(out + 1, &rel, sizeof(rel));
		} else {
			memcpy(out, nop5, JUMP_LEN);
		}
	} else {
		out[0] = MOVB_AL;
		out[1] = p->arm ? 1 : 0;
	}
}

bool mark_arch_site_valid(const uint8_t *code, uint8_t kind)
{
	if (kind == MARK_PATCH_JUMP)
		return memcmp(code, nop5, JUMP_LEN) == 0 || code[0] == JMP_REL32;
	return code[0] == MOVB_AL && code[1] <= 1;
}

static int sync_cores(void)
{
	if (membarrier_cmd == 0) {
		if (syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) == 0)
			membarrier_cmd = MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE;
		else if (syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0)
			/* The IPI's return to user space (iret) serialises on x86. */
			membarrier_cmd = MEMBARRIER_CMD_PRIVATE_EXPEDITED;
		else {
			membarrier_cmd = -1;
			membarrier_errno = errno;
		}
	}
	__atomic_add_fetch(&sync_count, 1, __ATOMIC_RELAXED);
	int err = membarrier_errno;
	if (membarrier_cmd > 0) {
		if (syscall(__NR_membarrier, membarrier_cmd, 0, 0) == 0)
			return 0;
		err = errno;
	}
	return mark_error(err ? err : ENOSYS,
			  "mark: membarrier() cannot synchronise the cores (%s); code patching needs it "
			  "(Linux >= 4.14, and a seccomp policy that allows membarrier). No site was "
			  "changed. Allow membarrier in the sandbox, or build the sites with "
			  "-DMARK_SITE=generic, which needs no code patching.",
			  strerror(err ? err : ENOSYS));
}

static int compare_patch(const void *a, const void *b)
{
	const struct mark_patch *x = a, *y = b;
	return x->code < y->code ? -1 : x->code > y->code;
}

/*
 * Code bytes are written in asm: they are instructions, not data a
 * sanitizer could track (TSan has no shadow memory for text), and the
 * 2-byte store may be at an odd address.  Each store is one access; the
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

static uint16_t first_two(const uint8_t *bytes)
{
	return (uint16_t)(bytes[0] | bytes[1] << 8);
}

/* Steps 1-2 concern jump sites only; immediate sites change in step 3. */
static void write_guards(struct mark_patch *p, size_t count)
{
	for (size_t i = 0; i < count; i++)
		if (p[i].kind == MARK_PATCH_JUMP)
			write_two_bytes(p[i].code, SKIP_GUARD);
}

static void write_tails(struct mark_patch *p, size_t count, bool original)
{
	uint8_t bytes[JUMP_LEN];
	for (size_t i = 0; i < count; i++) {
		if (p[i].kind != MARK_PATCH_JUMP)
			continue;
		desired_bytes(&p[i], bytes);
		const uint8_t *src = original ? p[i].old : bytes;
		for (size_t b = 2; b < JUMP_LEN; b++)
			write_byte(p[i].code + b, src[b]);
	}
}

/* The first two bytes of a jump site, the immediate byte of the other kind. */
static void write_heads(struct mark_patch *p, size_t count, bool original)
{
	uint8_t bytes[JUMP_LEN];
	for (size_t i = 0; i < count; i++) {
		desired_bytes(&p[i], bytes);
		const uint8_t *src = original ? p[i].old : bytes;
		if (p[i].kind == MARK_PATCH_JUMP)
			write_two_bytes(p[i].code, first_two(src));
		else
			write_byte(p[i].code + 1, src[1]);
	}
}

static int write_batch(struct mark_patch *p, size_t count)
{
	bool jumps = false;
	for (size_t i = 0; i < count; i++)
		jumps |= p[i].kind == MARK_PATCH_JUMP;
	int err;
	if (jumps) {
		write_guards(p, count);
		err = sync_cores();
		if (err) {
			/* guard -> original: one store per site, both complete instructions. */
			write_heads(p, count, true);
			return err;
		}
		write_tails(p, count, false);
		err = sync_cores();
		if (err) {
			/* The tails are behind the guard, so no core executes them
			 * while they go back; then the guards go, as in step 3.  The
			 * syncs are attempted even though one has just failed: a
			 * transient failure (EINTR-like, or a filter that allows
			 * some commands) should not leave stale bytes in a core. */
			write_tails(p, count, true);
			(void)sync_cores();
			write_heads(p, count, true);
			(void)sync_cores();
			return err;
		}
	}
	write_heads(p, count, false);
	err = sync_cores();
	if (err && !jumps) {
		/* Immediate sites only: this was the batch's first sync.  Undo
		 * (one 1-byte store per site, like the change itself). */
		write_heads(p, count, true);
		return err;
	}
	/* With jump sites, steps 1 and 2 synced, so every site now holds its
	 * final bytes consistently; undoing them without a sync would be the
	 * unsafe move.  The last sync only hastens other cores' view (the
	 * instruction cache is coherent on x86), so the batch stands. */
	if (err)
		mark_error_clear();
	return 0;
}

/* ------------------------------------------------------------------ */
/* Page protection: read once per batch, restored exactly              */
/* ------------------------------------------------------------------ */

struct span {
	uintptr_t start, end;
	int prot;
};

struct spans {
	struct span *v;
	size_t n, cap;
};

static int spans_push(struct spans *s, uintptr_t start, uintptr_t end, int prot)
{
	if (s->n && s->v[s->n - 1].end == start && s->v[s->n - 1].prot == prot) {
		s->v[s->n - 1].end = end;
		return 0;
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;
		struct span *v = realloc(s->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = (struct span){ start, end, prot };
	return 0;
}

/* The pages the (sorted) batch touches, merged into runs. */
static int page_runs(const struct mark_patch *p, size_t count, struct spans *runs)
{
	const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	for (size_t i = 0; i < count; i++) {
		uintptr_t start = (uintptr_t)p[i].code & ~(page - 1);
		uintptr_t end = (((uintptr_t)p[i].code + site_len(&p[i]) - 1) & ~(page - 1)) + page;
		if (runs->n && start <= runs->v[runs->n - 1].end) {
			if (end > runs->v[runs->n - 1].end)
				runs->v[runs->n - 1].end = end;
		} else if (spans_push(runs, start, end, 0) != 0) {
			return -ENOMEM;
		}
	}
	return 0;
}

/*
 * Split the runs into spans of one protection each, from /proc/self/maps
 * (sorted by address).  Assumes no other thread changes the protection
 * of these pages during the batch (the program owns its code pages; mark
 * owns them only while it patches).  Without procfs at /proc (a chroot),
 * the pages are taken to be r-x, which is what code pages normally are
 * and which never leaves a page writable.
 */
static FILE *open_maps(void)
{
	/* The mount namespace is not ours to trust: accept only procfs, so a
	 * file bound over /proc cannot choose the protections we restore. */
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct statfs fs;
	if (fd < 0)
		return NULL;
	if (fstatfs(fd, &fs) != 0 || fs.f_type != PROC_SUPER_MAGIC) {
		close(fd);
		return NULL;
	}
	FILE *f = fdopen(fd, "r");
	if (!f)
		close(fd);
	return f;
}

static int read_protections(const struct spans *runs, struct spans *out)
{
	FILE *f = open_maps();
	if (!f) {
		for (size_t r = 0; r < runs->n; r++)
			if (spans_push(out, runs->v[r].start, runs->v[r].end, PROT_READ | PROT_EXEC) != 0)
				return -ENOMEM;
		return 0;
	}
	char *line = NULL;
	size_t cap = 0, r = 0;
	uintptr_t at = runs->n ? runs->v[0].start : 0;   /* first byte not yet covered */
	int err = 0;
	while (r < runs->n && getline(&line, &cap, f) > 0) {
		unsigned long ms, me;
		char perms[5];
		if (sscanf(line, "%lx-%lx %4s", &ms, &me, perms) != 3)
			continue;
		int prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
			   (perms[2] == 'x' ? PROT_EXEC : 0);
		while (r < runs->n && me > at) {
			if (ms > at)
				break;   /* a hole before this mapping: reported below */
			uintptr_t end = me < runs->v[r].end ? me : runs->v[r].end;
			if ((err = spans_push(out, at, end, prot)) != 0)
				break;
			at = end;
			if (at == runs->v[r].end && ++r < runs->n)
				at = runs->v[r].start;
		}
		if (err || (r < runs->n && ms > at))
			break;
	}
	free(line);
	fclose(f);
	if (err)
		return err;
	if (r < runs->n)
		return mark_error(EFAULT, "mark: no mapping holds the code at %p (/proc/self/maps); "
				  "was its library unloaded while arming? No site was changed.",
				  (void *)at);
	return 0;
}

/* Make every span writable (keeping its other rights); undo on refusal. */
static int make_writable(const struct spans *s, size_t *done)
{
	for (*done = 0; *done < s->n; (*done)++) {
		const struct span *sp = &s->v[*done];
		if (!(sp->prot & PROT_WRITE) &&
		    mprotect((void *)sp->start, sp->end - sp->start, sp->prot | PROT_WRITE) != 0)
			return -errno;
	}
	return 0;
}

static void restore_protection(const struct spans *s, size_t n)
{
	/* Taking a right away cannot be refused by a W^X policy; if it ever
	 * failed, the page would merely stay writable, so it is not reported
	 * as a failure of a batch whose code is already changed. */
	for (size_t i = 0; i < n; i++)
		if (!(s->v[i].prot & PROT_WRITE))
			(void)mprotect((void *)s->v[i].start, s->v[i].end - s->v[i].start, s->v[i].prot);
}

int mark_arch_patch(struct mark_patch *patches, size_t count)
{
	if (count == 0)
		return 0;
	qsort(patches, count, sizeof(*patches), compare_patch);

	for (size_t i = 0; i < count; i++) {
		uint8_t *c = patches[i].code;
		if (!mark_arch_site_valid(c, patches[i].kind))
			return mark_error(EBUSY,
				"mark: the site at %p holds %02x %02x %02x %02x %02x, not a mark site's "
				"instruction: a debugger breakpoint or another code patcher is there. Remove "
				"it (gdb: delete or disable the breakpoint) and retry; no site was changed.",
				(void *)c, c[0], c[1], c[2], c[3], c[4]);
		memcpy(patches[i].old, c, site_len(&patches[i]));
	}

	struct spans runs = { 0 }, prot = { 0 };
	int err = page_runs(patches, count, &runs);
	if (!err)
		err = read_protections(&runs, &prot);
	free(runs.v);
	if (err) {
		free(prot.v);
		return err == -ENOMEM ? mark_error(ENOMEM, "mark: out of memory while arming %zu sites", count)
				      : err;
	}

	size_t done;
	err = make_writable(&prot, &done);
	if (err) {
		restore_protection(&prot, done);
		err = mark_error(-err,
			"mark: the system refuses to make code writable (mprotect(PROT_WRITE|PROT_EXEC) "
			"near %p: %s). A W^X policy forbids code patching here (SELinux deny_execmem or "
			"execmod, PaX MPROTECT, or a seccomp filter); no site was changed. Sites built "
			"with -DMARK_SITE=generic need no code patching.",
			(void *)prot.v[done].start, strerror(-err));
		free(prot.v);
		return err;
	}
	err = write_batch(patches, count);
	restore_protection(&prot, prot.n);
	free(prot.v);
	return err;
}
