/* tramp_nofp.c - CPU samples inside the kernel's [uprobes-trampoline]
 * (built -O2 -fomit-frame-pointer): main -> run -> hot_path, which opens
 * and closes the qprof scope "hot" around a few hundred nanoseconds of work,
 * over and over. Under the BPF collector each scope's entry and exit is a
 * uprobe on a nop5, which the kernel turns into a call to the trampoline
 * page after its first hit: a good part of the CPU time is then spent in
 * that page and in its uprobe system call. Prints {"pid": N}, waits for
 * SIGUSR1, runs until SIGUSR2, prints {"rounds": N} and exits. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include <qprof/qprof.h>

#define NOINLINE __attribute__((noinline, noipa))

static volatile sig_atomic_t go, leave;
static void on_usr1(int s) { (void)s; go = 1; }
static void on_usr2(int s) { (void)s; leave = 1; }
static volatile uint64_t sink;

NOINLINE void small_work(void)
{
	uint64_t x = sink;

	for (int i = 0; i < 200; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink = x;
}

NOINLINE uint64_t hot_path(void)
{
	uint64_t n = 0;

	while (!leave) {
		QPROF_SCOPE("hot");
		small_work();
		n++;
	}
	return n;
}

NOINLINE uint64_t run(void)
{
	return hot_path();
}

int main(void)
{
	uint64_t n;

	signal(SIGUSR1, on_usr1);
	signal(SIGUSR2, on_usr2);
	printf("{\"pid\": %d}\n", (int)getpid());
	fflush(stdout);
	while (!go)
		pause();
	n = run();
	printf("{\"rounds\": %llu}\n", (unsigned long long)n);
	fflush(stdout);
	return 0;
}
