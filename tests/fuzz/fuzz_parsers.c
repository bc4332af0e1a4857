/* fuzz_parsers.c - libFuzzer target for the small parsers that take bytes
 * from outside: USDT argument specs (ELF notes), /proc/PID/maps text,
 * /proc/PID/stat, query-string numbers. None may crash or leak. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "http/http_query.h"
#include "common/procfs.h"
#include "common/usdt_spec.h"
#include "common/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	struct qp_usdt_spec spec;
	struct qp_maps maps = { 0 };
	unsigned int sec;
	uint64_t u;
	int64_t i;
	int pid;
	char err[128];

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	qp_usdt_parse_args(s, &spec);
	if (!qp_maps_parse(s, size, &maps))
		qp_maps_free(&maps);
	qp_stat_parse_starttime(s, &u);
	qp_query_seconds(s, &sec, err, sizeof(err));
	qp_query_pid(s, &pid, err, sizeof(err));
	qp_parse_i64(s, INT64_MIN, INT64_MAX, &i);
	qp_parse_u64(s, UINT64_MAX, &u);
	free(s);
	return 0;
}
