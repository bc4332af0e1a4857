/* http_auth.c - who may talk to qprofd and what they may see (see
 * http_auth.h for the rules): request admission and the token file. */
#include "http_auth.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "common/util.h"

void qp_http_policy_unix(struct qp_http_policy *p)
{
	memset(p, 0, sizeof(*p));
}

int qp_http_policy_tcp(struct qp_http_policy *p, const char *listen, const char *token)
{
	const char *colon = listen ? strrchr(listen, ':') : NULL;
	int64_t port;
	int hlen;

	memset(p, 0, sizeof(*p));
	if (!colon || qp_parse_i64(colon + 1, 1, 65535, &port) || colon - listen > 64)
		return -EINVAL;
	hlen = (int)(colon - listen);
	p->tcp = true;
	p->token = token;
	p->ntoken = token ? strlen(token) : 0;
	/* the port as a client writes it: "06464" on the command line is 6464 */
	snprintf(p->hosts[p->nhosts++], sizeof(p->hosts[0]), "127.0.0.1:%d", (int)port);
	snprintf(p->hosts[p->nhosts++], sizeof(p->hosts[0]), "localhost:%d", (int)port);
	snprintf(p->hosts[p->nhosts++], sizeof(p->hosts[0]), "[::1]:%d", (int)port);
	snprintf(p->hosts[p->nhosts], sizeof(p->hosts[0]), "%.*s:%d", hlen, listen, (int)port);
	if (strcasecmp(p->hosts[p->nhosts], p->hosts[0]))
		p->nhosts++;
	return 0;
}

bool qp_http_mutating(const char *method, const char *url)
{
	if (!strcmp(method, "GET") || !strcmp(method, "HEAD"))
		return false;
	/* the symbol protocol POSTs addresses to look up: it only reads */
	if (!strcmp(method, "POST") && (!strcmp(url, "/pprof/symbol") || !strcmp(url, "/debug/pprof/symbol")))
		return false;
	return true;
}

static bool host_ok(const struct qp_http_policy *p, const char *host)
{
	size_t i;

	for (i = 0; host && i < p->nhosts; i++)
		if (!strcasecmp(host, p->hosts[i]))
			return true;
	return false;
}

static bool origin_ok(const struct qp_http_policy *p, const char *origin)
{
	if (strncasecmp(origin, "http://", 7))
		return false;
	return host_ok(p, origin + 7);
}

bool qp_const_time_eq(const void *a, size_t alen, const void *b, size_t blen)
{
	const volatile unsigned char *x = a, *y = b;
	unsigned char diff = 0;
	size_t i;

	if (alen != blen)
		return false;
	for (i = 0; i < alen; i++)
		diff |= x[i] ^ y[i];
	return diff == 0;
}

/* "Bearer TOKEN" (scheme in any case, blanks around TOKEN ignored). */
static bool bearer_matches(const struct qp_http_policy *p, const char *auth)
{
	const char *t, *end;

	if (!auth || strncasecmp(auth, "Bearer", 6) || (auth[6] != ' ' && auth[6] != '\t'))
		return false;
	for (t = auth + 6; *t == ' ' || *t == '\t'; t++)
		;
	end = t + strlen(t);
	while (end > t && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	return qp_const_time_eq(t, (size_t)(end - t), p->token, p->ntoken);
}

static bool json_content_type(const char *ct)
{
	static const char want[] = "application/json";

	if (!ct)
		return false;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	if (strncasecmp(ct, want, sizeof(want) - 1))
		return false;
	ct += sizeof(want) - 1;
	return !*ct || *ct == ';' || *ct == ' ' || *ct == '\t';
}

int qp_http_admit(const struct qp_http_policy *p, const char *method, const char *url,
		  const struct qp_http_headers *h, bool *token_ok, char *msg, size_t msglen)
{
	bool mutating = qp_http_mutating(method, url);

	*token_ok = false;
	if (p->tcp) {
		if (!host_ok(p, h->host)) {
			snprintf(msg, msglen, "Host '%.80s' is not this daemon's address (want %s, %s, %s%s%s)",
				 h->host ? h->host : "", p->hosts[0], p->hosts[1], p->hosts[2],
				 p->nhosts > 3 ? " or " : "", p->nhosts > 3 ? p->hosts[3] : "");
			return 403;
		}
		if (h->origin && !origin_ok(p, h->origin)) {
			snprintf(msg, msglen, "cross-origin request from '%.80s' refused", h->origin);
			return 403;
		}
		if (h->sec_fetch_site && strcmp(h->sec_fetch_site, "same-origin") &&
		    strcmp(h->sec_fetch_site, "none")) {
			snprintf(msg, msglen, "Sec-Fetch-Site '%.32s' refused: only same-origin requests",
				 h->sec_fetch_site);
			return 403;
		}
		if (p->token)
			*token_ok = bearer_matches(p, h->authorization);
		if (mutating && !p->token) {
			snprintf(msg, msglen, "%.16s %.100s over TCP needs qprofd --token-file; "
				 "use the unix socket, or GET routes only", method, url);
			return 403;
		}
		if (mutating && !*token_ok) {
			snprintf(msg, msglen, "%s: send the token of --token-file as 'Authorization: Bearer TOKEN'",
				 h->authorization ? "wrong token" : "no token");
			return 401;
		}
		/* a form or text/plain POST is what a web page can send without
		 * asking first (no CORS preflight) */
		if (mutating && !strcmp(method, "POST") && !json_content_type(h->content_type)) {
			snprintf(msg, msglen, "POST %.100s over TCP wants Content-Type: application/json (got '%.60s')",
				 url, h->content_type ? h->content_type : "");
			return 415;
		}
	}
	return 0;
}

int qp_token_check_stat(const struct stat *st, gid_t qprof_gid, char *err, size_t errlen)
{
	unsigned int mode = st->st_mode & 07777;

	if (!S_ISREG(st->st_mode)) {
		snprintf(err, errlen, "not a regular file");
		return -EPERM;
	}
	if (st->st_uid != 0) {
		snprintf(err, errlen, "owned by uid %u, not root", (unsigned int)st->st_uid);
		return -EPERM;
	}
	if (mode == 0600)
		return 0;
	if (mode == 0640 && qprof_gid != (gid_t)-1 && st->st_gid == qprof_gid)
		return 0;
	snprintf(err, errlen, "mode %04o group %u: want 0600, or 0640 with group qprof", mode,
		 (unsigned int)st->st_gid);
	return -EPERM;
}

int qp_token_load(const char *path, char **out, char *err, size_t errlen)
{
	char buf[QP_TOKEN_MAX + 3], why[160];
	struct group *g;
	struct stat st;
	ssize_t n;
	size_t len, i;
	int fd, ret;

	*out = NULL;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "--token-file %s: %s", path,
			 errno == ELOOP ? "is a symbolic link" : strerror(errno));
		return ret;
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		close(fd);
		snprintf(err, errlen, "--token-file %s: %s", path, strerror(-ret));
		return ret;
	}
	g = getgrnam("qprof");
	if (qp_token_check_stat(&st, g ? g->gr_gid : (gid_t)-1, why, sizeof(why))) {
		close(fd);
		snprintf(err, errlen, "--token-file %s: %s", path, why);
		return -EPERM;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	ret = n < 0 ? -errno : 0;
	close(fd);
	if (ret) {
		snprintf(err, errlen, "--token-file %s: %s", path, strerror(-ret));
		return ret;
	}
	len = (size_t)n;
	if (len && buf[len - 1] == '\n')
		len--;
	if (len && buf[len - 1] == '\r')
		len--;
	if (len < QP_TOKEN_MIN || len > QP_TOKEN_MAX) {
		snprintf(err, errlen, "--token-file %s: the token must be %d..%d bytes", path, QP_TOKEN_MIN,
			 QP_TOKEN_MAX);
		return -EINVAL;
	}
	for (i = 0; i < len; i++) {
		if (buf[i] <= ' ' || buf[i] > '~') {
			snprintf(err, errlen, "--token-file %s: the token must be printable ASCII without blanks",
				 path);
			return -EINVAL;
		}
	}
	*out = strndup(buf, len);
	if (!*out) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}
