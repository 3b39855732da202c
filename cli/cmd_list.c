/*
 * `mark list BINARY_OR_LIBRARY [GLOB]`: the markers compiled into a file,
 * read from its sections without running it.  `mark list PID [GLOB]` asks
 * a running process instead (cli_list_pid, in the control commands).
 *
 * The file's descriptors are the __mark_descs section (C sites) plus those
 * the PC-relative __mark_sites entries point to (C++ template members).
 * Their string fields are pointers: in a PIE or shared object the file
 * holds 0 and a RELATIVE relocation holds the address, so the relocations
 * are applied here the way the dynamic loader would.
 *
 * The file's architecture comes from its ELF header, not from the machine
 * mark runs on: an x86-64 mark lists an aarch64 build and the reverse
 * (struct mark__site and the __mark_sites entries have one layout on both).
 */
#define _GNU_SOURCE
#include "command.h"
#include "list_table.h"
#include "text.h"

#include <mark/mark.h>

#include <ctype.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* Provided by the control commands; absent from builds without them.
 * Takes the PID as given: it parses it as every control command does. */
int cli_list_pid(const char *pid, const char *glob) __attribute__((weak));

/* What differs between the architectures mark patches (src/arch/). */
struct elf_arch {
	uint16_t machine;            /* e_machine */
	uint32_t relative_type;      /* R_*_RELATIVE */
	size_t jump_len, immediate_len;
	/* The disarmed instruction each site kind holds, as mark.h emits it. */
	unsigned char jump_insn[5], immediate_insn[4];
	size_t immediate_insn_len;   /* bytes of immediate_insn compared */
	size_t jump_align;           /* a jump site's address is a multiple of this */
	const char *not_immediate;   /* site_problem()'s words when it is not */
};

static const struct elf_arch elf_arches[] = {
	/* 5-byte NOP; "movb $imm8,%al" (b0 ib), whose immediate byte is patched.
	 * Jump sites are even (the 2-byte guard store: docs/markers.md). */
	{ EM_X86_64, R_X86_64_RELATIVE, 5, 2, { 0x0f, 0x1f, 0x44, 0x00, 0x00 }, { 0xb0 }, 1, 2,
	  "its instruction is not the movb $imm8,%al mark emits" },
	/* "nop" (d503201f); the immediate site's "b .+8" (14000002). */
	{ EM_AARCH64, R_AARCH64_RELATIVE, 4, 4, { 0x1f, 0x20, 0x03, 0xd5 }, { 0x02, 0x00, 0x00, 0x14 }, 4, 4,
	  "its instruction is not the \"b .+8\" mark emits" },
};

struct elf_file {
	const struct elf_arch *arch;
	const unsigned char *data;
	size_t size;
	const Elf64_Ehdr *ehdr;
	const Elf64_Shdr *shdrs;
	const Elf64_Phdr *phdrs;
	const char *shstrtab;
	Elf64_Rela *relative;   /* the arch's RELATIVE relocations, sorted by offset */
	size_t nrelative;
};

struct listed_site {
	char *display;
	char *format;
	const char *kind;
	char *location;
	int enabled_test;
	const char *never_armed;   /* why mark_arm() can never patch this site, or NULL */
};

/* A code site that can never be armed: its descriptor and the reason. */
struct bad_site {
	uint64_t desc;
	const char *why;
};

static const Elf64_Shdr *find_section(const struct elf_file *f, const char *name)
{
	for (unsigned i = 0; i < f->ehdr->e_shnum; i++)
		if (f->shdrs[i].sh_name < f->shdrs[f->ehdr->e_shstrndx].sh_size &&
		    strcmp(f->shstrtab + f->shdrs[i].sh_name, name) == 0)
			return &f->shdrs[i];
	return NULL;
}

/* File offset of a virtual address, through the loadable segments. */
static const unsigned char *at_vaddr(const struct elf_file *f, uint64_t vaddr, size_t len)
{
	for (unsigned i = 0; i < f->ehdr->e_phnum; i++) {
		const Elf64_Phdr *p = &f->phdrs[i];
		if (p->p_type != PT_LOAD || vaddr < p->p_vaddr || vaddr + len > p->p_vaddr + p->p_filesz)
			continue;
		uint64_t off = vaddr - p->p_vaddr + p->p_offset;
		if (off + len > f->size)
			return NULL;
		return f->data + off;
	}
	return NULL;
}

/* The section holding [vaddr, vaddr + len) in memory, or NULL. */
static const Elf64_Shdr *section_of(const struct elf_file *f, uint64_t vaddr, size_t len)
{
	for (unsigned i = 0; i < f->ehdr->e_shnum; i++) {
		const Elf64_Shdr *s = &f->shdrs[i];
		if ((s->sh_flags & SHF_ALLOC) && vaddr >= s->sh_addr && vaddr + len <= s->sh_addr + s->sh_size)
			return s;
	}
	return NULL;
}

/* Is [vaddr, vaddr + len) in a writable loadable segment? */
static bool writable(const struct elf_file *f, uint64_t vaddr, size_t len)
{
	for (unsigned i = 0; i < f->ehdr->e_phnum; i++) {
		const Elf64_Phdr *p = &f->phdrs[i];
		if (p->p_type == PT_LOAD && vaddr >= p->p_vaddr && vaddr + len <= p->p_vaddr + p->p_memsz)
			return (p->p_flags & PF_W) != 0;
	}
	return false;
}

/*
 * Why libmark could never arm the code site of entry `ce` (at `entry`), or
 * NULL: the checks libmark makes before it patches, done on the file, so
 * that a broken build shows in `mark list` rather than as a marker that
 * silently never fires.
 */
static const char *site_problem(const struct elf_file *f, uint64_t entry, const struct mark__code_entry *ce,
				const struct mark__site *d, uint64_t desc)
{
	const struct elf_arch *a = f->arch;
	uint64_t code = entry + offsetof(struct mark__code_entry, code) + (int64_t)ce->code;
	size_t len = d->kind == MARK_KIND_JUMP ? a->jump_len : a->immediate_len;
	const Elf64_Shdr *sec = section_of(f, code, len);
	if (!sec || !(sec->sh_flags & SHF_EXECINSTR))
		return "its instruction is not in an executable section";
	const unsigned char *bytes = at_vaddr(f, code, len);
	if (!bytes)
		return "its instruction is not in the file";
	if (d->kind == MARK_KIND_JUMP) {
		if (memcmp(bytes, a->jump_insn, a->jump_len) != 0)
			return "its instruction is not the NOP mark emits (rewritten after compilation?)";
		if (code % a->jump_align != 0)
			return "it is at a misaligned address (built with an older mark.h: rebuild it)";
		uint64_t target = entry + offsetof(struct mark__code_entry, target) + (int64_t)ce->target;
		const Elf64_Shdr *ts = section_of(f, target, 1);
		if (!ts || !(ts->sh_flags & SHF_EXECINSTR))
			return "its jump target is not in an executable section";
	} else if (d->kind == MARK_KIND_IMMEDIATE) {
		if (memcmp(bytes, a->immediate_insn, a->immediate_insn_len) != 0)
			return a->not_immediate;
	} else {
		return "its descriptor says generic, but it has a code site";
	}
	if (!writable(f, desc, sizeof(struct mark__site)))
		return "its descriptor is not in writable memory";
	return NULL;
}

static int compare_rela(const void *a, const void *b)
{
	const Elf64_Rela *x = a, *y = b;
	return x->r_offset < y->r_offset ? -1 : x->r_offset > y->r_offset;
}

static int load_relocations(struct elf_file *f)
{
	size_t n = 0;
	for (unsigned i = 0; i < f->ehdr->e_shnum; i++) {
		const Elf64_Shdr *s = &f->shdrs[i];
		if (s->sh_type == SHT_RELA && s->sh_entsize == sizeof(Elf64_Rela) && s->sh_offset + s->sh_size <= f->size)
			n += s->sh_size / sizeof(Elf64_Rela);
	}
	f->relative = calloc(n + 1, sizeof(Elf64_Rela));
	if (!f->relative)
		return -ENOMEM;
	for (unsigned i = 0; i < f->ehdr->e_shnum; i++) {
		const Elf64_Shdr *s = &f->shdrs[i];
		if (s->sh_type != SHT_RELA || s->sh_entsize != sizeof(Elf64_Rela) || s->sh_offset + s->sh_size > f->size)
			continue;
		const Elf64_Rela *r = (const Elf64_Rela *)(f->data + s->sh_offset);
		for (size_t k = 0; k < s->sh_size / sizeof(Elf64_Rela); k++)
			if (ELF64_R_TYPE(r[k].r_info) == f->arch->relative_type)
				f->relative[f->nrelative++] = r[k];
	}
	qsort(f->relative, f->nrelative, sizeof(Elf64_Rela), compare_rela);
	return 0;
}

/* The pointer stored at `vaddr`, after relocation. */
static uint64_t read_pointer(const struct elf_file *f, uint64_t vaddr)
{
	Elf64_Rela key = { .r_offset = vaddr };
	const Elf64_Rela *r = bsearch(&key, f->relative, f->nrelative, sizeof(Elf64_Rela), compare_rela);
	if (r)
		return (uint64_t)r->r_addend;
	const unsigned char *p = at_vaddr(f, vaddr, 8);
	uint64_t v = 0;
	if (p)
		memcpy(&v, p, 8);
	return v;
}

static char *read_string(const struct elf_file *f, uint64_t vaddr)
{
	if (!vaddr)
		return strdup("");
	const unsigned char *p = at_vaddr(f, vaddr, 1);
	if (!p)
		return strdup("?");
	size_t max = (size_t)(f->data + f->size - p);
	size_t len = strnlen((const char *)p, max);
	return strndup((const char *)p, len);
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int compare_sites(const void *a, const void *b)
{
	const struct listed_site *x = a, *y = b;
	int c = strcmp(x->display, y->display);
	return c ? c : strcmp(x->location, y->location);
}

/*
 * The largest file `mark list` reads.  It keeps the whole file in memory
 * (see open_elf), and an executable or shared object with markers is far
 * smaller than this unless it carries a great deal of debug information.
 */
#define LIST_MAX_FILE ((size_t)1 << 30)

/*
 * Read the file into memory rather than mmap() it: the file is often
 * someone else's (root lists a user's build), and a mapped file that its
 * owner truncates while we read it raises SIGBUS on the next page touched.
 * pread() instead sees the truncation as a short read, which is reported,
 * or reads a snapshot of the file as it was; either way no signal.
 */
static int read_whole(int fd, const char *path, struct elf_file *f)
{
	unsigned char *buf = malloc(f->size);
	if (!buf)
		return cli_error("out of memory reading %s (%zu bytes)", path, f->size);
	size_t done = 0;
	while (done < f->size) {
		ssize_t r = pread(fd, buf + done, f->size - done, (off_t)done);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			free(buf);
			return cli_error("cannot read %s: %s", path, strerror(e));
		}
		if (r == 0) {
			free(buf);
			return cli_error("%s shrank while it was read (from %zu to %zu bytes: something is writing it); "
					 "list it again once it is complete", path, f->size, done);
		}
		done += (size_t)r;
	}
	f->data = buf;
	return 0;
}

static int open_elf(const char *path, struct elf_file *f)
{
	static const char not_regular[] = "%s is not a regular file; give an executable, a shared object or a PID";
	struct stat st;
	/* Checked before the open too, so that a device is never opened at all
	 * (opening one can have effects); the descriptor is checked again below. */
	if (stat(path, &st) != 0)
		return cli_error("cannot open %s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return cli_error(not_regular, path);
	/* O_NONBLOCK: if a FIFO replaced the file since the stat(), the open
	 * returns at once instead of waiting for a writer forever; O_NOCTTY:
	 * a terminal put there does not become ours. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return cli_error("cannot open %s: %s", path, strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return cli_error(not_regular, path);
	}
	if ((uint64_t)st.st_size > LIST_MAX_FILE) {
		close(fd);
		return cli_error("%s is larger than %zu MiB, the most mark list reads (%jd bytes); list the markers "
				 "of the running program with `mark list PID`, or of a copy without debug "
				 "information (objcopy --strip-debug FILE COPY)",
				 path, LIST_MAX_FILE >> 20, (intmax_t)st.st_size);
	}
	f->size = (size_t)st.st_size;
	f->data = NULL;
	/* Too small for an ELF header: nothing to read, said below. */
	if (f->size >= sizeof(Elf64_Ehdr) && read_whole(fd, path, f) != 0) {
		close(fd);
		return 1;
	}
	close(fd);
	if (!f->data || f->size < sizeof(Elf64_Ehdr) || memcmp(f->data, ELFMAG, SELFMAG) != 0)
		return cli_error("%s is not an ELF file; give an executable, a shared object or a PID", path);
	f->ehdr = (const Elf64_Ehdr *)f->data;
	for (size_t i = 0; i < sizeof(elf_arches) / sizeof(elf_arches[0]); i++)
		if (f->ehdr->e_machine == elf_arches[i].machine)
			f->arch = &elf_arches[i];
	if (f->ehdr->e_ident[EI_CLASS] != ELFCLASS64 || f->ehdr->e_ident[EI_DATA] != ELFDATA2LSB || !f->arch)
		return cli_error("%s is not a 64-bit little-endian x86-64 or aarch64 ELF file, the ones mark builds for",
				 path);
	if (f->ehdr->e_shoff + (uint64_t)f->ehdr->e_shnum * sizeof(Elf64_Shdr) > f->size ||
	    f->ehdr->e_phoff + (uint64_t)f->ehdr->e_phnum * sizeof(Elf64_Phdr) > f->size ||
	    f->ehdr->e_shstrndx >= f->ehdr->e_shnum)
		return cli_error("%s: truncated or corrupt ELF headers", path);
	f->shdrs = (const Elf64_Shdr *)(f->data + f->ehdr->e_shoff);
	f->phdrs = (const Elf64_Phdr *)(f->data + f->ehdr->e_phoff);
	const Elf64_Shdr *shstr = &f->shdrs[f->ehdr->e_shstrndx];
	if (shstr->sh_offset + shstr->sh_size > f->size)
		return cli_error("%s: corrupt section name table", path);
	f->shstrtab = (const char *)(f->data + shstr->sh_offset);
	if (f->ehdr->e_type == ET_REL)
		return cli_error("%s is an unlinked object file; mark lists linked executables and shared objects",
				 path);
	if (load_relocations(f) != 0)
		return cli_error("out of memory");
	return 0;
}

static int list_file(const char *path, const char *glob)
{
	struct elf_file f = { 0 };
	if (open_elf(path, &f) != 0) {
		free((void *)f.data);
		free(f.relative);
		return 1;
	}
	const Elf64_Shdr *descs = find_section(&f, "__mark_descs");
	const Elf64_Shdr *codes = find_section(&f, "__mark_sites");
	size_t ndesc_sec = descs ? descs->sh_size / sizeof(struct mark__site) : 0;
	size_t ncodes = codes ? codes->sh_size / sizeof(struct mark__code_entry) : 0;

	/* Every descriptor address, each once; and how many code sites each has. */
	uint64_t *addrs = calloc(ndesc_sec + ncodes + 1, sizeof(uint64_t));
	uint64_t *code_descs = calloc(ncodes + 1, sizeof(uint64_t));
	struct bad_site *bad = calloc(ncodes + 1, sizeof(*bad));
	size_t n = 0, ncode_descs = 0, nbad = 0;
	if (!addrs || !code_descs || !bad)
		return cli_error("out of memory");
	for (size_t i = 0; i < ndesc_sec; i++)
		addrs[n++] = descs->sh_addr + i * sizeof(struct mark__site);
	for (size_t i = 0; i < ncodes; i++) {
		uint64_t entry = codes->sh_addr + i * sizeof(struct mark__code_entry);
		const unsigned char *e = at_vaddr(&f, entry, sizeof(struct mark__code_entry));
		if (!e)
			continue;
		struct mark__code_entry ce;
		memcpy(&ce, e, sizeof(ce));
		uint64_t d = entry + offsetof(struct mark__code_entry, desc) + (int64_t)ce.desc;
		addrs[n++] = d;
		if (ce.code != 0) {
			code_descs[ncode_descs++] = d;
			const unsigned char *dp = at_vaddr(&f, d, sizeof(struct mark__site));
			struct mark__site desc;
			if (dp) {
				memcpy(&desc, dp, sizeof(desc));
				const char *why = desc.abi == MARK__ABI ? site_problem(&f, entry, &ce, &desc, d) : NULL;
				if (why)
					bad[nbad++] = (struct bad_site){ d, why };
			}
		}
	}
	qsort(addrs, n, sizeof(uint64_t), compare_u64);
	qsort(code_descs, ncode_descs, sizeof(uint64_t), compare_u64);

	struct listed_site *sites = calloc(n + 1, sizeof(*sites));
	size_t ns = 0;
	for (size_t i = 0; i < n; i++) {
		if (i > 0 && addrs[i] == addrs[i - 1])
			continue;
		const unsigned char *p = at_vaddr(&f, addrs[i], sizeof(struct mark__site));
		if (!p)
			continue;
		struct mark__site d;
		memcpy(&d, p, sizeof(d));
		if (d.abi != MARK__ABI)
			continue;
		char *provider = read_string(&f, read_pointer(&f, addrs[i] + offsetof(struct mark__site, provider)));
		char *name = read_string(&f, read_pointer(&f, addrs[i] + offsetof(struct mark__site, name)));
		char *file = read_string(&f, read_pointer(&f, addrs[i] + offsetof(struct mark__site, file)));
		struct listed_site *s = &sites[ns];
		if (strcmp(provider, "mark") == 0 || !*provider)
			s->display = strdup(name);
		else if (asprintf(&s->display, "%s:%s", provider, name) < 0)
			s->display = NULL;
		bool matches = s->display && (!glob || cli_glob_match(glob, s->display));
		bool is_eh = (d.flags & MARK__F_EVENTHANDLER) != 0;
		if (matches) {
			s->format = read_string(&f, read_pointer(&f, addrs[i] + offsetof(struct mark__site, format)));
			s->kind = is_eh ? "eventhandler" : mark_site_kind_name((enum mark_site_kind)d.kind);
			s->enabled_test = (d.flags & MARK__F_ENABLED_TEST) != 0;
			/* A jump or immediate descriptor whose code the compiler removed has no site. */
			bool has_code = d.kind == MARK_KIND_GENERIC ||
					bsearch(&addrs[i], code_descs, ncode_descs, sizeof(uint64_t), compare_u64);
			for (size_t b = 0; b < nbad; b++)
				if (bad[b].desc == addrs[i]) {
					s->never_armed = bad[b].why;
					break;
				}
			if (has_code && asprintf(&s->location, "%s:%u", file, d.line) >= 0)
				ns++;
			else
				free(s->format), free(s->display);
		} else {
			free(s->display);
		}
		free(provider);
		free(name);
		free(file);
	}
	qsort(sites, ns, sizeof(*sites), compare_sites);

	if (ns == 0) {
		if (glob)
			cli_error("no marker of %s matches \"%s\"", path, glob);
		else
			cli_error("%s has no markers (no __mark_descs or __mark_sites section)", path);
	} else {
		/* The strings are the file's: escaped for the terminal. */
		struct list_row *rows = calloc(ns, sizeof(*rows));
		size_t never = 0;
		for (size_t i = 0; rows && i < ns; i++) {
			rows[i].name = strdup(cli_text(sites[i].display));
			if (sites[i].enabled_test)
				rows[i].format = strdup("(enabled test)");
			else   /* quoted as the C literal it was: '"' and '\\' escaped */
				rows[i].format = text_c_string_dup(sites[i].format);
			rows[i].kind = strdup(sites[i].kind);
			rows[i].location = strdup(cli_text(sites[i].location));
			if (sites[i].never_armed &&
			    asprintf(&rows[i].note, "NEVER ARMABLE: %s", sites[i].never_armed) < 0)
				rows[i].note = NULL;
			never += sites[i].never_armed != NULL;
		}
		if (!rows)
			return cli_error("out of memory");
		list_table_print(rows, ns, false);
		if (never)
			fprintf(stderr, "mark: %zu site%s of %s can never be armed (marked NEVER ARMABLE); "
				"rebuild the file from its sources without post-processing its code\n",
				never, never == 1 ? "" : "s", cli_text(path));
		size_t markers = 0;
		for (size_t i = 0; i < ns; i++)
			markers += i == 0 || strcmp(sites[i].display, sites[i - 1].display) != 0;
		printf("%zu marker%s, %zu site%s in %s\n", markers, markers == 1 ? "" : "s", ns, ns == 1 ? "" : "s",
		       cli_text(path));
		list_table_free(rows, ns);
		free(rows);
	}
	for (size_t i = 0; i < ns; i++) {
		free(sites[i].display);
		free(sites[i].format);
		free(sites[i].location);
	}
	free(sites);
	free(addrs);
	free(code_descs);
	free(bad);
	free(f.relative);
	free((void *)f.data);
	return ns == 0 ? 1 : 0;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: mark list BINARY_OR_LIBRARY [GLOB]\n"
		"       mark list PID [GLOB]\n\n"
		"List markers.  With a file (an executable or shared object), read its\n"
		"sections without running it: one line per site with the marker name\n"
		"(PROVIDER:NAME when the provider is not \"mark\"), format, site kind and\n"
		"source location; a site whose code is not what mark emitted (so that it\n"
		"can never be armed) is flagged NEVER ARMABLE, with the reason.\n"
		"With a PID, ask that running process (see `mark ps`): the same columns,\n"
		"one row per marker at its first site, then armed state, probe count, and\n"
		"hits while the process records (`mark record --pid`, or `mark record -- CMD`).\n"
		"Both tables are sorted by name, then file and line.\n\n"
		"GLOB matches marker names with * ? and [...]; without a ':' it also\n"
		"matches the name part of PROVIDER:NAME.\n\n"
		"Exit status: 0 if markers were listed, 1 if none matched or on error, 2 on bad\n"
		"usage (a PID beyond the pid range, too).\n");
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

static int run_list(int argc, char **argv)
{
	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		usage(stdout);
		return 0;
	}
	if (argc < 2 || argc > 3) {
		usage(stderr);
		return 2;
	}
	const char *glob = argc == 3 ? argv[2] : NULL;
	if (glob && cli_glob_check("list", "GLOB", glob) != 0)
		return 2;
	if (all_digits(argv[1]) && access(argv[1], F_OK) != 0) {
		if (!cli_list_pid)
			return cli_error("this mark was built without the control commands; "
					 "give a file to list the markers compiled into it");
		return cli_list_pid(argv[1], glob);
	}
	return list_file(argv[1], glob);
}

MARK_CLI_COMMAND(list, "list", "list the markers of a binary, library or running process", run_list);
