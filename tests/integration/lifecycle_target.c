/* lifecycle_target.c - a program that forks or execs while profiled, for the
 * fork and exec tests. It prints its pid, waits for SIGUSR1, then:
 *
 *   --mode fork N M     runs scope "work" 1000 times (so the kernel optimizes
 *                       the sites), forks N children at once, each runs "work"
 *                       M times and exits 0; prints how many exited 0 and the
 *                       statuses of the others
 *   --mode vfork N M    the same with vfork (the child shares the parent's mm)
 *   --mode grandchild N M  as fork, but each child first runs "before_exec"
 *                       M times (sites the parent never ran: the kernel
 *                       optimizes them in the child's own mm), then forks a
 *                       grandchild that runs them M times; the child exits
 *                       with the grandchild's status
 *   --mode libfork N M  as fork, with the scope "lib_work" of
 *                       liblifecycle_lib.so instead of "work"
 *   --mode exec N M     runs "before_exec" N times, then execs itself with
 *                       --mode after M, which runs "after_exec" M times, then
 *                       "lib_work" of liblifecycle_lib.so M times
 *   --mode exec_sleep N runs "before_exec" N times, then execs /bin/sleep 30
 *                       (a program without markers)
 *
 * then prints its figures as JSON and waits for SIGUSR2 (or exits with --exit).
 * --linger-ms L: each child of fork sleeps L ms before it exits, and exec
 * waits L ms before the exec (so that the ring collector's drain, every
 * 1 ms, has read what the process wrote before its memory goes).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <qprof/qprof.h>

void lc_lib_work(int n);	/* lifecycle_lib.c */

static volatile sig_atomic_t go, leave;
static int linger_ms;
static void on_usr1(int s) { go = 1; }
static void on_usr2(int s) { leave = 1; }

static __attribute__((noinline)) void work(int n)
{
	int i;

	for (i = 0; i < n; i++) {
		QPROF_SCOPE("work");
		__asm__ __volatile__("" ::: "memory");
	}
}

static __attribute__((noinline)) void run_named(int n, int after)
{
	int i;

	for (i = 0; i < n; i++) {
		if (after) {
			QPROF_SCOPE("after_exec");
			__asm__ __volatile__("" ::: "memory");
		} else {
			QPROF_SCOPE("before_exec");
			__asm__ __volatile__("" ::: "memory");
		}
	}
}

/* Wait for the N children; print how many exited 0. */
static __attribute__((noinline)) void reap(const pid_t *pids, int n)
{
	int i, ok = 0, bad = 0, first_bad = 0;

	for (i = 0; i < n; i++) {
		int st = 0;

		if (pids[i] < 0) {
			bad++;
			continue;
		}
		while (waitpid(pids[i], &st, 0) < 0 && errno == EINTR)
			;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
			ok++;
		} else {
			if (!bad)
				first_bad = st;
			bad++;
		}
	}
	printf("{\"children\": %d, \"exit_0\": %d, \"failed\": %d, \"first_failed_status\": %d}\n",
	       n, ok, bad, first_bad);
}

static int forker(int n, int m, int use_vfork, int grand, int lib)
{
	pid_t *pids = calloc((size_t)n, sizeof(*pids));
	int i;

	if (!pids)
		return 1;
	if (lib)
		lc_lib_work(1000);
	else
		work(1000);
	for (i = 0; i < n; i++) {
		pid_t p = use_vfork ? vfork() : fork();

		if (p == 0 && grand) {
			int st = 0;
			pid_t g;

			run_named(m, 0);
			g = fork();
			if (g == 0) {
				run_named(m, 0);
				_exit(0);
			}
			if (g < 0 || waitpid(g, &st, 0) != g)
				_exit(3);
			_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 4);
		}
		if (p == 0) {
			if (lib)
				lc_lib_work(m);
			else
				work(m);
			if (linger_ms)
				usleep((useconds_t)linger_ms * 1000);
			_exit(0);
		}
		pids[i] = p;
	}
	reap(pids, n);
	free(pids);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = "fork";
	int n = 0, m = 0, exit_now = 0, i;
	char nb[32], mb[32], self[4096];
	ssize_t len;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--mode") && i + 1 < argc)
			mode = argv[++i];
		else if (!strcmp(argv[i], "-n") && i + 1 < argc)
			n = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-m") && i + 1 < argc)
			m = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--exit"))
			exit_now = 1;
		else if (!strcmp(argv[i], "--linger-ms") && i + 1 < argc)
			linger_ms = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: %s --mode fork|vfork|grandchild|libfork|exec|exec_sleep|after -n N -m M [--exit] [--linger-ms L]\n", argv[0]);
			return 2;
		}
	}
	signal(SIGUSR1, on_usr1);
	signal(SIGUSR2, on_usr2);
	if (!strcmp(mode, "after")) {
		/* the new image: runs at once, the test already said go */
		run_named(m, 1);
		lc_lib_work(m);
		printf("{\"after_exec\": %d, \"pid\": %d}\n", m, (int)getpid());
		fflush(stdout);
		while (!leave && !exit_now)
			usleep(1000);
		return 0;
	}
	printf("{\"pid\": %d}\n", (int)getpid());
	fflush(stdout);
	while (!go)
		usleep(1000);
	if (!strcmp(mode, "fork") || !strcmp(mode, "vfork") || !strcmp(mode, "grandchild") ||
	    !strcmp(mode, "libfork")) {
		if (forker(n, m, !strcmp(mode, "vfork"), !strcmp(mode, "grandchild"), !strcmp(mode, "libfork")))
			return 1;
	} else if (!strcmp(mode, "exec_sleep")) {
		run_named(n, 0);
		printf("{\"before_exec\": %d}\n", n);
		fflush(stdout);
		execl("/bin/sleep", "sleep", "30", (char *)NULL);
		perror("execl");
		return 1;
	} else if (!strcmp(mode, "exec")) {
		run_named(n, 0);
		printf("{\"before_exec\": %d}\n", n);
		fflush(stdout);
		snprintf(nb, sizeof(nb), "%d", n);
		snprintf(mb, sizeof(mb), "%d", m);
		/* the file itself, not /proc/self/exe, so that comm stays the program's name */
		if (linger_ms)
			usleep((useconds_t)linger_ms * 1000);
		len = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (len <= 0)
			return 1;
		self[len] = '\0';
		execl(self, argv[0], "--mode", "after", "-n", nb, "-m", mb, exit_now ? "--exit" : NULL, NULL);
		perror("execl");
		return 1;
	} else {
		fprintf(stderr, "unknown mode %s\n", mode);
		return 2;
	}
	fflush(stdout);
	while (!leave && !exit_now)
		usleep(1000);
	return 0;
}
