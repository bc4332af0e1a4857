/* edge_target.c - a program for the tests of a target's life at its edges:
 * a child forked while attached, execs in a row, many targets exiting at
 * once. It prints {"pid": N}, then by mode:
 *
 *   --mode forkhold     waits for SIGUSR1, runs the markers 1000 times (a
 *                       scope, a value, a log, a mark: the kernel optimizes
 *                       their sites), forks a child that runs them 1000 times
 *                       too, prints {"child": PID, "log_sem": ADDR, ...} with
 *                       the addresses of its USDT semaphores (the child's are
 *                       at the same addresses), then both wait for SIGUSR2
 *   --mode execloop -n N   waits for SIGUSR1, then each image runs the
 *                       markers 10 times and execs itself with N - 1; the
 *                       last one prints {"images": N + 1} and waits for SIGUSR2
 *   --mode hold         runs the markers 100 times, then blocks reading
 *                       stdin and exits 0 at its end of file (a test holding
 *                       the pipe's other end ends many of them at once)
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <qprof/qprof.h>

static volatile sig_atomic_t go, leave;
static void on_usr1(int s) { (void)s; go = 1; }
static void on_usr2(int s) { (void)s; leave = 1; }

static __attribute__((noinline)) void markers(int n)
{
	int i;

	for (i = 0; i < n; i++) {
		QPROF_SCOPE("edge_work");
		QPROF_VALUE("edge_value", (double)i);
		QPROF_LOG("edge i=%d", i);
		QPROF_MARK("edge_mark");
		__asm__ __volatile__("" ::: "memory");
	}
}

static void wait_leave(void)
{
	while (!leave)
		usleep(1000);
}

int main(int argc, char **argv)
{
	const char *mode = NULL;
	int n = 0, next = 0, i;
	char self[4096], nb[32];
	ssize_t len;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--mode") && i + 1 < argc)
			mode = argv[++i];
		else if (!strcmp(argv[i], "-n") && i + 1 < argc)
			n = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--next"))
			next = 1;	/* an image execed by execloop: runs at once */
		else
			mode = NULL, i = argc;
	}
	if (!mode) {
		fprintf(stderr, "usage: %s --mode forkhold|execloop|hold [-n N]\n", argv[0]);
		return 2;
	}
	signal(SIGUSR1, on_usr1);
	signal(SIGUSR2, on_usr2);
	if (!next) {
		printf("{\"pid\": %d}\n", (int)getpid());
		fflush(stdout);
	}
	if (!strcmp(mode, "hold")) {
		char buf[64];
		ssize_t r;

		markers(100);
		do
			r = read(0, buf, sizeof(buf));
		while (r > 0 || (r < 0 && errno == EINTR));
		return 0;
	}
	while (!next && !go)
		usleep(1000);
	if (!strcmp(mode, "forkhold")) {
		pid_t p;

		markers(1000);
		p = fork();
		if (p < 0)
			return 1;
		if (p == 0) {
			markers(1000);
			wait_leave();
			_exit(0);
		}
		printf("{\"child\": %d, \"log_sem\": %llu, \"value_sem\": %llu, \"ring_sem\": %llu}\n", (int)p,
		       (unsigned long long)(uintptr_t)&qprof_log_semaphore,
		       (unsigned long long)(uintptr_t)&qprof_value_semaphore,
		       (unsigned long long)(uintptr_t)&qprof_ring_semaphore);
		fflush(stdout);
		wait_leave();
		return 0;
	}
	if (!strcmp(mode, "execloop")) {
		markers(10);
		if (n > 0) {
			len = readlink("/proc/self/exe", self, sizeof(self) - 1);
			if (len <= 0)
				return 1;
			self[len] = '\0';
			snprintf(nb, sizeof(nb), "%d", n - 1);
			execl(self, argv[0], "--mode", "execloop", "-n", nb, "--next", (char *)NULL);
			perror("execl");
			return 1;
		}
		printf("{\"last_image\": %d}\n", (int)getpid());
		fflush(stdout);
		wait_leave();
		return 0;
	}
	fprintf(stderr, "unknown mode %s\n", mode);
	return 2;
}
