/* collect_internal.h - what the three files of the scope collector share
 * (collect_scopes.c: load and snapshots; collect_attach.c: links;
 * collect_values.c: marks and values): the collector's state and its map
 * walker. Nothing outside those files includes it. */
#ifndef QPROF_COLLECT_INTERNAL_H
#define QPROF_COLLECT_INTERNAL_H
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "collect_scopes.h"
#include "scopes.skel.h"

#define SPEC_IDS 1024		/* BPF_USDT_MAX_SPEC_CNT in scopes.bpf.c */
#define ATTACH_UPROBE_MULTI 48	/* BPF_TRACE_UPROBE_MULTI (kernel >= 6.6) */

struct qp_scopes {
	/* held while links are made or destroyed and an epoch is handed out:
	 * the registry attaches and detaches without its own lock, from the
	 * HTTP threads and the poll thread at once. A leaf lock. */
	pthread_mutex_t lock;
	struct scopes *skel;
	int ncpus;
	uint64_t epoch;		/* last attach epoch handed out */
	bool multi;		/* programs loaded for uprobe-multi links */
	unsigned char spec_used[SPEC_IDS];
};

/* One attachment of one probe name in one file: a uprobe-multi link and the
 * spec ids it holds in __bpf_usdt_specs, or a libbpf USDT link. */
struct qp_scope_link {
	struct qp_scopes *owner;
	int fd;
	struct bpf_link *blink;
	int *specs;
	size_t nspecs;
};

/* All keys of a map whose keys start with the tgid (of PID when pid > 0),
 * as an array of KSZ-byte keys. */
int qp_map_keys(int fd, size_t ksz, int pid, void **out, size_t *n);
#endif
