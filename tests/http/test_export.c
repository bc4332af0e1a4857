/* test_export.c - the exporters on a hand-made profile (see fixture()):
 * folded text byte for byte, the flame graph checked by
 * export/test_export_svg.py (XML, frames, widths), the call graph DOT text and
 * the dot runner (with fake dot scripts for the error paths), pprof gunzipped
 * and decoded back here, then read by `go tool pprof -top` when go exists.
 * usage: test_export folded|flamegraph|callgraph|pprof */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include "export/export.h"
#include "http/render_dot.h"
#include "testlib.h"

#define PERIOD 10101010ull /* 99 Hz */
#define STD_NAME "std::vector<int>::push_back(int const&) \"q\" 'a'"
#define BAD_NAME "bad\xff\xfe\x01name" /* invalid UTF-8 and a control */

static struct qp_cpu_frame F(const char *name, const char *module, uint64_t addr, uint32_t mapping,
			    bool kernel)
{
	return (struct qp_cpu_frame){ .name = name, .module = module, .addr = addr, .mapping = mapping,
				      .kernel = kernel };
}

static void add_sample(struct qp_cpu_profile *p, uint32_t pid, const char *comm, uint64_t count,
		       size_t n, const struct qp_cpu_frame *frames)
{
	struct qp_cpu_sample *s = &p->samples[p->nsamples++];
	size_t i;

	s->pid = pid;
	s->comm = qp_arena_strdup(p->arena, comm);
	s->count = count;
	s->nframes = n;
	s->frames = qp_arena_alloc(p->arena, (n ? n : 1) * sizeof(*s->frames));
	for (i = 0; i < n; i++) {
		s->frames[i] = frames[i];
		s->frames[i].name = frames[i].name ? qp_arena_strdup(p->arena, frames[i].name) : NULL;
		s->frames[i].module = qp_arena_strdup(p->arena, frames[i].module);
	}
}

static void init_profile(struct qp_cpu_profile *p, size_t max_samples)
{
	memset(p, 0, sizeof(*p));
	p->arena = qp_arena_new();
	p->samples = qp_arena_alloc(p->arena, max_samples * sizeof(*p->samples));
	p->period_ns = PERIOD;
	p->duration_ns = 2000000000ull;
	p->time_ns = 1700000000000000000ull;
	p->title = qp_arena_strdup(p->arena, "qprof: pid 100 (strategy), 2 s");
}

/* 105 samples: strategy (pid 100) 95, "md;feed" (pid 200) 10. */
static void fixture(struct qp_cpu_profile *p)
{
	const struct qp_cpu_frame main_ = F("main", "strategy", 0x401000, 1, false),
				  run = F("run", "strategy", 0x401100, 1, false),
				  calc = F("calc_ma", "strategy", 0x401200, 1, false),
				  send = F("send_order", "strategy", 0x401300, 1, false),
				  memcpy_ = F("memcpy", "libc.so.6", 0x7f0000030000, 2, false),
				  entry = F("entry_SYSCALL_64", "[kernel]", 0xffffffff81000000, 0, true),
				  sysw = F("__x64_sys_write", "[kernel]", 0xffffffff81100000, 0, true),
				  odd = F("odd;name\nx", "feed", 0x7f0000100000, 2, false),
				  stdn = F(STD_NAME, "strategy", 0x401400, 1, false),
				  bad = F(BAD_NAME, "strategy", 0x401500, 1, false);

	init_profile(p, 16);
	p->nmappings = 2;
	p->mappings = qp_arena_alloc(p->arena, 2 * sizeof(*p->mappings));
	p->mappings[0] = (struct qp_cpu_mapping){ 0x400000, 0x500000, 0, "/usr/bin/strategy",
						  "0123456789abcdef0123456789abcdef01234567" };
	p->mappings[1] = (struct qp_cpu_mapping){ 0x7f0000000000, 0x7f0000200000, 0x28000,
						  "/lib/x86_64-linux-gnu/libc.so.6", "" };
	add_sample(p, 100, "strategy", 50, 3, (struct qp_cpu_frame[]){ main_, run, calc });
	add_sample(p, 100, "strategy", 20, 4, (struct qp_cpu_frame[]){ main_, run, send, memcpy_ });
	add_sample(p, 100, "strategy", 10, 5,
		   (struct qp_cpu_frame[]){ main_, run, send, entry, sysw });
	add_sample(p, 100, "strategy", 5, 3, (struct qp_cpu_frame[]){ main_, run, calc });
	add_sample(p, 100, "strategy", 5, 1, (struct qp_cpu_frame[]){ main_ });
	add_sample(p, 200, "md;feed", 10, 1, (struct qp_cpu_frame[]){ odd });
	add_sample(p, 100, "strategy", 0, 2, (struct qp_cpu_frame[]){ main_, run });
	add_sample(p, 100, "strategy", 4, 2, (struct qp_cpu_frame[]){ main_, stdn });
	add_sample(p, 100, "strategy", 1, 2, (struct qp_cpu_frame[]){ main_, bad });
}

/* ---------------------------------------------------------------- folded */

static void test_folded(void)
{
	struct qp_cpu_profile p;
	struct qp_buf b;

	fixture(&p);
	qp_buf_init(&b);
	CHECK_INT(qp_export_folded(&p, &b), 0);
	CHECK_STR(b.data, "md:feed;odd:name x 10\n"
			  "strategy;main 5\n"
			  "strategy;main;" BAD_NAME " 1\n"
			  "strategy;main;run;calc_ma 55\n"
			  "strategy;main;run;send_order;entry_SYSCALL_64_[k];__x64_sys_write_[k] 10\n"
			  "strategy;main;run;send_order;memcpy 20\n"
			  "strategy;main;" STD_NAME " 4\n");
	qp_buf_free(&b);
	qp_cpu_profile_free(&p);

	/* empty profile: empty text; NULL / empty names: [unknown] */
	init_profile(&p, 4);
	qp_buf_init(&b);
	CHECK_INT(qp_export_folded(&p, &b), 0);
	CHECK_INT(b.len, 0);
	add_sample(&p, 1, "", 3, 2,
		   (struct qp_cpu_frame[]){ F(NULL, "x", 1, 0, false), F("", "x", 2, 0, false) });
	CHECK_INT(qp_export_folded(&p, &b), 0);
	CHECK_STR(b.data, "[unknown];[unknown];[unknown] 3\n");
	qp_buf_free(&b);
	qp_cpu_profile_free(&p);
}

/* ------------------------------------------------------------ flamegraph */

static int run_svg_check(const char *svg, size_t len, const char *expect, int width)
{
	char svgpath[] = "/tmp/qp_export_XXXXXX.svg", tsvpath[] = "/tmp/qp_export_XXXXXX.tsv";
	char cmd[512];
	int fd1 = mkstemps(svgpath, 4), fd2 = mkstemps(tsvpath, 4), rc;

	if (fd1 < 0 || fd2 < 0 || write(fd1, svg, len) != (ssize_t)len ||
	    write(fd2, expect, strlen(expect)) != (ssize_t)strlen(expect))
		return -1;
	close(fd1);
	close(fd2);
	snprintf(cmd, sizeof(cmd), "python3 '%s' '%s' '%s' %d", TEST_EXPORT_SVG_PY, svgpath,
		 tsvpath, width);
	rc = system(cmd);
	unlink(svgpath);
	unlink(tsvpath);
	return rc;
}

static void test_flamegraph(void)
{
	static const char expect[] = "all\t105\t0\n"
				     "strategy\t95\t1\n"
				     "md;feed\t10\t1\n"
				     "odd;name x\t10\t2\n"
				     "main\t95\t2\n"
				     "run\t85\t3\n"
				     "calc_ma\t55\t4\n"
				     "send_order\t30\t4\n"
				     "memcpy\t20\t5\n"
				     "entry_SYSCALL_64_[k]\t10\t5\n"
				     "__x64_sys_write_[k]\t10\t6\n" STD_NAME "\t4\t3\n"
				     "bad\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDname\t1\t3\n";
	struct qp_flame_opts o = { .title = "t <&> \"'", .width = 1000 };
	struct qp_cpu_profile p;
	struct qp_buf b;
	bool py = system("python3 -c 'import xml.etree.ElementTree' 2>/dev/null") == 0;

	fixture(&p);
	qp_buf_init(&b);
	CHECK_INT(qp_export_flamegraph(&p, &o, &b), 0);
	CHECK(strstr(b.data, "<title>main (95 samples, 90.48%)</title>") != NULL);
	CHECK(strstr(b.data, "std::vector&lt;int&gt;::push_back(int const&amp;) &quot;q&quot; "
			     "&apos;a&apos; (4 samples, 3.81%)") != NULL);
	CHECK(strstr(b.data, "t &lt;&amp;&gt; &quot;&apos;</text>") != NULL);
	CHECK(strstr(b.data, "105 samples in 2.00 s") != NULL);
	/* calc_ma: 55/105 of 980 px starting at main + bad (1 sample) + run's x */
	CHECK(strstr(b.data, "width=\"513.33\"") != NULL);
	CHECK(strstr(b.data, "<script") && strstr(b.data, "function zoom("));
	if (py)
		CHECK_INT(run_svg_check(b.data, b.len, expect, 1000), 0);
	else
		printf("python3 missing: SVG structure not parsed\n");

	/* colour by module, default width: same frames */
	qp_buf_free(&b);
	o = (struct qp_flame_opts){ .color_by_module = true };
	CHECK_INT(qp_export_flamegraph(&p, &o, &b), 0);
	CHECK(strstr(b.data, "qprof: pid 100 (strategy), 2 s") != NULL);
	if (py)
		CHECK_INT(run_svg_check(b.data, b.len, expect, 1200), 0);
	qp_buf_free(&b);
	CHECK_INT(qp_export_flamegraph(&p, NULL, &b), 0);
	qp_buf_free(&b);
	qp_cpu_profile_free(&p);

	/* empty: a valid SVG saying "no samples" */
	init_profile(&p, 1);
	o = (struct qp_flame_opts){ .title = "scope foo: unknown scope", .subtitle = "" };
	CHECK_INT(qp_export_flamegraph(&p, &o, &b), 0);
	CHECK(strstr(b.data, "no samples") != NULL);
	CHECK(strstr(b.data, "scope foo: unknown scope") != NULL);
	if (py)
		CHECK_INT(run_svg_check(b.data, b.len, "", 1200), 0);
	qp_buf_free(&b);
	qp_cpu_profile_free(&p);

	/* a deep stack (no recursion limit) and a tiny frame (left out) */
	init_profile(&p, 2);
	{
		size_t n = 5000, i;
		struct qp_cpu_frame *fr = calloc(n, sizeof(*fr));

		for (i = 0; i < n; i++)
			fr[i] = F(i % 2 ? "a" : "b", "m", i, 0, false);
		add_sample(&p, 1, "deep", 100000, n, fr);
		add_sample(&p, 1, "deep", 1, 1, (struct qp_cpu_frame[]){ F("tiny", "m", 1, 0, false) });
		free(fr);
	}
	CHECK_INT(qp_export_flamegraph(&p, NULL, &b), 0);
	CHECK(strstr(b.data, ">tiny") == NULL);
	CHECK(strstr(b.data, "height=\"80122\"") != NULL); /* 60 + 5002 * 16 + 30 */
	qp_buf_free(&b);
	qp_cpu_profile_free(&p);
}

/* ------------------------------------------------------------- callgraph */

static int write_script(const char *dir, const char *body)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/dot", dir);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "#!/bin/sh\n%s\n", body);
	fclose(f);
	return chmod(path, 0755);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void test_dot_runner(void)
{
	char dir[] = "/tmp/qp_dot_XXXXXX", err[256], *old = getenv("PATH");
	char *saved = old ? strdup(old) : NULL;
	struct qp_buf b;
	size_t n = 1 << 20, i;
	char *big = malloc(n);
	double t0;

	qp_buf_init(&b);
	CHECK(mkdtemp(dir) != NULL);
	setenv("PATH", "/nonexistent", 1);
	CHECK_INT(qp_render_dot_svg("digraph{}", 9, &b, err, sizeof(err)), -ENOENT);
	CHECK(strstr(err, "not found") != NULL);
	setenv("PATH", dir, 1);
	CHECK_INT(qp_render_dot_svg("digraph{}", 9, &b, err, sizeof(err)), -ENOENT);

	CHECK_INT(write_script(dir, "echo boom >&2; exit 3"), 0);
	CHECK_INT(qp_render_dot_svg("digraph{}", 9, &b, err, sizeof(err)), -EIO);
	CHECK(strstr(err, "status 3") && strstr(err, "boom"));

	for (i = 0; i < n; i++)
		big[i] = (char)('a' + i % 26);
	CHECK_INT(write_script(dir, "exec cat"), 0); /* 1 MiB both ways through the poll loop */
	CHECK_INT(qp_render_dot_svg(big, n, &b, err, sizeof(err)), 0);
	CHECK(b.len == n && memcmp(b.data, big, n) == 0);
	qp_buf_free(&b);

	CHECK_INT(write_script(dir, "exit 0"), 0); /* stops reading: EPIPE, not SIGPIPE */
	CHECK_INT(qp_render_dot_svg(big, n, &b, err, sizeof(err)), -EIO);
	CHECK(strstr(err, "nothing") != NULL);

	CHECK_INT(write_script(dir, "exec sleep 20"), 0);
	t0 = now_s();
	CHECK_INT(qp_render_dot_svg_timeout("digraph{}", 9, &b, err, sizeof(err), 300), -ETIMEDOUT);
	CHECK(now_s() - t0 < 5);
	CHECK(strstr(err, "timed out") != NULL);

	unlink(strcat(strcpy(big, dir), "/dot"));
	rmdir(dir);
	if (saved)
		setenv("PATH", saved, 1);
	free(saved);
	free(big);
	qp_buf_free(&b);
}

static void test_callgraph(void)
{
	struct qp_cpu_profile p;
	struct qp_buf b, svg;
	char err[256];

	fixture(&p);
	qp_buf_init(&b);
	CHECK_INT(qp_export_callgraph_dot(&p, &b), 0);
	CHECK(strncmp(b.data, "digraph \"qprof\" {\n", 18) == 0);
	CHECK(strstr(b.data, "label=\"qprof: pid 100 (strategy), 2 s\\l105 samples in 2.00 s\\l\"") !=
	      NULL);
	CHECK(strstr(b.data, "N1 [label=\"main\\nstrategy\\nself 5 (4.76%)\\nof 95 (90.48%)\"") != NULL);
	CHECK(strstr(b.data, "N2 [label=\"run\\nstrategy\\nself 0 (0.00%)\\nof 85 (80.95%)\"") != NULL);
	CHECK(strstr(b.data, "N3 [label=\"calc_ma\\nstrategy\\nself 55 (52.38%)\\nof 55 (52.38%)\"") !=
	      NULL);
	CHECK(strstr(b.data, "N6 [label=\"__x64_sys_write\\n[kernel]\\nself 10") != NULL);
	CHECK(strstr(b.data, "N7 [label=\"odd;name x\\nfeed\\nself 10") != NULL);
	CHECK(strstr(b.data, "N9 [label=\"std::vector<int>::push_back(int const&) \\\"q\\\" 'a'\\n") !=
	      NULL);
	CHECK(strstr(b.data, "N10 [label=\"bad\xEF\xBF\xBD\xEF\xBF\xBD name\\n") != NULL);
	CHECK(strstr(b.data, "N1 -> N2 [label=\" 85\"") != NULL);
	CHECK(strstr(b.data, "N2 -> N3 [label=\" 55\"") != NULL);
	CHECK(strstr(b.data, "N4 -> N5 [label=\" 20\"") != NULL);
	CHECK(strstr(b.data, "N8 -> N6 [label=\" 10\"") != NULL);
	CHECK(strstr(b.data, "N11") == NULL);
	CHECK(b.data[b.len - 2] == '}');

	qp_buf_init(&svg);
	if (system("command -v dot >/dev/null 2>&1") == 0) {
		int rc = qp_render_dot_svg(b.data, b.len, &svg, err, sizeof(err));

		CHECK_INT(rc, 0);
		if (rc)
			fprintf(stderr, "dot: %s\n", err);
		CHECK(svg.data && strstr(svg.data, "<svg") && strstr(svg.data, "calc_ma"));
	} else {
		CHECK_INT(qp_render_dot_svg(b.data, b.len, &svg, err, sizeof(err)), -ENOENT);
		printf("graphviz dot missing: checked the -ENOENT path only\n");
	}
	qp_buf_free(&svg);
	qp_buf_free(&b);
	qp_cpu_profile_free(&p);

	/* recursion counts once per sample; small nodes are dropped */
	init_profile(&p, 2);
	{
		struct qp_cpu_frame a = F("a", "m", 1, 0, false), bb = F("b", "m", 2, 0, false);

		add_sample(&p, 1, "r", 999, 4, (struct qp_cpu_frame[]){ a, bb, a, bb });
		add_sample(&p, 1, "r", 1, 1, (struct qp_cpu_frame[]){ F("rare", "m", 3, 0, false) });
	}
	CHECK_INT(qp_export_callgraph_dot(&p, &b), 0);
	CHECK(strstr(b.data, "N1 [label=\"b\\nm\\nself 999 (99.90%)\\nof 999 (99.90%)\"") != NULL);
	CHECK(strstr(b.data, "N2 [label=\"a\\nm\\nself 0 (0.00%)\\nof 999 (99.90%)\"") != NULL);
	CHECK(strstr(b.data, "N2 -> N1 [label=\" 999\"") != NULL);
	CHECK(strstr(b.data, "N1 -> N2 [label=\" 999\"") != NULL);
	CHECK(strstr(b.data, "rare") == NULL);
	qp_buf_free(&b);
	qp_cpu_profile_free(&p);

	init_profile(&p, 1);
	CHECK_INT(qp_export_callgraph_dot(&p, &b), 0);
	CHECK(strstr(b.data, "no samples") != NULL);
	qp_buf_free(&b);
	qp_cpu_profile_free(&p);

	test_dot_runner();
}

/* ----------------------------------------------------------------- pprof */

struct pb {
	const unsigned char *p, *end;
	bool bad;
};

static uint64_t pb_varint(struct pb *r)
{
	uint64_t v = 0;
	int shift = 0;

	while (r->p < r->end && shift < 64) {
		unsigned char c = *r->p++;

		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return v;
		shift += 7;
	}
	r->bad = true;
	return 0;
}

/* Next field: its number, wire type, and (type 2) the payload as a reader. */
static bool pb_next(struct pb *r, int *field, int *type, uint64_t *v, struct pb *sub)
{
	uint64_t key, len;

	if (r->p >= r->end || r->bad)
		return false;
	key = pb_varint(r);
	*field = (int)(key >> 3);
	*type = (int)(key & 7);
	if (*type == 0) {
		*v = pb_varint(r);
	} else if (*type == 2) {
		len = pb_varint(r);
		if (len > (uint64_t)(r->end - r->p)) {
			r->bad = true;
			return false;
		}
		sub->p = r->p;
		sub->end = r->p + len;
		sub->bad = false;
		r->p += len;
	} else {
		r->bad = true;
		return false;
	}
	return !r->bad;
}

/* A repeated uint64 field, packed (type 2) or not (type 0). */
static size_t pb_repeated(int type, uint64_t v, struct pb *sub, uint64_t *out, size_t n, size_t max)
{
	if (type == 0) {
		if (n < max)
			out[n] = v;
		return n + 1;
	}
	while (sub->p < sub->end && !sub->bad) {
		uint64_t x = pb_varint(sub);

		if (n < max)
			out[n] = x;
		n++;
	}
	return n;
}

#define MAXN 64
struct decoded {
	char *strings[MAXN];
	size_t nstrings;
	uint64_t sample_type[4][2];
	size_t nsample_types, nsamples;
	uint64_t total[4];
	uint64_t default_type;
	uint64_t first_locs[MAXN], nfirst_locs; /* the first sample's location ids */
	uint64_t first_pid_label;
	struct { uint64_t id, start, limit, offset, file, build_id, has_functions; } map[MAXN];
	size_t nmaps;
	struct { uint64_t id, mapping, addr, fn; } loc[MAXN];
	size_t nlocs;
	struct { uint64_t id, name, system_name, file; } fn[MAXN];
	size_t nfns;
	uint64_t time, duration, period, period_type[2], comment;
};

static int gunzip(const unsigned char *in, size_t n, unsigned char **out, size_t *outlen)
{
	z_stream z = { 0 };
	size_t cap = 1 << 20;
	int rc;

	*out = malloc(cap);
	if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
		return -1;
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)n;
	z.next_out = *out;
	z.avail_out = (uInt)cap;
	rc = inflate(&z, Z_FINISH);
	*outlen = cap - z.avail_out;
	inflateEnd(&z);
	return rc == Z_STREAM_END ? 0 : -1;
}

static int decode(const unsigned char *data, size_t len, struct decoded *d)
{
	struct pb r = { data, data + len, false }, s, s2, s3;
	int f, t, f2, t2, f3, t3;
	uint64_t v, v2, v3;

	memset(d, 0, sizeof(*d));
	while (pb_next(&r, &f, &t, &v, &s)) {
		switch (f) {
		case 1: /* sample_type */
		case 11: /* period_type */
			while (pb_next(&s, &f2, &t2, &v2, &s2))
				if (f2 == 1 || f2 == 2) {
					if (f == 1 && d->nsample_types < 4)
						d->sample_type[d->nsample_types][f2 - 1] = v2;
					else if (f == 11)
						d->period_type[f2 - 1] = v2;
				}
			if (f == 1)
				d->nsample_types++;
			break;
		case 2: { /* sample */
			uint64_t vals[4], locs[MAXN];
			size_t nv = 0, nl = 0;

			while (pb_next(&s, &f2, &t2, &v2, &s2)) {
				if (f2 == 1)
					nl = pb_repeated(t2, v2, &s2, locs, nl, MAXN);
				else if (f2 == 2)
					nv = pb_repeated(t2, v2, &s2, vals, nv, 4);
				else if (f2 == 3 && d->nsamples == 0) {
					uint64_t key = 0, num = 0;

					while (pb_next(&s2, &f3, &t3, &v3, &s3)) {
						if (f3 == 1)
							key = v3;
						if (f3 == 3)
							num = v3;
					}
					if (key && key < d->nstrings + 100)
						d->first_pid_label = d->first_pid_label ? d->first_pid_label : num;
				}
			}
			if (nv != d->nsample_types || nv > 4)
				return -1;
			for (size_t k = 0; k < nv; k++)
				d->total[k] += vals[k];
			if (d->nsamples++ == 0) {
				memcpy(d->first_locs, locs, sizeof(locs));
				d->nfirst_locs = nl;
			}
			break;
		}
		case 3: /* mapping */
			if (d->nmaps == MAXN)
				return -1;
			while (pb_next(&s, &f2, &t2, &v2, &s2)) {
				uint64_t *m = &d->map[d->nmaps].id;

				if (f2 >= 1 && f2 <= 7)
					m[f2 - 1] = v2;
			}
			d->nmaps++;
			break;
		case 4: /* location */
			if (d->nlocs == MAXN)
				return -1;
			while (pb_next(&s, &f2, &t2, &v2, &s2)) {
				if (f2 == 1)
					d->loc[d->nlocs].id = v2;
				else if (f2 == 2)
					d->loc[d->nlocs].mapping = v2;
				else if (f2 == 3)
					d->loc[d->nlocs].addr = v2;
				else if (f2 == 4)
					while (pb_next(&s2, &f3, &t3, &v3, &s3))
						if (f3 == 1)
							d->loc[d->nlocs].fn = v3;
			}
			d->nlocs++;
			break;
		case 5: /* function */
			if (d->nfns == MAXN)
				return -1;
			while (pb_next(&s, &f2, &t2, &v2, &s2)) {
				uint64_t *fn = &d->fn[d->nfns].id;

				if (f2 >= 1 && f2 <= 4)
					fn[f2 - 1] = v2;
			}
			d->nfns++;
			break;
		case 6: /* string_table */
			if (d->nstrings == MAXN)
				return -1;
			d->strings[d->nstrings++] = strndup((const char *)s.p, (size_t)(s.end - s.p));
			break;
		case 9: d->time = v; break;
		case 10: d->duration = v; break;
		case 12: d->period = v; break;
		case 13: d->comment = v; break;
		case 14: d->default_type = v; break;
		}
	}
	return r.bad ? -1 : 0;
}

static const char *S(const struct decoded *d, uint64_t i) { return i < d->nstrings ? d->strings[i] : "(bad index)"; }

static const char *loc_fn_name(const struct decoded *d, uint64_t loc_id)
{
	size_t i, j;

	for (i = 0; i < d->nlocs; i++)
		if (d->loc[i].id == loc_id)
			for (j = 0; j < d->nfns; j++)
				if (d->fn[j].id == d->loc[i].fn)
					return S(d, d->fn[j].name);
	return "(none)";
}

static void free_decoded(struct decoded *d)
{
	for (size_t i = 0; i < d->nstrings; i++)
		free(d->strings[i]);
}

static void go_pprof(const char *data, size_t len)
{
	char path[] = "/tmp/qp_export_XXXXXX.pb.gz", cmd[512], line[512];
	bool header = false, top_ok = false, total_ok = false;
	FILE *f;
	int fd;

	if (system("command -v go >/dev/null 2>&1") != 0) {
		printf("go missing: go tool pprof not run\n");
		return;
	}
	fd = mkstemps(path, 6);
	CHECK(fd >= 0 && write(fd, data, len) == (ssize_t)len);
	close(fd);
	snprintf(cmd, sizeof(cmd), "HOME=${HOME:-/tmp} go tool pprof -top '%s' 2>&1", path);
	f = popen(cmd, "r");
	while (f && fgets(line, sizeof(line), f)) {
		fputs(line, stdout);
		if (strstr(line, "of 1.06s total") || strstr(line, "of 1060.61ms total"))
			total_ok = true; /* 105 * 10.10101 ms */
		if (header && !top_ok) {
			top_ok = strstr(line, "calc_ma") != NULL;
			header = false;
			if (!top_ok)
				fprintf(stderr, "top row is not calc_ma: %s", line);
		}
		if (strstr(line, "flat%") && strstr(line, "cum%"))
			header = true;
	}
	CHECK(f && pclose(f) == 0);
	CHECK(top_ok);
	CHECK(total_ok);
	unlink(path);
}

static void test_pprof(void)
{
	struct qp_cpu_profile p;
	struct qp_buf b;
	struct decoded d;
	unsigned char *raw;
	size_t rawlen, i;
	const char *want_strings[] = { "samples", "count", "cpu", "nanoseconds", "main", "calc_ma",
				       "/usr/bin/strategy",
				       "0123456789abcdef0123456789abcdef01234567",
				       "[kernel.kallsyms]", STD_NAME, "md;feed" };

	fixture(&p);
	qp_buf_init(&b);
	CHECK_INT(qp_export_pprof(&p, &b), 0);
	CHECK(b.len > 18 && (unsigned char)b.data[0] == 0x1f && (unsigned char)b.data[1] == 0x8b);
	CHECK_INT(gunzip((unsigned char *)b.data, b.len, &raw, &rawlen), 0);
	CHECK_INT(decode(raw, rawlen, &d), 0);
	CHECK_STR(S(&d, 0), "");
	for (i = 0; i < QP_ARRAY_SIZE(want_strings); i++) {
		size_t j, found = 0;

		for (j = 0; j < d.nstrings; j++)
			found += strcmp(d.strings[j], want_strings[i]) == 0;
		CHECK_INT(found, 1); /* present, and once */
	}
	CHECK_INT(d.nsample_types, 2);
	CHECK_STR(S(&d, d.sample_type[0][0]), "samples");
	CHECK_STR(S(&d, d.sample_type[0][1]), "count");
	CHECK_STR(S(&d, d.sample_type[1][0]), "cpu");
	CHECK_STR(S(&d, d.sample_type[1][1]), "nanoseconds");
	CHECK_STR(S(&d, d.period_type[0]), "cpu");
	CHECK_STR(S(&d, d.period_type[1]), "nanoseconds");
	CHECK_INT(d.period, PERIOD);
	CHECK_INT(d.time, p.time_ns);
	CHECK_INT(d.duration, p.duration_ns);
	CHECK_STR(S(&d, d.comment), p.title);
	CHECK_INT(d.nsamples, 8); /* the count-0 sample is left out */
	CHECK_INT(d.total[0], 105);
	CHECK_INT(d.total[1], 105 * PERIOD);
	CHECK_INT(d.first_pid_label, 100);
	/* first sample main;run;calc_ma, leaf first */
	CHECK_INT(d.nfirst_locs, 3);
	CHECK_STR(loc_fn_name(&d, d.first_locs[0]), "calc_ma");
	CHECK_STR(loc_fn_name(&d, d.first_locs[2]), "main");
	/* main run calc_ma send_order memcpy entry sysw odd std bad */
	CHECK_INT(d.nlocs, 10);
	CHECK_INT(d.nfns, 10);
	CHECK_INT(d.nmaps, 3);
	CHECK_INT(d.map[0].id, 1);
	CHECK_INT(d.map[0].start, 0x400000);
	CHECK_INT(d.map[0].limit, 0x500000);
	CHECK_STR(S(&d, d.map[0].file), "/usr/bin/strategy");
	CHECK_STR(S(&d, d.map[0].build_id), "0123456789abcdef0123456789abcdef01234567");
	CHECK_INT(d.map[0].has_functions, 1);
	CHECK_INT(d.map[1].offset, 0x28000);
	CHECK_STR(S(&d, d.map[1].build_id), "");
	CHECK_STR(S(&d, d.map[2].file), "[kernel.kallsyms]");
	CHECK_INT(d.map[2].start, 0xffffffff81000000);
	CHECK_INT(d.map[2].limit, 0xffffffff81100001);
	for (i = 0; i < d.nlocs; i++) {
		const char *name = loc_fn_name(&d, d.loc[i].id);

		CHECK_INT(d.loc[i].id, i + 1);
		if (!strcmp(name, "memcpy"))
			CHECK(d.loc[i].mapping == 2 && d.loc[i].addr == 0x7f0000030000);
		if (!strcmp(name, "__x64_sys_write"))
			CHECK(d.loc[i].mapping == 3 && d.loc[i].addr == 0xffffffff81100000);
	}
	for (i = 0; i < d.nfns; i++) {
		CHECK_INT(d.fn[i].name, d.fn[i].system_name);
		if (!strcmp(S(&d, d.fn[i].name), "memcpy")) /* no source file known: "" */
			CHECK_STR(S(&d, d.fn[i].file), "");
	}
	free_decoded(&d);
	free(raw);
	go_pprof(b.data, b.len);
	qp_buf_free(&b);
	qp_cpu_profile_free(&p);

	/* empty profile: a valid profile with no samples */
	init_profile(&p, 1);
	CHECK_INT(qp_export_pprof(&p, &b), 0);
	CHECK_INT(gunzip((unsigned char *)b.data, b.len, &raw, &rawlen), 0);
	CHECK_INT(decode(raw, rawlen, &d), 0);
	CHECK_INT(d.nsamples, 0);
	CHECK_INT(d.nsample_types, 2);
	CHECK_INT(d.nmaps, 0);
	free_decoded(&d);
	free(raw);
	qp_buf_free(&b);
	qp_cpu_profile_free(&p);
}

/* A profile of other values (the heap's): its own sample types, values,
 * period type and default sample type. */
static void test_pprof_values(void)
{
	static const struct qp_value_type types[] = {
		{ "alloc_objects", "count" }, { "alloc_space", "bytes" },
		{ "inuse_objects", "count" }, { "inuse_space", "bytes" },
	};
	struct qp_cpu_profile p;
	struct qp_buf b;
	struct decoded d;
	unsigned char *raw;
	size_t rawlen, i;

	fixture(&p);
	p.nvalues = 4;
	p.value_types = types;
	p.period_type = (struct qp_value_type){ "space", "bytes" };
	p.period_ns = 524288;
	p.default_type = "inuse_space";
	for (i = 0; i < p.nsamples; i++) {
		int64_t *v = qp_arena_alloc(p.arena, 4 * sizeof(*v));
		int64_t c = (int64_t)p.samples[i].count;

		v[0] = c;
		v[1] = c * 4096;
		v[2] = c / 5;
		v[3] = c / 5 * 4096;
		p.samples[i].values = v;
	}
	qp_buf_init(&b);
	CHECK_INT(qp_export_pprof(&p, &b), 0);
	CHECK_INT(gunzip((unsigned char *)b.data, b.len, &raw, &rawlen), 0);
	CHECK_INT(decode(raw, rawlen, &d), 0);
	CHECK_INT(d.nsample_types, 4);
	for (i = 0; i < 4; i++) {
		CHECK_STR(S(&d, d.sample_type[i][0]), types[i].type);
		CHECK_STR(S(&d, d.sample_type[i][1]), types[i].unit);
	}
	CHECK_STR(S(&d, d.period_type[0]), "space");
	CHECK_STR(S(&d, d.period_type[1]), "bytes");
	CHECK_INT(d.period, 524288);
	CHECK_STR(S(&d, d.default_type), "inuse_space");
	CHECK_INT(d.nsamples, 8);	/* count 0 still left out */
	CHECK_INT(d.total[0], 105);
	CHECK_INT(d.total[1], 105 * 4096);
	CHECK_INT(d.total[2], 10 + 4 + 2 + 1 + 1 + 2 + 0 + 0);	/* 50, 20, 10, 5, 5, 10, 4, 1 over 5 */
	CHECK_INT(d.total[3], 20 * 4096);
	free_decoded(&d);
	free(raw);
	qp_buf_free(&b);
	qp_cpu_profile_free(&p);
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";

	if (!strcmp(what, "folded"))
		test_folded();
	else if (!strcmp(what, "flamegraph"))
		test_flamegraph();
	else if (!strcmp(what, "callgraph"))
		test_callgraph();
	else if (!strcmp(what, "pprof"))
		test_pprof();
	else if (!strcmp(what, "pprof_values"))
		test_pprof_values();
	else {
		fprintf(stderr, "usage: test_export folded|flamegraph|callgraph|pprof\n");
		return 2;
	}
	return test_done(what);
}
