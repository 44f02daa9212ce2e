/*
 * pcpu.c — per-CPU mode (USLUB_PERCPU=cpu): the choice of the mode, the
 * id table and the ids' areas. The sections that use them are in
 * slub/percpu.h, the sheaf work (claim, release, drains) in sheaf/pcpu.c.
 *
 * An id's area has the shape of a thread's cpu area (a header page, then
 * one slot of CPU_SLOT_SIZE bytes per cache at cpu_offset), so a section
 * indexes it with the offset the inline paths already hold. Only two words
 * of a slot are used there, main and spare, each a sheaf or PCPU_NONE;
 * only the pages of used slots are touched. An area is made by the first
 * slow path that finds its id without one, and lives as long as the
 * process. Until then tab[id] is the sentinel cpu area, whose main words
 * are EMPTY_SHEAF and spare words NULL: sections miss on them, exchange
 * takes nothing and install fails (it expects PCPU_NONE), so nothing is
 * ever written there.
 */
#define _GNU_SOURCE
#include "slub/slub.h"
#include "slub/percpu.h"
#include <string.h>
#include <sys/mman.h>

const struct slab_sheaf _uslub_pcpu_sheaves[3] = {
	{ .node = -1 }, { .node = -1 }, { .node = -1 },
};

char *_uslub_pcpu_tab[PCPU_MAX_IDS];
bool _uslub_pcpu;
static const char *pcpu_why = "";   /* why not, where asked for */
static unsigned int nr_areas;          /* slab_mutex; atomic reads */

static_assert(offsetof(struct kmem_cache_cpu, main) == 0, "an id slot's main word");
static_assert(sizeof(struct pcpu_area) <= PAGE_SIZE, "the id area header fits its page");

/* Which mode, from USLUB_PERCPU (cpu, thread, auto) and what the
 * process offers; a request for cpu that cannot be met is said in one
 * line. */
void _uslub_pcpu_init(void)
{
	for (unsigned int i = 0; i < PCPU_MAX_IDS; i++)
		_uslub_pcpu_tab[i] = _uslub_cpu_empty;
	const char *want = _uslub_option_str(USLUB_OPT_PERCPU);
	bool cpu = false, asked = false;
	if (want && !strcmp(want, "cpu")) {
		cpu = asked = true;
	} else if (want && !strcmp(want, "auto")) {
		cpu = true;
	} else if (want && *want && strcmp(want, "thread")) {
		_uslub_report("uslub: USLUB_PERCPU=%s: not cpu, thread or auto; per-thread "
			      "sheaves\n", want);
	}
	if (!cpu)
		return;
	const struct uslub_rseq_info *ri = _uslub_rseq_info();
	if (ri->id == USLUB_RSEQ_NONE)
		pcpu_why = ri->why;
	else if (ri->nr_ids > PCPU_MAX_IDS)
		pcpu_why = "more possible CPUs than the id table holds (1024)";
	else if (_uslub_multi_node)
		pcpu_why = "more than one NUMA node (an id's sheaves are of one node)";
	else
		_uslub_pcpu = true;
	if (!_uslub_pcpu && asked)
		_uslub_report("uslub: USLUB_PERCPU=cpu: sheaves stay per thread: %s\n",
			      pcpu_why);
}

/* The words of cache slot @slot in @base: no sheaf. */
static void slot_words_init(char *base, int slot)
{
	struct kmem_cache_cpu *c = (struct kmem_cache_cpu *)(base + (size_t)slot * CPU_SLOT_SIZE);
	__atomic_store_n(&c->main, PCPU_NONE, __ATOMIC_RELAXED);
	__atomic_store_n(&c->spare, PCPU_NONE, __ATOMIC_RELAXED);
}

void _uslub_pcpu_slot_init(int slot)
{
	unsigned int n = __atomic_load_n(&nr_areas, __ATOMIC_RELAXED);
	for (unsigned int id = 0; n && id < PCPU_MAX_IDS; id++) {
		char *base = __atomic_load_n(&_uslub_pcpu_tab[id], __ATOMIC_ACQUIRE);
		if (base != _uslub_cpu_empty) {
			slot_words_init(base, slot);
			n--;
		}
	}
}

static void area_init_slot(char *base, void *arg)
{
	slot_words_init(base, *(int *)arg);
}

char *_uslub_pcpu_area(unsigned int id)
{
	if (id >= PCPU_MAX_IDS)
		return NULL;
	char *base = __atomic_load_n(&_uslub_pcpu_tab[id], __ATOMIC_ACQUIRE);
	if (base != _uslub_cpu_empty)
		return base;
	char *p = _uslub_page_map(PAGE_SIZE + CPU_AREA_SIZE);
	if (!p)
		return NULL;
	uslub_mutex_lock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	base = _uslub_pcpu_tab[id];
	if (base == _uslub_cpu_empty) {
		base = p + PAGE_SIZE;
		p = NULL;
		_uslub_for_each_used_slot(base, area_init_slot);
		__atomic_store_n(&_uslub_pcpu_tab[id], base, __ATOMIC_RELEASE);
		__atomic_store_n(&nr_areas, nr_areas + 1, __ATOMIC_RELAXED);
	}
	uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	if (p)
		munmap(p, PAGE_SIZE + CPU_AREA_SIZE);
	return base;
}

unsigned int _uslub_pcpu_nr_areas(void)
{
	return __atomic_load_n(&nr_areas, __ATOMIC_RELAXED);
}

struct pcpu_area *_uslub_pcpu_area_hdr(char *base)
{
	return (struct pcpu_area *)(base - PAGE_SIZE);
}
