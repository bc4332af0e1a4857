/* export_callgraph.c - a call graph as Graphviz DOT, and its rendering by
 * `dot -Tsvg` in a child process (see export.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "export.h"
#include "common/stackstats.h"

#define MAX_NODES 100
#define NODE_FRACTION 200	/* keep nodes with total >= grand total / 200 (0.5%) */
#define EDGE_FRACTION 1000	/* keep edges with weight >= grand total / 1000 (0.1%) */
#define MAX_SVG ((size_t)256 << 20)

struct fn {
	const char *name, *module;
	bool kernel;
	uint64_t self, total;
	int kept;	/* node number in the output, 0 = dropped */
};

struct edge {
	uint32_t from, to;	/* 1-based function numbers */
	uint64_t weight;
};

struct graph {
	struct fn *fn;		/* in order of first appearance */
	size_t nfn;
	struct edge *edge;
	size_t nedge;
};

/* What the function table keeps beside self and total. */
struct fn_names {
	const char *name, *module;
	bool kernel;
};

/* Self and total per function (key: name, module, kernel), and per edge
 * (key: caller and callee numbers; its total is its weight). */
static int count(const struct qp_cpu_profile *p, struct qp_stackstats *fns,
		 struct qp_stackstats *edges)
{
	struct qp_buf key;
	size_t i, j;
	int ret = 0;

	qp_buf_init(&key);
	for (i = 0; i < p->nsamples && !ret; i++) {
		const struct qp_cpu_sample *s = &p->samples[i];
		int64_t prev = -1, cur;

		if (!s->count)
			continue;
		qp_stackstats_stack(fns, s->count);
		qp_stackstats_stack(edges, s->count);
		for (j = 0; j < s->nframes; j++, prev = cur) {
			const struct qp_cpu_frame *fr = &s->frames[j];
			const char *name = fr->name && *fr->name ? fr->name : "[unknown]";
			const char *module = fr->module ? fr->module : "";
			bool made;

			key.len = 0;
			qp_buf_add(&key, name, strlen(name) + 1);
			qp_buf_add(&key, module, strlen(module) + 1);
			qp_buf_add(&key, fr->kernel ? "k" : "u", 1);
			if (key.failed) {
				ret = -ENOMEM;
				break;
			}
			cur = qp_stackstats_frame(fns, key.data, key.len, j + 1 == s->nframes, &made);
			if (cur < 0) {
				ret = -ENOMEM;
				break;
			}
			if (made)
				*(struct fn_names *)qp_stackstats_extra(fns, (size_t)cur) =
					(struct fn_names){ name, module, fr->kernel };
			if (prev >= 0) {
				uint32_t e[2] = { (uint32_t)prev + 1, (uint32_t)cur + 1 };

				if (qp_stackstats_frame(edges, e, sizeof(e), false, NULL) < 0) {
					ret = -ENOMEM;
					break;
				}
			}
		}
	}
	qp_buf_free(&key);
	return ret;
}

static int build(const struct qp_cpu_profile *p, struct graph *g)
{
	struct qp_stackstats fns, edges;
	size_t i;
	int ret;

	qp_stackstats_init(&fns, sizeof(struct fn_names));
	qp_stackstats_init(&edges, 0);
	ret = count(p, &fns, &edges);
	g->nfn = qp_stackstats_count(&fns);
	g->nedge = qp_stackstats_count(&edges);
	g->fn = calloc(g->nfn ? g->nfn : 1, sizeof(*g->fn));
	g->edge = calloc(g->nedge ? g->nedge : 1, sizeof(*g->edge));
	if (!ret && (!g->fn || !g->edge))
		ret = -ENOMEM;
	for (i = 0; !ret && i < g->nfn; i++) {
		const struct fn_names *x = qp_stackstats_extra(&fns, i);
		const struct qp_fnstat *f = qp_stackstats_at(&fns, i);

		g->fn[i] = (struct fn){ .name = x->name, .module = x->module, .kernel = x->kernel,
					.self = f->self, .total = f->total };
	}
	for (i = 0; !ret && i < g->nedge; i++) {
		uint32_t e[2];

		memcpy(e, qp_stackstats_key(&edges, i, NULL), sizeof(e));
		g->edge[i] = (struct edge){ .from = e[0], .to = e[1],
					    .weight = qp_stackstats_at(&edges, i)->total };
	}
	qp_stackstats_free(&fns);
	qp_stackstats_free(&edges);
	return ret;
}

/* A DOT double-quoted string body: '"' and '\' escaped, newlines and other
 * controls as spaces, invalid UTF-8 as U+FFFD. */
static void dot_put(struct qp_buf *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), i = 0, l;

	while (i < n) {
		if (p[i] < 0x20) {
			qp_buf_add(b, " ", 1);
			i++;
			continue;
		}
		l = qp_utf8_seq_len(p + i, n - i);
		if (!l) {
			qp_buf_puts(b, "\xEF\xBF\xBD");
			i++;
			continue;
		}
		if (p[i] == '"' || p[i] == '\\')
			qp_buf_add(b, "\\", 1);
		qp_buf_add(b, p + i, l);
		i += l;
	}
}

static int cmp_fn(const void *a, const void *b, void *ctx)
{
	const struct graph *sort_graph = ctx;
	const struct fn *x = &sort_graph->fn[*(const uint32_t *)a];
	const struct fn *y = &sort_graph->fn[*(const uint32_t *)b];
	int c;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	c = strcmp(x->name, y->name);
	return c ? c : strcmp(x->module, y->module);
}

static int cmp_edge(const void *a, const void *b, void *ctx)
{
	const struct graph *sort_graph = ctx;
	const struct edge *x = a, *y = b;
	int fx = sort_graph->fn[x->from - 1].kept, fy = sort_graph->fn[y->from - 1].kept;
	int tx = sort_graph->fn[x->to - 1].kept, ty = sort_graph->fn[y->to - 1].kept;

	if (x->weight != y->weight)
		return x->weight > y->weight ? -1 : 1;
	return fx != fy ? fx - fy : tx - ty;
}

static double pct(uint64_t a, uint64_t total) { return total ? 100.0 * (double)a / (double)total : 0; }

static int emit(const struct qp_cpu_profile *p, struct graph *g, struct qp_buf *out)
{
	uint64_t total = qp_cpu_profile_total(p);
	uint32_t *order = NULL;
	size_t i, nkept = 0;

	qp_buf_puts(out, "digraph \"qprof\" {\n"
			 "graph [fontname=\"Helvetica\", labelloc=t, labeljust=l, label=\"");
	dot_put(out, p->title ? p->title : "qprof call graph");
	qp_buf_printf(out, "\\l%" PRIu64 " samples", total);
	if (p->duration_ns)
		qp_buf_printf(out, " in %.2f s", (double)p->duration_ns / 1e9);
	qp_buf_puts(out, "\\l\"];\n"
			 "node [shape=box, style=filled, fontname=\"Helvetica\", color=\"#999999\"];\n"
			 "edge [fontname=\"Helvetica\", color=\"#666666\"];\n");
	if (!g->nfn) {
		qp_buf_puts(out, "N0 [label=\"no samples\", fillcolor=\"#eeeeee\"];\n}\n");
		return 0;
	}
	order = malloc(g->nfn * sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (i = 0; i < g->nfn; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, g->nfn, sizeof(*order), cmp_fn, g);
	for (i = 0; i < g->nfn && nkept < MAX_NODES; i++) {
		struct fn *f = &g->fn[order[i]];

		if (f->total * NODE_FRACTION < total)
			break;
		f->kept = (int)++nkept;
	}
	qsort_r(g->edge, g->nedge, sizeof(*g->edge), cmp_edge, g);
	for (i = 0; i < nkept; i++) {
		const struct fn *f = &g->fn[order[i]];
		double share = (double)f->total / (double)total;
		double fs = 10 + 22 * (double)f->self / (double)total;
		int shade = 255 - (int)(175 * share);

		qp_buf_printf(out, "N%d [label=\"", f->kept);
		dot_put(out, f->name);
		qp_buf_puts(out, "\\n");
		dot_put(out, f->module);
		qp_buf_printf(out,
			      "\\nself %" PRIu64 " (%.2f%%)\\nof %" PRIu64 " (%.2f%%)\", "
			      "fontsize=%.1f, fillcolor=\"#ff%02x%02x\"",
			      f->self, pct(f->self, total), f->total, pct(f->total, total), fs, shade,
			      shade);
		if (f->kernel)
			qp_buf_puts(out, ", shape=box3d");
		qp_buf_puts(out, "];\n");
	}
	for (i = 0; i < g->nedge; i++) {
		const struct edge *e = &g->edge[i];
		int a = g->fn[e->from - 1].kept, b = g->fn[e->to - 1].kept;

		if (!a || !b || e->weight * EDGE_FRACTION < total)
			continue;
		qp_buf_printf(out, "N%d -> N%d [label=\" %" PRIu64 "\", penwidth=%.2f];\n", a, b,
			      e->weight, 1 + 5 * (double)e->weight / (double)total);
	}
	qp_buf_puts(out, "}\n");
	free(order);
	return 0;
}

int qp_export_callgraph_dot(const struct qp_cpu_profile *p, struct qp_buf *out)
{
	struct graph g = { 0 };
	int ret = build(p, &g);

	if (!ret)
		ret = emit(p, &g, out);
	free(g.fn);
	free(g.edge);
	if (!ret && out->failed)
		ret = -ENOMEM;
	return ret;
}

/* ---- dot -Tsvg ---- */

static int find_in_path(const char *name, char *out, size_t len)
{
	const char *path = getenv("PATH"), *p, *e;
	struct stat st;

	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path; *p; p = *e ? e + 1 : e) {
		e = strchrnul(p, ':');
		if (e == p) /* an empty entry would mean the cwd: not for a daemon */
			continue;
		if ((size_t)snprintf(out, len, "%.*s/%s", (int)(e - p), p, name) >= len)
			continue;
		if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0)
			return 0;
	}
	return -ENOENT;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

int qp_render_dot_svg(const char *dot, size_t len, struct qp_buf *svg, char *err, size_t errlen)
{
	return qp_render_dot_svg_timeout(dot, len, svg, err, errlen, 30000);
}

int qp_render_dot_svg_timeout(const char *dot, size_t len, struct qp_buf *svg, char *err,
			      size_t errlen, int timeout_ms)
{
	char exe[4096], ebuf[1024], chunk[65536];
	char *argv[] = { "dot", "-Tsvg", NULL };
	int in[2] = { -1, -1 }, outp[2] = { -1, -1 }, errp[2] = { -1, -1 };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t pipeset, oldmask, pending;
	bool had_pipe, blocked = false;
	size_t sent = 0, elen = 0, start = svg->len;
	int64_t deadline;
	pid_t pid = -1;
	int ret, st = 0;

	if (err && errlen)
		err[0] = '\0';
	if (find_in_path("dot", exe, sizeof(exe))) {
		if (err && errlen)
			snprintf(err, errlen, "graphviz dot not found in PATH");
		return -ENOENT;
	}
	if (pipe2(in, O_CLOEXEC) || pipe2(outp, O_CLOEXEC) || pipe2(errp, O_CLOEXEC)) {
		ret = -errno;
		goto out;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	posix_spawn_file_actions_adddup2(&fa, outp[1], 1);
	posix_spawn_file_actions_adddup2(&fa, errp[1], 2);
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	posix_spawnattr_init(&attr);
	sigemptyset(&pipeset);
	sigaddset(&pipeset, SIGPIPE);
	posix_spawnattr_setsigdefault(&attr, &pipeset); /* the daemon ignores SIGPIPE */
	sigemptyset(&pending);
	posix_spawnattr_setsigmask(&attr, &pending);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
	ret = -posix_spawn(&pid, exe, &fa, &attr, argv, NULL);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (ret) {
		pid = -1;
		goto out;
	}
	close_fd(&in[0]);
	close_fd(&outp[1]);
	close_fd(&errp[1]);
	fcntl(in[1], F_SETFL, fcntl(in[1], F_GETFL) | O_NONBLOCK);
	/* A write to a dead dot must give EPIPE, not kill the caller. */
	sigpending(&pending);
	had_pipe = sigismember(&pending, SIGPIPE);
	blocked = pthread_sigmask(SIG_BLOCK, &pipeset, &oldmask) == 0;
	if (!len)
		close_fd(&in[1]);
	deadline = now_ms() + timeout_ms;
	while (outp[0] >= 0 || errp[0] >= 0) {
		struct pollfd pf[3];
		int n = 0, io = -1, oo = -1, eo = -1;
		int64_t left = deadline - now_ms();

		if (left <= 0) {
			ret = -ETIMEDOUT;
			break;
		}
		if (in[1] >= 0)
			pf[io = n++] = (struct pollfd){ .fd = in[1], .events = POLLOUT };
		if (outp[0] >= 0)
			pf[oo = n++] = (struct pollfd){ .fd = outp[0], .events = POLLIN };
		if (errp[0] >= 0)
			pf[eo = n++] = (struct pollfd){ .fd = errp[0], .events = POLLIN };
		if (poll(pf, (nfds_t)n, (int)left) < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			break;
		}
		if (io >= 0 && pf[io].revents) {
			ssize_t w = write(in[1], dot + sent, len - sent > 65536 ? 65536 : len - sent);

			if (w > 0)
				sent += (size_t)w;
			if ((w < 0 && errno != EAGAIN && errno != EINTR) || sent == len)
				close_fd(&in[1]); /* done, or dot stopped reading */
		}
		if (oo >= 0 && pf[oo].revents) {
			ssize_t r = read(outp[0], chunk, sizeof(chunk));

			if (r > 0)
				qp_buf_add(svg, chunk, (size_t)r);
			else if (r == 0 || (errno != EAGAIN && errno != EINTR))
				close_fd(&outp[0]);
			if (svg->len > MAX_SVG) {
				ret = -EFBIG;
				break;
			}
		}
		if (eo >= 0 && pf[eo].revents) {
			ssize_t r = read(errp[0], chunk, sizeof(chunk));

			if (r > 0) {
				size_t k = (size_t)r < sizeof(ebuf) - 1 - elen ? (size_t)r
									 : sizeof(ebuf) - 1 - elen;
				memcpy(ebuf + elen, chunk, k);
				elen += k;
			} else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
				close_fd(&errp[0]);
			}
		}
	}
	if (ret) {
		kill(pid, SIGKILL);
		if (err && errlen)
			snprintf(err, errlen, "dot %s",
				 ret == -ETIMEDOUT ? "timed out" : ret == -EFBIG ? "output too large"
										 : strerror(-ret));
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	pid = -1;
	if (!ret && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
		ret = -EIO;
		ebuf[elen] = '\0';
		while (elen && (ebuf[elen - 1] == '\n' || ebuf[elen - 1] == '\r'))
			ebuf[--elen] = '\0';
		if (err && errlen) {
			if (WIFEXITED(st))
				snprintf(err, errlen, "dot exited with status %d: %s", WEXITSTATUS(st), ebuf);
			else
				snprintf(err, errlen, "dot killed by signal %d: %s",
					 WIFSIGNALED(st) ? WTERMSIG(st) : 0, ebuf);
		}
	}
	if (!ret && svg->failed)
		ret = -ENOMEM;
	if (!ret && svg->len == start) {
		ret = -EIO;
		if (err && errlen)
			snprintf(err, errlen, "dot wrote nothing");
	}
out:
	if (blocked) {
		struct timespec zero = { 0, 0 };

		sigpending(&pending);
		if (!had_pipe && sigismember(&pending, SIGPIPE))
			sigtimedwait(&pipeset, NULL, &zero);
		pthread_sigmask(SIG_SETMASK, &oldmask, NULL);
	}
	if (pid > 0) { /* spawned but failed before the loop: not reached today */
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	close_fd(&in[0]);
	close_fd(&in[1]);
	close_fd(&outp[0]);
	close_fd(&outp[1]);
	close_fd(&errp[0]);
	close_fd(&errp[1]);
	return ret;
}
