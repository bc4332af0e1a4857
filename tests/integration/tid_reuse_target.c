/* tid_reuse_target.c - one tid, two threads: a thread named "old-thread"
 * runs scope "reuse_work" N times and exits; then a thread named
 * "new-thread" is made on that very tid and runs it N times too (with the
 * ring collector, it takes the first thread's ring from the free list).
 *
 * The tid is had again through /proc/sys/kernel/ns_last_pid (root): it is
 * set to TID - 1 and a thread made, and when another process of the host
 * took TID first the new thread exits at once, writing nothing, and the
 * test tries again (up to 5000 times). Each scope sleeps 2 ms, so the
 * collector's drain (every millisecond) reads the ring while its owner
 * runs.
 *
 * Prints {"pid": N}, waits for SIGUSR1, works, prints {"tid", "tries",
 * "boundary_ns"} (CLOCK_MONOTONIC between the first thread's end and the
 * second's start; "tid": 0 when the tid could not be had again), then waits
 * for SIGUSR2.
 *
 *   tid_reuse_target N */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <qprof/qprof.h>

static volatile sig_atomic_t go, leave;
static void on_usr1(int s) { go = 1; }
static void on_usr2(int s) { leave = 1; }

static int iters;
static pid_t want;	/* the tid the second thread must have */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static __attribute__((noinline)) void work(int n)
{
	struct timespec ts = { 0, 2000000 };
	int i;

	for (i = 0; i < n; i++) {
		QPROF_SCOPE("reuse_work");
		nanosleep(&ts, NULL);
	}
}

static void *old_thread(void *arg)
{
	prctl(PR_SET_NAME, "old-thread");
	*(pid_t *)arg = (pid_t)syscall(SYS_gettid);
	work(iters);
	return NULL;
}

static void *new_thread(void *arg)
{
	if ((pid_t)syscall(SYS_gettid) != want)
		return NULL;	/* not the tid: no marker ran, no ring taken */
	prctl(PR_SET_NAME, "new-thread");
	*(int *)arg = 1;
	work(iters);
	return NULL;
}

static int set_last_pid(pid_t v)
{
	char buf[32];
	int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC), len, ret;

	if (fd < 0)
		return -1;
	len = snprintf(buf, sizeof(buf), "%d", (int)v);
	ret = write(fd, buf, (size_t)len) == len ? 0 : -1;
	close(fd);
	return ret;
}

int main(int argc, char **argv)
{
	uint64_t boundary;
	pthread_t t;
	int tries, got = 0;

	if (argc != 2 || (iters = atoi(argv[1])) <= 0) {
		fprintf(stderr, "usage: tid_reuse_target N\n");
		return 2;
	}
	signal(SIGUSR1, on_usr1);
	signal(SIGUSR2, on_usr2);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("{\"pid\": %d}\n", (int)getpid());
	while (!go)
		usleep(1000);
	if (pthread_create(&t, NULL, old_thread, &want) || pthread_join(t, NULL))
		return 1;
	/* its tid is free once the kernel reaped the thread: a moment after the join */
	usleep(20000);
	boundary = now_ns();
	for (tries = 1; tries <= 5000 && !got; tries++) {
		if (set_last_pid(want - 1))
			break;
		if (pthread_create(&t, NULL, new_thread, &got) || pthread_join(t, NULL))
			return 1;
	}
	printf("{\"tid\": %d, \"tries\": %d, \"boundary_ns\": %llu}\n", got ? (int)want : 0, tries - 1,
	       (unsigned long long)boundary);
	while (!leave)
		usleep(1000);
	return 0;
}
