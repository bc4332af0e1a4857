/* burst_target.c - 1000 new (scope, parent) pairs hit in one burst: 500
 * scope functions (made by the macros below, s000..s499), each called under
 * two parent scopes (burst_a, burst_b), three times: 3000 scope exits
 * within milliseconds of the go. Protocol of scope_target.c: prints
 * {"pid": N}, waits for SIGUSR1, works, prints {"functions", "parents",
 * "reps", "exits"}, waits for SIGUSR2. Each further SIGUSR1 (for the poll
 * bench) calls the first --touch K functions once more under burst_a and
 * prints {"touched": K}.
 *
 * usage: burst_target [--reps R] [--touch K] */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <qprof/qprof.h>

#define NFUNCS 500

static volatile unsigned long sink;

#define S(n)                                                    \
	static __attribute__((noinline)) void s##n(void)        \
	{                                                       \
		QPROF_SCOPE("s" #n);                            \
		sink++;                                         \
	}
#define S10(n) S(n##0) S(n##1) S(n##2) S(n##3) S(n##4) S(n##5) S(n##6) S(n##7) S(n##8) S(n##9)
#define S100(n) S10(n##0) S10(n##1) S10(n##2) S10(n##3) S10(n##4) \
		S10(n##5) S10(n##6) S10(n##7) S10(n##8) S10(n##9)
S100(0) S100(1) S100(2) S100(3) S100(4)

#define P(n) s##n,
#define P10(n) P(n##0) P(n##1) P(n##2) P(n##3) P(n##4) P(n##5) P(n##6) P(n##7) P(n##8) P(n##9)
#define P100(n) P10(n##0) P10(n##1) P10(n##2) P10(n##3) P10(n##4) \
		P10(n##5) P10(n##6) P10(n##7) P10(n##8) P10(n##9)
static void (*const funcs[NFUNCS])(void) = { P100(0) P100(1) P100(2) P100(3) P100(4) };

static __attribute__((noinline)) void under_a(int k)
{
	QPROF_SCOPE("burst_a");
	for (int i = 0; i < k; i++)
		funcs[i]();
}

static __attribute__((noinline)) void under_b(int k)
{
	QPROF_SCOPE("burst_b");
	for (int i = 0; i < k; i++)
		funcs[i]();
}

static volatile sig_atomic_t go, leave;
static void on_usr1(int s) { go = 1; }
static void on_usr2(int s) { leave = 1; }

int main(int argc, char **argv)
{
	int reps = 3, touch = NFUNCS, r, i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--touch") && i + 1 < argc)
			touch = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: %s [--reps R] [--touch K]\n", argv[0]);
			return 2;
		}
	}
	if (reps < 1 || touch < 0 || touch > NFUNCS) {
		fprintf(stderr, "burst_target: --reps >= 1, --touch 0..%d\n", NFUNCS);
		return 2;
	}
	signal(SIGUSR1, on_usr1);
	signal(SIGUSR2, on_usr2);
	printf("{\"pid\": %d}\n", (int)getpid());
	fflush(stdout);
	while (!go)
		usleep(1000);
	go = 0;
	for (r = 0; r < reps; r++) {
		under_a(NFUNCS);
		under_b(NFUNCS);
	}
	printf("{\"functions\": %d, \"parents\": 2, \"reps\": %d, \"exits\": %d}\n", NFUNCS, reps,
	       NFUNCS * 2 * reps);
	fflush(stdout);
	while (!leave) {
		if (go) {
			go = 0;
			under_a(touch);
			printf("{\"touched\": %d}\n", touch);
			fflush(stdout);
		}
		usleep(1000);
	}
	return 0;
}
