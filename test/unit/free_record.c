/*
 * The free record (slub.h struct free_record): a free into the slab the
 * slot last freed into skips the descriptor lookup, so every bad free must
 * still be caught on that path, and a record must die with its slab:
 *   record_set           an allocation's refill and a second hot lookup
 *                        push into one slab make it the record; the next
 *                        free into it takes the record's path (no lookup)
 *   record_note_run      a lookup push that writes over another object
 *                        notes nothing; one that writes over the object
 *                        itself (a hot one: freed right after it was
 *                        taken from there) marks its slab pending, the
 *                        slab's second in a row sets the record
 *   record_bad_frees     adjacent and non-adjacent double frees, an
 *                        interior pointer, an object of another cache
 *                        inside and outside the record: each reported once,
 *                        nothing pushed
 *   record_stale_reused  the record's slab discarded and its pages taken
 *                        by a new slab of another cache: the epoch moved,
 *                        so a free of that cache's object to the first
 *                        cache is refused as a wrong-cache free
 *   record_kfree         kfree()'s thread record (last_slot): a double
 *                        free and an interior pointer through it
 *   record_alternate     hot pairs alternating between two size classes:
 *                        each class's slot gets its own record, the
 *                        thread's last_slot follows the latest; a double
 *                        free of either class is caught
 *   record_hooked        an accounted cache's hooked record (its lean
 *                        leaves): set by the refill, the extension's
 *                        group charged and uncharged through it (exact
 *                        per-cache usage), a double free and an interior
 *                        pointer refused, never matched by the plain
 *                        record tests, dead after a shrink
 * Profiling off (the unit tier's default): exact counts.
 */
#include "cache/cache.h"
#include "unit.h"
#include <string.h>

#define SIZE 64

/* A sheaf cache in both per-CPU models (USLUB_CPU_SLABS=1 gives sheaves
 * only to a cache that asks) */
static struct kmem_cache *mk(const char *name)
{
	struct uslub_cache_args args = { .sheaf_capacity = 32 };
	return uslub_cache_create_args(name, SIZE, &args, 0);
}

static struct kmem_cache_cpu *slot(struct kmem_cache *s)
{
	return this_cpu(s);
}

static bool rec_covers(struct kmem_cache *s, const void *x)
{
	struct kmem_cache_cpu *c = slot(s);
	return (uintptr_t)x - (uintptr_t)c->rec.addr < c->rec.bytes &&
	       c->rec.epoch == s->slab_epoch;
}

/* An object whose free goes through @s's record: allocated, freed twice
 * in the same slab by lookups or refilled, then taken again. */
static void *recorded_object(struct kmem_cache *s)
{
	void *x = uslub_cache_alloc(s, 0);
	CHECK(x);
	uslub_cache_free(s, x);
	x = uslub_cache_alloc(s, 0);
	CHECK(x);
	return x;
}

static void record_set(void)
{
	struct kmem_cache *s = mk("rec_set");
	CHECK(s && s->sheaf_capacity);
	void *x = recorded_object(s);
	CHECK(rec_covers(s, x));
	struct slab_sheaf *main = slot(s)->main;
	unsigned int n = main->size;
	uslub_cache_free(s, x);
	CHECK_EQ(main->size, n + 1);
	CHECK_EQ(main->objects[n], x);
	CHECK_EQ(*(uintptr_t *)x, slot(s)->rec.mark);   /* the free mark */
	uslub_cache_destroy(s);
}

/* Lookup pushes into a slab that is not the record: one that writes over
 * another object of the sheaf notes nothing (frees at random: a record
 * set costs ~60 instructions), a hot one (the object freed right after it
 * was taken from that place) marks the slab pending, and the slab's
 * second hot push in a row makes it the record. */
static void record_note_run(void)
{
	struct kmem_cache *s = mk("rec_run");
	CHECK(s && s->sheaf_capacity);
	enum { N = 256 };
	static void *v[N];
	for (int i = 0; i < N; i++)
		CHECK(v[i] = uslub_cache_alloc(s, 0));
	struct slab_sheaf *main = slot(s)->main;
	CHECK(main->size + 1 <= main->capacity);
	/* an object the record does not cover, not the one last taken
	 * from the place its free writes to */
	void *b = NULL;
	for (int i = 0; i < N && !b; i++)
		if (!rec_covers(s, v[i]) && v[i] != main->objects[main->size]) {
			b = v[i];
			v[i] = NULL;
		}
	CHECK(b);
	struct slab *sb = virt_to_slab(b);
	CHECK(slot(s)->rec.pending != sb);
	uslub_cache_free(s, b);                       /* over another: nothing */
	CHECK(slot(s)->rec.pending != sb);
	CHECK(!rec_covers(s, b));
	CHECK(uslub_cache_alloc(s, 0) == b);           /* LIFO: b again */
	uslub_cache_free(s, b);                       /* hot: pending only */
	CHECK(slot(s)->rec.pending == sb);
	CHECK(!rec_covers(s, b));
	CHECK(uslub_cache_alloc(s, 0) == b);
	uslub_cache_free(s, b);                       /* its second: the record */
	CHECK(rec_covers(s, b));
	for (int i = 0; i < N; i++)
		if (v[i])
			uslub_cache_free(s, v[i]);
	CHECK_EQ(uslub_cache_validate(s), 0);
	uslub_cache_destroy(s);
}

static void record_bad_frees(void)
{
	struct kmem_cache *s = mk("rec_bad");
	struct kmem_cache *o = mk("rec_other");
	CHECK(s && o);
	void *x = recorded_object(s);
	void *y = uslub_cache_alloc(s, 0);
	CHECK(y);
	CHECK(rec_covers(s, x));
	struct slab_sheaf *main = slot(s)->main;
	unsigned long e0 = uslub_error_count();

	uslub_cache_free(s, x);
	unsigned int n = main->size;
	uslub_cache_free(s, x);                          /* adjacent */
	CHECK_EQ(uslub_error_count(), e0 + 1);
	CHECK_EQ(main->size, n);
	CHECK(rec_covers(s, y));     /* the next object of the same refill */
	uslub_cache_free(s, y);
	n = main->size;
	uslub_cache_free(s, x);                          /* not adjacent */
	CHECK_EQ(uslub_error_count(), e0 + 2);
	CHECK_EQ(main->size, n);
	x = uslub_cache_alloc(s, 0);
	CHECK(x && rec_covers(s, x));
	n = main->size;
	uslub_cache_free(s, (char *)x + 8);              /* interior */
	CHECK_EQ(uslub_error_count(), e0 + 3);
	CHECK_EQ(main->size, n);
	void *z = uslub_cache_alloc(o, 0);               /* another cache's */
	CHECK(z && !rec_covers(s, z));
	uslub_cache_free(s, z);
	CHECK_EQ(uslub_error_count(), e0 + 4);
	CHECK_EQ(main->size, n);
	uslub_cache_free(o, z);
	uslub_cache_free(s, x);
	CHECK_EQ(uslub_error_count(), e0 + 4);
	uslub_cache_destroy(o);
	uslub_cache_destroy(s);
}

static void record_stale_reused(void)
{
	struct kmem_cache *s = mk("rec_stale");
	CHECK(s);
	void *x = recorded_object(s);
	CHECK(rec_covers(s, x));
	char *addr = slot(s)->rec.addr;
	unsigned long bytes = slot(s)->rec.bytes;
	uint64_t epoch = s->slab_epoch;
	uslub_cache_free(s, x);
	uslub_cache_shrink(s);        /* flush the sheaves, discard the slab */
	CHECK(s->slab_epoch != epoch);
	CHECK_EQ(slot(s)->rec.addr, addr);   /* the record stays, stale */

	/* another cache takes the pages */
	struct kmem_cache *o = mk("rec_taker");
	CHECK(o);
	enum { MAX = 200000 };
	static void *got[MAX];
	int n = 0;
	void *inside = NULL;
	while (n < MAX && !inside) {
		void *p = uslub_cache_alloc(o, 0);
		CHECK(p);
		got[n++] = p;
		if ((uintptr_t)p - (uintptr_t)addr < bytes &&
		    ((uintptr_t)p - (uintptr_t)addr) % s->size == 0)
			inside = p;
	}
	CHECK(inside);
	memset(inside, 0x5a, SIZE);
	unsigned long e0 = uslub_error_count();
	struct slab_sheaf *main = slot(s)->main;
	unsigned int before = main->size;
	uslub_cache_free(s, inside);                     /* wrong cache */
	CHECK_EQ(uslub_error_count(), e0 + 1);
	CHECK(slot(s)->main != main || main->size == before);
	CHECK_EQ(((unsigned char *)inside)[0], 0x5a);    /* left alone */
	for (int i = 0; i < n; i++)
		uslub_cache_free(o, got[i]);
	CHECK_EQ(uslub_error_count(), e0 + 1);
	uslub_cache_destroy(o);
	uslub_cache_destroy(s);
}

static void record_kfree(void)
{
	void *x = uslub_kmalloc(SIZE, 0);
	CHECK(x);
	for (int i = 0; i < 2; i++) {   /* two hot pushes, or a refill */
		uslub_kfree(x);
		CHECK(uslub_kmalloc(SIZE, 0) == x);
	}
	struct kmem_cache_cpu *last = _uslub_tls.last_slot;
	bool through_record = last != CPU_SLOT_NONE &&
			      (uintptr_t)x - (uintptr_t)last->rec.addr < last->rec.bytes;
	unsigned long e0 = uslub_error_count();
	uslub_kfree(x);
	uslub_kfree(x);                                  /* double */
	CHECK_EQ(uslub_error_count(), e0 + 1);
	x = uslub_kmalloc(SIZE, 0);
	CHECK(x);
	uslub_kfree((char *)x + 16);                     /* interior */
	CHECK_EQ(uslub_error_count(), e0 + 2);
	uslub_kfree(x);
	CHECK_EQ(uslub_error_count(), e0 + 2);
	printf("record_kfree: %s\n", through_record ? "through the thread's record" : "lookup");
	CHECK(through_record);
}

static bool hrec_covers(struct kmem_cache *s, const void *x)
{
	struct kmem_cache_cpu *c = slot(s);
	return (uintptr_t)x - (uintptr_t)c->rec.addr < c->rec.bytes &&
	       c->rec.epoch == (s->slab_epoch | FREE_RECORD_HOOKED);
}

static void record_hooked(void)
{
	uslub_group_t *g = uslub_group_create(NULL, "rec_group", USLUB_GROUP_NO_LIMIT);
	CHECK(g);
	uslub_group_t *old = uslub_group_set_current(g);
	struct uslub_cache_args args = { .sheaf_capacity = 32 };
	struct kmem_cache *s = uslub_cache_create_args("rec_hooked", SIZE, &args, USLUB_ACCOUNT);
	CHECK(s);
	CHECK_EQ(s->pcs_hooks, PCS_HOOKS_ACCOUNT);       /* on the lean leaves */
	void *x = uslub_cache_alloc(s, 0);               /* the refill sets it */
	CHECK(x && hrec_covers(s, x));
	CHECK(!rec_covers(s, x));                        /* never a plain match */
	unsigned long objs;
	size_t bytes;
	CHECK_EQ(uslub_group_cache_usage(g, s, &objs, &bytes), 0);
	CHECK_EQ(objs, 1);
	CHECK_EQ(bytes, s->charge);
	struct slab_sheaf *main = slot(s)->main;
	unsigned int n = main->size;
	unsigned long e0 = uslub_error_count();
	uslub_cache_free(s, x);                          /* through the record */
	CHECK_EQ(main->size, n + 1);
	CHECK_EQ(main->objects[n], x);
	CHECK_EQ(uslub_group_cache_usage(g, s, &objs, &bytes), 0);
	CHECK_EQ(objs, 0);                               /* uncharged */
	uslub_cache_free(s, x);                          /* double */
	CHECK_EQ(uslub_error_count(), e0 + 1);
	CHECK_EQ(main->size, n + 1);
	x = uslub_cache_alloc(s, 0);
	CHECK(x && hrec_covers(s, x));
	n = main->size;
	uslub_cache_free(s, (char *)x + 8);              /* interior */
	CHECK_EQ(uslub_error_count(), e0 + 2);
	CHECK_EQ(main->size, n);
	CHECK_EQ(uslub_group_cache_usage(g, s, &objs, &bytes), 0);
	CHECK_EQ(objs, 1);                               /* still charged */
	uslub_cache_free(s, x);
	CHECK_EQ(uslub_error_count(), e0 + 2);
	CHECK_EQ(uslub_group_cache_usage(g, s, &objs, &bytes), 0);
	CHECK_EQ(objs, 0);
	uint64_t epoch = s->slab_epoch;
	uslub_cache_shrink(s);                           /* the slab discarded */
	CHECK(s->slab_epoch != epoch && !hrec_covers(s, x));
	uslub_group_set_current(old);
	uslub_cache_destroy(s);
	CHECK_EQ(uslub_group_delete(g), 0);
}

static void record_alternate(void)
{
	enum { K = 6 };
	void *a = uslub_kmalloc(24, 0), *b = uslub_kmalloc(200, 0);
	CHECK(a && b);
	struct slab *sa = virt_to_slab(a), *sb = virt_to_slab(b);
	CHECK(sa && sb && sa->slab_cache != sb->slab_cache);
	struct kmem_cache *ka = sa->slab_cache, *kb = sb->slab_cache;
	struct kmem_cache_cpu *cb = this_cpu(kb);
	/* hot pairs, alternating: each class's own slot gets the record of
	 * its object's slab, and last_slot is the slot of the latest record
	 * set (or found already set by a noted push) */
	for (int i = 0; i < K; i++) {
		uslub_kfree(a);
		CHECK(uslub_kmalloc(24, 0) == a);
		uslub_kfree(b);
		CHECK(uslub_kmalloc(200, 0) == b);
	}
	CHECK(rec_covers(ka, a));
	CHECK(rec_covers(kb, b));
	CHECK(!kb->rec_thread || _uslub_tls.last_slot == cb);
	unsigned long e0 = uslub_error_count();
	uslub_kfree(a);
	uslub_kfree(b);
	uslub_kfree(a);                                   /* double, class a */
	uslub_kfree(b);                                   /* double, class b */
	CHECK_EQ(uslub_error_count(), e0 + 2);
	printf("record_alternate: both records set\n");
}

int main(void)
{
	/* the reports go to stderr; the counts are what is checked */
	struct kmem_cache *probe = mk("rec_probe");
	CHECK(probe);
	if (probe->fastpath_off > FASTPATH_OFF_HARDENED) {
		/* AddressSanitizer in the process: every free takes the miss
		 * path (FASTPATH_OFF_ASAN), no record is ever set */
		printf("inline paths off (%#x): no free record to test\n", probe->fastpath_off);
		return 77;
	}
	uslub_cache_destroy(probe);
	record_set();
	record_note_run();
	record_bad_frees();
	record_stale_reused();
	record_kfree();
	record_alternate();
	record_hooked();
	printf("free record: ok\n");
	return 0;
}
