/* util.h - checked number parsing and small helpers shared by qprofd and
 * qprof-cli. Every number from outside goes through qp_parse_*. */
#ifndef QPROF_UTIL_H
#define QPROF_UTIL_H
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QP_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#ifndef __printf
#define __printf(a, b) __attribute__((format(printf, a, b)))
/* The x86-64 kernel half of the address space: never shown to unprivileged
 * clients. */
bool qp_addr_is_kernel(unsigned long long addr);
#endif

/* Whole-string decimal parse within [min, max]. 0 or -EINVAL/-ERANGE. */
int qp_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out);
int qp_parse_u64(const char *s, uint64_t max, uint64_t *out);
/* Read all of PATH into a NUL-terminated malloc'd buffer, up to MAX bytes
 * (-EFBIG beyond): /proc files report size 0, so it reads until EOF with a
 * growing buffer. 0 or -errno. */
int qp_read_file(const char *path, size_t max, char **buf, size_t *len);
/* Room for NEED elements of ELEM bytes in the array *P of *CAP elements
 * (P is the address of any object pointer: int **, struct x **): the
 * capacity doubles from 16, or becomes NEED when that is more. 0, or
 * -ENOMEM when memory is short or NEED * ELEM (or the doubled capacity)
 * would not fit in a size_t; *P and *CAP are then unchanged (the array is
 * still the caller's to free). */
int qp_grow(void *p, size_t *cap, size_t need, size_t elem);
/* Monotonic / realtime clocks in ns. */
uint64_t qp_now_ns(void);
/* Raise the soft limit of open descriptors to WANT (at most the hard
 * limit). 0, or -1 with errno set. */
int qp_raise_fd_limit(unsigned long want);
uint64_t qp_realtime_ns(void);
/* A condition variable whose timed waits run on CLOCK_MONOTONIC (a
 * wall-clock jump neither cuts nor stretches them). */
void qp_cond_init_monotonic(pthread_cond_t *c);
/* Lock M as pthread_mutex_lock does, adding the time this thread waited
 * for it (0 when it was free) to the thread's total, qp_lock_waited_ns:
 * the figure of the locks shared between requests and the daemon's
 * threads (the registry's, the CPU collector's), read around a request by
 * the HTTP layer. */
void qp_lock(pthread_mutex_t *m);
uint64_t qp_lock_waited_ns(void);
/* Format a duration in ns with a human unit ("812 ns", "12.3 us", "4.56 ms",
 * "1.20 s"); "-" when has_value is false. Returns buf. */
char *qp_fmt_duration(char *buf, size_t len, double ns, bool has_value);
/* Format a count with k/M/G suffix above 10000 ("12345" -> "12.3k"). */
char *qp_fmt_count(char *buf, size_t len, uint64_t v);
/* The x86-64 kernel half of the address space: never shown to unprivileged
 * clients. */
bool qp_addr_is_kernel(unsigned long long addr);
#endif
