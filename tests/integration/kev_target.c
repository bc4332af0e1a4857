/* kev_target.c - a workload whose slow scope instances have a known count
 * of page faults and migrations, for test_slow_kernel.py. Prints
 * {"pid": N}, waits for SIGUSR1, works, prints its own figures as JSON,
 * waits for SIGUSR2 (qptest.Target's protocol).
 *
 *   kev_target N K   pinned to one CPU (SCHED_FIFO when allowed, so nothing
 *                    preempts or moves it), 600 warm-up instances of scope
 *                    "tick" (they lap the 1,024-record ring, so no first
 *                    touch of a ring page faults later), then N instances:
 *                    about 20 us on the CPU; every 50th (offset 10) maps K
 *                    new pages and writes one byte to each (exactly K user
 *                    page faults), every 50th (offset 35) moves itself to
 *                    the other CPU (exactly one migration); both then spin
 *                    2 ms, so they are the slowest. Figures: the warm-up's
 *                    end and each special instance's [before, after]
 *                    (CLOCK_MONOTONIC ns, taken just outside the scope).
 * Built -O1 -g -fno-omit-frame-pointer -DQPROF_RING_RECORDS=1024, linked
 * -z now (no lazy binding inside an instance). */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <qprof/qprof.h>

static volatile sig_atomic_t go, leave;
static void on_usr1(int s) { go = 1; }
static void on_usr2(int s) { leave = 1; }

static volatile uint64_t sink;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void spin_for(uint64_t ns)
{
	uint64_t end = now_ns() + ns, x = sink;

	do {
		for (int i = 0; i < 500; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	} while (now_ns() < end);
	sink = x;
}

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

enum kind { ORDINARY, FAULT, MIGRATE };

static size_t pages;
static int cpu_now;

/* K new pages, one byte written to each: K faults (no huge pages) */
__attribute__((noinline)) static void touch_new_pages(void)
{
	char *mem = mmap(NULL, pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (mem == MAP_FAILED)
		exit(3);
	madvise(mem, pages * 4096, MADV_NOHUGEPAGE);
	for (size_t p = 0; p < pages; p++)
		mem[p * 4096] = 1;
	munmap(mem, pages * 4096);
}

__attribute__((noinline)) static void tick(enum kind k)
{
	QPROF_SCOPE("tick");
	if (k == FAULT) {
		touch_new_pages();
	} else if (k == MIGRATE) {
		cpu_now = !cpu_now;
		if (pin(cpu_now))
			exit(4);
	}
	spin_for(k == ORDINARY ? 20000 : 2000000);
}

int main(int argc, char **argv)
{
	struct sched_param sp = { .sched_priority = 10 };
	uint64_t warm_end, t0, t1;
	int n, fifo, nf = 0, nm = 0;
	char *out, *o;

	if (argc != 3 || (n = atoi(argv[1])) <= 0 || atoi(argv[2]) <= 0) {
		fprintf(stderr, "usage: kev_target N K\n");
		return 2;
	}
	pages = (size_t)atoi(argv[2]);
	out = malloc((size_t)n * 64 + 256);
	if (!out)
		return 1;
	signal(SIGUSR1, on_usr1);
	signal(SIGUSR2, on_usr2);
	printf("{\"pid\": %d}\n", (int)getpid());
	fflush(stdout);
	while (!go)
		usleep(1000);
	if (pin(0))
		return 4;
	fifo = !sched_setscheduler(0, SCHED_FIFO, &sp);
	for (int i = 0; i < 600; i++)
		tick(ORDINARY);
	warm_end = now_ns();
	o = out;
	for (int i = 0; i < n; i++) {
		enum kind k = i % 50 == 10 ? FAULT : i % 50 == 35 ? MIGRATE : ORDINARY;

		t0 = now_ns();
		tick(k);
		t1 = now_ns();
		if (k != ORDINARY)
			o += sprintf(o, "%s[%d, %llu, %llu]", nf + nm ? ", " : "", (int)k, (unsigned long long)t0,
				     (unsigned long long)t1);
		nf += k == FAULT;
		nm += k == MIGRATE;
	}
	printf("{\"instances\": %d, \"pages\": %zu, \"fifo\": %s, \"warm_end\": %llu, \"faulters\": %d, "
	       "\"migrators\": %d, \"special\": [%s]}\n",
	       n, pages, fifo ? "true" : "false", (unsigned long long)warm_end, nf, nm, out);
	fflush(stdout);
	while (!leave)
		usleep(1000);
	return 0;
}
