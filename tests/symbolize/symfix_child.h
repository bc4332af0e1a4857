/* symfix_child.h - runs a symbolizer fixture program (tests/symfix) for the
 * unit tests: the program prints its pid and the runtime addresses of known
 * functions on one line, then waits until its stdin closes. Shared by
 * test_symbolize.c and test_symbolize_threads.c. */
#ifndef QPROF_SYMFIX_CHILD_H
#define QPROF_SYMFIX_CHILD_H
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct child {
	pid_t pid;
	int in_fd;
	unsigned long v[6];	/* the numbers of its first line */
	int nv;
};

/* Run PATH and read its first line of numbers. 0, or -1 (said on stderr). */
static inline int spawn(const char *path, struct child *c)
{
	int in[2], out[2];
	char line[512], *p, *e;
	FILE *f;

	memset(c, 0, sizeof(*c));
	/* close-on-exec: a later child must not hold this one's stdin open */
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC))
		return -1;
	c->pid = fork();
	if (c->pid < 0)
		return -1;
	if (c->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execl(path, path, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	c->in_fd = in[1];
	f = fdopen(out[0], "r");
	if (!f || !fgets(line, sizeof(line), f)) {
		fprintf(stderr, "%s: no output\n", path);
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	for (p = line; c->nv < 6; p = e) {
		c->v[c->nv] = strtoul(p, &e, 0);
		if (e == p)
			break;
		c->nv++;
	}
	return 0;
}

/* Close its stdin (it exits) and reap it: its wait status. */
static inline int finish(struct child *c)
{
	int st = 0;

	close(c->in_fd);
	waitpid(c->pid, &st, 0);
	return st;
}
#endif
