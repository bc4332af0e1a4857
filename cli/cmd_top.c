/* cmd_top.c - `qprof-cli top`: a live view in the spirit of perf top and
 * htop. Every interval of S seconds it asks the daemon, concurrently, for the
 * folded CPU stacks and the scope figures of the next S seconds, and shows
 * the hottest functions (self and total share of the samples) and the scopes
 * (rate, p50, p99, p99.9, max, total time) of that interval.
 *
 * Live mode draws with plain ANSI escapes on the alternate screen (no
 * ncurses), reads single keys in raw mode, fits the terminal and redraws on
 * SIGWINCH; the terminal is restored on every way out. A collector thread
 * runs the rounds back to back and hands each finished round to the drawing
 * thread through a pipe, so keys stay responsive while a round collects.
 * --once prints one plain frame, --json the figures of one interval.
 *
 * Functions: from "comm;root;...;leaf count" lines, the comm is dropped, a
 * frame's self count is the samples where it is the leaf, its total count
 * the samples whose stack holds it (once per stack, recursion or not).
 * Unsymbolized frames ("module+0xoffset") are grouped per module ("[vdso]"),
 * as one address is rarely a useful row. */
#define _GNU_SOURCE	/* pipe2 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

static const char top_help[] =
	"Usage: qprof-cli top [--pid N] [--interval S] [--once] [--json]\n"
	"\n"
	"A live view of the last interval, refreshed every S seconds: the hottest\n"
	"functions by SELF% (samples where the function is the leaf) and TOTAL%\n"
	"(samples whose stack holds it) of all CPU samples, with the SAMPLES of the\n"
	"sorted column, and the scopes with\n"
	"RATE/s, P50, P99, P99.9, MAX and TOTAL time inside them. The first figures\n"
	"appear after the first interval. Unsymbolized frames are grouped by module.\n"
	"\n"
	"  --pid N       only process N (default: every target)\n"
	"  --interval S  seconds per refresh, 1..60 (default 2)\n"
	"  --once        collect one interval, print one plain frame and exit (the\n"
	"                default when standard output is not a terminal)\n"
	"  --json        collect one interval and print its figures as JSON:\n"
	"                {interval_s, pid, samples, functions[{name, self_pct,\n"
	"                total_pct, samples}], scopes[{name, parent, kind,\n"
	"                rate_per_s, p50_ns, p99_ns, p999_ns, max_ns, total_ns}]}\n"
	"\n"
	"Keys: q quit; s / t sort functions by self / total; p next pid (every\n"
	"target, then each one); b / r / 5 / 9 / m sort scopes by total time\n"
	"(the default: the busiest scope first) / rate / p50 / p99 / max; h help.\n";

#define TOP_INTERVAL_MAX 60
#define TOP_ONCE_FUNCS 20	/* rows of the plain frame */
#define TOP_ONCE_SCOPES 40

/* ---- one round of figures ---------------------------------------------- */

struct fn_row {
	char *name;
	uint64_t self, total;
	size_t last_line;	/* the stack that last counted it (1-based) */
};

enum { SD_P50, SD_P99, SD_P999, SD_MAX, SD_TOTAL, SD_N };
static const char *const sd_keys[SD_N] = { "p50_ns", "p99_ns", "p999_ns", "max_ns", "total_ns" };

struct scope_row {
	char *name, *parent, *kind;
	uint64_t pid, count;
	double rate;
	double dur[SD_N];
	bool has_dur[SD_N];
};

struct target {
	int64_t pid;
	char comm[32];
};

struct round {
	int64_t pid;		/* 0: every target */
	int interval;
	char version[64];
	struct target *targets;
	size_t ntargets;
	struct fn_row *fns;
	size_t nfns;
	uint64_t samples;
	struct scope_row *scopes;
	size_t nscopes;
	bool filled;		/* functions and scopes are there */
	char err[512];		/* not empty: the round failed */
};

static void round_free(struct round *r)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < r->nfns; i++)
		free(r->fns[i].name);
	for (i = 0; i < r->nscopes; i++) {
		free(r->scopes[i].name);
		free(r->scopes[i].parent);
		free(r->scopes[i].kind);
	}
	free(r->fns);
	free(r->scopes);
	free(r->targets);
	free(r);
}

/* ---- talking to the daemon from any thread ----------------------------- */

/* Like cli_api_call, but the message goes to ERR instead of stderr, so that
 * it can be shown in the live view or printed by the main thread. */
static int fetch(const char *sock, const char *target, int timeout_s, struct http_response *resp,
		 char *err, size_t errlen)
{
	char why[256];
	int rc;

	rc = http_request(sock, "GET", target, NULL, NULL, 0, timeout_s, resp, why, sizeof(why));
	if (rc == HTTP_ERR_CONNECT) {
		snprintf(err, errlen, "cannot connect to qprofd at %s: %s (is qprofd running?)", sock, why);
		return CLI_FAIL;
	}
	if (rc) {
		snprintf(err, errlen, "bad answer from qprofd at %s: %s", sock, why);
		return CLI_FAIL;
	}
	if (resp->status < 200 || resp->status > 299) {
		json_t *root = resp->body_len ? json_loadb(resp->body, resp->body_len, 0, NULL) : NULL;
		const char *msg = root ? json_string_value(json_object_get(root, "error")) : NULL;
		size_t i;

		if (msg)
			snprintf(err, errlen, "%s (HTTP %d)", msg, resp->status);
		else
			snprintf(err, errlen, "qprofd answered HTTP %d %s", resp->status, resp->reason);
		for (i = 0; err[i]; i++)
			if ((unsigned char)err[i] < 0x20 || err[i] == 0x7f)
				err[i] = '?';
		json_decref(root);
		http_response_free(resp);
		return CLI_FAIL;
	}
	return 0;
}

static json_t *parse_object(const struct http_response *resp, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *root = json_loadb(resp->body, resp->body_len, 0, &jerr);

	if (!root) {
		snprintf(err, errlen, "qprofd sent invalid JSON: %s (line %d)", jerr.text, jerr.line);
		return NULL;
	}
	if (!json_is_object(root)) {
		json_decref(root);
		snprintf(err, errlen, "qprofd sent JSON that is not an object");
		return NULL;
	}
	return root;
}

static int take_status(struct round *r, const json_t *root)
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
		r->ntargets++;
	}
	return 0;
}

/* ---- functions out of folded stacks ------------------------------------ */

struct fn_map {
	struct fn_row *rows;
	size_t n, cap;
	size_t *slots;		/* index + 1, 0 empty */
	size_t nslots;
};

static uint64_t hash_name(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ull;	/* FNV-1a */
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

static int map_grow(struct fn_map *m)
{
	size_t nslots = m->nslots ? m->nslots * 2 : 1024, i;
	size_t *slots = calloc(nslots, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (i = 0; i < m->n; i++) {
		const char *s = m->rows[i].name;
		size_t k = hash_name(s, strlen(s)) & (nslots - 1);

		while (slots[k])
			k = (k + 1) & (nslots - 1);
		slots[k] = i + 1;
	}
	free(m->slots);
	m->slots = slots;
	m->nslots = nslots;
	return 0;
}

static struct fn_row *map_get(struct fn_map *m, const char *s, size_t len)
{
	size_t k;

	if ((m->n + 1) * 2 > m->nslots && map_grow(m))
		return NULL;
	k = hash_name(s, len) & (m->nslots - 1);
	for (; m->slots[k]; k = (k + 1) & (m->nslots - 1)) {
		struct fn_row *r = &m->rows[m->slots[k] - 1];

		if (strlen(r->name) == len && memcmp(r->name, s, len) == 0)
			return r;
	}
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 256;
		struct fn_row *rows = realloc(m->rows, cap * sizeof(*rows));

		if (!rows)
			return NULL;
		m->rows = rows;
		m->cap = cap;
	}
	m->rows[m->n] = (struct fn_row){ .name = strndup(s, len) };
	if (!m->rows[m->n].name)
		return NULL;
	m->slots[k] = ++m->n;
	return &m->rows[m->n - 1];
}

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

static int take_folded(struct round *r, char *text, size_t len)
{
	struct fn_map m = { 0 };
	char *line = text, *end = text + len;
	size_t lineno = 0;
	int rc = 0;

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
		lineno++;
		r->samples += count;
		stop = sp;
		for (p = line; p < stop; ) {
			char *semi = memchr(p, ';', (size_t)(stop - p));
			char *fe = semi ? semi : stop;
			struct fn_row *f;

			if (first) {	/* the comm */
				first = false;
				p = fe + 1;
				continue;
			}
			f = map_get(&m, p, frame_len(p, (size_t)(fe - p)));
			if (!f) {
				rc = -ENOMEM;
				break;
			}
			if (f->last_line != lineno) {
				f->last_line = lineno;
				f->total += count;
			}
			if (!semi)
				f->self += count;
			p = fe + 1;
		}
		line = nl + 1;
	}
	free(m.slots);
	r->fns = m.rows;
	r->nfns = m.n;
	return rc;
}

/* ---- scopes ------------------------------------------------------------ */

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static int take_scopes(struct round *r, const json_t *root)
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
	}
	return 0;
}

/* ---- a round: status, then folded and scopes at the same time ---------- */

struct get_job {
	const char *sock;
	char target[128];
	int timeout_s;
	struct http_response resp;
	char err[512];
	int rc;
};

static void *get_thread(void *arg)
{
	struct get_job *j = arg;

	j->rc = fetch(j->sock, j->target, j->timeout_s, &j->resp, j->err, sizeof(j->err));
	return NULL;
}

static void set_query(struct get_job *j, const char *route, int64_t pid, int interval)
{
	char num[24];

	snprintf(j->target, sizeof(j->target), "%s", route);
	if (pid) {
		snprintf(num, sizeof(num), "%lld", (long long)pid);
		http_add_query(j->target, sizeof(j->target), "pid", num);
	}
	snprintf(num, sizeof(num), "%d", interval);
	http_add_query(j->target, sizeof(j->target), "seconds", num);
}

/* Never NULL but when out of memory; a failed round has r->err set. */
static struct round *collect(const char *sock, int64_t pid, int interval)
{
	struct round *r = calloc(1, sizeof(*r));
	struct get_job fj = { .sock = sock }, sj = { .sock = sock };
	struct http_response resp;
	pthread_t th;
	bool threaded;
	json_t *root;

	if (!r)
		return NULL;
	r->pid = pid;
	r->interval = interval;
	if (fetch(sock, "/api/status", CLI_HTTP_TIMEOUT_S, &resp, r->err, sizeof(r->err)))
		return r;
	root = parse_object(&resp, r->err, sizeof(r->err));
	http_response_free(&resp);
	if (!root)
		return r;
	if (take_status(r, root))
		snprintf(r->err, sizeof(r->err), "out of memory");
	json_decref(root);
	if (r->err[0])
		return r;

	fj.timeout_s = sj.timeout_s = interval + CLI_HTTP_TIMEOUT_S;
	set_query(&fj, "/api/cpu/folded", pid, interval);
	set_query(&sj, "/api/scopes", pid, interval);
	threaded = pthread_create(&th, NULL, get_thread, &fj) == 0;
	get_thread(&sj);
	if (threaded)
		pthread_join(th, NULL);
	else
		get_thread(&fj);	/* one after the other: still about one interval */

	if (fj.rc || sj.rc) {
		snprintf(r->err, sizeof(r->err), "%s", fj.rc ? fj.err : sj.err);
	} else if (take_folded(r, fj.resp.body, fj.resp.body_len)) {
		snprintf(r->err, sizeof(r->err), "out of memory");
	} else if ((root = parse_object(&sj.resp, r->err, sizeof(r->err)))) {
		int rc = take_scopes(r, root);

		if (rc == -EPROTO)
			snprintf(r->err, sizeof(r->err), "qprofd's answer has no \"scopes\" array");
		else if (rc)
			snprintf(r->err, sizeof(r->err), "out of memory");
		json_decref(root);
	}
	r->filled = !r->err[0];
	if (!fj.rc)
		http_response_free(&fj.resp);
	if (!sj.rc)
		http_response_free(&sj.resp);
	return r;
}

/* ---- sorting ----------------------------------------------------------- */

enum fn_sort { FS_SELF, FS_TOTAL };
enum sc_sort { SS_BUSY, SS_RATE, SS_P50, SS_P99, SS_MAX };
static const char *const fs_names[] = { "self", "total" };
static const char *const ss_names[] = { "total time", "rate", "p50", "p99", "max" };

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

static void sort_round(struct round *r, enum fn_sort fs, enum sc_sort ss)
{
	if (r->nfns)
		qsort(r->fns, r->nfns, sizeof(*r->fns), fs == FS_SELF ? cmp_fn_self : cmp_fn_total);
	scope_sort_key = ss;
	if (r->nscopes)
		qsort(r->scopes, r->nscopes, sizeof(*r->scopes), cmp_scope);
}

/* ---- a frame as text --------------------------------------------------- */

struct screen {
	char *buf;
	size_t len, cap;
	int width;		/* 0: no limit */
	int col;		/* characters on the current line */
	bool ansi;
	bool oom;
};

static void sc_raw(struct screen *s, const char *p, size_t n)
{
	if (s->oom)
		return;
	if (s->len + n + 1 > s->cap) {
		size_t cap = s->cap ? s->cap : 4096;
		char *b;

		while (s->len + n + 1 > cap)
			cap *= 2;
		b = realloc(s->buf, cap);
		if (!b) {
			s->oom = true;
			return;
		}
		s->buf = b;
		s->cap = cap;
	}
	memcpy(s->buf + s->len, p, n);
	s->len += n;
	s->buf[s->len] = '\0';
}

/* Text of the frame: control characters become '?', the line is cut at the
 * terminal's width (bytes; the daemon's names are ASCII in practice). */
static void sc_text(struct screen *s, const char *p)
{
	for (; *p; p++) {
		char c = (unsigned char)*p < 0x20 || *p == 0x7f ? '?' : *p;

		if (s->width && s->col >= s->width)
			return;
		sc_raw(s, &c, 1);
		s->col++;
	}
}

__printf(2, 3) static void sc_printf(struct screen *s, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	sc_text(s, buf);
}

static void sc_endl(struct screen *s)
{
	if (s->ansi)
		sc_raw(s, "\033[K\r\n", 5);
	else
		sc_raw(s, "\n", 1);
	s->col = 0;
}

static void sc_attr(struct screen *s, const char *esc)
{
	if (s->ansi)
		sc_raw(s, esc, strlen(esc));
}

/* A cell padded to W (right-aligned when RIGHT), then two blanks. */
static void sc_cell(struct screen *s, const char *text, int w, bool right, bool last)
{
	char buf[512];
	int n = (int)strlen(text);

	if (w > (int)sizeof(buf) - 1)
		w = (int)sizeof(buf) - 1;
	if (n > w) {	/* cut long names, marking the cut with '~' */
		snprintf(buf, sizeof(buf), "%.*s~", w > 1 ? w - 1 : 0, text);
	} else if (last && !right) {
		snprintf(buf, sizeof(buf), "%s", text);
	} else {
		snprintf(buf, sizeof(buf), right ? "%*s" : "%-*s", w, text);
	}
	sc_text(s, buf);
	if (!last)
		sc_text(s, "  ");
}

static const char *pct(char *buf, size_t len, uint64_t n, uint64_t total)
{
	snprintf(buf, len, "%.1f", total ? 100.0 * (double)n / (double)total : 0.0);
	return buf;
}

static void draw_functions(struct screen *s, const struct round *r, size_t rows, enum fn_sort fs)
{
	const int wn = 7, nw = 3 * (wn + 2);
	int wname = 8;
	size_t i, n = r->nfns < rows ? r->nfns : rows;
	char a[32], b[32], c[32];

	for (i = 0; i < n; i++)
		if ((int)strlen(r->fns[i].name) > wname)
			wname = (int)strlen(r->fns[i].name);
	if (s->width && wname > s->width - nw)
		wname = s->width - nw > 8 ? s->width - nw : 8;
	sc_attr(s, "\033[1m");
	sc_printf(s, "Functions (by %s%%)", fs_names[fs]);
	sc_attr(s, "\033[0m");
	sc_endl(s);
	if (!r->nfns) {
		sc_text(s, "  no CPU samples in this interval");
		sc_endl(s);
		return;
	}
	sc_attr(s, "\033[7m");
	sc_cell(s, fs == FS_SELF ? "SELF%*" : "SELF%", wn, true, false);
	sc_cell(s, fs == FS_TOTAL ? "TOTAL%*" : "TOTAL%", wn, true, false);
	sc_cell(s, "SAMPLES", wn, true, false);
	sc_cell(s, "FUNCTION", wname, false, !s->ansi);
	sc_attr(s, "\033[0m");
	sc_endl(s);
	for (i = 0; i < n; i++) {
		const struct fn_row *f = &r->fns[i];

		sc_cell(s, pct(a, sizeof(a), f->self, r->samples), wn, true, false);
		sc_cell(s, pct(b, sizeof(b), f->total, r->samples), wn, true, false);
		sc_cell(s, qp_fmt_count(c, sizeof(c), fs == FS_SELF ? f->self : f->total), wn, true,
			false);
		sc_cell(s, f->name, wname, false, true);
		sc_endl(s);
	}
}

static void draw_scopes(struct screen *s, const struct round *r, size_t rows, enum sc_sort ss)
{
	static const char *const heads[] = { "RATE/s", "P50", "P99", "P99.9", "MAX", "TOTAL" };
	static const int durs[] = { SD_P50, SD_P99, SD_P999, SD_MAX, SD_TOTAL };
	const int wn = 7, nw = 6 * wn + 5 * 2 + 4;	/* numbers, and the blanks after the names */
	int wname = 4, wpar = 6, k;
	size_t i, n = r->nscopes < rows ? r->nscopes : rows;
	bool pids = r->pid == 0 && r->ntargets > 1;
	char buf[64];

	for (i = 0; i < n; i++) {
		const struct scope_row *sr = &r->scopes[i];

		if ((int)strlen(sr->name) > wname)
			wname = (int)strlen(sr->name);
		if (sr->parent && (int)strlen(sr->parent) > wpar)
			wpar = (int)strlen(sr->parent);
	}
	if (s->width) {
		/* share what the numbers leave between the two names; on a narrow
		 * terminal keep the names readable and let the line lose its
		 * rightmost columns instead */
		int avail = s->width - nw - (pids ? 9 : 0);

		if (wname + wpar > avail) {
			if (wpar > avail / 3)
				wpar = avail / 3 > 8 ? avail / 3 : 8;
			if (wname > avail - wpar)
				wname = avail - wpar > 12 ? avail - wpar : 12;
		}
	}
	sc_attr(s, "\033[1m");
	sc_printf(s, "Scopes (by %s)", ss_names[ss]);
	sc_attr(s, "\033[0m");
	sc_endl(s);
	if (!r->nscopes) {
		sc_text(s, "  no scope ran in this interval");
		sc_endl(s);
		return;
	}
	sc_attr(s, "\033[7m");
	if (pids)
		sc_cell(s, "PID", 7, true, false);
	sc_cell(s, "NAME", wname, false, false);
	sc_cell(s, "PARENT", wpar, false, false);
	for (k = 0; k < 6; k++) {
		static const int sorted_col[] = { SS_RATE, SS_P50, SS_P99, -1, SS_MAX, SS_BUSY };
		char h[16];

		snprintf(h, sizeof(h), "%s%s", heads[k], sorted_col[k] == (int)ss ? "*" : "");
		sc_cell(s, h, wn, true, k == 5);
	}
	sc_attr(s, "\033[0m");
	sc_endl(s);
	for (i = 0; i < n; i++) {
		const struct scope_row *sr = &r->scopes[i];

		if (pids) {
			snprintf(buf, sizeof(buf), "%llu", (unsigned long long)sr->pid);
			sc_cell(s, buf, 7, true, false);
		}
		sc_cell(s, sr->name, wname, false, false);
		sc_cell(s, sr->parent ? sr->parent : "-", wpar, false, false);
		if (sr->rate >= 100 || sr->rate == 0)
			snprintf(buf, sizeof(buf), "%.0f", sr->rate);
		else
			snprintf(buf, sizeof(buf), "%.1f", sr->rate);
		sc_cell(s, buf, wn, true, false);
		for (k = 0; k < 5; k++)
			sc_cell(s, qp_fmt_duration(buf, sizeof(buf), sr->dur[durs[k]], sr->has_dur[durs[k]]),
				wn, true, k == 4);
		sc_endl(s);
	}
}

static void draw_header(struct screen *s, const struct round *r, int64_t pid, int interval)
{
	size_t i;

	sc_attr(s, "\033[1m");
	sc_printf(s, "qprof top - qprofd %s", r && r->version[0] ? r->version : "?");
	sc_attr(s, "\033[0m");
	sc_printf(s, "  interval %d s", interval);
	if (pid)
		sc_printf(s, "  pid %lld", (long long)pid);
	else
		sc_text(s, "  pid all");
	if (r && !r->err[0])
		sc_printf(s, "  samples %llu (%.0f/s)", (unsigned long long)r->samples,
			  (double)r->samples / interval);
	sc_endl(s);
	sc_text(s, "targets:");
	if (!r || !r->ntargets)
		sc_text(s, " none");
	for (i = 0; r && i < r->ntargets; i++)
		sc_printf(s, " %lld (%s)", (long long)r->targets[i].pid, r->targets[i].comm);
	sc_endl(s);
}

/* The whole frame; HEIGHT 0: no limit but the --once row caps. */
static void draw_frame(struct screen *s, const struct round *r, int64_t pid, int interval,
		       int height, enum fn_sort fs, enum sc_sort ss, const char *status)
{
	size_t fn_rows = TOP_ONCE_FUNCS, sc_rows = TOP_ONCE_SCOPES;

	draw_header(s, r, pid, interval);
	sc_endl(s);
	if (!r || !r->filled || r->pid != pid) {
		if (r && r->err[0] && r->pid == pid)
			sc_printf(s, "error: %s", r->err);
		else
			sc_printf(s, "collecting the next %d s...", interval);
		sc_endl(s);
	} else {
		if (height) {
			/* header 3, function title + head 2, blank 1, scope title + head 2,
			 * status line 1 */
			int room = height - 9;
			size_t half;

			if (room < 2)
				room = 2;
			half = (size_t)room / 2;
			sc_rows = r->nscopes < half ? r->nscopes : half;
			if (!sc_rows)
				sc_rows = 0;
			fn_rows = (size_t)room - sc_rows - (r->nscopes ? 0 : 1);
			if (r->nfns < fn_rows) {
				sc_rows += fn_rows - (r->nfns ? r->nfns : 1);
				fn_rows = r->nfns;
			}
		}
		draw_functions(s, r, fn_rows, fs);
		sc_endl(s);
		draw_scopes(s, r, sc_rows, ss);
	}
	if (status) {
		if (s->ansi)
			sc_raw(s, "\033[J", 3);
		if (height) {	/* the status line at the bottom */
			char esc[32];

			snprintf(esc, sizeof(esc), "\033[%d;1H", height);
			sc_attr(s, esc);
			s->col = 0;
		}
		sc_attr(s, "\033[7m");
		sc_text(s, status);
		sc_attr(s, "\033[0m");
		if (s->ansi)
			sc_raw(s, "\033[K", 3);
	}
}

/* ---- --once and --json ------------------------------------------------- */

static json_t *round_json(const struct round *r)
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
		json_array_append_new(scs, o);
	}
	json_object_set_new(root, "functions", fns);
	json_object_set_new(root, "scopes", scs);
	return root;
}

static int run_once(struct cli_ctx *ctx, int64_t pid, int interval)
{
	struct round *r;
	int rc = CLI_OK;

	if (isatty(STDERR_FILENO))
		fprintf(stderr, "collecting for %d s...\n", interval);
	r = collect(cli_socket(ctx), pid, interval);
	if (!r)
		return cli_fail(ctx, "out of memory");
	if (r->err[0]) {
		rc = cli_fail(ctx, "%s", r->err);
	} else if (ctx->json) {
		json_t *root;
		char *text;

		sort_round(r, FS_SELF, SS_BUSY);
		root = round_json(r);
		text = root ? json_dumps(root, JSON_COMPACT) : NULL;
		if (text)
			printf("%s\n", text);
		else
			rc = cli_fail(ctx, "out of memory");
		free(text);
		json_decref(root);
	} else {
		struct screen s = { 0 };

		sort_round(r, FS_SELF, SS_BUSY);
		draw_frame(&s, r, pid, interval, 0, FS_SELF, SS_BUSY, NULL);
		if (s.oom)
			rc = cli_fail(ctx, "out of memory");
		else
			fwrite(s.buf, 1, s.len, stdout);
		free(s.buf);
	}
	if (!rc && fflush(stdout))
		rc = cli_fail(ctx, "cannot write to standard output");
	round_free(r);
	return rc;
}

/* ---- live mode --------------------------------------------------------- */

static int sig_pipe[2] = { -1, -1 };	/* signals -> drawing thread */
static struct termios saved_tio;
static bool tio_saved, screen_on;

static void restore_terminal(void)
{
	static const char leave[] = "\033[0m\033[?25h\033[?1049l";

	if (screen_on) {
		screen_on = false;
		if (write(STDOUT_FILENO, leave, sizeof(leave) - 1) < 0) {
			/* nothing more to do on the way out */
		}
	}
	if (tio_saved) {
		tio_saved = false;
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tio);
	}
}

static void on_signal(int sig)
{
	int e = errno;
	char c = (char)sig;

	if (write(sig_pipe[1], &c, 1) < 0) {
		/* the pipe is full: a redraw or exit is pending anyway */
	}
	errno = e;
}

struct live {
	const char *sock;
	int interval;
	pthread_mutex_t lock;
	int64_t want_pid;	/* under lock */
	struct round *ready;	/* under lock: the latest finished round */
	int wake[2];		/* collector -> drawing thread */
};

static void *collector(void *arg)
{
	struct live *lv = arg;

	for (;;) {
		struct round *r, *old;
		int64_t pid;
		char c = 'd';

		pthread_mutex_lock(&lv->lock);
		pid = lv->want_pid;
		pthread_mutex_unlock(&lv->lock);
		r = collect(lv->sock, pid, lv->interval);
		if (!r) {
			sleep(1);
			continue;
		}
		pthread_mutex_lock(&lv->lock);
		old = lv->ready;
		lv->ready = r;
		pthread_mutex_unlock(&lv->lock);
		round_free(old);
		if (write(lv->wake[1], &c, 1) < 0) {
			/* full: the drawing thread has a wake-up pending */
		}
		if (r->err[0])
			sleep(1);	/* the daemon went away: retry, slowly */
	}
	return NULL;
}

static void term_size(int *rows, int *cols)
{
	struct winsize ws;

	*rows = 24;
	*cols = 80;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col) {
		*rows = ws.ws_row;
		*cols = ws.ws_col;
	}
}

static void write_all(const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(STDOUT_FILENO, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

static int64_t next_pid(const struct round *r, int64_t pid)
{
	size_t i;

	if (!r || !r->ntargets)
		return 0;
	if (!pid)
		return r->targets[0].pid;
	for (i = 0; i < r->ntargets; i++)
		if (r->targets[i].pid == pid)
			return i + 1 < r->ntargets ? r->targets[i + 1].pid : 0;
	return 0;
}

static int run_live(struct cli_ctx *ctx, int64_t pid, int interval, struct round *first)
{
	struct live lv = { .sock = cli_socket(ctx), .interval = interval, .want_pid = pid };
	struct round *shown = first;	/* the status answer (no figures) until the first round */
	enum fn_sort fs = FS_SELF;
	enum sc_sort ss = SS_BUSY;
	bool help = false, keys = isatty(STDIN_FILENO);
	struct sigaction sa = { 0 };
	pthread_t th;
	int i;

	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) || pipe2(lv.wake, O_CLOEXEC | O_NONBLOCK))
		return cli_fail(ctx, "pipe: %s", strerror(errno));
	pthread_mutex_init(&lv.lock, NULL);
	if (keys && tcgetattr(STDIN_FILENO, &saved_tio) == 0) {
		struct termios raw = saved_tio;

		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);	/* ISIG kept: Ctrl-C quits */
		raw.c_iflag &= ~(tcflag_t)(IXON | ICRNL);
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		tio_saved = true;
		atexit(restore_terminal);
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw);
	} else {
		atexit(restore_terminal);
	}
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGWINCH, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);
	screen_on = true;
	{
		static const char enter[] = "\033[?1049h\033[?25l\033[H\033[2J";

		write_all(enter, sizeof(enter) - 1);
	}

	/* the collector inherits no signal: they all go to this thread */
	{
		sigset_t all, old;

		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, &old);
		i = pthread_create(&th, NULL, collector, &lv);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (i) {
			restore_terminal();
			return cli_fail(ctx, "cannot start a thread: %s", strerror(i));
		}
		pthread_detach(th);
	}

	for (;;) {
		struct pollfd pf[3] = {
			{ .fd = sig_pipe[0], .events = POLLIN },
			{ .fd = lv.wake[0], .events = POLLIN },
			{ .fd = keys ? STDIN_FILENO : -1, .events = POLLIN },
		};
		struct screen s = { .ansi = true };
		char status[256], buf[64];
		int rows, cols, n;
		ssize_t got;

		term_size(&rows, &cols);
		s.width = cols;
		sc_raw(&s, "\033[H", 3);
		if (shown)
			sort_round(shown, fs, ss);
		if (help)
			snprintf(status, sizeof(status),
				 "q quit  s/t functions by self/total  b/r/5/9/m scopes by "
				 "time/rate/p50/p99/max  p next pid  h close help");
		else
			snprintf(status, sizeof(status), "q quit  h help  p pid  functions by %s, "
				 "scopes by %s", fs_names[fs], ss_names[ss]);
		draw_frame(&s, shown, pid, interval, rows, fs, ss, status);
		if (!s.oom)
			write_all(s.buf, s.len);
		free(s.buf);

		n = poll(pf, 3, -1);
		if (n < 0 && errno != EINTR)
			break;
		if (pf[0].revents & POLLIN) {
			bool quit = false;

			while ((got = read(sig_pipe[0], buf, sizeof(buf))) > 0)
				for (i = 0; i < got; i++)
					if (buf[i] != SIGWINCH)
						quit = true;
			if (quit)
				break;
		}
		if (pf[1].revents & POLLIN) {
			struct round *r;

			while (read(lv.wake[0], buf, sizeof(buf)) > 0)
				;
			pthread_mutex_lock(&lv.lock);
			r = lv.ready;
			lv.ready = NULL;
			pthread_mutex_unlock(&lv.lock);
			if (r) {
				round_free(shown);
				shown = r;
			}
		}
		if (pf[2].revents & (POLLIN | POLLHUP)) {
			bool quit = false;

			got = read(STDIN_FILENO, buf, sizeof(buf));
			if (got <= 0)
				keys = false;	/* end of input: keys are over, Ctrl-C still quits */
			for (i = 0; i < got; i++) {
				switch (buf[i]) {
				case 'q': case 'Q': quit = true; break;
				case 's': fs = FS_SELF; break;
				case 't': fs = FS_TOTAL; break;
				case 'b': ss = SS_BUSY; break;
				case 'r': ss = SS_RATE; break;
				case '5': ss = SS_P50; break;
				case '9': ss = SS_P99; break;
				case 'm': ss = SS_MAX; break;
				case 'h': case '?': help = !help; break;
				case 'p':
					pid = next_pid(shown, pid);
					pthread_mutex_lock(&lv.lock);
					lv.want_pid = pid;
					pthread_mutex_unlock(&lv.lock);
					break;
				}
			}
			if (quit)
				break;
		}
	}
	restore_terminal();
	/* the collector may be in the middle of a request: exit without it */
	fflush(stdout);
	_exit(CLI_OK);
}

/* ---- the command ------------------------------------------------------- */

int cmd_top(struct cli_ctx *ctx, int argc, char **argv)
{
	enum { OPT_PID = CLI_OPT_CMD_BASE, OPT_INTERVAL, OPT_ONCE };
	static const struct option opts[] = {
		CLI_COMMON_OPTS,
		{ "pid", required_argument, NULL, OPT_PID },
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "once", no_argument, NULL, OPT_ONCE },
		{ 0 },
	};
	const char *pid_arg = NULL, *int_arg = NULL;
	int64_t pid = 0, interval = 2;
	struct http_response resp;
	struct round *first;
	bool once = false;
	json_t *root;
	int c, rc;

	while ((c = cli_getopt(argc, argv, opts)) != -1) {
		switch (c) {
		case OPT_PID:
			pid_arg = optarg;
			continue;
		case OPT_INTERVAL:
			int_arg = optarg;
			continue;
		case OPT_ONCE:
			once = true;
			continue;
		}
		rc = cli_common_opt(ctx, c, argv, opts, top_help);
		if (rc >= 0)
			return rc;
	}
	rc = cli_no_operands(ctx, argc, argv);
	if (rc)
		return rc;
	if (pid_arg && (rc = cli_parse_pid(ctx, "--pid", pid_arg, &pid)))
		return rc;
	if (int_arg && qp_parse_i64(int_arg, 1, TOP_INTERVAL_MAX, &interval))
		return cli_usage_error(ctx, "invalid --interval '%s': a whole number of seconds "
				       "from 1 to %d", int_arg, TOP_INTERVAL_MAX);
	if (!once && !ctx->json && !isatty(STDOUT_FILENO)) {
		fprintf(stderr, "%s top: standard output is not a terminal: printing one frame "
			"(as --once)\n", CLI_PROG);
		once = true;
	}
	if (once || ctx->json)
		return run_once(ctx, pid, (int)interval);

	/* live: check the daemon (and the pid) before taking the terminal */
	rc = cli_api_call(ctx, "GET", "/api/status", NULL, CLI_HTTP_TIMEOUT_S, &resp);
	if (rc)
		return rc;
	root = cli_api_json(ctx, &resp);
	http_response_free(&resp);
	if (!root)
		return CLI_FAIL;
	first = calloc(1, sizeof(*first));
	if (!first || take_status(first, root)) {
		json_decref(root);
		round_free(first);
		return cli_fail(ctx, "out of memory");
	}
	json_decref(root);
	if (pid) {
		size_t i;

		for (i = 0; i < first->ntargets && first->targets[i].pid != pid; i++)
			;
		if (i == first->ntargets) {
			round_free(first);
			return cli_fail(ctx, "pid %lld is not a target of qprofd (see qprof-cli status)",
					(long long)pid);
		}
	}
	return run_live(ctx, pid, (int)interval, first);
}
