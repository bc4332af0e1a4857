/* report_fs.h - the report directory on disk, handled through one directory
 * fd that qprofd opened itself: no path is resolved again after start, no
 * symlink is followed, only regular files are read. */
#ifndef QPROF_REPORT_FS_H
#define QPROF_REPORT_FS_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct qp_report_fs {
	int fd;			/* the report directory, O_DIRECTORY|O_NOFOLLOW; -1 = none */
	bool group;		/* group qprof exists: 0750/0640 root:qprof, else 0700/0600 */
	gid_t gid;
};

/* Open (creating it and missing parents when absent) the report directory
 * PATH into FS. Refuses a directory that is a symlink, not owned by root (or
 * by the daemon's own user), or writable by group or others: -EPERM, with
 * the reason in ERR. Other failures are -errno, also explained in ERR. */
int qp_report_fs_open(struct qp_report_fs *fs, const char *path, char *err, size_t errlen);
void qp_report_fs_close(struct qp_report_fs *fs);

/* Create the report subdirectory NAME (one path component) and return an fd
 * on it, or -errno (-EEXIST when the name is taken, by anything). */
int qp_report_fs_mkdir(const struct qp_report_fs *fs, const char *name);

/* DIRFD/NAME atomically: a new temporary file (O_EXCL|O_NOFOLLOW) beside it,
 * fsync'ed unless FLAGS has QP_REPORT_FS_NOSYNC (the caller then syncs the
 * whole filesystem once for many files: qp_report_fs_sync), then renameat
 * over NAME; or, when HELD is not NULL, left under its temporary name,
 * written into HELD, for qp_report_fs_publish. 0 or -errno. */
#define QP_REPORT_FS_NOSYNC 1u
int qp_report_fs_write(const struct qp_report_fs *fs, int dirfd, const char *name, const char *data, size_t len,
		       unsigned int flags, char *held, size_t heldlen);
/* The data and names of every file written so far under the report
 * directory, on disk (syncfs: one flush of the filesystem's journal for a
 * batch of reports, where an fsync a file took one flush each). 0 or -errno. */
int qp_report_fs_sync(const struct qp_report_fs *fs);
/* The file held under its temporary name HELD (qp_report_fs_write) renamed
 * to NAME in DIRFD; on failure removed. 0 or -errno. */
int qp_report_fs_publish(int dirfd, const char *held, const char *name);

/* The regular file SUB/NAME under the report directory, whole, into a
 * malloc'ed NUL-terminated buffer. Neither SUB nor NAME may be a symlink;
 * NAME must be a regular file (-EINVAL otherwise) of at most MAX bytes
 * (-EFBIG). 0 or -errno. */
int qp_report_fs_read(const struct qp_report_fs *fs, const char *sub, const char *name,
		      size_t max, char **out, size_t *outlen);

/* The newest PID-COMM-YYYYmmddTHHMMSS directory of PID (a real directory,
 * not a symlink) into OUT. false when there is none. */
bool qp_report_fs_find(const struct qp_report_fs *fs, int pid, char *out, size_t len);
#endif
