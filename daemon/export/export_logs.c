/* export_logs.c - see export_logs.h: the log lines as /api/logs has always
 * streamed them (the same keys in the same order). */
#include <errno.h>
#include <stdlib.h>
#include "export_logs.h"
#include "common/json_writer.h"

static int line(const struct qp_log_line *l, struct qp_buf *out)
{
	struct qp_json j;
	size_t len;
	char *s;

	qp_json_init(&j);
	qp_json_obj_begin(&j);
	qp_json_kv_u64(&j, "seq", l->e.seq);
	qp_json_kv_u64(&j, "ts_ns", l->e.ts_ns);
	qp_json_kv_u64(&j, "pid", l->e.pid);
	qp_json_kv_u64(&j, "tid", l->e.tid);
	qp_json_kv_str(&j, "file", l->located ? l->file : NULL);
	if (l->located)
		qp_json_kv_u64(&j, "line", l->line);
	else
		qp_json_kv_null(&j, "line");
	qp_json_kv_str(&j, "function", l->located ? l->function : NULL);
	qp_json_kv_str(&j, "message", l->e.msg);
	qp_json_kv_bool(&j, "truncated", l->truncated);
	qp_json_obj_end(&j);
	s = qp_json_finish(&j, &len);
	if (!s)
		return -ENOMEM;
	qp_buf_add(out, s, len);
	qp_buf_add(out, "\n", 1);
	free(s);
	return 0;
}

int qp_export_log_ndjson(const struct qp_log_batch *b, struct qp_buf *out)
{
	size_t i;

	if (b->lost)
		qp_buf_printf(out, "{\"lost\": %llu}\n", (unsigned long long)b->lost);
	for (i = 0; i < b->n; i++)
		if (line(&b->lines[i], out))
			return -ENOMEM;
	return out->failed ? -ENOMEM : 0;
}
