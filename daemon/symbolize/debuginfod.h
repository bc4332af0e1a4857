/* debuginfod.h - debug files fetched by build-id from debuginfod servers
 * (DEBUGINFOD_URLS, or qprofd --debuginfod), for the symbolizer's files
 * that have no symbol table or DWARF on this host. The symbolizer asks
 * (qp_dbgf_want: a queue push under the fetcher's own lock, nothing
 * else); one thread of the fetcher's own GETs SERVER/buildid/ID/debuginfo
 * from each server in turn with libcurl, each within a timeout and a size
 * cap, into a temporary file of the cache directory. What a server sends
 * is untrusted: it is kept only when it is an ELF file of the very
 * build-id asked for, with a .symtab or DWARF, no larger than the cap;
 * then it is renamed to CACHE/.build-id/xx/rest.debug (the layout the
 * symbolizer reads under any debug root) and the arrival callback is
 * called on the fetcher's thread. Misses and failures are remembered for
 * a while (the negative cache) and not asked again meanwhile. No lock of
 * the fetcher is held across a transfer. */
#ifndef QPROF_DEBUGINFOD_H
#define QPROF_DEBUGINFOD_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct qp_json;
struct qp_dbgf;

#define QP_DBGF_MAX_URLS 8
#define QP_DBGF_TIMEOUT_S_DEFAULT 30
#define QP_DBGF_MAX_MB_DEFAULT 1024
#define QP_DBGF_MISS_S 600		/* a miss or a failure is not asked again for 10 min */
#define QP_DBGF_MAX_IDS 4096		/* build-ids known (asked, fetched, missed) */
#define QP_DBGF_RECENT 16		/* last outcomes kept for status */

struct qp_dbgf_opts {
	const char *urls;	/* server bases separated by spaces (as DEBUGINFOD_URLS) */
	const char *cache_dir;	/* made (0700) when absent; refused when others may write it */
	unsigned int timeout_s;	/* one server's answer, 1..3600 */
	uint64_t max_bytes;	/* one debug file */
	unsigned int miss_s;	/* 0: QP_DBGF_MISS_S */
};

/* Called on the fetcher's thread when the debug file of BID is in the
 * cache at PATH. */
typedef void (*qp_dbgf_arrived_fn)(void *ctx, const char *bid, const char *path);

/* A fetcher for O (nothing fetched before qp_dbgf_start). 0, or -errno
 * with the reason in ERR (a URL that is not http(s), a cache directory
 * that cannot be made or is unsafe). */
int qp_dbgf_new(const struct qp_dbgf_opts *o, struct qp_dbgf **out, char *err, size_t errlen);
/* Start the fetching thread; ARRIVED(CTX, ...) on each file fetched. */
int qp_dbgf_start(struct qp_dbgf *f, qp_dbgf_arrived_fn arrived, void *ctx);
/* Stop the thread (a transfer under way is abandoned) and free; accepts NULL. */
void qp_dbgf_free(struct qp_dbgf *f);

/* The cache directory (the symbolizer looks there as under a debug root). */
const char *qp_dbgf_cache_dir(const struct qp_dbgf *f);
/* Ask for the debug file of BID (lowercase hex) of the file at PATH (for
 * status only). Never blocks on the network: queued, or answered at once
 * when BID is known (fetched, pending, in the negative cache). Thread-safe. */
void qp_dbgf_want(struct qp_dbgf *f, const char *bid, const char *path);

/* The "debuginfod" object of /api/status (enabled false when F is NULL). */
void qp_dbgf_status_json(struct qp_dbgf *f, struct qp_json *j);
#endif
