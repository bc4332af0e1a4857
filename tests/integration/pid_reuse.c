/* pid_reuse.c - an unrelated process made on a pid of the test's choice:
 * clone3(set_tid) gives the child exactly PID (free again after the
 * process that had it was reaped; needs CAP_SYS_ADMIN or
 * CAP_CHECKPOINT_RESTORE over the pid namespace). The child names itself
 * "intruder", starts 2 threads named "intruder-t" (the first spins in
 * intruder_spin(), the second sleeps), and dies with this process (PR_SET_PDEATHSIG). Prints
 * {"pid": N} once the threads run, then waits for the child.
 *
 *   pid_reuse PID      exit 2: clone3 refused (errno printed), 3: bad PID */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile uint64_t sink;

__attribute__((noinline)) static void intruder_spin(void)
{
	for (;;)
		for (unsigned int i = 0; i < 1000000u; i++)
			sink = sink * 6364136223846793005ull + i;
}

static void *thread_main(void *arg)
{
	prctl(PR_SET_NAME, "intruder-t");
	if (arg)
		intruder_spin();
	for (;;)
		pause();
	return NULL;
}

int main(int argc, char **argv)
{
	struct clone_args ca;
	pid_t want, pid;
	char *end;
	long v;
	int pfd[2], st;

	if (argc != 2 || (v = strtol(argv[1], &end, 10), *end) || v <= 1 || v > 4194304) {
		fprintf(stderr, "usage: pid_reuse PID\n");
		return 3;
	}
	want = (pid_t)v;
	if (pipe(pfd))
		return 2;
	memset(&ca, 0, sizeof(ca));
	ca.exit_signal = SIGCHLD;
	ca.set_tid = (uint64_t)(uintptr_t)&want;
	ca.set_tid_size = 1;
	pid = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid < 0) {
		fprintf(stderr, "clone3(set_tid=%d): %s\n", (int)want, strerror(errno));
		return 2;
	}
	if (pid == 0) {
		pthread_t t;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		prctl(PR_SET_NAME, "intruder");
		close(pfd[0]);
		for (int i = 0; i < 2; i++)
			pthread_create(&t, NULL, thread_main, i ? NULL : (void *)1);
		if (write(pfd[1], "r", 1) != 1)
			_exit(1);
		close(pfd[1]);
		for (;;)
			pause();
	}
	close(pfd[1]);
	{
		char c;

		if (read(pfd[0], &c, 1) != 1)
			return 2;
	}
	printf("{\"pid\": %d}\n", (int)pid);
	fflush(stdout);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return 0;
}
