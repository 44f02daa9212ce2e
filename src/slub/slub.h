/*
 * slub/slub.h — SLUB proper (layer 3): struct kmem_cache, its per-node and
 * per-CPU state, the per-thread "cpu" areas, and the contract below.
 *
 * SLUB object caches in userspace: the per-CPU (per-thread) layer in its
 * two models, cpu and node partial lists, lockless remote frees, bulk
 * allocation and freeing with deferred freelist construction, freelist
 * randomization and hardening, per-object extension storage. The files:
 * new_slab.c, partial.c, cpu_slab.c, bulk.c, geometry.c, slab_common.c,
 * obj_ext.c, buckets.c, thread.c, debug.c + debug_paths.c (slub_debug),
 * validate.c, failslab.c; object.h (free pointers, the free mark, index
 * arithmetic). The kmem_cache API that composes them with the sheaves and
 * the extension hooks is the cache layer (src/cache/), above ext and
 * sheaf; the internal caches (buckets, the ext layer's group handles) are
 * used below it (see "Internal caches"). Nothing here calls up: the work
 * of a higher layer that SLUB must run is registered with it (the
 * lifecycle table's thread callbacks, the sheaf layer's slot flush).
 *
 * The per-CPU layer (Linux 7.0's, the default): every cache has per-CPU
 * sheaves (main, spare), a barn per node, and an inline pop/push in
 * cache/cache.h; sheaf/sheaf.c refills and flushes them. The 6.x model
 * (USLUB_CPU_SLABS=1, or a USLUB_CPU_SLAB cache; debug and boot caches)
 * keeps a cpu slab with its freelist and cpu partial slabs (cpu_slab.c).
 * The hooks the sheaf and extension layers implement are declared here.
 *
 * THE CONTRACT (keep it true; change it in the same commit as the code)
 * =====================================================================
 *
 * Lock order (outermost first; never take an earlier one while holding a
 * later one). Every lock has a rank (enum uslub_lock_rank, base/base.h)
 * and is taken through uslub_mutex_lock(); the lockdep builds check the
 * order at every acquire, fork included.
 *
 *   0. lifecycle_lock (base/lifecycle.c)  the lifecycle table: taken to
 *                                     register an entry, and held across
 *                                     fork() by the fork handlers
 *   0a. pub_lock (observe/publish.c)        the publisher's files and state;
 *                                     taken with no other uslub lock held,
 *                                     holds only system calls and
 *                                     _uslub_report()
 *   0b. flush_lock (slub/debug.c)        writing a thread's report lines;
 *                                     taken with no other uslub lock held
 *                                     (after symbolizing), holds only
 *                                     write(2)
 *   1. _uslub_thread_lock (slub/thread.c)the thread list and free cpu areas;
 *                                     serializes flushes of *other* threads'
 *                                     cpu state (thread exit, destroy, fork)
 *   2. _uslub_slab_mutex              slab_caches list, cache slot bitmap,
 *                                     kmem_cache creation and destruction,
 *                                     a cache's switch to on-demand hooks
 *   2a. groups_lock (ext/memcg.c)     the accounting group tree, every
 *                                     handle's group; taken per stock batch,
 *                                     never per object; nothing allocates
 *                                     or frees under it
 *   2b. tags_lock (ext/alloc_tag.c)   the allocation tag registry
 *   3. node_barn.lock (sheaf/sheaf.c) one per sheaf cache per node: the
 *                                     barn's full/empty sheaf lists. Never
 *                                     held while calling into slub/.    
 *   4. kmem_cache_node.list_lock      one per cache per node: the node's
 *                                     partial list, nr_partial, and every
 *                                     slab's slab_list links and its
 *                                     node-partial flag (PG_workingset);
 *                                     sampled profiling's tag stores and
 *                                     untags and the PG_slab_page flips of
 *                                     a live slab (cache/sample.c; the tag
 *                                     counters are updated after it).
 *                                     At most one list_lock is held at once
 *                                     (except by the fork handlers).
 *   5. page_node.lock (page/page.c)   buddy free lists of one node, the
 *                                     node's dirty-page count and the
 *                                     PG_clean marks of its free blocks
 *   6. reserve_lock (page/page.c)     the mmap reservation cursor
 *   7. huge_lock (kmalloc/kmalloc.c)  the table of huge kmalloc mappings;
 *                                     nothing is taken under it
 *   8. failslab_lock (slub/failslab.c)fault injection state; taken under
 *                                     slab_mutex (configuration) and by any
 *                                     allocation; nothing is taken or
 *                                     reported under it
 *   9. purge_lock (page/page.c)       the background purge thread's
 *                                     condition; taken under any lock
 *                                     (a free that leaves something to
 *                                     purge), nothing under it. The thread
 *                                     itself is created with no uslub
 *                                     lock held (pthread_create), and in
 *                                     auto mode stopped and joined by the
 *                                     program's last thread's exit (a key
 *                                     destructor), with no uslub lock
 *                                     held either.
 *   The page layer's purge callbacks (run by its purge pass: the
 *   thread, a slow path past the deadline, uslub_trim()) take slab_mutex,
 *   then one barn lock or one list_lock at a time, and free slabs to the
 *   page layer (page_node.lock) with neither held: barn_purge()
 *   (sheaf/sheaf.c) and partial_purge() (slub/partial.c), both through
 *   _uslub_swing_purge(), which does nothing when _uslub_locks_held != 0
 *   (a purge forced by an allocation that ran out of address space may
 *   hold a list_lock).
 *   (slub_debug reports made under list_lock and the page lock are
 *   buffered per thread and written by _uslub_debug_flush() with no uslub
 *   lock held: dladdr() takes the dynamic loader's lock.)
 *   A trylock (uslub_mutex_trylock) never waits, so it may be tried
 *   whatever is held -- the any-context calls below do, from a signal
 *   handler that may have interrupted this thread holding any of these
 *   locks; a lock taken under it keeps the order above.
 *
 * fork (base/lifecycle.h): one pthread_atfork() registration runs the
 * lifecycle table: lifecycle_lock, then each layer's entry in the order
 * above takes its locks (the barn locks, list_locks and page node locks
 * as batches nested in slab_mutex: uslub_mutex_lock_nest()); the parent
 * releases them in reverse; the child resets them in reverse
 * (uslub_mutex_reset*), thread_lock's entry then flushes the vanished
 * threads' cpu state (after the table's thread_fold and thread_lost
 * callbacks for each), and the publisher restarts with no lock held.
 * The lazy one-time initializations (bucket, group, kmalloc and malloc
 * caches) use _uslub_once, not pthread_once: a child bumps the fork
 * generation first and reruns a once whose runner it lost.
 *
 * What may be called with a uslub lock held (any lock above, pub_lock,
 * failslab_lock and flush_lock included): nothing that can enter the
 * libc allocator or the dynamic loader. malloc may be uslub (LD_PRELOAD),
 * so that is a self-deadlock or an out-of-order lock, and the loader's
 * lock is held by dlopen()/dlclose() while they allocate. Allowed: system
 * calls (mmap, mremap, munmap, madvise, mbind, getrandom, write,
 * nanosleep, sched_yield, getcpu), clock_gettime, sched_getcpu, sysconf
 * (_SC_NPROCESSORS_ONLN: sysfs read into a stack buffer), mem and str
 * functions, snprintf/vsnprintf with plain conversions (%s %c %d %u %lu
 * %zu %x %p, small widths; no %ls, no %f, no positional arguments: those
 * may malloc), _uslub_report*(), _uslub_debug_emit(), abort(). Not
 * allowed: malloc and friends; stdio on a FILE (fprintf, fputs, fwrite: a
 * FILE mallocs its buffer on first use, open_memstream reallocs), so the
 * uslub_*_print() reports build their text in a struct uslub_buf (mmap)
 * under the locks and write it to the FILE after; dladdr, dl_iterate_phdr, dlopen, dlsym,
 * dlerror; qsort, strdup, strerror (_uslub_errstr() instead: static,
 * untranslated), localtime, backtrace, syslog;
 * pthread_create, pthread_key_create, pthread_setspecific, pthread_atfork,
 * atexit; user callbacks (ctor, reclaim: _uslub_lockdep_assert_unlocked()
 * in the lockdep builds); and dynamic TLS: every thread-local variable is
 * initial-exec (__tls_ie, and -ftls-model=initial-exec for the library;
 * test/tls/tls_model.sh checks the built libraries), because
 * __tls_get_addr, after a dlclose() of a module with TLS, free()s that
 * module's blocks. _uslub_locks_held (base.h) counts the ranked locks the
 * thread holds: _uslub_debug_flush() symbolizes only when it is 0 (a
 * debug free nested under thread_lock or slab_mutex writes raw addresses).
 *
 * RCU (slub/rcu.c, sheaf/sheaf.c, kmalloc/rcu.c, cache/rcu.c; libuslub-rcu
 * is the provider): the grace-period provider (liburcu: call_rcu,
 * synchronize_rcu, rcu_barrier) is never called with a uslub lock held:
 * it allocates, creates its worker thread, and waits for callbacks that
 * take uslub locks. A head due to it while a lock is held (an rcu_free
 * sheaf taken by a flush under thread_lock, a TYPESAFE_BY_RCU slab
 * discarded there) goes on gp_deferred (lock-free) and is handed over by
 * the next _uslub_gp_drain() with _uslub_locks_held == 0
 * (kfree_rcu_nolock only ever pushes there, from any context:
 * _uslub_gp_defer_nolock()). The callbacks run in the provider's worker
 * thread, no lock held, and take uslub locks in rank order like any free
 * (barn, list_lock, page node lock; a worker gets a cpu area like any
 * thread); each drains gp_deferred when it ends. uslub_gp_barrier() (kvfree_rcu_barrier,
 * destroy) takes thread_lock and slab_mutex to reach every thread's
 * rcu_free sheaf, drops them, waits out other threads' drains in flight,
 * then waits in the provider. fork: the
 * provider's prepare handler runs before uslub's (registered after it), so
 * its workers are paused, between callbacks, before uslub takes its locks.
 *
 * Slab states (seed 002's final scheme; "flag" = slab_test_node_partial):
 *
 *   | state             | on node partial list (flag) | frozen |
 *   |-------------------|-----------------------------|--------|
 *   | node partial slab | yes                         | no     |
 *   | cpu partial slab  | no                          | no     |
 *   | cpu slab          | no                          | yes    |
 *   | full slab         | no                          | no     |
 *
 *   - A slab is frozen only when it becomes a cpu slab (freeze_slab(), or a
 *     new slab), and unfrozen only when it stops being one
 *     (deactivate_slab(), or get_freelist() finding it full).
 *   - Slabs move node partial -> cpu partial *unfrozen*, under list_lock,
 *     by clearing the flag (get_partial_node()); no CAS is needed.
 *   - Only the thread owning a cpu slab takes objects from its freelist;
 *     only the thread owning a cpu partial slab freezes it; only list_lock
 *     holders take node partial slabs. So a slab's freelist has exactly one
 *     taker at any time, and every other update is a push: the state word
 *     is ABA-safe even before its tag.
 *
 * Lockless paths and why they are safe:
 *
 *   - The per-CPU sheaf sections (slub/percpu.h; per-CPU mode,
 *     USLUB_PERCPU=cpu: the inline pop and push of a thread whose slot's
 *     main is PCPU_STANDIN, and the claim and release of sheaf/pcpu.c):
 *     each reads its id (mm_cid or cpu_id) inside an
 *     rseq critical section whose last instruction is its one committing
 *     store, so the sections on one id are serialized by the kernel (a
 *     section preempted, migrated or signalled restarts from its start,
 *     having published nothing). Stores before the commit go to memory
 *     no other section reads until the commit (objects[size] of a push).
 *     A sheaf exchanged out of a slot is the taker's alone: any section
 *     that read the old slot word ran on the same id before the commit.
 *     Exchange and install never replace a sheaf of capacity 0 other
 *     than the stand-in they expect. From another id, a take exchanges
 *     the word for a stop marker (capacity 0), fences (membarrier's rseq
 *     fence: every section that read the old word has then committed or
 *     aborted), and owns the sheaf only if the marker is still there (an
 *     exchange of the slot's own id that committed meanwhile took it).
 *     Remote takers (shrink, destroy, uslub_flush_thread, the idle drain)
 *     hold slab_mutex, which serializes them and is held across fork().
 *     A thread's own slot holds an id's sheaves only between a claim and
 *     a release, inside one slow path (pcpu_claimed = 1); any other
 *     time its main is PCPU_STANDIN and its spare NULL, so
 *       cached sheaves <= 2 * ids + 2 * (threads inside a slow path)
 *     per cache, besides the barns.
 *   - Fast alloc/free (cache/cache.h: slab_alloc_node(), slab_free()): plain
 *     loads and stores on the calling thread's own kmem_cache_cpu. Sheaf
 *     mode pops and pushes c->main (never NULL: the empty sheaf stands
 *     in); its free path looks the pointer up (virt_to_slab: ours, a slab,
 *     this cache) and checks object start, node and free mark before the
 *     push. Cpu-slab mode pops the cpu freelist; its free path accepts only
 *     an object start inside the thread's cpu slab of this cache (an
 *     address-range test on the cpu slot, which is also what proves the
 *     pointer is uslub's and of this cache). Every other free is looked up
 *     and checked in _uslub_free_checked() (cache/free.c). Before either,
 *     a sheaf-mode free tries the slot's free record (struct free_record
 *     below): a range test on thread-local data, valid while the cache's
 *     slab_epoch is the one recorded; the epoch is an atomic counter,
 *     bumped (seq_cst) before a slab's pages are freed, before a slab
 *     loses PG_slab_page and after fastpath_off changes, and read before
 *     the tests a record rests on. A legitimate free cannot race with its
 *     slab's discard (the object keeps the slab live); an invalid one
 *     racing a discard is the same window the lookup has. Per-thread mode needs no
 *     tid/cmpxchg: nothing else touches that slot while the thread lives
 *     (other threads touch it only after it exited, in a fork child where
 *     it no longer exists, or under destroy's quiescence rule). A push
 *     stores the object before the size that covers it (a fork child
 *     flushes objects[0, size) of the threads it lost).
 *   - Slab state: {freelist, inuse, objects, frozen} is one 64-bit word
 *     (slab/slab.h) updated only by CAS. Remote frees push onto it.
 *   - __slab_free() takes list_lock only when a list move may be needed:
 *     the slab was full and there is no cpu partial list to put it on
 *     (full -> node partial), or it becomes empty while unfrozen (maybe
 *     node partial -> discarded). It decides *before* its CAS, takes the
 *     lock, reads the flag, and the CAS then confirms the state it decided
 *     on. It never touches the list of a frozen slab, and if the flag says
 *     the slab is off the node list (a cpu partial slab) it leaves it to its
 *     owner.
 *   - deactivate_slab() unfreezes first, with one CAS, and takes list_lock
 *     only to add the slab to the node partial list; a racing __slab_free()
 *     sees an unfrozen slab without the flag and leaves its list alone.
 *   - A new slab is private to its creator until it is published (made
 *     the cpu slab, listed, or handed out full): deferred freelist
 *     construction (seed 000) writes its state word with a plain store and
 *     links only the objects not handed out.
 *   - Bulk takes (take_objects(), refill_objects) are the "one taker" of
 *     a node partial slab, under its list_lock. They walk the chain, then
 *     CAS {rest, inuse + k}; remote frees only prepend, so a failed CAS
 *     means walk again. A take that would empty the freelist unlinks the
 *     slab *before* its CAS (a racing __slab_free may then hand the full
 *     slab to a cpu partial list) and relinks it if the CAS found more.
 *   - Bulk free and sheaf flushes by slab runs (bulk.c flush_runs(),
 *     seed 001's detached freelists in one pass): the objects of one slab
 *     are linked privately (a run) and pushed with one __slab_free() CAS,
 *     or spliced onto the cpu freelist when it is the caller's cpu slab;
 *     a user's objects are checked (object start of the cache, free mark)
 *     before any free pointer is written. kfree_bulk and debug caches
 *     use build_detached_freelist().
 *   - Empty slabs kept (partial.c): an empty slab stays on its node's
 *     partial list while nr_partial < MAX(min_partial, n->keep); keep,
 *     discard_ns and raised_ns are hints (atomics, no lock), so a race
 *     keeps one slab more or less. The purge callback removes an empty
 *     slab from the partial list under list_lock and discards it after:
 *     inuse == 0 means no object of it is anyone's, so no free can race
 *     (an invalid one is the window every discard has).
 *   - Sheaves hold objects that count as "in use" in their slabs, like a
 *     cpu freelist does; a sheaf belongs to one cpu slot, one barn list,
 *     or one prefill user at a time. An rcu_free sheaf (c->rcu_free) holds
 *     objects given to kfree_rcu, still in use (no free mark) until its
 *     grace period; c->rcu_free is the one slot field another thread may
 *     take from a live owner (a barrier): the owner holds it as
 *     RCU_SHEAF_BUSY while appending, the taker CASes a real sheaf to NULL
 *     (sheaf/sheaf.c).
 *   - TYPESAFE_BY_RCU slabs: discard_slab() takes the slab off its node's
 *     counts at once; its pages keep PG_slab and slab_cache (readers'
 *     stale pointers stay in an object of the cache) until the grace
 *     period's callback gives them to the page provider. Such a slab is on
 *     no list and no counter in between.
 *   - Any-context calls (kmalloc_nolock, kfree_nolock: cache/nolock.c)
 *     may run in a signal handler that interrupted this thread anywhere,
 *     in an inline pop or push, holding list_lock. They touch no cpu slot
 *     (a slot on the stack takes their counters), take only trylocks
 *     (list_lock, and page_node.lock under it), and otherwise only the
 *     slab state's CAS and the free mark: to the rest of SLUB they are one
 *     more concurrent thread. A failed trylock means NULL, or a free
 *     deferred on a lock-free stack (through the object's free pointer
 *     word) that the next ordinary miss path, a thread exit, shrink or
 *     destroy drains. They never allocate, map, run a ctor, the hooks or
 *     slub_debug; the lockdep builds abort on a blocking lock inside them.
 *   - Extension hooks (caches with extensions: fastpath_off has
 *     FASTPATH_OFF_HOOKS, so both inline fast paths fall through): an
 *     object's extension is written only by whoever holds the object
 *     (allocator after taking it, freer before giving it back), and the
 *     accounting stock and tag counters belong to the calling thread, so
 *     alloc_hooked_cpu_slab()/free_hooked_cpu_slab() and the lean sheaf
 *     leaves (cache/internal.h alloc_pcs_lean()/free_pcs_lean()) need no
 *     atomics. Every free
 *     of a hooked cache runs the free hook: its cpu slots keep
 *     slab_bytes == 0. A cache switched to on-demand extensions (its first
 *     USLUB_GFP_ACCOUNT allocation) sets fastpath_off before any object is
 *     charged; an object charged later comes from the charging thread's
 *     own cpu slab, whose range it closes, or from a slab that was not a
 *     cpu slab when taken, whose later installs (a CAS ordered after the
 *     taking one) read the new fastpath_off. Sheaves could break that (a
 *     sheaf holds objects of any slab, other threads' cpu slabs included),
 *     so a sheaf cache's cpu slots never open a free range. On-demand
 *     arrays are installed in slab->obj_exts with a CAS (release) and read
 *     with acquire.
 *   - Extension layouts (Linux 7.3's smaller slabobj_ext; struct
 *     slabobj_ext below): a cache's words (ext_layout), stride and
 *     offsets are fixed at creation and every access goes through the
 *     slub/object.h accessors. A slab's obj_exts changes at most 0 ->
 *     array -> widened (OBJ_EXTS_WIDENED | struct obj_ext_wide), each by
 *     a CAS (the loser frees its own), and never back while the slab
 *     lives; widening moves no word (the extensions stay where they were,
 *     the missing field gets a word per object beside them), so a writer
 *     holding an older value still writes the right word. The lean
 *     leaves, which know the layout at compile time, take a widened
 *     slab's objects to the ladder ((long)obj_exts <= 0), and a hooked
 *     free record is never set from a widened value; the primary words a
 *     stale record points at stay valid. A charge (kmem_cache.charge) is
 *     fixed at creation, so it matches its uncharge whatever the slab
 *     becomes in between.
 *   - Sampled profiling (USLUB_PROFILING=sample, cache/sample.c): no hook,
 *     so the lockless paths above run unchanged, but a slab holding a live
 *     sampled object has PG_slab_page cleared on every page descriptor
 *     (PG_slab and the owner bits stay). Rule: every free fast path finds
 *     its object through PG_slab_page (free_object(), slab_free(), the
 *     bulk push's run lookup) or through a cpu slab's range, which
 *     set_cpu_slab() keeps closed for such a slab (and the sampling
 *     thread closes on its own cpu slab); so the free of a sampled object
 *     always reaches a slow path, and every slow path untags first
 *     (_uslub_sample_free(): free miss, kfree's cold path, bulk free,
 *     kfree_nolock's deferred free, kfree_rcu's per-object path). The
 *     bit is cleared when a slab gets its first live sampled object and
 *     set when its last one is untagged (a rescan of its extensions),
 *     both under the slab's node list_lock, which also serializes the
 *     head's PG_workingset; a slab with a live object is never being made
 *     or discarded, so new_slab() and discard_slab() need no lock for the
 *     fast word. A sampled object is tagged by its allocator before it is
 *     handed out, so every free of it sees the bit cleared. A free of an
 *     unsampled object of such a slab finds a NULL tag and changes
 *     nothing (no lock).
 *   - Caller tags (ext/caller_tag.c: the malloc family's allocation tags,
 *     one per return address, when profiling is on): a fixed table whose
 *     slot is claimed by a CAS of its key from 0 to the address (acquire
 *     on lookup); a slot is never freed, so a tag pointer stored in an
 *     extension or a sample stays valid for the process's life; its key
 *     changes once more at most, retired (bit 63, CAS) by a sweep that
 *     finds its module unloaded. The claim records the address's module
 *     with dl_iterate_phdr() (the loader's list lock; only with
 *     _uslub_locks_held == 0, else left to the report); the module table
 *     is written only inside those callbacks (the loader serializes them),
 *     published by a release store of its count; one sweep at a time (an
 *     exchange flag: a second caller skips, never waits), at a claim, a
 *     report or a thread's every 1024th lookup, never with
 *     _uslub_locks_held != 0. The tag is
 *     registered (an index) on its first count, under tags_lock, as a C++
 *     tag is. Its name is resolved by the first report that lists it (a
 *     per-slot state byte, CAS; a second reporter waits for it), with
 *     dladdr(): only in collect()'s callers, after every uslub lock is
 *     dropped.
 *
 * Freelist checks: c->freelist and every chain may hold a corrupted
 * pointer. The slow paths never follow or hand out a pointer from a chain
 * without checking that it is an object start of the expected slab. The
 * cpu-slab fast paths (and the bulk pops that mirror them) trust the cpu
 * freelist, as the kernel does without CONFIG_SLAB_FREELIST_HARDENED; a
 * hardened cache has FASTPATH_OFF_HARDENED set, so all of its pops are
 * checked. Sheaves hold plain pointers (no free pointer is read or written
 * on their inline paths), so the sheaf paths ignore that bit: hardening
 * costs a sheaf cache only on refill and flush. A bad
 * pointer is reported (FREELIST_CORRUPT) and the chain is cut there; the
 * objects behind it stay counted as in use, so they leak instead of being
 * handed out twice.
 *
 * Double frees (the free mark, slub/object.h): a user's free of an object of a
 * cache without slub_debug tests the object's mark word against its
 * slab's mark (slab_free_mark(): the cache's secret and the slab's
 * generation) and writes it *before* the object is published (pushed on a
 * cpu freelist or sheaf, or CASed onto its slab), so no other thread can
 * have taken it yet; every hand-out to a user clears it after the object
 * is taken. A new slab marks the objects it links into its freelist or
 * hands to a sheaf, and leaves those it hands to a user untouched. Other
 * internal moves (sheaf refill and flush, barn, thread exit, fork child,
 * failed bulk) neither test nor touch it. Invariant:
 *   object holds its slab's mark <=> it is free
 * (up to a program storing the mark, which it can only read out of freed
 * memory, and the 32-bit generation wrapping). A match is refused,
 * reported (naming this thread's cpu freelist or sheaf when the first
 * free is there) and the object left alone, so it is never handed out
 * twice wherever the first free put it.
 *
 * The inline paths' slot (fast_offset): the inline pop, push and record
 * test reach a cache's slot through fast_offset, which is cpu_offset while
 * fastpath_off <= FASTPATH_OFF_HARDENED and CACHE_SLOT_DEAD's offset
 * otherwise, so "inline paths off" costs them no test: the dead slot's
 * main is the empty sheaf (size 0: the pop misses; capacity 0: the push
 * misses), its record and cpu slab range are empty. The two are one
 * 64-bit word (fast_word), changed together by one CAS
 * (fastpath_off_update()), so concurrent changers under different locks
 * (failslab's, slab_mutex) never leave them disagreeing. Every slow path
 * uses this_cpu() (cpu_offset), never the fast slot. Invariant:
 *   fast_offset == (fastpath_off > HARDENED ? DEAD * CPU_SLOT_SIZE
 *                                           : cpu_offset)
 *
 * Destroyed caches: the struct stays in a quarantine of 64 with
 * FASTPATH_OFF_DEAD and cpu_offset (and so fast_offset) pointing at
 * CACHE_SLOT_DEAD, a slot no cache owns and nothing writes, so every fast
 * path misses into a slow path that reports the use; its nodes are freed.
 *
 * Debug caches (slub_debug; FASTPATH_OFF_SLUB_DEBUG): none of the lockless
 * paths above. They have no cpu slab, no cpu partial slabs and no sheaves;
 * every allocation and free (single, bulk, prefill, sheaf return) goes
 * through debug_slab_alloc()/debug_slab_free(), which take list_lock of
 * the slab's node and do the checks, the state change and the object's
 * state bytes (red zones, poison, owner) under it. So a validate holding
 * list_lock, and a fork child, always see each object wholly free or
 * wholly allocated. Their slabs: partial (free objects, on the node
 * partial list), full (on no list), isolated (PG_isolated, on n->isolated
 * after a detected corruption: never allocated from, never discarded
 * while the cache lives, skipped by validate).
 *
 * Thread exit flushes the thread's cpu slabs and cpu partial slabs of every
 * cache, as SLUB does for a CPU going offline (slub/thread.c). fork(): every lock is
 * taken in the order above before fork and reset in the child, which then
 * flushes the cpu state of the threads it did not inherit (see "fork"
 * under the lock order). For that to be
 * safe, a slab leaves a cpu slot (c->slab, c->partial) *before* any CAS or
 * list operation that can hand it to someone else, never after: a thread
 * caught by fork mid-way leaks a slab in the child, never shares one.
 */
#ifndef USLUB_SLUB_SLUB_H
#define USLUB_SLUB_SLUB_H

#include "slab/slab.h"
#include "base/lifecycle.h"
#include "uslub/types.h"
#include <errno.h>
#include <pthread.h>
#include <sched.h>

#define USLUB_MAX_CACHES   2048
#define CPU_SLOT_SIZE      576     /* one kmem_cache_cpu per cache per thread */
#define CPU_AREA_SIZE      ((size_t)USLUB_MAX_CACHES * CPU_SLOT_SIZE)
#define CACHE_NAME_MAX     64

struct slab_sheaf;
struct node_barn;                    /* sheaf/sheaf.h */
struct obj_cgroup;                   /* ext/ext.h     */

/*
 * Per-object extension (the kernel's struct slabobj_ext, seed 003; Linux
 * 7.3's smaller one): the accounting group handle an object is charged to
 * (objcg) and the allocation tag of its call site (ref), each a word, and
 * a cache's extension holds only the words it can need, chosen once at
 * creation (kmem_cache.ext_layout, _uslub_calculate_obj_ext()):
 *   OBJ_EXT_OBJCG            a USLUB_ACCOUNT cache with profiling off or
 *                            sampled; the on-demand arrays of a plain
 *                            cache with profiling off             8 bytes
 *   OBJ_EXT_TAG              a plain cache with exact profiling   8 bytes
 *   OBJ_EXT_OBJCG|OBJ_EXT_TAG an accounted cache with exact profiling; the
 *                            on-demand arrays of a plain cache with
 *                            sampled profiling                   16 bytes
 *   none                     a plain cache with profiling off or sampled
 *                            (until a USLUB_GFP_ACCOUNT allocation or a
 *                            sample gives a slab an on-demand array)
 * objcg is the first word when present, ref the word after it (or the
 * only one): struct slabobj_ext is the two-word extension, whose field
 * offsets the one-word ones share (static_asserts below). Both fields are
 * NULL while the object is free. Extension i of a slab is at
 * slab->obj_exts + i * cache->ext_stride:
 *   leftover  obj_exts = slab_address + ALIGN_UP(objects * size, 8),
 *             stride ext_size (an array in the slab's unused tail)
 *   padding   obj_exts = slab_address + ext_offset, stride size (inside
 *             each object's alignment padding, after its used bytes)
 *   array     obj_exts = a separate zeroed array, stride ext_size
 * A slab whose cache's layout lacks a word a later event needs (a
 * USLUB_GFP_ACCOUNT charge in a tag-only cache, a sample in an objcg-only
 * one) is *widened*: obj_exts becomes OBJ_EXTS_WIDENED | the address of a
 * struct obj_ext_wide (slub/object.h), which keeps the slab's extensions
 * where they were and adds one word per object for the missing field.
 * Every reader and writer goes through the accessors of slub/object.h
 * (slab_obj_ext(), obj_ext_of(), obj_ext_at() with the lean paths'
 * compile-time layout), which know the stride and the offsets.
 */
struct slabobj_ext {
	struct obj_cgroup *objcg;
	struct uslub_alloc_tag *ref;
};
static_assert(sizeof(struct slabobj_ext) == 16, "slabobj_ext is two words");
static_assert(offsetof(struct slabobj_ext, objcg) == 0 &&
	      offsetof(struct slabobj_ext, ref) == sizeof(void *),
	      "objcg first, ref after it: an objcg-only extension is the first word");

/* kmem_cache.ext_layout: the words of a cache's extension */
#define OBJ_EXT_OBJCG 1u             /* the accounting handle (objcg)        */
#define OBJ_EXT_TAG   2u             /* the allocation tag (ref)             */
#define OBJ_EXT_BOTH  (OBJ_EXT_OBJCG | OBJ_EXT_TAG)
/* The bytes of an extension of @layout, and where its tag is. */
#define OBJ_EXT_SIZE(layout) \
	((((layout) & OBJ_EXT_OBJCG) ? sizeof(void *) : 0) + \
	 (((layout) & OBJ_EXT_TAG) ? sizeof(void *) : 0))
#define OBJ_EXT_TAG_OFF(layout) (((layout) & OBJ_EXT_OBJCG) ? sizeof(void *) : 0)
static_assert(OBJ_EXT_SIZE(OBJ_EXT_BOTH) == sizeof(struct slabobj_ext) &&
	      OBJ_EXT_TAG_OFF(OBJ_EXT_BOTH) == offsetof(struct slabobj_ext, ref) &&
	      OBJ_EXT_SIZE(OBJ_EXT_OBJCG) == sizeof(void *) &&
	      OBJ_EXT_SIZE(OBJ_EXT_TAG) == sizeof(void *) && OBJ_EXT_TAG_OFF(OBJ_EXT_TAG) == 0,
	      "the one-word layouts are the two-word one's words");
/* slab->obj_exts of a widened slab (see above): a user address never has
 * bit 63 set, so (long)obj_exts <= 0 tests "none or widened" at once */
#define OBJ_EXTS_WIDENED (1ul << 63)

/*
 * The per-thread byte stock (the kernel's obj_stock_pcp): bytes charged to
 * cached's group in a batch and not yet used by objects. Owner only.
 *   cached == NULL => nr_bytes == 0; cached != NULL holds one reference;
 *   for a thread with a cpu area, outside groups_lock, cached is its
 *   current group's handle (ext/memcg.c stock_follow_locked()).
 */
struct obj_stock {
	struct obj_cgroup *cached;
	long nr_bytes;
};

/* Per-thread counts of one allocation tag (its index in the registry):
 * allocation and free sides apart, so a hot alloc+free pair does not run
 * one load-add-store chain through the same word twice. Live bytes and
 * objects of the tag on this thread's books:
 *   bytes = alloc_bytes - free_bytes,  calls = alloc_calls - free_calls */
struct tag_counter {
	int64_t alloc_bytes;
	int64_t alloc_calls;
	int64_t free_bytes;
	int64_t free_calls;
};

/*
 * Per-CPU (per-thread by default) state of one cache. Only its owner
 * thread reads or writes it, except when the owner is known to be gone
 * or quiescent (fork child, destroy; see the contract).
 *
 * Sheaf mode (Linux 7.0, every cache by default): main and spare.
 *   main != NULL always: a real sheaf, or the static empty sheaf
 *   (_uslub_empty_sheaf: size 0, capacity 0) standing in before the first
 *   refill and after a flush, so the inline paths test only main->size;
 *   spare == NULL or a real sheaf (any fill); main != spare.
 *   freelist == NULL, slab == NULL, slab_bytes == 0.
 *
 * Cpu-slab mode (the 6.x model: USLUB_CPU_SLABS=1, USLUB_CPU_SLAB caches,
 * debug caches, the boot caches): main == the empty sheaf unless the
 * cache asked for sheaves, and (owner's view):
 *   slab == NULL  <=> slab_bytes == 0, and then freelist == NULL
 *   slab != NULL  => FC_FROZEN(slab->counters), slab_addr == slab_address(slab),
 *                    slab_span == objects * size of the slab, slab_bytes ==
 *                    (fast paths on ? slab_span : 0), free_mark ==
 *                    slab_free_mark(s, slab), and every
 *                    object on freelist belongs to slab
 *   partial: unfrozen slabs off every node list, linked by slab->next;
 *            |partial| == partial_slabs <= s->cpu_partial_slabs
 *   loaded = objects the slow paths put on freelist - objects flushed
 *            back; so at every instant
 *            ALLOC_FASTPATH == loaded + stat[FREE_FASTPATH] - |freelist|
 *            (the cpu-slab alloc path stores no counter; stat[ALLOC_FASTPATH]
 *            holds that value as of the last time freelist was empty).
 * stat[i] has one writer (the owner); readers load it relaxed.
 *
 * Everything the inline paths of both modes touch is in the slot's first
 * cache line: main, the cpu-slab fields, and the counters ALLOC_PCS,
 * FREE_PCS and FREE_FASTPATH (stat[0..2]). The cpu-slab free path needs
 * no descriptor: "x - slab_addr < slab_bytes" proves x is inside this
 * cache's cpu slab.
 */
/*
 * The free record (sheaf caches, both modes): the slab this slot last
 * freed an object into through the checked inline path, so that the next
 * free into the same slab proves ownership, cache, bounds and the slab's
 * free mark from thread-local data: one subtraction and compare for the
 * range, one multiply for the object start, and the slab's epoch, with no
 * load that depends on the freed pointer but the free mark's.
 *   bytes != 0  => [addr, addr + bytes) are the objects of a slab S of
 *                  cache, mark == slab_free_mark(cache, S), and S was a
 *                  live slab with PG_slab_page, of cache, on this slot's
 *                  main sheaf's node, while cache->slab_epoch == epoch
 *                  and the inline paths were on (fastpath_off <= HARDENED).
 * So epoch == cache->slab_epoch  => all of that still holds: every event
 * that could end it (S discarded, S losing PG_slab_page to a sampled
 * object, fastpath_off changing) changes slab_epoch first (slab_epoch_bump()),
 * and a slab_epoch never returns to a value (64 bits, each cache's start
 * unique). Set by _uslub_free_record_set() (cache/free.c: on a lookup
 * push's second hot push into S with no other slab's hot push between, in
 * both modes (per-CPU mode's section reads the word it writes over), and
 * after a refill), which
 * reads the epoch first and tests what the record states after it; read
 * only by the owner; a slot given to a new cache starts with bytes 0. A
 * cache whose inline paths are off reaches the dead slot through
 * fast_offset, whose record is always empty.
 */
struct free_record {
	char *addr;
	unsigned long bytes;
	uintptr_t mark;
	uint64_t epoch;              /* | FREE_RECORD_HOOKED: a hooked one    */
	struct kmem_cache *cache;    /* the slot's cache (free_object()'s hit
	                                through the thread's last_slot)        */
	unsigned long exts;          /* the slab's obj_exts (hooked records)  */
	struct slab *pending;        /* the slab of the last noted push (a
	                                hot one, cache.h free_record_note());
	                                the next noted push into it sets the
	                                record (only compared)                */
};
/* A hooked record (a cache on its lean hooked sheaf paths, cache/
 * internal.h: inline paths off for hooks only, pcs_hooks chosen,
 * extensions present) holds its epoch with this bit set, which no
 * slab_epoch ever has (they start below 2^63 and count up by one): the
 * plain record tests (free_to_pcs_record(), free_object_record()) never
 * match one, and the lean leaves match nothing else. Same invariant as
 * above with "the inline paths were on" read as "fastpath_off held only
 * PCS_LEAN_OFF_OK bits and pcs_hooks was set", and exts == S->obj_exts,
 * which a live slab never changes once set. */
#define FREE_RECORD_HOOKED (1ull << 63)


struct kmem_cache_cpu {
	struct slab_sheaf *main;     /* never NULL (see above)                */
	void *freelist;
	char *slab_addr;
	unsigned long slab_bytes;
	uintptr_t free_mark;         /* slab_free_mark() of slab (0: none)     */
	uint64_t stat[USLUB_NR_STATS];
	struct slab *slab;
	unsigned long slab_span;     /* objects * size of slab (0: none), whatever
	                                the fast paths say: the hooked paths'
	                                range check                            */
	struct slab *partial;
	unsigned long partial_slabs;
	unsigned long loaded;
	struct slab_sheaf *spare;    /* NULL or a second sheaf (any fill)  */
	struct slab_sheaf *rcu_free; /* kfree_rcu's sheaf (sheaf caches): NULL,
	                                a real sheaf being filled, or
	                                RCU_SHEAF_BUSY while its owner appends
	                                (sheaf/sheaf.c); atomics only         */
	/* Sampled profiling (cache/sample.c). stat[ALLOC_PCS] is also the
	 * countdown of the inline sheaf pop: it counts up, and the pop takes
	 * the miss path when it turns negative. Armed, it is set to
	 * INT64_MAX - k (k more pops unsampled); so
	 *   ALLOC_PCS == stat[ALLOC_PCS] + pcs_adjust   (mod 2^64)
	 * where pcs_adjust also counts the pops of the slow paths
	 * (stat_pcs_slow()), which do not tick the countdown. sample_left is
	 * the countdown of every other allocation (the inline cpu-freelist
	 * pop, each miss path call, bulk), the same way (no counter in it).
	 * Never armed (profiling off or exact), both only count up from 0:
	 * they turn negative after 2^63 allocations. sample_seq is odd while
	 * the owner rearms (stat[ALLOC_PCS] and pcs_adjust change together);
	 * other readers retry then (cpu_alloc_pcs()). */
	int64_t pcs_adjust;
	int64_t sample_left;
	unsigned long sample_seq;
	unsigned long sample_armed;  /* 1: both countdowns drawn            */
	unsigned long pcpu_claimed;  /* per-CPU mode: 1 while a slow path
	                                holds the id's sheaves in this slot
	                                (sheaf/pcpu.c); owner only          */
	/* the slab last freed into (see above): its own line */
	struct free_record rec __attribute__((aligned(USLUB_CACHELINE)));
};
static_assert(sizeof(struct kmem_cache_cpu) <= CPU_SLOT_SIZE, "cpu slot size");
static_assert(offsetof(struct kmem_cache_cpu, stat) + 3 * 8 <= USLUB_CACHELINE,
	      "fast-path fields and fast-path counters share one cache line");
static_assert(USLUB_ALLOC_PCS == 0 && USLUB_FREE_PCS == 1 && USLUB_FREE_FASTPATH == 2,
	      "the inline paths' counters are in the first line");

/*
 * A sheaf (Linux 6.18): an array of free objects of one cache, owned by one
 * cpu slot (main/spare), a barn list, or a prefill user.
 *   0 <= size <= capacity; objects[0..size) are free objects of cache,
 *   each counted in its slab's inuse (a sheaf holds them like a cpu
 *   freelist does). capacity == cache->sheaf_capacity unless oversize.
 */
struct slab_sheaf {
	union {
		struct list_head barn_list;  /* on a barn's full/empty list (barn lock) */
		struct uslub_rcu_head rcu_head; /* an rcu_free sheaf waiting for its
		                                grace period (on no barn list)     */
	};
	struct kmem_cache *cache;
	unsigned int size;
	unsigned int capacity;
	int node;                    /* node its objects came from (barn)       */
	unsigned int oversize;       /* prefill above capacity: freed on return */
	void *objects[];
};
#define SHEAF_HEADER_SIZE offsetof(struct slab_sheaf, objects)

/* Install @spare as main and @main as spare of a cpu slot (owner only;
 * @spare may be a sheaf not yet in the slot). No instant has one sheaf in
 * both slots, so a fork child flushing the slot never flushes one twice. */
static inline void cpu_sheaves_swap(struct kmem_cache_cpu *c, struct slab_sheaf *main,
				    struct slab_sheaf *spare)
{
	WRITE_ONCE(c->spare, NULL);
	barrier();
	WRITE_ONCE(c->main, spare);
	barrier();
	WRITE_ONCE(c->spare, main);
}
static_assert(SHEAF_HEADER_SIZE == 40, "sheaf header layout");

/* The stand-in for a missing main sheaf: size 0 and capacity 0, so the
 * inline alloc and free paths miss on it without a NULL test. Never
 * written (read-only). */
__internal extern const struct slab_sheaf _uslub_empty_sheaf;
#define EMPTY_SHEAF ((struct slab_sheaf *)&_uslub_empty_sheaf)

/*
 * Per-CPU mode (USLUB_PERCPU=cpu: slub/pcpu.c, sheaf/pcpu.c, the
 * sections of slub/percpu.h): a cache's sheaves are in the area of the
 * thread's rseq id (tab[id] + cpu_offset, the words main and spare), not
 * in its own slot. Three more stand-ins of size 0 and capacity 0, never
 * written:
 *   PCPU_STANDIN  main of a thread's slot whose sheaves are its id's: the
 *                 inline paths miss on it and then take the id's sections
 *   PCPU_NONE     an id's word that holds no sheaf
 *   PCPU_STOP     a remote taker's marker in an id's word (percpu.h)
 */
__internal extern const struct slab_sheaf _uslub_pcpu_sheaves[3];
#define PCPU_STANDIN ((struct slab_sheaf *)&_uslub_pcpu_sheaves[0])
#define PCPU_NONE    ((struct slab_sheaf *)&_uslub_pcpu_sheaves[1])
#define PCPU_STOP    ((struct slab_sheaf *)&_uslub_pcpu_sheaves[2])

/* Is @sheaf (a cpu slot's main or spare) a real sheaf? Every stand-in has
 * capacity 0, and no real sheaf has. */
static __always_inline bool sheaf_real(const struct slab_sheaf *sheaf)
{
	return sheaf && sheaf->capacity;
}

/*
 * Per-node state. list_lock protects partial, nr_partial, and every
 * slab's slab_list and PG_workingset flag. nr_slabs/total_objects are
 * atomics (changed on slab alloc/free, outside list_lock).
 *   nr_partial == |partial|, slab on partial <=> slab_test_node_partial(slab)
 */
struct kmem_cache_node {
	pthread_mutex_t list_lock;
	unsigned long nr_partial;
	struct list_head partial;
	unsigned long nr_slabs;
	unsigned long total_objects;
	unsigned long total_pages;
	unsigned long lock_taken;    /* list_lock acquisitions (under list_lock) */
	struct list_head isolated;   /* debug caches: slabs isolated after a
	                                detected corruption (list_lock); each has
	                                PG_isolated, is never on partial, and is
	                                never discarded while the cache lives   */
	unsigned long nr_isolated;   /* == |isolated|                            */
	/* empty slabs kept for the next swing (partial.c): an empty slab
	 * stays on the partial list while nr_partial < node_keep(), where
	 *   node_keep() == MAX(min_partial, keep), keep <= keep_cap()       */
	unsigned long keep;          /* raised by swings, lowered by the purge
	                                pass (atomic)                          */
	uint64_t discard_ns;         /* coarse time of the last empty slab
	                                discarded (0: none; atomic)            */
	uint64_t raised_ns;          /* of the last raise of keep (atomic)     */
} __attribute__((aligned(USLUB_CACHELINE)));

struct kmem_cache {
	/* read-only after creation; the fast paths read the first line */
	unsigned int cpu_offset;     /* byte offset of this cache's slot in a cpu area */
	unsigned int offset;         /* free pointer offset within an object           */
	unsigned int size;           /* stride: object + free pointer (if outside) + padding */
	unsigned int object_size;    /* what the user asked for                        */
	uint64_t reciprocal_size;    /* slab_reciprocal(size), for obj_to_index        */
	uint64_t div_magic;          /* slab_div_magic(size): "off is a multiple of
	                                size" in one multiply (slab_offset_is_start) */
	union {
		struct {
			unsigned int fastpath_off; /* != 0: every alloc/free takes the
			                              checked slow path (FASTPATH_OFF_*) */
			unsigned int fast_offset;  /* the inline paths' slot offset:
			                              cpu_offset, or the dead slot's while
			                              fastpath_off > HARDENED (one word
			                              with it: fastpath_off_update())    */
		};
		uint64_t fast_word;
	};
	unsigned int free_mark_offset; /* where a free object holds free_mark (a word
	                                never overlapping the free pointer; outside
	                                the object for ctor caches and 8-byte objects) */
	uintptr_t free_mark;         /* per-cache secret written into every object a
	                                user frees and cleared when one is handed
	                                out: the double-free check (see free_mark_*) */
	unsigned int inuse;          /* object + free pointer (if outside): the bytes
	                                of a stride in use before alignment padding   */
	unsigned int red_left_pad;   /* bytes before object 0 of a slab (a left red
	                                zone; 0 without red zones): objects start at
	                                slab_address + red_left_pad                 */
	/* -- end of the fast paths' first line -- */
	uintptr_t fp_secret;         /* freelist hardening: stored = fp ^ secret ^ swab(&slot) */
	unsigned int objects;        /* objects per slab at the preferred order        */
	unsigned int order;          /* preferred slab order                           */
	unsigned int min_objects_fallback; /* objects per slab at the fallback order   */
	unsigned int min_order;      /* fallback order (one object fits)               */
	unsigned int align;
	unsigned int flags;
	unsigned int min_partial;    /* empty slabs kept on a node partial list        */
	unsigned int cpu_partial;    /* objects kept on cpu partial lists (target)     */
	unsigned int cpu_partial_slabs; /* ... as slabs; 0 = no cpu partial            */
	void (*ctor)(void *);
	int index;                   /* slot number; cpu_offset = index * CPU_SLOT_SIZE */
	unsigned int sheaf_capacity; /* 0: no sheaves                                  */
	uint16_t *random_seq;        /* RANDOM_FREELIST: a permutation of [0, objects)  */
	unsigned int useroffset, usersize;
	/* per-object extensions (seed 003; struct slabobj_ext above) */
	unsigned int ext_layout;     /* OBJ_EXT_*: the words of one extension (of
	                                the on-demand arrays where the placement
	                                is none); 0: never any                */
	unsigned int ext_size;       /* OBJ_EXT_SIZE(ext_layout): 0, 8 or 16    */
	unsigned int ext_tag_off;    /* OBJ_EXT_TAG_OFF(ext_layout)             */
	unsigned int ext_stride;     /* ext_size (leftover, array) or size (padding) */
	unsigned int ext_offset;     /* padding: the extension's offset in objects */
	int ext_placement;           /* USLUB_OBJ_EXT_*                            */
	unsigned int ext_bytes;      /* extension bytes outside the slab per object */
	int ext_shift;               /* >= 0: extension of the object at offset off
	                                (from the slab's first object) is at
	                                obj_exts + (off >> ext_shift): padding (0,
	                                stride == size), or a power-of-two size
	                                with stride 16; -1: index * stride        */
	unsigned int charge;         /* bytes one object charges: size + ext_bytes,
	                                + a word where the layout has no objcg
	                                (the widened slab's objcg array)   */
	unsigned int hooks;          /* HOOK_*: allocs and frees run the extension
	                                hooks (written once, under slab_mutex)     */
	unsigned int pcs_hooks;      /* PCS_HOOKS_*: which lean hooked sheaf path
	                                the miss paths take (cache/alloc.c, free.c),
	                                chosen when hooks change (_uslub_set_pcs_hooks) */
	unsigned int debug;          /* USLUB_DBG_* letters (USLUB_DEBUG and the
	                                cache flags); A may change at run time
	                                (atomic)                                   */
	/* uslub_cache_set_fail_hook() (failslab.c): asked by failslab() while
	 * FASTPATH_OFF_DEBUG is set; written under slab_mutex, arg first */
	uslub_fail_hook_fn fail_hook;
	void *fail_hook_arg;
	/* slub_debug layout (debug.c), offsets from the object start; 0: none.
	 * A debug cache's stride k is [base + k*size - red_left_pad, ...):
	 *   [-red_left_pad, 0)        left red zone            (Z)
	 *   [0, object_size)          the object
	 *   [object_size, offset)     right red zone           (Z)
	 *   [offset, offset + 8)      free pointer (outside the object with Z or P)
	 *   [track_offset, +2 tracks) alloc and free owners     (U)
	 *   [orig_size_offset, +4)    requested size (kmalloc)  (Z)
	 *   [inuse, size - red_left_pad) padding (POISON_INUSE with P)       */
	unsigned int track_offset;
	unsigned int orig_size_offset;
	struct node_barn *barn[MAX_NUMNODES]; /* sheaf layer's, per node (sheaf caches) */

	struct list_head list;       /* slab_caches (slab_mutex)                       */
	uint64_t stat_exited[USLUB_NR_STATS]; /* counters of exited threads (atomic)   */
	unsigned int rcu_used;       /* kfree_rcu has been given an object of this
	                                cache: destroy waits for grace periods  */
	char name[CACHE_NAME_MAX];
	struct kmem_cache_node *node[MAX_NUMNODES];
	/* The free record's epoch (see struct free_record): changed, never to
	 * a value it had, whenever a slab of this cache may stop being one
	 * (discard), a slab loses PG_slab_page (sampled profiling) or the
	 * inline paths' conditions change (fastpath_off); starts at a value no
	 * other cache's epoch has had. Far from the first line: the inline
	 * free reads it, discard writes it. */
	uint64_t slab_epoch;
	bool rec_thread;             /* a free_object() hit may use this cache's
	                                record through the thread's last_slot: a
	                                cache never destroyed (kmalloc's), one node */
};
static_assert(offsetof(struct kmem_cache, fast_offset) ==
	      offsetof(struct kmem_cache, fastpath_off) + 4 &&
	      __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	      "fast_word: fastpath_off in its low half, fast_offset in its high");
static_assert(offsetof(struct kmem_cache, red_left_pad) + sizeof(unsigned int) <=
	      USLUB_CACHELINE, "the fast paths read one line of struct kmem_cache");

/* ------------------------------------------------------------------------
 * Per-thread cpu areas (thread.c)
 * ---------------------------------------------------------------------- */
enum thread_state { THREAD_NEW = 0, THREAD_ACTIVE, THREAD_DEAD };

/* Header page of every cpu area; the slots follow it. */
struct uslub_thread {
	struct list_head link;       /* threads or free_areas (thread_lock) */
	char *cpu_base;              /* first cpu slot                     */
	int node;                    /* NUMA node this "cpu" allocates on  */
	struct obj_stock stock;      /* accounting byte stock (owner only;
	                                drained at thread exit, and by a fork
	                                child for the threads it lost)       */
	struct tag_counter *tagc;    /* profiling: counts by tag index (owner
	                                writes, reports read; NULL until the
	                                thread's first profiled allocation)  */
};

struct uslub_tls {
	char *cpu_base;              /* the thread's first cpu slot; until its
	                                first slow path (and after its exit)
	                                the sentinel _uslub_cpu_empty, set by
	                                the TLS initializer: no init test on
	                                the fast paths, one load and one add */
	struct uslub_thread *thread;
	int state;
	uint64_t rnd;                /* per-thread random state (0: unseeded)  */
	uint64_t sample_rnd;         /* sampled profiling's PRNG (0: unseeded) */
	struct obj_cgroup *cur_objcg; /* accounting: current group's handle    */
	struct uslub_group *cur_group; /* (NULL: root, nothing is charged)     */
	int init_depth;              /* > 0 while this thread initializes uslub:
	                                a malloc from inside (libc's) is served
	                                from the malloc layer's boot arena      */
	char *rseq_area;             /* per-CPU mode: glibc's rseq area of the
	                                thread, NULL in per-thread mode (set
	                                by _uslub_thread_init())             */
	const unsigned int *pcpu_idp; /* its id (mm_cid or cpu_id)          */
	struct kmem_cache_cpu *last_slot; /* the slot of the last free_object()
	                                (kfree, free) record set, of a
	                                rec_thread cache; else CPU_SLOT_NONE: a
	                                slot of the sentinel area whose record
	                                is empty (free()'s first try)        */
};
__internal extern __thread struct uslub_tls _uslub_tls __tls_ie;

/* The sentinel area (page aligned, as every thread's cpu area). */
struct cpu_empty_area {
	char area[CPU_AREA_SIZE];
};
__internal extern struct cpu_empty_area _uslub_cpu_empty_area;
#define _uslub_cpu_empty (_uslub_cpu_empty_area.area)
/* The sentinel area's dead slot: nothing writes its record. */
#define CPU_SLOT_NONE \
	((struct kmem_cache_cpu *)(_uslub_cpu_empty + (size_t)CACHE_SLOT_DEAD * CPU_SLOT_SIZE))

/* The calling thread's slot for @s: in the sentinel until the thread's
 * first slow path gives it an area, so the fast paths need no init test. */
static __always_inline struct kmem_cache_cpu *this_cpu(const struct kmem_cache *s)
{
	return (struct kmem_cache_cpu *)(_uslub_tls.cpu_base + s->cpu_offset);
}

static __always_inline bool this_cpu_is_real(void)
{
	return _uslub_tls.cpu_base != _uslub_cpu_empty;
}

/* stat(c, ALLOC_FASTPATH): count one event on the owner's slot. On
 * x86-64 one `add` to memory (the compiler does not fuse an atomic load
 * and store into it: three instructions on every inline path otherwise);
 * readers still see whole values. The TSan build (USLUB_TSAN, base.h)
 * keeps the atomics, which it understands. */
/* The inline fast paths' slot for @s: this_cpu(s), or the dead slot
 * while the cache's inline paths are off (fast_offset_of()). Nothing but
 * the inline pop, push and record test uses it: every slow path takes
 * this_cpu(). */
static __always_inline struct kmem_cache_cpu *this_cpu_fast(const struct kmem_cache *s)
{
#ifdef USLUB_TSAN
	unsigned int off = __atomic_load_n(&s->fast_offset, __ATOMIC_RELAXED);
#else
	unsigned int off = s->fast_offset;
#endif
	return (struct kmem_cache_cpu *)(_uslub_tls.cpu_base + off);
}

#if defined(__x86_64__) && !defined(USLUB_TSAN)
static __always_inline void stat_inc(uint64_t *ctr, uint64_t n)
{
	__asm__("addq %1, %0" : "+m"(*ctr) : "er"(n));
}
#define stat(c, item) stat_inc(&(c)->stat[USLUB_##item], 1)
#define stat_add(c, item, n) stat_inc(&(c)->stat[USLUB_##item], (uint64_t)(n))
#else
#define stat(c, item) SINGLE_WRITER_INC((c)->stat[USLUB_##item], 1)
#define stat_add(c, item, n) SINGLE_WRITER_INC((c)->stat[USLUB_##item], (n))
#endif

__internal extern pthread_mutex_t _uslub_slab_mutex;  /* slab_caches, cache slots */
__internal extern struct list_head _uslub_slab_caches;
__internal extern pthread_mutex_t _uslub_thread_lock; /* threads, free areas      */
__internal extern struct list_head _uslub_threads;

/* init.c: the process init order, once (init on first use: every layer
 * may call it). */
__internal void _uslub_init(void);

/* thread.c */
__internal bool _uslub_thread_init(void);
/* thread_lock's lifecycle entry, and the thread-exit key (init.c). */
__internal void _uslub_thread_lifecycle_init(void);
__internal void _uslub_thread_key_init(void);
/* The boot caches and the dead slot (slab_common.c; init.c). */
__internal void _uslub_slub_init(void);
__internal struct kmem_cache_cpu *_uslub_thread_cpu(struct uslub_thread *t,
						     const struct kmem_cache *s);
/* @fn on every cpu area: the sentinel, live threads', parked ones
 * (thread_lock held). */
__internal void _uslub_for_each_cpu_area(void (*fn)(char *cpu_base, void *arg), void *arg);
/* A cpu area a thread takes: every used slot's main made the empty sheaf
 * (thread_lock held; takes slab_mutex). */
__internal void _uslub_cpu_area_init(char *cpu_base);
/* @fn(@base, &slot) for every used cache slot (slab_mutex held). */
__internal void _uslub_for_each_used_slot(char *base, void (*fn)(char *base, void *slot));

/* Per-CPU mode (slub/pcpu.c; the stand-ins above, the sections in
 * slub/percpu.h, the sheaf work in sheaf/pcpu.c). */
#define PCPU_MAX_IDS 1024
/* tab[id]: the id's area (its first slot), or _uslub_cpu_empty until a
 * slow path makes it (_uslub_pcpu_area()). Written under slab_mutex. */
__internal extern char *_uslub_pcpu_tab[PCPU_MAX_IDS];
__internal extern bool _uslub_pcpu;          /* the mode is on (fixed at init) */
/* The header page of an id's area: its slow paths' count, and what the
 * purge pass last saw of it (the idle drain, sheaf/pcpu.c). */
struct pcpu_area {
	unsigned long uses;          /* releases on this id (atomic adds)   */
	unsigned long seen;          /* uses at the purge pass's last look  */
	uint64_t idle_ns;            /* since when seen has not changed     */
	bool drained;                /* nothing left since the last drain   */
	bool watched;                /* a purge deadline asked for since the
	                                last drain (a release that finds it
	                                false sets it and notifies the page
	                                layer's purge, so an idle id is
	                                drained even when nothing else is
	                                purgeable)                         */
};
__internal void _uslub_pcpu_init(void);
/* The area of @id, made now if it has none; NULL: out of memory. */
__internal char *_uslub_pcpu_area(unsigned int id);
__internal struct pcpu_area *_uslub_pcpu_area_hdr(char *base);
__internal unsigned int _uslub_pcpu_nr_areas(void);
/* A new cache's slot @slot: its words in every id's area (slab_mutex). */
__internal void _uslub_pcpu_slot_init(int slot);

/* internal flags, bits, and slab_common.c, cpu_slab.c, cache/api.c */
#define SLAB_NO_SHEAVES 0x80000000u  /* internal flag: never give this cache sheaves */
#define SLAB_HARDENED   0x40000000u  /* internal flag: free pointers obfuscated     */
#define SLAB_NO_OBJ_EXT 0x20000000u  /* internal flag: never per-object extensions */
#define SLAB_ABORT_ON_ERROR 0x10000000u /* internal flag: abort() after reporting an
                                           invalid or double free, or a corruption
                                           (the malloc front end's kmalloc caches) */
#define SLAB_HIGH_ORDER 0x08000000u  /* internal flag: slabs up to order
                                        SLAB_HIGH_ORDER_MAX whatever slub_max_order
                                        says, and one empty slab kept per node
                                        (min_partial): malloc's 4-64 KiB classes,
                                        so a slab holds several objects, not one.
                                        B8 realloc's peak RSS: 12.8 MiB on page
                                        runs, 16.0 with order 4, 16.4 with 5,
                                        19.1 with 6                              */
#define SLAB_HIGH_ORDER_MAX 4u       /* 64 KiB */

/* kmem_cache.hooks bits */
#define HOOK_ACCOUNT 1u              /* objects may be charged (ACCOUNT cache, or
                                        on demand after a GFP_ACCOUNT alloc) */
#define HOOK_PROFILE 2u              /* objects are tagged (profiling on)    */

/* kmem_cache.pcs_hooks: a sheaf cache with hooks whose every allocation
 * runs the same hooks takes the lean hooked paths, specialized for them
 * (the choice is made once, not per object); 0: the generic hooked
 * rungs (on-demand accounting, no sheaves, SLAB_NO_OBJ_EXT) or no hooks */
#define PCS_HOOKS_ACCOUNT 1u         /* a USLUB_ACCOUNT cache: every object is
                                        charged to the thread's group         */
#define PCS_HOOKS_PROFILE 2u         /* every object is tagged (exact mode)    */
/* A lean path's pcs_hooks is its cache's extension layout too (the lean
 * accessors take it as a compile-time layout: obj_ext_at_tag()) */
static_assert(PCS_HOOKS_ACCOUNT == OBJ_EXT_OBJCG && PCS_HOOKS_PROFILE == OBJ_EXT_TAG,
	      "pcs_hooks == ext_layout for the lean paths");

/* fastpath_off bits */
#define FASTPATH_OFF_HARDENED 1u
#define FASTPATH_OFF_HOOKS    2u
#define FASTPATH_OFF_DEBUG    4u     /* fault injection armed (USLUB_FAILSLAB,
                                        or the cache's fail hook)             */
#define FASTPATH_OFF_SLUB_DEBUG 8u   /* slub_debug: every alloc and free of the
                                        cache takes the debug paths, under
                                        list_lock (debug_paths.c; the contract) */
#define FASTPATH_OFF_DEAD    16u     /* destroyed: the struct is kept a while
                                        (quarantine) so that a use is reported */
#define FASTPATH_OFF_MARK    32u     /* the free mark is not at word 0 (a ctor
                                        or caller-placed free pointer keeps it
                                        outside the object): the inline fast
                                        paths, which use word 0, are off    */
#define FASTPATH_OFF_ASAN    64u     /* AddressSanitizer is in the process: free
                                        objects are poisoned (kasan.c), so every
                                        alloc and free takes the miss paths,
                                        which unpoison and poison            */
/* The cpu slot no cache owns: always empty in every cpu area, so a
 * destroyed cache pointed at it takes the slow paths. */
#define CACHE_SLOT_DEAD (USLUB_MAX_CACHES - 1)
/* End every free record of @s (struct free_record): called before the
 * event it guards against becomes visible to a free (a slab's pages
 * freed, PG_slab_page cleared) and after a change of fastpath_off. */
static __always_inline void slab_epoch_bump(struct kmem_cache *s)
{
	__atomic_fetch_add(&s->slab_epoch, 1, __ATOMIC_SEQ_CST);
}

/* The inline paths' slot offset for @s with fastpath_off @off: its own
 * slot, or, while its inline paths are off, the dead slot, whose main
 * sheaf (size 0, capacity 0) makes the inline alloc find it empty and the
 * inline free find it full: one test covers both (7.0's bootstrap sheaf
 * plays that part). Hardening does not count: a sheaf holds plain
 * pointers. */
static __always_inline unsigned int fast_offset_of(const struct kmem_cache *s, unsigned int off)
{
	return off > FASTPATH_OFF_HARDENED ? (unsigned int)CACHE_SLOT_DEAD * CPU_SLOT_SIZE
					   : s->cpu_offset;
}

/* Set @set and clear @clear in fastpath_off, and fast_offset with it in
 * one atomic step (one word: two changers under different locks, as
 * failslab's and the hooks', cannot leave them disagreeing). Before
 * publication (creation) and after: the cache's slot is fixed by then. */
static __always_inline void fastpath_off_update(struct kmem_cache *s, unsigned int set,
						unsigned int clear)
{
	uint64_t old = __atomic_load_n(&s->fast_word, __ATOMIC_RELAXED), new;
	do {
		unsigned int off = ((unsigned int)old | set) & ~clear;
		new = off | (uint64_t)fast_offset_of(s, off) << 32;
	} while (!__atomic_compare_exchange_n(&s->fast_word, &old, new, false,
					      __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
}

/* fastpath_off's changes after creation, each ending the records. */
static __always_inline void fastpath_off_set(struct kmem_cache *s, unsigned int bits)
{
	fastpath_off_update(s, bits, 0);
	slab_epoch_bump(s);
}
static __always_inline void fastpath_off_clear(struct kmem_cache *s, unsigned int bits)
{
	fastpath_off_update(s, 0, bits);
	slab_epoch_bump(s);
}

/* The USLUB_DEBUG letters that put a cache on the debug paths. */
#define USLUB_DBG_PATHS (USLUB_DBG_F | USLUB_DBG_Z | USLUB_DBG_P | USLUB_DBG_U | USLUB_DBG_T)

static __always_inline bool kmem_cache_debug(const struct kmem_cache *s)
{
	return unlikely(READ_ONCE(s->fastpath_off) & FASTPATH_OFF_SLUB_DEBUG);
}
/* uslub_cache_create_args() without _uslub_init() (usable while it runs)
 * and accepting the internal flags. Call with no uslub lock held. */
__internal struct kmem_cache *_uslub_cache_create(const char *name, size_t size,
						  const struct uslub_cache_args *args,
						  unsigned int flags);
/*
 * Cache creation, the slab-level steps (slab_common.c); the cache API's
 * _uslub_cache_create() gives the cache its sheaves between the two.
 * _uslub_cache_prepare: check the arguments (reported, errno EINVAL; the
 * internal flags are accepted), lay the cache out, allocate its struct,
 * nodes and random sequence; not visible yet. NULL: errno set.
 * _uslub_cache_publish: a cache slot, set in every cpu area, and the
 * cache list (slab_mutex); -1 (reported) when every slot is in use: the
 * caller undoes what it added, then _uslub_cache_free_unpublished().
 * No uslub lock held.
 */
__internal struct kmem_cache *_uslub_cache_prepare(const char *name, size_t size,
						   const struct uslub_cache_args *args,
						   unsigned int flags);
__internal int _uslub_cache_publish(struct kmem_cache *s);
__internal void _uslub_cache_free_unpublished(struct kmem_cache *s);
/* "cannot create cache" for @why: reported, errno EINVAL, NULL. */
__internal __cold struct kmem_cache *_uslub_cache_create_error(const char *name,
								const char *why);

/*
 * Internal caches: the caches SLUB and the layers above keep their own
 * objects in (the bucket caches, the ext layer's group handles; the boot
 * caches are used the same way), made and used below the cache API. They
 * have no sheaves, no extensions (so no hooks, no slub_debug, no fault
 * injection) and are never merged (SLAB_INTERNAL). Allocation takes the
 * cpu freelist, else ___slab_alloc() (cpu_slab.c); a free is checked like
 * a user's (invalid and double frees reported and ignored), then goes
 * onto the cpu freelist or its slab. @may_init false: never set up a cpu
 * area (any context: thread_lock may be held).
 */
#define SLAB_INTERNAL (SLAB_NO_SHEAVES | SLAB_NO_OBJ_EXT | USLUB_NO_MERGE)
__internal struct kmem_cache *_uslub_internal_cache_create(const char *name, size_t size);
__internal void *_uslub_internal_alloc(struct kmem_cache *s, uslub_gfp_t gfp);
__internal void _uslub_internal_free(struct kmem_cache *s, void *x, bool may_init);

/* Flush a cpu slot of @s (sheaves, slab, partials) and fold its counters. */
__internal void _uslub_flush_cpu(struct kmem_cache *s, struct kmem_cache_cpu *c);
/* The same for a thread that exits: its full sheaves go to the barn where
 * there is room (the next thread's refill takes them back) instead of
 * their objects to the slabs. */
__internal void _uslub_flush_cpu_exit(struct kmem_cache *s, struct kmem_cache_cpu *c);
/* The sheaf layer's flush of a slot's sheaves (main, spare), which
 * _uslub_flush_cpu() runs first for a slot holding any (@exiting: the
 * slot's thread exits): registered once by the sheaf layer's init
 * (_uslub_sheaf_lifecycle_init(), before any cache exists). */
__internal void _uslub_register_sheaf_flush(void (*flush)(struct kmem_cache *s,
							  struct kmem_cache_cpu *c,
							  bool exiting));
/* Per-CPU mode: the sheaf layer's drain of every id's sheaves of @s
 * (slab_mutex held), which uslub_flush_thread() runs after the thread's
 * own slot (registered the same way; NULL until then). */
__internal void _uslub_register_pcpu_drain(void (*drain)(struct kmem_cache *s,
							 struct kmem_cache_cpu *c));
__internal void _uslub_pcpu_drain_ids(struct kmem_cache *s, struct kmem_cache_cpu *c);
__internal uint64_t _uslub_cpu_alloc_fastpath(const struct kmem_cache *s,
					       const struct kmem_cache_cpu *c);
/* Lifecycle entries (base/lifecycle.h) of slab_common.c (slab_mutex,
 * list_lock), sheaf.c (barn locks; and its slot flush) and debug.c
 * (flush_lock), registered from _uslub_init(). */
__internal void _uslub_slub_lifecycle_init(void);
__internal void _uslub_sheaf_lifecycle_init(void);
__internal void _uslub_debug_lifecycle_init(void);
__internal void _uslub_slub_recount(void);
__internal int _uslub_home_node(void);

/*
 * Slab-level bulk primitives for the layer above (sheaf/sheaf.c):
 *
 * _uslub_refill_objects: fill p[] with between @min and @max objects of @s
 * from @c's cpu partial slabs, then node partial slabs, then new slabs
 * (objects handed out directly, a freelist built only for the rest), on
 * @node (USLUB_NUMA_NO_NODE: the caller's, then any). Returns the count,
 * or 0 with nothing taken if @min could not be reached. Counts no
 * ALLOC_* event (the caller knows whether these are allocations).
 *
 * _uslub_free_to_slabs: give @n objects of @s (valid objects, checked by
 * the caller; s == NULL: each object's own cache) back to their slabs,
 * objects of one slab as one detached freelist pushed with one CAS.
 * Clobbers p[]. Counts no FREE_* event.
 */
__internal unsigned int _uslub_refill_objects(struct kmem_cache *s, struct kmem_cache_cpu *c,
					      void **p, unsigned int min, unsigned int max,
					      int node);
__internal void _uslub_free_to_slabs(struct kmem_cache *s, struct kmem_cache_cpu *c,
				     size_t n, void **p);

struct obj_ext;                      /* slub/object.h */
__internal struct obj_ext _uslub_slab_obj_ext_idx(struct kmem_cache *s, struct slab *slab,
						  unsigned int idx);

/* Fault injection (failslab.c): should this allocation call of @n
 * objects fail? Only asked when fastpath_off has FASTPATH_OFF_DEBUG. */
__internal bool _uslub_should_failslab(struct kmem_cache *s, uslub_gfp_t gfp, size_t n);
__internal void _uslub_failslab_init(void);
__internal unsigned int _uslub_failslab_cache_fastpath_off(const struct kmem_cache *s);

/*
 * The internal bucket caches (buckets.c): power-of-two caches "bucket-64"
 * .. "bucket-2M" for the sheaf layer's sheaves and barns and SLUB's
 * separate extension arrays (obj_ext.c). _uslub_bucket_for(): the bucket for
 * @bytes (created on first use, with no uslub lock held; NULL above
 * USLUB_BUCKET_MAX or out of memory). A struct is freed with the size it
 * was allocated with; _locked in any context (thread_lock held, no cpu
 * area).
 */
#define USLUB_BUCKET_MAX (2ul << 20)
__internal struct kmem_cache *_uslub_bucket_for(size_t bytes);
__internal void *_uslub_bucket_alloc(size_t bytes, uslub_gfp_t gfp);
__internal void _uslub_bucket_free(void *x, size_t bytes);
__internal void _uslub_bucket_free_locked(void *x, size_t bytes);

/* A use of a destroyed (quarantined) cache, or of NULL: reported, errno
 * EINVAL (slab_common.c). */
__internal void _uslub_bad_cache(const struct kmem_cache *s, const char *call);

/* The checked slow paths' gate (inline: one bit test): fault injection,
 * and a destroyed cache (its fastpath_off sends everything here). */
static __always_inline bool failslab(struct kmem_cache *s, uslub_gfp_t gfp, size_t n)
{
	unsigned int off = READ_ONCE(s->fastpath_off);
	if (likely(!(off & (FASTPATH_OFF_DEBUG | FASTPATH_OFF_DEAD))))
		return false;
	if (unlikely(off & FASTPATH_OFF_DEAD)) {
		_uslub_bad_cache(s, "allocation");
		return true;
	}
	if (!_uslub_should_failslab(s, gfp, n))
		return false;
	errno = ENOMEM;
	return true;
}

/* NULL or destroyed: report for @call (errno EINVAL) and say so. */
static inline bool cache_bad(const struct kmem_cache *s, const char *call)
{
	if (likely(s && !(READ_ONCE(s->fastpath_off) & FASTPATH_OFF_DEAD)))
		return false;
	_uslub_bad_cache(s, call);
	return true;
}

/*
 * KASAN's role under AddressSanitizer (kasan.c; docs/design.md, "ASan").
 * _uslub_kasan: the process has ASan's runtime (the weak references in
 * base.h resolved) and USLUB_ASAN is on; set once by _uslub_slub_init().
 * Then every user cache without slub_debug gets FASTPATH_OFF_ASAN at
 * creation: its inline paths are off, and
 *   - a new slab's object area and tail are poisoned (ctor: the object
 *     unpoisoned while it runs), a discarded slab unpoisoned for the page
 *     level;
 *   - a free by a user poisons the object's slot (object, free pointer,
 *     free mark, padding; not an extension in its padding) before the free
 *     publishes it: _uslub_kasan_slab_free(), which every free path calls
 *     (the cache layer's free miss and bulk free; the RCU frees too) while
 *     the object is still the freer's, before its free mark is written;
 *   - a hand-out to a user unpoisons @size bytes (kmalloc, malloc: the
 *     requested size; else object_size): _uslub_kasan_alloc(), which zeroes
 *     object_size first for __GFP_ZERO (libc's memset is ASan's, and
 *     checks); ksize() unpoisons the whole object (the caller may use it).
 * uslub's own metadata accesses inside free objects go through
 * meta_load()/meta_store() (object.h). Costs nothing without ASan: no
 * cache has the bit, and the inline paths test fastpath_off anyway.
 */
__internal extern bool _uslub_kasan;
__internal void _uslub_kasan_init(void);
__internal void _uslub_kasan_alloc(const struct kmem_cache *s, void *obj, size_t size, bool zero);
__internal void _uslub_kasan_slab_free(const struct kmem_cache *s, void *x);
__internal void _uslub_kasan_unpoison(const void *p, size_t n);
__internal void _uslub_kasan_poison(const void *p, size_t n);
__internal void _uslub_kasan_new_slab(const struct kmem_cache *s, const struct slab *slab,
				      unsigned int objects);
__internal void _uslub_kasan_ctor(const struct kmem_cache *s, void *obj);
__internal void _uslub_kasan_discard_slab(const struct kmem_cache *s, const struct slab *slab);

static __always_inline bool cache_kasan(const struct kmem_cache *s)
{
	return unlikely(READ_ONCE(s->fastpath_off) & FASTPATH_OFF_ASAN);
}

/*
 * slub_debug (debug.c): object layout values, per-object checks and
 * reports. The debug alloc and free paths themselves are in debug_paths.c.
 */
#define SLUB_RED_INACTIVE 0xbb       /* red zones of a free object        */
#define SLUB_RED_ACTIVE   0xcc       /* red zones of an allocated object  */
#define POISON_INUSE      0x5a       /* padding and never-used slab bytes */
#define POISON_FREE       0x6b       /* a free object's bytes ...         */
#define POISON_END        0xa5       /* ... and its last byte             */

enum track_item { TRACK_ALLOC, TRACK_FREE };
struct track {                       /* an owner: who, when, where        */
	uintptr_t addr;              /* caller's return address (0: none) */
	uint64_t when_ns;            /* CLOCK_MONOTONIC                   */
	int tid;
	int cpu;
};
static_assert(sizeof(struct track) == 24, "track layout");

/* A new slab (private): fill paddings and put every object in the free
 * state (red zones inactive, poison, no owners). Before any ctor. */
__internal void _uslub_debug_init_slab(struct kmem_cache *s, struct slab *slab,
				       unsigned int objects);
/* Red zones to @val; with P and SLUB_RED_INACTIVE also the poison. */
__internal void _uslub_debug_init_object(struct kmem_cache *s, void *obj, uint8_t val);
/* Check @obj of @slab in state @val: red zones, poison (free objects),
 * padding, the free pointer (free objects). Each damaged region is
 * reported (one error each) and restored; returns how many were damaged. */
__internal unsigned int _uslub_debug_check_object(struct kmem_cache *s, struct slab *slab,
						  void *obj, uint8_t val);
__internal void _uslub_debug_set_track(struct kmem_cache *s, void *obj, enum track_item item,
				       uintptr_t addr);
/* A kmalloc request of @size bytes in @obj: recorded, and the tail
 * [size, object_size) set to SLUB_RED_ACTIVE (Z caches only). */
__internal void _uslub_debug_set_orig_size(struct kmem_cache *s, void *obj, unsigned int size);
/* A report about @obj (the object's dump and owners follow); counted. */
__internal void _uslub_debug_object_err(struct kmem_cache *s, struct slab *slab, void *obj,
					const char *bug, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* A report about a whole slab (an inconsistent freelist); counted. */
__internal void _uslub_debug_slab_err(struct kmem_cache *s, struct slab *slab, const char *bug,
				      const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* A report line (buffered per thread: see debug.c). */
__internal void _uslub_debug_emit(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Write the thread's buffered report lines, symbolized. Call with no
 * uslub lock held. */
__internal void _uslub_debug_flush(void);
/* The FIX line for a slab taken out of use. */
__internal void _uslub_debug_isolated(struct kmem_cache *s, struct slab *slab);
/* T: one line per alloc/free. */
__internal void _uslub_debug_trace(struct kmem_cache *s, struct slab *slab, void *obj,
				   bool alloc);
/* "func+0x1a/0x40 (file)" for @addr, into buf. */
__internal void _uslub_debug_symbolize(uintptr_t addr, char *buf, size_t len);
/* One line about a live object left at destroy (its alloc owner). */
__internal void _uslub_debug_print_leak(struct kmem_cache *s, struct slab *slab, void *obj);

/*
 * Grace periods (rcu.c): the provider registered by libuslub-rcu
 * (uslub_gp_register), and what the core defers to it. A head is given to
 * the provider at once when the calling thread holds no uslub lock, else
 * pushed on a lock-free list and handed over by the next
 * _uslub_gp_drain() made with no lock held (the provider's call_rcu may
 * allocate: never under a uslub lock). @func is kept in the head.
 */
__internal extern const struct uslub_gp_ops *_uslub_gp_ops;
static inline bool gp_available(void)
{
	return __atomic_load_n(&_uslub_gp_ops, __ATOMIC_ACQUIRE) != NULL;
}
/* Every hand-over to the provider releases _uslub_gp_seq, every callback
 * acquires it first: the order the provider's queue gives, said in a way
 * the TSan build sees (liburcu is not instrumented). */
__internal extern unsigned long _uslub_gp_seq;
static inline void gp_call(const struct uslub_gp_ops *ops, struct uslub_rcu_head *head,
			   void (*func)(struct uslub_rcu_head *head))
{
	__atomic_fetch_add(&_uslub_gp_seq, 1, __ATOMIC_RELEASE);
	ops->call(head, func);
}
static inline void gp_callback_begin(void)
{
	(void)__atomic_load_n(&_uslub_gp_seq, __ATOMIC_ACQUIRE);
}
__internal void _uslub_gp_defer(struct uslub_rcu_head *head,
				void (*func)(struct uslub_rcu_head *head));
/* Any context (a signal handler, under any lock): push @head for the
 * next drain, never a call (kfree_rcu_nolock). */
__internal void _uslub_gp_defer_nolock(struct uslub_rcu_head *head,
				       void (*func)(struct uslub_rcu_head *head));
/* Hand what was deferred to the provider (nothing while a uslub lock is
 * held). */
__internal extern struct uslub_rcu_head *_uslub_gp_deferred;
__internal void _uslub_gp_drain_slow(void);
static inline void _uslub_gp_drain(void)
{
	if (unlikely(__atomic_load_n(&_uslub_gp_deferred, __ATOMIC_RELAXED)))
		_uslub_gp_drain_slow();
}
/* ... and every callback releases _uslub_gp_done when it is done, which a
 * barrier acquires after the provider's barrier returned; then hands over
 * what was deferred meanwhile (the worker holds no uslub lock and may
 * call the provider: kfree_rcu_nolock's heads do not wait for the
 * program's next RCU call while others' callbacks run). */
__internal extern unsigned long _uslub_gp_done;
static inline void gp_callback_end(void)
{
	__atomic_fetch_add(&_uslub_gp_done, 1, __ATOMIC_RELEASE);
	_uslub_gp_drain();
}
/* Wait for every callback handed over so far (no uslub lock held); true
 * when something more was handed over (or deferred) meanwhile, say a
 * callback's flush discarding TYPESAFE_BY_RCU slabs. */
__internal bool _uslub_gp_wait(void);
/* The fork child's reset of the drains in flight (slab_common.c's init). */
__internal void _uslub_gp_lifecycle_init(void);

/* publish.c */
__internal void _uslub_publish_init(void);


/* Every slab of @s, with the node's page lock held (no other uslub lock
 * may be taken by @fn). */
__internal void _uslub_for_each_slab(struct kmem_cache *s,
				     void (*fn)(struct kmem_cache *s, struct slab *slab, void *arg),
				     void *arg);

#include "slub/object.h"

/* ------------------------------------------------------------------------
 * Across the files of src/slub/, and for the cache layer above (functions
 * named _uslub_<the name they had as statics of slub.c>)
 * ---------------------------------------------------------------------- */
#define DEACTIVATE_TO_HEAD_POS 0
#define DEACTIVATE_TO_TAIL_POS 1

static inline struct kmem_cache_node *get_node(const struct kmem_cache *s, int node)
{
	return s->node[node];
}

/* list_lock, counted: the tests assert which paths take it. */
static inline void node_lock(struct kmem_cache_node *n)
{
	uslub_mutex_lock(&n->list_lock, RANK_LIST);
	WRITE_ONCE(n->lock_taken, n->lock_taken + 1);
}

static inline void node_unlock(struct kmem_cache_node *n)
{
	uslub_mutex_unlock(&n->list_lock, RANK_LIST);
}

/* ALLOC_PCS of a slot (see kmem_cache_cpu.pcs_adjust): exact for the
 * owner; another thread retries while the owner rearms (a few stores),
 * spinning a while, then yielding (the owner may have been preempted
 * between its stores: on a loaded 2-core machine the spin alone ran out
 * and returned a torn sum, a countdown near 2^63: stress_observers), and
 * boundedly, after thousands of yields: a fork child flushing a lost
 * thread's slot may find it stopped mid-way for good. */
static inline uint64_t cpu_alloc_pcs(const struct kmem_cache_cpu *c)
{
	for (int tries = 0;; tries++) {
		if (tries > 1000)
			sched_yield();
		/* a seqlock without fences (TSan has none): the writer's data
		 * stores are releases after its odd seq, these loads acquires */
		unsigned long seq = __atomic_load_n(&c->sample_seq, __ATOMIC_ACQUIRE);
		uint64_t v = __atomic_load_n(&c->stat[USLUB_ALLOC_PCS], __ATOMIC_ACQUIRE) +
			     (uint64_t)__atomic_load_n(&c->pcs_adjust, __ATOMIC_ACQUIRE);
		if ((!(seq & 1) && __atomic_load_n(&c->sample_seq, __ATOMIC_RELAXED) == seq) ||
		    tries > 1000 + 20000)
			return v;
	}
}

/* @n pops of a sheaf counted as ALLOC_PCS by a slow path (no countdown
 * tick: the miss path ticked sample_left for the call). Owner only. */
static __always_inline void stat_pcs_slow(struct kmem_cache_cpu *c, uint64_t n)
{
	WRITE_ONCE(c->pcs_adjust, c->pcs_adjust + (int64_t)n);
}

/* Record ALLOC_FASTPATH while the cpu freelist is empty (exact then). */
static __always_inline void publish_alloc_fastpath(struct kmem_cache_cpu *c)
{
	WRITE_ONCE(c->stat[USLUB_ALLOC_FASTPATH], c->loaded + c->stat[USLUB_FREE_FASTPATH]);
}

/* Is @obj (the head of c->freelist) an object start of the cpu slab? The
 * slow paths check before they pop; NULL fails too. */
static __always_inline bool cpu_freelist_ok(const struct kmem_cache *s,
					    const struct kmem_cache_cpu *c, const void *obj)
{
	return c->slab && obj_is_valid(s, c->slab, obj);
}

/* slab_common.c: the caches that hold struct kmem_cache and struct
 * kmem_cache_node. */
__internal extern struct kmem_cache _uslub_boot_kmem_cache, _uslub_boot_kmem_cache_node;

/* obj_ext.c */
__internal void _uslub_slab_init_obj_exts(struct kmem_cache *s, struct slab *slab,
		unsigned int objects, bool nolock);
__internal __cold struct obj_ext _uslub_slab_obj_ext_alloc(struct kmem_cache *s,
		struct slab *slab, const void *obj, unsigned int need);
__internal void _uslub_slab_free_obj_exts(struct kmem_cache *s, struct slab *slab);

/* The any-context paths (kmalloc_nolock, kfree_nolock; cache/nolock.c):
 * trylocks only, no cpu slot (@c is the caller's, on its stack).
 * new_slab.c: can a slab of @s be made that way; make one (the page node
 * lock only tried, the node never grown). bulk.c: one object, from a node
 * partial slab or a new slab, list_lock only tried. partial.c: free one
 * object to its slab; false when the list move it needs found list_lock
 * taken (nothing done: the caller defers it). */
__internal bool _uslub_slab_nolock_ok(const struct kmem_cache *s);
__internal struct slab *_uslub_allocate_slab_nolock(struct kmem_cache *s, int node,
		struct kmem_cache_cpu *c);
__internal void *_uslub_slab_alloc_nolock(struct kmem_cache *s, int node,
		struct kmem_cache_cpu *c);
__internal bool _uslub_slab_free_nolock(struct kmem_cache *s, struct slab *slab, void *x,
		struct kmem_cache_cpu *c);

/* new_slab.c */
__internal uint64_t _uslub_seed64(void);
__internal bool _uslub_init_random_seq(struct kmem_cache *s);
__internal void _uslub_free_random_seq(struct kmem_cache *s);
__internal struct slab *_uslub_allocate_slab(struct kmem_cache *s, int node,
		struct kmem_cache_cpu *c);
__internal unsigned int _uslub_new_slab_objects(struct kmem_cache *s, struct slab *slab,
					       void **p, unsigned int n, void **rest,
					       bool free_objs);
__internal void _uslub_discard_slab(struct kmem_cache *s, struct slab *slab);
/* rcu.c: a TYPESAFE_BY_RCU slab's pages go back after a grace period. */
__internal void _uslub_discard_slab_rcu(struct slab *slab);

/* partial.c */
__internal void _uslub_add_partial(struct kmem_cache_node *n, struct slab *slab, int pos);
/* An empty slab of @n: keep it on the partial list (true), or discard it
 * (false, noted for the swing test)? list_lock held, or a hint without. */
__internal bool _uslub_node_keep_empty(const struct kmem_cache *s, struct kmem_cache_node *n);
/* A new slab was made on @n (not in any-context calls). */
__internal void _uslub_node_new_slab(const struct kmem_cache *s, struct kmem_cache_node *n);
__internal void _uslub_partial_init(void);

/*
 * Levels that follow a cache's swings (partial.c): a barn's max_full
 * (sheaf/sheaf.c) and a node's keep. The first half of a swing (a full
 * sheaf refused, an empty slab discarded) marks its time; the second (a
 * refill, a new slab) less than USLUB_DECAY_MS later raises the level by
 * one, from at least @base up to @cap, the first raise giving the purge
 * pass a deadline (lockless hints: a race counts one raise less). The
 * page layer's purge pass lowers a level once its last raise is a decay
 * old (at once when forced), through _uslub_swing_purge().
 */
struct swing_pass {
	bool force;
	uint64_t now, decay;
	uint64_t *next;              /* the earliest deadline left (0: none) */
};
__internal void _uslub_swing_mark(uint64_t *event_ns);
__internal void _uslub_swing_raise(unsigned long *level, uint64_t *raised_ns,
				   const uint64_t *event_ns, unsigned long base, unsigned long cap);
/* In a lower: is a level raised at @raised_ns due? If not, its deadline
 * lowers *p->next. */
__internal bool _uslub_swing_due(struct swing_pass *p, uint64_t raised_ns);
/* A purge callback: @lower for every cache (slab_mutex held, a slot on
 * the stack for the counters, folded after); nothing while a uslub lock
 * is held (the next pass a decay away). Returns 0. */
__internal size_t _uslub_swing_purge(bool force, uint64_t *next,
				     void (*lower)(struct kmem_cache *s, struct kmem_cache_cpu *c,
						   struct swing_pass *p));
/* Discard a ->next list of slabs that are on no list (FREE_SLAB counted
 * in @c unless NULL); returns how many. */
__internal unsigned long _uslub_discard_slabs(struct kmem_cache *s, struct slab *list,
					      struct kmem_cache_cpu *c);
__internal void _uslub_remove_partial(struct kmem_cache_node *n, struct slab *slab);
__internal void _uslub_put_partials_node(struct kmem_cache *s, struct slab *list,
		struct kmem_cache_cpu *c);
__internal struct slab *_uslub_get_partial(struct kmem_cache *s, int node,
		struct kmem_cache_cpu *c, bool cache_partials, int home);
__internal bool _uslub___slab_free(struct kmem_cache *s, struct slab *slab, void *head,
		void *tail, unsigned int cnt, struct kmem_cache_cpu *c, bool cpu_partial);
__internal __cold void _uslub_report_invalid_free(struct kmem_cache *s, void *x,
		struct slab *slab);
__internal __cold void _uslub_report_double_free(struct kmem_cache *s, struct slab *slab,
		void *x);

/* cpu_slab.c */
__internal __cold void _uslub_report_corrupt(struct kmem_cache *s, const struct slab *slab,
		const void *bad, const void *after, struct kmem_cache_cpu *c);
__internal void _uslub_fold_stats(struct kmem_cache *s, struct kmem_cache_cpu *c);
__internal __cold void _uslub_cpu_freelist_corrupt(struct kmem_cache *s,
		struct kmem_cache_cpu *c);
__internal int _uslub_refill_cpu(struct kmem_cache *s, int node, struct kmem_cache_cpu *c,
		bool cache_partials, int home, void **p, unsigned int want);
__internal __noinline void *_uslub___slab_alloc(struct kmem_cache *s, uslub_gfp_t gfp,
		int node);
/* @slab regained PG_slab_page (its last sampled object untagged): if it
 * is the calling thread's cpu slab of @s, reopen the free range that
 * sampling closed, so its frees skip the lookup again. */
__internal void _uslub_cpu_slab_reopen(struct kmem_cache *s, struct slab *slab);

/* debug_paths.c */
__internal struct kmem_cache_cpu *_uslub_debug_cpu(struct kmem_cache *s,
		struct kmem_cache_cpu *tmp);
__internal void _uslub_debug_cpu_done(struct kmem_cache *s, struct kmem_cache_cpu *c,
		struct kmem_cache_cpu *tmp);
__internal void _uslub_slab_isolate(struct kmem_cache *s, struct kmem_cache_node *n,
		struct slab *slab);
__internal __noinline void *_uslub___debug_slab_alloc(struct kmem_cache *s, uslub_gfp_t gfp,
		int node, uintptr_t addr, bool count);
__internal void *_uslub_debug_slab_alloc(struct kmem_cache *s, uslub_gfp_t gfp, int node,
		uintptr_t addr);
__internal __noinline void _uslub___debug_slab_free(struct kmem_cache *s, struct slab *slab,
		void *x, uintptr_t addr, bool count);
__internal void _uslub_debug_slab_free(struct kmem_cache *s, struct slab *slab, void *x,
		uintptr_t addr);

/* bulk.c */
__internal __noinline void _uslub_free_bulk_detached(struct kmem_cache *s, size_t n, void **p);
__internal unsigned int _uslub___refill_objects(struct kmem_cache *s, struct kmem_cache_cpu *c,
		void **p, unsigned int min, unsigned int max, int node, bool user);

/* geometry.c */
/* USLUB_PROFILING: every new cache (but the internal ones) gets the
 * profiling hook. Set once by the ext layer's init, before any cache. */
__internal extern bool _uslub_profiling;
/* USLUB_PROFILING=sample[:BYTES]: no hook; allocations are sampled
 * (cache/sample.c) with a mean of _uslub_sample_interval bytes between
 * samples. Set once by the ext layer's init, before any allocation. */
__internal extern bool _uslub_sampling;
__internal extern size_t _uslub_sample_interval;
/* kmalloc's page runs and mappings are sampled every
 * _uslub_sample_interval << USLUB_LARGE_RATE_SHIFT bytes (cache/sample.c
 * says why); the heap profile's header says so (ext/stack.c). */
#define USLUB_LARGE_RATE_SHIFT 4
__internal unsigned int _uslub_order_objects(unsigned int order, size_t size);
__internal bool _uslub_calculate_sizes(struct kmem_cache *s, size_t object_size, size_t align,
		const struct uslub_cache_args *args);
__internal void _uslub_calculate_obj_ext(struct kmem_cache *s, unsigned int flags);

/* slab_common.c */
__internal int _uslub_take_slot(void);
__internal void _uslub_release_slot(int i);
__internal void _uslub_slot_init_main(char *base, void *arg);
__internal void _uslub_init_node(struct kmem_cache_node *n);
__internal void _uslub_init_cache(struct kmem_cache *s, const char *name, unsigned int flags,
		void (*ctor)(void *), int slot);
__internal int _uslub_shrink_node(struct kmem_cache *s, struct kmem_cache_node *n,
		struct kmem_cache_cpu *c);

#endif /* USLUB_SLUB_SLUB_H */
