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
#include "hashtab.h"
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

#define CHECK_IDX(x)                                                                               \
	do {                                                                                       \
		if ((x) < 0) {                                                                     \
			ret = -ENOMEM;                                                             \
			goto out;                                                                  \
		}                                                                                  \
	} while (0)

int qp_export_pprof(const struct qp_cpu_profile *p, struct qp_buf *out)
{
	struct enc e;
	struct qp_buf raw, m, line, ids, vals, join;
	int64_t s_samples, s_count, s_cpu, s_ns, s_pid, s_comm, s_kmap, s_title = 0;
	int64_t s_thread, s_tid, s_scope, s_scopes;
	uint64_t kmin = UINT64_MAX, kmax = 0;
	uint32_t kmap = 0, *locs = NULL, *slocs = NULL;
	uint8_t *mflags = NULL;	/* per mapping: 1 file names, 2 line numbers, 4 inlined frames */
	uint64_t key[3 + 2 * LOC_MAX_LINES];
	size_t i, j, nlocs = 0, k;
	int ret = 0;

	qp_htab_init(&e.str, 0);
	qp_htab_init(&e.fn, 0);
	qp_htab_init(&e.loc, 0);
	qp_buf_init(&raw);
	qp_buf_init(&m);
	qp_buf_init(&line);
	qp_buf_init(&ids);
	qp_buf_init(&vals);
	qp_buf_init(&join);
	/* Pass 1: strings, functions and locations, each sample's location ids. */
	CHECK_IDX(str_get(&e.str, ""));
	CHECK_IDX(s_samples = str_get(&e.str, "samples"));
	CHECK_IDX(s_count = str_get(&e.str, "count"));
	CHECK_IDX(s_cpu = str_get(&e.str, p->off_cpu ? "off_cpu" : "cpu"));
	CHECK_IDX(s_ns = str_get(&e.str, "nanoseconds"));
	CHECK_IDX(s_pid = str_get(&e.str, "pid"));
	CHECK_IDX(s_comm = str_get(&e.str, "comm"));
	CHECK_IDX(s_kmap = str_get(&e.str, "[kernel.kallsyms]"));
	CHECK_IDX(s_thread = str_get(&e.str, "thread"));
	CHECK_IDX(s_tid = str_get(&e.str, "tid"));
	CHECK_IDX(s_scope = str_get(&e.str, "qprof_scope"));
	CHECK_IDX(s_scopes = str_get(&e.str, "qprof_scopes"));
	if (p->title)
		CHECK_IDX(s_title = str_get(&e.str, p->title));
	for (i = 0; i < p->nvalues; i++) {
		CHECK_IDX(str_get(&e.str, p->value_types[i].type));
		CHECK_IDX(str_get(&e.str, p->value_types[i].unit));
	}
	if (p->nvalues) {
		CHECK_IDX(str_get(&e.str, p->period_type.type));
		CHECK_IDX(str_get(&e.str, p->period_type.unit));
		CHECK_IDX(str_get(&e.str, p->default_type));
	}
	for (i = 0; i < p->nsamples; i++) {
		if (!p->samples[i].count)
			continue;
		nlocs += p->samples[i].nframes;
		for (j = 0; j < p->samples[i].nframes; j++) {
			const struct qp_cpu_frame *f = &p->samples[i].frames[j];

			if (f->kernel && (!f->mapping || f->mapping > p->nmappings)) {
				kmin = f->addr < kmin ? f->addr : kmin;
				kmax = f->addr > kmax ? f->addr : kmax;
				kmap = (uint32_t)p->nmappings + 1;
			}
		}
	}
	locs = malloc((nlocs ? nlocs : 1) * sizeof(*locs));
	slocs = calloc(p->nsamples ? p->nsamples : 1, sizeof(*slocs));
	mflags = calloc(p->nmappings + 2, 1);
	if (!locs || !slocs || !mflags) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0, k = 0; i < p->nsamples; i++) {
		const struct qp_cpu_sample *s = &p->samples[i];
		size_t n, l;

		if (!s->count)
			continue;
		CHECK_IDX(str_get(&e.str, s->comm));
		if (s->nscopes) {
			const char *all = scopes_joined(s, &join);

			if (!all) {
				ret = -ENOMEM;
				goto out;
			}
			CHECK_IDX(str_get(&e.str, s->scopes[0]));
			CHECK_IDX(str_get(&e.str, all));
		}
		for (j = 0; j < s->nframes; j += n) {
			const struct qp_cpu_frame *f0 = &s->frames[j];
			uint64_t map = f0->mapping && f0->mapping <= p->nmappings ? f0->mapping
									  : f0->kernel ? kmap : 0;
			int64_t li;

			n = loc_group(s, j);
			key[0] = map;
			key[1] = f0->addr;
			key[2] = n;
			for (l = 0; l < n; l++) {	/* innermost first: the group's last frame */
				const struct qp_cpu_frame *f = &s->frames[j + n - 1 - l];
				int64_t name = str_get(&e.str, f->name && *f->name ? f->name : "[unknown]");
				int64_t mod = str_get(&e.str, f->module);
				int64_t file = str_get(&e.str, f->file);
				uint32_t fid;

				CHECK_IDX(name);
				CHECK_IDX(mod);
				CHECK_IDX(file);
				fid = tab_get(&e.fn, (uint64_t)name, (uint64_t)file, (uint64_t)mod);
				if (!fid) {
					ret = -ENOMEM;
					goto out;
				}
				key[3 + 2 * l] = fid;
				key[4 + 2 * l] = f->line;
				if (map <= p->nmappings && map && f->file)
					mflags[map] |= 1;
				if (map <= p->nmappings && map && f->line)
					mflags[map] |= 2;
				if (map <= p->nmappings && map && n > 1)
					mflags[map] |= 4;
			}
			li = qp_htab_add(&e.loc, key, (3 + 2 * n) * sizeof(*key), NULL);
			if (li < 0) {
				ret = -ENOMEM;
				goto out;
			}
			locs[k++] = (uint32_t)li + 1;
			slocs[i]++;
		}
	}
	for (i = 0; i < p->nmappings; i++) {
		CHECK_IDX(str_get(&e.str, p->mappings[i].file));
		CHECK_IDX(str_get(&e.str, p->mappings[i].build_id));
	}

	/* Pass 2: the message, in field order. */
	/* off-CPU: one value, the nanoseconds off the CPU; the heap: its types */
	if (!p->nvalues) {
		if (!p->off_cpu)
			put_value_type(&raw, P_SAMPLE_TYPE, &m, s_samples, s_count);
		put_value_type(&raw, P_SAMPLE_TYPE, &m, s_cpu, s_ns);
	}
	for (i = 0; i < p->nvalues; i++)
		put_value_type(&raw, P_SAMPLE_TYPE, &m, str_get(&e.str, p->value_types[i].type),
			       str_get(&e.str, p->value_types[i].unit));
	for (i = 0, k = 0; i < p->nsamples; i++) {
		const struct qp_cpu_sample *s = &p->samples[i];

		if (!s->count) /* skipped as in the other exporters */
			continue;
		ids.len = 0;
		for (j = slocs[i]; j-- > 0;) /* leaf first */
			qp_pb_varint(&ids, locs[k + j]);
		k += slocs[i];
		if (ids.len)
			qp_pb_bytes(&m, 1, ids.data, ids.len);
		vals.len = 0;
		if (p->nvalues) {
			for (j = 0; j < p->nvalues; j++)
				qp_pb_varint(&vals, (uint64_t)s->values[j]);
		} else {
			if (!p->off_cpu)
				qp_pb_varint(&vals, s->count);
			qp_pb_varint(&vals, s->count * p->period_ns);
		}
		qp_pb_bytes(&m, 2, vals.data, vals.len);
		put_uint(&line, 1, (uint64_t)s_pid); /* label pid = num */
		put_uint(&line, 3, s->pid);
		qp_pb_msg(&m, 3, &line);
		put_str_label(&m, &line, s_comm, str_get(&e.str, s->comm));
		if (s->tid) {	/* 0: unknown (a heap stack not kept) */
			put_str_label(&m, &line, s_thread, str_get(&e.str, s->comm));
			put_uint(&line, 1, (uint64_t)s_tid); /* label tid = num */
			put_uint(&line, 3, s->tid);
			qp_pb_msg(&m, 3, &line);
		}
		if (s->nscopes) {	/* interned in pass 1: no allocation fails here */
			put_str_label(&m, &line, s_scope, str_get(&e.str, s->scopes[0]));
			put_str_label(&m, &line, s_scopes, str_get(&e.str, scopes_joined(s, &join)));
		}
		qp_pb_msg(&raw, P_SAMPLE, &m);
	}
	for (i = 0; i < p->nmappings; i++) {
		const struct qp_cpu_mapping *mp = &p->mappings[i];

		put_uint(&m, 1, i + 1);
		put_uint(&m, 2, mp->start);
		put_uint(&m, 3, mp->limit);
		put_uint(&m, 4, mp->offset);
		put_uint(&m, 5, (uint64_t)str_get(&e.str, mp->file));
		put_uint(&m, 6, (uint64_t)str_get(&e.str, mp->build_id));
		put_uint(&m, 7, 1); /* has_functions: names are resolved already */
		put_uint(&m, 8, mflags[i + 1] & 1);	/* has_filenames */
		put_uint(&m, 9, (mflags[i + 1] & 2) >> 1);	/* has_line_numbers */
		put_uint(&m, 10, (mflags[i + 1] & 4) >> 2);	/* has_inline_frames */
		qp_pb_msg(&raw, P_MAPPING, &m);
	}
	if (kmap) {
		put_uint(&m, 1, kmap);
		put_uint(&m, 2, kmin);
		put_uint(&m, 3, kmax + 1);
		put_uint(&m, 5, (uint64_t)s_kmap);
		put_uint(&m, 7, 1);
		qp_pb_msg(&raw, P_MAPPING, &m);
	}
	for (i = 0; i < e.loc.n; i++) {
		size_t len, l;
		const char *kb = qp_htab_key(&e.loc, i, &len);

		memcpy(key, kb, len < sizeof(key) ? len : sizeof(key));
		put_uint(&m, 1, i + 1);
		put_uint(&m, 2, key[0]);
		put_uint(&m, 3, key[1]);
		for (l = 0; l < key[2] && l < LOC_MAX_LINES; l++) {
			put_uint(&line, 1, key[3 + 2 * l]); /* Line.function_id */
			put_uint(&line, 2, key[4 + 2 * l]); /* Line.line */
			qp_pb_msg(&m, 4, &line);
		}
		qp_pb_msg(&raw, P_LOCATION, &m);
	}
	for (i = 0; i < e.fn.n; i++) {
		tab_key(&e.fn, i, key);
		put_uint(&m, 1, i + 1);
		put_uint(&m, 2, key[0]);
		put_uint(&m, 3, key[0]);
		put_uint(&m, 4, key[1]); /* filename: the source file, "" when unknown */
		qp_pb_msg(&raw, P_FUNCTION, &m);
	}
	for (i = 0; i < e.str.n; i++) {
		size_t len;
		const char *str = qp_htab_key(&e.str, i, &len);

		qp_pb_bytes(&raw, P_STRING_TABLE, str, len);
	}
	put_uint(&raw, P_TIME_NANOS, p->time_ns);
	put_uint(&raw, P_DURATION_NANOS, p->duration_ns);
	if (p->nvalues)
		put_value_type(&raw, P_PERIOD_TYPE, &m, str_get(&e.str, p->period_type.type),
			       str_get(&e.str, p->period_type.unit));
	else
		put_value_type(&raw, P_PERIOD_TYPE, &m, s_cpu, s_ns);
	put_uint(&raw, P_PERIOD, p->period_ns);
	if (s_title) {
		qp_pb_varint(&raw, (uint64_t)P_COMMENT << 3);
		qp_pb_varint(&raw, (uint64_t)s_title);
	}
	if (p->nvalues)
		put_uint(&raw, P_DEFAULT_SAMPLE_TYPE, (uint64_t)str_get(&e.str, p->default_type));
	if (raw.failed || m.failed || line.failed || ids.failed || vals.failed)
		ret = -ENOMEM;
	else
		ret = gzip_into(&raw, out);
out:
	qp_buf_free(&raw);
	qp_buf_free(&m);
	qp_buf_free(&line);
	qp_buf_free(&ids);
	qp_buf_free(&vals);
	qp_buf_free(&join);
	free(locs);
	free(slocs);
	free(mflags);
	qp_htab_free(&e.str);
	qp_htab_free(&e.fn);
	qp_htab_free(&e.loc);
	return ret;
}
