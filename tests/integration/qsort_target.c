/* qsort_target.c - the unwinding test's workload: three callers whose CPU time splits
 * 1:2:3, nearly all of it inside glibc's qsort (built without frame
 * pointers on Debian) calling back into a comparator of ours. It has no
 * qprof marker: a CPU-only target. It prints its pid, waits for SIGUSR1,
 * sorts until SIGUSR2, then prints the thread CPU time each caller took
 * (the truth the profile is checked against). Built -O2 -g, once with
 * -fomit-frame-pointer and once with frame pointers. With an argument
 * ROUNDS (bench/unwind.sh) it stops by itself after that many rounds of the
 * three callers, and also prints the wall time they took. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define N 2048

static volatile sig_atomic_t go, leave;
static void on_usr1(int s) { (void)s; go = 1; }
static void on_usr2(int s) { (void)s; leave = 1; }

static uint64_t orig[N], work[N];
volatile uint64_t sink;

__attribute__((noinline)) int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* the length of the next sort: N/2 to N, at random (a fixed seed). A
 * program that repeats itself exactly has a period that a fixed sampling
 * rate locks onto for seconds at a time, which skews the shares by several
 * points (under perf as well); varied lengths keep the sampling phase
 * moving, and the truth is measured whatever they are */
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_random(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* K sorts of a prefix of the same input; the sum read after keeps the
 * qsort call from being a tail call (the caller must be on the stack
 * under qsort) */
#define SORTS(k)                                                       \
	do {                                                           \
		for (int r = 0; r < (k); r++) {                        \
			size_t n = N / 2 + next_random() % (N / 2 + 1); \
			memcpy(work, orig, n * sizeof(work[0]));       \
			qsort(work, n, sizeof(work[0]), cmp_u64);      \
			sink += work[n / 2] + (uint64_t)r;             \
		}                                                      \
	} while (0)

__attribute__((noinline, noclone)) void caller_one(void) { SORTS(1); }
__attribute__((noinline, noclone)) void caller_two(void) { SORTS(2); }
__attribute__((noinline, noclone)) void caller_three(void) { SORTS(3); }

static void (*const CALLERS[3])(void) = { caller_one, caller_two, caller_three };
static const int ORDERS[6][3] = { { 0, 1, 2 }, { 0, 2, 1 }, { 1, 0, 2 }, { 1, 2, 0 }, { 2, 0, 1 }, { 2, 1, 0 } };

static uint64_t thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	uint64_t x = 88172645463325252ull, ns[3] = { 0 }, t, t0;
	long rounds = argc > 1 ? atol(argv[1]) : 0, done = 0;
	int i;

	for (i = 0; i < N; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		orig[i] = x;
	}
	signal(SIGUSR1, on_usr1);
	signal(SIGUSR2, on_usr2);
	printf("{\"pid\": %d}\n", (int)getpid());
	fflush(stdout);
	while (!go)
		usleep(1000);
	t0 = mono_ns();
	while (!leave && (rounds <= 0 || done++ < rounds)) {
		/* and the three callers in a random order each round */
		uint64_t order = next_random() % 6;

		for (i = 0; i < 3; i++) {
			int k = ORDERS[order][i];

			t = thread_ns();
			CALLERS[k]();
			ns[k] += thread_ns() - t;
		}
	}
	t0 = mono_ns() - t0;
	printf("{\"caller_one\": %llu, \"caller_two\": %llu, \"caller_three\": %llu, \"elapsed_ns\": %llu}\n",
	       (unsigned long long)ns[0], (unsigned long long)ns[1], (unsigned long long)ns[2],
	       (unsigned long long)t0);
	fflush(stdout);
	return 0;
}
