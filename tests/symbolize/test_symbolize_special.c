/* test_symbolize_special.c - the symbolizer never opens a file that is not
 * regular when a target's maps line or its .gnu_debuglink names it. Such a
 * path is the target's to choose: it can become a FIFO after the mapping,
 * or, seen from another mount namespace, name a device in qprofd's (opening
 * /dev/watchdog arms it, a tty becomes the daemon's). The witness is
 * inotify: opening a FIFO for reading raises IN_OPEN, looking at it through
 * O_PATH does not. No root needed.
 *
 * usage: test_symbolize_special link=SF_LINK tmp=DIR */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>
#include "symbolize/symbolize.h"
#include "testlib.h"

static const char *arg_link, *arg_tmp;

static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC), out;
	ssize_t n;

	if (in < 0)
		return -errno;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (out < 0) {
		close(in);
		return -errno;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			break;
	close(in);
	close(out);
	return n == 0 ? 0 : -EIO;
}

static int write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -errno;
	fputs(text, f);
	return fclose(f) ? -errno : 0;
}

/* Events inotify holds for the watched FIFOs: 0 when none was opened. */
static ssize_t pending_events(int in)
{
	char buf[4096] __attribute__((aligned(8)));
	ssize_t n = read(in, buf, sizeof(buf));

	return n < 0 && errno == EAGAIN ? 0 : n;
}

int main(int argc, char **argv)
{
	char dir[4096], proc[4200], pdir[4300], fifo[4300], copy[4300], dl1[4300], dl2[4400], maps[16384];
	struct qp_sym_opts o = { 0 };
	struct qp_symbolizer *s;
	struct stat st_fifo, st_copy;
	struct qp_sym q;
	int i, in;

	for (i = 1; i < argc; i++) {
		if (!strncmp(argv[i], "link=", 5))
			arg_link = argv[i] + 5;
		else if (!strncmp(argv[i], "tmp=", 4))
			arg_tmp = argv[i] + 4;
	}
	if (!arg_link || !arg_tmp) {
		fprintf(stderr, "usage: test_symbolize_special link=SF_LINK tmp=DIR\n");
		return 2;
	}
	mkdir(arg_tmp, 0755);
	snprintf(dir, sizeof(dir), "%s/special", arg_tmp);
	mkdir(dir, 0755);
	snprintf(proc, sizeof(proc), "%s/proc", dir);
	mkdir(proc, 0755);
	snprintf(pdir, sizeof(pdir), "%s/4300", proc);
	mkdir(pdir, 0755);

	/* a mapped file whose path is a FIFO now */
	snprintf(fifo, sizeof(fifo), "%s/lib_fifo.so", dir);
	unlink(fifo);
	CHECK_INT(mkfifo(fifo, 0600), 0);
	/* a real ELF file whose debuglink (sf_link.debug) names FIFOs in both
	 * places looked at beside it */
	snprintf(copy, sizeof(copy), "%s/sf_link", dir);
	CHECK_INT(copy_file(arg_link, copy), 0);
	snprintf(dl1, sizeof(dl1), "%s/sf_link.debug", dir);
	snprintf(dl2, sizeof(dl2), "%s/.debug", dir);
	mkdir(dl2, 0755);
	snprintf(dl2, sizeof(dl2), "%s/.debug/sf_link.debug", dir);
	unlink(dl1);
	unlink(dl2);
	CHECK_INT(mkfifo(dl1, 0600), 0);
	CHECK_INT(mkfifo(dl2, 0600), 0);
	CHECK_INT(stat(fifo, &st_fifo), 0);
	CHECK_INT(stat(copy, &st_copy), 0);

	snprintf(maps, sizeof(maps),
		 "10000000-10010000 r-xp 00000000 08:01 %llu %s\n"
		 "20000000-20100000 r-xp 00000000 08:01 %llu %s\n",
		 (unsigned long long)st_fifo.st_ino, fifo, (unsigned long long)st_copy.st_ino, copy);
	snprintf(pdir, sizeof(pdir), "%s/4300/maps", proc);
	CHECK_INT(write_text(pdir, maps), 0);

	in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	CHECK(in >= 0);
	CHECK(inotify_add_watch(in, fifo, IN_OPEN) >= 0);
	CHECK(inotify_add_watch(in, dl1, IN_OPEN) >= 0);
	CHECK(inotify_add_watch(in, dl2, IN_OPEN) >= 0);

	o.proc_root = proc;
	snprintf(dl1, sizeof(dl1), "%s/droot", dir);	/* an empty debug root */
	mkdir(dl1, 0755);
	o.debug_root = dl1;
	s = qp_symbolizer_new(&o);
	CHECK(s != NULL);
	if (!s)
		return test_done("test_symbolize_special");
	CHECK_INT(qp_sym_process_refresh(s, 4300), 0);

	CHECK_INT(qp_sym_user(s, 4300, 0x10000010, &q), 0);
	CHECK_STR(q.name, "lib_fifo.so+0x10");
	CHECK(!q.found);
	/* the stripped copy is read (its .dynsym or module+off); the
	 * debuglink's FIFOs are not opened */
	CHECK_INT(qp_sym_user(s, 4300, 0x20000100, &q), 0);
	CHECK(q.name != NULL && q.name[0]);
	CHECK_STR(q.module, "sf_link");

	/* the witness: not one IN_OPEN on the three FIFOs */
	CHECK_INT(pending_events(in), 0);

	qp_symbolizer_free(s);
	close(in);
	return test_done("test_symbolize_special");
}
