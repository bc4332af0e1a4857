/* procfs.h - checked readers of /proc/PID files. Every field from /proc is
 * parsed with range checks; a malformed line is skipped, never trusted. */
#ifndef QPROF_PROCFS_H
#define QPROF_PROCFS_H
#include <stddef.h>
#include <stdint.h>

struct qp_map {
	uint64_t start, end, offset, inode;
	uint64_t dev;	/* makedev(major, minor) of the maps line */
	char perms[5];	/* "r-xp" */
	char *path;	/* "" for anonymous mappings; " (deleted)" suffix kept */
};

struct qp_maps {
	size_t n;
	struct qp_map *v;
};

/* Parse the text of a maps file. 0, or -EINVAL if nothing could be parsed
 * from non-empty text. Malformed lines are skipped. */
int qp_maps_parse(const char *text, size_t len, struct qp_maps *out);
/* Read /proc/PID/maps. 0 or -errno (-ESRCH when the process is gone). */
int qp_maps_read(int pid, struct qp_maps *out);
/* The same under PROC_ROOT instead of /proc (the symbolizer's tests point
 * it at fixtures). The one reader of maps files in the tree. */
int qp_maps_read_at(const char *proc_root, int pid, struct qp_maps *out);
void qp_maps_free(struct qp_maps *m); /* accepts a zeroed struct */
/* A deep copy of FROM in TO. 0 or -ENOMEM (TO is then empty). */
int qp_maps_copy(const struct qp_maps *from, struct qp_maps *to);
/* The mapping that holds ADDR, or NULL. */
const struct qp_map *qp_maps_find(const struct qp_maps *m, uint64_t addr);

/* /proc/PID/comm without the newline. 0 or -errno. */
int qp_proc_comm(int pid, char *buf, size_t len);
/* The first line of /proc/PID/NAME (e.g. "task/TID/comm"), cut to LEN - 1
 * bytes, NUL-terminated (may hold a NUL of its own). 0 or -errno. */
int qp_proc_file_line(int pid, const char *name, char *buf, size_t len);
/* readlink /proc/PID/exe. 0 or -errno. */
int qp_proc_exe(int pid, char *buf, size_t len);
/* Field 22 (starttime, clock ticks) of /proc/PID/stat, parsed after the last
 * ')' so that a comm holding spaces or parentheses cannot shift fields. */
int qp_proc_starttime(int pid, uint64_t *ticks);
int qp_stat_parse_starttime(const char *text, uint64_t *ticks); /* for tests */
/* When thread TID of PID started, on CLOCK_MONOTONIC, in ns: field 22 of
 * /proc/PID/task/TID/stat (clock ticks since boot, so rounded down to a
 * tick) less the time the system was suspended. What tells a thread from
 * an earlier one that had its tid. 0 or -errno (-ESRCH: gone). */
int qp_proc_thread_start_ns(int pid, uint32_t tid, uint64_t *ns);
/* Thread TID's name (/proc/PID/task/TID/comm) if the thread that has the
 * tid now was running at AT_NS (CLOCK_MONOTONIC; 0: any time): a record
 * of an earlier thread of that tid never gets a later one's name. 0,
 * -ESRCH (gone, or started after AT_NS) or -errno. */
int qp_proc_thread_name_at(int pid, uint32_t tid, uint64_t at_ns, char *buf, size_t len);

/* This process's resident memory (/proc/self/statm, pages times the page
 * size) and CPU time, all threads (CLOCK_PROCESS_CPUTIME_ID). 0 or -errno. */
int qp_proc_self_usage(uint64_t *rss_bytes, uint64_t *cpu_ns);
/* The resident pages (field 2) of a statm text. 0 or -EINVAL. */
int qp_statm_parse_rss(const char *text, uint64_t *pages);
#endif
