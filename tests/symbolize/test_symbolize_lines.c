/* test_symbolize_lines.c - source lines and inlined frames (sym_dwarf.c) on
 * the fixture tests/symfix/sf_inline.c built -O2 -g: an address in
 * sf_leaf() inlined into sf_mid() inlined into sf_outer() must give
 * sf_outer at the line of its call to sf_mid, then sf_mid at the line of
 * its call to sf_leaf, then sf_leaf at the line of its call to sf_mark;
 * the line numbers are found in the source by their LINE_* markers. The
 * same from the stripped copy whose DWARF is in a debug file found by
 * build-id, and nothing of DWARF (the name from .symtab still) without
 * it. Then the process's executable, and a FIFO where a .gnu_debuglink
 * file is looked for: the symbolizer must not block on it (it did: open()
 * without O_NONBLOCK waits for a writer forever; an alarm fails the test).
 * usage: test_symbolize_lines inline=PATH inline_bid=PATH debugroot=DIR
 *        src=sf_inline.c link=PATH tmp=DIR */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolize/symbolize.h"
#include "testlib.h"
#include "symfix_child.h"

static const char *arg_inline, *arg_bid, *arg_debugroot, *arg_src, *arg_link, *arg_tmp;
static int line_leaf, line_mid, line_outer;

static const char *base(const char *p)
{
	const char *b = p ? strrchr(p, '/') : NULL;

	return b ? b + 1 : p;
}

/* The line of SRC holding MARK; 0 when none. */
static int find_line(const char *mark)
{
	char buf[512];
	FILE *f = fopen(arg_src, "r");
	int n = 0, found = 0;

	while (f && fgets(buf, sizeof(buf), f)) {
		n++;
		if (strstr(buf, mark)) {
			found = n;
			break;
		}
	}
	if (f)
		fclose(f);
	return found;
}

static void check_inline(const char *path, const char *debug_root, bool dwarf)
{
	struct qp_sym_opts o = { .debug_root = debug_root, .kallsyms = "/nonexistent" };
	struct qp_symbolizer *s = qp_symbolizer_new(&o);
	struct child c;
	struct qp_sym q;
	char real[4096];

	if (!s || spawn(path, &c)) {
		CHECK(!"spawn");
		qp_symbolizer_free(s);
		return;
	}
	CHECK_INT(c.nv, 3);
	CHECK_INT(qp_sym_process_refresh(s, c.pid), 0);
	CHECK(realpath(path, real) != NULL);
	CHECK_STR(qp_sym_process_exe(s, c.pid), real);
	/* a return address: the call is the byte before */
	CHECK_INT(qp_sym_user(s, c.pid, c.v[1] - 1, &q), 0);
	if (dwarf) {
		CHECK_STR(q.name, "sf_outer");
		CHECK(q.found);
		CHECK_STR(base(q.src_file), "sf_inline.c");
		CHECK_INT(q.src_line, line_outer);
		CHECK_INT(q.ninl, 2);
		CHECK(!q.inl_truncated);
		if (q.ninl == 2) {
			CHECK_STR(q.inl[0].name, "sf_leaf");
			CHECK_STR(base(q.inl[0].file), "sf_inline.c");
			CHECK_INT(q.inl[0].line, line_leaf);
			CHECK_STR(q.inl[1].name, "sf_mid");
			CHECK_STR(base(q.inl[1].file), "sf_inline.c");
			CHECK_INT(q.inl[1].line, line_mid);
		}
		CHECK(q.src_file && q.src_file[0] == '/');	/* absolute: pprof -list finds it */
		/* the answer is cached: the same again */
		{
			struct qp_sym q2;

			qp_sym_user(s, c.pid, c.v[1] - 1, &q2);
			CHECK(q2.src_file == q.src_file && q2.ninl == q.ninl && q2.src_line == q.src_line);
		}
	} else {	/* stripped, no debug file: no name, no line */
		CHECK(!q.found);
		CHECK(q.src_file == NULL);
		CHECK_INT(q.src_line, 0);
		CHECK_INT(q.ninl, 0);
	}
	/* sf_outer's first instruction: its own code, nothing inlined */
	qp_sym_user(s, c.pid, c.v[2], &q);
	CHECK_INT(q.ninl, 0);
	if (dwarf) {
		CHECK_STR(q.name, "sf_outer");
		CHECK(q.src_line > 0 && q.src_line <= (uint32_t)line_outer);
	}
	CHECK_INT(finish(&c), 0);
	qp_symbolizer_free(s);
}

static void on_alarm(int sig)
{
	static const char msg[] = "test_symbolize_lines: blocked on the FIFO debug file\n";

	(void)sig;
	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(1);
}

/* A stripped program whose .gnu_debuglink names sf_link.debug, with a FIFO
 * of that name beside it. */
static void check_fifo_debuglink(void)
{
	char dir[1024], prog[1024 + 16], fifo[1024 + 32], cmd[4 * 1024 + 64];
	struct qp_sym_opts o = { .debug_root = "/nonexistent-debug-root", .kallsyms = "/nonexistent" };
	struct qp_symbolizer *s;
	struct child c;
	struct qp_sym q;

	snprintf(dir, sizeof(dir), "%s/fifo", arg_tmp);
	snprintf(prog, sizeof(prog), "%s/sf_link", dir);
	snprintf(fifo, sizeof(fifo), "%s/sf_link.debug", dir);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s' && cp '%s' '%s'", dir, dir, arg_link, prog);
	CHECK_INT(system(cmd), 0);
	CHECK_INT(mkfifo(fifo, 0600), 0);
	s = qp_symbolizer_new(&o);
	if (!s || spawn(prog, &c)) {
		CHECK(!"spawn");
		qp_symbolizer_free(s);
		return;
	}
	signal(SIGALRM, on_alarm);
	alarm(30);	/* generous: the lookup takes milliseconds */
	CHECK_INT(qp_sym_process_refresh(s, c.pid), 0);
	qp_sym_user(s, c.pid, c.v[1], &q);
	alarm(0);
	CHECK(!q.found);	/* no debug file: the stripped program's address stays unnamed */
	CHECK_STR(q.module, "sf_link");
	finish(&c);
	qp_symbolizer_free(s);
}

int main(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strncmp(a, "inline=", 7))
			arg_inline = a + 7;
		else if (!strncmp(a, "inline_bid=", 11))
			arg_bid = a + 11;
		else if (!strncmp(a, "debugroot=", 10))
			arg_debugroot = a + 10;
		else if (!strncmp(a, "src=", 4))
			arg_src = a + 4;
		else if (!strncmp(a, "link=", 5))
			arg_link = a + 5;
		else if (!strncmp(a, "tmp=", 4))
			arg_tmp = a + 4;
	}
	if (!arg_inline || !arg_bid || !arg_debugroot || !arg_src || !arg_link || !arg_tmp) {
		fprintf(stderr, "usage: test_symbolize_lines inline= inline_bid= debugroot= src= link= tmp=\n");
		return 2;
	}
	line_leaf = find_line("LINE_LEAF_CALL");
	line_mid = find_line("LINE_MID_CALL");
	line_outer = find_line("LINE_OUTER_CALL");
	CHECK(line_leaf > 0 && line_mid > 0 && line_outer > 0);
	mkdir(arg_tmp, 0700);
	check_inline(arg_inline, "/nonexistent-debug-root", true);
	check_inline(arg_bid, arg_debugroot, true);
	check_inline(arg_bid, "/nonexistent-debug-root", false);
	check_fifo_debuglink();
	return test_done("symbolize_lines");
}
