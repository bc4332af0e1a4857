/* targets_priv.h - what the registry's files share and nothing outside
 * uses: targets.c (pid targets, exits, names), binaries.c (--binary
 * targets and their versions), watch.c (fanotify on those files),
 * modules.c (the cache of parsed ELF files), targets_exit.c (exits,
 * reports, trimming). Callers hold r->lock unless
 * said otherwise. */
#ifndef QPROF_TARGETS_PRIV_H
#define QPROF_TARGETS_PRIV_H
#include "targets.h"

/* modules.c */
/* The module of the file open at FD, named PATH: an unchanged cached one
 * (same identity and build-id) or a fresh parse. Takes a reference. NULL with
 * *ret = -errno and a reason in err. */
struct qp_module *qp_module_get_fd(struct qp_registry *r, int fd, const char *path, int *ret,
				   char *err, size_t errlen);
/* The same, called WITHOUT r->lock: looked up under it, parsed without it,
 * then put in under it (a version another thread put in meanwhile wins). */
struct qp_module *qp_module_get_fd_unlocked(struct qp_registry *r, int fd, const char *path, int *ret,
					    char *err, size_t errlen);
/* A module for ELF, parsed without the lock: the cached one of the same
 * version (ELF is freed) or ELF itself. Takes a reference; NULL: no memory
 * (ELF freed). */
struct qp_module *qp_module_insert(struct qp_registry *r, struct qp_elf_probes *elf, const char *path);
void qp_module_put(struct qp_registry *r, struct qp_module *m); /* accepts NULL; frees at 0 */
/* Open what mapping M of PID maps, through /proc/PID/map_files: that very
 * inode, even when the path now names another file or none. The magic link
 * goes to *path (attach there: the kernel follows it to the same inode). */
int qp_map_open(int pid, const struct qp_map *m, char *path, size_t len, int *fd, char *err,
		size_t errlen);
/* Append M to T's modules (T keeps the reference the caller had). */
int qp_target_hold(struct qp_target *t, struct qp_module *m);

/* target_libs.c */
/* A file T was just attached to (its links from FIRST_LINK on in t->links)
 * or found without markers: an entry, so the rescan does not take it for
 * new. PREMAPPED: attached before the process maps it. */
int qp_target_lib_record(struct qp_target *t, struct qp_module *mod, const char *path,
			 const struct qp_file_id *id, size_t first_link, enum qp_lib_state state,
			 bool premapped);
void qp_target_libs_free(struct qp_target *t);
/* T's links are being taken away whole (exit): the entries forget theirs. */
void qp_target_libs_drop_links(struct qp_target *t);

/* target_reap.c (r->lock held) */
/* Park LINKS (taken over) of PID's unloaded inode INO, version ID. */
void qp_reap_push(struct qp_registry *r, int pid, uint64_t ino, const struct qp_file_id *id,
		  struct qp_scope_link **links, size_t n);
/* The parked links of that very version, taken back: true, or false. */
bool qp_reap_take(struct qp_registry *r, int pid, uint64_t ino, const struct qp_file_id *id,
		  struct qp_scope_link ***links, size_t *n);
/* Release now (slowly, under the lock) whatever PID has parked on INO. */
void qp_reap_flush(struct qp_registry *r, int pid, uint64_t ino);
/* Wait (r->lock held) until links of PID on INO handed to a release thread
 * are released in the kernel: a file loaded again is never probed by an old
 * and a new set at once (each hit would count twice). */
void qp_reap_wait_closed(struct qp_registry *r, int pid, uint64_t ino);
void qp_reap_free_all(struct qp_registry *r);

/* targets.c */
bool qp_pid_alive(int pid);
int qp_target_new(int pid, struct qp_target **out);
void qp_target_free(struct qp_registry *r, struct qp_target *t);
/* List T as a target: its forks, execs and CPU samples are watched; SYM:
 * hand its mappings to the symbolizer now. */
int qp_registry_push(struct qp_registry *r, struct qp_target *t, bool sym);
/* Drop target I with its data (see remove_at). */
void qp_registry_remove_at(struct qp_registry *r, size_t i);
uint32_t qp_def_new(struct qp_registry *r, bool span, const char *name, const char *begin,
		    const char *end);
bool qp_split_probe(const char *spec, char *prov, size_t plen, char *name, size_t nlen);
/* The HTTP status of an attach failure -ERR: the target's or its file's
 * fault (a 4xx), or qprofd's own (500). */
int qp_attach_status(int err);

/* targets_exit.c */
/* Pin T for its report / unpin it, set report_dir to DIR, wake waiters. */
void qp_target_report_begin(struct qp_registry *r, struct qp_target *t);
void qp_target_report_end(struct qp_registry *r, struct qp_target *t, const char *dir);

/* binaries.c */
/* Does MAPS map any version of binary B? */
bool qp_maps_hold(const struct qp_maps *maps, const struct qp_binary *b);
/* Index of a binary (not detached from PID) whose file PID maps, or -1. */
int qp_binary_covering(const struct qp_registry *r, int pid, const struct qp_maps *maps);
void qp_binary_adopt(struct qp_registry *r, size_t bi, int pid, const struct qp_maps *known);
/* T, a process of B, takes B's collector: the ring when B is on it, its
 * records counting from B's attach, or, for the child forked by PARENT
 * (> 0) at FORK_NS, its copies of PARENT's rings taken at once and
 * counting from the fork. r->lock held. */
void qp_binary_give_collector(struct qp_registry *r, const struct qp_binary *b, struct qp_target *t,
			      int parent, uint64_t fork_ns);
/* Adopt the processes that run a --binary file, r->lock NOT held: /proc
 * is read without it, then the hits are adopted under it. With OUT, a copy
 * of binary JB (with the pids adopted) goes to OUT under the same lock:
 * -ENOENT when JB was detached meanwhile, -ENOMEM when no copy was made. */
int qp_binary_scan(struct qp_registry *r, const struct qp_binary *jb, struct qp_binary_view *out);
/* Replaced files get new links; on RESCAN unused old versions go. */
void qp_binaries_refresh(struct qp_registry *r, bool rescan);
void qp_binary_free(struct qp_registry *r, struct qp_binary *b);
bool qp_binary_detached(const struct qp_binary *b, int pid);
/* Per-process mode: links for T alone on the version of B's file it maps
 * (T->probes 0 and a warning when it cannot be probed). */
void qp_binary_attach_process(struct qp_registry *r, struct qp_binary *b, struct qp_target *t);
/* Links for every process on version G of B (none in per-process mode, which
 * only checks the other probes are there); -errno with *status and err. */
int qp_binary_gen_attach(struct qp_registry *r, struct qp_binary *b, struct qp_binary_gen *g,
			 int *status, char *err, size_t errlen);
/* Drop the links of a version whose file changed under them. */
void qp_binary_gen_unlink(struct qp_binary_gen *g);

/* watch.c: fanotify permission events on every --binary version's inode.
 * Before any other process opens one (exec, dlopen, a writer), its version
 * is checked; a version rewritten in place loses its links first, so no
 * process ever runs a probe placed at the offsets of the old content. */
int qp_watch_start(struct qp_registry *r);
void qp_watch_stop(struct qp_registry *r);
int qp_watch_add(struct qp_registry *r, int fd);	/* the inode open at FD */
/* Held (after r->lock) around every change to r->binaries and to the
 * versions' links, which the watch thread reads without r->lock. */
void qp_watch_lock(struct qp_registry *r);
void qp_watch_unlock(struct qp_registry *r);
void qp_watch_remove(struct qp_registry *r, int fd);
#endif
