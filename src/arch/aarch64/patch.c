/*
 * aarch64 code patching, safe against threads executing the site, whatever
 * their signal masks and handlers: no thread can trap on or wait at a site
 * being patched.  docs/markers.md ("aarch64") states the rule relied on.
 *
 * Every site is one 4-byte instruction, and only NOP <-> B changes:
 *
 *   jump site       "nop" (d503201f)  <->  "b <out-of-line block>"
 *   immediate site  "b .+8" (14000002) <->  "nop", between
 *                   "mov wN, #0" and "mov wN, #1" (mark.h): disarmed, the
 *                   branch skips the second mov and the site yields 0;
 *                   armed, the nop lets it run and the site yields 1.
 *
 * The ARM Architecture Reference Manual for A-profile (DDI 0487, B2.2.5
 * "Concurrent modification and execution of instructions") allows one
 * thread to replace an instruction that others may be executing, without
 * any synchronisation, when both the old and the new instruction are B,
 * BL, BRK, HVC, ISB, NOP, SMC or SVC: a concurrent executor then executes
 * either the old or the new one, never a mix.  NOP and B are both on that
 * list, so each change is one aligned 32-bit store (single-copy atomic:
 * B2.2.1), with no intermediate state and no breakpoint.  Immediate sites
 * are built from the same pair rather than a patched MOVZ, which the rule
 * does not cover.
 *
 * Then, for the new instruction to be fetched: clean the data cache line
 * to the point of unification and invalidate the instruction cache line
 * (__builtin___clear_cache: DC CVAU, DSB ISH, IC IVAU, DSB ISH, ISB), and
 * make every other thread of the process execute a context synchronisation
 * event (membarrier SYNC_CORE: mark_arch_sync_cores()), after which no
 * core executes the instruction fetched before.  Until then a thread may
 * still run the old instruction, which is harmless: the site acts as it
 * did before the batch.
 *
 * All or nothing: a branch target beyond B's +-128 MiB refuses the batch
 * before any write; if the sync fails, every site gets its original
 * instruction back (again one allowed NOP/B store each) and the batch
 * fails.  Page protections and the driver: src/arch/common/.
 */
#define _GNU_SOURCE
#include "../patch_common.h"
#include "../../core/internal.h"

#include <errno.h>
#include <string.h>

#define A64_NOP 0xd503201fu
#define A64_B 0x14000000u
#define A64_B_MASK 0xfc000000u
#define A64_B_SKIP_NEXT 0x14000002u   /* "b .+8": the disarmed immediate site */
#define A64_B_RANGE (1l << 27)        /* B reaches [-128 MiB, +128 MiB) */
#define INSN_LEN 4

size_t mark_arch_site_len(const struct mark_patch *p)
{
	(void)p;
	return INSN_LEN;
}

static uint32_t load_insn(const uint8_t *code)
{
	uint32_t insn;
	memcpy(&insn, code, sizeof(insn));   /* instructions are little-endian on Linux */
	return insn;
}

bool mark_arch_site_valid(const uint8_t *code, uint8_t kind)
{
	if ((uintptr_t)code % INSN_LEN != 0)
		return false;
	uint32_t insn = load_insn(code);
	if (kind == MARK_PATCH_JUMP)
		return insn == A64_NOP || (insn & A64_B_MASK) == A64_B;
	return insn == A64_NOP || insn == A64_B_SKIP_NEXT;
}

/* The instruction site p must hold; -ERANGE when its block is out of B's reach. */
static int desired_insn(const struct mark_patch *p, uint32_t *out)
{
	if (p->kind != MARK_PATCH_JUMP) {
		*out = p->arm ? A64_NOP : A64_B_SKIP_NEXT;
		return 0;
	}
	if (!p->arm) {
		*out = A64_NOP;
		return 0;
	}
	const intptr_t offset = (intptr_t)(p->target - p->code);
	if (offset % INSN_LEN != 0 || offset < -A64_B_RANGE || offset >= A64_B_RANGE)
		return -ERANGE;
	*out = A64_B | ((uint32_t)(offset / INSN_LEN) & ~A64_B_MASK);
	return 0;
}

/*
 * One aligned 32-bit store: single-copy atomic, so a concurrent fetch sees
 * the old or the new instruction.  Written in asm: it is code, not data a
 * sanitizer could track.
 */
static void write_insn(uint8_t *code, uint32_t insn)
{
	__asm__ volatile("str %w1, [%0]" : : "r"(code), "r"(insn) : "memory");
	__builtin___clear_cache((char *)code, (char *)code + INSN_LEN);
}

int mark_arch_check_batch(const struct mark_patch *p, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		uint32_t insn;
		if (desired_insn(&p[i], &insn) != 0)
			return mark_error(ERANGE,
				"mark: the out-of-line block of the site at %p is %td bytes away, beyond "
				"the +-128 MiB an aarch64 B instruction reaches (a function larger than "
				"128 MiB?); no site was changed. Build it with -DMARK_SITE=generic.",
				(void *)p[i].code, p[i].target - p[i].code);
	}
	return 0;
}

int mark_arch_write_batch(struct mark_patch *p, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		uint32_t insn = 0;
		(void)desired_insn(&p[i], &insn);   /* in reach: mark_arch_check_batch */
		write_insn(p[i].code, insn);
	}
	int err = mark_arch_sync_cores();
	if (err) {
		/* Each site back to what it held: NOP/B again, as allowed. */
		for (size_t i = 0; i < count; i++)
			write_insn(p[i].code, load_insn(p[i].old));
		(void)mark_arch_sync_cores();
		return err;
	}
	return 0;
}
