/* sdt_target.c - a program with plain <sys/sdt.h> probes (no qprof.h): 500
 * requests of 50 us between app:req__start and app:req__done, 321 hits of
 * app:tick, 7 app:orphan__begin that no end ever follows, and (C++ build)
 * 40 exceptions thrown and caught (libstdcxx:throw). Prints {"pid": N},
 * waits for SIGUSR1, works, prints {"done": true}, waits for SIGUSR2. */
#include <signal.h>
#include <stdio.h>
#include <sys/sdt.h>
#include <time.h>
#include <unistd.h>
#include <stdexcept>

static volatile sig_atomic_t go, leave;
static void on_usr1(int) { go = 1; }
static void on_usr2(int) { leave = 1; }

static unsigned long long now_ns()
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

int main()
{
	signal(SIGUSR1, on_usr1);
	signal(SIGUSR2, on_usr2);
	printf("{\"pid\": %d}\n", (int)getpid());
	fflush(stdout);
	while (!go)
		usleep(1000);
	for (int i = 0; i < 500; i++) {
		DTRACE_PROBE1(app, req__start, i);
		unsigned long long end = now_ns() + 50000;
		while (now_ns() < end)
			;
		DTRACE_PROBE1(app, req__done, i);
	}
	for (int i = 0; i < 321; i++)
		DTRACE_PROBE(app, tick);
	for (int i = 0; i < 7; i++)
		DTRACE_PROBE(app, orphan__begin);
	int caught = 0;
	for (int i = 0; i < 40; i++) {
		try {
			throw std::runtime_error("test");
		} catch (const std::exception &) {
			caught++;
		}
	}
	printf("{\"done\": true, \"caught\": %d}\n", caught);
	fflush(stdout);
	while (!leave)
		usleep(1000);
	return 0;
}
