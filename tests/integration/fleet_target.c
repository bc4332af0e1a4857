/* fleet_target.c - a known workload for the fleet tests (pprof labels,
 * OTLP export, debuginfod). Prints {"pid": N}, waits for SIGUSR1, then
 * runs two named threads until SIGUSR2:
 *
 *   fl_worker   inside scope "session" for good, spins in work_one,
 *               work_two and work_three (1:2:3 of its CPU time), the third
 *               inside scope "on_tick": a sample there has the scopes
 *               on_tick (innermost) and session open. Each work_two runs
 *               inside a span "order" (QPROF_SPAN_BEGIN/END on this
 *               thread) of id FL_SPAN_BASE + n, n counting from 0: its
 *               samples have that span open, the others none.
 *   fl_sleeper  sleeps 2 ms at a time inside scope "wait_io" (off-CPU time
 *               under a scope), using next to no CPU; in wait_io it also
 *               frees the oldest of its 8 blocks of SLEEPER_BLOCK bytes and
 *               allocates a new one (7 or 8 live: heap labels); every
 *               other call (n even, n counting its calls from 0) is
 *               inside a span "io" of id FL_IO_BASE + n: its off-CPU
 *               time has that span open, and the blocks of the even
 *               slots (3 or 4 live) were allocated inside it.
 *
 * The main thread allocates MAIN_BLOCK bytes outside any scope, keeps
 * them, and waits. Built -O1 -g -fno-inline -fno-omit-frame-pointer.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <qprof/qprof.h>

static volatile sig_atomic_t go, leave;
static void on_usr1(int s) { (void)s; go = 1; }
static void on_usr2(int s) { (void)s; leave = 1; }

static volatile uint64_t sink;

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
	QPROF_SCOPE("on_tick");
	SPIN(3);
}

#define FL_SPAN_BASE 0x51ab000000000000ull
static const char order_span[] = "order";

__attribute__((noinline)) static void worker_loop(void)
{
	uint64_t n = 0;

	QPROF_SCOPE("session");
	while (!leave) {
		work_one();
		QPROF_SPAN_BEGIN(order_span, FL_SPAN_BASE + n);
		work_two();
		QPROF_SPAN_END(order_span, FL_SPAN_BASE + n);
		n++;
		work_three();
	}
}

static void *worker(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "fl_worker");
	worker_loop();
	return NULL;
}

/* Both above qprofd's default heap interval (512 KiB): every one is
 * sampled and weighs its size exactly. */
#define SLEEPER_BLOCK 600000
#define MAIN_BLOCK 700000

static void *volatile blocks[8];
static unsigned int nblock;
static void *volatile main_block;

#define FL_IO_BASE 0x10b0000000000000ull
static const char io_span[] = "io";

__attribute__((noinline)) void wait_io(void)
{
	struct timespec ts = { 0, 2000000 };
	unsigned int n = nblock++, i = n % 8;

	QPROF_SCOPE("wait_io");
	if (n % 2 == 0) {	/* every other call inside a span */
		QPROF_SPAN_BEGIN(io_span, FL_IO_BASE + n);
	}
	free(blocks[i]);
	blocks[i] = malloc(SLEEPER_BLOCK);
	if (blocks[i])
		((volatile char *)blocks[i])[0] = 1;
	nanosleep(&ts, NULL);
	if (n % 2 == 0) {
		QPROF_SPAN_END(io_span, FL_IO_BASE + n);
	}
}

static void *sleeper(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "fl_sleeper");
	while (!leave)
		wait_io();
	return NULL;
}

int main(void)
{
	pthread_t a, b;

	signal(SIGUSR1, on_usr1);
	signal(SIGUSR2, on_usr2);
	printf("{\"pid\": %d}\n", (int)getpid());
	fflush(stdout);
	while (!go)
		usleep(1000);
	main_block = malloc(MAIN_BLOCK);
	if (!main_block)
		return 1;
	if (pthread_create(&a, NULL, worker, NULL) || pthread_create(&b, NULL, sleeper, NULL))
		return 1;
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	printf("{\"done\": true}\n");
	return 0;
}
