/* test_encode_logs.c - the NDJSON of GET /api/logs from a hand-made batch
 * of the log model, byte for byte: a loss line first, a located message, an
 * unlocated one (null file, line and function), a site known without a
 * file, a cut message with hostile bytes; a batch with only a loss; an
 * empty batch writes nothing. */
#include <stdlib.h>
#include "testlib.h"
#include "export/export_logs.h"

static void entry(struct qp_log_line *l, uint64_t seq, uint32_t pid, uint32_t tid, int32_t len, const char *msg)
{
	memset(l, 0, sizeof(*l));
	l->e.seq = seq;
	l->e.ts_ns = 1700000000000000000ULL + seq;
	l->e.pid = pid;
	l->e.tid = tid;
	l->e.len = len;
	snprintf(l->e.msg, sizeof(l->e.msg), "%s", msg);
	l->truncated = len >= QPROF_LOG_MSG;
}

static const char want[] =
	"{\"lost\": 12}\n"
	"{\"seq\":13,\"ts_ns\":1700000000000000013,\"pid\":10,\"tid\":11,\"file\":\"s.c\",\"line\":42,"
	"\"function\":\"gen\",\"message\":\"price=1.5\",\"truncated\":false}\n"
	"{\"seq\":14,\"ts_ns\":1700000000000000014,\"pid\":10,\"tid\":12,\"file\":null,\"line\":null,"
	"\"function\":null,\"message\":\"\",\"truncated\":false}\n"
	"{\"seq\":15,\"ts_ns\":1700000000000000015,\"pid\":20,\"tid\":20,\"file\":null,\"line\":7,"
	"\"function\":\"f\",\"message\":\"a\\\"b\\\\c\\n\\u0001\",\"truncated\":true}\n";

int main(void)
{
	struct qp_log_batch *b = calloc(1, sizeof(*b));
	struct qp_buf out;

	CHECK(b != NULL);
	if (!b)
		return test_done("test_encode_logs");
	b->lost = 12;
	entry(&b->lines[0], 13, 10, 11, 9, "price=1.5");
	b->lines[0].located = true;
	b->lines[0].file = "s.c";
	b->lines[0].function = "gen";
	b->lines[0].line = 42;
	entry(&b->lines[1], 14, 10, 12, 0, "");
	/* names copied, but the line is not located: nulls all three */
	b->lines[1].file = "ignored.c";
	b->lines[1].line = 9;
	entry(&b->lines[2], 15, 20, 20, 300, "a\"b\\c\n\x01");
	b->lines[2].located = true;
	b->lines[2].function = "f";
	b->lines[2].line = 7;
	b->n = 3;
	qp_buf_init(&out);
	CHECK_INT(qp_export_log_ndjson(b, &out), 0);
	CHECK_INT(out.len, strlen(want));
	CHECK_STR(out.data ? out.data : "", want);
	qp_buf_free(&out);

	/* only a loss */
	b->n = 0;
	b->lost = 3;
	qp_buf_init(&out);
	CHECK_INT(qp_export_log_ndjson(b, &out), 0);
	CHECK_STR(out.data ? out.data : "", "{\"lost\": 3}\n");
	qp_buf_free(&out);

	/* nothing */
	b->lost = 0;
	qp_buf_init(&out);
	CHECK_INT(qp_export_log_ndjson(b, &out), 0);
	CHECK_INT(out.len, 0);
	qp_buf_free(&out);
	free(b);
	return test_done("test_encode_logs");
}
