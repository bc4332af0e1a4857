/* http_auth.h - who may talk to qprofd and what they may see: the checks
 * of a request's Host, Origin, Sec-Fetch-Site, Authorization and
 * Content-Type against the listener's policy, the token file, and hiding
 * kernel addresses from unprivileged clients. Pure functions: no
 * libmicrohttpd, no registry, so unit tests and fuzzers call them directly.
 *
 * The rules (docs/reference/http-api.md, "Access"):
 * - unix socket: anyone who can connect (mode 0660, group qprof) may use
 *   every route; a peer with uid 0 is privileged (kernel addresses, any
 *   ELF file in POST /api/targets).
 * - loopback TCP (--listen): Host must be 127.0.0.1:PORT, localhost:PORT,
 *   [::1]:PORT or the listen address (else 403); an Origin header must be
 *   http://<one of those> (else 403); Sec-Fetch-Site may only be absent,
 *   "same-origin" or "none" (else 403). Mutating routes (POST/DELETE, but
 *   POST /pprof/symbol, which only reads) need "Authorization: Bearer
 *   TOKEN" matching --token-file: 403 when no token is configured, 401 when
 *   it is missing or wrong; a mutating POST must say Content-Type:
 *   application/json (415). TCP clients are never privileged. */
#ifndef QPROF_HTTP_AUTH_H
#define QPROF_HTTP_AUTH_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>
#include "common/util.h"

#define QP_HTTP_MAX_HOSTS 4
#define QP_TOKEN_MIN 16
#define QP_TOKEN_MAX 512

struct qp_http_policy {
	bool tcp;
	const char *token;	/* NULL: no token configured */
	size_t ntoken;
	char hosts[QP_HTTP_MAX_HOSTS][80];	/* accepted Host values (TCP) */
	size_t nhosts;
};

/* The request headers the policy looks at; NULL when absent. */
struct qp_http_headers {
	const char *host, *origin, *sec_fetch_site, *authorization, *content_type;
};

/* Policy of the unix socket: every request is admitted. */
void qp_http_policy_unix(struct qp_http_policy *p);
/* Policy of a TCP listener on LISTEN ("127.0.0.1:6464"); TOKEN may be NULL.
 * -EINVAL when LISTEN has no ":PORT". */
int qp_http_policy_tcp(struct qp_http_policy *p, const char *listen, const char *token);

/* Does METHOD URL change the daemon's state (attach, detach)? */
bool qp_http_mutating(const char *method, const char *url);

/* 0 when the request may go on, else the HTTP status (401, 403, 415) with
 * the reason in msg. *token_ok says whether a configured token matched. */
int qp_http_admit(const struct qp_http_policy *p, const char *method, const char *url,
		  const struct qp_http_headers *h, bool *token_ok, char *msg, size_t msglen);

/* Equal lengths and bytes, in time that depends on the lengths only. */
bool qp_const_time_eq(const void *a, size_t alen, const void *b, size_t blen);

/* Whether a token file with status ST may be trusted: a regular file owned
 * by root, mode 0600, or 0640 with group QPROF_GID (pass (gid_t)-1 when the
 * group does not exist). 0 or -EPERM with the reason in err. */
int qp_token_check_stat(const struct stat *st, gid_t qprof_gid, char *err, size_t errlen);
/* Read the token file at PATH (no symlink, checked as above): its content
 * without one trailing newline, QP_TOKEN_MIN..QP_TOKEN_MAX printable ASCII
 * bytes without blanks. *out is malloc'ed. 0 or -errno with err. */
int qp_token_load(const char *path, char **out, char *err, size_t errlen);

/* What an unprivileged client may not see: kernel addresses
 * (qp_addr_is_kernel, util.h); a CPU profile is stripped of them by
 * qp_cpu_profile_hide_kernel (model_cpu.h). */
#endif
