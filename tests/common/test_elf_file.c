/* test_elf_file.c - elf_file.c on the fixture binaries, no root: a FIFO, a
 * device, a directory and a file over 2 GiB are refused by qp_open_regular
 * without being read (a FIFO would block an open for reading forever);
 * every site of the fixtures passes the byte check, a site whose nop5 is
 * overwritten (int3) is refused and only that one; a file rewritten in place
 * is no longer the same file (identity and build-id bytes). Fixture paths
 * come as key=path arguments from tests/unit_elf.cmake. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/elf_probes.h"
#include "testlib.h"

static void copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	ssize_t n;

	if (in < 0 || out < 0) {
		perror(from);
		exit(2);
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			exit(2);
	close(in);
	close(out);
}

static void check_open(const char *dir, const char *pie)
{
	char fifo[512], big[512], err[256];
	int fd = -1;

	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	snprintf(big, sizeof(big), "%s/big", dir);
	CHECK_INT(mkfifo(fifo, 0600), 0);
	CHECK_INT(qp_open_regular(fifo, &fd, err, sizeof(err)), -EINVAL);	/* returns: no reader wait */
	CHECK_STR(err, "not a regular file");
	CHECK_INT(fd, -1);
	CHECK_INT(qp_open_regular("/dev/zero", &fd, err, sizeof(err)), -EINVAL);
	CHECK_INT(qp_open_regular(dir, &fd, err, sizeof(err)), -EISDIR);
	CHECK_INT(qp_open_regular("/no/such/file", &fd, err, sizeof(err)), -ENOENT);
	fd = open(big, O_WRONLY | O_CREAT, 0644);
	CHECK(fd >= 0 && ftruncate(fd, (off_t)QP_ELF_MAX_SIZE + 1) == 0);
	close(fd);
	CHECK_INT(qp_open_regular(big, &fd, err, sizeof(err)), -EFBIG);
	unlink(big);
	CHECK_INT(qp_open_regular(pie, &fd, err, sizeof(err)), 0);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
}

/* File offset of note I's site. */
static long site_offset(const struct qp_elf_probes *p, size_t i)
{
	size_t k;

	for (k = 0; k < p->nsegs; k++)
		if (p->notes[i].pc >= p->segs[k].vaddr && p->notes[i].pc - p->segs[k].vaddr < p->segs[k].filesz)
			return (long)(p->notes[i].pc - p->segs[k].vaddr + p->segs[k].offset);
	return -1;
}

static void check_sites(const char *dir, const char *pie, const char *sdt)
{
	struct qp_elf_probes *p = NULL, *q = NULL;
	char copy[512], err[256];
	unsigned char int3 = 0xcc;
	size_t i, victim = 0;
	long off;
	int fd;

	CHECK_INT(qp_elf_probes_open(sdt, &p, err, sizeof(err)), 0);
	if (p) {
		CHECK(p->nnotes > 0);
		CHECK_INT(p->nbad_notes, 0);	/* the 1-byte nops of <sys/sdt.h> */
		qp_elf_probes_free(p);
	}
	CHECK_INT(qp_elf_probes_open(pie, &p, err, sizeof(err)), 0);
	if (!p)
		return;
	CHECK_INT(p->nbad_notes, 0);
	for (i = 0; i < p->nnotes; i++)
		if (!strcmp(p->notes[i].provider, "qprof") && !strcmp(p->notes[i].name, "scope_enter"))
			victim = i;
	CHECK_STR(p->notes[victim].name, "scope_enter");
	snprintf(copy, sizeof(copy), "%s/pie", dir);
	copy_file(pie, copy);
	off = site_offset(p, victim);
	CHECK(off > 0);
	fd = open(copy, O_WRONLY);
	CHECK(fd >= 0 && pwrite(fd, &int3, 1, off) == 1);	/* a breakpoint where the nop5 was */
	close(fd);
	CHECK_INT(qp_elf_probes_open(copy, &q, err, sizeof(err)), 0);
	if (q) {
		CHECK_INT(q->nnotes, p->nnotes);
		CHECK_INT(q->nbad_notes, 1);
		CHECK_STR(q->notes[victim].bad ? q->notes[victim].bad : "(null)",
			  "site bytes are not the nop5 0f 1f 44 00 00");
		for (i = 0; i < q->nnotes; i++)
			if (i != victim)
				CHECK(q->notes[i].bad == NULL);
		qp_elf_probes_free(q);
	}
	qp_elf_probes_free(p);
}

static void check_identity(const char *dir, const char *pie)
{
	struct qp_elf_probes *p = NULL;
	struct timespec old[2];
	char copy[512], err[256];
	struct stat st;
	int fd, fd2;

	snprintf(copy, sizeof(copy), "%s/same", dir);
	copy_file(pie, copy);
	CHECK_INT(qp_open_regular(copy, &fd, err, sizeof(err)), 0);
	CHECK_INT(qp_elf_probes_fdopen(fd, copy, &p, err, sizeof(err)), 0);
	if (!p)
		return;
	CHECK(p->build_id_len == 20);
	CHECK_INT(qp_elf_same_file(p, fd), 1);
	CHECK_INT(fstat(fd, &st), 0);
	CHECK_INT((long long)p->id.ino, (long long)st.st_ino);
	/* the same bytes written again in place, times put back: ctime still moves */
	old[0] = st.st_atim;
	old[1] = st.st_mtim;
	copy_file(pie, copy);
	CHECK_INT(utimensat(AT_FDCWD, copy, old, 0), 0);
	CHECK_INT(stat(copy, &st), 0);
	CHECK_INT((long long)st.st_ino, (long long)p->id.ino);
	CHECK_INT(qp_elf_same_file(p, fd), 0);
	/* another file altogether */
	CHECK_INT(qp_open_regular("/proc/self/exe", &fd2, err, sizeof(err)), 0);
	CHECK_INT(qp_elf_same_file(p, fd2), 0);
	close(fd2);
	close(fd);
	qp_elf_probes_free(p);
}

int main(int argc, char **argv)
{
	const char *pie = NULL, *sdt = NULL;
	char dir[] = "/tmp/qprof-test-elffile-XXXXXX", cmd[600];
	int i;

	for (i = 1; i < argc; i++) {
		if (!strncmp(argv[i], "pie=", 4))
			pie = argv[i] + 4;
		else if (!strncmp(argv[i], "sdt=", 4))
			sdt = argv[i] + 4;
	}
	if (!pie || !sdt || !mkdtemp(dir)) {
		fprintf(stderr, "usage: %s pie=F sdt=F\n", argv[0]);
		return 2;
	}
	check_open(dir, pie);
	check_sites(dir, pie, sdt);
	check_identity(dir, pie);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return test_done("test_elf_file");
}
