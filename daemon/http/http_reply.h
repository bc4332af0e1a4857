/* http_reply.h - what the route handlers and the router share
 * (http_reply.c): replies, query checks. Internal to the HTTP stage. */
#ifndef QPROF_HTTP_REPLY_H
#define QPROF_HTTP_REPLY_H
#include <stdbool.h>
#include "common/buf.h"
#include "http.h"
#include "common/json_writer.h"
#include "common/util.h"

struct qprofd;

/* Replies: JSON (status, document), {"error": ...}, a buffer (500 when
 * RET or the buffer failed). */
void qp_reply_json(struct qp_response *resp, int status, struct qp_json *j);
void __printf(3, 4) qp_reply_error(struct qp_response *resp, int status, const char *fmt, ...);
void qp_reply_buf(struct qp_response *resp, struct qp_buf *b, const char *ctype, int ret);

/* Query checks; false when resp holds the 400/404. Only the names in the
 * NULL-terminated ALLOWED list are accepted; pid= must be a target;
 * seconds= is clamped to 1..300 and the answer says so (X-Qprof-Seconds). */
bool qp_req_keys_ok(const struct qp_request *req, struct qp_response *resp, const char *const *allowed);
bool qp_req_pid(struct qprofd *d, const struct qp_request *req, struct qp_response *resp, int *pid);
/* The same, a process that is not a target also known when KNOWN_ALSO(D,
 * pid) says so; the 404's words then end with UNKNOWN_ALSO. */
bool qp_req_pid_or(struct qprofd *d, const struct qp_request *req, struct qp_response *resp, int *pid,
		   bool (*known_also)(struct qprofd *d, int pid), const char *unknown_also);
bool qp_req_seconds(const struct qp_request *req, struct qp_response *resp, unsigned int *sec);
/* A route of pid= and seconds= only: the three checks above. */
bool qp_req_pid_seconds(struct qprofd *d, const struct qp_request *req, struct qp_response *resp,
			unsigned int *sec, int *pid);

#endif
