/* log_loop.c - emits QPROF_LOG("msg %d", i), or the same message with
 * fprintf to a file, at a given rate or flat out, and times it (bench/logs.sh).
 *
 *   log_loop log [--rate R] (--seconds S | --count N) [--start-file PATH] [--hold]
 *   log_loop fprintf FILE [--rate R] (--seconds S | --count N) [--start-file PATH]
 *
 * --rate R: R messages per second, paced against CLOCK_MONOTONIC (0 or absent:
 * flat out). Message i is due at t0 + i/R; the loop sleeps while the next one
 * is more than 30 us away, spins closer to it, and then emits every message
 * already due (so a late wake-up gives a short burst, never a lower rate).
 * --seconds S: for S seconds; --count N: exactly N messages.
 * With --start-file it prints "ready PID" and waits for PATH to exist (a
 * tracer attaches meanwhile). With --hold it prints "done" after the report
 * and waits for a signal, so the daemon can be read with the process alive.
 *
 * Prints: log_loop mode MODE messages M elapsed_ns E rate_per_s R
 *         ns_per_msg X semaphore S
 * (S: qprof_log_semaphore at the start of the loop; 0 means nobody listened
 * and QPROF_LOG formatted nothing). */
#define _GNU_SOURCE
#include <qprof/qprof.h>

#include <signal.h>
#include <sys/prctl.h>

#include "bench_common.h"

static FILE *out_file;

/* One message. noinline so both modes have the same call structure. */
static __attribute__((noinline)) void emit_log(int i)
{
	QPROF_LOG("msg %d", i);
}

static __attribute__((noinline)) void emit_fprintf(int i)
{
	fprintf(out_file, "msg %d\n", i);
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
	nanosleep(&ts, NULL);
}

static uint64_t parse_u64(const char *s, int allow_zero)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || (!allow_zero && v == 0)) {
		fprintf(stderr, "bad number '%s'\n", s);
		exit(2);
	}
	return v;
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s log [--rate R] (--seconds S | --count N) [--start-file PATH] [--hold]\n"
		"       %s fprintf FILE [--rate R] (--seconds S | --count N) [--start-file PATH]\n",
		prog, prog);
	exit(2);
}

int main(int argc, char **argv)
{
	const char *start_file = NULL;
	uint64_t rate = 0, count = 0, seconds = 0;
	int use_log, hold = 0, a = 2;

	if (argc < 2)
		usage(argv[0]);
	if (!strcmp(argv[1], "log")) {
		use_log = 1;
	} else if (!strcmp(argv[1], "fprintf") && argc >= 3) {
		use_log = 0;
		out_file = fopen(argv[2], "w");
		if (!out_file) {
			perror(argv[2]);
			return 1;
		}
		a = 3;
	} else {
		usage(argv[0]);
	}
	for (; a < argc; a++) {
		if (!strcmp(argv[a], "--rate") && a + 1 < argc)
			rate = parse_u64(argv[++a], 1);
		else if (!strcmp(argv[a], "--seconds") && a + 1 < argc)
			seconds = parse_u64(argv[++a], 0);
		else if (!strcmp(argv[a], "--count") && a + 1 < argc)
			count = parse_u64(argv[++a], 0);
		else if (!strcmp(argv[a], "--start-file") && a + 1 < argc)
			start_file = argv[++a];
		else if (!strcmp(argv[a], "--hold"))
			hold = 1;
		else
			usage(argv[0]);
	}
	if (!count == !seconds)
		usage(argv[0]);
	/* nanosleep wakes within ~1 us rather than the default 50 us slack */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);

	bench_ready(start_file);
	unsigned sem = qprof_log_semaphore;
	uint64_t n = 0;
	uint64_t t0 = bench_now_ns();
	uint64_t end = seconds ? t0 + seconds * 1000000000u : 0;

	if (!rate) {
		if (count) {
			if (use_log)
				for (; n < count; n++)
					emit_log((int)n);
			else
				for (; n < count; n++)
					emit_fprintf((int)n);
		} else {
			/* flat out for S seconds: look at the clock every 256 messages */
			for (;;) {
				for (int k = 0; k < 256; k++, n++) {
					if (use_log)
						emit_log((int)n);
					else
						emit_fprintf((int)n);
				}
				if (bench_now_ns() >= end)
					break;
			}
		}
	} else {
		const double period = 1e9 / (double)rate;
		for (;;) {
			uint64_t now = bench_now_ns();
			if (end && now >= end)
				break;
			/* every message due by now */
			uint64_t due = (uint64_t)((double)(now - t0) / period) + 1;
			if (count && due > count)
				due = count;
			for (; n < due; n++) {
				if (use_log)
					emit_log((int)n);
				else
					emit_fprintf((int)n);
			}
			if (count && n >= count)
				break;
			uint64_t next = t0 + (uint64_t)((double)n * period);
			now = bench_now_ns();
			if (next > now + 30000)
				sleep_ns(next - now - 20000);
			/* else spin: look at the clock again */
		}
	}
	if (!use_log)
		fflush(out_file);
	uint64_t ns = bench_now_ns() - t0;

	printf("log_loop mode %s messages %llu elapsed_ns %llu rate_per_s %.0f ns_per_msg %.3f semaphore %u\n",
	       use_log ? "log" : "fprintf", (unsigned long long)n, (unsigned long long)ns,
	       (double)n * 1e9 / (double)ns, (double)ns / (double)(n ? n : 1), sem);
	if (out_file)
		fclose(out_file);
	if (hold) {
		printf("done\n");
		fflush(stdout);
		sigset_t set;
		int sig;
		sigemptyset(&set);
		sigaddset(&set, SIGINT);
		sigaddset(&set, SIGTERM);
		sigprocmask(SIG_BLOCK, &set, NULL);
		sigwait(&set, &sig);
	}
	return 0;
}
