/*
 * percpu.h — sheaves per CPU: the rseq critical sections on a slot's
 * sheaf (base/rseq.h has the ABI and the rules of a section).
 *
 * The slots of id i (a concurrency id or a CPU number) lie in the area
 * tab[i]; a slot's word at @off holds a sheaf pointer (never NULL: an
 * empty stand-in when there is none, as in the per-thread slots). Every
 * section reads the id inside its range, so all sections on one id run
 * one after the other: a section preempted, migrated or interrupted by a
 * signal is restarted from its beginning and has published nothing.
 *
 *   pop       objects[size - 1] out; commit: size - 1
 *   push      objects[size] = x (a slot beyond size: private until the
 *             commit); commit: size + 1 (push_top also reads the word it
 *             writes over, and compares it with x after the commit)
 *   exchange  the slot's sheaf out, @put in its place; commit: the slot
 *             word. The sheaf taken is then the caller's alone: no
 *             section reaches it any more (one that read the old word
 *             before the commit ran on the same id, so before it)
 *   install   @put into the slot if it still holds @expect; commit: the
 *             slot word
 *   remote    from outside the id's sections (drains, shrink, destroy):
 *             a stop marker in the slot word, the rseq fence, then the
 *             sheaf is the taker's if the marker is still there; a remote
 *             install likewise puts the marker in the empty slot first
 *             and its sheaf only after the fence
 * Exchange and install never replace a sheaf of capacity 0 (the stand-in,
 * a stop marker) other than the one they expect.
 *
 * A slow path never works on a sheaf that is in a slot: it exchanges it
 * out (leaving the empty stand-in, so others on that id miss, and none
 * waits for a holder that was preempted), works on it, and installs it
 * back, or gives it to the barn when the slot was filled meanwhile.
 */
#ifndef USLUB_SLUB_PERCPU_H
#define USLUB_SLUB_PERCPU_H

#include "base/rseq.h"
#include "slub/slub.h"

/* pcpu_push_top()'s results */
enum { PCPU_PUSH_FULL, PCPU_PUSHED, PCPU_PUSHED_HOT };

#if USLUB_HAVE_RSEQ

/* struct slab_sheaf's fields, as the asm templates need them */
#define PCPU_SHEAF_SIZE_OFF 24
#define PCPU_SHEAF_CAP_OFF  28
#define PCPU_SHEAF_OBJS_OFF 40
static_assert(offsetof(struct slab_sheaf, size) == PCPU_SHEAF_SIZE_OFF, "sheaf size");
static_assert(offsetof(struct slab_sheaf, capacity) == PCPU_SHEAF_CAP_OFF, "sheaf capacity");
static_assert(offsetof(struct slab_sheaf, objects) == PCPU_SHEAF_OBJS_OFF, "sheaf objects");

/* The body's common start: %[tmp] = the id's area, %[sh] = the slot's
 * sheaf. */
#define PCPU_LOAD_SHEAF                                                      \
	"movl (%[idp]), %k[tmp]\n\t"                                         \
	"movq (%[tab], %q[tmp], 8), %[tmp]\n\t"                              \
	"movq (%[tmp], %[off]), %[sh]\n\t"

/* Exchange's and install's start: %[idv] = the id, %[tmp] = its area,
 * %[old] = the slot's word. */
#define PCPU_LOAD_SLOT                                                       \
	"movl (%[idp]), %k[idv]\n\t"                                         \
	"movq (%[tab], %[idv], 8), %[tmp]\n\t"                               \
	"movq (%[tmp], %[off]), %[old]\n\t"

/* The same start on the allocator's own table, _uslub_pcpu_tab, reached
 * RIP-relative inside the section: one input register fewer, which
 * spares the per-CPU leaves a callee-saved register. */
#define PCPU_LOAD_SHEAF_GLOBAL                                               \
	"movl (%[idp]), %k[tmp]\n\t"                                         \
	"leaq _uslub_pcpu_tab(%%rip), %[sh]\n\t"                             \
	"movq (%[sh], %q[tmp], 8), %[tmp]\n\t"                               \
	"movq (%[tmp], %[off]), %[sh]\n\t"

/* Pop the slot's sheaf; NULL when it is empty (the result is zeroed
 * first, so the empty exit is a jump past the commit and no more). Not
 * asm goto: gcc 12 merged a goto path's `return NULL` into the
 * fall-through's output register, which held anything. */
#define PCPU_POP_BODY(LOAD)                                                  \
	USLUB_RSEQ_CS_BEGIN("rseq_area", "%[tmp]")                           \
	LOAD                                                                 \
	"xorl %k[obj], %k[obj]\n\t"                                          \
	"movl " USLUB_STR(PCPU_SHEAF_SIZE_OFF) "(%[sh]), %k[tmp]\n\t"       \
	"testl %k[tmp], %k[tmp]\n\t"                                         \
	"jz 5f\n\t"                                                          \
	"subl $1, %k[tmp]\n\t"                                               \
	"movq " USLUB_STR(PCPU_SHEAF_OBJS_OFF) "(%[sh], %q[tmp], 8), %[obj]\n\t" \
	"movl %k[tmp], " USLUB_STR(PCPU_SHEAF_SIZE_OFF) "(%[sh])\n\t"       \
	"2:\n\t"                                                             \
	"5:\n\t"                                                             \
	USLUB_RSEQ_CS_ABORT

static __always_inline void *pcpu_sheaf_pop(char *rseq_area, const unsigned int *idp,
					    char *const *tab, unsigned long off)
{
	unsigned long tmp;
	char *sh;
	void *obj;
	__asm__ __volatile__(PCPU_POP_BODY(PCPU_LOAD_SHEAF)
		: [tmp] "=&r"(tmp), [sh] "=&r"(sh), [obj] "=&r"(obj)
		: [rseq_area] "r"(rseq_area), [idp] "r"(idp), [tab] "r"(tab), [off] "r"(off)
		: "memory", "cc");
	return obj;
}

/* pcpu_sheaf_pop() on _uslub_pcpu_tab (the allocator's). */
static __always_inline void *pcpu_pop(char *rseq_area, const unsigned int *idp,
				      unsigned long off)
{
	unsigned long tmp;
	char *sh;
	void *obj;
	__asm__ __volatile__(PCPU_POP_BODY(PCPU_LOAD_SHEAF_GLOBAL)
		: [tmp] "=&r"(tmp), [sh] "=&r"(sh), [obj] "=&r"(obj)
		: [rseq_area] "r"(rseq_area), [idp] "r"(idp), [off] "r"(off)
		: "memory", "cc");
	return obj;
}

/* Push @x onto the slot's sheaf; false when it is full. asm goto with
 * no output (its scratch registers are clobbers: rax, r11), and volatile
 * said again (without it gcc 12 dropped a goto statement whose outputs
 * were unused). LOAD leaves the sheaf in r11. */
#define PCPU_PUSH_LOAD_TAB                                                   \
	"movl (%[idp]), %%eax\n\t"                                           \
	"movq (%[tab], %%rax, 8), %%rax\n\t"                                 \
	"movq (%%rax, %[off]), %%r11\n\t"
#define PCPU_PUSH_LOAD_GLOBAL                                                \
	"movl (%[idp]), %%eax\n\t"                                           \
	"leaq _uslub_pcpu_tab(%%rip), %%r11\n\t"                             \
	"movq (%%r11, %%rax, 8), %%rax\n\t"                                  \
	"movq (%%rax, %[off]), %%r11\n\t"
#define PCPU_PUSH_BODY(LOAD) PCPU_PUSH_BODY_TOP(LOAD, "", "")
/* The push with @TOP before its store and @AFTER after its commit
 * (outside the section): pcpu_push_top()'s read and compare. */
#define PCPU_PUSH_BODY_TOP(LOAD, TOP, AFTER)                                 \
	USLUB_RSEQ_CS_BEGIN("rseq_area", "%%rax")                            \
	LOAD                                                                 \
	"movl " USLUB_STR(PCPU_SHEAF_SIZE_OFF) "(%%r11), %%eax\n\t"         \
	"cmpl " USLUB_STR(PCPU_SHEAF_CAP_OFF) "(%%r11), %%eax\n\t"          \
	"jae %l[full]\n\t"                                                   \
	TOP                                                                  \
	"movq %[x], " USLUB_STR(PCPU_SHEAF_OBJS_OFF) "(%%r11, %%rax, 8)\n\t" \
	"addl $1, %%eax\n\t"                                                 \
	"movl %%eax, " USLUB_STR(PCPU_SHEAF_SIZE_OFF) "(%%r11)\n\t"         \
	"2:\n\t"                                                             \
	AFTER                                                                \
	USLUB_RSEQ_CS_ABORT

static __always_inline bool pcpu_sheaf_push(char *rseq_area, const unsigned int *idp,
					    char *const *tab, unsigned long off, void *x)
{
	__asm__ __volatile__ goto(PCPU_PUSH_BODY(PCPU_PUSH_LOAD_TAB)
		:
		: [rseq_area] "r"(rseq_area), [idp] "r"(idp), [tab] "r"(tab), [off] "r"(off),
		  [x] "r"(x)
		: "rax", "r11", "memory", "cc"
		: full);
	return true;
full:
	return false;
}

/* pcpu_sheaf_push() on _uslub_pcpu_tab (the allocator's). */
static __always_inline bool pcpu_push(char *rseq_area, const unsigned int *idp,
				      unsigned long off, void *x)
{
	__asm__ __volatile__ goto(PCPU_PUSH_BODY(PCPU_PUSH_LOAD_GLOBAL)
		:
		: [rseq_area] "r"(rseq_area), [idp] "r"(idp), [off] "r"(off), [x] "r"(x)
		: "rax", "r11", "memory", "cc"
		: full);
	return true;
full:
	return false;
}

/* pcpu_push() that also says whether the push was hot: the word it
 * wrote @x over (objects[size], read inside the section) was @x itself,
 * the object the sheaf handed out last from that place (a hot pair, a
 * LIFO burst; cache.h free_record_note()). The compare is after the
 * commit, outside the section. Returns PCPU_PUSH_FULL (nothing done),
 * PCPU_PUSHED or PCPU_PUSHED_HOT. */
static __always_inline int pcpu_push_top(char *rseq_area, const unsigned int *idp,
					 unsigned long off, void *x)
{
	__asm__ __volatile__ goto(PCPU_PUSH_BODY_TOP(PCPU_PUSH_LOAD_GLOBAL,
		"movq " USLUB_STR(PCPU_SHEAF_OBJS_OFF) "(%%r11, %%rax, 8), %%rdx\n\t",
		"cmpq %[x], %%rdx\n\tje %l[hot]\n\t")
		:
		: [rseq_area] "r"(rseq_area), [idp] "r"(idp), [off] "r"(off), [x] "r"(x)
		: "rax", "rdx", "r11", "memory", "cc"
		: full, hot);
	return PCPU_PUSHED;
full:
	return PCPU_PUSH_FULL;
hot:
	return PCPU_PUSHED_HOT;
}

/* Take the slot's sheaf, leaving @put: returns what the slot held. A
 * sheaf of capacity 0 (the empty stand-in, or a remote taker's stop
 * marker) or NULL (a spare word of the sentinel area, which stands for
 * an id without an area) is never taken: it is returned and the slot
 * left as it was.
 * *@id: the id whose slot it was. */
static __always_inline void *pcpu_slot_exchange(char *rseq_area, const unsigned int *idp,
						char *const *tab, unsigned long off, void *put,
						unsigned int *id)
{
	unsigned long tmp, idv;
	void *old;
	__asm__ __volatile__(
		USLUB_RSEQ_CS_BEGIN("rseq_area", "%[tmp]")
		PCPU_LOAD_SLOT
		"testq %[old], %[old]\n\t"
		"jz 5f\n\t"
		"cmpl $0, " USLUB_STR(PCPU_SHEAF_CAP_OFF) "(%[old])\n\t"
		"je 5f\n\t"
		"movq %[put], (%[tmp], %[off])\n\t"
		"2:\n\t"
		"5:\n\t"
		USLUB_RSEQ_CS_ABORT
		: [tmp] "=&r"(tmp), [idv] "=&r"(idv), [old] "=&r"(old)
		: [rseq_area] "r"(rseq_area), [idp] "r"(idp), [tab] "r"(tab), [off] "r"(off),
		  [put] "r"(put)
		: "memory", "cc");
	*id = (unsigned int)idv;
	return old;
}

/* Put @put into the slot if it holds @expect: returns what the slot held
 * (== @expect: done). *@id: the id whose slot it was. */
static __always_inline void *pcpu_slot_install(char *rseq_area, const unsigned int *idp,
					       char *const *tab, unsigned long off, void *expect,
					       void *put, unsigned int *id)
{
	unsigned long tmp, idv;
	void *old;
	__asm__ __volatile__(
		USLUB_RSEQ_CS_BEGIN("rseq_area", "%[tmp]")
		PCPU_LOAD_SLOT
		"cmpq %[old], %[expect]\n\t"
		"jne 5f\n\t"
		"movq %[put], (%[tmp], %[off])\n\t"
		"2:\n\t"
		"5:\n\t"
		USLUB_RSEQ_CS_ABORT
		: [tmp] "=&r"(tmp), [idv] "=&r"(idv), [old] "=&r"(old)
		: [rseq_area] "r"(rseq_area), [idp] "r"(idp), [tab] "r"(tab), [off] "r"(off),
		  [expect] "r"(expect), [put] "r"(put)
		: "memory", "cc");
	*id = (unsigned int)idv;
	return old;
}

/*
 * From another id (a drain, a shrink, a destroy, an idle id): take the
 * sheaf in slot word @slot, leaving @standin. Remote takers are
 * serialized by the caller (one at a time per slot). The word is first
 * exchanged for @stop, a second sheaf of capacity 0 (sections then miss
 * on it, and exchange and install leave it alone); the fence then waits
 * out every section that read the old word. One of them may have been
 * an exchange on the slot's own id, which committed @standin over
 * @stop: the sheaf is then that thread's, and nothing is taken. Else
 * @stop goes back to @standin and the sheaf is the caller's alone.
 * Returns the sheaf taken, or @standin for none (also when the fence
 * failed: the sheaf is then put back, or left to the thread that took
 * it).
 */
static inline void *pcpu_slot_take_remote(void **slot, void *standin, void *stop)
{
	void *old = __atomic_exchange_n(slot, stop, __ATOMIC_ACQ_REL);
	bool fenced = _uslub_rseq_fence() == 0;
	void *expect = stop;
	bool ours = __atomic_compare_exchange_n(slot, &expect, fenced ? standin : old, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	if (!ours || !fenced || ((struct slab_sheaf *)old)->capacity == 0)
		return standin;
	return old;
}

/* From another id: @put into slot word @slot if it holds @expect (the
 * stand-in), with @stop as in the take. A plain CAS is not enough: an
 * install section of the slot's own id that read @expect before the CAS
 * commits its own sheaf over @put after it, and @put is lost
 * (unit_rseq's census, 4087 of 4096 objects, once in a loaded CI run).
 * So @expect is first swapped for @stop (sections leave it alone), the
 * fence waits out every section that read @expect, and only then @stop
 * becomes @put. true: done; false: the slot did not hold @expect, or the
 * fence failed (the slot is given back its @expect). Serialized with the
 * remote takes by the caller. */
static inline bool pcpu_slot_install_remote(void **slot, void *expect, void *put, void *stop)
{
	void *e = expect;
	if (!__atomic_compare_exchange_n(slot, &e, stop, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_RELAXED))
		return false;
	bool fenced = _uslub_rseq_fence() == 0;
	__atomic_store_n(slot, fenced ? put : expect, __ATOMIC_RELEASE);
	return fenced;
}

#endif /* USLUB_HAVE_RSEQ */
#endif
