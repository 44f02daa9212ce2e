/*
 * tls_module: a module with thread-local variables for malloc_dlclose_tls.
 * It is dlopen()ed after startup, so its TLS block is dynamic: glibc
 * allocates one per thread with malloc() on the thread's first access
 * (__tls_get_addr) and frees them, after dlclose(), from inside a later
 * __tls_get_addr of each thread (the DTV update). The block is about
 * TLS_MODULE_BYTES, one kmalloc size class the test then allocates from.
 */
#define TLS_MODULE_BYTES 100

__thread char tls_bytes[TLS_MODULE_BYTES - 2 * sizeof(int)];
__thread int tls_count;
__thread int tls_sum = 7;          /* an initialized part too (.tdata) */

int tls_touch(int v);
int tls_touch(int v)
{
	tls_bytes[(unsigned int)v % sizeof(tls_bytes)] = (char)v;
	tls_count++;
	tls_sum += v;
	return tls_sum + tls_count + tls_bytes[0];
}

int tls_block_bytes(void);
int tls_block_bytes(void)
{
	return TLS_MODULE_BYTES;
}
