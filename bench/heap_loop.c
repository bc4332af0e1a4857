/* heap_loop.c - the cost of malloc/free (bench/heap.sh): prints "ready PID",
 * waits for its start file, then times N pairs of malloc(size) and free,
 * sizes cycling through 16 .. 4096 bytes, and prints
 * "heap_loop pairs N elapsed_ns T ns_per_pair X". A qprof marker lets
 * qprofd attach to it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <qprof/qprof.h>

static void *volatile sink;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) static void pairs(long n)
{
	for (long i = 0; i < n; i++) {
		char *p = malloc(16 + (size_t)(i * 64) % 4081);

		p[0] = (char)i;
		sink = p;
		free(p);
	}
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 2000000;
	const char *start = argc > 2 ? argv[2] : NULL;
	uint64_t t0, t1;

	QPROF_MARK("heap_loop_start");
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	while (start && access(start, F_OK))
		usleep(10000);
	t0 = now_ns();
	pairs(n);
	t1 = now_ns();
	printf("heap_loop pairs %ld elapsed_ns %llu ns_per_pair %.1f\n", n, (unsigned long long)(t1 - t0),
	       (double)(t1 - t0) / (double)n);
	return 0;
}
