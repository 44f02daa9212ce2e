/*
 * Accounting groups: a userspace obj_cgroup (seed 004). Objects are charged
 * one by one to a group (the thread's current one) and share the same
 * caches and slabs with every other group; each object's extension points
 * at its group's handle (struct obj_cgroup), so any thread's free uncharges
 * the right group. Charges go through a per-thread byte stock (the kernel's
 * obj_stock): the common charge and uncharge are a compare and an add on
 * the thread's own memory (inline in cache/internal.h); only a batch of
 * USLUB_ACCOUNT_BATCH bytes at a time touches the group counters, under
 * groups_lock (the lock order is in ext/ext.h).
 *
 * Deleting a group moves its handles to its parent: the parent's usage
 * already includes the group's charges (usage is hierarchical), later
 * uncharges of its objects go to the parent, and the group is freed at
 * once. A handle is freed when its last object, stock and group link are
 * gone (refs, ext/ext.h).
 */
#include "ext/ext.h"
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

long _uslub_stock_max;
static long account_batch;

static pthread_mutex_t groups_lock = PTHREAD_MUTEX_INITIALIZER;
static struct uslub_group root_group;
static struct uslub_group *group_by_id[MAX_GROUP_IDS];       /* groups_lock */
static unsigned int next_id_hint = 1;                         /* groups_lock */
static unsigned long nr_groups = 1;                           /* atomic      */
static unsigned long nr_objcgs;                               /* atomic      */
static struct kmem_cache *group_cache, *objcg_cache;
static struct uslub_once caches_once = USLUB_ONCE_INIT;   /* fork-safe (base/lifecycle.h) */

#define RECLAIM_RETRIES 16

static void groups_lock_take(void)
{
	uslub_mutex_lock(&groups_lock, RANK_GROUPS);
}

static void groups_lock_drop(void)
{
	uslub_mutex_unlock(&groups_lock, RANK_GROUPS);
}

static void create_caches(void)
{
	group_cache = _uslub_internal_cache_create("uslub_group", sizeof(struct uslub_group));
	objcg_cache = _uslub_internal_cache_create("uslub_objcg", sizeof(struct obj_cgroup));
}

static const struct uslub_lifecycle groups_lifecycle, memcg_exit_lifecycle;

/* Called from _uslub_init() (options are read). */
void _uslub_memcg_init(void)
{
	_uslub_lifecycle_register(&memcg_exit_lifecycle);
	_uslub_lifecycle_register(&groups_lifecycle);
	snprintf(root_group.name, sizeof(root_group.name), "root");
	INIT_LIST_HEAD(&root_group.children);
	INIT_LIST_HEAD(&root_group.sibling);
	INIT_LIST_HEAD(&root_group.objcgs);
	root_group.limit = SIZE_MAX;
	group_by_id[0] = &root_group;
	account_batch = _uslub_option(USLUB_OPT_ACCOUNT_BATCH);
	if (account_batch < 0)
		account_batch = 0;
	_uslub_stock_max = account_batch;
}

/* Is @g a live group? (Its memory is uslub's and stays mapped, so even a
 * deleted group's id can be read.) */
static bool group_live_locked(const struct uslub_group *g)
{
	unsigned int id = READ_ONCE(g->id);
	return id < MAX_GROUP_IDS && group_by_id[id] == g;
}

/* Add @bytes to @g and each ancestor. On a limit, undo and return the
 * group that refused; NULL when charged. @force: ignore limits. */
static struct uslub_group *try_charge_locked(struct uslub_group *g, size_t bytes, bool force)
{
	for (struct uslub_group *a = g; a; a = a->parent) {
		size_t now = __atomic_add_fetch(&a->usage, bytes, __ATOMIC_RELAXED);
		if (!force && now > READ_ONCE(a->limit)) {
			for (struct uslub_group *b = g; b != a->parent; b = b->parent)
				ATOMIC_SUB(b->usage, bytes);
			ATOMIC_ADD(a->failcnt, 1);
			return a;
		}
	}
	return NULL;
}

static void uncharge_locked(struct uslub_group *g, size_t bytes)
{
	for (struct uslub_group *a = g; a; a = a->parent)
		ATOMIC_SUB(a->usage, bytes);
}

/* Drop @n references; the last one unlinks the handle, which the caller
 * frees after dropping groups_lock (nothing is freed under it). */
static struct obj_cgroup *objcg_put_locked(struct obj_cgroup *o, long n)
{
	if (__atomic_sub_fetch(&o->refs, n, __ATOMIC_ACQ_REL) != 0)
		return NULL;
	list_del(&o->list);
	WRITE_ONCE(o->group, NULL);
	return o;
}

/* Never sets up a cpu area, so it is safe under thread_lock (a fork
 * child draining dead threads' stocks). */
static void objcg_free(struct obj_cgroup *o)
{
	if (o) {
		_uslub_internal_free(objcg_cache, o, false);
		ATOMIC_SUB(nr_objcgs, 1);
	}
}

/* Give the stock's prepaid bytes back and let go of its handle. */
static struct obj_cgroup *drain_stock_locked(struct obj_stock *st)
{
	struct obj_cgroup *o = st->cached;
	if (!o)
		return NULL;
	long bytes = st->nr_bytes;
	st->cached = NULL;
	st->nr_bytes = 0;
	uncharge_locked(o->group, (size_t)bytes);
	return objcg_put_locked(o, bytes + 1);
}

/* Make @o the stock's handle (one reference for the stock). */
static struct obj_cgroup *stock_switch_locked(struct obj_stock *st, struct obj_cgroup *o)
{
	if (st->cached == o)
		return NULL;
	struct obj_cgroup *dead = drain_stock_locked(st);
	__atomic_add_fetch(&o->refs, 1, __ATOMIC_RELAXED);
	st->cached = o;
	return dead;
}

static struct obj_stock *this_stock(void)
{
	struct uslub_thread *t = _uslub_tls.thread;
	return t && account_batch > 0 ? &t->stock : NULL;
}

/*
 * The stock follows the thread's current group: switched here, when
 * uslub_group_set_current() changes the group, not compared on every
 * allocation. For a thread with a cpu area, outside groups_lock:
 *   t->stock.cached == _uslub_tls.cur_objcg   (both NULL in the root)
 * so the lean alloc path charges t->stock.cached with one subtraction and
 * sign test (cache/alloc.c). Only the owner changes its stock, under
 * groups_lock; thread exit drains it after leaving the group. With
 * USLUB_ACCOUNT_BATCH=0 the stock holds the handle and no bytes, so every
 * charge takes the slow path.
 */
static struct obj_cgroup *stock_follow_locked(struct obj_cgroup *o)
{
	struct uslub_thread *t = _uslub_tls.thread;
	if (!t)
		return NULL;
	if (!o)
		return drain_stock_locked(&t->stock);
	return stock_switch_locked(&t->stock, o);
}

/*
 * A charge the stock could not cover (the kernel's obj_cgroup_charge ->
 * try_charge_memcg): use what the stock has, charge the rest plus half a
 * batch to prepay it (so the stock holds [0, batch] bytes, and a charge
 * or an uncharge that crosses an edge leaves it half full). At a limit:
 * try without the prepayment, then give back this thread's stock, then
 * run the refusing group's reclaim callback while it makes progress.
 */
/*
 * Any context (kmalloc_nolock with USLUB_GFP_ACCOUNT; possibly a signal
 * handler that interrupted this thread anywhere): charge @bytes to the
 * thread's current group straight, without the stock (the thread's own,
 * which the interrupted code may be updating), groups_lock only tried.
 * Under it the thread's current handle is stable (set_current writes it
 * under the lock) and alive (its group is current, so not deleted).
 * Returns the handle charged (the object holds its @bytes of refs, as
 * any charged object does), or NULL with *refused false (no current
 * group: nothing to charge) or true (the lock was taken, or a limit).
 */
struct obj_cgroup *_uslub_charge_nolock(size_t bytes, bool *refused)
{
	*refused = false;
	if (!READ_ONCE(_uslub_tls.cur_objcg))
		return NULL;
	*refused = true;
	if (!uslub_mutex_trylock(&groups_lock, RANK_GROUPS))
		return NULL;
	struct obj_cgroup *objcg = _uslub_tls.cur_objcg;
	if (objcg && !try_charge_locked(objcg->group, bytes, false)) {
		__atomic_add_fetch(&objcg->refs, (long)bytes, __ATOMIC_RELAXED);
		*refused = false;
	} else if (!objcg) {
		*refused = false;
	} else {
		objcg = NULL;
	}
	groups_lock_drop();
	return objcg;
}

bool _uslub_charge_slow(struct obj_cgroup *objcg, size_t bytes, uslub_gfp_t gfp)
{
	struct obj_stock *st = this_stock();
	int reclaims = 0;

	/* the stock holds the current group's bytes only (see stock_follow) */
	if (st && st->cached != objcg)
		st = NULL;
	for (;;) {
		groups_lock_take();
		struct uslub_group *g = objcg->group;
		size_t have = st ? (size_t)st->nr_bytes : 0;
		size_t need = bytes - MIN(have, bytes), prepay = (size_t)account_batch / 2;
		size_t got = need;
		struct uslub_group *over = NULL;
		if (st && !(over = try_charge_locked(g, need + prepay, false)))
			got = need + prepay;
		else
			over = try_charge_locked(g, need, gfp & USLUB_GFP_NOFAIL);
		if (!over) {
			__atomic_add_fetch(&objcg->refs, (long)got, __ATOMIC_RELAXED);
			if (st)
				st->nr_bytes = (long)(have + got - bytes);
			groups_lock_drop();
			return true;
		}
		size_t usage = READ_ONCE(over->usage), limit = READ_ONCE(over->limit);
		size_t missing = usage + bytes > limit ? usage + bytes - limit : bytes;
		uslub_reclaim_fn fn = over->reclaim;
		void *arg = over->reclaim_arg;
		groups_lock_drop();
		if (fn && reclaims < RECLAIM_RETRIES && !(gfp & USLUB_GFP_NOWAIT)) {
			reclaims++;
			ATOMIC_ADD(over->reclaims, 1);
			_uslub_lockdep_assert_unlocked("a reclaim callback");
			if (fn(over, missing, arg) > 0)
				continue;
		}
		errno = ENOMEM;
		if (!(gfp & USLUB_GFP_NOWARN) && _uslub_option(USLUB_OPT_VERBOSE))
			_uslub_report("uslub: accounting group %s: charge of %zu bytes refused "
				      "(usage %zu, limit %zu)\n", over->name, bytes, usage, limit);
		return false;
	}
}

/* An uncharge the stock could not take: over the stock's cap (give the
 * excess back, keep half a batch), or another group's object (straight
 * to that group: the stock keeps following the current group). */
void _uslub_uncharge_slow(struct obj_cgroup *objcg, size_t bytes)
{
	struct obj_stock *st = this_stock();
	struct obj_cgroup *dead = NULL;
	groups_lock_take();
	if (st && st->cached == objcg) {
		st->nr_bytes += (long)bytes;
		if (st->nr_bytes > _uslub_stock_max) {
			long excess = st->nr_bytes - account_batch / 2;
			st->nr_bytes = account_batch / 2;
			uncharge_locked(objcg->group, (size_t)excess);
			dead = objcg_put_locked(objcg, excess);
		}
	} else {
		uncharge_locked(objcg->group, bytes);
		dead = objcg_put_locked(objcg, (long)bytes);
	}
	groups_lock_drop();
	objcg_free(dead);
}

__public void uslub_group_drain_stock(void)
{
	struct uslub_thread *t = _uslub_tls.thread;
	if (!t || !t->stock.cached)
		return;
	groups_lock_take();
	struct obj_cgroup *o = t->stock.cached;
	struct obj_cgroup *dead = drain_stock_locked(&t->stock);
	stock_switch_locked(&t->stock, o);      /* still current: o lives on */
	groups_lock_drop();
	objcg_free(dead);
}

/* Give back the stock of @t's area (its thread exited, or is gone in a
 * fork child: the lifecycle table's thread_lost, thread_lock held). */
static void drain_area(struct uslub_thread *t)
{
	if (t && t->stock.cached) {
		groups_lock_take();
		struct obj_cgroup *dead = drain_stock_locked(&t->stock);
		groups_lock_drop();
		objcg_free(dead);
	}
}

/* Thread exit (no lock held; before the thread_lock entry's fold and
 * flush): give the stock back, leave the group. */
static void memcg_thread_exit(void *area)
{
	struct uslub_thread *t = area;
	drain_area(t);
	struct uslub_group *g = _uslub_tls.cur_group;
	if (g) {
		groups_lock_take();
		ATOMIC_SUB(g->nr_current, 1);
		groups_lock_drop();
		_uslub_tls.cur_group = NULL;
		_uslub_tls.cur_objcg = NULL;
	}
}

/* ------------------------------------------------------------------------
 * The group API
 * ---------------------------------------------------------------------- */
__public uslub_group_t *uslub_group_root(void)
{
	_uslub_init();
	return &root_group;
}

static int take_id_locked(void)
{
	for (unsigned int k = 0; k < MAX_GROUP_IDS - 1; k++) {
		unsigned int i = 1 + (next_id_hint - 1 + k) % (MAX_GROUP_IDS - 1);
		if (!group_by_id[i]) {
			next_id_hint = i + 1 < MAX_GROUP_IDS ? i + 1 : 1;
			return (int)i;
		}
	}
	return -1;
}

__public uslub_group_t *uslub_group_create(uslub_group_t *parent, const char *name, size_t limit)
{
	_uslub_init();
	if (!name || !*name) {
		_uslub_report("uslub: group_create: the name is NULL or empty\n");
		errno = EINVAL;
		return NULL;
	}
	_uslub_once(&caches_once, create_caches);
	if (!group_cache || !objcg_cache) {
		errno = ENOMEM;
		return NULL;
	}
	struct uslub_group *g = _uslub_internal_alloc(group_cache, USLUB_GFP_ZERO);
	struct obj_cgroup *o = _uslub_internal_alloc(objcg_cache, USLUB_GFP_ZERO);
	if (!g || !o)
		goto nomem;
	snprintf(g->name, sizeof(g->name), "%s", name);
	INIT_LIST_HEAD(&g->children);
	INIT_LIST_HEAD(&g->objcgs);
	g->limit = limit;
	g->objcg = o;
	o->group = g;
	o->refs = 1;                     /* the group's link */
	list_add(&o->list, &g->objcgs);

	if (!parent)
		parent = &root_group;
	groups_lock_take();
	if (!group_live_locked(parent)) {
		groups_lock_drop();
		_uslub_report("uslub: group_create %s: the parent is not a live group\n", name);
		_uslub_internal_free(objcg_cache, o, true);
		_uslub_internal_free(group_cache, g, true);
		errno = EINVAL;
		return NULL;
	}
	int id = take_id_locked();
	if (id < 0) {
		groups_lock_drop();
		_uslub_report("uslub: group_create %s: all %d group ids in use\n", name,
			      MAX_GROUP_IDS);
		goto nomem;
	}
	g->id = (unsigned int)id;
	g->parent = parent;
	g->depth = parent->depth + 1;
	list_add_tail(&g->sibling, &parent->children);
	parent->nr_children++;
	group_by_id[id] = g;
	ATOMIC_ADD(nr_groups, 1);
	ATOMIC_ADD(nr_objcgs, 1);
	groups_lock_drop();
	return g;
nomem:
	if (o)
		_uslub_internal_free(objcg_cache, o, true);
	if (g)
		_uslub_internal_free(group_cache, g, true);
	errno = ENOMEM;
	return NULL;
}

__public int uslub_group_delete(uslub_group_t *g)
{
	if (!g || g == &root_group) {
		errno = EINVAL;
		return -1;
	}
	groups_lock_take();
	if (!group_live_locked(g)) {
		groups_lock_drop();
		errno = EINVAL;
		return -1;
	}
	if (g->nr_children || READ_ONCE(g->nr_current)) {
		groups_lock_drop();
		errno = EBUSY;
		return -1;
	}
	struct uslub_group *p = g->parent;
	/* reparent every handle: later uncharges go to the parent, whose
	 * usage already counts these charges */
	struct list_head *pos, *tmp;
	list_for_each_safe(pos, tmp, &g->objcgs) {
		struct obj_cgroup *o = list_entry(pos, struct obj_cgroup, list);
		WRITE_ONCE(o->group, p);
		list_del(&o->list);
		list_add(&o->list, &p->objcgs);
	}
	struct obj_cgroup *dead = objcg_put_locked(g->objcg, 1);
	g->objcg = NULL;
	list_del(&g->sibling);
	p->nr_children--;
	group_by_id[g->id] = NULL;
	ATOMIC_SUB(nr_groups, 1);
	groups_lock_drop();
	objcg_free(dead);
	_uslub_internal_free(group_cache, g, true);
	return 0;
}

__public uslub_group_t *uslub_group_set_current(uslub_group_t *g)
{
	/* a cpu area registers the thread-exit hook that leaves the group */
	if (g && !this_cpu_is_real())
		_uslub_thread_init();
	struct uslub_group *old = _uslub_tls.cur_group;
	if (g == &root_group)
		g = NULL;
	if (g == old)
		return old;
	if (g || old) {
		groups_lock_take();
		if (g)
			ATOMIC_ADD(g->nr_current, 1);
		if (old)
			ATOMIC_SUB(old->nr_current, 1);
		struct obj_cgroup *o = g ? g->objcg : NULL;
		_uslub_tls.cur_objcg = o;
		struct obj_cgroup *dead = stock_follow_locked(o);
		groups_lock_drop();
		objcg_free(dead);
	}
	_uslub_tls.cur_group = g;
	return old;
}

__public uslub_group_t *uslub_group_current(void)
{
	return _uslub_tls.cur_group;
}

__public int uslub_group_set_limit(uslub_group_t *g, size_t limit)
{
	if (!g || g == &root_group) {
		errno = EINVAL;
		return -1;
	}
	WRITE_ONCE(g->limit, limit);
	return 0;
}

__public void uslub_group_set_reclaim(uslub_group_t *g, uslub_reclaim_fn fn, void *arg)
{
	if (!g)
		return;
	groups_lock_take();
	g->reclaim = fn;
	g->reclaim_arg = arg;
	groups_lock_drop();
}

__public size_t uslub_group_usage(const uslub_group_t *g)
{
	return g ? READ_ONCE(g->usage) : 0;
}

__public int uslub_group_info(const uslub_group_t *g, struct uslub_group_info *out)
{
	if (!g || !out) {
		errno = EINVAL;
		return -1;
	}
	groups_lock_take();
	out->name = g->name;
	out->usage = READ_ONCE(g->usage);
	out->limit = READ_ONCE(g->limit);
	out->failcnt = READ_ONCE(g->failcnt);
	out->reclaims = READ_ONCE(g->reclaims);
	out->children = g->nr_children;
	out->depth = g->depth;
	groups_lock_drop();
	return 0;
}

__public unsigned long uslub_group_count(void)
{
	return READ_ONCE(nr_groups);
}

__public unsigned long uslub_objcg_count(void)
{
	return READ_ONCE(nr_objcgs);
}

/* ------------------------------------------------------------------------
 * Per-group, per-cache usage: walk the slabs (memcg_slabinfo.py)
 * ---------------------------------------------------------------------- */

/* A pointer read from an extension of a slab that may be going away:
 * only follow it if it is a handle's address. */
static bool objcg_plausible(const struct obj_cgroup *o)
{
	struct slab *slab = virt_to_slab(o);
	if (!slab || READ_ONCE(slab->slab_cache) != objcg_cache)
		return false;
	uintptr_t off = (uintptr_t)o - (uintptr_t)slab_address(slab);
	return off % objcg_cache->size == 0;
}

struct usage_walk {
	const struct uslub_group *only;   /* count only this group, or      */
	unsigned long *by_id;             /* count every group by id        */
	unsigned long objects;
};

static void usage_walk_cb(struct kmem_cache *s, struct slab *slab, void *arg)
{
	struct usage_walk *w = arg;
	if (!READ_ONCE(slab->obj_exts))
		return;
	unsigned int objects = FC_OBJECTS(slab_counters(slab));
	for (unsigned int i = 0; i < objects; i++) {
		struct obj_cgroup *o = obj_ext_objcg(_uslub_slab_obj_ext_idx(s, slab, i));
		if (!o || !objcg_plausible(o))
			continue;
		struct uslub_group *g = READ_ONCE(o->group);
		if (!g)
			continue;
		if (w->only ? g == w->only : true) {
			w->objects++;
			if (w->by_id && g->id < MAX_GROUP_IDS && group_by_id[g->id] == g)
				w->by_id[g->id]++;
		}
	}
}

__public int uslub_group_cache_usage(const uslub_group_t *g, const uslub_cache_t *cs,
				     unsigned long *objects, size_t *bytes)
{
	if (!g || !cs) {
		errno = EINVAL;
		return -1;
	}
	struct kmem_cache *s = (struct kmem_cache *)cs;
	struct usage_walk w = { g, NULL, 0 };
	_uslub_once(&caches_once, create_caches);
	groups_lock_take();
	if (objcg_cache && READ_ONCE(s->ext_placement) != USLUB_OBJ_EXT_NONE)
		_uslub_for_each_slab(s, usage_walk_cb, &w);
	groups_lock_drop();
	if (objects)
		*objects = w.objects;
	if (bytes)
		*bytes = w.objects * s->charge;
	return 0;
}

static void group_path(const struct uslub_group *g, char *buf, size_t len)
{
	if (!g->parent) {
		snprintf(buf, len, "/");
		return;
	}
	const struct uslub_group *chain[64];
	int n = 0;
	for (const struct uslub_group *a = g; a->parent && n < 64; a = a->parent)
		chain[n++] = a;
	size_t at = 0;
	buf[0] = 0;
	while (n-- > 0 && at < len)
		at += (size_t)snprintf(buf + at, len - at, "/%s", chain[n]->name);
}

/* Depth-first walk of the tree (groups_lock held). */
static void print_groups_locked(struct uslub_buf *b, bool json, struct uslub_group *g, bool *first)
{
	char path[512];
	group_path(g, path, sizeof(path));
	size_t limit = READ_ONCE(g->limit);
	if (json) {
		_uslub_buf_printf(b, "%s{\"name\":", *first ? "" : ",");
		_uslub_buf_json_string(b, g->name);
		_uslub_buf_printf(b, ",\"path\":");
		_uslub_buf_json_string(b, path);
		_uslub_buf_printf(b, ",\"usage\":%zu,\"limit\":", READ_ONCE(g->usage));
		if (limit == SIZE_MAX)
			_uslub_buf_printf(b, "null");
		else
			_uslub_buf_printf(b, "%zu", limit);
		_uslub_buf_printf(b, ",\"failcnt\":%lu,\"reclaims\":%lu,\"children\":%lu}",
			READ_ONCE(g->failcnt), READ_ONCE(g->reclaims), g->nr_children);
	} else {
		char lim[32];
		if (limit == SIZE_MAX)
			snprintf(lim, sizeof(lim), "max");
		else
			snprintf(lim, sizeof(lim), "%zu", limit);
		_uslub_buf_text(b, path, 32);           /* names are data (base.h) */
		_uslub_buf_printf(b, " %14zu %14s %8lu %8lu\n", READ_ONCE(g->usage), lim,
			READ_ONCE(g->failcnt), READ_ONCE(g->reclaims));
	}
	*first = false;
	struct uslub_group *child;
	list_for_each_entry(child, &g->children, sibling)
		print_groups_locked(b, json, child, first);
}

__public void uslub_group_report_print(FILE *f, int fmt)
{
	struct uslub_buf b = { 0 };
	_uslub_init();
	_uslub_once(&caches_once, create_caches);
	unsigned long *by_id = NULL;
	size_t map_len = MAX_GROUP_IDS * sizeof(unsigned long);
	by_id = _uslub_page_map(map_len);

	uslub_mutex_lock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	groups_lock_take();
	bool first = true;
	bool json = fmt == USLUB_FMT_JSON || fmt == USLUB_FMT_JSON_VALUE;
	if (json) {
		_uslub_buf_printf(&b, "{\"groups\":[");
		print_groups_locked(&b, json, &root_group, &first);
		_uslub_buf_printf(&b, "],\"usage\":[");
	} else {
		_uslub_buf_printf(&b, "# %-30s %14s %14s %8s %8s\n", "group", "usage", "limit", "failcnt",
			"reclaims");
		print_groups_locked(&b, json, &root_group, &first);
		_uslub_buf_printf(&b, "# %-30s %-24s %10s %14s\n", "group", "cache", "objects", "bytes");
	}
	first = true;
	struct kmem_cache *s;
	list_for_each_entry(s, &_uslub_slab_caches, list) {
		if (!by_id)
			break;
		if (READ_ONCE(s->ext_placement) == USLUB_OBJ_EXT_NONE || !objcg_cache)
			continue;
		struct usage_walk w = { NULL, by_id, 0 };
		_uslub_for_each_slab(s, usage_walk_cb, &w);
		for (unsigned int id = 0; id < MAX_GROUP_IDS && w.objects; id++) {
			if (!by_id[id])
				continue;
			unsigned long n = by_id[id];
			by_id[id] = 0;
			w.objects -= n;
			struct uslub_group *g = group_by_id[id];
			if (!g)
				continue;
			char path[512];
			group_path(g, path, sizeof(path));
			if (json) {
				_uslub_buf_printf(&b, "%s{\"group\":", first ? "" : ",");
				_uslub_buf_json_string(&b, path);
				_uslub_buf_printf(&b, ",\"cache\":");
				_uslub_buf_json_string(&b, s->name);
				_uslub_buf_printf(&b, ",\"objects\":%lu,\"bytes\":%zu}", n, n * (size_t)s->charge);
			} else {
				_uslub_buf_text(&b, path, 32);
				_uslub_buf_printf(&b, " ");
				_uslub_buf_text(&b, s->name, 24);
				_uslub_buf_printf(&b, " %10lu %14zu\n", n, n * (size_t)s->charge);
			}
			first = false;
		}
	}
	if (json)
		_uslub_buf_printf(&b, "]}%s", fmt == USLUB_FMT_JSON ? "\n" : "");
	else
		_uslub_buf_printf(&b,
			"# usage     bytes charged to the group and its descendants; limit: their limit\n"
			"#           (max: none)\n"
			"# failcnt   charges refused at the limit; reclaims: reclaim callbacks run to get\n"
			"#           under it\n"
			"# objects   live objects of the cache charged to the group itself (not its\n"
			"#           descendants); bytes: what they are charged (size and metadata)\n");
	groups_lock_drop();
	uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	if (by_id)
		_uslub_sys_munmap_or_park(by_id, map_len);
	_uslub_buf_write(&b, f);     /* no lock held: a FILE may malloc() */
}

/* fork: groups_lock is taken before fork (after slab_mutex) and reset in
 * the child, where only the forking thread is current anywhere. */
static void groups_prefork(void)
{
	groups_lock_take();
}

static void groups_postfork_parent(void)
{
	groups_lock_drop();
}

static void recount_current(struct uslub_group *g)
{
	WRITE_ONCE(g->nr_current, g == _uslub_tls.cur_group ? 1 : 0);
	struct uslub_group *child;
	list_for_each_entry(child, &g->children, sibling)
		recount_current(child);
}

static void groups_postfork_child(void)
{
	uslub_mutex_reset(&groups_lock, RANK_GROUPS);
	recount_current(&root_group);
}

static const struct uslub_lifecycle groups_lifecycle = {
	.name = "groups_lock",
	.rank = RANK_GROUPS,
	.prefork = groups_prefork,
	.postfork_parent = groups_postfork_parent,
	.postfork_child = groups_postfork_child,
};

static void memcg_thread_lost(void *area)
{
	drain_area(area);
}

/* Thread exit first, with no lock held; a fork child drains the stocks of
 * the threads it lost. */
static const struct uslub_lifecycle memcg_exit_lifecycle = {
	.name = "memcg",
	.rank = LIFECYCLE_UNLOCKED,
	.thread_exit = memcg_thread_exit,
	.thread_lost = memcg_thread_lost,
};
