/* report.c - see report.h. When a target exits, the poll thread (without
 * the registry lock: taken only while the scopes are named) reads its
 * scopes and its CPU samples once more and writes
 *
 *   summary.txt   what a person reads: header, three scope tables (a fourth
 *                 with the kernel figures when they are traced), top functions
 *   report.json   the same figures for programs
 *   scopes.json   the GET /api/scopes answer for the pid
 *   cpu.folded    folded stacks
 *   cpu.svg       the flame graph
 *
 * into REPORT_DIR/PID-COMM-YYYYmmddTHHMMSS/. Each file is written beside its
 * name and renamed into place; summary.txt goes last and the directory is
 * handed back (the registry sets t->report_dir) only once it is there, so a
 * reader never sees half a report. Failures are
 * logged and the daemon carries on. The files are made by report_fs.c;
 * GET /api/report is report_http.c. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "common/buf.h"
#include "collect/collect_cpu.h"
#include "common/counters.h"
#include "export.h"
#include "export_json.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "model/model_cpu_build.h"
#include "model/model_scopes.h"
#include "report.h"
#include "report_figures.h"
#include "report_fs.h"
#include "targets/targets.h"
#include "common/util.h"

/* ---- files ---------------------------------------------------------------- */

/* Not synced one by one: qp_report_commit syncs the filesystem once for a
 * batch of reports. HELD: see qp_report_fs_write. */
static int write_buf(const struct qp_report_fs *fs, int dirfd, const char *name, struct qp_buf *b, char *held,
		     size_t heldlen)
{
	if (b->failed)
		return -ENOMEM;
	return qp_report_fs_write(fs, dirfd, name, b->data ? b->data : "", b->len, QP_REPORT_FS_NOSYNC, held,
				  heldlen);
}

/* ---- the report ----------------------------------------------------------- */

/* Who the report is of: copied from the target at collect time, so that the
 * files can be written after the target record is gone (an exec). */
struct who {
	int pid;
	char comm[32];
	char exe[4096];
	uint64_t attached_ms, exited_ms;
};

struct qp_report {
	const struct qp_model_src *src;	/* collect only: NULL once collected */
	struct who w;
	const struct who *t;		/* &w */
	unsigned int frequency_hz;
	char *scopes_json;
	size_t scopes_len;
	struct qp_scope_model scopes;
	struct srow *rows;
	size_t nrows;
	bool cpu_ok;
	char cpu_why[320];
	struct qp_cpu_profile prof;
	struct funcs funcs;
	struct func *by_self, *by_total;	/* sorted copies of funcs.v */
	bool ring_ok;				/* a ring target: its losses below */
	struct qp_ring_status *ring;
};

static void fmt_time(char *buf, size_t len, uint64_t ms)
{
	time_t s = (time_t)(ms / 1000);
	struct tm tm;
	char tmp[64];

	if (!ms || !localtime_r(&s, &tm)) {
		snprintf(buf, len, "-");
		return;
	}
	strftime(tmp, sizeof(tmp), "%Y-%m-%d %H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03u", tmp, (unsigned int)(ms % 1000));
	strftime(tmp, sizeof(tmp), " %z", &tm);
	snprintf(buf + strlen(buf), len - strlen(buf), "%s", tmp);
}

static uint64_t duration_ms(const struct who *t)
{
	return t->exited_ms > t->attached_ms ? t->exited_ms - t->attached_ms : 0;
}

static void sanitize(char *dst, size_t len, const char *src)
{
	size_t i = 0;

	for (; *src && i + 1 < len; src++) {
		char c = *src;

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			c = '_';
		dst[i++] = c;
	}
	if (!i && len > 1)
		dst[i++] = '_';
	dst[i] = '\0';
	if (!strcmp(dst, ".") || !strcmp(dst, ".."))
		dst[0] = '_';
}

static int collect_scopes(struct qp_report *r)
{
	/* as GET /api/scopes?pid= has them, without counted probes; marks
	 * left out when they cannot be read */
	const struct qp_scope_query q = { .pid = r->t->pid };	/* the builder locks to name */
	struct qp_json j;
	int ret;

	ret = qp_scope_model_build(r->src, &q, &r->scopes);
	if (ret)
		return ret;
	qp_json_init(&j);
	qp_export_scopes_json(&r->scopes, &j);
	r->scopes_json = qp_json_finish(&j, &r->scopes_len);
	if (!r->scopes_json)
		return -ENOMEM;
	r->nrows = qp_srows_from(&r->scopes, &r->rows);
	return r->rows ? 0 : -ENOMEM;
}

static void collect_cpu(struct qp_report *r)
{
	struct qp_cpu_snapshot now = { 0 };
	struct qp_cpu_query q = { 0 };
	const struct qp_model_src *d = r->src;
	int ret;

	if (!d->cpu) {
		snprintf(r->cpu_why, sizeof(r->cpu_why), "CPU sampling is unavailable: %.256s",
			 d->cpu_error && d->cpu_error[0] ? d->cpu_error : "not started");
		return;
	}
	ret = qp_cpu_read(d->cpu, &now);
	if (ret) {
		snprintf(r->cpu_why, sizeof(r->cpu_why), "cannot read the samples: %s", strerror(-ret));
		return;
	}
	q.pid = r->t->pid;
	q.period_ns = 1000000000ull / (d->frequency_hz ? d->frequency_hz : 99);
	q.duration_ns = duration_ms(r->t) * 1000000ull;
	q.time_ns = r->t->attached_ms * 1000000ull;
	ret = qp_cpu_build(d->cpu, d->reg->sym, d->reg, &now, NULL, &q, &r->prof);
	qp_cpu_snapshot_free(&now);
	if (ret) {
		memset(&r->prof, 0, sizeof(r->prof));
		snprintf(r->cpu_why, sizeof(r->cpu_why), "cannot build the profile: %s", strerror(-ret));
		return;
	}
	if (qp_funcs_build(&r->prof, &r->funcs)) {
		snprintf(r->cpu_why, sizeof(r->cpu_why), "out of memory");
		return;
	}
	r->by_self = malloc((r->funcs.n ? r->funcs.n : 1) * sizeof(struct func));
	r->by_total = malloc((r->funcs.n ? r->funcs.n : 1) * sizeof(struct func));
	if (!r->by_self || !r->by_total) {
		snprintf(r->cpu_why, sizeof(r->cpu_why), "out of memory");
		return;
	}
	if (r->funcs.n) {
		memcpy(r->by_self, r->funcs.v, r->funcs.n * sizeof(struct func));
		memcpy(r->by_total, r->funcs.v, r->funcs.n * sizeof(struct func));
		qsort(r->by_self, r->funcs.n, sizeof(struct func), qp_func_by_self);
		qsort(r->by_total, r->funcs.n, sizeof(struct func), qp_func_by_total);
	}
	r->cpu_ok = true;
}

static void report_free(struct qp_report *r)
{
	free(r->scopes_json);
	qp_scope_model_free(&r->scopes);
	free(r->rows);
	if (r->prof.arena)
		qp_cpu_profile_free(&r->prof);
	free(r->funcs.v);
	free(r->by_self);
	free(r->by_total);
}

/* summary.txt (its tables: report_tables.c) */

/* The ring's losses as counters.h's QP_RING_LOSSES words them: the first
 * figure always, the others the report names when not 0. */
#define REPORT_LOSS_ROW(a, key, from, help, text, in_report) { text, in_report, from },

static void ring_losses(struct qp_buf *b, const struct qp_ring_status *st)
{
	const struct {
		const char *text;
		int in_report;
		uint64_t n;
	} l[] = { QP_RING_LOSSES(REPORT_LOSS_ROW, _, st->est) };
	const char *tilde = st->est.estimated || st->c.start_unknown ? "~" : "";
	size_t i;

	qp_buf_puts(b, "  lost:      ");
	for (i = 0; i < QP_ARRAY_SIZE(l); i++)
		if (l[i].in_report && (!i || l[i].n))
			qp_buf_printf(b, "%s%s%" PRIu64 " %s", i ? ", " : "", tilde, l[i].n, l[i].text);
	qp_buf_printf(b, " (%" PRIu64 " records overwritten before they were read%s): the counts below may be short by that\n",
		      st->lost, *tilde ? "; ~ an estimate" : "; exact");
}

static void write_summary(struct qp_report *r, const char *dir, struct qp_buf *b)
{
	const struct who *t = r->t;
	char at[80], ex[80], dur[32];

	fmt_time(at, sizeof(at), t->attached_ms);
	fmt_time(ex, sizeof(ex), t->exited_ms);
	qp_fmt_duration(dur, sizeof(dur), (double)duration_ms(t) * 1e6, true);
	qp_buf_printf(b, "qprof report: pid %d (%s)\n", t->pid, t->comm);
	qp_buf_printf(b, "  exe:       %s\n", t->exe);
	qp_buf_printf(b, "  attached:  %s\n", at);
	qp_buf_printf(b, "  exited:    %s\n", ex);
	qp_buf_printf(b, "  duration:  %s (attached to exit)\n", dur);
	qp_buf_printf(b, "  scopes:    %zu rows\n", r->nrows);
	if (r->ring_ok && r->ring->lost)
		ring_losses(b, r->ring);
	if (r->cpu_ok)
		qp_buf_printf(b, "  cpu:       %" PRIu64 " samples at %u Hz\n", r->funcs.samples,
			      r->frequency_hz);
	else
		qp_buf_printf(b, "  cpu:       no CPU profile (%s)\n", r->cpu_why);
	qp_buf_printf(b, "  directory: %s\n", dir);

	qp_report_scope_table(b, "Scopes by total time", r->rows, r->nrows, qp_srow_by_total, true);
	qp_report_scope_table(b, "Scopes by p99", r->rows, r->nrows, qp_srow_by_p99, true);
	qp_report_scope_table(b, "Scopes by count", r->rows, r->nrows, qp_srow_by_count, false);
	qp_report_kernel_table(b, r->rows, r->nrows);

	if (!r->cpu_ok) {
		qp_buf_printf(b, "\nTop functions\n  no CPU profile: %s\n", r->cpu_why);
		return;
	}
	qp_report_func_table(b, "Top functions by self samples", r->by_self, r->funcs.n, r->funcs.samples, true);
	qp_report_func_table(b, "Top functions by total (inclusive) samples", r->by_total, r->funcs.n,
		   r->funcs.samples, false);
}

/* report.json */

static void json_rows(struct qp_json *j, const char *key, struct srow *rows, size_t n,
		      int (*cmp)(const void *, const void *), bool need_dur)
{
	static const char *const keys[] = { "total_ns", "mean_ns", "min_ns", "p50_ns", "p90_ns",
					    "p99_ns", "p999_ns", "max_ns" };
	size_t i, shown = 0;

	qsort(rows, n, sizeof(*rows), cmp);
	qp_json_key(j, key);
	qp_json_arr_begin(j);
	for (i = 0; i < n && shown < QP_REPORT_TOP; i++) {
		const struct srow *r = &rows[i];
		const double figs[] = { r->total, r->mean, r->min, r->p50, r->p90, r->p99, r->p999, r->max };

		if (need_dur && !r->dur)
			continue;
		shown++;
		qp_json_obj_begin(j);
		qp_json_kv_str(j, "name", r->name);
		qp_json_kv_str(j, "parent", r->parent);
		qp_json_kv_str(j, "kind", r->kind);
		qp_json_kv_u64(j, "count", r->count);
		qp_export_figures_json(j, keys, r->dur ? figs : NULL, QP_ARRAY_SIZE(keys));
		qp_json_obj_end(j);
	}
	qp_json_arr_end(j);
}

static void json_funcs(struct qp_json *j, const char *key, const struct func *v, size_t n, uint64_t samples)
{
	size_t i, m = n < QP_REPORT_TOP ? n : QP_REPORT_TOP;

	qp_json_key(j, key);
	qp_json_arr_begin(j);
	for (i = 0; i < m; i++) {
		qp_json_obj_begin(j);
		qp_json_kv_str(j, "name", v[i].name);
		qp_json_kv_str(j, "module", v[i].module);
		qp_json_kv_u64(j, "self", v[i].self);
		qp_json_kv_u64(j, "total", v[i].total);
		qp_json_kv_double(j, "self_share", samples ? (double)v[i].self / (double)samples : 0);
		qp_json_kv_double(j, "total_share", samples ? (double)v[i].total / (double)samples : 0);
		qp_json_obj_end(j);
	}
	qp_json_arr_end(j);
}

static char *write_report_json(struct qp_report *r, const char *dir, size_t *len)
{
	const struct who *t = r->t;
	struct qp_json j;

	qp_json_init(&j);
	qp_json_obj_begin(&j);
	qp_json_kv_i64(&j, "pid", t->pid);
	qp_json_kv_str(&j, "comm", t->comm);
	qp_json_kv_str(&j, "exe", t->exe);
	qp_json_kv_u64(&j, "attached_ms", t->attached_ms);
	qp_json_kv_u64(&j, "exited_ms", t->exited_ms);
	qp_json_kv_u64(&j, "duration_ms", duration_ms(t));
	qp_json_kv_str(&j, "dir", dir);
	qp_json_key(&j, "scopes");
	qp_json_obj_begin(&j);
	qp_json_kv_u64(&j, "rows", r->nrows);
	json_rows(&j, "by_total", r->rows, r->nrows, qp_srow_by_total, true);
	json_rows(&j, "by_p99", r->rows, r->nrows, qp_srow_by_p99, true);
	json_rows(&j, "by_count", r->rows, r->nrows, qp_srow_by_count, false);
	qp_json_obj_end(&j);
	qp_json_key(&j, "cpu");
	qp_json_obj_begin(&j);
	qp_json_kv_bool(&j, "available", r->cpu_ok);
	if (r->cpu_ok) {
		qp_json_kv_null(&j, "error");
		qp_json_kv_u64(&j, "samples", r->funcs.samples);
		qp_json_kv_u64(&j, "frequency_hz", r->frequency_hz);
		qp_json_kv_u64(&j, "period_ns", r->prof.period_ns);
		json_funcs(&j, "by_self", r->by_self, r->funcs.n, r->funcs.samples);
		json_funcs(&j, "by_total", r->by_total, r->funcs.n, r->funcs.samples);
	} else {
		qp_json_kv_str(&j, "error", r->cpu_why);
		qp_json_kv_u64(&j, "samples", 0);
		qp_json_kv_u64(&j, "frequency_hz", r->frequency_hz);
		qp_json_key(&j, "by_self");
		qp_json_arr_begin(&j);
		qp_json_arr_end(&j);
		qp_json_key(&j, "by_total");
		qp_json_arr_begin(&j);
		qp_json_arr_end(&j);
	}
	qp_json_obj_end(&j);
	qp_json_obj_end(&j);
	return qp_json_finish(&j, len);
}

static void warn_file(const struct who *t, const char *dir, const char *name, int ret)
{
	qp_warn("report of pid %d: cannot write %s/%s: %s", t->pid, dir, name, strerror(-ret));
}

struct qp_report *qp_report_collect(const struct qp_model_src *src, const struct qp_target *t)
{
	struct qp_report *r = calloc(1, sizeof(*r));
	int ret;

	if (!r) {
		qp_warn("report of pid %d: out of memory", t->pid);
		return NULL;
	}
	r->w.pid = t->pid;
	snprintf(r->w.comm, sizeof(r->w.comm), "%s", t->comm);
	snprintf(r->w.exe, sizeof(r->w.exe), "%s", t->exe);
	r->w.attached_ms = t->attached_ms;
	r->w.exited_ms = t->exited_ms;
	r->t = &r->w;
	r->src = src;
	r->frequency_hz = src->frequency_hz;
	ret = collect_scopes(r);
	if (ret) {
		qp_warn("report of pid %d: cannot read the scopes: %s", t->pid, strerror(-ret));
		r->nrows = 0;
	}
	collect_cpu(r);
	/* a ring target's losses: its scope counts may be short by them */
	if (t->ring) {
		r->ring = malloc(sizeof(*r->ring));
		r->ring_ok = r->ring && qp_ring_pid_status(t->ring, t->pid, r->ring);
	}
	r->src = NULL;
	return r;
}

void qp_report_free(struct qp_report *r)
{
	if (!r)
		return;
	report_free(r);
	free(r->ring);
	free(r);
}

/* A report whose files are written, but for summary.txt, held under its
 * temporary name until qp_report_commit. */
struct qp_report_staged {
	int dfd;		/* the report's directory */
	int pid;
	char comm[32];
	char dir[512];
	char held[300];		/* summary.txt's temporary name in dfd */
	int first;		/* the first error of the other files, 0 */
};

static struct qp_report_staged *stage(struct qp_report *r, const struct qp_report_fs *fs, const char *report_dir)
{
	const struct who *t = r->t;
	struct qp_report_staged *s;
	char dir[512], name[128], comm[64], stamp[32], title[512];
	const char *base = report_dir && report_dir[0] ? report_dir : QPROF_REPORT_DIR;
	time_t secs = (time_t)(t->exited_ms / 1000);
	struct qp_buf b;
	struct tm tm;
	size_t len;
	char *json;
	int ret, first = 0, dfd, n;

	if (!localtime_r(&secs, &tm))
		memset(&tm, 0, sizeof(tm));
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm);
	sanitize(comm, sizeof(comm), t->comm);
	/* relative to the directory fd opened at start; an existing name, be it
	 * a directory or a symlink planted there, is never written into: a
	 * second report of the pid in the same second (an exec) takes
	 * PID-COMM~N-STAMP, as does a name taken by anything else */
	for (n = 1, dfd = -EEXIST; dfd == -EEXIST && n < 100; n++) {
		if (n == 1)
			snprintf(name, sizeof(name), "%d-%s-%s", t->pid, comm, stamp);
		else
			snprintf(name, sizeof(name), "%d-%s~%d-%s", t->pid, comm, n, stamp);
		if ((size_t)snprintf(dir, sizeof(dir), "%s/%s", base, name) >= sizeof(dir)) {
			qp_warn("report of pid %d: directory name too long under %s", t->pid, base);
			return NULL;
		}
		dfd = qp_report_fs_mkdir(fs, name);
		if (dfd == -EEXIST)
			qp_warn("report of pid %d: %s exists already: not written into", t->pid, dir);
	}
	if (dfd < 0) {
		qp_warn("report of pid %d: cannot create %s: %s", t->pid, dir, strerror(-dfd));
		return NULL;
	}

	/* scopes.json */
	if (r->scopes_json) {
		ret = qp_report_fs_write(fs, dfd, "scopes.json", r->scopes_json, r->scopes_len, QP_REPORT_FS_NOSYNC,
					 NULL, 0);
		if (ret)
			warn_file(t, dir, "scopes.json", first = ret);
	}

	/* cpu.folded and cpu.svg: empty ones when there is no profile, saying why */
	{
		struct qp_cpu_profile empty = { 0 };
		const struct qp_cpu_profile *p = r->cpu_ok ? &r->prof : &empty;
		struct qp_flame_opts o = { 0 };

		qp_buf_init(&b);
		ret = qp_export_folded(p, &b);
		ret = ret ? ret : write_buf(fs, dfd, "cpu.folded", &b, NULL, 0);
		qp_buf_free(&b);
		if (ret)
			warn_file(t, dir, "cpu.folded", first = first ? first : ret);

		snprintf(title, sizeof(title), "qprof: pid %d (%s), attached to exit", t->pid, t->comm);
		o.title = title;
		if (!r->cpu_ok)
			o.subtitle = r->cpu_why;
		qp_buf_init(&b);
		ret = qp_export_flamegraph(p, &o, &b);
		ret = ret ? ret : write_buf(fs, dfd, "cpu.svg", &b, NULL, 0);
		qp_buf_free(&b);
		if (ret)
			warn_file(t, dir, "cpu.svg", first = first ? first : ret);
	}

	/* report.json (sorts the rows: before the summary, which sorts them again) */
	json = write_report_json(r, dir, &len);
	ret = json ? qp_report_fs_write(fs, dfd, "report.json", json, len, QP_REPORT_FS_NOSYNC, NULL, 0) : -ENOMEM;
	free(json);
	if (ret)
		warn_file(t, dir, "report.json", first = first ? first : ret);

	/* summary.txt last, held: its name makes the report visible once
	 * everything is on disk (qp_report_commit) */
	s = calloc(1, sizeof(*s));
	if (!s) {
		close(dfd);
		warn_file(t, dir, "summary.txt", -ENOMEM);
		return NULL;
	}
	qp_buf_init(&b);
	write_summary(r, dir, &b);
	ret = write_buf(fs, dfd, "summary.txt", &b, s->held, sizeof(s->held));
	qp_buf_free(&b);
	if (ret) {
		close(dfd);
		free(s);
		warn_file(t, dir, "summary.txt", ret);
		return NULL;
	}
	s->dfd = dfd;
	s->pid = t->pid;
	snprintf(s->comm, sizeof(s->comm), "%s", t->comm);
	snprintf(s->dir, sizeof(s->dir), "%s", dir);
	s->first = first;
	return s;
}

_Static_assert(QP_REPORT_DIR_MAX == 512, "report.h names the size of a report directory path");

void qp_report_commit(const struct qp_report_fs *fs, struct qp_report_staged **v, size_t n, char (*dirs)[512])
{
	int synced = qp_report_fs_sync(fs), named = -EIO;
	size_t i;

	/* the files' data and the four names first, then the summaries' names:
	 * a summary.txt found after a crash stands beside complete files */
	for (i = 0; i < n; i++) {
		dirs[i][0] = '\0';
		if (!v[i])
			continue;
		if (synced)
			unlinkat(v[i]->dfd, v[i]->held, 0);
		else if (qp_report_fs_publish(v[i]->dfd, v[i]->held, "summary.txt"))
			v[i]->held[0] = '\0';	/* not published (logged below) */
		else
			named = 0;
	}
	if (!synced && !named)
		named = qp_report_fs_sync(fs);
	for (i = 0; i < n; i++) {
		struct qp_report_staged *s = v[i];

		if (!s)
			continue;
		if (synced || !s->held[0] || named)
			qp_warn("report of pid %d (%s): %s not written: %s", s->pid, s->comm, s->dir,
				strerror(synced ? -synced : named ? -named : EIO));
		else {
			snprintf(dirs[i], sizeof(dirs[i]), "%s", s->dir);
			qp_info("report of pid %d (%s) written to %s", s->pid, s->comm, s->dir);
		}
		close(s->dfd);
		free(s);
	}
}

struct qp_report_staged *qp_report_stage(struct qp_report *r, const struct qp_report_fs *fs, const char *report_dir)
{
	struct qp_report_staged *s = r ? stage(r, fs, report_dir) : NULL;

	qp_report_free(r);
	return s;
}

int qp_report_write(const struct qp_model_src *src, const struct qp_report_fs *fs, const char *report_dir,
		    const struct qp_target *t, char *dir_out, size_t dirlen)
{
	struct qp_report *r = qp_report_collect(src, t);
	struct qp_report_staged *s;
	char dir[1][512];
	int first;

	if (!r)
		return -ENOMEM;
	s = qp_report_stage(r, fs, report_dir);
	first = s ? s->first : -EIO;
	qp_report_commit(fs, &s, 1, dir);
	if (!dir[0][0])
		return first ? first : -EIO;
	snprintf(dir_out, dirlen, "%s", dir[0]);
	return first;
}
