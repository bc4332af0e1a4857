/* arena.h - one arena for qprofd and qprof-cli: memory handed out in order
 * from 64 KiB chunks and freed all at once. Used for whatever lives exactly
 * as long as one owner: a CPU profile's strings and arrays, a hash table's
 * keys, a symbolizer's names. Not thread-safe: one owner at a time. */
#ifndef QPROF_ARENA_H
#define QPROF_ARENA_H
#include <stddef.h>

#define QP_ARENA_CHUNK ((size_t)64 * 1024)
#define QP_ARENA_MAX ((size_t)1 << 40)	/* larger requests fail (NULL) */

struct qp_arena;

struct qp_arena *qp_arena_new(void);	/* NULL on OOM */
void qp_arena_free(struct qp_arena *a);	/* accepts NULL */
/* N zeroed bytes aligned to 16; NULL on OOM or above QP_ARENA_MAX. A request
 * larger than a quarter chunk gets a chunk of its own, put behind the
 * current one so that the current one keeps being filled. */
void *qp_arena_alloc(struct qp_arena *a, size_t n);
/* A NUL-terminated copy of the LEN bytes at S (unaligned: strings pack
 * tightly); NULL on OOM. S need not be NUL-terminated. */
char *qp_arena_strndup(struct qp_arena *a, const char *s, size_t len);
const char *qp_arena_strdup(struct qp_arena *a, const char *s);
/* Bytes handed out (with alignment padding) and bytes taken from malloc
 * (chunks, without their headers): for accounting and tests. */
size_t qp_arena_used(const struct qp_arena *a);
size_t qp_arena_reserved(const struct qp_arena *a);
#endif
