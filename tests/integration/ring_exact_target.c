/* ring_exact_target.c - the program the ring accounting test drives, one
 * command a line on stdin, one JSON line an answer on stdout. Its threads
 * wait for qprof_ring_semaphore to rise, so that every scope they count was
 * written into a ring; they stay alive after (until quit), so that the
 * daemon can read their rings whole; each answer gives the rings' heads
 * (records written ever) as the program sees them.
 *
 *   pid                 {"pid"}
 *   burst T N           T threads, N flat scopes each as fast as they go
 *                       from the moment the semaphore rises
 *   paced T R S         T threads, R scopes/s each for S seconds (1 ms steps)
 *   protect MS          a thread: 1000 scopes, its ring PROT_NONE for MS ms,
 *                       1000 scopes
 *   unmap HOW N         a thread: N scopes flat out, then it drops its ring
 *                       at once, maybe mid-read (no more records from it):
 *                       HOW 0 munmap only (the next ring may get the
 *                       address), 1 garbage mapped over it, 2 its head
 *                       forged to 2^62 in place (the header still right)
 *   exit T N            as burst, then the process exits at once (no answer
 *                       after the heads line)
 *   quit
 * Answers: {"written": scopes, "heads": [head of each new thread's ring],
 * "records": [nrec of each], "sem_wait_us": how long the semaphore took}. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <qprof/qprof.h>

#define MAXT 8

static uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

struct job {
	pthread_t th;
	long n;			/* scopes (burst) or per second (paced) */
	double secs;
	int protect_ms;
	int unmap;		/* 1 + HOW: drop the ring after the burst */
	long written;
	uint64_t head;		/* the ring's head when the thread was done */
	uint32_t nrec;
	struct qprof_ring *ring;
	pthread_barrier_t *done;
	pthread_mutex_t *park;
};

static volatile long sink;

static void scope(void)
{
	QPROF_SCOPE("exact");
	sink++;
}

static void sem_wait_up(void)
{
	while (!qprof_ring_semaphore)
		__builtin_ia32_pause();
}

/* The thread writes no more (its markers find QPROF__RING_NONE) and its
 * ring is unmapped under the daemon, then maybe replaced by a bad one. */
static void drop_ring(struct qprof_ring *r, int how)
{
	uint64_t bytes = QPROF__RING_BYTES_OF(r->nrec);
	void *m;

	pthread_setspecific(qprof__ring_key, NULL);
	qprof__ring_tls = QPROF__RING_NONE;
	if (how == 2) {
		/* in place: the header stays right, the head leaps */
		__atomic_store_n(&r->head, 1ull << 62, __ATOMIC_RELEASE);
		return;
	}
	munmap(r, bytes);
	if (!how)
		return;
	m = mmap(r, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	if (m != MAP_FAILED)
		memset(m, 0xa5, bytes);
}

static void *worker(void *arg)
{
	struct job *j = arg;
	long i;

	sem_wait_up();
	if (j->secs > 0) {
		uint64_t t0 = mono_ns(), end = t0 + (uint64_t)(j->secs * 1e9);
		long per_ms = j->n / 1000, step = 0;

		while (mono_ns() < end) {
			uint64_t at = t0 + (uint64_t)step * 1000000ull;
			struct timespec ts = { (time_t)(at / 1000000000ull), (long)(at % 1000000000ull) };

			/* asleep between the steps: the CPU left is the daemon's */
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
			for (i = 0; i < per_ms; i++)
				scope();
			j->written += per_ms;
			step++;
		}
	} else if (j->protect_ms) {
		for (i = 0; i < 1000; i++)
			scope();
		uint64_t bytes;

		j->ring = qprof__ring_tls;
		bytes = QPROF__RING_BYTES_OF(j->ring->nrec);
		mprotect(j->ring, bytes, PROT_NONE);
		usleep((useconds_t)j->protect_ms * 1000);
		mprotect(j->ring, bytes, PROT_READ | PROT_WRITE);
		for (i = 0; i < 1000; i++)
			scope();
		j->written = 2000;
	} else {
		for (i = 0; i < j->n; i++)
			scope();
		j->written = j->n;
	}
	j->ring = qprof__ring_tls;
	j->head = __atomic_load_n(&j->ring->head, __ATOMIC_ACQUIRE);
	j->nrec = j->ring->nrec;
	if (j->unmap)
		drop_ring(j->ring, j->unmap - 1);
	pthread_barrier_wait(j->done);
	/* alive until quit: the ring stays the daemon's to read */
	pthread_mutex_lock(j->park);
	pthread_mutex_unlock(j->park);
	return NULL;
}

static pthread_mutex_t park = PTHREAD_MUTEX_INITIALIZER;

static void run(int nt, long n, double secs, int protect_ms, int then_exit, int unmap)
{
	static struct job jobs[MAXT];
	pthread_barrier_t done;
	uint64_t t0 = mono_ns(), t1;
	long written = 0;
	int i;

	if (nt < 1 || nt > MAXT) {
		printf("{\"error\": \"threads\"}\n");
		fflush(stdout);
		return;
	}
	pthread_barrier_init(&done, NULL, (unsigned)nt + 1);
	for (i = 0; i < nt; i++) {
		memset(&jobs[i], 0, sizeof(jobs[i]));
		jobs[i].n = n;
		jobs[i].secs = secs;
		jobs[i].protect_ms = protect_ms;
		jobs[i].unmap = unmap;
		jobs[i].done = &done;
		jobs[i].park = &park;
		pthread_create(&jobs[i].th, NULL, worker, &jobs[i]);
	}
	sem_wait_up();
	t1 = mono_ns();
	pthread_barrier_wait(&done);
	printf("{\"written\": ");
	for (i = 0; i < nt; i++)
		written += jobs[i].written;
	printf("%ld, \"heads\": [", written);
	for (i = 0; i < nt; i++)
		printf("%s%llu", i ? ", " : "", (unsigned long long)jobs[i].head);
	printf("], \"records\": [");
	for (i = 0; i < nt; i++)
		printf("%s%u", i ? ", " : "", jobs[i].nrec);
	printf("], \"sem_wait_us\": %llu}\n", (unsigned long long)(t1 - t0) / 1000);
	fflush(stdout);
	if (then_exit)
		exit(0); /* the threads' rings unread, maybe: the daemon counts them */
}

int main(void)
{
	char line[256];

	pthread_mutex_lock(&park);
	while (fgets(line, sizeof(line), stdin)) {
		int t = 0, ms = 0;
		long n = 0;
		double s = 0;

		if (!strncmp(line, "pid", 3)) {
			printf("{\"pid\": %d}\n", getpid());
		} else if (sscanf(line, "burst %d %ld", &t, &n) == 2) {
			run(t, n, 0, 0, 0, 0);
			continue;
		} else if (sscanf(line, "paced %d %ld %lf", &t, &n, &s) == 3) {
			run(t, n, s, 0, 0, 0);
			continue;
		} else if (sscanf(line, "protect %d", &ms) == 1) {
			run(1, 0, 0, ms, 0, 0);
			continue;
		} else if (sscanf(line, "unmap %d %ld", &ms, &n) == 2 && ms >= 0 && ms <= 2) {
			run(1, n, 0, 0, 0, ms + 1);
			continue;
		} else if (sscanf(line, "exit %d %ld", &t, &n) == 2) {
			run(t, n, 0, 0, 1, 0);
			continue;
		} else if (!strncmp(line, "quit", 4)) {
			break;
		} else {
			printf("{\"error\": \"unknown command\"}\n");
		}
		fflush(stdout);
	}
	exit(0);
}
