/* http_query.c - checks of query parameters, kept free of the request and
 * the registry (see http_query.h). Messages are the exact texts the API
 * answers with, so http_routes.c passes them through unchanged. */
#include "http_query.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "util.h"

static void set_err(char *err, size_t errlen, const char *msg)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", msg);
}

int qp_query_seconds_ex(const char *s, unsigned int *out, int64_t *asked, char *err, size_t errlen)
{
	int64_t v;

	*out = 0;
	if (asked)
		*asked = 0;
	if (!s)
		return 0;
	/* any int64 is a number here; only then is it clamped */
	if (qp_parse_i64(s, INT64_MIN, INT64_MAX, &v)) {
		if (err && errlen)
			snprintf(err, errlen, "seconds must be an integer (clamped to 1..%d)", QP_QUERY_MAX_SECONDS);
		return -EINVAL;
	}
	*out = v < 1 ? 1 : v > QP_QUERY_MAX_SECONDS ? QP_QUERY_MAX_SECONDS : (unsigned int)v;
	if (asked)
		*asked = v;
	return 0;
}

int qp_query_seconds(const char *s, unsigned int *out, char *err, size_t errlen)
{
	return qp_query_seconds_ex(s, out, NULL, err, errlen);
}

int qp_query_pid(const char *s, int *out, char *err, size_t errlen)
{
	int64_t v;

	*out = 0;
	if (!s)
		return 0;
	if (qp_parse_i64(s, 1, INT32_MAX, &v)) {
		set_err(err, errlen, "pid must be a positive integer");
		return -EINVAL;
	}
	*out = (int)v;
	return 0;
}

const char *qp_query_unknown_key(const char *const *allowed, const char *const *keys, size_t nkeys,
				 char *err, size_t errlen)
{
	size_t i, j;

	for (i = 0; i < nkeys; i++) {
		bool ok = false;

		for (j = 0; allowed && allowed[j] && !ok; j++)
			ok = !strcmp(allowed[j], keys[i]);
		if (ok)
			continue;
		if (err && errlen) {
			char name[64];

			snprintf(name, sizeof(name), "%s", keys[i]);
			snprintf(err, errlen, "unknown query parameter '%s'", name);
		}
		return keys[i];
	}
	return NULL;
}
