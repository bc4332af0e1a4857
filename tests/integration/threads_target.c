/* threads_target.c - the workload of integration_threads: three
 * named threads, each in a known function: one sleeping (nanosleep), one
 * blocked in pthread_cond_wait, one spinning and counting its loops. The
 * main thread waits on stdin; "r" prints the spinner's count, EOF ends it.
 * Built -O2 with frame pointers (integration_threads) and without them
 * (integration_threads_cfi: the stacks unwound by the CFI, exact frames).
 * One qprof marker makes it attachable. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <qprof/qprof.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static volatile uint64_t spins;
static volatile int quit;

/* A stale return address: qt_stale_caller's call leaves one on the stack
 * below the sleeper's frame, where qt_sleeping_here's unwritten buffer
 * then lies. A stack scan reports it (a word right after a call); a walk
 * by frame pointers or by the CFI does not. */
__attribute__((noinline)) void qt_stale_callee(volatile char *b)
{
	b[0]++;
}

__attribute__((noinline)) void qt_stale_caller(void)
{
	volatile char b[64];

	qt_stale_callee(b);
}

__attribute__((noinline)) void qt_sleeping_here(void)
{
	/* long sleeps: a thread woken every 200 ms was seen runnable ('R')
	 * by a request under load; main cancels it at the end */
	struct timespec ts = { 60, 0 };
	volatile char pad[1024] __attribute__((unused));

	pad[0] = 0;
	while (!quit)
		nanosleep(&ts, NULL);
}

__attribute__((noinline)) void qt_waiting_here(void)
{
	pthread_mutex_lock(&mu);
	while (!quit)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

__attribute__((noinline)) void qt_spinning_here(void)
{
	while (!quit)
		spins++;
}

static void *sleeper(void *a)
{
	(void)a;
	qt_stale_caller();
	qt_sleeping_here();
	return NULL;
}

static void *waiter(void *a)
{
	(void)a;
	qt_waiting_here();
	return NULL;
}

static void *spinner(void *a)
{
	(void)a;
	qt_spinning_here();
	return NULL;
}

int main(void)
{
	pthread_t t[3];
	char line[64];

	pthread_create(&t[0], NULL, sleeper, NULL);
	pthread_setname_np(t[0], "qt-sleeper");
	pthread_create(&t[1], NULL, waiter, NULL);
	pthread_setname_np(t[1], "qt-waiter");
	pthread_create(&t[2], NULL, spinner, NULL);
	pthread_setname_np(t[2], "qt-spinner");
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		QPROF_MARK("threads_target_command");
		if (line[0] == 'r') {
			printf("%llu\n", (unsigned long long)spins);
			fflush(stdout);
		}
	}
	quit = 1;
	pthread_cancel(t[0]);	/* nanosleep is a cancellation point */
	pthread_mutex_lock(&mu);
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	return 0;
}
