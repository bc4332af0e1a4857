/* heap_target.c - a program with known allocations, driven by commands on
 * standard input (one a line), each answered "ok NAME" on standard output:
 *   work   keep_blocks: 8 MiB live in 4 KiB blocks (malloc); churn: 200 MiB
 *          malloc'ed and freed in 4 KiB blocks; keep_calloc: 16 MiB live in
 *          64 KiB blocks (calloc)
 *   more   keep_more: 4 MiB live in 4 KiB blocks (posix_memalign and realloc)
 *   exit   exit(0)
 * It prints {"pid": N} first. Built -O1 -fno-inline -fno-omit-frame-pointer,
 * so each function is its allocations' caller frame. CHURN_MIB in the
 * environment changes the churned amount (bench). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <qprof/qprof.h>

static void *volatile sink;

__attribute__((noinline)) void keep_blocks(void **keep, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		keep[i] = malloc(4096);
		memset(keep[i], 1, 64);
	}
}

__attribute__((noinline)) void churn(size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char *p = malloc(4096);

		p[0] = (char)i;	/* used: the pair is not optimized away */
		sink = p;
		free(p);
	}
}

__attribute__((noinline)) void keep_calloc(void **keep, size_t n)
{
	for (size_t i = 0; i < n; i++)
		keep[i] = calloc(16, 4096);
}

/* half posix_memalign, half malloc(1024) grown by realloc to 4096 */
__attribute__((noinline)) void keep_more(void **keep, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (i % 2) {
			void *p = NULL;

			if (posix_memalign(&p, 64, 4096))
				abort();
			keep[i] = p;
		} else {
			keep[i] = realloc(malloc(1024), 4096);
		}
	}
}

int main(void)
{
	static void *blocks[2048], *zeroed[256], *more[1024];
	const char *env = getenv("CHURN_MIB");
	size_t churn_n = (env ? strtoul(env, NULL, 10) : 200) * 256;
	char line[64];

	QPROF_MARK("heap_target_start");	/* a qprof probe: qprofd attaches to it */
	printf("{\"pid\": %d}\n", (int)getpid());
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		if (!strcmp(line, "work\n")) {
			keep_blocks(blocks, 2048);
			churn(churn_n);
			keep_calloc(zeroed, 256);
			printf("ok work\n");
		} else if (!strcmp(line, "more\n")) {
			keep_more(more, 1024);
			printf("ok more\n");
		} else if (!strcmp(line, "exit\n")) {
			printf("ok exit\n");
			fflush(stdout);
			exit(0);
		} else {
			printf("? %s", line);
		}
		fflush(stdout);
	}
	return 0;
}
