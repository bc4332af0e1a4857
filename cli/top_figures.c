/* top_figures.c - the figures of a `qprof-cli top` round: functions with
 * self and total samples out of folded stacks (common/stackstats.h), the
 * scope rows out of the /api/scopes answer (with their kernel figures
 * when the daemon has them), their sort orders, and the
 * --json document.
 *
 * Functions: from "comm;root;...;leaf count" lines, the comm is dropped, a
 * frame's self count is the samples where it is the leaf, its total count
 * the samples whose stack holds it (once per stack, recursion or not).
 * Unsymbolized frames ("module+0xoffset") are grouped per module ("[vdso]"),
 * as one address is rarely a useful row. */
#include "cli.h"
#include "top.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const sd_keys[SD_N] = { "p50_ns", "p99_ns", "p999_ns", "max_ns", "total_ns" };
const char *const top_fs_names[] = { "self", "total" };
const char *const top_ss_names[] = { "total time", "rate", "p50", "p99", "max" };

void top_round_free(struct round *r)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < r->nscopes; i++) {
		free(r->scopes[i].name);
		free(r->scopes[i].parent);
		free(r->scopes[i].kind);
	}
	free(r->fns);
	qp_stackstats_free(&r->fnstats);
	free(r->scopes);
	free(r->targets);
	free(r);
}

int top_take_status(struct round *r, const json_t *root)
{
	const json_t *arr = json_object_get(root, "targets"), *o;
	const char *v = cli_json_str(root, "version");
	size_t i;

	snprintf(r->version, sizeof(r->version), "%s", v ? v : "?");
	if (!json_is_array(arr))
		return 0;
	r->targets = calloc(json_array_size(arr) + 1, sizeof(*r->targets));
	if (!r->targets)
		return -ENOMEM;
	json_array_foreach(arr, i, o) {
		uint64_t pid;
		const char *comm = cli_json_str(o, "comm");

		if (!cli_json_u64(o, "pid", &pid) || !pid || pid > CLI_PID_MAX)
			continue;
		r->targets[r->ntargets].pid = (int64_t)pid;
		snprintf(r->targets[r->ntargets].comm, sizeof(r->targets[0].comm), "%s",
			 comm ? comm : "?");
		{
			const json_t *ring = json_object_get(o, "ring");
			uint64_t lost = 0;

			if (cli_json_u64(ring, "lost", &lost) && lost)
				cli_json_u64(ring, "lost_scopes", &r->targets[r->ntargets].ring_lost);
			r->targets[r->ntargets].ring_lost_est = json_is_true(json_object_get(ring, "lost_estimated"));
		}
		r->ntargets++;
	}
	return 0;
}

/* ---- functions out of folded stacks ------------------------------------ */

/* "module+0x1a2b" -> "module": the length of the part to keep. */
static size_t frame_len(const char *s, size_t len)
{
	size_t i = len;

	while (i > 0 && ((s[i - 1] >= '0' && s[i - 1] <= '9') || (s[i - 1] >= 'a' && s[i - 1] <= 'f') ||
			 (s[i - 1] >= 'A' && s[i - 1] <= 'F')))
		i--;
	if (i < len && i >= 4 && s[i - 1] == 'x' && s[i - 2] == '0' && s[i - 3] == '+')
		return i - 3;
	return len;
}

int top_take_folded(struct round *r, char *text, size_t len)
{
	struct qp_stackstats *st = &r->fnstats;
	char *line = text, *end = text + len;
	size_t i;
	int rc = 0;

	qp_stackstats_init(st, 0);
	while (line < end && !rc) {
		char *nl = memchr(line, '\n', (size_t)(end - line)), *sp, *p, *stop;
		uint64_t count;
		bool first = true;

		if (!nl)
			nl = end;
		*nl = '\0';
		sp = strrchr(line, ' ');
		if (!sp || qp_parse_u64(sp + 1, UINT64_MAX / 4, &count) || !count) {
			line = nl + 1;
			continue;
		}
		qp_stackstats_stack(st, count);
		stop = sp;
		for (p = line; p < stop; ) {
			char *semi = memchr(p, ';', (size_t)(stop - p));
			char *fe = semi ? semi : stop;

			if (first) {	/* the comm */
				first = false;
				p = fe + 1;
				continue;
			}
			if (qp_stackstats_frame(st, p, frame_len(p, (size_t)(fe - p)), !semi, NULL) < 0) {
				rc = -ENOMEM;
				break;
			}
			p = fe + 1;
		}
		line = nl + 1;
	}
	r->samples = st->samples;
	r->nfns = qp_stackstats_count(st);
	r->fns = calloc(r->nfns + 1, sizeof(*r->fns));
	if (!r->fns) {
		r->nfns = 0;
		return -ENOMEM;
	}
	for (i = 0; i < r->nfns; i++) {
		const struct qp_fnstat *f = qp_stackstats_at(st, i);

		r->fns[i] = (struct fn_row){ .name = qp_stackstats_key(st, i, NULL), .self = f->self,
					     .total = f->total };
	}
	return rc;
}

/* ---- scopes ------------------------------------------------------------ */

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

int top_take_scopes(struct round *r, const json_t *root)
{
	const json_t *arr = json_object_get(root, "scopes"), *o;
	size_t i;
	int k;

	if (!json_is_array(arr))
		return -EPROTO;
	r->scopes = calloc(json_array_size(arr) + 1, sizeof(*r->scopes));
	if (!r->scopes)
		return -ENOMEM;
	json_array_foreach(arr, i, o) {
		struct scope_row *s = &r->scopes[r->nscopes++];
		const char *name = cli_json_str(o, "name");

		s->name = strdup(name ? name : "?");
		s->parent = dup_or_null(cli_json_str(o, "parent"));
		s->kind = dup_or_null(cli_json_str(o, "kind"));
		if (!s->name)
			return -ENOMEM;
		cli_json_u64(o, "pid", &s->pid);
		cli_json_u64(o, "count", &s->count);
		s->rate = (double)s->count / r->interval;
		for (k = 0; k < SD_N; k++)
			s->has_dur[k] = cli_json_double(o, sd_keys[k], &s->dur[k]);
		cli_json_u64(o, "calibration_ns", &s->calibration_ns);
		/* null (not traced) or absent: no kernel figures */
		s->has_kernel = cli_json_u64(o, "off_cpu_ns", &s->off_cpu_ns) &&
				cli_json_u64(o, "voluntary_switches", &s->voluntary) &&
				cli_json_u64(o, "involuntary_switches", &s->involuntary);
		r->kernel |= s->has_kernel;
	}
	return 0;
}

/* ---- sorting ----------------------------------------------------------- */


static int cmp_u64_desc(uint64_t a, uint64_t b)
{
	return a == b ? 0 : a > b ? -1 : 1;
}

static int cmp_fn_self(const void *pa, const void *pb)
{
	const struct fn_row *a = pa, *b = pb;
	int c = cmp_u64_desc(a->self, b->self);

	if (!c)
		c = cmp_u64_desc(a->total, b->total);
	return c ? c : strcmp(a->name, b->name);
}

static int cmp_fn_total(const void *pa, const void *pb)
{
	const struct fn_row *a = pa, *b = pb;
	int c = cmp_u64_desc(a->total, b->total);

	if (!c)
		c = cmp_u64_desc(a->self, b->self);
	return c ? c : strcmp(a->name, b->name);
}

static int scope_sort_key;	/* only read by cmp_scope, set just before qsort */

static int cmp_dbl_desc(bool ha, double a, bool hb, double b)
{
	if (ha != hb)
		return ha ? -1 : 1;	/* no value (marks, probes): last */
	if (!ha || a == b)
		return 0;
	return a > b ? -1 : 1;
}

static int cmp_scope(const void *pa, const void *pb)
{
	const struct scope_row *a = pa, *b = pb;
	int c = 0;

	switch (scope_sort_key) {
	case SS_RATE:
		c = cmp_u64_desc(a->count, b->count);
		break;
	case SS_P50:
		c = cmp_dbl_desc(a->has_dur[SD_P50], a->dur[SD_P50], b->has_dur[SD_P50], b->dur[SD_P50]);
		break;
	case SS_P99:
		c = cmp_dbl_desc(a->has_dur[SD_P99], a->dur[SD_P99], b->has_dur[SD_P99], b->dur[SD_P99]);
		break;
	case SS_MAX:
		c = cmp_dbl_desc(a->has_dur[SD_MAX], a->dur[SD_MAX], b->has_dur[SD_MAX], b->dur[SD_MAX]);
		break;
	}
	if (!c)
		c = cmp_dbl_desc(a->has_dur[SD_TOTAL], a->dur[SD_TOTAL], b->has_dur[SD_TOTAL],
				 b->dur[SD_TOTAL]);
	if (!c)
		c = cmp_u64_desc(a->count, b->count);
	if (!c)
		c = strcmp(a->name, b->name);
	if (!c)
		c = strcmp(a->parent ? a->parent : "", b->parent ? b->parent : "");
	return c ? c : cmp_u64_desc(b->pid, a->pid);
}

void top_sort_round(struct round *r, enum fn_sort fs, enum sc_sort ss)
{
	if (r->nfns)
		qsort(r->fns, r->nfns, sizeof(*r->fns), fs == FS_SELF ? cmp_fn_self : cmp_fn_total);
	scope_sort_key = ss;
	if (r->nscopes)
		qsort(r->scopes, r->nscopes, sizeof(*r->scopes), cmp_scope);
}

/* ---- --json ------------------------------------------------------------ */

json_t *top_round_json(const struct round *r)
{
	json_t *root = json_object(), *fns = json_array(), *scs = json_array();
	size_t i;

	json_object_set_new(root, "interval_s", json_integer(r->interval));
	json_object_set_new(root, "pid", r->pid ? json_integer(r->pid) : json_null());
	json_object_set_new(root, "samples", json_integer((json_int_t)r->samples));
	for (i = 0; i < r->nfns; i++) {
		const struct fn_row *f = &r->fns[i];
		double t = r->samples ? (double)r->samples : 1;

		json_array_append_new(fns, json_pack("{s:s, s:f, s:f, s:I, s:I}", "name", f->name,
						     "self_pct", 100.0 * (double)f->self / t,
						     "total_pct", 100.0 * (double)f->total / t,
						     "samples", (json_int_t)f->self,
						     "total_samples", (json_int_t)f->total));
	}
	for (i = 0; i < r->nscopes; i++) {
		const struct scope_row *sr = &r->scopes[i];
		json_t *o = json_pack("{s:s, s:o, s:o, s:I, s:f}", "name", sr->name,
				      "parent", sr->parent ? json_string(sr->parent) : json_null(),
				      "kind", sr->kind ? json_string(sr->kind) : json_null(),
				      "pid", (json_int_t)sr->pid, "rate_per_s", sr->rate);
		static const char *const keys[SD_N] = { "p50_ns", "p99_ns", "p999_ns", "max_ns", "total_ns" };
		int k;

		for (k = 0; k < SD_N; k++)
			json_object_set_new(o, keys[k], sr->has_dur[k] ? json_real(sr->dur[k]) : json_null());
		json_object_set_new(o, "off_cpu_ns", sr->has_kernel ? json_integer((json_int_t)sr->off_cpu_ns)
								 : json_null());
		json_object_set_new(o, "voluntary_switches",
				    sr->has_kernel ? json_integer((json_int_t)sr->voluntary) : json_null());
		json_object_set_new(o, "involuntary_switches",
				    sr->has_kernel ? json_integer((json_int_t)sr->involuntary) : json_null());
		json_array_append_new(scs, o);
	}
	json_object_set_new(root, "functions", fns);
	json_object_set_new(root, "scopes", scs);
	return root;
}
