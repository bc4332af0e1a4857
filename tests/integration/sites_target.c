/* sites_target.c - a program with 8194 qprof probe sites (4096 block scopes
 * spread over 8 functions, and the scope "hot"; an enter and an exit each),
 * for the tests that need an attach and a detach that take the kernel a
 * while: each site is a uprobe to register and unregister. Prints
 * {"pid": N} and runs "hot" once a millisecond until killed; the 4096 others
 * run only with an argument (they would make thousands of aggregates, whose
 * reading is not what those tests time). */
#include <stdio.h>
#include <unistd.h>
#include <qprof/qprof.h>

static volatile unsigned long sink;

#define S1 { QPROF_SCOPE("site"); sink++; }
#define S8 S1 S1 S1 S1 S1 S1 S1 S1
#define S64 S8 S8 S8 S8 S8 S8 S8 S8
#define S512 S64 S64 S64 S64 S64 S64 S64 S64
#define F(n) __attribute__((noinline)) static void f##n(void) { S512 }
F(0) F(1) F(2) F(3) F(4) F(5) F(6) F(7)

__attribute__((noinline)) static void hot(void)
{
	QPROF_SCOPE("hot");
	sink++;
}

int main(int argc, char **argv)
{
	void (*const fs[])(void) = { f0, f1, f2, f3, f4, f5, f6, f7 };
	unsigned int i;

	(void)argv;
	printf("{\"pid\": %d}\n", (int)getpid());
	fflush(stdout);
	for (;;) {
		for (i = 0; argc > 1 && i < 8; i++)
			fs[i]();
		hot();
		usleep(1000);
	}
}
