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
 * are naturally aligned (mark.h puts every jump site at an even address,
 * never straddling a cache line), so no fetch block boundary (16 bytes or
 * more) splits one: instruction fetch does not see half of it.  An
 * unaligned one did tear: a site at 15 mod 16 was executed as "0f 03"
 * (lsl) while "0f 1f" became "eb 03", and the thread died of SIGSEGV.
 * A thread that runs the site during the batch skips it as if disarmed:
 * it neither traps (an int3 guard kills a thread that has SIGTRAP
 * blocked) nor waits for the patcher (an "eb fe" guard hangs a real-time
 * thread that outranks the patcher on its CPU).
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
 * The core sync, page protections and the batch driver are shared with
 * the other architectures (src/arch/common/patch_common.c).
 */
#define _GNU_SOURCE
#include "../patch_common.h"
#include "../../core/internal.h"

#include <errno.h>
#include <string.h>
#include <stdint.h>

#define JMP_REL32 0xe9
#define MOVB_AL 0xb0
#define SKIP_GUARD 0x03eb   /* "jmp .+5" (eb 03) as a little-endian 16-bit value */
#define JUMP_LEN 5
#define IMMEDIATE_LEN 2

static const uint8_t nop5[JUMP_LEN] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };

size_t mark_arch_site_len(const struct mark_patch *p)
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

int mark_arch_check_batch(const struct mark_patch *p, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		if (p[i].kind != MARK_PATCH_JUMP)
			continue;
		/* The 2-byte stores of steps 1 and 3 must be naturally aligned:
		 * instruction fetch tore one that straddled a 16-byte fetch block
		 * (a site at 15 mod 16 ran "0f 03 44 00 00", an lsl through
		 * address 0: SIGSEGV).  mark.h places every jump site at an even
		 * address; an object built with an older mark.h may not. */
		if ((uintptr_t)p[i].code & 1)
			return mark_error(EINVAL,
				"mark: the jump site at %p starts at an odd address, where arming it could "
				"crash a thread running it; its object was built with an older <mark/mark.h>. "
				"Rebuild it with this version's header; no site was changed.",
				(void *)p[i].code);
	}
	return 0;
}

int mark_arch_write_batch(struct mark_patch *p, size_t count)
{
	bool jumps = false;
	for (size_t i = 0; i < count && !jumps; i++)
		jumps = p[i].kind == MARK_PATCH_JUMP;
	int err;
	if (jumps) {
		write_guards(p, count);
		err = mark_arch_sync_cores();
		if (err) {
			/* guard -> original: one store per site, both complete instructions. */
			write_heads(p, count, true);
			return err;
		}
		write_tails(p, count, false);
		err = mark_arch_sync_cores();
		if (err) {
			/* The tails are behind the guard, so no core executes them
			 * while they go back; then the guards go, as in step 3.  The
			 * syncs are attempted even though one has just failed: a
			 * transient failure (EINTR-like, or a filter that allows
			 * some commands) should not leave stale bytes in a core. */
			write_tails(p, count, true);
			(void)mark_arch_sync_cores();
			write_heads(p, count, true);
			(void)mark_arch_sync_cores();
			return err;
		}
	}
	write_heads(p, count, false);
	err = mark_arch_sync_cores();
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

