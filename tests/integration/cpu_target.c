/* cpu_target.c - a program whose CPU time splits 1:2:3 between three
 * functions, the heaviest inside the qprof scope "heavy". It prints its pid
 * and the addresses of the three functions, waits for SIGUSR1, then spins
 * until SIGUSR2. Built -O1 -fno-inline -fno-omit-frame-pointer. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include <qprof/qprof.h>

static volatile sig_atomic_t go, leave;
static void on_usr1(int s) { go = 1; }
static void on_usr2(int s) { leave = 1; }

static volatile uint64_t sink;

/* Each function spins itself, so that the sampled IP is in it: GCC builds
 * a leaf that needs no stack without a frame, which hides the leaf's caller
 * from a frame-pointer walk (the leaf itself is always there). */
#define SPIN(units)                                                                \
	do {                                                                       \
		uint64_t x = sink;                                                 \
		for (unsigned int i = 0; i < (units) * 200000u; i++)               \
			x = x * 6364136223846793005ull + 1442695040888963407ull;   \
		sink = x;                                                          \
	} while (0)

__attribute__((noinline)) void work_one(void) { SPIN(1); }
__attribute__((noinline)) void work_two(void) { SPIN(2); }
__attribute__((noinline)) void work_three(void)
{
	QPROF_SCOPE("heavy");
	SPIN(3);
}

int main(void)
{
	signal(SIGUSR1, on_usr1);
	signal(SIGUSR2, on_usr2);
	printf("{\"pid\": %d, \"work_one\": \"%p\", \"work_two\": \"%p\", \"work_three\": \"%p\"}\n",
	       (int)getpid(), (void *)&work_one, (void *)&work_two, (void *)&work_three);
	fflush(stdout);
	while (!go)
		usleep(1000);
	while (!leave) {
		work_one();
		work_two();
		work_three();
	}
	printf("{\"done\": true}\n");
	return 0;
}
