/* markers_target.c - values, logs and marks with exactly known figures for
 * the integration tests. Prints {"pid": N}, waits for SIGUSR1, runs MODE,
 * prints {"done": true, ...}, waits for SIGUSR2.
 *   values: QPROF_VALUE("v") of 3 NaN, 2 +inf, 1 -inf, then 1..1000;
 *           QPROF_MARK("tick") 777 times
 *   logs N: N messages "msg <i>" at a moderate rate, then one longer than
 *           QPROF_LOG_MAX
 *   flood N: N messages as fast as possible
 *   spread N: QPROF_VALUE("spread") of 1..N (a histogram bucket per value up
 *           to 4096, 4096 buckets per power of two above) */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <qprof/qprof.h>

static volatile sig_atomic_t go, leave;
static void on_usr1(int s) { go = 1; }
static void on_usr2(int s) { leave = 1; }

static void pause_us(long us)
{
	struct timespec ts = { 0, us * 1000 };

	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "values";
	long n = argc > 2 ? atol(argv[2]) : 1000;
	long i;

	signal(SIGUSR1, on_usr1);
	signal(SIGUSR2, on_usr2);
	printf("{\"pid\": %d}\n", (int)getpid());
	fflush(stdout);
	while (!go)
		usleep(1000);
	if (!strcmp(mode, "values")) {
		static double seq[1006] = { NAN, NAN, NAN, INFINITY, INFINITY, -INFINITY };

		for (i = 1; i <= 1000; i++)
			seq[5 + i] = (double)i;
		for (i = 0; i < 1006; i++)
			QPROF_VALUE("v", seq[i]);	/* one site */
		for (i = 0; i < 777; i++)
			QPROF_MARK("tick");
	} else if (!strcmp(mode, "spread")) {
		/* 1..n at one site: a histogram bucket for every value up to 4096,
		 * then 4096 buckets per power of two */
		for (i = 1; i <= n; i++)
			QPROF_VALUE("spread", (double)i);
	} else if (!strcmp(mode, "logs")) {
		char big[600];

		for (i = 0; i < n; i++) {
			QPROF_LOG("msg %ld", i);
			if (i % 10 == 9)
				pause_us(1000);	/* ~10k messages/s */
		}
		memset(big, 'x', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		QPROF_LOG("long %s", big);
	} else if (!strcmp(mode, "flood")) {
		for (i = 0; i < n; i++)
			QPROF_LOG("flood %ld", i);
	}
	printf("{\"done\": true}\n");
	fflush(stdout);
	while (!leave)
		usleep(1000);
	return 0;
}
