/* ring_target.c - the program the ring collector's integration test drives,
 * one command per line on stdin, one JSON line per answer on stdout:
 *
 *   pid                 {"pid", "sem_addr"}: the address of its qprof_ring_semaphore
 *   run N               2 threads x N x { outer (~20 us) { inner (~1 us) }, mark }, timed by
 *                       the program's own clock: the TSC read just outside each scope
 *                       (*_out) and just inside it (*_in), converted to ns by its own
 *                       calibration against CLOCK_MONOTONIC. The two differ by the cost
 *                       of its own reads; *_mean is their midpoint:
 *                       {"n", "outer_mean", "inner_mean", "outer_out", "outer_in", ...}
 *   spin                a thread writes scopes flat out until `stop`
 *   state               {"sem": the semaphore now, "spin_head": the spinner's ring head}
 *   stop                stops the spinner: {"spun": scopes it wrote}
 *   threads N           N threads created and joined two at a time, one scope each:
 *                       {"rings": distinct rings they used, "rss_kb"}
 *   forge               qprof:ring_register announcements of no ring: an unmapped address,
 *                       a huge size, a page of zeros: {"forged": 3}
 *   scribble N          N garbage records into the main thread's ring: {"scribbled": N}
 *   values N            QPROF_VALUE("level", i) for i in 0..N-1, one NaN ("level_nan"):
 *                       {"values": N, "value_sem": its qprof_value_semaphore}
 *   quit
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>
#include <qprof/qprof.h>

static double ns_per_tick;

static uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void calibrate(void)
{
	uint64_t n0 = mono_ns(), t0 = __rdtsc(), n1, t1;

	do
		n1 = mono_ns();
	while (n1 - n0 < 50000000);
	t1 = __rdtsc();
	ns_per_tick = (double)(n1 - n0) / (double)(t1 - t0);
}

static void busy(uint64_t ns)
{
	uint64_t end = __rdtsc() + (uint64_t)((double)ns / ns_per_tick);

	while (__rdtsc() < end)
		;
}

struct work {
	long n;
	uint64_t outer_out, outer_in, inner_out, inner_in;
};

static void *worker(void *arg)
{
	struct work *w = arg;
	struct sched_param sp = { .sched_priority = 10 };
	long i;

	/* best effort: a preemption in the few ns between the program's clock
	 * reads and the markers' would weigh milliseconds in the means */
	pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	for (i = 0; i < w->n; i++) {
		uint64_t a = __rdtsc(), a2, b, b2, c, c2, d, d2;
		{
			QPROF_SCOPE("outer");
			a2 = __rdtsc();
			busy(19000);
			b = __rdtsc();
			{
				QPROF_SCOPE("inner");
				b2 = __rdtsc();
				busy(1000);
				c2 = __rdtsc();
			}
			c = __rdtsc();
			d2 = __rdtsc();
		}
		d = __rdtsc();
		QPROF_MARK("tick");
		w->outer_out += d - a;
		w->outer_in += d2 - a2;
		w->inner_out += c - b;
		w->inner_in += c2 - b2;
		if (i % 64 == 63)
			usleep(200); /* let the drain keep up on a loaded machine */
	}
	return NULL;
}

static volatile int spinning;
static volatile uint64_t spun;
static struct qprof_ring *volatile spin_ring;

static void *spinner(void *arg)
{
	(void)arg;
	while (spinning) {
		QPROF_SCOPE("spin");
		spun++;
		if (!spin_ring && qprof__ring_tls && qprof__ring_tls != QPROF__RING_NONE)
			spin_ring = qprof__ring_tls;
	}
	return NULL;
}

static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;
static struct qprof_ring *seen[256];
static int nseen;
static pthread_barrier_t pair;

static void *one_scope(void *arg)
{
	int i;

	(void)arg;
	{
		QPROF_SCOPE("thread_scope");
	}
	pthread_mutex_lock(&seen_lock);
	for (i = 0; i < nseen && seen[i] != qprof__ring_tls; i++)
		;
	if (i == nseen && nseen < 256)
		seen[nseen++] = qprof__ring_tls;
	pthread_mutex_unlock(&seen_lock);
	pthread_barrier_wait(&pair);
	return NULL;
}

static long rss_kb(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
			rss = 0;
		fclose(f);
	}
	return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

/* A ring_register site of our own, with any arguments. */
static __attribute__((noinline)) void forge(uint64_t addr, uint64_t size)
{
	__asm__ __volatile__(QPROF__NOTE("ring_register", "qprof_ring_semaphore", "8@%%rdi 8@%%rsi")
			     : : "D"(addr), "S"(size) : "memory");
}

int main(void)
{
	char line[128];
	pthread_t spin_thread;

	setvbuf(stdout, NULL, _IOLBF, 0);
	calibrate();
	while (fgets(line, sizeof(line), stdin)) {
		long n = 0;

		if (!strncmp(line, "pid", 3)) {
			printf("{\"pid\": %d, \"sem_addr\": %lu}\n", getpid(),
			       (unsigned long)(uintptr_t)&qprof_ring_semaphore);
		} else if (sscanf(line, "run %ld", &n) == 1) {
			struct work w[2] = { { .n = n }, { .n = n } };
			pthread_t t[2];
			int k;

			for (k = 0; k < 2; k++)
				pthread_create(&t[k], NULL, worker, &w[k]);
			for (k = 0; k < 2; k++)
				pthread_join(t[k], NULL);
			double sc = ns_per_tick / (2.0 * n);
			double oo = (double)(w[0].outer_out + w[1].outer_out) * sc;
			double oi = (double)(w[0].outer_in + w[1].outer_in) * sc;
			double io = (double)(w[0].inner_out + w[1].inner_out) * sc;
			double ii = (double)(w[0].inner_in + w[1].inner_in) * sc;

			printf("{\"n\": %ld, \"outer_mean\": %.3f, \"inner_mean\": %.3f, \"outer_out\": %.3f, "
			       "\"outer_in\": %.3f, \"inner_out\": %.3f, \"inner_in\": %.3f}\n",
			       2 * n, (oo + oi) / 2, (io + ii) / 2, oo, oi, io, ii);
		} else if (!strncmp(line, "spin", 4)) {
			spinning = 1;
			pthread_create(&spin_thread, NULL, spinner, NULL);
			while (!spin_ring && qprof_ring_semaphore)
				usleep(1000);
			printf("{\"spinning\": 1}\n");
		} else if (!strncmp(line, "state", 5)) {
			printf("{\"sem\": %u, \"spin_head\": %llu}\n", (unsigned)qprof_ring_semaphore,
			       spin_ring ? (unsigned long long)__atomic_load_n(&spin_ring->head, __ATOMIC_ACQUIRE)
					 : 0ULL);
		} else if (!strncmp(line, "stop", 4)) {
			spinning = 0;
			pthread_join(spin_thread, NULL);
			printf("{\"spun\": %llu}\n", (unsigned long long)spun);
		} else if (sscanf(line, "threads %ld", &n) == 1) {
			long i;

			pthread_barrier_init(&pair, NULL, 2);
			for (i = 0; i < n; i += 2) {
				pthread_t a, b;

				pthread_create(&a, NULL, one_scope, NULL);
				pthread_create(&b, NULL, one_scope, NULL);
				pthread_join(a, NULL);
				pthread_join(b, NULL);
			}
			pthread_barrier_destroy(&pair);
			printf("{\"rings\": %d, \"rss_kb\": %ld}\n", nseen, rss_kb());
		} else if (!strncmp(line, "forge", 5)) {
			void *zeros = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			forge(0x10000, QPROF_RING_BYTES);		/* nothing mapped there */
			forge((uint64_t)(uintptr_t)zeros, 1ULL << 40);	/* a huge size */
			forge((uint64_t)(uintptr_t)zeros, QPROF_RING_BYTES); /* no ring header */
			printf("{\"forged\": 3}\n");
		} else if (sscanf(line, "scribble %ld", &n) == 1) {
			struct qprof_ring *r;
			uint64_t h, x = 0x9e3779b97f4a7c15ull;
			long i;

			{
				QPROF_SCOPE("main_scope"); /* the main thread's ring */
			}
			r = qprof__ring_tls;
			if (!r || r == QPROF__RING_NONE) {
				printf("{\"scribbled\": 0}\n");
				continue;
			}
			h = r->head;
			for (i = 0; i < n; i++) {
				struct qprof_ring_rec *rec =
					(struct qprof_ring_rec *)((char *)r + QPROF_RING_HDR_SIZE) + ((h + i) & (r->nrec - 1));

				x ^= x << 13;
				x ^= x >> 7;
				x ^= x << 17;
				rec->ts = x;
				rec->word = x * 0x2545f4914f6cdd1dull;
			}
			__atomic_store_n(&r->head, h + n, __ATOMIC_RELEASE);
			printf("{\"scribbled\": %ld}\n", n);
		} else if (sscanf(line, "values %ld", &n) == 1) {
			long i;

			for (i = 0; i < n; i++)
				QPROF_VALUE("level", (double)i);
			QPROF_VALUE("level_nan", __builtin_nan(""));
			printf("{\"values\": %ld, \"value_sem\": %u}\n", n, (unsigned)qprof_value_semaphore);
		} else if (!strncmp(line, "quit", 4)) {
			break;
		}
	}
	return 0;
}
