/* heap_nofp.c - heap stacks without frame pointers (built -O2
 * -fomit-frame-pointer, no qprof marker). main -> run_work -> three
 * allocating callers, none of them calling malloc itself: keep_names keeps
 * 3,000 strdup'd strings of 1,000 characters (glibc's strdup calls malloc),
 * keep_blocks keeps 1,500 blocks of 4 KiB from xalloc (a wrapper of ours),
 * churn allocates and frees 2,000 blocks of 64 KiB through xalloc. It
 * prints its pid, and on "work" (stdin) runs them and prints "ok" and the
 * bytes each caller still holds by its own count (the truth the in-use
 * profile is checked against); it exits at end of input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noipa))

static char *names[3000];
static void *blocks[1500];
static char text[1001];

NOINLINE void *xalloc(size_t n)
{
	void *p = malloc(n);

	if (p)
		memset(p, 0x5a, n);
	return p;
}

NOINLINE size_t keep_names(void)
{
	size_t i, bytes = 0;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		names[i] = strdup(text);
		bytes += names[i] ? strlen(names[i]) + 1 : 0;
	}
	return bytes;
}

NOINLINE size_t keep_blocks(void)
{
	size_t i, bytes = 0;

	for (i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++) {
		blocks[i] = xalloc(4096);
		bytes += blocks[i] ? 4096 : 0;
	}
	return bytes;
}

NOINLINE size_t churn(void)
{
	volatile char sink = 0;
	int i;

	for (i = 0; i < 2000; i++) {
		char *p = xalloc(65536);

		if (p)
			sink += p[i];
		free(p);
	}
	(void)sink;
	return 0;
}

NOINLINE void run_work(void)
{
	size_t n = keep_names(), b = keep_blocks(), c = churn();

	printf("ok {\"keep_names\": %zu, \"keep_blocks\": %zu, \"churn\": %zu}\n", n, b, c);
	fflush(stdout);
}

int main(void)
{
	char line[64];

	memset(text, 'n', sizeof(text) - 1);
	printf("{\"pid\": %d}\n", (int)getpid());
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin))
		if (!strncmp(line, "work", 4))
			run_work();
	return 0;
}
