/* spans_target.c - test program for spans across threads (test_spans.py):
 * prints {"pid": N}, then for each SIGUSR1 runs one round of its mode and
 * prints its own figures as JSON; SIGUSR2 ends it.
 *
 *   roundtrip  N orders begun on a strategy thread (QPROF_SPAN_BEGIN) and
 *              ended on a gateway thread after a ~50 us sleep (a step "sent"
 *              when the gateway takes it, QPROF_SPAN_END after the sleep);
 *              one block scope per order on each thread. Prints the count
 *              and the mean the program measured itself.
 *   roundtrip --scope-begin  the same with QPROF_SCOPE_BEGIN/END, which pair
 *              on one thread only: what a new user writes first.
 *   abandon    each round begins BATCH spans never ended (ids go on from
 *              round to round).
 *   bad        the faults of test_spans.py, once each, on a thread that
 *              then exits. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <qprof/qprof.h>

static const char ORDER_RT[] = "order_rt";
static const char STALE[] = "stale";

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

static void sleep_us(long us)
{
	struct timespec ts = { 0, us * 1000 };

	nanosleep(&ts, NULL);
}

/* roundtrip: a bounded single-producer single-consumer queue of order numbers */
#define QLEN 16
#define IN_FLIGHT 8
#define ID_BASE 0x7a00000000000000ull	/* ids use all 64 bits */

static int n_orders = 500;
static int scope_begin;		/* --scope-begin */
static uint64_t *t_begin;
static int queue[QLEN];
static _Atomic unsigned int q_head, q_tail;
static uint64_t rt_sum;

static uint64_t order_id(int i)
{
	return ID_BASE + (uint64_t)i * 3;
}

static void *strategy(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < n_orders; i++) {
		{
			QPROF_SCOPE("strat_work");
			busy(2000);
		}
		while (atomic_load_explicit(&q_head, memory_order_relaxed) -
			       atomic_load_explicit(&q_tail, memory_order_acquire) >= IN_FLIGHT)
			sleep_us(20);
		t_begin[i] = now_ns();
		if (scope_begin)
			QPROF_SCOPE_BEGIN(ORDER_RT);
		else
			QPROF_SPAN_BEGIN(ORDER_RT, order_id(i));
		queue[atomic_load_explicit(&q_head, memory_order_relaxed) % QLEN] = i;
		atomic_fetch_add_explicit(&q_head, 1, memory_order_release);
		sleep_us(30);
	}
	return NULL;
}

static void *gateway(void *arg)
{
	int done = 0, i;
	uint64_t t;

	(void)arg;
	while (done < n_orders) {
		unsigned int tail = atomic_load_explicit(&q_tail, memory_order_relaxed);

		if (atomic_load_explicit(&q_head, memory_order_acquire) == tail) {
			sleep_us(20);
			continue;
		}
		i = queue[tail % QLEN];
		if (!scope_begin)
			QPROF_SPAN_STEP(ORDER_RT, order_id(i), "sent");
		sleep_us(50);
		if (scope_begin)
			QPROF_SCOPE_END(ORDER_RT);
		else
			QPROF_SPAN_END(ORDER_RT, order_id(i));
		t = now_ns();
		rt_sum += t - t_begin[i];
		{
			QPROF_SCOPE("gw_work");
			busy(2000);
		}
		atomic_store_explicit(&q_tail, tail + 1, memory_order_release);
		done++;
	}
	return NULL;
}

static void roundtrip(void)
{
	pthread_t s, g;

	t_begin = calloc((size_t)n_orders, sizeof(*t_begin));
	if (!t_begin)
		exit(1);
	rt_sum = 0;
	pthread_create(&g, NULL, gateway, NULL);
	pthread_create(&s, NULL, strategy, NULL);
	pthread_join(s, NULL);
	pthread_join(g, NULL);
	printf("{\"count\": %d, \"mean_ns\": %.1f}\n", n_orders, (double)rt_sum / n_orders);
	free(t_begin);
}

static uint64_t next_stale;

static void abandon(int batch)
{
	int i;

	for (i = 0; i < batch; i++)
		QPROF_SPAN_BEGIN(STALE, next_stale++);
	printf("{\"begun\": %llu}\n", (unsigned long long)next_stale);
}

/* The faults' "bad" begin and end sites, each hit once before the span
 * that is measured: the kernel optimizes a nop5 uprobe at its first hit,
 * which can take milliseconds under load and would land inside the span. */
static __attribute__((noinline)) void bad_begin(uint64_t id)
{
	QPROF_SPAN_BEGIN("bad", id);
}

static __attribute__((noinline)) void bad_end(uint64_t id)
{
	QPROF_SPAN_END("bad", id);
}

/* what the program saw of span 3: the older begin's span lasts at least
 * older_min_ns, the newer one's at most newer_max_ns */
static uint64_t older_min_ns, newer_max_ns;

/* Each fault once; the counts test_spans.py expects are in the comments. */
static void *bad_thread(void *arg)
{
	uint64_t t0, t1, t2, t3;
	int i;

	(void)arg;
	bad_end(1);				/* span_end_without_begin 1 */
	QPROF_SPAN_STEP("bad", 2, "early");	/* span_step_without_begin 1 */
	bad_begin(3);
	t0 = now_ns();
	busy(20000000);
	t1 = now_ns();
	bad_begin(3);				/* span_id_reused 1: the newer begin is kept */
	busy(5000);
	t2 = now_ns();
	bad_end(3);				/* "bad" measured once: from the newer begin */
	t3 = now_ns();
	older_min_ns = t2 - t0;
	newer_max_ns = t3 - t1;
	bad_end(3);				/* span_end_without_begin 2 */
	/* ids equal in their low 32 bits are different ids */
	QPROF_SPAN_BEGIN("wide", (1ull << 40) | 5);
	QPROF_SPAN_BEGIN("wide", (2ull << 40) | 5);
	QPROF_SPAN_END("wide", (2ull << 40) | 5);
	QPROF_SPAN_END("wide", (1ull << 40) | 5);	/* "wide" measured twice (two begin sites: two rows) */
	/* one name, two kinds: 3 block scopes and 2 async spans, apart */
	for (i = 0; i < 3; i++) {
		QPROF_SCOPE("dual");
		busy(1000);
	}
	for (i = 0; i < 2; i++) {
		QPROF_SPAN_BEGIN("dual", 100 + i);
		QPROF_SPAN_END("dual", 100 + i);
	}
	/* kinds mixed in one pair never pair */
	QPROF_SCOPE_BEGIN("mixed");
	QPROF_SPAN_END("mixed", 9);		/* span_end_without_begin 3 */
	QPROF_SPAN_BEGIN("mixed2", 10);		/* pending: span_abandoned 1 after the timeout */
	QPROF_SCOPE_END("mixed2");		/* exit_without_enter 1 */
	return NULL;				/* "mixed" open at thread exit: thread_exit 1 */
}

static volatile sig_atomic_t go, leave;
static void on_usr1(int s) { (void)s; go = 1; }
static void on_usr2(int s) { (void)s; leave = 1; }

int main(int argc, char **argv)
{
	const char *mode = "roundtrip";
	int i, batch = 10000;
	pthread_t th;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--mode") && i + 1 < argc)
			mode = argv[++i];
		else if (!strcmp(argv[i], "--n") && i + 1 < argc)
			n_orders = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
			batch = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--scope-begin"))
			scope_begin = 1;
		else {
			fprintf(stderr, "usage: %s [--mode roundtrip|abandon|bad] [--n N] [--batch N] [--scope-begin]\n",
				argv[0]);
			return 2;
		}
	}
	if (n_orders < 1 || batch < 1)
		return 2;
	signal(SIGUSR1, on_usr1);
	signal(SIGUSR2, on_usr2);
	printf("{\"pid\": %d}\n", (int)getpid());
	fflush(stdout);
	while (!leave) {
		if (!go) {
			usleep(1000);
			continue;
		}
		go = 0;
		if (!strcmp(mode, "roundtrip")) {
			roundtrip();
		} else if (!strcmp(mode, "abandon")) {
			abandon(batch);
		} else {
			pthread_create(&th, NULL, bad_thread, NULL);
			pthread_join(th, NULL);
			printf("{\"done\": 1, \"older_min_ns\": %llu, \"newer_max_ns\": %llu}\n",
			       (unsigned long long)older_min_ns, (unsigned long long)newer_max_ns);
		}
		fflush(stdout);
	}
	return 0;
}
