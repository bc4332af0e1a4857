/* plugin_host.c - a host that loads marked plugins when told, as a trading
 * engine loads its strategies: it prints {"pid": N}, then reads commands on
 * stdin, one a line, and answers each with one JSON line:
 *   open ID PATH    dlopen(PATH, RTLD_NOW) as handle ID (0..15): {"ok", "ns"}
 *                   (ns: how long dlopen took)
 *   call ID N       N calls of the plugin's plugin_work(): {"ok", "calls"}
 *   close ID        dlclose: {"ok", "ns"}
 *   quit            exit 0
 * Nothing runs between commands, so the test knows exactly how many marked
 * scopes ran. The host has one marker of its own (a mark per command), as
 * qprofd attaches --pid only to a process with markers. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <qprof/qprof.h>

#define MAX_HANDLES 16

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(void)
{
	void *h[MAX_HANDLES] = { 0 };
	char line[4096], path[4000];
	int id;
	long n;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("{\"pid\": %d}\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin)) {
		QPROF_MARK("host_command");
		if (sscanf(line, "open %d %3999s", &id, path) == 2 && id >= 0 && id < MAX_HANDLES) {
			uint64_t t0 = now_ns(), t1;

			h[id] = dlopen(path, RTLD_NOW | RTLD_LOCAL);
			t1 = now_ns();
			if (!h[id])
				printf("{\"ok\": false, \"error\": \"dlopen failed\"}\n");
			else
				printf("{\"ok\": true, \"ns\": %llu}\n", (unsigned long long)(t1 - t0));
		} else if (sscanf(line, "call %d %ld", &id, &n) == 2 && id >= 0 && id < MAX_HANDLES &&
			   h[id] && n >= 0) {
			void (*work)(void) = (void (*)(void))dlsym(h[id], "plugin_work");
			long i;

			if (!work) {
				printf("{\"ok\": false, \"error\": \"no plugin_work\"}\n");
				continue;
			}
			for (i = 0; i < n; i++)
				work();
			printf("{\"ok\": true, \"calls\": %ld}\n", n);
		} else if (sscanf(line, "close %d", &id) == 1 && id >= 0 && id < MAX_HANDLES && h[id]) {
			uint64_t t0 = now_ns(), t1;
			int ret = dlclose(h[id]);

			t1 = now_ns();
			h[id] = NULL;
			printf("{\"ok\": %s, \"ns\": %llu}\n", ret ? "false" : "true",
			       (unsigned long long)(t1 - t0));
		} else if (!strncmp(line, "quit", 4)) {
			return 0;
		} else {
			printf("{\"ok\": false, \"error\": \"bad command\"}\n");
		}
	}
	return 0;
}
