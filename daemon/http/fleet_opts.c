/* fleet_opts.c - the fleet options of qprofd (otlp_push.h): taken out of
 * argv before the daemon's own parser, so that they live in one block. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "symbolize/debuginfod.h"
#include "common/log.h"
#include "otlp_push.h"
#include "common/util.h"

struct fleet_opt {
	const char *name;
	int id;
};

enum { O_ENDPOINT, O_HEADER, O_INTERVAL, O_TIMEOUT, O_QUEUE, O_SERVICE,
       O_DBGF, O_DBGF_CACHE, O_DBGF_TIMEOUT, O_DBGF_MAX };

static const struct fleet_opt opts[] = {
	{ "--otlp-endpoint", O_ENDPOINT },	{ "--otlp-header", O_HEADER },
	{ "--otlp-interval", O_INTERVAL },	{ "--otlp-timeout-ms", O_TIMEOUT },
	{ "--otlp-queue", O_QUEUE },		{ "--otlp-service-name", O_SERVICE },
	{ "--debuginfod", O_DBGF },		{ "--debuginfod-cache", O_DBGF_CACHE },
	{ "--debuginfod-timeout", O_DBGF_TIMEOUT }, { "--debuginfod-max-mb", O_DBGF_MAX },
};

static int bad(const char *name, const char *what, const char *v)
{
	fprintf(stderr, "qprofd: %s wants %s, got '%s'\n", name, what, v);
	return 2;
}

static int set(struct qp_fleet_opts *o, int id, const char *name, const char *v)
{
	int64_t n;

	switch (id) {
	case O_ENDPOINT:
		if (strncmp(v, "http://", 7) && strncmp(v, "https://", 8))
			return bad(name, "an http:// or https:// URL", v);
		if (strlen(v) > 1024 || strpbrk(v, " \t\r\n"))
			return bad(name, "a URL of at most 1024 bytes without spaces", v);
		o->otlp_endpoint = v;
		return 0;
	case O_HEADER: {
		const char *eq = strchr(v, '=');

		if (!eq || eq == v || strpbrk(v, "\r\n") || strcspn(v, ": \t") < (size_t)(eq - v))
			return bad(name, "KEY=VALUE (a header name without ':' or spaces)", v);
		if (o->notlp_headers == QP_OTLP_MAX_HEADERS)
			return bad(name, "at most 32 headers", v);
		o->otlp_headers[o->notlp_headers++] = v;
		return 0;
	}
	case O_INTERVAL:
		if (qp_parse_i64(v, 1, 3600, &n))
			return bad(name, "seconds in 1..3600", v);
		o->otlp_interval_s = (unsigned int)n;
		return 0;
	case O_TIMEOUT:
		if (qp_parse_i64(v, 100, 60000, &n))
			return bad(name, "milliseconds in 100..60000", v);
		o->otlp_timeout_ms = (unsigned int)n;
		return 0;
	case O_QUEUE:
		if (qp_parse_i64(v, 1, 1024, &n))
			return bad(name, "a count in 1..1024", v);
		o->otlp_queue = (unsigned int)n;
		return 0;
	case O_SERVICE:
		if (!v[0] || strlen(v) > 255)
			return bad(name, "a name of 1..255 bytes", v);
		o->service_name = v;
		return 0;
	case O_DBGF:	/* the URLs are checked when the fetcher is made */
		if (strlen(v) > 8192)
			return bad(name, "URLs of at most 8192 bytes in all, or off", v);
		o->debuginfod = v;
		return 0;
	case O_DBGF_CACHE:
		if (v[0] != '/' || strlen(v) > 3072)
			return bad(name, "an absolute path", v);
		o->debuginfod_cache = v;
		return 0;
	case O_DBGF_TIMEOUT:
		if (qp_parse_i64(v, 1, 3600, &n))
			return bad(name, "seconds in 1..3600", v);
		o->debuginfod_timeout_s = (unsigned int)n;
		return 0;
	case O_DBGF_MAX:
		if (qp_parse_i64(v, 1, 65536, &n))
			return bad(name, "MiB in 1..65536", v);
		o->debuginfod_max_mb = (unsigned int)n;
		return 0;
	}
	return 2;
}

int qp_fleet_args(int *argc, char **argv, struct qp_fleet_opts *o)
{
	int i, out = 1;
	size_t k;

	if (!o->otlp_interval_s)
		o->otlp_interval_s = 10;
	if (!o->otlp_timeout_ms)
		o->otlp_timeout_ms = 5000;
	if (!o->otlp_queue)
		o->otlp_queue = 16;
	for (i = 1; i < *argc; i++) {
		const char *a = argv[i];
		bool taken = false;

		if (!strcmp(a, "--")) {	/* the rest is not ours */
			while (i < *argc)
				argv[out++] = argv[i++];
			break;
		}
		for (k = 0; k < sizeof(opts) / sizeof(opts[0]) && !taken; k++) {
			size_t n = strlen(opts[k].name);
			int ret;

			if (strncmp(a, opts[k].name, n) || (a[n] && a[n] != '='))
				continue;
			taken = true;
			if (a[n] == '=') {
				ret = set(o, opts[k].id, opts[k].name, a + n + 1);
			} else if (i + 1 < *argc) {
				ret = set(o, opts[k].id, opts[k].name, argv[++i]);
			} else {
				fprintf(stderr, "qprofd: %s wants a value\n", opts[k].name);
				ret = 2;
			}
			if (ret)
				return ret;
		}
		if (!taken)
			argv[out++] = argv[i];
	}
	argv[out] = NULL;
	*argc = out;
	return 0;
}

int qp_fleet_debuginfod(const struct qp_fleet_opts *o, const char *report_dir, struct qp_dbgf **out)
{
	struct qp_dbgf_opts fo = { .timeout_s = o->debuginfod_timeout_s,
				   .max_bytes = (uint64_t)(o->debuginfod_max_mb ? o->debuginfod_max_mb
									: QP_DBGF_MAX_MB_DEFAULT) << 20 };
	const char *urls = o->debuginfod ? o->debuginfod : getenv("DEBUGINFOD_URLS");
	char cache[PATH_MAX], err[512] = "";
	const char *slash;
	int ret;

	*out = NULL;
	if (!urls || !urls[strspn(urls, " \t\n")] || !strcmp(urls, "off"))
		return 0;
	if (o->debuginfod_cache) {
		snprintf(cache, sizeof(cache), "%s", o->debuginfod_cache);
	} else {
		/* the report directory's parent is qprofd's state directory */
		slash = report_dir ? strrchr(report_dir, '/') : NULL;
		if (!slash || slash == report_dir || (size_t)(slash - report_dir) > sizeof(cache) - 16)
			snprintf(cache, sizeof(cache), "/var/lib/qprof/debuginfod");
		else
			snprintf(cache, sizeof(cache), "%.*s/debuginfod", (int)(slash - report_dir), report_dir);
	}
	fo.urls = urls;
	fo.cache_dir = cache;
	ret = qp_dbgf_new(&fo, out, err, sizeof(err));
	if (!ret)
		return 0;
	if (o->debuginfod || o->debuginfod_cache) {
		fprintf(stderr, "qprofd: %s\n", err[0] ? err : strerror(-ret));
		return 2;
	}
	qp_warn("%s (from $DEBUGINFOD_URLS): no debug file is fetched", err[0] ? err : strerror(-ret));
	return 0;
}
