/* bench_common.h - shared by the benchmark loops: the unit of work, the clock,
 * argument parsing and the "wait for the start file" handshake that lets a
 * tracer attach before the timed part begins. */
#ifndef QPROF_BENCH_COMMON_H
#define QPROF_BENCH_COMMON_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A few dependent integer operations: small, not foldable by the compiler,
 * identical in every benchmark. */
static inline __attribute__((always_inline)) uint64_t bench_work(uint64_t x, uint64_t i)
{
	x = x * 6364136223846793005ull + i;
	return x ^ (x >> 29);
}

static inline uint64_t bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t bench_parse_count(const char *s)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || v == 0) {
		fprintf(stderr, "bad iteration count '%s'\n", s);
		exit(2);
	}
	return v;
}

/* Block until PATH exists (polled every millisecond). */
static inline void bench_wait_for_file(const char *path)
{
	const struct timespec ms = { 0, 1000000 };
	while (access(path, F_OK) != 0)
		nanosleep(&ms, NULL);
}

/* Usage shared by scope_loop and sdt_loop: PROG N [--start-file PATH] */
static inline uint64_t bench_timed_args(int argc, char **argv, const char **start_file)
{
	*start_file = NULL;
	if (argc == 4 && strcmp(argv[2], "--start-file") == 0)
		*start_file = argv[3];
	else if (argc != 2) {
		fprintf(stderr,
			"usage: %s N [--start-file PATH]\n"
			"  runs N iterations and prints ns_per_iter; with --start-file it\n"
			"  prints 'ready PID' and waits for PATH to exist before starting\n",
			argv[0]);
		exit(2);
	}
	return bench_parse_count(argv[1]);
}

static inline void bench_ready(const char *start_file)
{
	if (!start_file)
		return;
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	bench_wait_for_file(start_file);
}

static inline void bench_report(const char *name, uint64_t n, uint64_t ns, uint64_t result)
{
	printf("%s iterations %llu ns_per_iter %.3f result %llx\n", name,
	       (unsigned long long)n, (double)ns / (double)n, (unsigned long long)result);
}

#endif
