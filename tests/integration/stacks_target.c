/* stacks_target.c - a program whose CPU samples keep landing on new stacks:
 * two threads walk random paths of DEPTH calls through path_a and path_b
 * (2^DEPTH distinct stacks) and spin at the end of each. It prints {"pid": N}
 * and works until it is killed. (One QPROF_MARK: qprofd attaches only to
 * programs with qprof probes.) Built -O1 -fno-inline -fno-omit-frame-pointer
 * -fno-optimize-sibling-calls, so every call keeps its frame. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include <qprof/qprof.h>

#define DEPTH 20

static volatile uint64_t sink;

__attribute__((noinline)) static void leaf(void)
{
	uint64_t x = sink;

	for (unsigned int i = 0; i < 50000u; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink = x;
}

__attribute__((noinline)) void path_a(uint32_t bits, int d);
__attribute__((noinline)) void path_b(uint32_t bits, int d);

static inline void step(uint32_t bits, int d)
{
	if (!d)
		leaf();
	else if (bits & 1)
		path_a(bits >> 1, d - 1);
	else
		path_b(bits >> 1, d - 1);
}

__attribute__((noinline)) void path_a(uint32_t bits, int d)
{
	step(bits, d);
	sink++;
}

__attribute__((noinline)) void path_b(uint32_t bits, int d)
{
	step(bits, d);
	sink += 2;
}

static void *walk(void *arg)
{
	uint64_t x = (uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1;

	for (;;) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		step((uint32_t)x & ((1u << DEPTH) - 1), DEPTH);
	}
	return NULL;
}

int main(void)
{
	pthread_t t;

	printf("{\"pid\": %d}\n", (int)getpid());
	fflush(stdout);
	QPROF_MARK("stacks_target_start");
	pthread_create(&t, NULL, walk, (void *)1);
	walk((void *)2);
	return 0;
}
