/* elf_file.c - the file side of probing: open a file someone named without
 * blocking on it or touching a device (O_PATH, then a regular-file reopen),
 * tell one version of a file from another (dev, inode, size, mtime, ctime,
 * build-id bytes), and check each probe site against the bytes of the file
 * before anything is attached there. A uprobe on a byte that is not the
 * nop the note promises corrupts the target; a semaphore at a wrong offset
 * makes the kernel add to a random word of its memory. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "elf_probes.h"

static const unsigned char nop5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };

int qp_open_regular(const char *path, int *fd, char *err, size_t errlen)
{
	char self[64];
	struct stat st, st2;
	int pfd, rfd, e;

	*fd = -1;
	pfd = open(path, O_PATH | O_CLOEXEC);
	if (pfd < 0) {
		e = errno;
		if (e == ENOENT || e == ENOTDIR)
			snprintf(err, errlen, "no such file");
		else if (e == EACCES || e == EPERM)
			snprintf(err, errlen, "permission denied");
		else
			snprintf(err, errlen, "cannot open: %s", strerror(e));
		return e == ENOTDIR ? -ENOENT : -e;
	}
	if (fstat(pfd, &st)) {
		e = errno;
		close(pfd);
		snprintf(err, errlen, "cannot stat: %s", strerror(e));
		return -e;
	}
	if (!S_ISREG(st.st_mode)) {
		close(pfd);
		snprintf(err, errlen, S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file");
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	}
	if ((uint64_t)st.st_size > QP_ELF_MAX_SIZE) {
		close(pfd);
		snprintf(err, errlen, "larger than %llu bytes", (unsigned long long)QP_ELF_MAX_SIZE);
		return -EFBIG;
	}
	/* reopen that very inode: the path may have been swapped meanwhile */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	rfd = open(self, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	e = errno;
	close(pfd);
	if (rfd < 0) {
		snprintf(err, errlen, e == EACCES || e == EPERM ? "permission denied" : "cannot open: %s",
			 strerror(e));
		return -e;
	}
	if (fstat(rfd, &st2) || st2.st_dev != st.st_dev || st2.st_ino != st.st_ino ||
	    !S_ISREG(st2.st_mode)) {
		close(rfd);
		snprintf(err, errlen, "not a regular file");
		return -EINVAL;
	}
	*fd = rfd;
	return 0;
}

int qp_open_regular_st(const char *path, struct stat *st)
{
	struct stat st2;
	char self[64];
	int pfd, rfd, e;

	pfd = open(path, O_PATH | O_CLOEXEC);
	if (pfd < 0)
		return -errno;
	if (fstat(pfd, st) || !S_ISREG(st->st_mode)) {
		close(pfd);
		return -EINVAL;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	rfd = open(self, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	e = errno;
	close(pfd);
	if (rfd < 0)
		return -e;
	if (fstat(rfd, &st2) || st2.st_dev != st->st_dev || st2.st_ino != st->st_ino || !S_ISREG(st2.st_mode)) {
		close(rfd);
		return -EINVAL;
	}
	*st = st2;
	return rfd;
}

void qp_file_id_of(const struct stat *st, struct qp_file_id *id)
{
	memset(id, 0, sizeof(*id));
	id->dev = (uint64_t)st->st_dev;
	id->ino = (uint64_t)st->st_ino;
	id->size = (uint64_t)st->st_size;
	id->mtime = st->st_mtim;
	id->ctime = st->st_ctim;
}

bool qp_file_id_eq(const struct qp_file_id *a, const struct qp_file_id *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec &&
	       a->ctime.tv_sec == b->ctime.tv_sec && a->ctime.tv_nsec == b->ctime.tv_nsec;
}

int qp_elf_same_file(const struct qp_elf_probes *p, int fd)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char b[20];
	struct qp_file_id id;
	struct stat st;
	uint32_t i;

	if (fstat(fd, &st))
		return -errno;
	qp_file_id_of(&st, &id);
	if (!qp_file_id_eq(&id, &p->id))
		return 0;
	if (!p->build_id_len)
		return 1;
	if (p->build_id_len > sizeof(b) ||
	    pread(fd, b, p->build_id_len, (off_t)p->build_id_off) != (ssize_t)p->build_id_len)
		return 0;
	for (i = 0; i < p->build_id_len; i++)
		if (p->build_id[2 * i] != hex[b[i] >> 4] || p->build_id[2 * i + 1] != hex[b[i] & 15])
			return 0;
	return 1;
}

/* The file offset of link-time address ADDR inside a load segment with
 * FLAG and at least LEN file bytes there, or -ENOENT. */
static int seg_offset(const struct qp_elf_probes *p, uint64_t addr, uint64_t len, uint32_t flag,
		      uint64_t *off)
{
	size_t i;

	for (i = 0; i < p->nsegs; i++) {
		const struct qp_elf_segment *g = &p->segs[i];

		if (!(g->flags & flag) || addr < g->vaddr || addr - g->vaddr > g->filesz ||
		    g->filesz - (addr - g->vaddr) < len)
			continue;
		*off = addr - g->vaddr + g->offset;
		return *off + len <= p->id.size ? 0 : -ENOENT;
	}
	return -ENOENT;
}

static const char *check_note(const struct qp_elf_probes *p, const struct qp_usdt_note *n, int fd)
{
	bool qprof = !strcmp(n->provider, "qprof");
	unsigned char b[5];
	uint64_t off;

	if (seg_offset(p, n->pc, qprof ? 5 : 1, 1 /* PF_X */, &off))
		return "site outside the executable segments";
	if (pread(fd, b, qprof ? 5 : 1, (off_t)off) != (qprof ? 5 : 1))
		return "site bytes unreadable";
	if (qprof ? memcmp(b, nop5, 5) != 0 : b[0] != 0x90 && b[0] != nop5[0])
		return qprof ? "site bytes are not the nop5 0f 1f 44 00 00" : "site byte is not a nop";
	if (!qprof && b[0] == nop5[0] &&
	    (pread(fd, b, 5, (off_t)off) != 5 || memcmp(b, nop5, 5) != 0))
		return "site byte is not a nop";
	if (!n->sema)
		return NULL;
	if ((n->sema & 1) || seg_offset(p, n->sema, 2, 2 /* PF_W */, &off))
		return "semaphore outside the writable segments";
	if (p->probes_size && (p->probes_size < 2 || n->sema < p->probes_addr || n->sema - p->probes_addr > p->probes_size - 2))
		return "semaphore outside .probes";
	return NULL;
}

void qp_elf_check_sites(struct qp_elf_probes *p, int fd)
{
	size_t i;

	p->nbad_notes = 0;
	for (i = 0; i < p->nnotes; i++) {
		p->notes[i].bad = check_note(p, &p->notes[i], fd);
		if (p->notes[i].bad)
			p->nbad_notes++;
	}
}
