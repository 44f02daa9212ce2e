/*
 * rseq.h — restartable sequences: the per-CPU layer's critical sections
 * (Linux >= 4.18; concurrency ids, mm_cid, >= 6.3).
 *
 * uslub never registers rseq: glibc (>= 2.35) registers one area per
 * thread before any code of the program runs, and only one registration
 * per thread is allowed. uslub finds glibc's area at __rseq_offset from
 * the thread pointer (weak references: a glibc without them, or
 * __rseq_size == 0 because of GLIBC_TUNABLES=glibc.pthread.rseq=0, a
 * seccomp filter or an old kernel, means no rseq) and only ever writes
 * its rseq_cs word, as the ABI allows any code of the process to; the
 * kernel and glibc own every other field.
 *
 * The id a critical section indexes by is the concurrency id (mm_cid,
 * dense: below min(threads, possible CPUs)) where the kernel writes it,
 * else the CPU number. glibc < 2.40 reports __rseq_size 20 (the original
 * ABI's used bytes) for an area it registered with 32; as librseq does,
 * the usable size is then min(32, AT_RSEQ_FEATURE_SIZE), and mm_cid is
 * usable when that covers it.
 *
 * A critical section (USLUB_RSEQ_CS below) is one asm block: it stores
 * its descriptor's address into rseq_cs (again on every restart: the
 * kernel clears it on an abort), reads the id inside the range, works on
 * memory that is private until the commit, and ends with one committing
 * store. Preemption, migration or a signal while the instruction pointer
 * is in [start, commit] sends the thread to the abort handler, which
 * restarts the section from the descriptor store. The handler is
 * preceded by the signature glibc registered (RSEQ_SIG, as the 7 bytes
 * of `ud1 RSEQ_SIG(%rip), %edi`). A section may leave early (before its
 * commit, by a jump out of the range): nothing was published.
 *
 * x86-64 only; elsewhere USLUB_HAVE_RSEQ is 0 and the per-thread slots
 * stay.
 */
#ifndef USLUB_BASE_RSEQ_H
#define USLUB_BASE_RSEQ_H

#include "base/base.h"

#if defined(__x86_64__) && defined(__linux__) && !defined(USLUB_TSAN)
#define USLUB_HAVE_RSEQ 1
#else
#define USLUB_HAVE_RSEQ 0
#endif

/* The kernel's struct rseq, as far as uslub reads it (offsets fixed by
 * the ABI). */
#define RSEQ_OFF_CPU_ID  4
#define RSEQ_OFF_CS      8
#define RSEQ_OFF_MM_CID 24
#define RSEQ_END_MM_CID 28          /* feature size that covers mm_cid */
#define USLUB_RSEQ_SIG  0x53053053  /* glibc's RSEQ_SIG on x86 */

/* Which id the sections index by (process-wide, fixed at init). */
enum uslub_rseq_id {
	USLUB_RSEQ_NONE = 0,     /* no rseq: see _uslub_rseq_why()          */
	USLUB_RSEQ_CPU_ID = 1,   /* the CPU number (no mm_cid)              */
	USLUB_RSEQ_MM_CID = 2,   /* the concurrency id                      */
};

struct uslub_rseq_info {
	enum uslub_rseq_id id;
	unsigned int id_offset;      /* RSEQ_OFF_MM_CID or RSEQ_OFF_CPU_ID     */
	unsigned int nr_ids;         /* ids are below this: possible CPUs      */
	unsigned int feature_size;   /* usable bytes of the area               */
	long offset;                 /* __rseq_offset                          */
	const char *why;             /* USLUB_RSEQ_NONE: the reason, one line  */
};

/* Detect, once (no allocation, no lock: safe from the first malloc). */
__internal const struct uslub_rseq_info *_uslub_rseq_info(void);

/* The calling thread's area; NULL when rseq is not available. */
static __always_inline char *uslub_rseq_area(const struct uslub_rseq_info *ri)
{
	return (char *)__builtin_thread_pointer() + ri->offset;
}

/* Is the calling thread registered (glibc registers every thread, but a
 * registration can fail for one: cpu_id -1 or -2 then)? */
__internal bool _uslub_rseq_thread_ok(void);

/*
 * The cross-id fence: after it returns, every section that was running
 * on any CPU of the process has finished or been aborted (restarting,
 * it reads memory afresh). membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ,
 * Linux >= 5.10), registered for the process on first use (again where
 * the kernel says it is not: a fork child's new mm). A word that a
 * section reads, changed by another thread with an atomic exchange and
 * then fenced, can no longer be used by a section that read it before.
 * 0, or -1 (errno) where the kernel has no such command or refuses it:
 * the per-CPU mode is then not offered.
 */
__internal int _uslub_rseq_fence(void);

/* The id the calling thread has now (outside a section: a hint only). */
static inline unsigned int uslub_rseq_id_now(const struct uslub_rseq_info *ri)
{
	return __atomic_load_n((const unsigned int *)(uslub_rseq_area(ri) + ri->id_offset),
			       __ATOMIC_RELAXED);
}

#if USLUB_HAVE_RSEQ
/*
 * The pieces of a section, for asm templates. In the template:
 *   USLUB_RSEQ_CS_BEGIN(area, tmp)
 *                              the descriptor (section __rseq_cs), its
 *                              address stored into rseq_cs; label 1 is
 *                              the start of the range
 *   ... the body: reads the id (at area + id_offset), ends with the commit
 *       store, then label 2 (the end of the range)
 *   USLUB_RSEQ_CS_ABORT        the signature and the abort handler
 *                              (section __rseq_failure): back to 0
 * Local labels 0..4 are taken; bodies use 5 and above. @area is an asm
 * operand holding the thread's rseq area; the descriptor's address goes
 * through @tmp, a scratch register ("%[tmp]" for an output operand,
 * "%%rax" for a clobbered register).
 */
#define USLUB_RSEQ_CS_BEGIN(area, tmp)                                       \
	".pushsection __rseq_cs, \"aw\"\n\t"                                 \
	".balign 32\n\t"                                                     \
	"3:\n\t"                                                             \
	".long 0, 0\n\t"                                                     \
	".quad 1f, (2f - 1f), 4f\n\t"                                        \
	".popsection\n\t"                                                    \
	".pushsection __rseq_cs_ptr_array, \"aw\"\n\t"                       \
	".quad 3b\n\t"                                                       \
	".popsection\n\t"                                                    \
	"0:\n\t"                                                             \
	"leaq 3b(%%rip), " tmp "\n\t"                                       \
	"movq " tmp ", " USLUB_STR(RSEQ_OFF_CS) "(%[" area "])\n\t"        \
	"1:\n\t"

#define USLUB_RSEQ_CS_ABORT                                                  \
	".pushsection __rseq_failure, \"ax\"\n\t"                            \
	".byte 0x0f, 0xb9, 0x3d\n\t"                                         \
	".long " USLUB_STR(USLUB_RSEQ_SIG) "\n\t"                          \
	"4:\n\t"                                                             \
	"jmp 0b\n\t"                                                         \
	".popsection\n\t"

#define USLUB_STR_1(x) #x
#define USLUB_STR(x) USLUB_STR_1(x)
#endif /* USLUB_HAVE_RSEQ */

#endif
