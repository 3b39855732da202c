/*
 * Test helper: the state of every invoke site of an event-handler list,
 * read from the code (jump: 5-byte NOP vs jmp rel32; immediate: the movb
 * immediate) or the flag (generic), and cross-checked with what the
 * registry reports.
 */
#ifndef EH_SITES_H
#define EH_SITES_H
#include <mark/mark.h>
#include <stdio.h>
#include <string.h>

struct eh_site_census {
	int sites;       /* invoke sites found                         */
	int armed;       /* whose bytes/flag say "armed"               */
	int disarmed;    /* whose bytes/flag say "disarmed"            */
	int mismatched;  /* registry's armed flag disagrees with bytes  */
	int bad_bytes;   /* neither armed nor disarmed encoding        */
};

/* Code is read with a plain asm load: ThreadSanitizer has no shadow memory
 * for text and crashes on an instrumented load from it. */
static unsigned char eh_code_byte(const void *p)
{
	unsigned char v;
#if defined(__aarch64__)
	__asm__ volatile("ldrb %w0, [%1]" : "=r"(v) : "r"(p) : "memory");
#else
	__asm__ volatile("movb (%1), %0" : "=q"(v) : "r"(p) : "memory");
#endif
	return v;
}

#if defined(__aarch64__)
/* aarch64 sites are one instruction (src/arch/aarch64/patch.c): jump
 * "nop" or "b"; immediate "b .+8" (disarmed) or "nop" (armed). */
#define EH_SITE_LEN(kind) 4
static int eh_armed_of(int kind, const unsigned char *code)
{
	const unsigned insn = code[0] | code[1] << 8 | code[2] << 16 | (unsigned)code[3] << 24;
	if (insn == 0xd503201fu)
		return kind == MARK_KIND_JUMP ? 0 : 1;
	if (kind == MARK_KIND_JUMP && (insn & 0xfc000000u) == 0x14000000u)
		return 1;
	if (kind == MARK_KIND_IMMEDIATE && insn == 0x14000002u)
		return 0;
	return -1;
}
#else
/* x86-64: jump "nop5" or "jmp rel32"; immediate "movb $0|$1, %al". */
#define EH_SITE_LEN(kind) ((kind) == MARK_KIND_JUMP ? 5 : 2)
static int eh_armed_of(int kind, const unsigned char *code)
{
	static const unsigned char nop5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
	if (kind == MARK_KIND_JUMP)
		return memcmp(code, nop5, 5) == 0 ? 0 : code[0] == 0xe9 ? 1 : -1;
	return code[0] == 0xb0 && (code[1] == 0 || code[1] == 1) ? code[1] : -1;
}
#endif

static int eh_site_cb(const struct mark_site_info *s, void *arg)
{
	struct eh_site_census *c = (struct eh_site_census *)arg;
	unsigned char code[5] = { 0, 0, 0, 0, 0 };
	int armed = -1;
	c->sites++;
	if (s->kind != MARK_KIND_GENERIC)
		for (int i = 0; i < EH_SITE_LEN(s->kind); i++)
			code[i] = eh_code_byte((const unsigned char *)s->address + i);
	switch (s->kind) {
	case MARK_KIND_JUMP:
	case MARK_KIND_IMMEDIATE:
		armed = eh_armed_of(s->kind, code);
		break;
	case MARK_KIND_GENERIC:
		armed = __atomic_load_n((const unsigned short *)s->address, __ATOMIC_RELAXED) != 0;
		break;
	}
	if (armed < 0) {
		fprintf(stderr, "site %s:%u (%s): unexpected bytes %02x %02x %02x %02x %02x\n", s->file,
			s->line, mark_site_kind_name(s->kind), code[0], code[1], code[2], code[3], code[4]);
		c->bad_bytes++;
		return 0;
	}
	if (armed)
		c->armed++;
	else
		c->disarmed++;
	if (armed != !!s->armed)
		c->mismatched++;
	return 0;
}

static int eh_marker_cb(const struct mark_marker *m, void *arg)
{
	mark_marker_sites(m, eh_site_cb, arg);
	return 0;
}

/* Census of the invoke sites of list `list` in every loaded object. */
static struct eh_site_census eh_sites(const char *list)
{
	struct eh_site_census c;
	char glob[256];
	memset(&c, 0, sizeof(c));
	snprintf(glob, sizeof(glob), "eventhandler:%s", list);
	mark_list(glob, eh_marker_cb, &c);
	return c;
}

#endif
