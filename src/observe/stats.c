/*
 * Statistics and slabinfo: the counters are defined once (USLUB_STAT_ITEMS
 * in uslub.h) and printed from one code path as a table or as JSON.
 */
#include "slub/slub.h"
#include "sheaf/sheaf.h"
#include <string.h>
#include <sys/mman.h>

static const char *const stat_names[USLUB_NR_STATS] = {
#define USLUB_X(name, doc) #name,
	USLUB_STAT_ITEMS(USLUB_X)
#undef USLUB_X
};

__public const char *uslub_stat_name(enum uslub_stat_item item)
{
	return (unsigned int)item < USLUB_NR_STATS ? stat_names[item] : NULL;
}

/* Exited threads' totals plus every live thread's slot (thread_lock). */
static void cache_stats_locked(const struct kmem_cache *s, uint64_t out[USLUB_NR_STATS])
{
	for (int i = 0; i < USLUB_NR_STATS; i++)
		out[i] = READ_ONCE(s->stat_exited[i]);
	struct uslub_thread *t;
	list_for_each_entry(t, &_uslub_threads, link) {
		struct kmem_cache_cpu *c = _uslub_thread_cpu(t, s);
		for (int i = 0; i < USLUB_NR_STATS; i++)
			out[i] += i == USLUB_ALLOC_FASTPATH ? _uslub_cpu_alloc_fastpath(s, c)
				: i == USLUB_ALLOC_PCS ? cpu_alloc_pcs(c)
				: READ_ONCE(c->stat[i]);
	}
}

__public void uslub_cache_stats(const struct kmem_cache *s, uint64_t out[USLUB_NR_STATS])
{
	if (cache_bad(s, "uslub_cache_stats")) {
		memset(out, 0, sizeof(uint64_t) * USLUB_NR_STATS);
		return;
	}
	uslub_mutex_lock(&_uslub_thread_lock, RANK_THREAD);
	cache_stats_locked(s, out);
	uslub_mutex_unlock(&_uslub_thread_lock, RANK_THREAD);
}

static void slabinfo_locked(const struct kmem_cache *s, struct uslub_slabinfo *o,
			    const uint64_t st[USLUB_NR_STATS])
{
	memset(o, 0, sizeof(*o));
	o->name = s->name;
	o->object_size = s->object_size;
	o->size = s->size;
	o->align = s->align;
	o->offset = s->offset;
	o->free_mark_offset = s->free_mark_offset;
	o->objs_per_slab = s->objects;
	o->order = s->order;
	o->pages_per_slab = 1u << s->order;
	o->min_partial = s->min_partial;
	o->cpu_partial_slabs = s->cpu_partial_slabs;
	o->sheaf_capacity = s->sheaf_capacity;
	o->percpu = (s->fastpath_off & FASTPATH_OFF_SLUB_DEBUG) ? "none" :
		    s->sheaf_capacity ? "sheaves" : "cpu_slab";
	o->percpu_mode = _uslub_pcpu ? "cpu" : "thread";
	o->percpu_ids = _uslub_pcpu ? _uslub_pcpu_nr_areas() : 0;
	o->random_freelist = s->random_seq != NULL;
	o->hardened_freelist = (s->flags & SLAB_HARDENED) != 0;
	if (s->sheaf_capacity) {
		_uslub_sheaf_barn_counts(s, &o->barn_full, &o->barn_empty);
		o->barn_limit = _uslub_sheaf_barn_limit(s);
	}
	for (int i = 0; i < _uslub_nr_nodes(); i++)
		o->keep_empty += READ_ONCE(get_node(s, i)->keep);
	o->obj_ext = READ_ONCE(s->ext_placement);
	o->obj_ext_size = o->obj_ext != USLUB_OBJ_EXT_NONE ? s->ext_size : 0;
	o->obj_ext_bytes = o->obj_ext != USLUB_OBJ_EXT_NONE ? s->ext_bytes : 0;
	static const char *const fields[] = {
		[0] = "", [OBJ_EXT_OBJCG] = "objcg", [OBJ_EXT_TAG] = "tag",
		[OBJ_EXT_BOTH] = "objcg+tag",
	};
	o->obj_ext_fields = fields[s->ext_layout & OBJ_EXT_BOTH];
	o->obj_ext_charge = s->ext_layout ? s->charge : 0;
	o->useroffset = s->useroffset;
	o->usersize = s->usersize;
	static const char letters[] = "FZPUTAOX";
	unsigned int dbg = READ_ONCE(s->debug), k = 0;
	if (!(s->fastpath_off & FASTPATH_OFF_SLUB_DEBUG))
		dbg &= ~USLUB_DBG_PATHS;             /* switched off (O) */
	for (unsigned int i = 0; letters[i]; i++)
		if (dbg & (1u << i))
			o->debug[k++] = letters[i];
	for (int i = 0; i < _uslub_nr_nodes(); i++) {
		struct kmem_cache_node *n = s->node[i];
		/* Under list_lock a listed slab cannot be discarded, so the
		 * partial slabs' free objects are within total_objects. */
		uslub_mutex_lock(&n->list_lock, RANK_LIST);
		o->num_slabs += READ_ONCE(n->nr_slabs);
		o->num_objs += READ_ONCE(n->total_objects);
		o->memory_used += READ_ONCE(n->total_pages) * PAGE_SIZE;
		o->nr_partial += n->nr_partial;
		o->isolated_slabs += n->nr_isolated;
		struct slab *slab;
		list_for_each_entry(slab, &n->partial, slab_list) {
			uint64_t cnt = slab_counters(slab);
			o->partial_free += FC_OBJECTS(cnt) - FC_INUSE(cnt);
		}
		uslub_mutex_unlock(&n->list_lock, RANK_LIST);
	}
	o->active_objs = o->num_objs >= o->partial_free ? o->num_objs - o->partial_free : 0;
	uint64_t allocs = st[USLUB_ALLOC_FASTPATH] + st[USLUB_ALLOC_SLOWPATH] + st[USLUB_ALLOC_PCS];
	uint64_t frees = st[USLUB_FREE_FASTPATH] + st[USLUB_FREE_SLOWPATH] + st[USLUB_FREE_PCS] +
			 st[USLUB_FREE_RCU_SHEAF];
	o->live_objs = allocs >= frees ? allocs - frees : 0;
	o->memory_requested = o->live_objs * s->object_size;
}

__public int uslub_cache_slabinfo(const struct kmem_cache *s, struct uslub_slabinfo *out)
{
	uint64_t st[USLUB_NR_STATS];
	if (cache_bad(s, "uslub_cache_slabinfo") || !out)
		return -1;
	uslub_mutex_lock(&_uslub_thread_lock, RANK_THREAD);
	cache_stats_locked(s, st);
	slabinfo_locked(s, out, st);
	uslub_mutex_unlock(&_uslub_thread_lock, RANK_THREAD);
	return 0;
}

__public const char *uslub_obj_ext_placement_name(int placement)
{
	static const char *const names[] = { "none", "leftover", "padding", "array", "on-demand" };
	return (unsigned int)placement < ARRAY_SIZE(names) ? names[placement] : "?";
}

/*
 * The counters as slabinfo prints them follow the kernel of the cache's
 * model. A cache with sheaves (Linux 7.0) counts its sheaves' pops and
 * pushes as ALLOC_FASTPATH and FREE_FASTPATH (7.0 folded 6.18's
 * ALLOC_PCS/FREE_PCS into them); so the printed FASTPATH counters are the
 * sum of both kinds (a sheaf cache's node-specific cpu slab included) and
 * the PCS names are not printed. A cache in cpu-slab mode (6.x) prints
 * every counter as counted. uslub_cache_stats() keeps them all apart.
 * Returns false for a counter not printed for @s.
 */
static bool stat_view(const struct kmem_cache *s, const uint64_t st[USLUB_NR_STATS], int i,
		      uint64_t *v)
{
	bool sheaves = s->sheaf_capacity != 0;
	if (sheaves && (i == USLUB_ALLOC_PCS || i == USLUB_FREE_PCS))
		return false;
	*v = st[i];
	if (sheaves && i == USLUB_ALLOC_FASTPATH)
		*v += st[USLUB_ALLOC_PCS];
	if (sheaves && i == USLUB_FREE_FASTPATH)
		*v += st[USLUB_FREE_PCS];
	return true;
}

/* A cache with nothing to show: no slab, no live object, and every
 * counter still zero (a cache that was used and has shrunk back to nothing
 * keeps its counters, and its row). */
static bool cache_unused(const struct uslub_slabinfo *si, const uint64_t st[USLUB_NR_STATS])
{
	if (si->num_slabs || si->live_objs || si->barn_full || si->barn_empty)
		return false;
	for (int i = 0; i < USLUB_NR_STATS; i++)
		if (st[i])
			return false;
	return true;
}

/*
 * The table's legend, once under it: what each column counts, in which
 * unit. Comment lines, as the header is, so that a reader of the rows
 * skips them with it.
 */
static void slabinfo_legend(struct uslub_buf *b)
{
	_uslub_buf_printf(b,
		"# <active>    objects in use as SLUB counts them (/proc/slabinfo): the slots of the slabs\n"
		"#             less the free ones on the node partial lists, so objects cached per CPU\n"
		"#             (in sheaves or a cpu slab, ready for the next allocation) count as active\n"
		"# <num_objs>  object slots in the cache's slabs\n"
		"# <live>      objects the program holds: allocations less frees, by the counters\n"
		"# <objsz>     bytes asked for per object; <size>: bytes per slot, metadata and alignment in\n"
		"# <perslab>   objects per slab; <pages>: pages (%lu KiB) per slab; <slabs>: slabs now\n"
		"# <partial>   slabs on the node partial lists (some of their objects free)\n"
		"# <mem_used>  bytes in the cache's slabs (<slabs> x <pages> x %lu)\n"
		"# indented under a row: the per-CPU layer (sheaves: capacity, full and empty sheaves in\n"
		"#   the barn), extensions, debug flags and the non-zero event counters since the start\n"
		"#   (the kernel's /sys/kernel/slab/<cache>/<counter>; a sheaf's pops count as FASTPATH)\n",
		(unsigned long)(PAGE_SIZE >> 10), (unsigned long)PAGE_SIZE);
}

/*
 * One code path for both formats. The table is /proc/slabinfo's shape plus
 * uslub's columns, then the non-zero counters of each cache; the caches
 * with nothing in them (cache_unused()) are named on one line after the
 * rows, and the legend follows. The JSON has every cache, on one line.
 * Built under thread_lock and slab_mutex into mmap'ed buffers, written to
 * @f after they are dropped: a FILE may malloc() (its buffer on first use,
 * or open_memstream's growth), and malloc may be uslub.
 */
__public void uslub_slabinfo_print(FILE *f, enum uslub_format fmt)
{
	struct uslub_buf b = { 0 }, unused = { 0 };
	unsigned long nr_unused = 0;
	bool json = fmt == USLUB_FMT_JSON || fmt == USLUB_FMT_JSON_VALUE;
	_uslub_init();
	uslub_mutex_lock(&_uslub_thread_lock, RANK_THREAD);
	uslub_mutex_lock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	struct uslub_page_stats ps;
	uslub_page_stats(&ps);
	if (json)
		_uslub_buf_printf(&b, "{\"page\":{\"segments\":%lu,\"bytes_reserved\":%lu,"
			"\"bytes_in_slabs\":%lu,\"bytes_purged\":%lu,\"purges\":%lu,"
			"\"segments_kept\":%lu,\"release_failures\":%lu,\"bytes_unreleased\":%lu},"
			"\"caches\":[",
			ps.segments, ps.bytes_reserved, ps.bytes_in_slabs, ps.bytes_purged, ps.purges,
			ps.segments_kept, ps.release_failures, ps.bytes_unreleased);
	else
		_uslub_buf_printf(&b, "# %-20s %10s %10s %10s %7s %7s %8s %8s %8s %12s %12s\n", "name",
			"<active>", "<num_objs>", "<live>", "<objsz>", "<size>", "<perslab>",
			"<pages>", "<slabs>", "<partial>", "<mem_used>");
	struct kmem_cache *s;
	bool first = true;
	list_for_each_entry(s, &_uslub_slab_caches, list) {
		uint64_t st[USLUB_NR_STATS];
		struct uslub_slabinfo si;
		cache_stats_locked(s, st);
		slabinfo_locked(s, &si, st);
		if (json) {
			_uslub_buf_printf(&b, "%s{\"name\":", first ? "" : ",");
			_uslub_buf_json_string(&b, s->name);
			_uslub_buf_printf(&b, ",\"object_size\":%zu,\"size\":%zu,\"align\":%zu,\"offset\":%zu,"
				"\"objs_per_slab\":%u,\"order\":%u,\"pages_per_slab\":%u,"
				"\"min_partial\":%u,\"cpu_partial_slabs\":%u,\"num_slabs\":%lu,"
				"\"num_objs\":%lu,\"active_objs\":%lu,\"live_objs\":%lu,"
				"\"nr_partial\":%lu,\"partial_free\":%lu,\"memory_used\":%lu,"
				"\"memory_requested\":%lu,\"percpu\":\"%s\",\"percpu_mode\":\"%s\","
				"\"percpu_ids\":%u,\"sheaf_capacity\":%u,\"barn_full\":%lu,"
				"\"barn_empty\":%lu,\"barn_limit\":%lu,\"keep_empty\":%lu,"
				"\"random_freelist\":%s,\"hardened_freelist\":%s,"
				"\"obj_ext\":\"%s\",\"obj_ext_size\":%u,\"obj_ext_bytes\":%u,"
				"\"obj_ext_fields\":\"%s\",\"obj_ext_charge\":%u,"
				"\"debug\":\"%s\",\"isolated_slabs\":%lu,\"stats\":{",
				si.object_size, si.size, si.align, si.offset, si.objs_per_slab,
				si.order, si.pages_per_slab, si.min_partial, si.cpu_partial_slabs,
				si.num_slabs, si.num_objs, si.active_objs, si.live_objs,
				si.nr_partial, si.partial_free, si.memory_used, si.memory_requested,
				si.percpu, si.percpu_mode, si.percpu_ids, si.sheaf_capacity,
				si.barn_full, si.barn_empty,
				si.barn_limit, si.keep_empty,
				si.random_freelist ? "true" : "false",
				si.hardened_freelist ? "true" : "false",
				uslub_obj_ext_placement_name(si.obj_ext), si.obj_ext_size,
				si.obj_ext_bytes, si.obj_ext_fields, si.obj_ext_charge, si.debug,
				si.isolated_slabs);
			bool comma = false;
			for (int i = 0; i < USLUB_NR_STATS; i++) {
				uint64_t v;
				if (!stat_view(s, st, i, &v))
					continue;
				_uslub_buf_printf(&b, "%s\"%s\":%llu", comma ? "," : "", stat_names[i],
					(unsigned long long)v);
				comma = true;
			}
			_uslub_buf_printf(&b, "}}");
		} else if (cache_unused(&si, st)) {
			if (nr_unused)
				_uslub_buf_printf(&unused, ", ");
			_uslub_buf_text(&unused, s->name, 0);
			nr_unused++;
		} else {
			_uslub_buf_text(&b, s->name, 22);   /* a name is data (base.h) */
			_uslub_buf_printf(&b, " %10lu %10lu %10lu %7zu %7zu %8u %8u %8lu %12lu %12lu\n",
				si.active_objs, si.num_objs, si.live_objs, si.object_size,
				si.size, si.objs_per_slab, si.pages_per_slab, si.num_slabs,
				si.nr_partial, si.memory_used);
			if (si.sheaf_capacity)
			{
				if (_uslub_pcpu)
					_uslub_buf_printf(&b, "    percpu=sheaves mode=cpu ids=%u",
							  si.percpu_ids);
				else
					_uslub_buf_printf(&b, "    percpu=sheaves");
				_uslub_buf_printf(&b, " sheaf_capacity=%u barn_full=%lu "
					"barn_empty=%lu barn_limit=%lu%s%s\n", si.sheaf_capacity,
					si.barn_full, si.barn_empty, si.barn_limit,
					si.random_freelist ? " random_freelist" : "",
					si.hardened_freelist ? " hardened_freelist" : "");
			} else
				_uslub_buf_printf(&b, "    percpu=%s%s%s\n", si.percpu,
					si.random_freelist ? " random_freelist" : "",
					si.hardened_freelist ? " hardened_freelist" : "");
			if (si.keep_empty)
				_uslub_buf_printf(&b, "    keep_empty=%lu (min_partial %u)\n", si.keep_empty,
					si.min_partial);
			if (si.obj_ext)
				_uslub_buf_printf(&b, "    obj_ext=%s obj_ext_size=%u obj_ext_fields=%s "
					"metadata_bytes_per_object=%u charge=%u\n",
					uslub_obj_ext_placement_name(si.obj_ext), si.obj_ext_size,
					si.obj_ext_fields, si.obj_ext_bytes, si.obj_ext_charge);
			if (si.debug[0] || si.isolated_slabs)
				_uslub_buf_printf(&b, "    debug=%s isolated_slabs=%lu\n", si.debug,
					si.isolated_slabs);
			bool any = false;
			for (int i = 0; i < USLUB_NR_STATS; i++) {
				uint64_t v;
				if (!stat_view(s, st, i, &v) || !v)
					continue;
				_uslub_buf_printf(&b, "%s%s=%llu", any ? " " : "    ", stat_names[i],
					(unsigned long long)v);
				any = true;
			}
			if (any)
				_uslub_buf_printf(&b, "\n");
		}
		first = false;
	}
	if (json) {
		_uslub_buf_printf(&b, "]}%s", fmt == USLUB_FMT_JSON ? "\n" : "");
	} else {
		if (nr_unused)
			_uslub_buf_printf(&b, "%lu empty cache%s (no slabs, no objects, no activity): "
				"%.*s%s\n", nr_unused, nr_unused == 1 ? "" : "s",
				(int)unused.len, unused.p ? unused.p : "", unused.cut ? ", ..." : "");
		slabinfo_legend(&b);
	}
	uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	uslub_mutex_unlock(&_uslub_thread_lock, RANK_THREAD);
	if (unused.p)
		_uslub_sys_munmap_or_park(unused.p, unused.cap);
	_uslub_buf_write(&b, f);
}
