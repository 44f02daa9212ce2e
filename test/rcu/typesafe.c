/*
 * typesafe.c — SLAB_TYPESAFE_BY_RCU on liburcu: readers inside
 * rcu_read_lock() hold pointers to objects that the writer frees at once,
 * while the writer empties and shrinks the cache over and over (each
 * empty slab is discarded) and makes another cache of the same size eat
 * the freed pages (it zeroes what it allocates). The ctor stamps every
 * object with the cache's type id and nothing ever clears it, so as long
 * as a reader's memory stays an object of this cache the stamp holds: a
 * reader that sees it change (or faults) saw a slab's memory leave the
 * cache inside a grace period. The test also asserts that slabs were
 * discarded while readers were inside (FREE_SLAB), so it did exercise the
 * case, and that with the flag off the same run does catch a changed
 * stamp (TYPESAFE_CONTROL=1: expected to fail; run by hand).
 *
 * Then: the layout (free pointer and free mark outside the object, or the
 * free pointer at freeptr_offset), no poisoning with slub_debug P, and
 * destroy waiting for the grace periods of the slabs it discards.
 */
#include <uslub/slab.h>
#include <urcu.h>

#include "../integration/check.h"
#include "tsan_rcu.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#define TYPE_ID 0x7e57ab1e5afe0001ul
#define NSLOTS  512
#define NREADERS 2

struct obj {
	unsigned long type;          /* set by the ctor, never written again */
	unsigned long gen;
	unsigned long data[14];
};

static struct obj *_Atomic slots[NSLOTS];
static atomic_int stop;
static atomic_long checks, bad, sections;

static void ctor(void *p)
{
	__atomic_store_n(&((struct obj *)p)->type, TYPE_ID, __ATOMIC_RELAXED);
}

/* One read-side section: take every published pointer, then keep reading
 * their stamps for a while (the writer frees them meanwhile). */
static __attribute__((noinline)) void typesafe_reader_check(struct obj **held)
{
	int n = 0;
	for (int i = 0; i < NSLOTS; i++) {
		struct obj *o = atomic_load_explicit(&slots[i], memory_order_acquire);
		if (o)
			held[n++] = o;
	}
	tsan_ignore_reads_begin();
	for (int round = 0; round < 200; round++) {
		for (int i = 0; i < n; i++) {
			if (__atomic_load_n(&held[i]->type, __ATOMIC_RELAXED) != TYPE_ID)
				atomic_fetch_add(&bad, 1);
		}
		atomic_fetch_add(&checks, n);
		if (round % 50 == 0)
			sched_yield();
	}
	tsan_ignore_reads_end();
}

static void *reader(void *arg)
{
	(void)arg;
	struct obj **held = calloc(NSLOTS, sizeof(*held));
	rcu_register_thread();
	while (!atomic_load(&stop)) {
		rcu_read_lock();
		typesafe_reader_check(held);
		rcu_read_unlock();
		atomic_fetch_add(&sections, 1);
	}
	rcu_unregister_thread();
	free(held);
	return NULL;
}

static void stress(bool typesafe)
{
	struct kmem_cache *s = kmem_cache_create("ts_obj", sizeof(struct obj),
		&(struct kmem_cache_args){ .ctor = ctor },
		typesafe ? SLAB_TYPESAFE_BY_RCU : 0);
	struct kmem_cache *other = kmem_cache_create("ts_other", sizeof(struct obj), NULL, 0);
	CHECK(s && other);
	pthread_t r[NREADERS];
	for (int i = 0; i < NREADERS; i++)
		CHECK(pthread_create(&r[i], NULL, reader, NULL) == 0);

	static struct obj *mine[NSLOTS];
	static void *eat[4 * NSLOTS];
	long rounds = scaled(400);
	for (long round = 0; round < rounds; round++) {
		for (int i = 0; i < NSLOTS; i++) {
			mine[i] = kmem_cache_alloc(s, GFP_KERNEL);
			CHECK(mine[i]);
			mine[i]->gen = (unsigned long)round;
			atomic_store_explicit(&slots[i], mine[i], memory_order_release);
		}
		sched_yield();
		for (int i = 0; i < NSLOTS; i++) {
			atomic_store_explicit(&slots[i], NULL, memory_order_release);
			kmem_cache_free(s, mine[i]);   /* reused at once: allowed */
		}
		kmem_cache_shrink(s);                  /* empty slabs discarded */
		for (int i = 0; i < 4 * NSLOTS; i++) {
			eat[i] = kmem_cache_alloc(other, GFP_KERNEL);
			CHECK(eat[i]);
			memset(eat[i], 0, sizeof(struct obj));
		}
		for (int i = 0; i < 4 * NSLOTS; i++)
			kmem_cache_free(other, eat[i]);
		kmem_cache_shrink(other);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < NREADERS; i++)
		CHECK(pthread_join(r[i], NULL) == 0);
	uint64_t discards = stat_get(s, USLUB_FREE_SLAB);
	printf("typesafe=%d: %ld rounds, %ld read sections, %ld stamp checks, %ld bad, "
	       "%llu slabs discarded\n", typesafe, rounds, atomic_load(&sections),
	       atomic_load(&checks), atomic_load(&bad), (unsigned long long)discards);
	CHECK(atomic_load(&sections) > 0 && atomic_load(&checks) > 0);
	CHECK(discards >= (uint64_t)rounds / 2);
	CHECK_EQ(atomic_load(&bad), 0);
	kmem_cache_destroy(other);
	CHECK_EQ(uslub_cache_destroy(s), 0);
}

static void layout(void)
{
	struct kmem_cache *s = kmem_cache_create("ts_layout", 64, NULL, SLAB_TYPESAFE_BY_RCU);
	CHECK(s);
	struct uslub_slabinfo si = slabinfo_get(s);
	CHECK(si.offset >= 64);              /* free pointer after the object */
	CHECK(si.free_mark_offset >= 64);    /* free mark too                 */
	/* freed objects keep their contents (nothing written inside) */
	unsigned char *p = kmem_cache_alloc(s, GFP_KERNEL);
	memset(p, 0x3c, 64);
	kmem_cache_free(s, p);
	for (int i = 0; i < 64; i++)
		CHECK_EQ(p[i], 0x3c);
	CHECK_EQ(uslub_cache_destroy(s), 0);

	/* a caller-placed free pointer */
	struct kmem_cache_args a = { .freeptr_offset = 16, .use_freeptr_offset = true };
	s = kmem_cache_create("ts_freeptr", 64, &a, SLAB_TYPESAFE_BY_RCU);
	CHECK(s);
	si = slabinfo_get(s);
	CHECK_EQ(si.offset, 16);
	CHECK(si.free_mark_offset >= 64);
	CHECK_EQ(uslub_cache_destroy(s), 0);

	/* slub_debug: red zones and owners, but never poison */
	s = kmem_cache_create("ts_debug", 64, NULL,
			      SLAB_TYPESAFE_BY_RCU | SLAB_POISON | SLAB_RED_ZONE | SLAB_STORE_USER);
	CHECK(s);
	si = slabinfo_get(s);
	CHECK(!strchr(si.debug, 'P'));
	CHECK(strchr(si.debug, 'Z'));
	p = kmem_cache_alloc(s, GFP_KERNEL);
	memset(p, 0x3c, 64);
	kmem_cache_free(s, p);
	for (int i = 0; i < 64; i++)
		CHECK_EQ(p[i], 0x3c);
	CHECK_EQ(uslub_cache_destroy(s), 0);
}

/* destroy: the slabs it discards go back after a grace period, which
 * destroy waits for (the page provider has the memory back after). */
static void destroy_waits(void)
{
	struct uslub_page_stats before, after;
	struct kmem_cache *s = kmem_cache_create("ts_destroy", 256, NULL, SLAB_TYPESAFE_BY_RCU);
	CHECK(s);
	static void *p[4096];
	uslub_page_stats(&before);
	for (int i = 0; i < 4096; i++)
		CHECK((p[i] = kmem_cache_alloc(s, GFP_KERNEL)));
	for (int i = 0; i < 4096; i++)
		kmem_cache_free(s, p[i]);
	capture_begin();
	int rc = uslub_cache_destroy(s);
	const char *out = capture_end();
	CHECK_EQ(rc, 0);
	CHECK_MSG(!*out, "destroy reported:\n%s", out);
	uslub_page_stats(&after);
	/* 1 MiB of objects came and went; a little (the internal caches'
	 * new slabs: sheaves, barns) may stay */
	CHECK_MSG(after.bytes_in_slabs <= before.bytes_in_slabs + 64 * 1024,
		  "slab memory %lu -> %lu after destroy", before.bytes_in_slabs,
		  after.bytes_in_slabs);
}

int main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	/* this program calls nothing of libuslub-rcu: register liburcu
	 * explicitly (an --as-needed link drops the library otherwise) */
	CHECK_EQ(uslub_rcu_init(), 0);
	if (getenv("TYPESAFE_CONTROL")) {
		stress(false);       /* expected to FAIL: the check works */
		return 0;
	}
	layout();
	destroy_waits();
	stress(true);
	printf("typesafe: ok\n");
	return 0;
}
