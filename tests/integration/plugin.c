/* plugin.c - a strategy plugin for plugin_host: plugin_work() is one marked
 * scope that spins about PLUGIN_SPIN_NS on the CPU in plugin_spin(), so CPU
 * samples land in a function of the plugin. Built several ways:
 * PLUGIN_V2 moves its code (a rebuilt version), QPROF_DISABLE leaves no
 * markers. */
#include <stdint.h>
#include <time.h>
#include <qprof/qprof.h>

#ifndef PLUGIN_SPIN_NS
#define PLUGIN_SPIN_NS 100000
#endif

void plugin_work(void);

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#ifdef PLUGIN_V2
/* code ahead of the marked function: its sites sit at other offsets */
__attribute__((noinline, used)) int plugin_v2_pad(int x)
{
	volatile int a[64];
	int i;

	for (i = 0; i < 64; i++)
		a[i] = x * i;
	return a[x & 63] + a[(x >> 3) & 63];
}
#define SCOPE_NAME "plugin_scope_v2"
#else
#define SCOPE_NAME "plugin_scope"
#endif

__attribute__((noinline)) void plugin_spin(void)
{
	uint64_t end = now_ns() + PLUGIN_SPIN_NS;

	while (now_ns() < end)
		__asm__ __volatile__("" ::: "memory");
}

void plugin_work(void)
{
	QPROF_SCOPE(SCOPE_NAME);
	plugin_spin();
}
