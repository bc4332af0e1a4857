/* scope_target.c - the program the integration tests profile. It prints
 * its pid, waits for SIGUSR1 (so that qprofd is attached before the first
 * marker runs), runs a fixed workload of busy-wait scopes whose durations it
 * measures itself, prints those figures as JSON on stdout, then waits for
 * SIGUSR2 (or --exit) to exit.
 *
 *   --mode nested       2 threads x N iterations: outer{40us, inner{60us}},
 *                       a FUNC of 300 us every 10th, a BEGIN/END span of 50 us
 *   --mode misbehave    exactly known faults: 1 exit without enter, 1 scope
 *                       skipped out of order, 8 enters past the depth limit,
 *                       1 scope open at thread exit
 *   --rounds N          run the workload N times, each after its own SIGUSR1
 *
 * Built twice: scope_target_v2 (QP_DEPLOY_V2) has its code 301 bytes further on,
 * so that the deploy tests can replace one file with the other.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <qprof/qprof.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void busy(uint64_t ns)
{
	uint64_t end = now_ns() + ns;

	while (now_ns() < end)
		;
}

#ifdef QP_DEPLOY_V2
__asm__(".text\n.skip 301, 0x90\n");	/* emitted before the functions */
#endif

struct figures {
	uint64_t outer_n, outer_sum, inner_n, inner_sum, func_n, func_sum, span_n, span_sum;
};

static int iters = 2000;
static int realtime;	/* --rt: SCHED_FIFO workers, so that no other task preempts them
			 * between their own clock reads and the probes (a few ms there
			 * would separate the two figures being compared) */

static __attribute__((noinline)) void slow_function(struct figures *f)
{
	uint64_t t0 = now_ns();
	{
		QPROF_FUNC();
		busy(300000);
	}
	f->func_n++;
	f->func_sum += now_ns() - t0;
}

static void *nested_thread(void *arg)
{
	struct figures *f = arg;
	int i;

	if (realtime) {
		struct sched_param sp = { .sched_priority = 10 };

		pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp); /* best effort */
	}
	for (i = 0; i < iters; i++) {
		uint64_t t0 = now_ns(), t1, t2;
		{
			QPROF_SCOPE("outer");
			busy(40000);
			t1 = now_ns();
			{
				QPROF_SCOPE("inner");
				busy(60000);
			}
			t2 = now_ns();
		}
		f->outer_n++;
		f->outer_sum += now_ns() - t0;
		f->inner_n++;
		f->inner_sum += t2 - t1;
		if (i % 10 == 0)
			slow_function(f);
		t0 = now_ns();
		QPROF_SCOPE_BEGIN("span");
		busy(50000);
		QPROF_SCOPE_END("span");
		f->span_n++;
		f->span_sum += now_ns() - t0;
	}
	return NULL;
}

static int depth_left;
static __attribute__((noinline)) void deep(void)
{
	QPROF_SCOPE("deep");
	if (--depth_left > 0)
		deep();
	__asm__ __volatile__("" ::: "memory");
}

static void *exits_inside(void *arg)
{
	QPROF_SCOPE_BEGIN("never_closed");
	return NULL; /* the thread exits with the span open */
}

/* An enter whose exit never runs, as after a longjmp out of its block:
 * the exit of the enclosing scope skips it (1 out of order). */
static __attribute__((noinline)) void skipped_exit(void)
{
	QPROF_SCOPE("oo_outer");
	{
		QPROF__SITE(qprof__site_lost, QPROF_KIND_SCOPE, "lost");
		QPROF__ENTER_R(&qprof__site_lost);
	}
}

static void misbehave(void)
{
	pthread_t th;

	QPROF_SCOPE_END("orphan_end");		/* 1 exit without enter */
	QPROF_SCOPE_BEGIN("a");
	QPROF_SCOPE_BEGIN("b");
	QPROF_SCOPE_END("a");			/* a measured; b stays open beside the stack */
	QPROF_SCOPE_BEGIN("b");			/* b again: the first b is 1 begin_unended */
	skipped_exit();				/* 1 out of order; oo_outer measured */
	depth_left = 40;			/* 32 kept, 8 too deep; all 32 measured */
	deep();
	pthread_create(&th, NULL, exits_inside, NULL);
	pthread_join(th, NULL);			/* 1 open at thread exit */
}

static volatile sig_atomic_t go, leave;
static void on_usr1(int s) { go = 1; }
static void on_usr2(int s) { leave = 1; }

int main(int argc, char **argv)
{
	const char *mode = "nested";
	struct figures f[2] = { 0 };
	pthread_t th[2];
	int i, exit_now = 0, rounds = 1, round;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--mode") && i + 1 < argc)
			mode = argv[++i];
		else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--exit"))
			exit_now = 1;
		else if (!strcmp(argv[i], "--rt"))
			realtime = 1;
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: %s [--mode nested|misbehave|idle] [--iters N] [--exit] [--rt] [--rounds N]\n",
				argv[0]);
			return 2;
		}
	}
	signal(SIGUSR1, on_usr1);
	signal(SIGUSR2, on_usr2);
	printf("{\"pid\": %d}\n", (int)getpid());
	fflush(stdout);
	for (round = 0; round < rounds; round++) {
		while (!go)
			usleep(1000);
		go = 0;
		memset(f, 0, sizeof(f));
		if (!strcmp(mode, "nested")) {
			for (i = 0; i < 2; i++)
				pthread_create(&th[i], NULL, nested_thread, &f[i]);
			for (i = 0; i < 2; i++)
				pthread_join(th[i], NULL);
			for (i = 1; i < 2; i++) {
				f[0].outer_n += f[i].outer_n, f[0].outer_sum += f[i].outer_sum;
				f[0].inner_n += f[i].inner_n, f[0].inner_sum += f[i].inner_sum;
				f[0].func_n += f[i].func_n, f[0].func_sum += f[i].func_sum;
				f[0].span_n += f[i].span_n, f[0].span_sum += f[i].span_sum;
			}
			printf("{\"outer_n\": %llu, \"outer_mean\": %.1f, \"inner_n\": %llu, \"inner_mean\": %.1f, "
			       "\"func_n\": %llu, \"func_mean\": %.1f, \"span_n\": %llu, \"span_mean\": %.1f}\n",
			       (unsigned long long)f[0].outer_n, (double)f[0].outer_sum / f[0].outer_n,
			       (unsigned long long)f[0].inner_n, (double)f[0].inner_sum / f[0].inner_n,
			       (unsigned long long)f[0].func_n, (double)f[0].func_sum / f[0].func_n,
			       (unsigned long long)f[0].span_n, (double)f[0].span_sum / f[0].span_n);
		} else if (!strcmp(mode, "misbehave")) {
			misbehave();
			printf("{\"done\": true}\n");
		} else {
			printf("{\"done\": true}\n");
		}
		fflush(stdout);
	}
	while (!leave && !exit_now)
		usleep(1000);
	return 0;
}
