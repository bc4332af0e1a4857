/* ring_restart_target.c - the program the restarted-qprofd test drives
 * (test_ring_restart.py), one command a line on stdin, one JSON line an
 * answer on stdout. One thread writes flat scopes at a paced rate for as
 * long as the program runs, whichever qprofd (if any) holds the semaphore,
 * and counts, from its own ring's head around each scope, the scopes whose
 * two records both went into the ring ("full": the head moved by 2) and
 * those with only one (the semaphore rose or fell inside it).
 *
 *   pid            {"pid"}
 *   start R        the thread: R scopes/s (1 ms steps) from the moment the
 *                  semaphore first rises (its ring is made then)
 *   mark           wait until the ring's head stands still for 100 ms (no
 *                  qprofd records), then start the counts afresh
 *   pause          the thread stops at the end of its step
 *   resume         and goes on
 *   quit
 * Answers (but pid): {"head": its ring's head, "nrec": the ring's size,
 * "full": scopes written whole since the last mark, "partial": ... written
 * in part, "tid"}. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <qprof/qprof.h>

static volatile long sink;
static long rate;
static int paused, tid;
static uint64_t full, partial;
static struct qprof_ring *ring;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int stepping;	/* the thread is inside a step */

static uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static __attribute__((noinline)) void scope(void)
{
	QPROF_SCOPE("steady");
	sink++;
}

static uint64_t head_of(struct qprof_ring *r)
{
	return (uintptr_t)r > 1 ? __atomic_load_n(&r->head, __ATOMIC_ACQUIRE) : 0;
}

static void *writer(void *arg)
{
	uint64_t t0, step = 0;
	long per_ms = rate / 1000, i;

	(void)arg;
	tid = (int)syscall(SYS_gettid);
	while (!qprof_ring_semaphore)
		__builtin_ia32_pause();
	scope();	/* the ring made (a THREAD record and this scope) */
	__atomic_store_n(&ring, qprof__ring_tls, __ATOMIC_RELEASE);
	t0 = mono_ns();
	for (;;) {
		uint64_t at = t0 + step * 1000000ull;
		struct timespec ts = { (time_t)(at / 1000000000ull), (long)(at % 1000000000ull) };

		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		pthread_mutex_lock(&mu);
		while (paused)
			pthread_cond_wait(&cv, &mu);
		stepping = 1;
		pthread_mutex_unlock(&mu);
		for (i = 0; i < per_ms; i++) {
			uint64_t h0 = head_of(ring), d;

			scope();
			d = head_of(ring) - h0;
			if (d == 2)
				__atomic_fetch_add(&full, 1, __ATOMIC_RELAXED);
			else if (d == 1)
				__atomic_fetch_add(&partial, 1, __ATOMIC_RELAXED);
		}
		pthread_mutex_lock(&mu);
		stepping = 0;
		pthread_cond_broadcast(&cv);
		pthread_mutex_unlock(&mu);
		step++;
		if (mono_ns() > t0 + (step + 100) * 1000000ull)	/* far behind: no catching up */
			step = (mono_ns() - t0) / 1000000ull;
	}
	return NULL;
}

static void answer(void)
{
	struct qprof_ring *r = __atomic_load_n(&ring, __ATOMIC_ACQUIRE);

	printf("{\"head\": %llu, \"nrec\": %u, \"full\": %llu, \"partial\": %llu, \"tid\": %d}\n",
	       (unsigned long long)head_of(r), r ? r->nrec : 0,
	       (unsigned long long)__atomic_load_n(&full, __ATOMIC_RELAXED),
	       (unsigned long long)__atomic_load_n(&partial, __ATOMIC_RELAXED), tid);
}

int main(void)
{
	char line[256];
	pthread_t th;

	while (fgets(line, sizeof(line), stdin)) {
		long r = 0;

		if (!strncmp(line, "pid", 3)) {
			printf("{\"pid\": %d}\n", getpid());
		} else if (sscanf(line, "start %ld", &r) == 1 && r >= 1000 && !rate) {
			rate = r;
			pthread_create(&th, NULL, writer, NULL);
			while (!__atomic_load_n(&ring, __ATOMIC_ACQUIRE))
				usleep(1000);
			answer();
		} else if (!strncmp(line, "mark", 4) && ring) {
			uint64_t h = head_of(ring), still = mono_ns(), end = still + 10000000000ull;

			while (mono_ns() < end && mono_ns() - still < 100000000ull) {
				usleep(5000);
				if (head_of(ring) != h) {
					h = head_of(ring);
					still = mono_ns();
				}
			}
			__atomic_store_n(&full, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&partial, 0, __ATOMIC_RELAXED);
			answer();
		} else if (!strncmp(line, "pause", 5) && ring) {
			pthread_mutex_lock(&mu);
			paused = 1;
			while (stepping)
				pthread_cond_wait(&cv, &mu);
			pthread_mutex_unlock(&mu);
			answer();
		} else if (!strncmp(line, "resume", 6) && ring) {
			pthread_mutex_lock(&mu);
			paused = 0;
			pthread_cond_broadcast(&cv);
			pthread_mutex_unlock(&mu);
			answer();
		} else if (!strncmp(line, "quit", 4)) {
			break;
		} else {
			printf("{\"error\": \"unknown command\"}\n");
		}
		fflush(stdout);
	}
	exit(0);
}
