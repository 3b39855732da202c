/*
 * The DTrace provider language, as real projects' probes.d files use it:
 *
 *   #pragma D attributes Evolving/Evolving/Common provider myapp provider
 *   typedef struct conn conn_t;           // remembered: conn_t is a struct
 *   struct foo { int a; };                // skipped
 *   provider myapp {
 *       probe query__start(const char *sql, conn_t *c, uint64_t id);
 *       probe http__done(struct req *r) : (reqinfo_t *r);   // translated types: ignored
 *       probe tick();
 *   };
 *
 * Comments (C and C++ style) and every #pragma line are ignored.  A line
 * whose first word after '#' is not a preprocessor directive is a comment,
 * as systemtap's dtrace reads it (libvirt's "# file: src/util/x.c").  The
 * directives take effect with -C (the C preprocessor runs first; its
 * linemarkers keep the reported file and line those of the original
 * source); without -C they are skipped like comments, as systemtap skips
 * them, with one note.
 *
 * Like systemtap's dtrace, the older style without ";" after a probe
 * declaration is accepted.
 *
 * Each argument type is classified by size and signedness into one printf
 * conversion (enum dt_class); see classify() for the rules.
 */
#include "dtrace.h"
#include "text.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* tokens                                                              */
/* ------------------------------------------------------------------ */

enum tok_kind { T_END, T_IDENT, T_NUMBER, T_PUNCT, T_STRING };

struct token {
	enum tok_kind kind;
	char text[128];
	const char *file;      /* interned in struct lexer */
	unsigned line;
};

struct lexer {
	const char *p;
	const char *file;
	unsigned line;
	bool preprocessed;
	bool at_line_start;
	FILE *err;
	char **files;          /* names seen in linemarkers, freed at the end */
	size_t nfiles;
	bool failed;
	bool noted_skipped_cpp;   /* the "-C" note is printed once per file */
};

/*
 * Bounds on what one file may declare.  Lookups (duplicate probes and
 * providers, typedefs, file names of linemarkers) scan lists, which is
 * quadratic in the count: a crafted file of 80000 probes took 27 s, one of
 * 48 MB would take hours (found by a review).  Real provider files declare
 * tens to hundreds of probes; a process holds at most 65535 markers.
 */
#define DT_MAX_PROBES 10000
#define DT_MAX_PROVIDERS 1000
#define DT_MAX_TYPEDEFS 4096
#define DT_MAX_FILES 4096

static void lex_error(struct lexer *lx, unsigned line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void lex_error(struct lexer *lx, unsigned line, const char *fmt, ...)
{
	va_list ap;
	if (lx->failed)
		return;     /* report the first error only: later ones are usually its echoes */
	lx->failed = true;
	/* Escaped: the file name (of a linemarker too) and the quoted tokens
	 * are bytes of the .d file, which a source tree controls, and must
	 * not drive the terminal of whoever builds it (cli_text). */
	char msg[1024];
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(lx->err, "%s:%u: error: %s\n", cli_text(lx->file), line, cli_text(msg));
}

static const char *intern_file(struct lexer *lx, const char *start, size_t len)
{
	for (size_t i = 0; i < lx->nfiles; i++)
		if (strlen(lx->files[i]) == len && memcmp(lx->files[i], start, len) == 0)
			return lx->files[i];
	if (lx->nfiles == DT_MAX_FILES)
		return lx->file;   /* named as the file before it: messages only */
	char **n = realloc(lx->files, (lx->nfiles + 1) * sizeof(*n));
	char *s = malloc(len + 1);
	if (!n || !s) {
		free(s);
		if (n)
			lx->files = n;
		return lx->file;
	}
	memcpy(s, start, len);
	s[len] = '\0';
	lx->files = n;
	lx->files[lx->nfiles++] = s;
	return s;
}

/* The C preprocessor's directives: these need -C; any other "#word" line is a comment. */
static bool is_cpp_directive(const char *word, size_t len)
{
	static const char *const directives[] = {
		"define", "undef", "include", "include_next", "import", "if", "ifdef", "ifndef",
		"elif", "elifdef", "elifndef", "else", "endif", "error", "warning", "ident", "sccs",
		"assert", "unassert",
	};
	for (size_t i = 0; i < sizeof(directives) / sizeof(directives[0]); i++)
		if (strlen(directives[i]) == len && strncmp(directives[i], word, len) == 0)
			return true;
	return false;
}

/* A line starting with '#': a linemarker, a #pragma (ignored), another
 * directive, or a comment line. */
static void lex_directive(struct lexer *lx)
{
	unsigned line = lx->line;
	const char *p = lx->p + 1;   /* after '#' */
	while (*p == ' ' || *p == '\t')
		p++;
	const char *word = p;
	while (isalnum((unsigned char)*p) || *p == '_')
		p++;
	size_t wlen = (size_t)(p - word);
	const char *eol = strchr(p, '\n');
	if (!eol)
		eol = p + strlen(p);

	if (wlen > 0 && isdigit((unsigned char)word[0])) {
		/* linemarker: # LINE "FILE" FLAGS... ; the next line is LINE */
		unsigned long n = strtoul(word, NULL, 10);
		const char *q = p;
		while (*q == ' ' || *q == '\t')
			q++;
		if (*q == '"') {
			const char *s = ++q;
			while (q < eol && *q != '"')
				q++;
			lx->file = intern_file(lx, s, (size_t)(q - s));
		}
		lx->line = (unsigned)n - 1;  /* the newline below adds one */
	} else if (wlen == 4 && strncmp(word, "line", 4) == 0) {
		unsigned long n = strtoul(p, NULL, 10);
		lx->line = (unsigned)n - 1;
	} else if (wlen == 6 && strncmp(word, "pragma", 6) == 0) {
		/* "#pragma D attributes ..." and "#pragma D depends_on ...": ignored. */
	} else if (wlen == 0) {
		/* a lone '#' (a null directive) or "# text", "#!...": a comment line */
	} else if (!is_cpp_directive(word, wlen)) {
		/* "# file: src/util/x.c", "#probes of ...": a comment line, as for systemtap */
	} else if (!lx->preprocessed) {
		/* systemtap's dtrace, without -C, skips every line that starts
		 * with '#', directives included; a file it builds must build
		 * here too.  Skipping #include or #if silently could hide a
		 * mistake, so one note says what happened and how to change it. */
		if (!lx->noted_skipped_cpp) {
			lx->noted_skipped_cpp = true;
			fprintf(lx->err, "%s:%u: note: without -C, preprocessor lines are skipped, as systemtap's "
				"dtrace skips them; run with -C to apply them\n", cli_text(lx->file), line);
		}
	} else {
		lex_error(lx, line, "unexpected preprocessor directive \"#%.*s\"", (int)wlen, word);
	}
	lx->p = eol;
}

static void next_token(struct lexer *lx, struct token *t)
{
	for (;;) {
		char c = *lx->p;
		if (c == '\0') {
			break;
		} else if (c == '\n') {
			lx->line++;
			lx->p++;
			lx->at_line_start = true;
		} else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
			lx->p++;
		} else if (c == '\\' && lx->p[1] == '\n') {
			lx->p += 2;
			lx->line++;
		} else if (c == '#' && lx->at_line_start) {
			lex_directive(lx);
		} else if (c == '/' && lx->p[1] == '*') {
			unsigned start = lx->line;
			lx->p += 2;
			while (*lx->p && !(lx->p[0] == '*' && lx->p[1] == '/')) {
				if (*lx->p == '\n')
					lx->line++;
				lx->p++;
			}
			if (!*lx->p) {
				lex_error(lx, start, "unterminated comment (\"/*\" without \"*/\")");
				break;
			}
			lx->p += 2;
		} else if (c == '/' && lx->p[1] == '/') {
			while (*lx->p && *lx->p != '\n')
				lx->p++;
		} else {
			break;
		}
		if (c != '\n' && c != ' ' && c != '\t' && c != '\r')
			lx->at_line_start = lx->at_line_start && c == '\n';
	}
	lx->at_line_start = false;
	t->file = lx->file;
	t->line = lx->line;
	t->text[0] = '\0';
	const char *s = lx->p;
	char c = *s;
	if (c == '\0') {
		t->kind = T_END;
		snprintf(t->text, sizeof(t->text), "end of file");
		return;
	}
	size_t len;
	if (isalpha((unsigned char)c) || c == '_') {
		while (isalnum((unsigned char)*lx->p) || *lx->p == '_')
			lx->p++;
		t->kind = T_IDENT;
	} else if (isdigit((unsigned char)c)) {
		while (isalnum((unsigned char)*lx->p))
			lx->p++;
		t->kind = T_NUMBER;
	} else if (c == '"') {
		lx->p++;
		while (*lx->p && *lx->p != '"' && *lx->p != '\n') {
			if (*lx->p == '\\' && lx->p[1])
				lx->p++;
			lx->p++;
		}
		if (*lx->p == '"')
			lx->p++;
		t->kind = T_STRING;
	} else {
		lx->p++;
		t->kind = T_PUNCT;
	}
	len = (size_t)(lx->p - s);
	if (len >= sizeof(t->text)) {
		lex_error(lx, t->line, "token too long (%zu characters)", len);
		len = sizeof(t->text) - 1;
	}
	memcpy(t->text, s, len);
	t->text[len] = '\0';
}

/* ------------------------------------------------------------------ */
/* parser                                                              */
/* ------------------------------------------------------------------ */

/* What a typedef name stands for. */
struct typedef_entry {
	char *name;
	enum dt_class cls;     /* the class of the type when it is a scalar          */
	bool is_aggregate;     /* a struct/union: only pointers to it can be passed  */
	bool char_base;        /* the type is (a pointer to) char: one '*' = string   */
	int pointers;          /* the typedef's own levels of '*'                      */
};


struct parser {
	struct lexer lx;
	struct token tok;      /* the current token */
	struct typedef_entry *typedefs;
	size_t ntypedefs;
	unsigned nprobes;      /* in every provider so far (DT_MAX_PROBES) */
};

static void advance(struct parser *ps)
{
	next_token(&ps->lx, &ps->tok);
}

static bool is_punct(const struct parser *ps, char c)
{
	return ps->tok.kind == T_PUNCT && ps->tok.text[0] == c;
}

static bool is_word(const struct parser *ps, const char *w)
{
	return ps->tok.kind == T_IDENT && strcmp(ps->tok.text, w) == 0;
}

static const char *tok_desc(const struct token *t, char *buf, size_t len)
{
	if (t->kind == T_END)
		snprintf(buf, len, "end of file");
	else
		snprintf(buf, len, "\"%s\"", t->text);
	return buf;
}

/* "expected X, found Y" at the current token. */
static void expected(struct parser *ps, const char *what)
{
	char buf[160];
	lex_error(&ps->lx, ps->tok.line, "expected %s, found %s", what, tok_desc(&ps->tok, buf, sizeof(buf)));
}

static bool expect_punct(struct parser *ps, char c, const char *what)
{
	if (!is_punct(ps, c)) {
		expected(ps, what);
		return false;
	}
	advance(ps);
	return true;
}

static const char *const type_keywords[] = {
	"const", "volatile", "restrict", "signed", "unsigned", "char", "short", "int", "long",
	"float", "double", "void", "_Bool", "struct", "union", "enum", "string", NULL,
};

static bool is_type_keyword(const char *w)
{
	for (int i = 0; type_keywords[i]; i++)
		if (strcmp(w, type_keywords[i]) == 0)
			return true;
	return false;
}

/*
 * Scalar typedef names every C program and DTrace knows, by size and
 * signedness on LP64 (x86-64): 8-byte ones are recorded as long long.
 */
static const struct {
	const char *name;
	enum dt_class cls;
} known_scalars[] = {
	{ "int8_t", DT_INT },      { "int16_t", DT_INT },      { "int32_t", DT_INT },
	{ "int64_t", DT_LLONG },   { "uint8_t", DT_UINT },     { "uint16_t", DT_UINT },
	{ "uint32_t", DT_UINT },   { "uint64_t", DT_ULLONG },  { "intptr_t", DT_LLONG },
	{ "uintptr_t", DT_ULLONG }, { "intmax_t", DT_LLONG },  { "uintmax_t", DT_ULLONG },
	{ "size_t", DT_ULLONG },   { "ssize_t", DT_LLONG },    { "ptrdiff_t", DT_LLONG },
	{ "off_t", DT_LLONG },     { "off64_t", DT_LLONG },    { "time_t", DT_LLONG },
	{ "hrtime_t", DT_LLONG },  { "pid_t", DT_INT },        { "uid_t", DT_UINT },
	{ "gid_t", DT_UINT },      { "id_t", DT_INT },         { "bool", DT_INT },
	{ "boolean_t", DT_INT },   { "uchar_t", DT_UINT },     { "ushort_t", DT_UINT },
	{ "uint_t", DT_UINT },     { "ulong_t", DT_ULONG },    { "u_int", DT_UINT },
	{ "u_long", DT_ULONG },    { "u_char", DT_UINT },      { "u_short", DT_UINT },
	{ "zoneid_t", DT_INT },    { "processorid_t", DT_INT }, { "socklen_t", DT_UINT },
	{ "in_port_t", DT_UINT },  { "mode_t", DT_UINT },      { "dev_t", DT_ULLONG },
	{ "ino_t", DT_ULLONG },    { "clock_t", DT_LONG },     { "caddr_t", DT_POINTER },
	{ "uintptr", DT_ULLONG },
};

static const struct typedef_entry *find_typedef(const struct parser *ps, const char *name)
{
	for (size_t i = ps->ntypedefs; i-- > 0;)
		if (strcmp(ps->typedefs[i].name, name) == 0)
			return &ps->typedefs[i];
	return NULL;
}

/* The type tokens of one declaration, with what classify() needs. */
struct type_words {
	char text[256];        /* normalised: words separated by one space, "*" kept */
	int pointers;          /* '*' and array brackets                               */
	int longs, is_unsigned, is_signed, is_char, is_short, is_int, is_float, is_double,
	    is_void, is_bool, is_string;
	const char *aggregate; /* "struct"/"union" when the base is one */
	bool is_enum;
	char base_name[128];   /* a typedef name as the base type, or "" */
};

/* Append a word to a type's text: "const char *", "char **", "int []". */
static void text_append(char *buf, size_t len, const char *word)
{
	size_t l = strlen(buf);
	bool space = l > 0 && !(word[0] == '*' && buf[l - 1] == '*');
	snprintf(buf + l, len - l, "%s%s", space ? " " : "", word);
}

/*
 * Classify a type.  Pointers to char (any signedness) and DTrace's `string`
 * are strings; other pointers are %p; integers by size and signedness; float
 * and double are %f.  Returns false (message printed) for what cannot be a
 * probe argument: a struct or union by value, void, long double.  A name the
 * parser does not know is taken as an integer of up to 8 bytes (signed): it
 * is usually a typedef from the program's headers, and the C compiler checks
 * the generated cast.
 */
static bool classify(struct parser *ps, const struct type_words *w, unsigned line, enum dt_class *cls)
{
	int pointers = w->pointers;
	bool char_base = w->is_char || w->is_string;
	if (w->base_name[0]) {
		const struct typedef_entry *td = find_typedef(ps, w->base_name);
		if (td) {
			pointers += td->pointers;
			if (pointers > 0) {
				*cls = pointers == 1 && td->char_base ? DT_STRING : DT_POINTER;
				return true;
			}
			if (td->is_aggregate) {
				lex_error(&ps->lx, line, "argument type \"%s\" is a struct or union passed by "
					  "value; pass a pointer to it", w->text);
				return false;
			}
			*cls = td->cls;
			return true;
		}
		for (size_t i = 0; i < sizeof(known_scalars) / sizeof(known_scalars[0]); i++) {
			if (strcmp(known_scalars[i].name, w->base_name) == 0) {
				*cls = pointers ? DT_POINTER : known_scalars[i].cls;
				return true;
			}
		}
		*cls = pointers ? DT_POINTER : DT_LLONG;
		return true;
	}
	if (w->is_string) {
		/* D's string type: the value is the char pointer */
		*cls = pointers ? DT_POINTER : DT_STRING;
		return true;
	}
	if (pointers > 0) {
		*cls = pointers == 1 && char_base ? DT_STRING : DT_POINTER;
		return true;
	}
	if (w->aggregate) {
		lex_error(&ps->lx, line, "argument type \"%s\" is a %s passed by value; pass a pointer to it",
			  w->text, w->aggregate);
		return false;
	}
	if (w->is_enum) {
		*cls = DT_INT;
		return true;
	}
	if (w->is_void) {
		lex_error(&ps->lx, line, "argument type \"void\" has no value; write \"()\" or \"(void)\" "
			  "for a probe without arguments, or \"void *\" for a pointer");
		return false;
	}
	if (w->is_float || w->is_double) {
		if (w->longs) {
			lex_error(&ps->lx, line, "argument type \"long double\" is not supported; use double");
			return false;
		}
		*cls = DT_DOUBLE;
		return true;
	}
	bool u = w->is_unsigned;
	if (w->longs >= 2)
		*cls = u ? DT_ULLONG : DT_LLONG;
	else if (w->longs == 1)
		*cls = u ? DT_ULONG : DT_LONG;
	else
		*cls = u ? DT_UINT : DT_INT;   /* char, short, int, _Bool: promoted to int */
	return true;
}

/*
 * Read type words up to (not including) one of the stop characters.  The
 * last identifier becomes the declarator name when it cannot be part of the
 * type (it follows a complete type).  Array brackets count as a pointer.
 */
static bool read_type(struct parser *ps, const char *stops, struct type_words *w, char *name, size_t namelen)
{
	memset(w, 0, sizeof(*w));
	name[0] = '\0';
	bool have_base = false;   /* a complete base type has been read */
	unsigned words = 0;
	while (ps->tok.kind != T_END && !(ps->tok.kind == T_PUNCT && strchr(stops, ps->tok.text[0]))) {
		if (ps->lx.failed)
			return false;
		if (ps->tok.kind == T_PUNCT && ps->tok.text[0] == '*') {
			if (name[0]) {
				expected(ps, "\",\" or \")\" after the parameter name");
				return false;
			}
			w->pointers++;
			text_append(w->text, sizeof(w->text), "*");
			advance(ps);
			continue;
		}
		if (ps->tok.kind == T_PUNCT && ps->tok.text[0] == '[') {
			advance(ps);
			while (ps->tok.kind == T_NUMBER || ps->tok.kind == T_IDENT)
				advance(ps);
			if (!expect_punct(ps, ']', "\"]\""))
				return false;
			w->pointers++;
			text_append(w->text, sizeof(w->text), "[]");
			continue;
		}
		if (ps->tok.kind != T_IDENT) {
			expected(ps, "a type, a parameter name, \",\" or \")\"");
			return false;
		}
		const char *t = ps->tok.text;
		if (name[0]) {
			expected(ps, "\",\" or \")\" after the parameter name");
			return false;
		}
		words++;
		if (strcmp(t, "struct") == 0 || strcmp(t, "union") == 0 || strcmp(t, "enum") == 0) {
			const char *kw = t[0] == 's' ? "struct" : t[0] == 'u' ? "union" : "enum";
			text_append(w->text, sizeof(w->text), kw);
			advance(ps);
			if (ps->tok.kind != T_IDENT) {
				char what[64];
				snprintf(what, sizeof(what), "a %s name", kw);
				expected(ps, what);
				return false;
			}
			text_append(w->text, sizeof(w->text), ps->tok.text);
			if (kw[0] == 'e')
				w->is_enum = true;
			else
				w->aggregate = kw;
			have_base = true;
			advance(ps);
			if (is_punct(ps, '{')) {
				lex_error(&ps->lx, ps->tok.line, "a %s definition inside a probe's argument "
					  "list is not supported; define it before the provider", kw);
				return false;
			}
			continue;
		}
		if (strcmp(t, "const") == 0 || strcmp(t, "volatile") == 0 || strcmp(t, "restrict") == 0 ||
		    strcmp(t, "userland") == 0) {
			if (strcmp(t, "userland") != 0)
				text_append(w->text, sizeof(w->text), t);
			advance(ps);
			continue;
		}
		if (is_type_keyword(t) && !(have_base && w->base_name[0])) {
			text_append(w->text, sizeof(w->text), t);
			if (strcmp(t, "unsigned") == 0) w->is_unsigned = 1;
			else if (strcmp(t, "signed") == 0) w->is_signed = 1;
			else if (strcmp(t, "char") == 0) w->is_char = 1;
			else if (strcmp(t, "short") == 0) w->is_short = 1;
			else if (strcmp(t, "int") == 0) w->is_int = 1;
			else if (strcmp(t, "long") == 0) w->longs++;
			else if (strcmp(t, "float") == 0) w->is_float = 1;
			else if (strcmp(t, "double") == 0) w->is_double = 1;
			else if (strcmp(t, "void") == 0) w->is_void = 1;
			else if (strcmp(t, "_Bool") == 0) w->is_bool = 1;
			else if (strcmp(t, "string") == 0) w->is_string = 1;
			have_base = true;
			advance(ps);
			continue;
		}
		/* An identifier: a typedef name when no base type has been seen, else the name. */
		if (!have_base) {
			snprintf(w->base_name, sizeof(w->base_name), "%s", t);
			text_append(w->text, sizeof(w->text), t);
			have_base = true;
		} else {
			snprintf(name, namelen, "%s", t);
		}
		advance(ps);
	}
	if (!have_base && words == 0 && w->pointers == 0)
		return true;   /* empty: the caller decides */
	if (!have_base) {
		expected(ps, "a type");
		return false;
	}
	return true;
}

static char *xstrdup(const char *s)
{
	char *d = strdup(s);
	if (!d) {
		fprintf(stderr, "mark dtrace: out of memory\n");
		exit(1);
	}
	return d;
}

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n);
	if (!q) {
		fprintf(stderr, "mark dtrace: out of memory\n");
		exit(1);
	}
	return q;
}

static bool is_identifier_ok(const char *s)
{
	return s[0] && (isalpha((unsigned char)s[0]) || s[0] == '_');
}

/* probe NAME ( params ) [ : ( params ) ] ; */
static bool parse_probe(struct parser *ps, struct dt_provider *prov)
{
	advance(ps);   /* "probe" */
	if (ps->tok.kind != T_IDENT) {
		expected(ps, "a probe name after \"probe\"");
		return false;
	}
	if (ps->nprobes == DT_MAX_PROBES) {
		lex_error(&ps->lx, ps->tok.line, "more than %d probes in one file, the most mark dtrace takes "
			  "(a process holds at most 65535 markers); split the providers over several files",
			  DT_MAX_PROBES);
		return false;
	}
	for (unsigned i = 0; i < prov->nprobes; i++) {
		if (strcmp(prov->probes[i].name, ps->tok.text) == 0) {
			lex_error(&ps->lx, ps->tok.line, "probe \"%s\" is declared twice in provider \"%s\" "
				  "(first at line %u)", ps->tok.text, prov->name, prov->probes[i].line);
			return false;
		}
	}
	struct dt_probe pr = { 0 };
	pr.name = xstrdup(ps->tok.text);
	pr.line = ps->tok.line;
	advance(ps);
	if (!expect_punct(ps, '(', "\"(\" after the probe name")) {
		free(pr.name);
		return false;
	}
	bool ok = true;
	for (;;) {
		struct type_words w;
		char name[128];
		unsigned line = ps->tok.line;
		if (!read_type(ps, ",)", &w, name, sizeof(name))) {
			ok = false;
			break;
		}
		bool empty = w.text[0] == '\0';
		if (empty && pr.nargs == 0 && is_punct(ps, ')'))
			break;   /* "()" */
		if (empty) {
			expected(ps, "an argument type");
			ok = false;
			break;
		}
		if (pr.nargs == 0 && w.is_void && w.pointers == 0 && !name[0] && !w.base_name[0] &&
		    is_punct(ps, ')'))
			break;   /* "(void)" */
		enum dt_class cls;
		if (!classify(ps, &w, line, &cls)) {
			ok = false;
			break;
		}
		if (pr.nargs == DT_MAX_ARGS) {
			lex_error(&ps->lx, line, "probe \"%s\" has more than %d arguments (the USDT limit)",
				  pr.name, DT_MAX_ARGS);
			ok = false;
			break;
		}
		pr.args = xrealloc(pr.args, (pr.nargs + 1) * sizeof(*pr.args));
		pr.args[pr.nargs].type = xstrdup(w.text);
		pr.args[pr.nargs].name = name[0] ? xstrdup(name) : NULL;
		pr.args[pr.nargs].cls = cls;
		pr.nargs++;
		if (is_punct(ps, ','))
			advance(ps);
		else
			break;
	}
	if (ok && !expect_punct(ps, ')', "\",\" or \")\" in the argument list"))
		ok = false;
	if (ok && is_punct(ps, ':')) {
		/* translated argument types (DTrace's "probe p(a *x) : (b *x);"): skipped */
		advance(ps);
		if (!expect_punct(ps, '(', "\"(\" after \":\" (translated argument types)"))
			ok = false;
		int depth = 1;
		while (ok && depth > 0) {
			if (ps->tok.kind == T_END) {
				expected(ps, "\")\"");
				ok = false;
				break;
			}
			if (is_punct(ps, '('))
				depth++;
			else if (is_punct(ps, ')'))
				depth--;
			advance(ps);
		}
	}
	/* ';' ends a declaration; the older style that systemtap's dtrace also
	 * accepts leaves it out before the next probe or the provider's '}'. */
	if (ok && is_punct(ps, ';'))
		advance(ps);
	else if (ok && !is_word(ps, "probe") && !is_punct(ps, '}') &&
		 !expect_punct(ps, ';', "\";\" after the probe declaration"))
		ok = false;
	if (!ok) {
		for (unsigned i = 0; i < pr.nargs; i++) {
			free(pr.args[i].type);
			free(pr.args[i].name);
		}
		free(pr.args);
		free(pr.name);
		return false;
	}
	prov->probes = xrealloc(prov->probes, (prov->nprobes + 1) * sizeof(*prov->probes));
	prov->probes[prov->nprobes++] = pr;
	ps->nprobes++;
	return true;
}

/* provider NAME { probe...; } ; */
static bool parse_provider(struct parser *ps, struct dt_file *out)
{
	advance(ps);   /* "provider" */
	if (ps->tok.kind != T_IDENT) {
		expected(ps, "a provider name after \"provider\"");
		return false;
	}
	if (out->nproviders == DT_MAX_PROVIDERS) {
		lex_error(&ps->lx, ps->tok.line, "more than %d providers in one file, the most mark dtrace takes",
			  DT_MAX_PROVIDERS);
		return false;
	}
	for (unsigned i = 0; i < out->nproviders; i++) {
		if (strcmp(out->providers[i].name, ps->tok.text) == 0) {
			lex_error(&ps->lx, ps->tok.line, "provider \"%s\" is defined twice", ps->tok.text);
			return false;
		}
	}
	out->providers = xrealloc(out->providers, (out->nproviders + 1) * sizeof(*out->providers));
	struct dt_provider *prov = &out->providers[out->nproviders++];
	memset(prov, 0, sizeof(*prov));
	prov->name = xstrdup(ps->tok.text);
	advance(ps);
	if (!expect_punct(ps, '{', "\"{\" after the provider name"))
		return false;
	while (!is_punct(ps, '}')) {
		if (ps->lx.failed)
			return false;
		if (is_word(ps, "probe")) {
			if (!parse_probe(ps, prov))
				return false;
		} else {
			expected(ps, "\"probe\" or \"}\" in the provider block");
			return false;
		}
	}
	advance(ps);
	/* The closing ';' is required by DTrace; systemtap's dtrace accepts its absence. */
	if (is_punct(ps, ';'))
		advance(ps);
	return true;
}

static void add_typedef(struct parser *ps, const char *name, enum dt_class cls, bool aggregate,
			int pointers, bool char_base)
{
	if (ps->ntypedefs == DT_MAX_TYPEDEFS) {
		lex_error(&ps->lx, ps->tok.line, "more than %d typedefs in one file, the most mark dtrace takes",
			  DT_MAX_TYPEDEFS);
		return;
	}
	ps->typedefs = xrealloc(ps->typedefs, (ps->ntypedefs + 1) * sizeof(*ps->typedefs));
	ps->typedefs[ps->ntypedefs].name = xstrdup(name);
	ps->typedefs[ps->ntypedefs].cls = cls;
	ps->typedefs[ps->ntypedefs].is_aggregate = aggregate;
	ps->typedefs[ps->ntypedefs].pointers = pointers;
	ps->typedefs[ps->ntypedefs].char_base = char_base;
	ps->ntypedefs++;
}

/* Skip a balanced { ... } block; the current token is '{'. */
static bool skip_block(struct parser *ps)
{
	unsigned line = ps->tok.line;
	int depth = 0;
	do {
		if (ps->tok.kind == T_END) {
			lex_error(&ps->lx, line, "\"{\" is never closed (expected \"}\")");
			return false;
		}
		if (is_punct(ps, '{'))
			depth++;
		else if (is_punct(ps, '}'))
			depth--;
		advance(ps);
	} while (depth > 0);
	return true;
}

/*
 * typedef TYPE NAME;            remembered
 * typedef struct X { ... } NAME; remembered as an aggregate
 */
static bool parse_typedef(struct parser *ps)
{
	advance(ps);   /* "typedef" */
	if (is_word(ps, "struct") || is_word(ps, "union")) {
		/* look ahead for a body: struct X { ... } */
		advance(ps);
		if (ps->tok.kind == T_IDENT)
			advance(ps);
		if (is_punct(ps, '{') && !skip_block(ps))
			return false;
		int pointers = 0;
		while (is_punct(ps, '*')) {
			pointers++;
			advance(ps);
		}
		if (ps->tok.kind != T_IDENT) {
			expected(ps, "the name the typedef defines");
			return false;
		}
		add_typedef(ps, ps->tok.text, DT_POINTER, pointers == 0, pointers, false);
		advance(ps);
		return expect_punct(ps, ';', "\";\" after the typedef");
	}
	if (is_word(ps, "enum")) {
		advance(ps);
		if (ps->tok.kind == T_IDENT)
			advance(ps);
		if (is_punct(ps, '{') && !skip_block(ps))
			return false;
		if (ps->tok.kind != T_IDENT) {
			expected(ps, "the name the typedef defines");
			return false;
		}
		add_typedef(ps, ps->tok.text, DT_INT, false, 0, false);
		advance(ps);
		return expect_punct(ps, ';', "\";\" after the typedef");
	}
	struct type_words w;
	char name[128];
	unsigned line = ps->tok.line;
	if (!read_type(ps, ";", &w, name, sizeof(name)))
		return false;
	if (!name[0]) {
		lex_error(&ps->lx, line, "expected the name the typedef defines before \";\"");
		return false;
	}
	/* Resolve through an earlier typedef: "typedef str_t name_t;" */
	int pointers = w.pointers;
	bool char_base = w.is_char || w.is_string;
	bool agg = w.aggregate != NULL;
	enum dt_class cls = DT_INT;
	const struct typedef_entry *base = w.base_name[0] ? find_typedef(ps, w.base_name) : NULL;
	if (base) {
		pointers += base->pointers;
		char_base = base->char_base;
		agg = base->is_aggregate && pointers == 0;
		cls = base->cls;
	} else if (pointers == 0 && !agg) {
		if (!classify(ps, &w, line, &cls))
			return false;
	}
	add_typedef(ps, name, pointers ? DT_POINTER : cls, agg && pointers == 0, pointers, char_base);
	return expect_punct(ps, ';', "\";\" after the typedef");
}

int dt_parse(const char *text, const char *path, int preprocessed, struct dt_file *out, FILE *err)
{
	struct parser ps;
	memset(&ps, 0, sizeof(ps));
	memset(out, 0, sizeof(*out));
	ps.lx.p = text;
	ps.lx.file = path;
	ps.lx.line = 1;
	ps.lx.preprocessed = preprocessed != 0;
	ps.lx.at_line_start = true;
	ps.lx.err = err;
	advance(&ps);
	while (ps.tok.kind != T_END && !ps.lx.failed) {
		if (is_word(&ps, "provider")) {
			if (!parse_provider(&ps, out))
				break;
		} else if (is_word(&ps, "typedef")) {
			if (!parse_typedef(&ps))
				break;
		} else if (is_word(&ps, "struct") || is_word(&ps, "union") || is_word(&ps, "enum")) {
			/* a definition: struct foo { ... }; */
			advance(&ps);
			if (ps.tok.kind == T_IDENT)
				advance(&ps);
			if (is_punct(&ps, '{') && !skip_block(&ps))
				break;
			if (!expect_punct(&ps, ';', "\";\" after the definition"))
				break;
		} else if (is_word(&ps, "inline") || is_word(&ps, "translator")) {
			/* D's inline constants and translators do not describe probes: skipped */
			while (ps.tok.kind != T_END && !is_punct(&ps, ';') && !is_punct(&ps, '{'))
				advance(&ps);
			if (is_punct(&ps, '{') && !skip_block(&ps))
				break;
			if (!expect_punct(&ps, ';', "\";\""))
				break;
		} else if (is_punct(&ps, ';')) {
			advance(&ps);
		} else {
			expected(&ps, "\"provider\", \"typedef\" or a comment");
			break;
		}
	}
	bool failed = ps.lx.failed;
	if (!failed && out->nproviders == 0) {
		fprintf(err, "%s: error: no provider definition found (expected \"provider NAME { probe ...; };\")\n",
			path);
		failed = true;
	}
	for (unsigned i = 0; !failed && i < out->nproviders; i++) {
		if (!is_identifier_ok(out->providers[i].name))
			failed = true;
	}
	for (size_t i = 0; i < ps.ntypedefs; i++)
		free(ps.typedefs[i].name);
	free(ps.typedefs);
	for (size_t i = 0; i < ps.lx.nfiles; i++)
		free(ps.lx.files[i]);
	free(ps.lx.files);
	if (failed) {
		dt_free(out);
		return -1;
	}
	return 0;
}

void dt_free(struct dt_file *f)
{
	for (unsigned i = 0; i < f->nproviders; i++) {
		struct dt_provider *p = &f->providers[i];
		for (unsigned j = 0; j < p->nprobes; j++) {
			for (unsigned k = 0; k < p->probes[j].nargs; k++) {
				free(p->probes[j].args[k].type);
				free(p->probes[j].args[k].name);
			}
			free(p->probes[j].args);
			free(p->probes[j].name);
		}
		free(p->probes);
		free(p->name);
	}
	free(f->providers);
	memset(f, 0, sizeof(*f));
}

const char *dt_class_format(enum dt_class cls)
{
	switch (cls) {
	case DT_INT: return "%d";
	case DT_UINT: return "%u";
	case DT_LONG: return "%ld";
	case DT_ULONG: return "%lu";
	case DT_LLONG: return "%lld";
	case DT_ULLONG: return "%llu";
	case DT_DOUBLE: return "%f";
	case DT_STRING: return "%s";
	case DT_POINTER: return "%p";
	}
	return "%p";
}

const char *dt_class_ctype(enum dt_class cls)
{
	switch (cls) {
	case DT_INT: return "int";
	case DT_UINT: return "unsigned int";
	case DT_LONG: return "long";
	case DT_ULONG: return "unsigned long";
	case DT_LLONG: return "long long";
	case DT_ULLONG: return "unsigned long long";
	case DT_DOUBLE: return "double";
	case DT_STRING: return "const char*";
	case DT_POINTER: return "const void*";
	}
	return "const void*";
}

char *dt_marker_name(const char *probe)
{
	size_t n = strlen(probe);
	char *s = malloc(n + 1);
	if (!s)
		return NULL;
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		if (probe[i] == '_' && probe[i + 1] == '_') {
			s[o++] = '-';
			i++;
		} else {
			s[o++] = probe[i];
		}
	}
	s[o] = '\0';
	return s;
}
