/* sf_prog.c - symbolizer fixture. Prints one line, "PID ALPHA BETA ANON
 * GAMMA VARIANT" (runtime addresses of two noinline functions, of an
 * anonymous mapping and of a shared-library function when built with
 * SF_WITH_LIB, else 0), then waits for EOF on stdin so that the test can
 * read /proc/PID/maps while it lives. Built PIE, non-PIE, stripped with its
 * symbols in a separate debug file, and with -rdynamic. */
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef SF_VARIANT
#define SF_VARIANT 0
#endif

volatile int sf_sink;

__attribute__((noinline)) int sf_alpha(int x)
{
	int i, s = 0;

	for (i = 0; i < x; i++)
		s += i * sf_sink + SF_VARIANT;
	return s + 1;
}

__attribute__((noinline)) int sf_beta(int x)
{
	int i, s = 1;

	for (i = 0; i < x; i++)
		s = s * 3 + sf_sink;
	return s;
}

#ifdef SF_WITH_LIB
int sf_lib_gamma(int x);
#define SF_GAMMA ((uintptr_t)&sf_lib_gamma)
#else
#define SF_GAMMA ((uintptr_t)0)
#endif

int main(void)
{
	void *anon = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char buf[64];
	int r = 0;

	if (anon == MAP_FAILED)
		return 1;
	printf("%d %#lx %#lx %#lx %#lx %d\n", (int)getpid(), (unsigned long)(uintptr_t)&sf_alpha,
	       (unsigned long)(uintptr_t)&sf_beta, (unsigned long)(uintptr_t)anon,
	       (unsigned long)SF_GAMMA, SF_VARIANT);
	fflush(stdout);
	while (read(0, buf, sizeof(buf)) > 0)
		;
	r = sf_alpha(3) + sf_beta(2);
#ifdef SF_WITH_LIB
	r += sf_lib_gamma(2);
#endif
	return r == 12345;
}
