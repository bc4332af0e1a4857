/* http_client.h - a small HTTP/1.1 client over an AF_UNIX stream socket: one
 * request per connection (Connection: close), answers framed by
 * Content-Length, chunked transfer coding or the end of the connection, a
 * size cap and an overall deadline. Knows nothing of qprof. */
#ifndef QPROF_CLI_HTTP_CLIENT_H
#define QPROF_CLI_HTTP_CLIENT_H
#include <stddef.h>

#define HTTP_MAX_HEAD (64u << 10)	/* status line + headers */
#define HTTP_MAX_BODY (512u << 20)	/* a 1 M-event trace is ~110 MiB */

enum http_err {
	HTTP_ERR_CONNECT = -1,	/* socket() or connect() failed */
	HTTP_ERR_IO = -2,	/* send/recv failed or timed out */
	HTTP_ERR_PROTO = -3,	/* not a well-formed HTTP/1.x answer */
	HTTP_ERR_TOO_BIG = -4,
	HTTP_ERR_NOMEM = -5,
};

struct http_response {
	int status;
	char reason[64];
	char content_type[128];
	char note[256];		/* X-Qprof-Note: why a profile is empty, "" when it is not */
	char *body;		/* NUL-terminated (the NUL is not counted) */
	size_t body_len;
};

/* Send METHOD TARGET (path + query) to the server listening on SOCK_PATH and
 * read the whole answer within TIMEOUT_S seconds. BODY may be NULL. 0, or an
 * enum http_err with a one-line reason in ERR. */
int http_request(const char *sock_path, const char *method, const char *target,
		 const char *content_type, const char *body, size_t body_len,
		 int timeout_s, struct http_response *resp, char *err, size_t errlen);
void http_response_free(struct http_response *resp);	/* accepts NULL */

/* Append "?key=value" or "&key=value" to the target in BUF (of size LEN)
 * with VALUE percent-encoded (all but RFC 3986 unreserved characters).
 * 0, or -ENAMETOOLONG when it does not fit. */
int http_add_query(char *buf, size_t len, const char *key, const char *value);
#endif
