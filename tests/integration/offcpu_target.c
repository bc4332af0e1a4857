/* offcpu_target.c - workloads of known off-CPU behaviour for
 * test_offcpu.py. Prints {"pid": N}, waits for SIGUSR1, works, prints its
 * own figures as JSON, waits for SIGUSR2 (qptest.Target's protocol).
 *
 *   slow N      N instances of scope "tick" (SCHED_FIFO when allowed, so
 *               the load of the machine does not stretch them): about 20 us
 *               on the CPU in work_20us(); every 50th sleeps 2 ms in
 *               sleep_2ms() (a raw nanosleep: the thread leaves the CPU
 *               in that very function); every 50th, offset 25, spins 2 ms
 *               in spin_2ms(). Figures: the sleeps' measured total.
 *   contend MS  a thread runs scope "contended" for MS ms on a CPU shared
 *               with a spinner pinned there, moving between CPUs 0 and 1
 *               every 10 ms (a spinner on each); then touches 2048 new pages
 *               in scope "faults". Figures: its own /proc switch and
 *               migration counts and minor faults over each scope.
 *   pingpong N  two threads pinned to CPU 0 hand a byte back and forth N
 *               times through pipes (2N context switches in a burst).
 *               Figures: both threads' switches over the burst.
 *   window N    phase 1: N instances of scope "win" spinning 4 ms; prints
 *               {"phase": 1}, waits for a second SIGUSR1; phase 2: 20
 *               instances spinning 1.0, 1.1 ... 2.9 ms (in a shuffled order),
 *               each followed by 10 of 20 us. Figures: every phase-2
 *               instance's begin (CLOCK_MONOTONIC) and length as measured
 *               inside the scope, [[begin_ns, ns], ...].
 * Built -O1 -g -fno-omit-frame-pointer; and as offcpu_target_nofp -O2
 * without frame pointers, sleep_2ms calling glibc's nanosleep
 * (QP_LIBC_SLEEP): only the CFI finds sleep_2ms and its callers there. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <qprof/qprof.h>

static volatile sig_atomic_t go, leave;
static void on_usr1(int s) { go++; }
static void on_usr2(int s) { leave = 1; }

static volatile uint64_t sink;
static volatile int stop_spinners;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* spin in the caller's own code (samples land in it) until NS have passed */
#define SPIN_FOR(ns)                                                                       \
	do {                                                                               \
		uint64_t end_ = now_ns() + (ns), x_ = sink;                                \
		do {                                                                       \
			for (int i_ = 0; i_ < 500; i_++)                                   \
				x_ = x_ * 6364136223846793005ull + 1442695040888963407ull; \
		} while (now_ns() < end_);                                                 \
		sink = x_;                                                                 \
	} while (0)

__attribute__((noinline)) void work_20us(void) { SPIN_FOR(20000); }
__attribute__((noinline)) void spin_2ms(void) { SPIN_FOR(2000000); }

/* nanosleep as a system call made here, not in libc (built without frame
 * pointers): the stack at the switch-out names this function */
__attribute__((noinline)) uint64_t sleep_2ms(void)
{
	struct timespec ts = { 0, 2000000 };
	uint64_t t0 = now_ns();
	long ret;

#ifdef QP_LIBC_SLEEP
	ret = nanosleep(&ts, NULL);	/* glibc's wrapper, without frame pointers */
#else
	__asm__ volatile("syscall" : "=a"(ret) : "a"((long)SYS_nanosleep), "D"(&ts), "S"(0L)
			 : "rcx", "r11", "memory");
#endif
	(void)ret;
	return now_ns() - t0;
}

static uint64_t slept_ns;

__attribute__((noinline)) void tick(int i)
{
	QPROF_SCOPE("tick");
	if (i % 50 == 0)
		slept_ns += sleep_2ms();
	else if (i % 50 == 25)
		spin_2ms();
	else
		work_20us();
}

static void run_slow(int n)
{
	struct sched_param sp = { .sched_priority = 10 };
	int fifo = !sched_setscheduler(0, SCHED_FIFO, &sp);

	for (int i = 0; i < n; i++)
		tick(i);
	printf("{\"instances\": %d, \"sleeps\": %d, \"spins\": %d, \"sleep_ns\": %llu, \"fifo\": %s}\n", n,
	       (n + 49) / 50, (n + 24) / 50, (unsigned long long)slept_ns, fifo ? "true" : "false");
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void *spinner(void *arg)
{
	pin((int)(intptr_t)arg);
	while (!stop_spinners)
		sink = sink * 3 + 1;
	return NULL;
}

/* this thread's voluntary, involuntary switches and migrations so far */
static void counts(uint64_t *vol, uint64_t *invol, uint64_t *migr)
{
	char path[64], line[256];
	FILE *f;

	*vol = *invol = *migr = 0;
	snprintf(path, sizeof(path), "/proc/self/task/%ld/status", (long)syscall(SYS_gettid));
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		sscanf(line, "voluntary_ctxt_switches: %llu", (unsigned long long *)vol);
		sscanf(line, "nonvoluntary_ctxt_switches: %llu", (unsigned long long *)invol);
	}
	if (f)
		fclose(f);
	snprintf(path, sizeof(path), "/proc/self/task/%ld/sched", (long)syscall(SYS_gettid));
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "se.nr_migrations", 16))
			sscanf(strchr(line, ':') + 1, "%llu", (unsigned long long *)migr);
	if (f)
		fclose(f);
}

static uint64_t minflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return (uint64_t)ru.ru_minflt;
}

__attribute__((noinline)) void contended(int ms)
{
	QPROF_SCOPE("contended");
	for (int k = 0; k < ms / 10; k++) {
		pin(k & 1);
		SPIN_FOR(10000000);
	}
}

__attribute__((noinline)) void faults(char *mem, size_t pages)
{
	QPROF_SCOPE("faults");
	for (size_t p = 0; p < pages; p++)
		mem[p * 4096] = 1;
}

static void run_contend(int ms)
{
	uint64_t v0, i0, m0, v1, i1, m1, f0, f1;
	pthread_t t[2];
	size_t pages = 2048;
	char *mem;

	for (int c = 0; c < 2; c++)
		pthread_create(&t[c], NULL, spinner, (void *)(intptr_t)c);
	pin(0);
	usleep(20000);
	counts(&v0, &i0, &m0);
	contended(ms);
	counts(&v1, &i1, &m1);
	stop_spinners = 1;
	for (int c = 0; c < 2; c++)
		pthread_join(t[c], NULL);
	mem = mmap(NULL, pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	madvise(mem, pages * 4096, MADV_NOHUGEPAGE);
	f0 = minflt();
	faults(mem, pages);
	f1 = minflt();
	printf("{\"voluntary\": %llu, \"involuntary\": %llu, \"migrations\": %llu, \"minflt\": %llu, "
	       "\"pages\": %zu}\n",
	       (unsigned long long)(v1 - v0), (unsigned long long)(i1 - i0), (unsigned long long)(m1 - m0),
	       (unsigned long long)(f1 - f0), pages);
}

static int ab[2], ba[2];
static int pp_rounds;
static uint64_t partner_switches;

static void *partner(void *arg)
{
	uint64_t v0, i0, m0, v1, i1, m1;
	char c;

	(void)arg;
	pin(0);
	counts(&v0, &i0, &m0);
	for (int i = 0; i < pp_rounds; i++)
		if (read(ab[0], &c, 1) != 1 || write(ba[1], &c, 1) != 1)
			break;
	counts(&v1, &i1, &m1);
	partner_switches = (v1 - v0) + (i1 - i0);
	return NULL;
}

static void run_pingpong(int n)
{
	uint64_t v0, i0, m0, v1, i1, m1;
	pthread_t t;
	char c = 'x';

	pp_rounds = n;
	if (pipe(ab) || pipe(ba))
		exit(1);
	pin(0);
	pthread_create(&t, NULL, partner, NULL);
	usleep(20000);
	counts(&v0, &i0, &m0);
	for (int i = 0; i < n; i++)
		if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
			exit(1);
	counts(&v1, &i1, &m1);
	pthread_join(t, NULL);
	printf("{\"switches\": %llu}\n", (unsigned long long)((v1 - v0) + (i1 - i0) + partner_switches));
}

static uint64_t win_begin[220], win_ns[220];
static int win_n;

__attribute__((noinline)) void win(uint64_t ns)
{
	QPROF_SCOPE("win");
	uint64_t t0 = now_ns();

	SPIN_FOR(ns);
	if (win_n < 220) {
		win_begin[win_n] = t0;
		win_ns[win_n++] = now_ns() - t0;
	}
}

static void run_window(int n)
{
	struct sched_param sp = { .sched_priority = 10 };

	sched_setscheduler(0, SCHED_FIFO, &sp);
	for (int i = 0; i < n; i++)
		win(4000000);
	printf("{\"phase\": 1}\n");
	fflush(stdout);
	win_n = 0;
	while (go < 2 && !leave)
		usleep(1000);
	if (go < 2)
		return;	/* told to leave before phase 2 */
	for (int i = 0; i < 20; i++) {
		win(1000000 + (uint64_t)((i * 7) % 20) * 100000);	/* 7 is prime to 20: each once */
		for (int k = 0; k < 10; k++)
			win(20000);
	}
	printf("{\"inst\": [");
	for (int i = 0; i < win_n; i++)
		printf("%s[%llu, %llu]", i ? ", " : "", (unsigned long long)win_begin[i],
		       (unsigned long long)win_ns[i]);
	printf("]}\n");
}

int main(int argc, char **argv)
{
	int n = argc > 2 ? atoi(argv[2]) : 500;

	if (argc < 2 || (strcmp(argv[1], "slow") && strcmp(argv[1], "contend") && strcmp(argv[1], "pingpong") &&
			 strcmp(argv[1], "window"))) {
		fprintf(stderr, "usage: offcpu_target slow N | contend MS | pingpong N | window N\n");
		return 2;
	}
	signal(SIGUSR1, on_usr1);
	signal(SIGUSR2, on_usr2);
	printf("{\"pid\": %d}\n", (int)getpid());
	fflush(stdout);
	while (!go)
		usleep(1000);
	if (!strcmp(argv[1], "slow"))
		run_slow(n);
	else if (!strcmp(argv[1], "contend"))
		run_contend(n);
	else if (!strcmp(argv[1], "window"))
		run_window(n);
	else
		run_pingpong(n);
	fflush(stdout);
	while (!leave)
		usleep(1000);
	return 0;
}
