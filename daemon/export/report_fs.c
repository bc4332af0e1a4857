/* report_fs.c - see report_fs.h. The report directory is opened once, at
 * start, and checked: a symlink, a directory owned by someone else or one
 * that group or others can write is refused, since whoever can write there
 * could plant symlinks for root to follow. From then on every report
 * directory and file is made and read relative to that fd with O_NOFOLLOW:
 * mkdirat + openat(O_DIRECTORY), files as O_EXCL temporaries renamed into
 * place, and reads only of regular files. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "common/buf.h"
#include "report_fs.h"

static int fail(int ret, char *err, size_t errlen, const char *fmt, const char *path)
{
	snprintf(err, errlen, fmt, path, strerror(-ret));
	return ret;
}

/* Every missing parent of PATH (not PATH itself), 0755 as mkdir -p does. */
static int mkdir_parents(const char *path)
{
	char buf[4096];
	size_t len = strlen(path), i;

	if (len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (i = 1; i < len; i++) {
		if (buf[i] != '/')
			continue;
		buf[i] = '\0';
		if (mkdir(buf, 0755) && errno != EEXIST) {
			int e = errno;

			buf[i] = '/';
			return -e;
		}
		buf[i] = '/';
	}
	return 0;
}

/* The modes of what qprofd creates, and their group. */
static void own(const struct qp_report_fs *fs, int fd, mode_t mode)
{
	if (fs->group)
		(void)!fchown(fd, (uid_t)-1, fs->gid);
	(void)!fchmod(fd, fs->group ? mode & 0750 : mode & 0700);
}

/* Owned by root or by us, a directory, and writable by nobody else. */
static int check_dir(const struct stat *st, const char *path, char *err, size_t errlen)
{
	if (!S_ISDIR(st->st_mode)) {
		snprintf(err, errlen, "report directory %s is not a directory", path);
		return -ENOTDIR;
	}
	if (st->st_uid != 0 && st->st_uid != geteuid()) {
		snprintf(err, errlen, "refusing report directory %s: owned by uid %u, not by root",
			 path, (unsigned int)st->st_uid);
		return -EPERM;
	}
	if (st->st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(err, errlen,
			 "refusing report directory %s: writable by %s (mode %04o); make it 0700 or 0750",
			 path, st->st_mode & S_IWOTH ? "others" : "its group",
			 (unsigned int)(st->st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

int qp_report_fs_open(struct qp_report_fs *fs, const char *path, char *err, size_t errlen)
{
	char p[4096];
	size_t len = strlen(path);
	struct group *g = getgrnam("qprof");
	bool created = false;
	struct stat st;
	int fd, ret;

	fs->fd = -1;
	fs->group = g != NULL;
	fs->gid = g ? g->gr_gid : 0;
	/* "dir/" would follow a symlink named dir: strip trailing slashes */
	while (len > 1 && path[len - 1] == '/')
		len--;
	if (!len || len >= sizeof(p)) {
		snprintf(err, errlen, "bad report directory '%s'", path);
		return -EINVAL;
	}
	memcpy(p, path, len);
	p[len] = '\0';

	if (lstat(p, &st)) {
		if (errno != ENOENT)
			return fail(-errno, err, errlen, "cannot reach report directory %s: %s", p);
		ret = mkdir_parents(p);
		if (ret)
			return fail(ret, err, errlen, "cannot create the parents of report directory %s: %s", p);
		if (!mkdir(p, fs->group ? 0750 : 0700))
			created = true;
		else if (errno != EEXIST)
			return fail(-errno, err, errlen, "cannot create report directory %s: %s", p);
	} else if (S_ISLNK(st.st_mode)) {
		snprintf(err, errlen, "refusing report directory %s: it is a symlink", p);
		return -EPERM;
	} else if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "report directory %s is not a directory", p);
		return -ENOTDIR;
	}
	fd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		if (ret == -ELOOP) {
			snprintf(err, errlen, "refusing report directory %s: it is a symlink", p);
			return -EPERM;
		}
		return fail(ret, err, errlen, "cannot open report directory %s: %s", p);
	}
	if (created)
		own(fs, fd, 0750);
	if (fstat(fd, &st)) {
		ret = fail(-errno, err, errlen, "cannot stat report directory %s: %s", p);
		close(fd);
		return ret;
	}
	ret = check_dir(&st, p, err, errlen);
	if (ret) {
		close(fd);
		return ret;
	}
	fs->fd = fd;
	return 0;
}

void qp_report_fs_close(struct qp_report_fs *fs)
{
	if (fs->fd >= 0)
		close(fs->fd);
	fs->fd = -1;
}

/* One plain path component, never "." or "..". */
static bool component_ok(const char *name)
{
	return name[0] && !strchr(name, '/') && strcmp(name, ".") && strcmp(name, "..");
}

int qp_report_fs_mkdir(const struct qp_report_fs *fs, const char *name)
{
	int fd;

	if (fs->fd < 0)
		return -EBADF;
	if (!component_ok(name))
		return -EINVAL;
	if (mkdirat(fs->fd, name, fs->group ? 0750 : 0700))
		return -errno;
	fd = openat(fs->fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	own(fs, fd, 0750);
	return fd;
}

int qp_report_fs_write(const struct qp_report_fs *fs, int dirfd, const char *name, const char *data, size_t len,
		       unsigned int flags, char *held, size_t heldlen)
{
	static unsigned int seq;
	char tmp[300];
	size_t off = 0;
	int fd = -1, ret = 0, i;

	if (!component_ok(name))
		return -EINVAL;
	for (i = 0; i < 100 && fd < 0; i++) {
		if ((size_t)snprintf(tmp, sizeof(tmp), ".%s.tmp%d.%u", name, (int)getpid(),
				     __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED)) >= sizeof(tmp))
			return -ENAMETOOLONG;
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 && errno != EEXIST)
			return -errno;
	}
	if (fd < 0)
		return -EEXIST;
	own(fs, fd, 0640);
	while (off < len) {
		ssize_t n = write(fd, data + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? -errno : -ENOSPC;
			break;
		}
		off += (size_t)n;
	}
	if (!ret && !(flags & QP_REPORT_FS_NOSYNC) && fsync(fd))
		ret = -errno;
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && held) {
		if ((size_t)snprintf(held, heldlen, "%s", tmp) < heldlen)
			return 0;
		ret = -ENAMETOOLONG;
	}
	/* renameat replaces the name itself, whatever it was; it follows nothing */
	if (!ret && renameat(dirfd, tmp, dirfd, name))
		ret = -errno;
	if (ret)
		unlinkat(dirfd, tmp, 0);
	return ret;
}

int qp_report_fs_sync(const struct qp_report_fs *fs)
{
	if (fs->fd < 0)
		return -EBADF;
	return syncfs(fs->fd) ? -errno : 0;
}

int qp_report_fs_publish(int dirfd, const char *held, const char *name)
{
	int ret = 0;

	if (!component_ok(name) || !component_ok(held))
		ret = -EINVAL;
	else if (renameat(dirfd, held, dirfd, name))
		ret = -errno;
	if (ret && component_ok(held))
		unlinkat(dirfd, held, 0);
	return ret;
}

static int read_fd(int fd, size_t max, char **out, size_t *outlen)
{
	struct qp_buf b;
	char chunk[65536];

	qp_buf_init(&b);
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			qp_buf_free(&b);
			return -e;
		}
		if (n == 0)
			break;
		qp_buf_add(&b, chunk, (size_t)n);
		if (b.len > max) {
			qp_buf_free(&b);
			return -EFBIG;
		}
	}
	qp_buf_add(&b, "", 0);
	*out = qp_buf_steal(&b, outlen);
	return *out ? 0 : -ENOMEM;
}

int qp_report_fs_read(const struct qp_report_fs *fs, const char *sub, const char *name,
		      size_t max, char **out, size_t *outlen)
{
	struct stat st;
	int dfd, fd, ret;

	*out = NULL;
	if (fs->fd < 0)
		return -EBADF;
	if (!component_ok(sub) || !component_ok(name))
		return -EINVAL;
	dfd = openat(fs->fd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOTDIR ? -EINVAL : -errno;
	/* O_NONBLOCK: a FIFO planted there must not hang the reader */
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	ret = fd < 0 ? -errno : 0;
	close(dfd);
	if (ret)
		return ret;
	/* a regular file with one name: we write them so, by rename */
	if (fstat(fd, &st))
		ret = -errno;
	else if (!S_ISREG(st.st_mode) || st.st_nlink != 1)
		ret = -EINVAL;
	else
		ret = read_fd(fd, max, out, outlen);
	close(fd);
	return ret;
}

static int cmp_report(const char *a, size_t alen, const char *b)
{
	size_t blen = strlen(b);
	int c = strcmp(a + alen - 15, b + blen - 15);

	return c ? c : strcmp(a, b);
}

bool qp_report_fs_find(const struct qp_report_fs *fs, int pid, char *out, size_t len)
{
	char prefix[24], best[256] = "";
	size_t plen;
	struct dirent *e;
	DIR *dh;
	int fd;

	if (fs->fd < 0)
		return false;
	/* a new open file description: readdir's offset is its own */
	fd = openat(fs->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return false;
	dh = fdopendir(fd);
	if (!dh) {
		close(fd);
		return false;
	}
	plen = (size_t)snprintf(prefix, sizeof(prefix), "%d-", pid);
	while ((e = readdir(dh))) {
		size_t n = strlen(e->d_name);
		struct stat st;

		if (strncmp(e->d_name, prefix, plen) || n < plen + 16 || n >= sizeof(best))
			continue;
		if (fstatat(dirfd(dh), e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(st.st_mode))
			continue;
		/* the trailing YYYYmmddTHHMMSS stamps, then (the same second)
		 * the name: PID-COMM~2-STAMP comes after PID-COMM-STAMP */
		if (!best[0] || cmp_report(e->d_name, n, best) > 0)
			snprintf(best, sizeof(best), "%s", e->d_name);
	}
	closedir(dh);
	if (!best[0])
		return false;
	return (size_t)snprintf(out, len, "%s", best) < len;
}
