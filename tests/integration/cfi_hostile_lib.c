/* cfi_hostile_lib.c - a library whose .eh_frame test_cfi_hostile.py
 * rewrites (truncated, cyclic, hostile rules) before cfi_hostile_host
 * loads it: its one function spins for the milliseconds asked. */
#include <stdint.h>
#include <time.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) uint64_t hostile_spin(unsigned int ms)
{
	uint64_t until = now_ns() + (uint64_t)ms * 1000000ull, x = 1;

	while (now_ns() < until)
		for (int i = 0; i < 1000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}
