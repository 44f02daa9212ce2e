/*
 * Extension layer: what lives in the per-object extensions (seed 003) —
 * accounting groups with their object-level handles (a userspace
 * obj_cgroup, seed 004) and allocation tags (per-callsite profiling).
 *
 * The cache layer runs the per-object hooks inline (cache/internal.h:
 * post_alloc_hook(), free_hook(), the stock fast paths) and calls into this
 * layer only for stock misses, tag counters it has not set up yet, thread
 * exit and fork. The extensions' storage (in the slab, or a separate
 * array) is SLUB proper's: slub/obj_ext.c.
 *
 * Locks (ranks in base/base.h, after slab_mutex):
 *   groups_lock  the group tree (parent, children, nr_children), every
 *                objcg->group and group->objcgs list, group ids; taken to
 *                charge or uncharge a batch (reads objcg->group and walks
 *                its ancestors), never per object in the common case.
 *                Nothing allocates or frees memory while holding it.
 *   tags_lock    the tag registry (registering sections, the index table).
 */
#ifndef USLUB_EXT_H
#define USLUB_EXT_H

#include "slub/slub.h"

#define GROUP_NAME_MAX 64
#define MAX_GROUP_IDS  65536   /* live groups at once, the root included */

/*
 * An accounting group (the memcg). usage counts this group's charges and
 * all its descendants' (hierarchical, like page_counter):
 *   usage(g) = sum of charges of objects whose objcg->group is g or a
 *              descendant of g + prepaid stock bytes of those objcgs
 * Every charge adds to the group and each ancestor, checking each limit.
 */
struct uslub_group {
	char name[GROUP_NAME_MAX];
	struct uslub_group *parent;       /* NULL only for the root          */
	struct list_head children;        /* groups_lock                     */
	struct list_head sibling;         /* on parent->children             */
	unsigned long nr_children;
	size_t usage;                     /* atomic                          */
	size_t limit;                     /* atomic (set_limit)              */
	unsigned long failcnt;            /* atomic                          */
	unsigned long reclaims;           /* atomic                          */
	uslub_reclaim_fn reclaim;         /* groups_lock                     */
	void *reclaim_arg;
	struct obj_cgroup *objcg;         /* the handle new charges use      */
	struct list_head objcgs;          /* handles whose group is this one:
	                                     its own + deleted descendants'   */
	long nr_current;                  /* atomic: threads with it current */
	unsigned int id;                  /* dense, < MAX_GROUP_IDS          */
	int depth;
};

/*
 * The object-level handle (the kernel's obj_cgroup): what an object's
 * extension points to. A deleted group's handles move to its parent, so
 * the group itself is freed at once and its objects uncharge the parent.
 * refs is counted in bytes plus holders:
 *   refs = sum of charges of live objects pointing here
 *        + prepaid bytes in stocks caching it + number of such stocks
 *        + 1 while it is its group's current handle
 * and the handle is freed when refs drops to 0.
 */
struct obj_cgroup {
	struct uslub_group *group;        /* groups_lock to change; read under it */
	long refs;                        /* atomic                               */
	struct list_head list;            /* on group->objcgs (groups_lock)       */
};

/* between the two files of this layer */
__internal void _uslub_memcg_init(void);

/*
 * The extension layer's entries for the cache layer above: accounting
 * charges through the thread's stock (the inline part is in
 * cache/internal.h), tag counters.
 * Its thread exit and fork work (the stock's drain, the tags' fold) is in
 * the lifecycle table: thread_exit, thread_fold and thread_lost entries
 * (base/lifecycle.h), which thread.c runs.
 */
__internal bool _uslub_charge_slow(struct obj_cgroup *objcg, size_t bytes, uslub_gfp_t gfp);
__internal void _uslub_uncharge_slow(struct obj_cgroup *objcg, size_t bytes);
__internal struct obj_cgroup *_uslub_charge_nolock(size_t bytes, bool *refused);
__internal void _uslub_tag_add_slow(struct uslub_alloc_tag *tag, int64_t bytes, int64_t calls);

/*
 * Caller tags (ext/caller_tag.c): one allocation tag per return address,
 * for the malloc family (src/malloc), never freed. _uslub_caller_tag()
 * finds or claims the slot of @addr without a lock or an allocation (the
 * shared "other" tag when the table is full). _uslub_caller_tag_slot():
 * the slot of a caller tag, -2 for "other", -1 for any other tag.
 * _uslub_caller_tag_name(): the slot's "module+0xOFF" and "symbol+0xOFF"
 * ("<unloaded: PATH>" for a module unloaded before), resolved once with
 * dladdr(): never with a uslub lock held, after a sweep (which retires
 * the slots of unloaded modules; _uslub_caller_tags_sweep() makes one).
 */
__internal struct uslub_alloc_tag *_uslub_caller_tag(uintptr_t addr);
/*
 * In sampled mode the malloc front end leaves its caller's return address
 * in the tag slot unresolved, with USLUB_CALLER_DEFERRED set (no
 * user-space pointer has bit 63), so that an allocation that is not
 * sampled (nearly all) pays one store for it, not a table lookup; whoever
 * records the tag (a sample, a page run or mapping) resolves it with
 * _uslub_tag_resolve(). Exact mode resolves at once: every allocation
 * records its tag.
 */
#define USLUB_CALLER_DEFERRED ((uintptr_t)1 << 63)
static inline struct uslub_alloc_tag *_uslub_tag_resolve(struct uslub_alloc_tag *tag)
{
	uintptr_t v = (uintptr_t)tag;
	if (__builtin_expect((v & USLUB_CALLER_DEFERRED) != 0, 0))
		return _uslub_caller_tag(v & ~USLUB_CALLER_DEFERRED);
	return tag;
}
__internal int _uslub_caller_tag_slot(const struct uslub_alloc_tag *tag);
__internal void _uslub_caller_tag_name(int slot, const char **site, const char **func);
__internal void _uslub_caller_tags_sweep(void);
__internal unsigned int _uslub_caller_tags_limit(unsigned int n);
__internal void _uslub_caller_tags_postfork_child(void);
/*
 * Allocation stacks (ext/stack.c), the sampled mode's: _uslub_stack_tag()
 * captures the call chain of the allocation whose call site is @tag
 * (@caller: its return address, 0 unknown) and returns the interned
 * stack's tag, which the sampled object's extension holds instead of
 * @tag; NULL where none is kept (no uslub lock may be held: the capture
 * is then skipped). @stable: @tag is never freed (a caller tag, the
 * untagged one, the library's own): only those get stacks.
 * _uslub_stack_add(): a sample's estimate onto its stack (NULL: the "no
 * stack" bucket), negative at its free. _uslub_stack_caller(): the call
 * site's tag of a stack's tag (any other tag: itself).
 */
#define USLUB_STACK_DEPTH_MAX 64
__internal struct uslub_alloc_tag *_uslub_stack_tag(struct uslub_alloc_tag *tag, uintptr_t caller,
						    bool stable);
__internal void _uslub_stack_add(struct uslub_alloc_tag *stag, int64_t bytes, int64_t objs);
__internal struct uslub_alloc_tag *_uslub_stack_caller(struct uslub_alloc_tag *tag);
__internal bool _uslub_is_stack_tag(const struct uslub_alloc_tag *tag);
__internal void _uslub_stacks_init(void);
__internal unsigned int _uslub_stacks_limit(unsigned int n);     /* tests */
__internal int _uslub_stacks_unwinder(void);                     /* tests */
__internal uintptr_t _uslub_caller_tag_addr(const struct uslub_alloc_tag *tag);
__internal extern long _uslub_stock_max;     /* stock bytes kept on free: 2 x batch */
__internal void _uslub_ext_init(void);

#endif /* USLUB_EXT_H */
