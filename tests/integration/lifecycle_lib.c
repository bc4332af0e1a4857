/* lifecycle_lib.c - a shared library with a marked scope, for the fork test
 * of a --binary library: a process that maps it is adopted only by qprofd's
 * /proc rescan, so its first forks come before it is a target. */
#include <qprof/qprof.h>

void lc_lib_work(int n);

__attribute__((noinline)) void lc_lib_work(int n)
{
	int i;

	for (i = 0; i < n; i++) {
		QPROF_SCOPE("lib_work");
		__asm__ __volatile__("" ::: "memory");
	}
}
