/* top_draw.c - a `qprof-cli top` frame as text: the header, the functions
 * table and the scopes table (with their off-CPU columns when the daemon
 * has them and the terminal the room) fitted to the terminal (plain ANSI escapes, no
 * ncurses), or without escapes for --once. */
#include "cli.h"
#include "top.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void top_screen_raw(struct top_screen *s, const char *p, size_t n)
{
	qp_buf_add(&s->b, p, n);
}

/* Text of the frame: control characters become '?', the line is cut at the
 * terminal's width (bytes; the daemon's names are ASCII in practice). */
static void sc_text(struct top_screen *s, const char *p)
{
	for (; *p; p++) {
		char c = (unsigned char)*p < 0x20 || *p == 0x7f ? '?' : *p;

		if (s->width && s->col >= s->width)
			return;
		top_screen_raw(s, &c, 1);
		s->col++;
	}
}

__printf(2, 3) static void sc_printf(struct top_screen *s, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	sc_text(s, buf);
}

static void sc_endl(struct top_screen *s)
{
	if (s->ansi)
		top_screen_raw(s, "\033[K\r\n", 5);
	else
		top_screen_raw(s, "\n", 1);
	s->col = 0;
}

static void sc_attr(struct top_screen *s, const char *esc)
{
	if (s->ansi)
		top_screen_raw(s, esc, strlen(esc));
}

/* A cell padded to W (right-aligned when RIGHT), then two blanks. */
static void sc_cell(struct top_screen *s, const char *text, int w, bool right, bool last)
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

static void draw_functions(struct top_screen *s, const struct round *r, size_t rows, enum fn_sort fs)
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
	sc_printf(s, "Functions (by %s%%)", top_fs_names[fs]);
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

/* The off-CPU milliseconds and the switches (voluntary and involuntary)
 * of a scope row; "-" when the row has none (a mark, or not traced). */
static void kernel_cells(struct top_screen *s, const struct scope_row *sr, int wn)
{
	char buf[32];
	double ms = (double)sr->off_cpu_ns / 1e6;

	if (!sr->has_kernel) {
		sc_cell(s, "-", wn, true, false);
		sc_cell(s, "-", wn, true, true);
		return;
	}
	snprintf(buf, sizeof(buf), ms < 100 ? "%.2f" : ms < 100000 ? "%.1f" : "%.0f", ms);
	sc_cell(s, buf, wn, true, false);
	sc_cell(s, qp_fmt_count(buf, sizeof(buf), sr->voluntary + sr->involuntary), wn, true, true);
}

static void draw_scopes(struct top_screen *s, const struct round *r, size_t rows, enum sc_sort ss)
{
	static const char *const heads[] = { "RATE/s", "P50", "P99", "P99.9", "MAX", "TOTAL" };
	static const int durs[] = { SD_P50, SD_P99, SD_P999, SD_MAX, SD_TOTAL };
	bool kern = r->kernel && (!s->width || s->width >= TOP_KERNEL_WIDTH);
	/* numbers, and the blanks after the names */
	const int wn = 7, nw = 6 * wn + 5 * 2 + 4 + (kern ? 2 * (wn + 2) : 0);
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
	sc_printf(s, "Scopes (by %s)", top_ss_names[ss]);
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
		sc_cell(s, h, wn, true, k == 5 && !kern);
	}
	if (kern) {
		sc_cell(s, "OFF ms", wn, true, false);
		sc_cell(s, "SWITCH", wn, true, true);
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
		for (k = 0; k < 5; k++) {
			if (sr->has_dur[durs[k]] && sr->dur[durs[k]] < 0.5 && sr->calibration_ns && sr->count)
				/* at or below the probes' cost: a bound (scopes --help) */
				snprintf(buf, sizeof(buf), "<%llu ns", (unsigned long long)sr->calibration_ns);
			else
				qp_fmt_duration(buf, sizeof(buf), sr->dur[durs[k]], sr->has_dur[durs[k]]);
			sc_cell(s, buf, wn, true, k == 4 && !kern);
		}
		if (kern)
			kernel_cells(s, sr, wn);
		sc_endl(s);
	}
}

static void draw_header(struct top_screen *s, const struct round *r, int64_t pid, int interval)
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
	for (i = 0; r && i < r->ntargets; i++) {
		sc_printf(s, " %lld (%s", (long long)r->targets[i].pid, r->targets[i].comm);
		/* a count that may be short says so */
		if (r->targets[i].ring_lost)
			sc_printf(s, ", %s%llu scopes lost on the ring since attach", r->targets[i].ring_lost_est ? "~" : "",
				  (unsigned long long)r->targets[i].ring_lost);
		sc_text(s, ")");
	}
	sc_endl(s);
}

void top_draw_frame(struct top_screen *s, const struct round *r, int64_t pid, int interval,
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
			top_screen_raw(s, "\033[J", 3);
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
			top_screen_raw(s, "\033[K", 3);
	}
}
