/* ring2_target.c - the program of integration_ring_more (the rest of issue
 * 9's ring collector: logs, exact value means, CPU samples tagged at any
 * depth, --binary targets), one command per line on stdin, one JSON line
 * per answer on stdout:
 *
 *   pid          {"pid"}
 *   logs N       QPROF_LOG("msg %d", i) for i in 0..N-1, then one message of
 *                300 characters (cut to 255): {"logs": N + 1}
 *   values N     QPROF_VALUE("price", 1000 + i / 4) for i in 0..N-1 (their exact
 *                mean: 1000 + (N - 1) / 8): {"values": N, "mean": ...}
 *   nest S       one thread, S seconds: level_0 .. level_7, each a scope ("L0" ..
 *                "L7") around burn_K (the same work at every level) and the next
 *                level: {"loops"}
 *   scopes N     N x { QPROF_SCOPE("bin_scope"), QPROF_MARK("bin_mark") }: {"scopes": N}
 *   flat S       two threads, S seconds: empty "flat" scopes flat out (tens of
 *                millions a second): {"scopes"}
 *   quit
 *
 * --burst N (argument): N x "bin_scope" and "bin_mark" at once at start,
 * before the first command (before qprofd may have adopted the process). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <qprof/qprof.h>

static volatile uint64_t sink;

#define BURN(k)                                                              \
	static __attribute__((noinline)) void burn_##k(void)                 \
	{                                                                    \
		uint64_t i, x = sink;                                        \
		for (i = 0; i < 20000; i++)                                  \
			x = x * 6364136223846793005ull + 1442695040888963407ull; \
		sink = x;                                                    \
	}
BURN(0)
BURN(1)
BURN(2)
BURN(3)
BURN(4)
BURN(5)
BURN(6)
BURN(7)

static __attribute__((noinline)) void level_7(void)
{
	QPROF_SCOPE("L7");
	burn_7();
}
#define LEVEL(k, next)                                                       \
	static __attribute__((noinline)) void level_##k(void)                \
	{                                                                    \
		QPROF_SCOPE("L" #k);                                         \
		burn_##k();                                                  \
		level_##next();                                              \
	}
LEVEL(6, 7)
LEVEL(5, 6)
LEVEL(4, 5)
LEVEL(3, 4)
LEVEL(2, 3)
LEVEL(1, 2)
LEVEL(0, 1)

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

struct nest {
	double seconds;
	long loops;
};

static void *nest_thread(void *arg)
{
	struct nest *n = arg;
	double end = now_s() + n->seconds;

	while (now_s() < end) {
		level_0();
		n->loops++;
	}
	return NULL;
}

struct flat {
	pthread_t th;
	double seconds;
	long scopes;
};

static void *flat_thread(void *arg)
{
	struct flat *f = arg;
	double end = now_s() + f->seconds;
	long i;

	while (now_s() < end) {
		for (i = 0; i < 4096; i++) {
			QPROF_SCOPE("flat");
		}
		f->scopes += 4096;
	}
	return NULL;
}

static void scopes(long n)
{
	long i;

	for (i = 0; i < n; i++) {
		QPROF_SCOPE("bin_scope");
		QPROF_MARK("bin_mark");
	}
}

int main(int argc, char **argv)
{
	char line[128];

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "--burst"))
		scopes(atol(argv[2]));
	while (fgets(line, sizeof(line), stdin)) {
		long n = 0;
		double s = 0;

		if (!strncmp(line, "pid", 3)) {
			printf("{\"pid\": %d}\n", getpid());
		} else if (sscanf(line, "logs %ld", &n) == 1) {
			char big[301];
			long i;

			for (i = 0; i < n; i++)
				QPROF_LOG("msg %ld", i);
			memset(big, 'z', 300);
			big[300] = '\0';
			QPROF_LOG("%s", big);
			printf("{\"logs\": %ld}\n", n + 1);
		} else if (sscanf(line, "values %ld", &n) == 1) {
			long i;

			for (i = 0; i < n; i++)
				QPROF_VALUE("price", 1000.0 + (double)i / 4.0);
			printf("{\"values\": %ld, \"mean\": %.17g}\n", n, 1000.0 + (double)(n - 1) / 8.0);
		} else if (sscanf(line, "nest %lf", &s) == 1) {
			struct nest w = { .seconds = s };
			pthread_t t;

			pthread_create(&t, NULL, nest_thread, &w);
			pthread_join(t, NULL);
			printf("{\"loops\": %ld}\n", w.loops);
		} else if (sscanf(line, "flat %lf", &s) == 1) {
			struct flat f[2] = { { .seconds = s }, { .seconds = s } };

			pthread_create(&f[0].th, NULL, flat_thread, &f[0]);
			pthread_create(&f[1].th, NULL, flat_thread, &f[1]);
			pthread_join(f[0].th, NULL);
			pthread_join(f[1].th, NULL);
			printf("{\"scopes\": %ld}\n", f[0].scopes + f[1].scopes);
		} else if (sscanf(line, "scopes %ld", &n) == 1) {
			scopes(n);
			printf("{\"scopes\": %ld}\n", n);
		} else if (!strncmp(line, "quit", 4)) {
			break;
		}
	}
	return 0;
}
