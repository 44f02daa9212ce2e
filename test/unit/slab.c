/* Slab layer: state word packing, CAS with tag, exact reciprocal index. */
#include "slab/slab.h"
#include "unit.h"

int main(void)
{
	uint64_t c = fc_make(1234, 32767, 32767, true);
	CHECK_EQ(FC_FREELIST(c), 1234);
	CHECK_EQ(FC_INUSE(c), 32767);
	CHECK_EQ(FC_OBJECTS(c), 32767);
	CHECK(FC_FROZEN(c));
	CHECK_EQ(FC_TAG(c), 0);
	c = fc_make(SLAB_FL_NONE, 0, 1, false);
	CHECK_EQ(FC_FREELIST(c), SLAB_FL_NONE);
	CHECK(!FC_FROZEN(c));

	/* slab_update: bumps the tag, fails on a stale word and reports it */
	struct slab slab = { 0 };
	slab.counters = fc_make(5, 3, 8, false);
	uint64_t old = slab.counters;
	CHECK(slab_update(&slab, &old, fc_make(6, 2, 8, false)));
	CHECK_EQ(FC_TAG(slab.counters), 1);
	CHECK_EQ(FC_FREELIST(slab.counters), 6);
	uint64_t stale = fc_make(5, 3, 8, false);
	CHECK(!slab_update(&slab, &stale, fc_make(7, 1, 8, false)));
	CHECK_EQ(stale, slab.counters);
	/* the tag wraps without touching the other fields */
	slab.counters = fc_make(1, 1, 2, true) | (0xffffull << 48);
	old = slab.counters;
	CHECK(slab_update(&slab, &old, fc_make(1, 1, 2, true)));
	CHECK_EQ(FC_TAG(slab.counters), 0);
	CHECK_EQ(FC_OBJECTS(slab.counters), 2);

	/* reciprocal index: exact for every object start and its neighbours */
	unsigned long long seed = 42;
	for (size_t size = 8; size <= (1u << 21); size += (size < 4096 ? 8 : size / 7 + 8)) {
		uint64_t r = slab_reciprocal(size);
		for (uintptr_t idx = 0; idx * size < (1u << 21); idx += 1 + idx / 16) {
			uintptr_t off = idx * size;
			CHECK_EQ(slab_offset_to_index(off, r), idx);
			if (off)
				CHECK_EQ(slab_offset_to_index(off - 1, r), idx - 1);
			if (off + size - 1 < (1u << 21))
				CHECK_EQ(slab_offset_to_index(off + size - 1, r), idx);
		}
		for (int k = 0; k < 64; k++) {
			uintptr_t off = unit_rand(&seed) % (1u << 21);
			CHECK_EQ(slab_offset_to_index(off, r), off / size);
		}
	}
	printf("slab: ok\n");
	return 0;
}
