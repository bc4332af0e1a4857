/* redzone_target.c - a leaf loop that keeps data in the x86-64 red zone
 * when its marker allows it: twenty values live across the loop and one
 * QPROF_MARK in it. Built with the ABI-1 header (a bare nop5: gcc -O2
 * keeps the loop's values below %rsp) and with the current one (which never
 * lets the compiler do that). Prints {"pid": N}, waits for SIGUSR1, runs the
 * loop, prints {"result": R, "iterations": N}, waits for SIGUSR2.
 * A uprobe that the kernel optimised into a call on the nop5 overwrites the
 * red zone: the result is wrong, or the loop never ends.
 *   redzone_target ITERATIONS */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <qprof/qprof.h>

static volatile uint64_t seed[20] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20 };

__attribute__((noinline)) static uint64_t leaf(uint64_t n)
{
	uint64_t v0 = seed[0], v1 = seed[1], v2 = seed[2], v3 = seed[3], v4 = seed[4], v5 = seed[5],
		 v6 = seed[6], v7 = seed[7], v8 = seed[8], v9 = seed[9], v10 = seed[10], v11 = seed[11],
		 v12 = seed[12], v13 = seed[13], v14 = seed[14], v15 = seed[15], v16 = seed[16],
		 v17 = seed[17], v18 = seed[18], v19 = seed[19];

	for (uint64_t i = 0; i < n; i++) {
		v0 += v1 * i; v1 ^= v2 + i; v2 += v3; v3 ^= v4; v4 += v5 * 3; v5 ^= v6; v6 += v7;
		v7 ^= v8; v8 += v9; v9 ^= v10; v10 += v11; v11 ^= v12; v12 += v13; v13 ^= v14;
		v14 += v15; v15 ^= v16; v16 += v17; v17 ^= v18; v18 += v19; v19 ^= v0;
		QPROF_MARK("rz_mark");
	}
	return v0 + v1 + v2 + v3 + v4 + v5 + v6 + v7 + v8 + v9 + v10 + v11 + v12 + v13 + v14 + v15 +
	       v16 + v17 + v18 + v19;
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("{\"pid\": %d}\n", (int)getpid());
	fflush(stdout);
	sigdelset(&set, SIGUSR2);
	sigwait(&set, &sig);
	printf("{\"result\": %llu, \"iterations\": %llu}\n", (unsigned long long)leaf(n),
	       (unsigned long long)n);
	fflush(stdout);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	sigwait(&set, &sig);
	return 0;
}
