/*
 * Caller tags: allocation tags made at run time, one per return address,
 * for the malloc family under LD_PRELOAD (src/malloc/malloc.c). A program
 * that calls malloc() has no USLUB_TAG_HERE() of its own, so the tag that
 * names its call site is the return address of the malloc entry point:
 * the first allocation from an address claims a slot of a fixed table
 * (lock-free: a compare-and-swap on the slot's key), and every later one
 * from there finds it again. The slot's struct uslub_alloc_tag is an
 * ordinary tag to everything below (registered on first count like a C++
 * tag, counted per thread, stored in the object's extension or the
 * sample), and it is never freed, so a free from anywhere, any time later,
 * subtracts from the tag its allocation counted on.
 *
 * The table is bounded: past CALLER_TAGS_LIMIT slots (or a probe sequence
 * longer than CALLER_PROBES) a new address counts on one "other" tag.
 * Nothing here allocates or takes a lock; the table is .bss (pages that
 * are never touched cost nothing).
 *
 * Names: a report (allocinfo, never under a uslub lock) resolves each
 * slot once, with dladdr(), into "module+0xOFFSET" (the module's path and
 * the address less its load bias: what addr2line takes) and
 * "symbol+0xOFFSET" ("?" where the dynamic symbol table has no name); the
 * `uslub` tool turns module+offset into file:line with addr2line. An
 * address whose module is unloaded later keeps the name it was resolved
 * to first (a slot is never reused, its key never changes).
 */
#define _GNU_SOURCE
#include "ext/ext.h"
#include <dlfcn.h>
#include <link.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define CALLER_TAGS_BITS  13
#define CALLER_TAGS       (1u << CALLER_TAGS_BITS)     /* slots             */
#define CALLER_TAGS_LIMIT (CALLER_TAGS * 3 / 4)       /* then "other"      */
#define CALLER_PROBES     64

/* A slot's name, written once by the report that resolves it first. */
struct caller_name {
	char site[256];        /* "/path/to/module+0x1234", or "0x7f.." */
	char func[128];        /* "symbol+0x1f", or "?"                 */
};

enum { NAME_NONE, NAME_BUSY, NAME_DONE };

static uintptr_t keys[CALLER_TAGS];                  /* 0: free; set once */
static struct uslub_alloc_tag tags[CALLER_TAGS];
static struct caller_name names[CALLER_TAGS];
static unsigned char name_state[CALLER_TAGS];
static unsigned int used;                            /* claimed slots     */
static unsigned int limit = CALLER_TAGS_LIMIT;       /* tests lower it    */

static struct uslub_alloc_tag other = {
	"<other call sites>", "(caller table full)", 0, 0, 0, 0
};

static inline unsigned int slot_of(uintptr_t addr)
{
	return (unsigned int)(((uint64_t)addr * 0x9e3779b97f4a7c15ull) >> (64 - CALLER_TAGS_BITS));
}

struct uslub_alloc_tag *_uslub_caller_tag(uintptr_t addr)
{
	unsigned int i = slot_of(addr);
	for (unsigned int n = 0; n < CALLER_PROBES; n++, i = (i + 1) & (CALLER_TAGS - 1)) {
		uintptr_t k = __atomic_load_n(&keys[i], __ATOMIC_ACQUIRE);
		if (k == addr)
			return &tags[i];
		if (k)
			continue;
		/* a free slot: the address is new */
		if (__atomic_load_n(&used, __ATOMIC_RELAXED) >= READ_ONCE(limit))
			return &other;
		if (__atomic_compare_exchange_n(&keys[i], &k, addr, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			__atomic_add_fetch(&used, 1, __ATOMIC_RELAXED);
			return &tags[i];
		}
		if (k == addr)                  /* another thread claimed it for us */
			return &tags[i];
	}
	return &other;
}

int _uslub_caller_tag_slot(const struct uslub_alloc_tag *tag)
{
	if (tag == &other)
		return -2;
	if (tag < tags || tag >= tags + CALLER_TAGS)
		return -1;
	return (int)(tag - tags);
}

/* The module's path into @buf: the loader's name, or for the main
 * program (whose name the loader leaves empty) /proc/self/exe's target. */
static void module_path(const char *fname, const struct link_map *lm, char *buf, size_t len)
{
	buf[0] = 0;
	if (lm && lm->l_name && lm->l_name[0] == '/')
		fname = lm->l_name;
	if (fname && fname[0] == '/') {
		snprintf(buf, len, "%s", fname);
		return;
	}
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	if (n > 0) {
		buf[n] = 0;
		return;
	}
	snprintf(buf, len, "%s", fname && *fname ? fname : "?");
}

static void resolve(unsigned int i)
{
	struct caller_name *nm = &names[i];
	uintptr_t addr = __atomic_load_n(&keys[i], __ATOMIC_ACQUIRE);
	Dl_info info;
	struct link_map *lm = NULL;
	_uslub_lockdep_assert_unlocked("dladdr()");
	if (!dladdr1((void *)addr, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm) {
		snprintf(nm->site, sizeof(nm->site), "0x%lx", (unsigned long)addr);
		snprintf(nm->func, sizeof(nm->func), "?");
		return;
	}
	char path[4096];
	module_path(info.dli_fname, lm, path, sizeof(path));
	/* a path too long for the name (a deep build tree): the address
	 * alone, not a cut path that may name another file */
	if ((size_t)snprintf(nm->site, sizeof(nm->site), "%s+0x%lx", path,
			     (unsigned long)(addr - (uintptr_t)lm->l_addr)) >= sizeof(nm->site) ||
	    strlen(path) >= sizeof(path) - 1)
		snprintf(nm->site, sizeof(nm->site), "0x%lx", (unsigned long)addr);
	if (info.dli_sname && info.dli_saddr)
		snprintf(nm->func, sizeof(nm->func), "%.100s+0x%lx", info.dli_sname,
			 (unsigned long)(addr - (uintptr_t)info.dli_saddr));
	else
		snprintf(nm->func, sizeof(nm->func), "?");
}

void _uslub_caller_tag_name(int slot, const char **site, const char **func)
{
	if (slot < 0 || slot >= (int)CALLER_TAGS) {
		*site = other.file;
		*func = other.func;
		return;
	}
	unsigned int i = (unsigned int)slot;
	unsigned char st = __atomic_load_n(&name_state[i], __ATOMIC_ACQUIRE);
	if (st != NAME_DONE) {
		unsigned char none = NAME_NONE;
		if (__atomic_compare_exchange_n(&name_state[i], &none, NAME_BUSY, false,
						__ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE)) {
			resolve(i);
			__atomic_store_n(&name_state[i], NAME_DONE, __ATOMIC_RELEASE);
		} else {
			while (__atomic_load_n(&name_state[i], __ATOMIC_ACQUIRE) != NAME_DONE)
				sched_yield();      /* another report resolves it */
		}
	}
	*site = names[i].site;
	*func = names[i].func;
}

/* fork child: a name another thread was resolving is resolved again
 * (that thread is gone; a reporter would wait for it forever). */
void _uslub_caller_tags_postfork_child(void)
{
	for (unsigned int i = 0; i < CALLER_TAGS; i++)
		if (__atomic_load_n(&name_state[i], __ATOMIC_RELAXED) == NAME_BUSY)
			__atomic_store_n(&name_state[i], NAME_NONE, __ATOMIC_RELAXED);
}

/* Tests (white-box): lower the table's limit to @n claimed slots (0:
 * back to the default); returns the slots claimed so far. */
unsigned int _uslub_caller_tags_limit(unsigned int n)
{
	WRITE_ONCE(limit, n && n < CALLER_TAGS_LIMIT ? n : CALLER_TAGS_LIMIT);
	return __atomic_load_n(&used, __ATOMIC_RELAXED);
}
