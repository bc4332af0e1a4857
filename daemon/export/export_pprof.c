/* export_pprof.c - the profile as a gzipped perftools.profiles.Profile
 * (github.com/google/pprof/proto/profile.proto), encoded by hand: varints,
 * length-delimited submessages built in a scratch buffer, packed repeated
 * scalars. A frame and the frames inlined into it at the same address are
 * one Location with a Line per level, innermost first. See export.h for
 * what goes where. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "export.h"
#include "common/hashtab.h"
#include "pb_wire.h"

/* Profile field numbers. */
enum {
	P_SAMPLE_TYPE = 1, P_SAMPLE = 2, P_MAPPING = 3, P_LOCATION = 4, P_FUNCTION = 5,
	P_STRING_TABLE = 6, P_TIME_NANOS = 9, P_DURATION_NANOS = 10, P_PERIOD_TYPE = 11,
	P_PERIOD = 12, P_COMMENT = 13, P_DEFAULT_SAMPLE_TYPE = 14,
};

#define LOC_MAX_LINES 64	/* Line entries of one location (frame + inlined) */

struct enc {
	struct qp_htab str;	/* interned strings: the string table, in order */
	struct qp_htab fn;	/* (name, source file, module) string indexes: function id - 1 */
	struct qp_htab loc;	/* (mapping id, address, n, (function id, line) * n): location id - 1 */
};

/* The 1-based id of the key (a, b, c), added when new; 0 on OOM. */
static uint32_t tab_get(struct qp_htab *t, uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t k[3] = { a, b, c };
	int64_t i = qp_htab_add(t, k, sizeof(k), NULL);

	return i < 0 ? 0 : (uint32_t)i + 1;
}

static void tab_key(const struct qp_htab *t, size_t i, uint64_t k[3])
{
	memcpy(k, qp_htab_key(t, i, NULL), 3 * sizeof(*k));
}

/* Frames j.. of S that make one location: frame j and those inlined into
 * it (same address and mapping). Their count. */
static size_t loc_group(const struct qp_cpu_sample *s, size_t j)
{
	size_t n = 1;

	while (j + n < s->nframes && n < LOC_MAX_LINES && s->frames[j + n].inlined &&
	       s->frames[j + n].addr == s->frames[j].addr &&
	       s->frames[j + n].mapping == s->frames[j].mapping)
		n++;
	return n;
}

/* The string table index of s (NULL is ""); -1 on OOM. */
static int64_t str_get(struct qp_htab *t, const char *s)
{
	int64_t i = qp_htab_add_str(t, s ? s : "", NULL);

	return i < 0 ? -1 : i;
}

/* ---- protobuf wire format ---- */

/* A varint field; proto3 leaves zeros out. */
static void put_uint(struct qp_buf *b, int field, uint64_t v)
{
	if (v)
		qp_pb_uint(b, field, v);
}

static void put_value_type(struct qp_buf *b, int field, struct qp_buf *m, int64_t type, int64_t unit)
{
	put_uint(m, 1, (uint64_t)type);
	put_uint(m, 2, (uint64_t)unit);
	qp_pb_msg(b, field, m);
}

static int gzip_into(const struct qp_buf *raw, struct qp_buf *out)
{
	z_stream z;
	unsigned char *dst;
	uLong cap;
	int rc;

	memset(&z, 0, sizeof(z));
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	cap = deflateBound(&z, (uLong)raw->len) + 32;
	dst = malloc(cap);
	if (!dst) {
		deflateEnd(&z);
		return -ENOMEM;
	}
	z.next_in = (Bytef *)raw->data;
	z.avail_in = (uInt)raw->len;
	z.next_out = dst;
	z.avail_out = (uInt)cap;
	rc = deflate(&z, Z_FINISH);
	if (rc == Z_STREAM_END)
		qp_buf_add(out, dst, cap - z.avail_out);
	deflateEnd(&z);
	free(dst);
	if (rc != Z_STREAM_END)
		return -EIO;
	return out->failed ? -ENOMEM : 0;
}

/* A string label KEY = VALUE of a sample (M), through scratch L. */
static void put_str_label(struct qp_buf *m, struct qp_buf *l, int64_t key, int64_t value)
{
	put_uint(l, 1, (uint64_t)key);
	put_uint(l, 2, (uint64_t)value);
	qp_pb_msg(m, 3, l);
}

/* S's open scopes, innermost first, joined by ';' into J (emptied first). */
static const char *scopes_joined(const struct qp_cpu_sample *s, struct qp_buf *j)
{
	size_t i;

	j->len = 0;
	for (i = 0; i < s->nscopes; i++) {
		if (i)
			qp_buf_add(j, ";", 1);
		qp_buf_add(j, s->scopes[i], strlen(s->scopes[i]));
	}
	qp_buf_add(j, "", 1);
	return j->failed ? NULL : j->data;
}

/* A span id as a label's value: 16 lowercase hex digits, as OpenTelemetry
 * writes span ids. */
static const char *span_hex(uint64_t id, char out[17])
{
	static const char hex[] = "0123456789abcdef";
	int i;

	for (i = 15; i >= 0; i--, id >>= 4)
		out[i] = hex[id & 15];
	out[16] = 0;
	return out;
}

/* One encoding: the tables of pass 1 and the buffers of pass 2. */
struct pp {
	const struct qp_cpu_profile *p;
	struct enc e;
	struct qp_buf raw, m, line, ids, vals, join;
	/* the fixed strings' indexes */
	int64_t s_samples, s_count, s_cpu, s_ns, s_pid, s_comm, s_kmap, s_title;
	int64_t s_thread, s_tid, s_scope, s_scopes;
	int64_t s_span, s_span_id;	/* interned at the first sample with a span (0: none has) */
	uint64_t kmin, kmax;	/* kernel frames without a mapping of their own: one made up */
	uint32_t kmap;		/* its id, 0: none */
	uint32_t *locs;		/* every sample's location ids, root first, one after the other */
	uint32_t *slocs;	/* per sample: how many of them */
	uint8_t *mflags;	/* per mapping: 1 file names, 2 line numbers, 4 inlined frames */
	uint64_t key[3 + 2 * LOC_MAX_LINES];
};

#define CHECK_IDX(x)                                                                               \
	do {                                                                                       \
		if ((x) < 0)                                                                       \
			return -ENOMEM;                                                            \
	} while (0)

/* Pass 1a: the strings every profile has first, in a fixed order. */
static int intern_fixed(struct pp *x)
{
	const struct qp_cpu_profile *p = x->p;
	struct qp_htab *t = &x->e.str;
	size_t i;

	CHECK_IDX(str_get(t, ""));
	CHECK_IDX(x->s_samples = str_get(t, "samples"));
	CHECK_IDX(x->s_count = str_get(t, "count"));
	CHECK_IDX(x->s_cpu = str_get(t, p->off_cpu ? "off_cpu" : "cpu"));
	CHECK_IDX(x->s_ns = str_get(t, "nanoseconds"));
	CHECK_IDX(x->s_pid = str_get(t, "pid"));
	CHECK_IDX(x->s_comm = str_get(t, "comm"));
	CHECK_IDX(x->s_kmap = str_get(t, "[kernel.kallsyms]"));
	CHECK_IDX(x->s_thread = str_get(t, "thread"));
	CHECK_IDX(x->s_tid = str_get(t, "tid"));
	CHECK_IDX(x->s_scope = str_get(t, "qprof_scope"));
	CHECK_IDX(x->s_scopes = str_get(t, "qprof_scopes"));
	if (p->title)
		CHECK_IDX(x->s_title = str_get(t, p->title));
	for (i = 0; i < p->nvalues; i++) {
		CHECK_IDX(str_get(t, p->value_types[i].type));
		CHECK_IDX(str_get(t, p->value_types[i].unit));
	}
	if (p->nvalues) {
		CHECK_IDX(str_get(t, p->period_type.type));
		CHECK_IDX(str_get(t, p->period_type.unit));
		CHECK_IDX(str_get(t, p->default_type));
	}
	return 0;
}

/* Pass 1b: the made-up kernel mapping's range, and room for the
 * samples' location ids. */
static int kernel_and_room(struct pp *x)
{
	const struct qp_cpu_profile *p = x->p;
	size_t i, j, nlocs = 0;

	x->kmin = UINT64_MAX;
	for (i = 0; i < p->nsamples; i++) {
		if (!p->samples[i].count)
			continue;
		nlocs += p->samples[i].nframes;
		for (j = 0; j < p->samples[i].nframes; j++) {
			const struct qp_cpu_frame *f = &p->samples[i].frames[j];

			if (f->kernel && (!f->mapping || f->mapping > p->nmappings)) {
				x->kmin = f->addr < x->kmin ? f->addr : x->kmin;
				x->kmax = f->addr > x->kmax ? f->addr : x->kmax;
				x->kmap = (uint32_t)p->nmappings + 1;
			}
		}
	}
	x->locs = malloc((nlocs ? nlocs : 1) * sizeof(*x->locs));
	x->slocs = calloc(p->nsamples ? p->nsamples : 1, sizeof(*x->slocs));
	x->mflags = calloc(p->nmappings + 2, 1);
	return x->locs && x->slocs && x->mflags ? 0 : -ENOMEM;
}

/* The location of frames J..J+N of S (a frame and those inlined into it),
 * its functions and strings made; its id, 0 on OOM. */
static uint32_t location_of(struct pp *x, const struct qp_cpu_sample *s, size_t j, size_t n)
{
	const struct qp_cpu_profile *p = x->p;
	const struct qp_cpu_frame *f0 = &s->frames[j];
	uint64_t map = f0->mapping && f0->mapping <= p->nmappings ? f0->mapping : f0->kernel ? x->kmap : 0;
	int64_t li;
	size_t l;

	x->key[0] = map;
	x->key[1] = f0->addr;
	x->key[2] = n;
	for (l = 0; l < n; l++) {	/* innermost first: the group's last frame */
		const struct qp_cpu_frame *f = &s->frames[j + n - 1 - l];
		int64_t name = str_get(&x->e.str, f->name && *f->name ? f->name : "[unknown]");
		int64_t mod = str_get(&x->e.str, f->module);
		int64_t file = str_get(&x->e.str, f->file);
		uint32_t fid;

		if (name < 0 || mod < 0 || file < 0)
			return 0;
		fid = tab_get(&x->e.fn, (uint64_t)name, (uint64_t)file, (uint64_t)mod);
		if (!fid)
			return 0;
		x->key[3 + 2 * l] = fid;
		x->key[4 + 2 * l] = f->line;
		if (map <= p->nmappings && map && f->file)
			x->mflags[map] |= 1;
		if (map <= p->nmappings && map && f->line)
			x->mflags[map] |= 2;
		if (map <= p->nmappings && map && n > 1)
			x->mflags[map] |= 4;
	}
	li = qp_htab_add(&x->e.loc, x->key, (3 + 2 * n) * sizeof(*x->key), NULL);
	return li < 0 ? 0 : (uint32_t)li + 1;
}

/* Pass 1c: each sample's strings (its thread, its scopes), functions and
 * locations, in sample order; then the mappings' strings. */
static int intern_samples(struct pp *x)
{
	const struct qp_cpu_profile *p = x->p;
	size_t i, j, k, n;

	for (i = 0, k = 0; i < p->nsamples; i++) {
		const struct qp_cpu_sample *s = &p->samples[i];

		if (!s->count)
			continue;
		CHECK_IDX(str_get(&x->e.str, s->comm));
		if (s->nscopes) {
			const char *all = scopes_joined(s, &x->join);

			if (!all)
				return -ENOMEM;
			CHECK_IDX(str_get(&x->e.str, s->scopes[0]));
			CHECK_IDX(str_get(&x->e.str, all));
		}
		if (s->span) {	/* the two keys only in a profile that has spans */
			char hex[17];

			if (!x->s_span) {
				CHECK_IDX(x->s_span = str_get(&x->e.str, "qprof_span"));
				CHECK_IDX(x->s_span_id = str_get(&x->e.str, "span_id"));
			}
			CHECK_IDX(str_get(&x->e.str, s->span));
			if (!s->span_no_id)
				CHECK_IDX(str_get(&x->e.str, span_hex(s->span_id, hex)));
		}
		for (j = 0; j < s->nframes; j += n) {
			uint32_t id;

			n = loc_group(s, j);
			if (!(id = location_of(x, s, j, n)))
				return -ENOMEM;
			x->locs[k++] = id;
			x->slocs[i]++;
		}
	}
	for (i = 0; i < p->nmappings; i++) {
		CHECK_IDX(str_get(&x->e.str, p->mappings[i].file));
		CHECK_IDX(str_get(&x->e.str, p->mappings[i].build_id));
	}
	return 0;
}

/* Pass 2a: S's labels (pid, comm; thread and tid when known; the scopes;
 * the open span's name and id),
 * into the sample message M; every string was interned in pass 1. */
static void put_labels(struct pp *x, const struct qp_cpu_sample *s)
{
	struct qp_buf *m = &x->m, *line = &x->line;

	put_uint(line, 1, (uint64_t)x->s_pid); /* label pid = num */
	put_uint(line, 3, s->pid);
	qp_pb_msg(m, 3, line);
	put_str_label(m, line, x->s_comm, str_get(&x->e.str, s->comm));
	if (s->tid) {	/* 0: unknown (a heap stack not kept) */
		put_str_label(m, line, x->s_thread, str_get(&x->e.str, s->comm));
		put_uint(line, 1, (uint64_t)x->s_tid); /* label tid = num */
		put_uint(line, 3, s->tid);
		qp_pb_msg(m, 3, line);
	}
	if (s->nscopes) {
		put_str_label(m, line, x->s_scope, str_get(&x->e.str, s->scopes[0]));
		put_str_label(m, line, x->s_scopes, str_get(&x->e.str, scopes_joined(s, &x->join)));
	}
	if (s->span) {
		char hex[17];

		put_str_label(m, line, x->s_span, str_get(&x->e.str, s->span));
		if (!s->span_no_id)
			put_str_label(m, line, x->s_span_id, str_get(&x->e.str, span_hex(s->span_id, hex)));
	}
}

/* Pass 2b: the sample types, then the samples (locations leaf first,
 * values, labels). */
static void put_samples(struct pp *x)
{
	const struct qp_cpu_profile *p = x->p;
	size_t i, j, k;

	/* off-CPU: one value, the nanoseconds off the CPU; the heap: its types */
	if (!p->nvalues) {
		if (!p->off_cpu)
			put_value_type(&x->raw, P_SAMPLE_TYPE, &x->m, x->s_samples, x->s_count);
		put_value_type(&x->raw, P_SAMPLE_TYPE, &x->m, x->s_cpu, x->s_ns);
	}
	for (i = 0; i < p->nvalues; i++)
		put_value_type(&x->raw, P_SAMPLE_TYPE, &x->m, str_get(&x->e.str, p->value_types[i].type),
			       str_get(&x->e.str, p->value_types[i].unit));
	for (i = 0, k = 0; i < p->nsamples; i++) {
		const struct qp_cpu_sample *s = &p->samples[i];

		if (!s->count) /* skipped as in the other exporters */
			continue;
		x->ids.len = 0;
		for (j = x->slocs[i]; j-- > 0;) /* leaf first */
			qp_pb_varint(&x->ids, x->locs[k + j]);
		k += x->slocs[i];
		if (x->ids.len)
			qp_pb_bytes(&x->m, 1, x->ids.data, x->ids.len);
		x->vals.len = 0;
		if (p->nvalues) {
			for (j = 0; j < p->nvalues; j++)
				qp_pb_varint(&x->vals, (uint64_t)s->values[j]);
		} else {
			if (!p->off_cpu)
				qp_pb_varint(&x->vals, s->count);
			qp_pb_varint(&x->vals, s->count * p->period_ns);
		}
		qp_pb_bytes(&x->m, 2, x->vals.data, x->vals.len);
		put_labels(x, s);
		qp_pb_msg(&x->raw, P_SAMPLE, &x->m);
	}
}

/* Pass 2c: the mappings (the made-up kernel one last), the locations, the
 * functions and the string table. */
static void put_tables(struct pp *x)
{
	const struct qp_cpu_profile *p = x->p;
	struct qp_buf *m = &x->m;
	size_t i;

	for (i = 0; i < p->nmappings; i++) {
		const struct qp_cpu_mapping *mp = &p->mappings[i];

		put_uint(m, 1, i + 1);
		put_uint(m, 2, mp->start);
		put_uint(m, 3, mp->limit);
		put_uint(m, 4, mp->offset);
		put_uint(m, 5, (uint64_t)str_get(&x->e.str, mp->file));
		put_uint(m, 6, (uint64_t)str_get(&x->e.str, mp->build_id));
		put_uint(m, 7, 1); /* has_functions: names are resolved already */
		put_uint(m, 8, x->mflags[i + 1] & 1);	/* has_filenames */
		put_uint(m, 9, (x->mflags[i + 1] & 2) >> 1);	/* has_line_numbers */
		put_uint(m, 10, (x->mflags[i + 1] & 4) >> 2);	/* has_inline_frames */
		qp_pb_msg(&x->raw, P_MAPPING, m);
	}
	if (x->kmap) {
		put_uint(m, 1, x->kmap);
		put_uint(m, 2, x->kmin);
		put_uint(m, 3, x->kmax + 1);
		put_uint(m, 5, (uint64_t)x->s_kmap);
		put_uint(m, 7, 1);
		qp_pb_msg(&x->raw, P_MAPPING, m);
	}
	for (i = 0; i < x->e.loc.n; i++) {
		size_t len, l;
		const char *kb = qp_htab_key(&x->e.loc, i, &len);

		memcpy(x->key, kb, len < sizeof(x->key) ? len : sizeof(x->key));
		put_uint(m, 1, i + 1);
		put_uint(m, 2, x->key[0]);
		put_uint(m, 3, x->key[1]);
		for (l = 0; l < x->key[2] && l < LOC_MAX_LINES; l++) {
			put_uint(&x->line, 1, x->key[3 + 2 * l]); /* Line.function_id */
			put_uint(&x->line, 2, x->key[4 + 2 * l]); /* Line.line */
			qp_pb_msg(m, 4, &x->line);
		}
		qp_pb_msg(&x->raw, P_LOCATION, m);
	}
	for (i = 0; i < x->e.fn.n; i++) {
		tab_key(&x->e.fn, i, x->key);
		put_uint(m, 1, i + 1);
		put_uint(m, 2, x->key[0]);
		put_uint(m, 3, x->key[0]);
		put_uint(m, 4, x->key[1]); /* filename: the source file, "" when unknown */
		qp_pb_msg(&x->raw, P_FUNCTION, m);
	}
	for (i = 0; i < x->e.str.n; i++) {
		size_t len;
		const char *str = qp_htab_key(&x->e.str, i, &len);

		qp_pb_bytes(&x->raw, P_STRING_TABLE, str, len);
	}
}

/* Pass 2d: the profile's own fields after the tables. */
static void put_tail(struct pp *x)
{
	const struct qp_cpu_profile *p = x->p;

	put_uint(&x->raw, P_TIME_NANOS, p->time_ns);
	put_uint(&x->raw, P_DURATION_NANOS, p->duration_ns);
	if (p->nvalues)
		put_value_type(&x->raw, P_PERIOD_TYPE, &x->m, str_get(&x->e.str, p->period_type.type),
			       str_get(&x->e.str, p->period_type.unit));
	else
		put_value_type(&x->raw, P_PERIOD_TYPE, &x->m, x->s_cpu, x->s_ns);
	put_uint(&x->raw, P_PERIOD, p->period_ns);
	if (x->s_title) {
		qp_pb_varint(&x->raw, (uint64_t)P_COMMENT << 3);
		qp_pb_varint(&x->raw, (uint64_t)x->s_title);
	}
	if (p->nvalues)
		put_uint(&x->raw, P_DEFAULT_SAMPLE_TYPE, (uint64_t)str_get(&x->e.str, p->default_type));
}

int qp_export_pprof(const struct qp_cpu_profile *p, struct qp_buf *out)
{
	struct pp x = { .p = p };
	int ret;

	qp_htab_init(&x.e.str, 0);
	qp_htab_init(&x.e.fn, 0);
	qp_htab_init(&x.e.loc, 0);
	qp_buf_init(&x.raw);
	qp_buf_init(&x.m);
	qp_buf_init(&x.line);
	qp_buf_init(&x.ids);
	qp_buf_init(&x.vals);
	qp_buf_init(&x.join);
	/* pass 1: every string, function and location, numbered in the order met */
	ret = intern_fixed(&x);
	if (!ret)
		ret = kernel_and_room(&x);
	if (!ret)
		ret = intern_samples(&x);
	/* pass 2: the message, in field order */
	if (!ret) {
		put_samples(&x);
		put_tables(&x);
		put_tail(&x);
		if (x.raw.failed || x.m.failed || x.line.failed || x.ids.failed || x.vals.failed)
			ret = -ENOMEM;
		else
			ret = gzip_into(&x.raw, out);
	}
	qp_buf_free(&x.raw);
	qp_buf_free(&x.m);
	qp_buf_free(&x.line);
	qp_buf_free(&x.ids);
	qp_buf_free(&x.vals);
	qp_buf_free(&x.join);
	free(x.locs);
	free(x.slocs);
	free(x.mflags);
	qp_htab_free(&x.e.str);
	qp_htab_free(&x.e.fn);
	qp_htab_free(&x.e.loc);
	return ret;
}
