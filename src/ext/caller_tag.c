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
 * Nothing here allocates or takes a uslub lock; the table is .bss (pages
 * that are never touched cost nothing).
 *
 * Names: a report (allocinfo, never under a uslub lock) resolves each
 * slot once, with dladdr(), into "module+0xOFFSET" (the module's real
 * path and the address less its load bias: what addr2line takes) and
 * "symbol+0xOFFSET" ("?" where the dynamic symbol table has no name); the
 * `uslub` tool turns module+offset into file:line with addr2line.
 *
 * Modules come and go (dlclose), and the report may come after: the
 * address then lies in nothing, or in another module mapped there since,
 * whose function dladdr would name. So the claim of a slot (the cold
 * path: once per address) records the module the address is in, while
 * the caller is running in it: dl_iterate_phdr() (the loader's list
 * lock, never the loader's main lock, which dlopen holds while it
 * allocates) finds the object, and a small table of modules keeps its
 * identity (load bias and name) and real path. A report names the slot
 * only if the object dladdr finds there is still that module; one
 * unloaded is named "/real/path.so+0xOFF" (addr2line can still read the
 * file) and "<unloaded: /real/path.so>", never the newcomer's function.
 * The same path loaded again at the same bias is the same module only
 * when it maps the same file (device, inode, mtime: file_id()): a plugin
 * rebuilt and reloaded is another.
 * A sweep (at a claim, a report, or a thread's every SWEEP_EVERY-th
 * lookup, when the loader's unload count moved)
 * marks the modules that are gone and retires their slots' keys (bit 63:
 * no user address has it), so the address, reused by another module,
 * claims a slot of its own; the old slot and its tag stay, for the frees
 * of what the old module allocated. The real path: the loader keeps the
 * name it was given, "./x.so" for dlopen("./x.so"), relative to a
 * directory the program may have left since; the kernel's
 * /proc/self/map_files/START-END link of the mapping names the file
 * itself (getcwd() joined to the name where that is not readable).
 */
#define _GNU_SOURCE
#include <sys/stat.h>         /* before slub.h, whose stat() is a macro */
#include "ext/ext.h"
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define CALLER_TAGS_BITS  13
#define CALLER_TAGS       (1u << CALLER_TAGS_BITS)     /* slots             */
#define CALLER_TAGS_LIMIT (CALLER_TAGS * 3 / 4)       /* then "other"      */
#define CALLER_PROBES     64
#define CALLER_MODULES    256                         /* then unrecorded   */
#define KEY_RETIRED       ((uintptr_t)1 << 63)        /* module unloaded   */
#define SWEEP_EVERY       1024                        /* lookups a thread  */

/* A slot's name, written once by the report that resolves it first. */
struct caller_name {
	char site[256];        /* "/path/to/module+0x1234", or "0x7f.." */
	char func[128];        /* "symbol+0x1f", or "?"                 */
};

/*
 * A module some slot's address was claimed in: its identity (the load
 * bias and the loader's name for it: another object loaded at the same
 * bias has another name; the same file loaded again there is the same
 * code) and its real path. Written once, inside a dl_iterate_phdr()
 * callback (the loader serializes them: its list lock), then published
 * by nr_modules (release); @gone is set once, by a sweep.
 */
struct caller_module {
	uintptr_t base;
	uint64_t name_hash;
	uint64_t file_id;      /* the mapped file: file_id(); 0 unknown */
	unsigned char gone;
	char path[256];        /* real path, "" where too long or unknown */
};

enum { NAME_NONE, NAME_BUSY, NAME_DONE };

static uintptr_t keys[CALLER_TAGS];                  /* 0 free, addr, then retired */
static struct uslub_alloc_tag tags[CALLER_TAGS];
static struct caller_name names[CALLER_TAGS];
static unsigned char name_state[CALLER_TAGS];
static unsigned short slot_module[CALLER_TAGS];      /* 0, or module + 1  */
static unsigned int used;                            /* claimed slots     */
static unsigned int limit = CALLER_TAGS_LIMIT;       /* tests lower it    */
static struct caller_module modules[CALLER_MODULES];
static unsigned int nr_modules;
static unsigned int sweeping;                        /* one sweep at once */
static unsigned long long swept_subs;                /* dlpi_subs seen    */
static __thread unsigned int lookups_left __tls_ie;  /* to its next sweep */

static struct uslub_alloc_tag other = {
	"<other call sites>", "(caller table full)", 0, 0, 0, 0, 0
};

static inline unsigned int slot_of(uintptr_t addr)
{
	return (unsigned int)(((uint64_t)addr * 0x9e3779b97f4a7c15ull) >> (64 - CALLER_TAGS_BITS));
}

#define FNV_OFFSET 0xcbf29ce484222325ull

/* FNV-1a of @n bytes at @p onto @h */
static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
	for (const unsigned char *c = p; n--; c++)
		h = (h ^ *c) * 0x100000001b3ull;
	return h;
}

static uint64_t name_hash(const char *s)
{
	return fnv1a(FNV_OFFSET, s ? s : "", s ? strlen(s) : 0);
}

/* The /proc/self/map_files link of the part of @info's loadable segment
 * @ph that its file backs. */
static void map_files_link(const struct dl_phdr_info *info, const ElfW(Phdr) *ph, char *link,
			   size_t len)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = (info->dlpi_addr + ph->p_vaddr) & ~(page - 1);
	uintptr_t end = ALIGN_UP(info->dlpi_addr + ph->p_vaddr + ph->p_filesz, page);
	snprintf(link, len, "/proc/self/map_files/%lx-%lx", (unsigned long)start,
		 (unsigned long)end);
}

/* The real path of the object @info (@ph: one of its loadable segments)
 * into @buf, or "" where it does not fit. */
static void real_path(const struct dl_phdr_info *info, const ElfW(Phdr) *ph, char *buf,
		      size_t len)
{
	const char *name = info->dlpi_name;
	ssize_t n;
	buf[0] = 0;
	if (!name || !name[0]) {                /* the main program */
		n = readlink("/proc/self/exe", buf, len - 1);
		buf[n > 0 && (size_t)n < len - 1 ? n : 0] = 0;
		return;
	}
	if (name[0] == '/' || !strchr(name, '/')) {
		/* absolute; or no path at all (the vDSO): as the loader has it */
		if (strlen(name) < len)
			strcpy(buf, name);
		return;
	}
	/* relative to the directory dlopen() ran in: the mapping's file */
	char link[64];
	map_files_link(info, ph, link, sizeof(link));
	n = readlink(link, buf, len - 1);
	if (n > 0 && (size_t)n < len - 1 && buf[0] == '/') {
		buf[n] = 0;
		/* a file removed since: where it was (the kernel's suffix
		 * would be taken for part of the name) */
		if (n > 10 && !strcmp(buf + n - 10, " (deleted)"))
			buf[n - 10] = 0;
		return;
	}
	/* not readable here (an older kernel, a restricted /proc): the
	 * current directory, which is the right one unless the program
	 * changed it since */
	buf[0] = 0;
	if (!getcwd(buf, len))
		buf[0] = 0;
	size_t cl = strlen(buf);
	while (name[0] == '.' && name[1] == '/')
		name += 2;
	if (!cl || cl + 1 + strlen(name) >= len) {
		buf[0] = 0;
		return;
	}
	if (buf[cl - 1] != '/')
		buf[cl++] = '/';
	strcpy(buf + cl, name);
}

/*
 * The identity of the file @info has mapped: its device, inode and
 * modification time, hashed (0 where unknown: the vDSO, no
 * /proc/self/map_files). The load bias and the loader's name do not tell
 * a plugin rebuilt and reloaded from the same path from the one before:
 * dlclose(), the file replaced (cp new.so x.so.new && mv x.so.new x.so,
 * or a build writing it again), dlopen() of the same path loads the new
 * code at the same bias, and the old module's live blocks were named
 * after the new file's function at their offset (one that never
 * allocates). The mapping's map_files link stats the file that is mapped,
 * even where its name was removed or replaced since.
 */
static uint64_t file_id(const struct dl_phdr_info *info, const char *path)
{
	for (unsigned int k = 0; k < info->dlpi_phnum; k++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[k];
		if (ph->p_type != PT_LOAD || !ph->p_filesz)
			continue;
		char link[64];
		struct stat st;
		map_files_link(info, ph, link, sizeof(link));
		/* following the link takes CAP_SYS_ADMIN (readlink does not):
		 * unprivileged, the file at the module's real path, the one
		 * mapped unless replaced in between (slub.h has a stat() macro) */
		if ((stat)(link, &st) && (!path || path[0] != '/' || (stat)(path, &st)))
			return 0;
		uint64_t v[4] = { (uint64_t)st.st_dev, (uint64_t)st.st_ino,
				  (uint64_t)st.st_mtim.tv_sec, (uint64_t)st.st_mtim.tv_nsec };
		return fnv1a(FNV_OFFSET, v, sizeof(v)) | 1;
	}
	return 0;
}

/* Is the loaded object @info (its file id: *@fid, computed on first use,
 * ~0 before) the module @cm? */
static bool same_module(const struct caller_module *cm, const struct dl_phdr_info *info,
			uint64_t h, uint64_t *fid)
{
	if (cm->base != info->dlpi_addr || cm->name_hash != h)
		return false;
	if (!cm->file_id)
		return true;
	if (*fid == ~0ull)
		*fid = file_id(info, cm->path);
	return !*fid || *fid == cm->file_id;
}

struct find_ctx {
	uintptr_t addr;
	int module;             /* out: index + 1, 0 not found or no room */
	bool found;
};

/* dl_iterate_phdr() callback: the object that holds ctx->addr, recorded
 * (found or added) in the module table. */
static int find_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct find_ctx *ctx = data;
	for (unsigned int k = 0; k < info->dlpi_phnum; k++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[k];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type != PT_LOAD || ctx->addr - lo >= ph->p_memsz)
			continue;
		ctx->found = true;
		uint64_t h = name_hash(info->dlpi_name), fid = ~0ull;
		unsigned int n = __atomic_load_n(&nr_modules, __ATOMIC_ACQUIRE);
		for (unsigned int m = 0; m < n; m++)
			if (same_module(&modules[m], info, h, &fid) &&
			    !__atomic_load_n(&modules[m].gone, __ATOMIC_ACQUIRE)) {
				ctx->module = (int)m + 1;
				return 1;
			}
		if (n == CALLER_MODULES)
			return 1;
		struct caller_module *cm = &modules[n];
		cm->base = info->dlpi_addr;
		cm->name_hash = h;
		real_path(info, ph, cm->path, sizeof(cm->path));
		cm->file_id = fid == ~0ull ? file_id(info, cm->path) : fid;
		__atomic_store_n(&nr_modules, n + 1, __ATOMIC_RELEASE);
		ctx->module = (int)n + 1;
		return 1;
	}
	return 0;
}

/* Record the module of slot @i's address @addr (no uslub lock held: the
 * loader's list lock is taken). */
static void note_module(unsigned int i, uintptr_t addr)
{
	struct find_ctx ctx = { addr, 0, false };
	dl_iterate_phdr(find_cb, &ctx);
	if (ctx.module)
		__atomic_store_n(&slot_module[i], (unsigned short)ctx.module, __ATOMIC_RELEASE);
}

static void sweep(void);

/* The cold path of a claim: the address's module, while its code runs. */
static __noinline void claimed(unsigned int i, uintptr_t addr)
{
	__atomic_add_fetch(&used, 1, __ATOMIC_RELAXED);
	if (_uslub_locks_held)          /* never so from malloc; a report names it */
		return;
	int saved = errno;              /* inside malloc: stat, readlink */
	sweep();
	note_module(i, addr);
	errno = saved;
}

/* A thread's every SWEEP_EVERY-th lookup: a module loaded where an
 * unloaded one was, allocating from the same address, finds the old slot
 * until a sweep retires it; this bounds that to a thread's next
 * SWEEP_EVERY allocations (where no claim or report sweeps before). */
static __noinline void sweep_due(void)
{
	lookups_left = SWEEP_EVERY;
	if (!_uslub_locks_held) {
		int saved = errno;
		sweep();
		errno = saved;
	}
}

struct uslub_alloc_tag *_uslub_caller_tag(uintptr_t addr)
{
	if (unlikely(!lookups_left--))
		sweep_due();
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
			claimed(i, addr);
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

/* The return address of caller tag @tag ("other" and any other tag: 0). */
uintptr_t _uslub_caller_tag_addr(const struct uslub_alloc_tag *tag)
{
	if (tag < tags || tag >= tags + CALLER_TAGS)
		return 0;
	return __atomic_load_n(&keys[tag - tags], __ATOMIC_ACQUIRE) & ~KEY_RETIRED;
}

/* ---- unloaded modules --------------------------------------------------- */

struct sweep_ctx {
	unsigned int n;                         /* modules judged      */
	bool first, skip;
	unsigned long long subs;
	unsigned char seen[CALLER_MODULES];
};

static int sweep_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct sweep_ctx *ctx = data;
	if (ctx->first) {
		ctx->first = false;
		ctx->subs = info->dlpi_subs;
		if (ctx->subs == __atomic_load_n(&swept_subs, __ATOMIC_RELAXED)) {
			ctx->skip = true;       /* nothing unloaded since */
			return 1;
		}
	}
	uint64_t h = name_hash(info->dlpi_name), fid = ~0ull;
	for (unsigned int m = 0; m < ctx->n; m++)
		if (same_module(&modules[m], info, h, &fid))
			ctx->seen[m] = 1;
	return 0;
}

/* When the loader's unload count moved since the last sweep: mark the
 * recorded modules no longer loaded as gone and retire their slots'
 * keys (a later allocation from the address claims a new slot). One
 * sweep at a time; a caller that finds one running leaves it the work. */
static void sweep(void)
{
	if (__atomic_exchange_n(&sweeping, 1, __ATOMIC_ACQUIRE))
		return;
	struct sweep_ctx ctx;
	ctx.n = __atomic_load_n(&nr_modules, __ATOMIC_ACQUIRE);
	ctx.first = true;
	ctx.skip = false;
	ctx.subs = 0;
	memset(ctx.seen, 0, ctx.n);
	dl_iterate_phdr(sweep_cb, &ctx);
	if (!ctx.first && !ctx.skip) {
		for (unsigned int m = 0; m < ctx.n; m++)
			if (!ctx.seen[m])
				__atomic_store_n(&modules[m].gone, 1, __ATOMIC_RELEASE);
		/* every slot of a gone module (one a sweep cut short by a
		 * fork left too) */
		for (unsigned int i = 0; i < CALLER_TAGS; i++) {
			unsigned int m = __atomic_load_n(&slot_module[i], __ATOMIC_ACQUIRE);
			if (!m || !__atomic_load_n(&modules[m - 1].gone, __ATOMIC_ACQUIRE))
				continue;
			uintptr_t k = __atomic_load_n(&keys[i], __ATOMIC_ACQUIRE);
			if (!(k & KEY_RETIRED))
				__atomic_compare_exchange_n(&keys[i], &k, k | KEY_RETIRED, false,
							    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
		}
		__atomic_store_n(&swept_subs, ctx.subs, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&sweeping, 0, __ATOMIC_RELEASE);
}

/* A sweep now (no uslub lock held): resolve() makes its own; the tests
 * call it to retire slots at a point of their choosing. */
void _uslub_caller_tags_sweep(void)
{
	_uslub_lockdep_assert_unlocked("dl_iterate_phdr()");
	sweep();
}

static void name_unloaded(struct caller_name *nm, const struct caller_module *cm,
			  uintptr_t addr)
{
	if (!cm->path[0] ||
	    (size_t)snprintf(nm->site, sizeof(nm->site), "%s+0x%lx", cm->path,
			     (unsigned long)(addr - cm->base)) >= sizeof(nm->site))
		snprintf(nm->site, sizeof(nm->site), "0x%lx", (unsigned long)addr);
	if (!cm->path[0] ||
	    (size_t)snprintf(nm->func, sizeof(nm->func), "<unloaded: %s>", cm->path) >=
	    sizeof(nm->func))
		snprintf(nm->func, sizeof(nm->func), "<unloaded>");
}

static void resolve(unsigned int i)
{
	struct caller_name *nm = &names[i];
	uintptr_t addr = __atomic_load_n(&keys[i], __ATOMIC_ACQUIRE) & ~KEY_RETIRED;
	Dl_info info;
	struct link_map *lm = NULL;
	_uslub_lockdep_assert_unlocked("dladdr()");
	sweep();                        /* modules unloaded since: gone */
	/* claimed with a lock held (or the module table full): the module
	 * mapped there now */
	if (!__atomic_load_n(&slot_module[i], __ATOMIC_ACQUIRE))
		note_module(i, addr);
	unsigned int m = __atomic_load_n(&slot_module[i], __ATOMIC_ACQUIRE);
	const struct caller_module *cm = m ? &modules[m - 1] : NULL;
	if (cm && __atomic_load_n(&cm->gone, __ATOMIC_ACQUIRE)) {
		name_unloaded(nm, cm, addr);
		return;
	}
	if (!dladdr1((void *)addr, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm) {
		if (cm)                 /* unloaded since the sweep */
			name_unloaded(nm, cm, addr);
		else {
			snprintf(nm->site, sizeof(nm->site), "0x%lx", (unsigned long)addr);
			snprintf(nm->func, sizeof(nm->func), "?");
		}
		return;
	}
	/* another object mapped there since (not swept yet): not its name */
	if (cm && ((uintptr_t)lm->l_addr != cm->base || name_hash(lm->l_name) != cm->name_hash)) {
		name_unloaded(nm, cm, addr);
		return;
	}
	/* no room was left in the module table: the loader's name for it */
	const char *path = cm ? cm->path : lm->l_name[0] ? lm->l_name : info.dli_fname;
	/* a path too long for the name (a deep build tree): the address
	 * alone, not a cut path that may name another file */
	if (!path || !path[0] ||
	    (size_t)snprintf(nm->site, sizeof(nm->site), "%s+0x%lx", path,
			     (unsigned long)(addr - (uintptr_t)lm->l_addr)) >= sizeof(nm->site))
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
	__atomic_store_n(&sweeping, 0, __ATOMIC_RELAXED);   /* its sweeper is gone */
}

/* Tests (white-box): lower the table's limit to @n claimed slots (0:
 * back to the default); returns the slots claimed so far. */
unsigned int _uslub_caller_tags_limit(unsigned int n)
{
	WRITE_ONCE(limit, n && n < CALLER_TAGS_LIMIT ? n : CALLER_TAGS_LIMIT);
	return __atomic_load_n(&used, __ATOMIC_RELAXED);
}
