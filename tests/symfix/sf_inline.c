/* sf_inline.c - symbolizer fixture for source lines and inlined frames,
 * built -O2 -g (and stripped, its DWARF in a debug file found by build-id).
 * sf_mark() records its return address, which lies in sf_leaf() inlined
 * into sf_mid() inlined into sf_outer(). It prints its pid, that address
 * and sf_outer's, then waits until its stdin closes. test_symbolize_lines.c
 * finds the marked lines (LINE_*) in this file: keep each call on its line. */
#include <stdio.h>
#include <unistd.h>

static volatile unsigned long where;

__attribute__((noipa)) void sf_mark(void)
{
	where = (unsigned long)__builtin_return_address(0);
}

static inline __attribute__((always_inline)) int sf_leaf(int x)
{
	sf_mark(); /* LINE_LEAF_CALL */
	return x * 3;
}

static inline __attribute__((always_inline)) int sf_mid(int x)
{
	return sf_leaf(x) + 1; /* LINE_MID_CALL */
}

__attribute__((noipa)) int sf_outer(int x)
{
	int r = sf_mid(x); /* LINE_OUTER_CALL */

	return r + (int)where;
}

int main(void)
{
	char c;

	sf_outer((int)getpid() & 7);
	printf("%d %#lx %#lx\n", (int)getpid(), where, (unsigned long)&sf_outer);
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	return 0;
}
