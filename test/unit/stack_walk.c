/*
 * The sampled stacks' walk (ext/stack.c's walk()), white box, with
 * USLUB_PROFILING=sample:1 (set by CTest: the walk's setup done):
 *   - through frames without frame pointers (-fomit-frame-pointer), one
 *     with a 16 KiB frame, one whose CFA is rbp's (alloca), below it one
 *     that saves rbp and overwrites it (the walk must take the caller's
 *     rbp from where it was saved): each level's return address in
 *     order, then main's caller in libc, and the walk ends by itself
 *     (the outermost frame) before its bound;
 *   - the same in a thread (its stack's top: the thread's descriptor);
 *   - in a signal handler: the handler's frame, then the walk ends (or
 *     goes on, libunwind) at the signal frame, without a fault;
 *   - a stack deeper than the bound: exactly the bound;
 *   - through a module's frame (unit_walk_plugin.so, no frame pointer),
 *     the module unloaded and loaded again 50 times while two threads
 *     walk (the layouts' table emptied when the unload count moves): the
 *     module's frame each time, no fault.
 * Where the walk follows frame pointers (a build without libunwind) the
 * chain is not checked (it stops in uslub's own frames, built without
 * them), only that each walk ends inside its bound.
 */
#define _GNU_SOURCE
#include "cache/internal.h"
#include "unit.h"
#include <alloca.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

unsigned int _uslub_stacks_walk(uintptr_t *pcs, unsigned int max);

#define MAXF 128
struct chain {
	uintptr_t ret[6];       /* the return address into each level's caller */
	uintptr_t pcs[MAXF];
	unsigned int n;
};
static int sink;                /* work after each call: no tail calls */
/* relaxed atomics: walker threads run the same frames (TSan) */
#define SINK(v) __atomic_fetch_add(&sink, (v), __ATOMIC_RELAXED)

#define RA() ((uintptr_t)__builtin_return_address(0))
#ifdef __clang__
#define NOFP __attribute__((noinline))          /* -O2 keeps none */
#else
#define NOFP __attribute__((noinline, optimize("omit-frame-pointer")))
#endif

static __attribute__((noinline)) void leaf(struct chain *c)
{
	c->ret[5] = RA();
	c->n = _uslub_stacks_walk(c->pcs, MAXF);
	SINK(1);
}

static NOFP void big(struct chain *c)
{
	volatile char buf[16384];
	c->ret[4] = RA();
	buf[0] = 1;
	buf[sizeof(buf) - 1] = 2;
	leaf(c);
	SINK(buf[100]);
}

/* rbp saved, then overwritten: dyn()'s CFA is its rbp */
static NOFP void clobber(struct chain *c)
{
	c->ret[3] = RA();
#ifdef __x86_64__
	__asm__ volatile("xor %%ebp, %%ebp" : : : "rbp");
#endif
	big(c);
	SINK(1);
}

static __attribute__((noinline)) void dyn(struct chain *c, int k)
{
	c->ret[2] = RA();
	char *p = alloca((size_t)k);
	memset(p, 0, (size_t)k);
	__asm__ volatile("" : : "r"(p) : "memory");
	clobber(c);
	SINK(p[k - 1]);
}

static NOFP void plain(struct chain *c, int k)
{
	c->ret[1] = RA();
	dyn(c, k);
	SINK(1);
}

static bool in_libc(uintptr_t a)
{
	Dl_info info;
	return dladdr((void *)a, &info) && info.dli_fname && strstr(info.dli_fname, "libc.so");
}

static void check_chain(const struct chain *c, bool whole, const char *where)
{
	CHECK(c->n > 0 && c->n < MAXF);
	if (!whole)
		return;
	unsigned int i = 0;
	while (i < c->n && c->pcs[i] != c->ret[5])
		i++;
	CHECK(i < c->n);                        /* the leaf */
	CHECK(i + 5 < c->n);
	for (int k = 4; k >= 1; k--)
		CHECK_EQ(c->pcs[i + 5 - (unsigned int)k], c->ret[k]);
	bool libc = false;
	for (unsigned int j = i + 5; j < c->n; j++)
		libc |= in_libc(c->pcs[j]);
	if (!libc)
		fprintf(stderr, "%s: no frame in libc below the chain\n", where);
	CHECK(libc);
}

static void *thread_fn(void *arg)
{
	plain(arg, 100);
	return NULL;
}

static struct chain sig;
static void handler(int s)
{
	leaf(&sig);
}

static __attribute__((noinline)) unsigned int deep(int d, uintptr_t *pcs)
{
	unsigned int n = d ? deep(d - 1, pcs) : _uslub_stacks_walk(pcs, 64);
	SINK(1);
	return n;
}

/* through the module: its return address follows the callback's */
typedef size_t (*plugin_call_fn)(size_t (*)(void *), void *);

static size_t through_cb(void *arg)
{
	struct chain *c = arg;
	c->ret[0] = RA();                       /* into the module */
	leaf(c);
	return 1;
}

static int stop;                /* atomics: the walker threads read it */
static void *walker(void *arg)
{
	uintptr_t pcs[64];
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
		CHECK(deep(5, pcs) >= 1);
	return NULL;
}

static void plugin_cycles(bool whole)
{
	char path[4096];
	ssize_t len = readlink("/proc/self/exe", path, sizeof(path) - 40);
	CHECK(len > 0);
	path[len] = 0;
	strcpy(strrchr(path, '/') + 1, "unit_walk_plugin.so");
	pthread_t th[2];
	for (int k = 0; k < 2; k++)
		CHECK(!pthread_create(&th[k], NULL, walker, NULL));
	static struct chain p;
	for (int r = 0; r < 50; r++) {
		void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		CHECK(h);
		plugin_call_fn call = (plugin_call_fn)(uintptr_t)dlsym(h, "walk_plugin_call");
		CHECK(call);
		memset(&p, 0, sizeof(p));
		call(through_cb, &p);
		CHECK(p.n > 0 && p.n < MAXF);
		if (whole) {
			unsigned int i = 0;
			while (i < p.n && p.pcs[i] != p.ret[5])
				i++;
			CHECK(i + 1 < p.n);
			CHECK_EQ(p.pcs[i + 1], p.ret[0]);
		}
		CHECK(!dlclose(h));
		uintptr_t pcs[64];
		for (int w = 0; w < 70; w++)    /* past this thread's unload check */
			CHECK(deep(3, pcs) >= 1);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int k = 0; k < 2; k++)
		CHECK(!pthread_join(th[k], NULL));
}

int main(void)
{
	if (uslub_profiling_enabled() != 2) {
		fprintf(stderr, "needs USLUB_PROFILING=sample:1\n");
		return 77;
	}
	bool whole = _uslub_stacks_unwinder();
	static struct chain c, t;
	for (int r = 0; r < 2; r++) {           /* parsed, then from the table */
		memset(&c, 0, sizeof(c));
		plain(&c, 200);
		check_chain(&c, whole, "main");
	}
	pthread_t th;
	for (int r = 0; r < 2; r++) {
		memset(&t, 0, sizeof(t));
		CHECK(!pthread_create(&th, NULL, thread_fn, &t));
		CHECK(!pthread_join(th, NULL));
		check_chain(&t, whole, "thread");
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	CHECK(!sigaction(SIGUSR1, &sa, NULL));
	CHECK(!raise(SIGUSR1));
	CHECK(sig.n > 0 && sig.n < MAXF);
	unsigned int i = 0;
	while (i < sig.n && sig.pcs[i] != sig.ret[5])
		i++;
	CHECK(i < sig.n || !whole);             /* the handler's frame */
	uintptr_t pcs[64];
	unsigned int n = deep(100, pcs);
	CHECK(whole ? n == 64 : n >= 1);
	plugin_cycles(whole);
	printf("PASS: walks through frames without frame pointers, threads, a signal handler, "
	       "the bound, a module unloaded and loaded again\n");
	return 0;
}
