/*
 * The architecture-neutral half of code patching (patch_common.h): the
 * core sync through membarrier, page protections read from
 * /proc/self/maps once per batch and restored exactly, and the batch
 * driver mark_arch_patch().  The instruction protocol itself is in
 * src/arch/<arch>/patch.c.
 *
 * Callers hold the registry lock: one batch at a time, so the statics
 * below need no further synchronisation except sync_count, which tests
 * read from any thread.
 */
#define _GNU_SOURCE
#include "../patch_common.h"
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

static unsigned long sync_count;
static int membarrier_cmd;      /* 0 until registered; -1 if registration failed */
static int membarrier_errno;    /* why registration failed */

unsigned long mark_arch_sync_count(void)
{
	return __atomic_load_n(&sync_count, __ATOMIC_RELAXED);
}

int mark_arch_sync_cores(void)
{
	if (membarrier_cmd == 0) {
		if (syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) == 0)
			membarrier_cmd = MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE;
		else if (syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0)
			/* The IPI's return to user space (iret on x86, eret on
			 * aarch64) is context-synchronising. */
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
		uintptr_t end = (((uintptr_t)p[i].code + mark_arch_site_len(&p[i]) - 1) & ~(page - 1)) + page;
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
 * owns them only while it patches).  Without procfs at /proc (a chroot, a
 * sandbox that hides it), the pages are taken to be r-x, which is what
 * code pages normally are and which never leaves a page writable.  Any
 * other failure to read it (out of memory or of descriptors) fails the
 * batch: guessing r-x then would take the write right from a page that
 * had it (a JIT's rwx page).
 */

/* *out: the maps file, or NULL when there is no procfs at /proc.  0 or
 * -errno. */
static int open_maps(FILE **out)
{
	*out = NULL;
	/* The mount namespace is not ours to trust: accept only procfs, so a
	 * file bound over /proc cannot choose the protections we restore. */
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct statfs fs;
	if (fd < 0)
		return errno == ENOENT || errno == EACCES || errno == ENOTDIR || errno == ELOOP ? 0 : -errno;
	if (fstatfs(fd, &fs) != 0 || fs.f_type != PROC_SUPER_MAGIC) {
		close(fd);
		return 0;
	}
	*out = fdopen(fd, "r");
	if (!*out) {
		int e = errno;
		close(fd);
		return -e;
	}
	return 0;
}

static int read_protections(const struct spans *runs, struct spans *out)
{
	FILE *f;
	int err = open_maps(&f);
	if (err)
		return err;
	if (!f) {
		for (size_t r = 0; r < runs->n; r++)
			if (spans_push(out, runs->v[r].start, runs->v[r].end, PROT_READ | PROT_EXEC) != 0)
				return -ENOMEM;
		return 0;
	}
	char *line = NULL;
	size_t cap = 0, r = 0;
	uintptr_t at = runs->n ? runs->v[0].start : 0;   /* first byte not yet covered */
	ssize_t got = 0;
	while (r < runs->n && (got = getline(&line, &cap, f)) > 0) {
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
	/* getline's failure, not the end of the file (errno is getline's). */
	if (!err && got < 0 && !feof(f))
		err = errno ? -errno : -EIO;
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
		const size_t len = mark_arch_site_len(&patches[i]);
		if (!mark_arch_site_valid(c, patches[i].kind)) {
			char bytes[3 * sizeof(patches[i].old) + 1] = "";
			for (size_t b = 0; b < len; b++)
				snprintf(bytes + 3 * b, sizeof(bytes) - 3 * b, "%s%02x", b ? " " : "", c[b]);
			return mark_error(EBUSY,
				"mark: the site at %p holds %s, not a mark site's instruction: a debugger "
				"breakpoint or another code patcher is there. Remove it (gdb: delete or "
				"disable the breakpoint) and retry; no site was changed.",
				(void *)c, bytes);
		}
		memcpy(patches[i].old, c, len);
	}

	int err = mark_arch_check_batch(patches, count);
	if (err)
		return err;
	struct spans runs = { 0 }, prot = { 0 };
	err = page_runs(patches, count, &runs);
	if (!err)
		err = read_protections(&runs, &prot);
	free(runs.v);
	if (err) {
		free(prot.v);
		if (err == -ENOMEM)
			return mark_error(ENOMEM, "mark: out of memory while arming %zu sites; no site was changed",
					  count);
		if (err != -EFAULT)   /* EFAULT is reported where it is found */
			return mark_error(-err, "mark: cannot read /proc/self/maps for the protection of the code "
					  "pages: %s; no site was changed", strerror(-err));
		return err;
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
	err = mark_arch_write_batch(patches, count);
	restore_protection(&prot, prot.n);
	free(prot.v);
	return err;
}
