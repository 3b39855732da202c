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
	__asm__ volatile("movb (%1), %0" : "=q"(v) : "r"(p) : "memory");
	return v;
}

static int eh_site_cb(const struct mark_site_info *s, void *arg)
{
	struct eh_site_census *c = (struct eh_site_census *)arg;
	static const unsigned char nop5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
	unsigned char code[5] = { 0, 0, 0, 0, 0 };
	int armed = -1;
	c->sites++;
	if (s->kind != MARK_KIND_GENERIC)
		for (int i = 0; i < (s->kind == MARK_KIND_JUMP ? 5 : 2); i++)
			code[i] = eh_code_byte((const unsigned char *)s->address + i);
	switch (s->kind) {
	case MARK_KIND_JUMP:
		if (memcmp(code, nop5, 5) == 0)
			armed = 0;
		else if (code[0] == 0xe9)
			armed = 1;
		break;
	case MARK_KIND_IMMEDIATE:
		if (code[0] == 0xb0 && (code[1] == 0 || code[1] == 1))
			armed = code[1];
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
