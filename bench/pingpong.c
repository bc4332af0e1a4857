/* pingpong.c - the context-switch benchmark of bench/offcpu.sh: two threads
 * pinned to one CPU hand a byte back and forth through two pipes, so each
 * hand-over is one context switch from a thread of this process to the
 * other. Prints "pid N", waits for SIGUSR1 (time for qprofd to attach),
 * makes ROUNDS round trips (both threads SCHED_FIFO when allowed), prints "ns_per_switch X", then exits; with
 * "idle" instead of ROUNDS it only waits (a target that does nothing). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <qprof/qprof.h>

static volatile sig_atomic_t go;
static void on_usr1(int s) { go = 1; }

static int ab[2], ba[2];
static long rounds;

/* CPU 0, and SCHED_FIFO when allowed: the machine's other work then
 * does not come between the two threads (the figure is the switch's) */
static void pin0(void)
{
	struct sched_param sp = { .sched_priority = 20 };
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof(set), &set);
	sched_setscheduler(0, SCHED_FIFO, &sp);
}

static void *pong(void *arg)
{
	char c;

	(void)arg;
	pin0();
	for (long i = 0; i < rounds; i++) {
		if (read(ab[0], &c, 1) != 1 || write(ba[1], &c, 1) != 1)
			break;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct timespec t0, t1;
	pthread_t t;
	char c = 'x';

	if (argc != 2) {
		fprintf(stderr, "usage: pingpong ROUNDS | idle\n");
		return 2;
	}
	signal(SIGUSR1, on_usr1);
	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	if (!strcmp(argv[1], "idle")) {
		QPROF_SCOPE("idle");
		for (;;)
			pause();
	}
	rounds = atol(argv[1]);
	while (!go)
		usleep(1000);
	if (pipe(ab) || pipe(ba))
		return 1;
	pin0();
	pthread_create(&t, NULL, pong, NULL);
	usleep(10000);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	{
		QPROF_SCOPE("pingpong");	/* the switches happen inside a scope */
		for (long i = 0; i < rounds; i++)
			if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
				return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	pthread_join(t, NULL);
	printf("ns_per_switch %.1f\n",
	       ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / (2.0 * (double)rounds));
	return 0;
}
