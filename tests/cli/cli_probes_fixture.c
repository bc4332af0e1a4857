/* cli_probes_fixture.c - a small program with known probes for the
 * `qprof-cli probes` test: qprof sites of every common kind and one foreign
 * USDT probe (provider "demo", written twice). Run with --expect it prints
 * the site rows the CLI must list ("KIND NAME FILE:LINE FUNCTION"), taken
 * from __LINE__ on the marker lines themselves so that editing this file
 * cannot make the test stale. */
#include <qprof/qprof.h>

#include <stdio.h>
#include <string.h>

/* A USDT note of another provider, in the stapsdt format, without
 * <sys/sdt.h>: one 1-byte nop and its note; argument spec "-4@<reg>". */
#define DEMO_TICK(v)                                                               \
	__asm__ __volatile__("990: nop\n"                                          \
			     ".pushsection .note.stapsdt,\"?\",\"note\"\n"         \
			     ".balign 4\n"                                         \
			     ".4byte 992f-991f, 994f-993f, 3\n"                    \
			     "991: .asciz \"stapsdt\"\n"                           \
			     "992: .balign 4\n"                                    \
			     "993: .8byte 990b\n"                                  \
			     ".8byte _.stapsdt.base\n"                             \
			     ".8byte 0\n"                                          \
			     ".asciz \"demo\"\n"                                   \
			     ".asciz \"tick\"\n"                                   \
			     ".asciz \"-4@%0\"\n"                                  \
			     "994: .balign 4\n"                                    \
			     ".popsection\n"                                       \
			     : : "r"((int)(v)))

static int line_func, line_scope, line_mark, line_value, line_log;

static int work(int n)
{
	int i, s = 0;

	QPROF_FUNC(); line_func = __LINE__;
	{
		QPROF_SCOPE("inner_loop"); line_scope = __LINE__;
		for (i = 0; i < n; i++)
			s += i;
	}
	DEMO_TICK(s);
	QPROF_MARK("work_done"); line_mark = __LINE__;
	QPROF_VALUE("n_value", n); line_value = __LINE__;
	QPROF_LOG("s=%d", s); line_log = __LINE__;
	return s;
}

int main(int argc, char **argv)
{
	int s = work(argc + 2);

	DEMO_TICK(s);
	if (argc > 1 && strcmp(argv[1], "--expect") == 0) {
		printf("func work %s:%d work\n", __FILE__, line_func);
		printf("scope inner_loop %s:%d work\n", __FILE__, line_scope);
		printf("mark work_done %s:%d work\n", __FILE__, line_mark);
		printf("value n_value %s:%d work\n", __FILE__, line_value);
		printf("log log %s:%d work\n", __FILE__, line_log);
	}
	return 0;
}
