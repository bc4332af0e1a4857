/* lifecycle_fork.h - repair of a forked child stopped before its first
 * instruction (daemon/lifecycle.c): its copies of the parent's optimized
 * uprobe sites are rewritten. Keeps a small cache of the files' sites. */
#ifndef QPROF_LIFECYCLE_FORK_H
#define QPROF_LIFECYCLE_FORK_H
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct lc_sites;

struct lc_repair {
	uint64_t nop;		/* sites written back to the original nop5 */
	uint64_t int3;		/* sites written back to int3 (a --binary file: still probed) */
	uint64_t failed;	/* writes refused */
	uint64_t sema_lowered;	/* USDT semaphores lowered for sites written back to nop5 */
	uint64_t sema_failed;	/* semaphores that could not be read or written */
};

/* True when the file DEV/INO is a --binary target (its sites get int3). */
typedef bool (*lc_is_binary_fn)(dev_t dev, ino_t ino, void *arg);

struct lc_sites *lc_sites_new(void);
void lc_sites_free(struct lc_sites *c);	/* accepts NULL */
/* Rewrite the optimized sites of stopped child PID; counts added to RES. */
void lc_sites_repair(struct lc_sites *c, int pid, lc_is_binary_fn is_binary, void *arg,
		     struct lc_repair *res);
#endif
