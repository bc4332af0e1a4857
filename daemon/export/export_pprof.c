/* export_pprof.c - the profile as a gzipped perftools.profiles.Profile
 * (github.com/google/pprof/proto/profile.proto), encoded by hand: varints,
 * length-delimited submessages built in a scratch buffer, packed repeated
 * scalars. See export.h for what goes where. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "export.h"

/* Profile field numbers. */
enum {
	P_SAMPLE_TYPE = 1, P_SAMPLE = 2, P_MAPPING = 3, P_LOCATION = 4, P_FUNCTION = 5,
	P_STRING_TABLE = 6, P_TIME_NANOS = 9, P_DURATION_NANOS = 10, P_PERIOD_TYPE = 11,
	P_PERIOD = 12, P_COMMENT = 13,
};

/* A hash table of 1-based ids whose keys are three integers. */
struct tab {
	uint64_t (*key)[3];
	size_t n, capkey;
	uint32_t *slot;
	size_t capslot;	/* power of two */
};

/* Interned strings. */
struct strs {
	const char **s;
	size_t n, cap;
	uint32_t *slot;	/* 1-based index + 1 into s */
	size_t capslot;
};

struct enc {
	struct strs str;
	struct tab fn;	/* (name, module, 0) string indexes */
	struct tab loc;	/* (mapping id, address, function id) */
};

static uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

static uint64_t hash3(const uint64_t k[3]) { return mix(k[0] ^ mix(k[1] ^ mix(k[2]))); }

static uint64_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

/* The id of key, inserted when new; 0 on OOM. */
static uint32_t tab_get(struct tab *t, uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t k[3] = { a, b, c };
	size_t i, j;

	if ((t->n + 1) * 2 > t->capslot) {
		size_t cap = t->capslot ? t->capslot * 2 : 256;
		uint32_t *s = calloc(cap, sizeof(*s));

		if (!s)
			return 0;
		for (i = 0; i < t->capslot; i++) {
			if (!t->slot[i])
				continue;
			for (j = hash3(t->key[t->slot[i] - 1]) & (cap - 1); s[j]; j = (j + 1) & (cap - 1))
				;
			s[j] = t->slot[i];
		}
		free(t->slot);
		t->slot = s;
		t->capslot = cap;
	}
	for (j = hash3(k) & (t->capslot - 1); t->slot[j]; j = (j + 1) & (t->capslot - 1))
		if (!memcmp(t->key[t->slot[j] - 1], k, sizeof(k)))
			return t->slot[j];
	if (t->n == t->capkey) {
		size_t cap = t->capkey ? t->capkey * 2 : 256;
		void *nk = realloc(t->key, cap * sizeof(*t->key));

		if (!nk)
			return 0;
		t->key = nk;
		t->capkey = cap;
	}
	memcpy(t->key[t->n], k, sizeof(k));
	t->slot[j] = (uint32_t)++t->n;
	return t->slot[j];
}

/* The string table index of s (NULL is ""); -1 on OOM. */
static int64_t str_get(struct strs *t, const char *s)
{
	size_t i, j;

	if (!s)
		s = "";
	if ((t->n + 1) * 2 > t->capslot) {
		size_t cap = t->capslot ? t->capslot * 2 : 256;
		uint32_t *sl = calloc(cap, sizeof(*sl));

		if (!sl)
			return -1;
		for (i = 0; i < t->capslot; i++) {
			if (!t->slot[i])
				continue;
			for (j = hash_str(t->s[t->slot[i] - 1]) & (cap - 1); sl[j]; j = (j + 1) & (cap - 1))
				;
			sl[j] = t->slot[i];
		}
		free(t->slot);
		t->slot = sl;
		t->capslot = cap;
	}
	for (j = hash_str(s) & (t->capslot - 1); t->slot[j]; j = (j + 1) & (t->capslot - 1))
		if (!strcmp(t->s[t->slot[j] - 1], s))
			return t->slot[j] - 1;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		void *ns = realloc(t->s, cap * sizeof(*t->s));

		if (!ns)
			return -1;
		t->s = ns;
		t->cap = cap;
	}
	t->s[t->n] = s;
	t->slot[j] = (uint32_t)++t->n;
	return t->slot[j] - 1;
}

/* ---- protobuf wire format ---- */

static void put_varint(struct qp_buf *b, uint64_t v)
{
	unsigned char x[10];
	size_t n = 0;

	do {
		x[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	qp_buf_add(b, x, n);
}

/* A varint field; proto3 leaves zeros out. */
static void put_uint(struct qp_buf *b, int field, uint64_t v)
{
	if (!v)
		return;
	put_varint(b, (uint64_t)field << 3);
	put_varint(b, v);
}

static void put_bytes(struct qp_buf *b, int field, const void *p, size_t n)
{
	put_varint(b, (uint64_t)field << 3 | 2);
	put_varint(b, n);
	qp_buf_add(b, p, n);
}

/* Append the scratch buffer as submessage `field` and empty it. */
static void put_msg(struct qp_buf *b, int field, struct qp_buf *m)
{
	put_bytes(b, field, m->data, m->len);
	b->failed |= m->failed;
	m->len = 0;
}

static void put_value_type(struct qp_buf *b, int field, struct qp_buf *m, int64_t type, int64_t unit)
{
	put_uint(m, 1, (uint64_t)type);
	put_uint(m, 2, (uint64_t)unit);
	put_msg(b, field, m);
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

#define CHECK_IDX(x)                                                                               \
	do {                                                                                       \
		if ((x) < 0) {                                                                     \
			ret = -ENOMEM;                                                             \
			goto out;                                                                  \
		}                                                                                  \
	} while (0)

int qp_export_pprof(const struct qp_cpu_profile *p, struct qp_buf *out)
{
	struct enc e = { 0 };
	struct qp_buf raw, m, line, ids, vals;
	int64_t s_samples, s_count, s_cpu, s_ns, s_pid, s_comm, s_kmap, s_title = 0;
	uint64_t kmin = UINT64_MAX, kmax = 0;
	uint32_t kmap = 0, *locs = NULL;
	size_t i, j, nlocs = 0, k;
	int ret = 0;

	qp_buf_init(&raw);
	qp_buf_init(&m);
	qp_buf_init(&line);
	qp_buf_init(&ids);
	qp_buf_init(&vals);
	/* Pass 1: strings, functions and locations, each sample's location ids. */
	CHECK_IDX(str_get(&e.str, ""));
	CHECK_IDX(s_samples = str_get(&e.str, "samples"));
	CHECK_IDX(s_count = str_get(&e.str, "count"));
	CHECK_IDX(s_cpu = str_get(&e.str, "cpu"));
	CHECK_IDX(s_ns = str_get(&e.str, "nanoseconds"));
	CHECK_IDX(s_pid = str_get(&e.str, "pid"));
	CHECK_IDX(s_comm = str_get(&e.str, "comm"));
	CHECK_IDX(s_kmap = str_get(&e.str, "[kernel.kallsyms]"));
	if (p->title)
		CHECK_IDX(s_title = str_get(&e.str, p->title));
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
	if (!locs) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0, k = 0; i < p->nsamples; i++) {
		const struct qp_cpu_sample *s = &p->samples[i];

		if (!s->count)
			continue;
		CHECK_IDX(str_get(&e.str, s->comm));
		for (j = 0; j < s->nframes; j++) {
			const struct qp_cpu_frame *f = &s->frames[j];
			int64_t name = str_get(&e.str, f->name && *f->name ? f->name : "[unknown]");
			int64_t mod = str_get(&e.str, f->module);
			uint64_t map = f->mapping && f->mapping <= p->nmappings ? f->mapping
									: f->kernel ? kmap : 0;
			uint32_t fid;

			CHECK_IDX(name);
			CHECK_IDX(mod);
			fid = tab_get(&e.fn, (uint64_t)name, (uint64_t)mod, 0);
			if (!fid || !(locs[k++] = tab_get(&e.loc, map, f->addr, fid))) {
				ret = -ENOMEM;
				goto out;
			}
		}
	}
	for (i = 0; i < p->nmappings; i++) {
		CHECK_IDX(str_get(&e.str, p->mappings[i].file));
		CHECK_IDX(str_get(&e.str, p->mappings[i].build_id));
	}

	/* Pass 2: the message, in field order. */
	put_value_type(&raw, P_SAMPLE_TYPE, &m, s_samples, s_count);
	put_value_type(&raw, P_SAMPLE_TYPE, &m, s_cpu, s_ns);
	for (i = 0, k = 0; i < p->nsamples; i++) {
		const struct qp_cpu_sample *s = &p->samples[i];

		if (!s->count) /* skipped as in the other exporters */
			continue;
		ids.len = 0;
		for (j = s->nframes; j-- > 0;) /* leaf first */
			put_varint(&ids, locs[k + j]);
		k += s->nframes;
		if (ids.len)
			put_bytes(&m, 1, ids.data, ids.len);
		vals.len = 0;
		put_varint(&vals, s->count);
		put_varint(&vals, s->count * p->period_ns);
		put_bytes(&m, 2, vals.data, vals.len);
		put_uint(&line, 1, (uint64_t)s_pid); /* label pid = num */
		put_uint(&line, 3, s->pid);
		put_msg(&m, 3, &line);
		put_uint(&line, 1, (uint64_t)s_comm); /* label comm = str */
		put_uint(&line, 2, (uint64_t)str_get(&e.str, s->comm));
		put_msg(&m, 3, &line);
		put_msg(&raw, P_SAMPLE, &m);
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
		put_msg(&raw, P_MAPPING, &m);
	}
	if (kmap) {
		put_uint(&m, 1, kmap);
		put_uint(&m, 2, kmin);
		put_uint(&m, 3, kmax + 1);
		put_uint(&m, 5, (uint64_t)s_kmap);
		put_uint(&m, 7, 1);
		put_msg(&raw, P_MAPPING, &m);
	}
	for (i = 0; i < e.loc.n; i++) {
		put_uint(&m, 1, i + 1);
		put_uint(&m, 2, e.loc.key[i][0]);
		put_uint(&m, 3, e.loc.key[i][1]);
		put_uint(&line, 1, e.loc.key[i][2]); /* Line.function_id */
		put_msg(&m, 4, &line);
		put_msg(&raw, P_LOCATION, &m);
	}
	for (i = 0; i < e.fn.n; i++) {
		put_uint(&m, 1, i + 1);
		put_uint(&m, 2, e.fn.key[i][0]);
		put_uint(&m, 3, e.fn.key[i][0]);
		put_uint(&m, 4, e.fn.key[i][1]); /* filename: the module */
		put_msg(&raw, P_FUNCTION, &m);
	}
	for (i = 0; i < e.str.n; i++)
		put_bytes(&raw, P_STRING_TABLE, e.str.s[i], strlen(e.str.s[i]));
	put_uint(&raw, P_TIME_NANOS, p->time_ns);
	put_uint(&raw, P_DURATION_NANOS, p->duration_ns);
	put_value_type(&raw, P_PERIOD_TYPE, &m, s_cpu, s_ns);
	put_uint(&raw, P_PERIOD, p->period_ns);
	if (s_title) {
		put_varint(&raw, (uint64_t)P_COMMENT << 3);
		put_varint(&raw, (uint64_t)s_title);
	}
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
	free(locs);
	free(e.str.s);
	free(e.str.slot);
	free(e.fn.key);
	free(e.fn.slot);
	free(e.loc.key);
	free(e.loc.slot);
	return ret;
}
