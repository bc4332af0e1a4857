/* srcline_target.c - a -O2 -g workload for source lines and inlined frames:
 * burn() spends nearly all its time in mix(), a static inline function the
 * compiler inlines into it. test_srcline.py finds the lines marked below
 * in this file and expects them in the profiles: mix as an inlined frame
 * of burn at its loop's two lines, burn at the line of the call. Prints its pid, waits for SIGUSR1, spins until
 * SIGUSR2. Keep the marked lines' code on those lines. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include <qprof/qprof.h>

static volatile sig_atomic_t go, leave;
static void on_usr1(int s) { go = 1; }
static void on_usr2(int s) { leave = 1; }

static volatile uint64_t sink;

/* A call out of burn() gives it a frame of its own (a leaf that uses no
 * stack gets none with GCC, and its caller would be missing). */
__attribute__((noipa)) void keep(uint64_t v)
{
	sink = v;
}

static inline uint64_t mix(uint64_t x)
{
	for (unsigned int i = 0; i < 4096; i++) /* LINE_MIX_LOOP */
		x = (x ^ (x >> 29)) * 6364136223846793005ull + i; /* LINE_MIX_BODY */
	return x;
}

__attribute__((noipa)) uint64_t burn(uint64_t seed)
{
	uint64_t acc = seed;

	for (unsigned int j = 0; j < 64; j++)
		acc += mix(acc ^ j); /* LINE_BURN_CALL */
	keep(acc);
	return acc;
}

int main(void)
{
	signal(SIGUSR1, on_usr1);
	signal(SIGUSR2, on_usr2);
	printf("{\"pid\": %d}\n", (int)getpid());
	fflush(stdout);
	while (!go)
		usleep(1000);
	while (!leave) {
		QPROF_SCOPE("srcline_burn");
		burn(sink);
	}
	printf("{\"done\": true}\n");
	return 0;
}
