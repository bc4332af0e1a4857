/* test_export_lines.c - source lines and inlined frames in the exporters,
 * on a hand-made profile: burn() at app.c:20 with mix() (mix.h:5) inlined
 * into it and step() (mix.h:3) inlined into mix, all at one address, and a
 * library frame with no line. Asserted: qp_cpu_profile_main_first puts the
 * executable's mapping first and renumbers the frames; folded text byte for
 * byte ("_[i]" on inlined frames); the flame graph labels; pprof decoded
 * here: one Location for the address with its three Lines innermost first
 * (function and line each), Function.filename the source file ("" when
 * unknown), the mapping flags has_filenames/has_line_numbers/
 * has_inline_frames set on the executable only. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "export/export.h"
#include "testlib.h"

static struct qp_cpu_frame FR(const char *name, const char *module, uint64_t addr, uint32_t map,
			     const char *file, uint32_t line, bool inlined)
{
	return (struct qp_cpu_frame){ .name = name, .module = module, .addr = addr, .mapping = map,
				      .file = file, .line = line, .inlined = inlined };
}

static void fixture(struct qp_cpu_profile *p)
{
	static struct qp_cpu_frame a[4], b[2];
	static struct qp_cpu_sample s[2];
	static struct qp_cpu_mapping m[2];

	memset(p, 0, sizeof(*p));
	p->arena = qp_arena_new();
	p->period_ns = 1000000;
	m[0] = (struct qp_cpu_mapping){ 0x7f0000000000, 0x7f0000100000, 0, "/usr/lib/libfoo.so", "" };
	m[1] = (struct qp_cpu_mapping){ 0x555500000000, 0x555500100000, 0, "/usr/bin/app",
					"00112233445566778899aabbccddeeff00112233" };
	/* before main_first: libfoo is mapping 1, app mapping 2 */
	a[0] = FR("main", "app", 0x555500001000, 2, "/src/app.c", 10, false);
	a[1] = FR("burn", "app", 0x555500002000, 2, "/src/app.c", 20, false);
	a[2] = FR("mix", "app", 0x555500002000, 2, "/src/mix.h", 5, true);
	a[3] = FR("step", "app", 0x555500002000, 2, "/src/mix.h", 3, true);
	b[0] = a[0];
	b[1] = FR("lib_fn", "libfoo.so", 0x7f0000000100, 1, NULL, 0, false);
	s[0] = (struct qp_cpu_sample){ .pid = 7, .comm = "app", .count = 7, .nframes = 4, .frames = a };
	s[1] = (struct qp_cpu_sample){ .pid = 7, .comm = "app", .count = 3, .nframes = 2, .frames = b };
	p->samples = s;
	p->nsamples = 2;
	p->mappings = m;
	p->nmappings = 2;
}

/* ---- a protobuf reader for what is asserted ---- */

struct rd {
	const unsigned char *p, *end;
};

static uint64_t varint(struct rd *r)
{
	uint64_t v = 0;
	int sh = 0;

	while (r->p < r->end && sh < 64) {
		unsigned char c = *r->p++;

		v |= (uint64_t)(c & 0x7f) << sh;
		if (!(c & 0x80))
			return v;
		sh += 7;
	}
	return v;
}

static bool field(struct rd *r, int *f, uint64_t *v, struct rd *sub)
{
	uint64_t key;

	if (r->p >= r->end)
		return false;
	key = varint(r);
	*f = (int)(key >> 3);
	if ((key & 7) == 0) {
		*v = varint(r);
		sub->p = sub->end = NULL;
	} else if ((key & 7) == 2) {
		uint64_t n = varint(r);

		if (n > (uint64_t)(r->end - r->p))
			return false;
		sub->p = r->p;
		sub->end = r->p + n;
		r->p += n;
	} else {
		return false;
	}
	return true;
}

#define MAXE 32
struct prof {
	char *str[MAXE];
	size_t nstr, nloc, nfn, nmap;
	struct { uint64_t addr, map, nlines, fn[4], line[4]; } loc[MAXE];
	struct { uint64_t id, name, file; } fn[MAXE];
	struct { uint64_t file, flags[3]; } map[MAXE];
};

static void decode(const unsigned char *d, size_t n, struct prof *pr)
{
	struct rd r = { d, d + n }, s, s2, s3;
	int f, f2, f3;
	uint64_t v, v2, v3;

	memset(pr, 0, sizeof(*pr));
	while (field(&r, &f, &v, &s)) {
		if (f == 6 && pr->nstr < MAXE) {
			pr->str[pr->nstr++] = strndup((const char *)s.p, (size_t)(s.end - s.p));
		} else if (f == 4 && pr->nloc < MAXE) {
			__typeof__(pr->loc[0]) *l = &pr->loc[pr->nloc++];

			while (field(&s, &f2, &v2, &s2)) {
				if (f2 == 2)
					l->map = v2;
				else if (f2 == 3)
					l->addr = v2;
				else if (f2 == 4 && l->nlines < 4) {
					while (field(&s2, &f3, &v3, &s3)) {
						if (f3 == 1)
							l->fn[l->nlines] = v3;
						else if (f3 == 2)
							l->line[l->nlines] = v3;
					}
					l->nlines++;
				}
			}
		} else if (f == 5 && pr->nfn < MAXE) {
			__typeof__(pr->fn[0]) *x = &pr->fn[pr->nfn++];

			while (field(&s, &f2, &v2, &s2)) {
				if (f2 == 1)
					x->id = v2;
				else if (f2 == 2)
					x->name = v2;
				else if (f2 == 4)
					x->file = v2;
			}
		} else if (f == 3 && pr->nmap < MAXE) {
			__typeof__(pr->map[0]) *x = &pr->map[pr->nmap++];

			while (field(&s, &f2, &v2, &s2)) {
				if (f2 == 5)
					x->file = v2;
				else if (f2 >= 8 && f2 <= 10)
					x->flags[f2 - 8] = v2;
			}
		}
	}
}

static const char *S(const struct prof *pr, uint64_t i) { return i < pr->nstr ? pr->str[i] : "?"; }

static const char *fn_name(const struct prof *pr, uint64_t id)
{
	for (size_t i = 0; i < pr->nfn; i++)
		if (pr->fn[i].id == id)
			return S(pr, pr->fn[i].name);
	return "?";
}

static const char *fn_file(const struct prof *pr, const char *name)
{
	for (size_t i = 0; i < pr->nfn; i++)
		if (!strcmp(S(pr, pr->fn[i].name), name))
			return S(pr, pr->fn[i].file);
	return "?";
}

int main(void)
{
	struct qp_cpu_profile p;
	struct qp_buf b;
	struct prof pr;
	unsigned char *raw = malloc(1 << 20);
	uLongf rawlen = 1 << 20;
	z_stream z = { 0 };
	size_t i;

	fixture(&p);
	qp_cpu_profile_main_first(&p, "/usr/bin/app");
	CHECK_STR(p.mappings[0].file, "/usr/bin/app");
	CHECK_STR(p.mappings[1].file, "/usr/lib/libfoo.so");
	CHECK_INT(p.samples[0].frames[0].mapping, 1);
	CHECK_INT(p.samples[0].frames[3].mapping, 1);
	CHECK_INT(p.samples[1].frames[1].mapping, 2);
	qp_cpu_profile_main_first(&p, "/not/mapped");	/* no change */
	CHECK_STR(p.mappings[0].file, "/usr/bin/app");

	qp_buf_init(&b);
	CHECK_INT(qp_export_folded(&p, &b), 0);
	CHECK_STR(b.data, "app;main;burn;mix_[i];step_[i] 7\napp;main;lib_fn 3\n");
	qp_buf_free(&b);

	qp_buf_init(&b);
	CHECK_INT(qp_export_flamegraph(&p, NULL, &b), 0);
	CHECK(b.data && strstr(b.data, "<title>mix_[i] (7 samples, 70.00%)</title>"));
	CHECK(b.data && strstr(b.data, "<title>burn (7 samples, 70.00%)</title>"));
	qp_buf_free(&b);

	qp_buf_init(&b);
	CHECK_INT(qp_export_pprof(&p, &b), 0);
	CHECK(inflateInit2(&z, 16 + MAX_WBITS) == Z_OK);
	z.next_in = (Bytef *)b.data;
	z.avail_in = (uInt)b.len;
	z.next_out = raw;
	z.avail_out = (uInt)rawlen;
	CHECK(inflate(&z, Z_FINISH) == Z_STREAM_END);
	rawlen = rawlen - z.avail_out;
	inflateEnd(&z);
	decode(raw, rawlen, &pr);
	CHECK_INT(pr.nloc, 3);	/* main, burn+mix+step, lib_fn */
	CHECK_INT(pr.nfn, 5);
	for (i = 0; i < pr.nloc; i++) {
		if (pr.loc[i].addr != 0x555500002000)
			continue;
		CHECK_INT(pr.loc[i].map, 1);
		CHECK_INT(pr.loc[i].nlines, 3);
		CHECK_STR(fn_name(&pr, pr.loc[i].fn[0]), "step");
		CHECK_INT(pr.loc[i].line[0], 3);
		CHECK_STR(fn_name(&pr, pr.loc[i].fn[1]), "mix");
		CHECK_INT(pr.loc[i].line[1], 5);
		CHECK_STR(fn_name(&pr, pr.loc[i].fn[2]), "burn");
		CHECK_INT(pr.loc[i].line[2], 20);
	}
	for (i = 0; i < pr.nloc; i++)
		if (pr.loc[i].addr == 0x555500001000)
			CHECK(pr.loc[i].nlines == 1 && pr.loc[i].line[0] == 10);
	CHECK_STR(fn_file(&pr, "mix"), "/src/mix.h");
	CHECK_STR(fn_file(&pr, "burn"), "/src/app.c");
	CHECK_STR(fn_file(&pr, "lib_fn"), "");
	CHECK_INT(pr.nmap, 2);
	CHECK_STR(S(&pr, pr.map[0].file), "/usr/bin/app");
	CHECK(pr.map[0].flags[0] == 1 && pr.map[0].flags[1] == 1 && pr.map[0].flags[2] == 1);
	CHECK(pr.map[1].flags[0] == 0 && pr.map[1].flags[1] == 0 && pr.map[1].flags[2] == 0);
	for (i = 0; i < pr.nstr; i++)
		free(pr.str[i]);
	qp_buf_free(&b);
	free(raw);
	qp_arena_free(p.arena);
	return test_done("export_lines");
}
