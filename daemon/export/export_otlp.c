/* export_otlp.c - see export_otlp.h. The dictionary's tables are kept
 * encoded: an entry is built in a scratch buffer, looked up by its bytes
 * (the identity the schema gives a dictionary item), and appended to its
 * table when new; its index is its rank after the zero element. The
 * request is the resources, then the dictionary. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "export_otlp.h"
#include "common/hashtab.h"
#include "pb_wire.h"

/* ProfilesDictionary field numbers, which also name the tables */
enum { T_MAPPING = 1, T_LOCATION = 2, T_FUNCTION = 3, T_LINK = 4, T_STRING = 5, T_ATTR = 6, T_STACK = 7,
       T__N = 8 };

#define LOC_MAX_LINES 64

struct dict {
	struct qp_htab str;		/* strings: index = rank ("" is 0) */
	struct qp_htab tab[T__N];	/* other tables by encoded entry */
	struct qp_buf out[T__N];	/* each table's entries as dictionary fields */
	struct qp_buf s[4];		/* scratch, one per nesting level */
	bool failed;
};

static int64_t dstr(struct dict *d, const char *s)
{
	int64_t i = qp_htab_add_str(&d->str, s ? s : "", NULL);

	if (i < 0) {
		d->failed = true;
		return 0;
	}
	return i;
}

/* The index of the entry in scratch M of table T (M emptied). */
static uint64_t dput(struct dict *d, int t, struct qp_buf *m)
{
	bool made = false;
	int64_t i;

	if (m->failed) {
		d->failed = true;
		m->len = 0;
		m->failed = false;
		return 0;
	}
	i = qp_htab_add(&d->tab[t], m->data ? m->data : "", m->len, &made);
	if (i < 0) {
		d->failed = true;
		m->len = 0;
		return 0;
	}
	if (made)
		qp_pb_bytes(&d->out[t], t, m->data, m->len);
	m->len = 0;
	return (uint64_t)i + 1;
}

static void put_uint(struct qp_buf *b, int field, uint64_t v)
{
	if (v)
		qp_pb_uint(b, field, v);
}

/* AnyValue of a string or number into M */
static void any_value(struct qp_buf *m, const char *str, int64_t num)
{
	if (str)
		qp_pb_bytes(m, 1, str, strlen(str));
	else
		qp_pb_uint(m, 3, (uint64_t)num);
}

/* A KeyValueAndUnit of a string (or, STR NULL, the number) */
static uint64_t attr(struct dict *d, const char *key, const char *str, int64_t num)
{
	struct qp_buf *m = &d->s[2], *v = &d->s[3];

	put_uint(m, 1, (uint64_t)dstr(d, key));
	any_value(v, str, num);
	qp_pb_msg(m, 2, v);
	return dput(d, T_ATTR, m);
}

/* A KeyValueAndUnit of an array of N strings */
static uint64_t attr_strings(struct dict *d, const char *key, const char *const *v, size_t n)
{
	struct qp_buf *m = &d->s[1], *any = &d->s[2], *arr = &d->s[3];
	size_t i;

	put_uint(m, 1, (uint64_t)dstr(d, key));
	for (i = 0; i < n; i++) {
		struct qp_buf one;

		qp_buf_init(&one);
		any_value(&one, v[i], 0);
		qp_pb_msg(arr, 1, &one);
		qp_buf_free(&one);
	}
	qp_pb_msg(any, 5, arr);
	qp_pb_msg(m, 2, any);
	return dput(d, T_ATTR, m);
}

static uint64_t mapping(struct dict *d, const struct qp_cpu_mapping *mp)
{
	struct qp_buf *m = &d->s[1], *ids = &d->s[0];
	uint64_t bid = mp->build_id && mp->build_id[0] ?
			       attr(d, "process.executable.build_id.gnu", mp->build_id, 0) : 0;

	ids->len = 0;
	put_uint(m, 1, mp->start);
	put_uint(m, 2, mp->limit);
	put_uint(m, 3, mp->offset);
	put_uint(m, 4, (uint64_t)dstr(d, mp->file));
	if (bid) {
		qp_pb_varint(ids, bid);
		qp_pb_bytes(m, 5, ids->data, ids->len);
		ids->len = 0;
	}
	return dput(d, T_MAPPING, m);
}

static uint64_t function(struct dict *d, const struct qp_cpu_frame *f)
{
	struct qp_buf *m = &d->s[3];
	int64_t name = dstr(d, f->name && *f->name ? f->name : "[unknown]");

	put_uint(m, 1, (uint64_t)name);
	put_uint(m, 2, (uint64_t)name);
	put_uint(m, 3, (uint64_t)dstr(d, f->file));
	return dput(d, T_FUNCTION, m);
}

/* The location of frames S->frames[j .. j+n) (n: the frame and those
 * inlined into it) in the dictionary's mapping MAP. */
static uint64_t location(struct dict *d, const struct qp_cpu_sample *s, size_t j, size_t n, uint64_t map)
{
	struct qp_buf *m = &d->s[1], *line = &d->s[2];
	const struct qp_cpu_frame *f0 = &s->frames[j];
	uint64_t fn[LOC_MAX_LINES];
	size_t l;

	/* functions first: they use the scratch of the deepest level only */
	for (l = 0; l < n; l++)	/* innermost first: the group's last frame */
		fn[l] = function(d, &s->frames[j + n - 1 - l]);
	put_uint(m, 1, map);
	put_uint(m, 2, f0->addr);
	for (l = 0; l < n; l++) {
		put_uint(line, 1, fn[l]);
		put_uint(line, 2, s->frames[j + n - 1 - l].line);
		qp_pb_msg(m, 3, line);
	}
	return dput(d, T_LOCATION, m);
}

/* frames j.. of S that make one location (export_pprof.c's rule) */
static size_t loc_group(const struct qp_cpu_sample *s, size_t j)
{
	size_t n = 1;

	while (j + n < s->nframes && n < LOC_MAX_LINES && s->frames[j + n].inlined &&
	       s->frames[j + n].addr == s->frames[j].addr && s->frames[j + n].mapping == s->frames[j].mapping)
		n++;
	return n;
}

/* MAPS: the dictionary's mapping of each of P's (1-based), made on first use */
static uint64_t stack(struct dict *d, const struct qp_cpu_profile *p, const struct qp_cpu_sample *s,
		      uint64_t *maps, uint64_t *locs)
{
	struct qp_buf *m = &d->s[0];
	size_t j, n, k = 0;
	struct qp_buf ids;

	for (j = 0; j < s->nframes; j += n) {
		uint32_t mi = s->frames[j].mapping;

		n = loc_group(s, j);
		if (mi && mi <= p->nmappings && !maps[mi])
			maps[mi] = mapping(d, &p->mappings[mi - 1]);
		locs[k++] = location(d, s, j, n, mi && mi <= p->nmappings ? maps[mi] : 0);
	}
	qp_buf_init(&ids);
	while (k-- > 0)	/* leaf first */
		qp_pb_varint(&ids, locs[k]);
	qp_pb_bytes(m, 1, ids.data, ids.len);
	m->failed |= ids.failed;
	qp_buf_free(&ids);
	return dput(d, T_STACK, m);
}

/* The Link of a span id: qprof's spans belong to no trace, so trace_id is
 * 16 zero bytes; span_id is the id's 8 bytes, most significant first (the
 * order its hex is written in). An id of 0 is the zero link (index 0). */
static uint64_t link_of(struct dict *d, uint64_t id)
{
	static const unsigned char no_trace[16];
	struct qp_buf *m = &d->s[1];
	unsigned char b[8];
	int i;

	if (!id)
		return 0;
	for (i = 7; i >= 0; i--, id >>= 8)
		b[i] = (unsigned char)(id & 0xff);
	qp_pb_bytes(m, 1, no_trace, sizeof(no_trace));
	qp_pb_bytes(m, 2, b, sizeof(b));
	return dput(d, T_LINK, m);
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v;
	h *= 0x100000001b3ull;
	return h ^ (h >> 31);
}

/* One Profile of resource R into B; false when it has no sample. */
static bool profile(struct dict *d, const struct qp_otlp_resource *r, const struct qp_otlp_profile *op,
		    size_t serial, struct qp_buf *b)
{
	const struct qp_cpu_profile *p = op->p;
	struct qp_buf sm, vt, packed;
	uint64_t *maps = calloc(p->nmappings + 1, sizeof(*maps)), *locs = NULL;
	uint64_t id[2];
	size_t i, j, nsamples = 0, maxf = 1;
	bool any = false;

	for (i = 0; i < p->nsamples; i++)
		maxf = p->samples[i].nframes > maxf ? p->samples[i].nframes : maxf;
	locs = malloc(maxf * sizeof(*locs));
	if (!maps || !locs) {
		free(maps);
		free(locs);
		d->failed = true;
		return false;
	}
	qp_buf_init(&sm);
	qp_buf_init(&vt);
	qp_buf_init(&packed);
	for (i = 0; i < p->nsamples; i++) {
		const struct qp_cpu_sample *s = &p->samples[i];
		int64_t v = p->nvalues ? (op->value < p->nvalues ? s->values[op->value] : 0)
				       : (int64_t)(s->count * (op->weight ? op->weight : 1));
		uint64_t a[5], link;
		size_t na = 0;

		if (!s->count || !v || (r->pid && s->pid != r->pid))
			continue;
		put_uint(&sm, 1, stack(d, p, s, maps, locs));
		if (s->tid) {
			a[na++] = attr(d, "thread.name", s->comm, 0);
			a[na++] = attr(d, "thread.id", NULL, s->tid);
		}
		if (s->nscopes) {
			a[na++] = attr(d, "qprof.scope", s->scopes[0], 0);
			a[na++] = attr_strings(d, "qprof.scopes", s->scopes, s->nscopes);
		}
		link = s->span && !s->span_no_id ? link_of(d, s->span_id) : 0;
		if (s->span)
			a[na++] = attr(d, "qprof.span", s->span, 0);
		for (j = 0; j < na; j++)
			qp_pb_varint(&packed, a[j]);
		if (packed.len)
			qp_pb_bytes(&sm, 2, packed.data, packed.len);
		packed.len = 0;
		put_uint(&sm, 3, link);
		qp_pb_varint(&packed, (uint64_t)v);
		qp_pb_bytes(&sm, 4, packed.data, packed.len);
		packed.len = 0;
		qp_pb_msg(b, 2, &sm);
		nsamples++;
		any = true;
	}
	if (any) {
		put_uint(&vt, 1, (uint64_t)dstr(d, op->type));
		put_uint(&vt, 2, (uint64_t)dstr(d, op->unit));
		qp_pb_msg(b, 1, &vt);
		qp_pb_fixed64(b, 3, p->time_ns);
		put_uint(b, 4, p->duration_ns);
		put_uint(&vt, 1, (uint64_t)dstr(d, op->period_type));
		put_uint(&vt, 2, (uint64_t)dstr(d, op->period_unit));
		qp_pb_msg(b, 5, &vt);
		put_uint(b, 6, (uint64_t)op->period);
		/* an id that is never all zeroes: of time, process, type, place */
		id[0] = mix(mix(mix(0xcbf29ce484222325ull, p->time_ns), r->pid), serial) | 1;
		id[1] = mix(mix(id[0], qp_hash_bytes(op->type, strlen(op->type))), nsamples) | 1;
		qp_pb_bytes(b, 7, id, sizeof(id));
	}
	if (sm.failed || vt.failed || packed.failed || b->failed)
		d->failed = true;
	qp_buf_free(&sm);
	qp_buf_free(&vt);
	qp_buf_free(&packed);
	free(maps);
	free(locs);
	return any;
}

int qp_export_otlp(const struct qp_otlp_resource *r, size_t n, const char *scope_version,
		   struct qp_buf *out)
{
	static const unsigned char zero_link[] = { 0x0a, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
						   0x12, 8, 0, 0, 0, 0, 0, 0, 0, 0 };
	struct dict d;
	struct qp_buf rp, sp, res, kv, any, prof, dict;
	size_t i, j, k;
	int t, ret = 0;

	memset(&d, 0, sizeof(d));
	qp_htab_init(&d.str, 0);
	for (t = 0; t < T__N; t++) {
		qp_htab_init(&d.tab[t], 0);
		qp_buf_init(&d.out[t]);
	}
	for (k = 0; k < 4; k++)
		qp_buf_init(&d.s[k]);
	qp_buf_init(&rp);
	qp_buf_init(&sp);
	qp_buf_init(&res);
	qp_buf_init(&kv);
	qp_buf_init(&any);
	qp_buf_init(&prof);
	qp_buf_init(&dict);
	dstr(&d, "");
	for (i = 0; i < n; i++) {
		bool some = false;

		for (j = 0; j < r[i].nattrs; j++) {	/* Resource.attributes: KeyValue */
			qp_pb_bytes(&kv, 1, r[i].attrs[j].key, strlen(r[i].attrs[j].key));
			any_value(&any, r[i].attrs[j].str, r[i].attrs[j].num);
			qp_pb_msg(&kv, 2, &any);
			qp_pb_msg(&res, 1, &kv);
		}
		qp_pb_msg(&rp, 1, &res);
		qp_pb_bytes(&kv, 1, "qprof", 5);	/* InstrumentationScope */
		if (scope_version)
			qp_pb_bytes(&kv, 2, scope_version, strlen(scope_version));
		qp_pb_msg(&sp, 1, &kv);
		for (j = 0; j < r[i].nprofiles; j++) {
			if (profile(&d, &r[i], &r[i].profiles[j], i * 64 + j, &prof)) {
				qp_pb_msg(&sp, 2, &prof);
				some = true;
			}
			prof.len = 0;
		}
		if (some) {
			qp_pb_msg(&rp, 2, &sp);
			qp_pb_msg(out, 1, &rp);
		}
		rp.len = 0;
		sp.len = 0;
	}
	/* the dictionary: each table's zero element, then its entries */
	for (t = T_MAPPING; t < T__N; t++) {
		struct qp_buf *tb = &dict;

		if (t == T_LINK) {
			qp_pb_bytes(tb, T_LINK, zero_link, sizeof(zero_link));
			qp_buf_add(tb, d.out[t].data ? d.out[t].data : "", d.out[t].len);
			tb->failed |= d.out[t].failed;
		} else if (t == T_STRING) {
			for (k = 0; k < d.str.n; k++) {
				size_t len;
				const char *s = qp_htab_key(&d.str, k, &len);

				qp_pb_bytes(tb, T_STRING, s, len);
			}
		} else {
			qp_pb_bytes(tb, t, "", 0);
			qp_buf_add(tb, d.out[t].data ? d.out[t].data : "", d.out[t].len);
			tb->failed |= d.out[t].failed;
		}
	}
	qp_pb_msg(out, 2, &dict);
	if (d.failed || out->failed || rp.failed || sp.failed || res.failed || kv.failed || any.failed)
		ret = -ENOMEM;
	for (t = 0; t < T__N; t++) {
		qp_htab_free(&d.tab[t]);
		qp_buf_free(&d.out[t]);
	}
	for (k = 0; k < 4; k++)
		qp_buf_free(&d.s[k]);
	qp_htab_free(&d.str);
	qp_buf_free(&rp);
	qp_buf_free(&sp);
	qp_buf_free(&res);
	qp_buf_free(&kv);
	qp_buf_free(&any);
	qp_buf_free(&prof);
	qp_buf_free(&dict);
	return ret;
}
