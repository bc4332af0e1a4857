/* http_conn.h - the accounting of one listener's connections: how many are
 * open (over the limit, a request is answered 503), how many long polls
 * run (seconds=, follow=1: at most a few at once, so that quick requests
 * always find a thread), and a deadline on receiving each complete request
 * (headers and body), enforced by a watchdog thread that shuts overdue
 * sockets down. libmicrohttpd's own timeout restarts at every byte, so a
 * client trickling its headers would hold a connection forever. */
#ifndef QPROF_HTTP_CONN_H
#define QPROF_HTTP_CONN_H
#include <stdbool.h>
#include <stdint.h>

#define QP_HTTP_MAX_CONNECTIONS 256	/* beyond: 503 */
#define QP_HTTP_HARD_CONNECTIONS 512	/* beyond: libmicrohttpd closes at once */
#define QP_HTTP_MAX_LONG_POLLS 16
#define QP_HTTP_REQUEST_DEADLINE_S 10
#define QP_HTTP_RETRY_AFTER_S 5

struct qp_conns;
struct qp_conn_slot;

/* NAME is the listener's name for the log ("unix", "tcp"). NULL on OOM or
 * when the watchdog thread cannot start. */
struct qp_conns *qp_conns_new(const char *name, unsigned int deadline_s);
void qp_conns_free(struct qp_conns *cs); /* after every slot is closed; accepts NULL */

/* A connection on socket FD was accepted (FD is dup'ed: the watchdog never
 * touches a descriptor number the server may have closed and reused). NULL
 * on OOM: the connection then runs without a deadline. */
struct qp_conn_slot *qp_conns_open(struct qp_conns *cs, int fd);
void qp_conns_close(struct qp_conns *cs, struct qp_conn_slot *s);
/* More than QP_HTTP_MAX_CONNECTIONS were open when S was accepted. */
bool qp_conn_over_limit(const struct qp_conn_slot *s);
/* The complete request arrived: no deadline while it is answered. */
void qp_conns_request_in(struct qp_conns *cs, struct qp_conn_slot *s);
/* The answer is sent: the next request on the connection has its own
 * deadline, counted from now. */
void qp_conns_request_done(struct qp_conns *cs, struct qp_conn_slot *s);

/* A long poll may start (true: call qp_conns_long_end when it ends) or
 * not (false: QP_HTTP_MAX_LONG_POLLS are running). */
bool qp_conns_long_begin(struct qp_conns *cs);
void qp_conns_long_end(struct qp_conns *cs);

struct qp_conns_stats {
	uint64_t open, long_polls, closed_overdue, refused_long, refused_full;
};
void qp_conns_stats(struct qp_conns *cs, struct qp_conns_stats *out);
/* The sum over every listener of this process (zeros when none runs), for
 * /api/status. */
void qp_conns_totals(struct qp_conns_stats *out);
/* Count a request refused for the connection limit (logged now and then). */
void qp_conns_count_refused_full(struct qp_conns *cs);
#endif
