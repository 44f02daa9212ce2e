/*
 * tsan_rcu.h — what ThreadSanitizer cannot see in the RCU tests: an RCU
 * grace period orders a reader's loads (inside rcu_read_lock()) before the
 * memory's free or reuse after it, but liburcu is not instrumented, so a
 * reader's load and a later free's store look concurrent. A reader's loads
 * of RCU-protected objects are left out of race detection between these
 * two (the pointer to them is loaded before, with acquire). Nothing
 * outside the TSan build.
 */
#ifndef USLUB_TEST_TSAN_RCU_H
#define USLUB_TEST_TSAN_RCU_H
#if defined(__SANITIZE_THREAD__)
void AnnotateIgnoreReadsBegin(const char *file, int line);
void AnnotateIgnoreReadsEnd(const char *file, int line);
#define tsan_ignore_reads_begin() AnnotateIgnoreReadsBegin(__FILE__, __LINE__)
#define tsan_ignore_reads_end() AnnotateIgnoreReadsEnd(__FILE__, __LINE__)
#else
#define tsan_ignore_reads_begin() do { } while (0)
#define tsan_ignore_reads_end() do { } while (0)
#endif
#endif
