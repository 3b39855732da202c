/*
 * The marker registry.
 *
 * Every executable and shared object that includes <mark/mark.h> calls
 * mark__register_object() from a constructor with the bounds of its own
 * __mark_descs (one descriptor per site) and __mark_sites (one PC-relative
 * entry per patchable instruction) sections, and mark__unregister_object()
 * from a destructor, so dlopen/dlclose keep the registry exact.
 *
 * Sites are grouped by name into markers.  Markers are interned: once a
 * name has been seen its struct mark_marker lives until exit, so the hot
 * path may dereference desc->marker without any lock or reference count,
 * and reloading a library finds its old marker (memory stays bounded by
 * the number of distinct names).
 *
 * Arming is a list of rules (glob, arm|disarm) applied in order; a marker
 * is armed when the last rule that matches its name arms it.  The rules
 * are kept so that objects loaded later get the same answer.
 *
 * Locking: registry_mutex protects everything here.  Constructors run
 * with the dynamic loader's lock held, so nothing under registry_mutex may
 * call into the loader (dladdr and friends are called before locking).
 */
#define _GNU_SOURCE
#include "internal.h"
#include "../arch/patch.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <urcu-bp.h>
#if defined(__has_include)
#if __has_include(<sys/single_threaded.h>)
#include <sys/single_threaded.h>
#define MARK_HAVE_SINGLE_THREADED 1
#endif
#endif

struct mark_object {
	const void *descs_begin;
	unsigned refs;
	char *path;
	struct mark_site_rt *sites;
	size_t nsites;
	struct mark_object *next;
};

struct arm_rule {
	char *glob;
	bool arm;
	struct arm_rule *next;
};

#define MARKER_HASH_SIZE 4096

/* The first variable of the mark_fork_state section (the core's objects are
 * linked first): aligned so that the section, a few hundred bytes, never
 * straddles a page wherever the rest of .data puts it (in the ASan build
 * it once began 64 bytes before a page's end: two copy-on-write pages per
 * fork; test process_fork_state_page). */
static MARK_FORK_STATE pthread_mutex_t registry_mutex __attribute__((aligned(1024))) = PTHREAD_MUTEX_INITIALIZER;

/* The fork prepare handler takes registry_mutex: warnings raised under it
 * are written after it is released (mark_warn_hold). */
static void registry_lock(void)
{
	pthread_mutex_lock(&registry_mutex);
	mark_warn_hold();
}

static void registry_unlock(void)
{
	pthread_mutex_unlock(&registry_mutex);
	mark_warn_release();
}
static struct mark_object *objects;

/*
 * Modules built on the core start themselves: the control agent registers
 * a hook here from its own constructor, and the core calls every hook,
 * with no lock held, after each object with markers registers.  The core
 * knows nothing of what a hook does.  Hooks are only added (under
 * registry_mutex) and never removed; callers copy the table under the lock.
 */
#define MAX_OBJECT_HOOKS 4
static void (*object_hooks[MAX_OBJECT_HOOKS])(void);
static unsigned nobject_hooks;

int mark_core_on_object_registered(void (*hook)(void))
{
	registry_lock();
	if (nobject_hooks == MAX_OBJECT_HOOKS) {
		registry_unlock();
		return mark_error(ENOSPC, "mark: core: more than %d module hooks", MAX_OBJECT_HOOKS);
	}
	object_hooks[nobject_hooks++] = hook;
	bool have_objects = objects != NULL;
	registry_unlock();
	/* Constructor order between the objects of one link is not fixed: an
	 * object may have registered before the module's constructor ran. */
	if (have_objects)
		hook();
	return 0;
}
static struct mark_marker *marker_hash[MARKER_HASH_SIZE];
static struct mark_marker **markers;       /* by id */
static size_t nmarkers, cap_markers;
static struct arm_rule *rules;             /* in order of application */

void mark_registry_lock(void)
{
	registry_lock();
}

void mark_registry_unlock(void)
{
	registry_unlock();
}

/*
 * fork(): the child must not inherit a held registry lock or RCU state.
 *
 * A single-threaded process needs neither: no other thread can hold the
 * registry lock or liburcu-bp's locks while its only thread forks, and
 * liburcu-bp's registry holds no other thread to prune in the child.  The
 * handlers then write nothing, and that matters: every page written after a
 * fork is a copy-on-write fault in the parent and another in the child
 * (two faults per fork in a forking server, measured by process_fork_faults
 * and table 9 of docs/benchmarks.md).  The C library's __libc_single_threaded
 * is true until the process first creates a thread and never becomes true
 * again in that process (glibc 2.36 leaves it false in the child of a
 * multi-threaded parent as well), so it can only err towards locking.
 * `fork_locked` carries the prepare handler's decision to the parent and
 * child handlers, so both always match it whatever __libc_single_threaded
 * says by then; it is written only when the lock is taken, on the page the
 * lock itself dirties (MARK_FORK_STATE), and read otherwise.  No atomics:
 * the prepare, parent and child handlers of one fork run in the forking
 * thread, and a concurrent fork by another thread (multi-threaded case)
 * waits for registry_mutex in its own prepare handler before touching it.
 * A fork from a signal handler that interrupted the registry's own thread
 * deadlocked in the prepare handler before; now the child inherits the held
 * lock instead: neither is supported (docs/markers.md).
 */
static MARK_FORK_STATE bool fork_locked;

static void before_fork(void)
{
#ifdef MARK_HAVE_SINGLE_THREADED
	if (__libc_single_threaded)
		return;
#endif
	pthread_mutex_lock(&registry_mutex);
	urcu_bp_before_fork();
	fork_locked = true;
}

static void after_fork_parent(void)
{
	if (!fork_locked)
		return;
	fork_locked = false;
	urcu_bp_after_fork_parent();
	pthread_mutex_unlock(&registry_mutex);
}

static void after_fork_child(void)
{
	mark_read_fallback_after_fork_child();
	if (!fork_locked)
		return;
	fork_locked = false;
	urcu_bp_after_fork_child();
	pthread_mutex_unlock(&registry_mutex);
}

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init_once_fn(void)
{
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

void mark_init(void)
{
	pthread_once(&init_once, init_once_fn);
}

static unsigned hash_name(const char *s)
{
	return mark_name_hash(s) % MARKER_HASH_SIZE;
}

bool mark_glob_match(const char *glob, const struct mark_marker *m)
{
	/* "net_*" also matches provider-qualified names such as "myapp:net_rx". */
	return mark_name_glob_match(glob, m->name, m->name != m->probe ? m->probe : NULL);
}

struct mark_marker **mark_markers_locked(size_t *count)
{
	*count = nmarkers;
	return markers;
}

static char *display_name(const char *provider, const char *probe)
{
	char *s;
	if (strcmp(provider, "mark") == 0)
		s = strdup(probe);
	else if (asprintf(&s, "%s:%s", provider, probe) < 0)
		s = NULL;
	return s;
}

struct mark_marker *mark_marker_lookup_locked(const char *provider, const char *probe)
{
	char *name = display_name(provider, probe);
	if (!name)
		return NULL;
	unsigned h = hash_name(name);
	for (struct mark_marker *m = marker_hash[h]; m; m = m->hash_next) {
		if (strcmp(m->name, name) == 0) {
			free(name);
			return m;
		}
	}
	free(name);
	return NULL;
}

static bool rules_say_armed(const struct mark_marker *m)
{
	bool armed = false;
	for (const struct arm_rule *r = rules; r; r = r->next)
		if (mark_glob_match(r->glob, m))
			armed = r->arm;
	return armed;
}

static struct mark_marker *marker_get_locked(const struct mark__site *desc, bool *created)
{
	const char *provider = desc->provider ? desc->provider : "mark";
	struct mark_marker *m = mark_marker_lookup_locked(provider, desc->name);
	*created = false;
	if (m)
		return m;
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->provider = strdup(provider);
	m->probe = strdup(desc->name);
	m->name = strcmp(provider, "mark") == 0 ? m->probe : display_name(provider, desc->name);
	if (!m->provider || !m->probe || !m->name) {
		free(m->provider);
		if (m->name != m->probe)
			free(m->name);
		free(m->probe);
		free(m);
		return NULL;
	}
	m->eventhandler = (desc->flags & MARK__F_EVENTHANDLER) != 0;
	if (nmarkers == cap_markers) {
		size_t cap = cap_markers ? cap_markers * 2 : 64;
		struct mark_marker **n = realloc(markers, cap * sizeof(*n));
		if (!n) {
			free(m->provider);
			if (m->name != m->probe)
				free(m->name);
			free(m->probe);
			free(m);
			return NULL;
		}
		markers = n;
		cap_markers = cap;
	}
	m->id = (unsigned)nmarkers;
	markers[nmarkers++] = m;
	unsigned h = hash_name(m->name);
	m->hash_next = marker_hash[h];
	marker_hash[h] = m;
	m->user_armed = !m->eventhandler && rules_say_armed(m);
	*created = true;
	return m;
}

/* Give the marker its format and argument layout from the first real site. */
static bool marker_take_format_locked(struct mark_marker *m, const struct mark__site *desc)
{
	enum mark_arg_type types[MARK_MAX_MARKER_ARGS];
	unsigned sizes[MARK_MAX_MARKER_ARGS];
	char err[256];
	int n = mark_format_parse(desc->format, types, sizes, MARK_MAX_MARKER_ARGS, err, sizeof(err));
	if (n < 0) {
		mark_warn("mark: marker %s at %s:%u: %s; the site is never armed\n", m->name,
			desc->file, desc->line, err);
		return false;
	}
	if ((unsigned)n != desc->nargs) {
		mark_warn(
			"mark: marker %s at %s:%u: format \"%s\" has %d conversions but %u arguments "
			"were passed; the site is never armed\n",
			m->name, desc->file, desc->line, desc->format, n, desc->nargs);
		return false;
	}
	struct mark_arg *args = calloc((size_t)n + 1, sizeof(*args));
	char *names[MARK_MAX_MARKER_ARGS] = { 0 };
	char *format = strdup(desc->format);
	if (!args || !format) {
		free(args);
		free(format);
		return false;
	}
	mark_format_arg_names(desc->format, desc->arg_names, (unsigned)n, names);
	for (int i = 0; i < n; i++) {
		args[i].name = names[i];
		args[i].type = types[i];
		args[i].size = sizes[i];
	}
	m->args = args;
	m->nargs = (unsigned)n;
	m->format = format;
	m->first_file = desc->file;
	m->first_line = desc->line;
	m->format_known = true;
	return true;
}

static bool site_wants_armed(const struct mark_site_rt *s)
{
	if (s->conflict)
		return false;
	if (s->marker->eventhandler)
		return s->marker->eh_arm_count > 0;
	return s->marker->user_armed;
}

/*
 * Bring every listed site to the state its marker wants.  All or nothing:
 * code is patched first, and only if that succeeds are generic flags and
 * the recorded states changed.  Returns the number of sites changed.
 */
static int apply_locked(struct mark_site_rt **sites, size_t n)
{
	struct mark_patch *patches = n ? malloc(n * sizeof(*patches)) : NULL;
	size_t np = 0;
	if (n && !patches)
		return mark_error(ENOMEM, "mark: out of memory while arming %zu sites", n);
	/* Sites about to be armed admit probe calls first (see mark__site.armed). */
	for (size_t i = 0; i < n; i++)
		if (site_wants_armed(sites[i]) && !sites[i]->armed)
			__atomic_store_n(&sites[i]->desc->armed, 1, __ATOMIC_RELEASE);
	for (size_t i = 0; i < n; i++) {
		struct mark_site_rt *s = sites[i];
		bool want = site_wants_armed(s);
		if (want == s->armed || s->kind == MARK_KIND_GENERIC)
			continue;
		patches[np].code = s->code;
		patches[np].target = s->target;
		patches[np].kind = s->kind == MARK_KIND_JUMP ? MARK_PATCH_JUMP : MARK_PATCH_IMMEDIATE;
		patches[np].arm = want;
		np++;
	}
	int err = mark_arch_patch(patches, np);
	free(patches);
	if (err) {
		for (size_t i = 0; i < n; i++)
			if (!sites[i]->armed)
				__atomic_store_n(&sites[i]->desc->armed, 0, __ATOMIC_RELAXED);
		return err;
	}
	int changed = 0;
	for (size_t i = 0; i < n; i++) {
		struct mark_site_rt *s = sites[i];
		bool want = site_wants_armed(s);
		if (want == s->armed)
			continue;
		if (s->kind == MARK_KIND_GENERIC) {
			/* The flag is also the USDT semaphore: the kernel adds its
			 * own count for attached uprobes, so add and subtract ours. */
			if (want)
				__atomic_add_fetch(&s->desc->semaphore, 1, __ATOMIC_RELEASE);
			else
				__atomic_sub_fetch(&s->desc->semaphore, 1, __ATOMIC_RELEASE);
		}
		s->armed = want;
		changed++;
	}
	/* Disarmed sites stop admitting probe calls; callers that need "no probe
	 * runs any more" wait for a grace period (mark_synchronize()). */
	for (size_t i = 0; i < n; i++)
		if (!sites[i]->armed)
			__atomic_store_n(&sites[i]->desc->armed, 0, __ATOMIC_RELEASE);
	return changed;
}

static int collect_sites_locked(struct mark_marker **ms, size_t nm, struct mark_site_rt ***out, size_t *nout)
{
	size_t total = 0;
	for (size_t i = 0; i < nm; i++)
		total += ms[i]->nsites;
	struct mark_site_rt **sites = total ? malloc(total * sizeof(*sites)) : NULL;
	if (total && !sites)
		return mark_error(ENOMEM, "mark: out of memory");
	size_t k = 0;
	for (size_t i = 0; i < nm; i++)
		for (size_t j = 0; j < ms[i]->nsites; j++)
			sites[k++] = ms[i]->sites[j];
	*out = sites;
	*nout = total;
	return 0;
}

int mark_eventhandler_arm_locked(struct mark_marker *m, bool on)
{
	if (on)
		m->eh_arm_count++;
	else if (m->eh_arm_count > 0)
		m->eh_arm_count--;
	struct mark_site_rt **sites = NULL;
	size_t n = 0;
	int err = collect_sites_locked(&m, 1, &sites, &n);
	if (err)
		return err;
	int r = apply_locked(sites, n);
	free(sites);
	if (r < 0) {
		if (on)
			m->eh_arm_count--;
		else
			m->eh_arm_count++;
	}
	return r;
}

struct mark_marker *mark_eventhandler_marker_get_locked(const char *name)
{
	/* A descriptor-shaped key: marker_get_locked reads provider, name and flags. */
	struct mark__site key;
	memset(&key, 0, sizeof(key));
	key.provider = "eventhandler";
	key.name = name;
	key.format = "";
	key.flags = MARK__F_EVENTHANDLER;
	bool created;
	struct mark_marker *m = marker_get_locked(&key, &created);
	return m && m->eventhandler ? m : NULL;
}

/* A rule for `glob`, or NULL (out of memory).  Made before anything is
 * patched, so that a rule that cannot be stored fails the whole call: sites
 * armed now without the rule that arms the same markers in objects loaded
 * later would disagree. */
static struct arm_rule *rule_new(const char *glob, bool arm)
{
	struct arm_rule *r = calloc(1, sizeof(*r));
	if (r && !(r->glob = strdup(glob))) {
		free(r);
		return NULL;
	}
	if (r)
		r->arm = arm;
	return r;
}

static void rule_free(struct arm_rule *r)
{
	free(r->glob);
	free(r);
}

/* Append `rule` (taken over).  A rule for "*" overrides everything before
 * it; an identical glob replaces its older rule.  Either way the list stays
 * short. */
static void add_rule_locked(struct arm_rule *rule)
{
	struct arm_rule **pp = &rules;
	while (*pp) {
		struct arm_rule *r = *pp;
		if (strcmp(rule->glob, "*") == 0 || strcmp(r->glob, rule->glob) == 0) {
			*pp = r->next;
			rule_free(r);
		} else {
			pp = &r->next;
		}
	}
	*pp = rule;
}

static int arm_glob(const char *glob, bool arm)
{
	char why[160];
	if (mark_glob_check(glob, why, sizeof(why)) != 0)
		return mark_error(EINVAL, "mark: %s: %s", arm ? "mark_arm" : "mark_disarm", why);
	mark_init();
	mark_error_clear();
	struct arm_rule *rule = rule_new(glob, arm);
	if (!rule)
		return mark_error(ENOMEM, "mark: out of memory; no site was changed");
	registry_lock();
	struct mark_marker **matched = nmarkers ? malloc(nmarkers * sizeof(*matched)) : NULL;
	bool *previous = nmarkers ? malloc(nmarkers * sizeof(*previous)) : NULL;
	size_t nm = 0;
	if (nmarkers && (!matched || !previous)) {
		free(matched);
		free(previous);
		registry_unlock();
		rule_free(rule);
		return mark_error(ENOMEM, "mark: out of memory; no site was changed");
	}
	for (size_t i = 0; i < nmarkers; i++) {
		struct mark_marker *m = markers[i];
		if (m->eventhandler || !mark_glob_match(glob, m))
			continue;
		previous[nm] = m->user_armed;
		m->user_armed = arm;
		matched[nm++] = m;
	}
	struct mark_site_rt **sites = NULL;
	size_t ns = 0;
	int r = collect_sites_locked(matched, nm, &sites, &ns);
	if (r == 0)
		r = apply_locked(sites, ns);
	if (r < 0) {
		for (size_t i = 0; i < nm; i++)
			matched[i]->user_armed = previous[i];
		rule_free(rule);
	} else {
		add_rule_locked(rule);
	}
	registry_unlock();
	free(sites);
	free(matched);
	free(previous);
	return r;
}

int mark_arm(const char *glob)
{
	return arm_glob(glob, true);
}

int mark_disarm(const char *glob)
{
	return arm_glob(glob, false);
}

static char *object_path(const void *addr)
{
	Dl_info info;
	char buf[PATH_MAX];
	if (dladdr(addr, &info) && info.dli_fname && strchr(info.dli_fname, '/') &&
	    realpath(info.dli_fname, buf))
		return strdup(buf);
	/* The main program: dladdr reports argv[0], which may not be a path. */
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
	if (n > 0) {
		buf[n] = '\0';
		return strdup(buf);
	}
	return strdup(info.dli_fname ? info.dli_fname : "?");
}

static bool marker_add_site_locked(struct mark_marker *m, struct mark_site_rt *s)
{
	if (m->nsites == m->cap_sites) {
		size_t cap = m->cap_sites ? m->cap_sites * 2 : 4;
		struct mark_site_rt **n = realloc(m->sites, cap * sizeof(*n));
		if (!n)
			return false;
		m->sites = n;
		m->cap_sites = cap;
	}
	m->sites[m->nsites++] = s;
	return true;
}

static void marker_remove_site_locked(struct mark_marker *m, const struct mark_site_rt *s)
{
	for (size_t i = 0; i < m->nsites; i++) {
		if (m->sites[i] == s) {
			m->sites[i] = m->sites[--m->nsites];
			return;
		}
	}
}

static struct mark__site *entry_desc(const struct mark__code_entry *e)
{
	return (struct mark__site *)((const char *)&e->desc + e->desc);
}

static int compare_pointers(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;
	return x < y ? -1 : x > y;
}

/*
 * The descriptors of an object: those in its __mark_descs section (C) and
 * those its code entries point to (C++ template members, which GCC does not
 * place in the section), each once.
 */
static struct mark__site **collect_descs(struct mark__site *descs, size_t ndescs,
					 const struct mark__code_entry *codes, size_t ncodes, size_t *count)
{
	struct mark__site **all = malloc((ndescs + ncodes + 1) * sizeof(*all));
	size_t n = 0;
	if (!all)
		return NULL;
	for (size_t i = 0; i < ndescs; i++)
		all[n++] = &descs[i];
	for (size_t i = 0; i < ncodes; i++)
		all[n++] = entry_desc(&codes[i]);
	qsort(all, n, sizeof(*all), compare_pointers);
	size_t unique = 0;
	for (size_t i = 0; i < n; i++)
		if (unique == 0 || all[unique - 1] != all[i])
			all[unique++] = all[i];
	*count = unique;
	return all;
}

static const void *object_key(const void *descs_begin, const void *codes_begin)
{
	return descs_begin ? descs_begin : codes_begin;
}

void mark__register_object(const void *descs_begin, const void *descs_end,
			   const void *codes_begin, const void *codes_end)
{
	const void *key = object_key(descs_begin != descs_end ? descs_begin : NULL,
				     codes_begin != codes_end ? codes_begin : NULL);
	if (!key)
		return;
	mark_init();
	char *path = object_path(key);

	registry_lock();
	for (struct mark_object *o = objects; o; o = o->next) {
		if (o->descs_begin == key) {
			o->refs++;   /* another translation unit of the same object */
			registry_unlock();
			free(path);
			return;
		}
	}

	struct mark__site *section_descs = (struct mark__site *)descs_begin;
	size_t nsection = descs_begin ? (size_t)((const struct mark__site *)descs_end - section_descs) : 0;
	const struct mark__code_entry *codes = codes_begin;
	size_t ncodes = codes ? (size_t)((const struct mark__code_entry *)codes_end - codes) : 0;
	size_t ndescs = 0;
	struct mark__site **descs = collect_descs(section_descs, nsection, codes, ncodes, &ndescs);

	struct mark_object *obj = calloc(1, sizeof(*obj));
	struct mark_site_rt *sites = calloc(ndescs + ncodes + 1, sizeof(*sites));
	struct mark_marker **new_markers = calloc(ndescs + 1, sizeof(*new_markers));
	if (!descs || !obj || !sites || !new_markers) {
		registry_unlock();
		mark_warn("mark: out of memory registering the markers of %s\n", path);
		free(descs);
		free(obj);
		free(sites);
		free(new_markers);
		free(path);
		return;
	}
	obj->descs_begin = key;
	obj->refs = 1;
	obj->path = path;
	obj->sites = sites;
	size_t nnew = 0;

	/* Pass 1: every descriptor gets its marker. */
	for (size_t i = 0; i < ndescs; i++) {
		struct mark__site *d = descs[i];
		if (d->abi != MARK__ABI) {
			mark_warn("mark: %s: a marker descriptor has ABI %u, this libmark expects %u; "
					"rebuild it against the installed <mark/mark.h>\n", path, d->abi, MARK__ABI);
			continue;
		}
		bool created;
		struct mark_marker *m = marker_get_locked(d, &created);
		if (!m) {
			mark_warn("mark: out of memory registering marker %s of %s\n", d->name, path);
			continue;
		}
		if (created)
			new_markers[nnew++] = m;
		if (!(d->flags & MARK__F_ENABLED_TEST) && !m->format_known)
			marker_take_format_locked(m, d);
		/* Publish: mark__fire() loads this with acquire. */
		__atomic_store_n(&d->marker, m, __ATOMIC_RELEASE);
	}

	/* Pass 2: the sites.  Generic descriptors are sites themselves; jump and
	 * immediate sites are the code entries (a descriptor may have several
	 * when the compiler duplicated the code, or none when it removed it). */
	size_t n = 0;
	for (size_t i = 0; i < ndescs + ncodes; i++) {
		struct mark__site *d;
		struct mark_site_rt *s = &sites[n];
		if (i < ndescs) {
			d = descs[i];
			if (d->kind != MARK_KIND_GENERIC)
				continue;
		} else {
			const struct mark__code_entry *e = &codes[i - ndescs];
			if (e->code == 0)
				continue;   /* data-only entry: its generic descriptor is handled above */
			d = entry_desc(e);
			s->code = (uint8_t *)((const char *)&e->code + e->code);
			s->target = e->target ? (uint8_t *)((const char *)&e->target + e->target) : NULL;
			uint8_t pk = d->kind == MARK_KIND_JUMP ? MARK_PATCH_JUMP : MARK_PATCH_IMMEDIATE;
			if (!mark_arch_site_valid(s->code, pk)) {
				mark_warn("mark: %s: the code of marker %s at %s:%u is not the expected "
						"instruction; the site is ignored\n", path, d->name, d->file, d->line);
				continue;
			}
		}
		struct mark_marker *m = __atomic_load_n(&d->marker, __ATOMIC_RELAXED);
		if (d->abi != MARK__ABI || !m)
			continue;
		s->desc = d;
		s->object = obj;
		s->marker = m;
		s->kind = d->kind;
		if (!(d->flags & MARK__F_ENABLED_TEST)) {
			if (!m->format_known) {
				s->conflict = true;
			} else if (strcmp(m->format, d->format) != 0) {
				s->conflict = true;
				/* One descriptor may have several code entries (the
				 * compiler duplicated the site, e.g. by inlining): the
				 * user wrote one site, so say it once.  Conflicts are
				 * rare, so the linear look-back costs nothing normally. */
				bool said = false;
				for (size_t k = 0; k < n && !said; k++)
					said = sites[k].desc == d && sites[k].conflict;
				if (!said)
					mark_warn("mark: marker %s: the site at %s:%u has format \"%s\", but the "
						"marker was first defined with \"%s\" at %s:%u; that site is never armed\n",
						m->name, d->file, d->line, d->format, m->format, m->first_file,
						m->first_line);
			}
		}
		if (!marker_add_site_locked(m, s))
			continue;
		n++;
	}
	obj->nsites = n;
	obj->next = objects;
	objects = obj;
	free(descs);

	/* Probes registered before this object was loaded. */
	void **retired = NULL;
	size_t nretired = 0;
	for (size_t i = 0; i < nnew; i++)
		mark_probes_rebuild_locked(new_markers[i], &retired, &nretired);

	/* Arming rules given before this object was loaded. */
	struct mark_site_rt **ptrs = n ? malloc(n * sizeof(*ptrs)) : NULL;
	if (ptrs) {
		for (size_t i = 0; i < n; i++)
			ptrs[i] = &sites[i];
		if (apply_locked(ptrs, n) < 0)
			mark_warn("%s\n", mark_last_error());
		free(ptrs);
	}
	void (*hooks[MAX_OBJECT_HOOKS])(void);
	unsigned nhooks = nobject_hooks;
	memcpy(hooks, object_hooks, sizeof(hooks));
	registry_unlock();
	mark_probes_retire(retired, nretired);
	free(new_markers);
	/* The process has markers: tell the modules (the agent starts), no lock held. */
	for (unsigned i = 0; i < nhooks; i++)
		hooks[i]();
}

void mark__unregister_object(const void *descs_begin, const void *codes_begin)
{
	const void *key = object_key(descs_begin, codes_begin);
	if (!key)
		return;
	registry_lock();
	struct mark_object **pp = &objects;
	while (*pp && (*pp)->descs_begin != key)
		pp = &(*pp)->next;
	struct mark_object *obj = *pp;
	if (!obj || --obj->refs > 0) {
		registry_unlock();
		return;
	}
	*pp = obj->next;
	for (size_t i = 0; i < obj->nsites; i++) {
		struct mark_site_rt *s = &obj->sites[i];
		/* The code and flags go away with the object; only forget them. */
		marker_remove_site_locked(s->marker, s);
	}
	registry_unlock();
	free(obj->sites);
	free(obj->path);
	free(obj);
}

/* ---------------- queries ---------------- */

int mark_list(const char *glob, int (*cb)(const struct mark_marker *m, void *arg), void *arg)
{
	if (!cb)
		return mark_error(EINVAL, "mark_list: the callback is NULL");
	registry_lock();
	struct mark_marker **copy = nmarkers ? malloc(nmarkers * sizeof(*copy)) : NULL;
	size_t n = 0;
	if (nmarkers && !copy) {
		registry_unlock();
		return mark_error(ENOMEM, "mark_list: out of memory");
	}
	for (size_t i = 0; i < nmarkers; i++)
		if (markers[i]->nsites > 0 && (!glob || mark_glob_match(glob, markers[i])))
			copy[n++] = markers[i];
	registry_unlock();
	/* Markers are never freed, so the callback runs without the lock and
	 * may itself arm, list or register probes. */
	int r = 0;
	for (size_t i = 0; i < n && r == 0; i++)
		r = cb(copy[i], arg);
	free(copy);
	return r;
}

int mark_marker_sites(const struct mark_marker *marker,
		      int (*cb)(const struct mark_site_info *site, void *arg), void *arg)
{
	if (!marker || !cb)
		return mark_error(EINVAL, "mark_marker_sites: NULL argument");
	registry_lock();
	size_t n = marker->nsites;
	struct mark_site_info *infos = n ? calloc(n, sizeof(*infos)) : NULL;
	if (n && !infos) {
		registry_unlock();
		return mark_error(ENOMEM, "mark_marker_sites: out of memory");
	}
	/* Copy the strings: the object may be unloaded once the lock is dropped. */
	for (size_t i = 0; i < n; i++) {
		const struct mark_site_rt *s = marker->sites[i];
		infos[i].file = strdup(s->desc->file);
		infos[i].line = s->desc->line;
		infos[i].object = strdup(s->object->path);
		infos[i].kind = (enum mark_site_kind)s->kind;
		infos[i].armed = s->armed;
		infos[i].is_enabled_test = (s->desc->flags & MARK__F_ENABLED_TEST) != 0;
		infos[i].address = s->code ? (const void *)s->code : (const void *)&s->desc->semaphore;
	}
	registry_unlock();
	int r = 0;
	for (size_t i = 0; i < n; i++) {
		if (r == 0 && infos[i].file && infos[i].object)
			r = cb(&infos[i], arg);
		free((char *)infos[i].file);
		free((char *)infos[i].object);
	}
	free(infos);
	return r;
}

const char *mark_site_kind_name(enum mark_site_kind kind)
{
	switch (kind) {
	case MARK_KIND_JUMP: return "jump";
	case MARK_KIND_IMMEDIATE: return "immediate";
	case MARK_KIND_GENERIC: return "generic";
	}
	return "?";
}

const char *mark_marker_name(const struct mark_marker *m) { return m->name; }
const char *mark_marker_provider(const struct mark_marker *m) { return m->provider; }
const char *mark_marker_format(const struct mark_marker *m) { return m->format ? m->format : ""; }
unsigned mark_marker_nargs(const struct mark_marker *m) { return m->nargs; }
const struct mark_arg *mark_marker_args(const struct mark_marker *m) { return m->args; }
unsigned mark_marker_id(const struct mark_marker *m) { return m->id; }
