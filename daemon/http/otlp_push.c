/* otlp_push.c - see otlp_push.h. The builder thread wakes every interval,
 * reads the CPU and off-CPU snapshots (a copy under the collector's lock,
 * as any request), builds the interval as the difference from the last
 * snapshot, adds the in-use heap of each heap target, encodes one request
 * gzips it (Content-Encoding: gzip) and queues it. The sender thread
 * POSTs the oldest: 2xx is done; a connection failure, a timeout, 429 or
 * 5xx is retried after 1, 2, 4, 8 s (5 tries in all, then dropped), or
 * after the receiver's Retry-After when it asks for longer (429 and 503;
 * at most RETRY_AFTER_MAX_S); another answer is dropped at once.
 * Everything dropped is counted with its samples. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <curl/curl.h>
#include <zlib.h>
#include "collect/collect_cpu.h"
#include "collect/collect_heap.h"
#include "export/export_otlp.h"
#include "model/heap_window.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "model/model_cpu_build.h"
#include "otlp_push.h"
#include "qprofd.h"
#include "symbolize/symbolize.h"
#include "common/util.h"

#include "otlp_internal.h"

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- building ---- */

#define MAX_RES 256	/* processes in one push */

struct res_set {
	struct qp_otlp_resource r[MAX_RES];
	struct qp_otlp_attr a[MAX_RES][MAX_ATTRS + 8];
	struct qp_otlp_profile prof[MAX_RES][6];
	char exe[MAX_RES][256], svc[MAX_RES][300];
	size_t n;
};

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* The resource of PID in S, made when new; NULL when S is full. */
static struct qp_otlp_resource *resource(struct qp_otlp *p, struct res_set *s, uint32_t pid, const char *comm)
{
	struct qp_otlp_attr *a;
	const char *exe;
	size_t i, n = 0;

	for (i = 0; i < s->n; i++)
		if (s->r[i].pid == pid)
			return &s->r[i];
	if (s->n == QP_ARRAY_SIZE(s->r))
		return NULL;
	char name[256];

	a = s->a[s->n];
	exe = qp_sym_process_exe(p->d->reg.sym, (int)pid);
	snprintf(name, sizeof(name), "%s", exe ? base_name(exe) : comm ? comm : "?");
	memcpy(s->exe[s->n], name, sizeof(name));
	if (p->service[0]) {
		a[n++] = (struct qp_otlp_attr){ .key = "service.name", .str = p->service };
	} else {	/* the semantic conventions' default */
		snprintf(s->svc[s->n], sizeof(s->svc[s->n]), "unknown_service:%s", name);
		a[n++] = (struct qp_otlp_attr){ .key = "service.name", .str = s->svc[s->n] };
	}
	a[n++] = (struct qp_otlp_attr){ .key = "host.name", .str = p->host };
	a[n++] = (struct qp_otlp_attr){ .key = "process.pid", .num = pid };
	a[n++] = (struct qp_otlp_attr){ .key = "process.executable.name", .str = s->exe[s->n] };
	for (i = 0; i < p->nextra; i++)
		a[n++] = p->extra[i];
	s->r[s->n] = (struct qp_otlp_resource){ .pid = pid, .attrs = a, .nattrs = n, .profiles = s->prof[s->n] };
	return &s->r[s->n++];
}

static void count(struct qp_otlp *p, uint64_t *c, uint64_t n)
{
	pthread_mutex_lock(&p->lock);
	*c += n;
	pthread_mutex_unlock(&p->lock);
}

/* Profile OP (of PROF) in the resource of each process with samples in it;
 * the samples of processes beyond the resources' room are dropped, counted
 * (rows), and their counts returned. */
static uint64_t add_profile(struct qp_otlp *p, struct res_set *s, const struct qp_cpu_profile *prof,
			const struct qp_otlp_profile *op)
{
	uint64_t lost = 0;
	size_t i, k;

	for (i = 0; i < prof->nsamples; i++) {
		struct qp_otlp_resource *r = resource(p, s, prof->samples[i].pid, prof->samples[i].comm);

		if (!r) {
			count(p, &p->dropped_processes, 1);
			lost += prof->samples[i].count;
			continue;
		}
		for (k = 0; k < r->nprofiles; k++)
			if (r->profiles[k].p == op->p && r->profiles[k].value == op->value)
				break;
		if (k == r->nprofiles && k < QP_ARRAY_SIZE(s->prof[0]))
			s->prof[r - s->r][r->nprofiles++] = *op;
	}
	return lost;
}


/* LEN bytes of BODY gzipped (RFC 1952), in a new buffer of *ZLEN bytes;
 * NULL when out of memory. */
static char *gzip(const char *body, size_t len, size_t *zlen)
{
	z_stream z = { 0 };
	uLong cap = compressBound((uLong)len) + 32;	/* the gzip header and trailer */
	char *out;

	if (len > UINT32_MAX || !(out = malloc(cap)))
		return NULL;
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(out);
		return NULL;
	}
	z.next_in = (Bytef *)body;
	z.avail_in = (uInt)len;
	z.next_out = (Bytef *)out;
	z.avail_out = (uInt)cap;
	if (deflate(&z, Z_FINISH) != Z_STREAM_END) {
		deflateEnd(&z);
		free(out);
		return NULL;
	}
	*zlen = z.total_out;
	deflateEnd(&z);
	return out;
}

/* The interval since BASE of the CPU (OFF: off-CPU) samples into PROF;
 * BASE becomes now. false when there is nothing (first read, no sampler). */
static bool cpu_interval(struct qp_otlp *p, bool off, struct qp_cpu_profile *prof)
{
	struct qprofd *d = p->d;
	struct qp_cpu_snapshot now = { 0 }, *base = off ? &p->off_base : &p->cpu_base;
	bool *have = off ? &p->have_off : &p->have_cpu;
	struct qp_cpu_query q = { 0 };
	struct qp_cpu *cpu = qprofd_cpu(d);
	int ret;

	if (!cpu || (off && qp_cpu_off_error(cpu)))
		return false;
	if ((off ? qp_cpu_read_off : qp_cpu_read)(cpu, &now)) {
		count(p, &p->build_errors, 1);
		return false;
	}
	if (!*have) {
		*base = now;
		*have = true;
		return false;
	}
	q.period_ns = off ? 1 : 1000000000ull / (d->frequency_hz ? d->frequency_hz : 99);
	q.duration_ns = now.mono_ns - base->mono_ns;
	q.time_ns = qp_realtime_ns() - q.duration_ns;
	ret = qp_cpu_build(cpu, d->reg.sym, &d->reg, &now, base, &q, prof);
	qp_cpu_snapshot_free(base);
	*base = now;
	if (ret) {
		count(p, &p->build_errors, 1);
		return false;
	}
	qp_cpu_profile_hide_kernel(prof);	/* KASLR: never off the host */
	return true;
}

static void build_once(struct qp_otlp *p)
{
	static const char *const heap_names[] = { "inuse_space", "inuse_objects", "alloc_space", "alloc_objects" };
	struct qp_cpu_profile cpu, off, heap[64];
	struct res_set *s = calloc(1, sizeof(*s));
	struct qp_model_src src;
	struct qp_buf out;
	uint64_t t0 = thread_cpu_ns(), samples = 0;
	bool have_cpu, have_off;
	size_t nheap = 0, i, k;
	int *pids = NULL;
	long npids;

	if (!s) {
		count(p, &p->build_errors, 1);
		return;
	}
	memset(&cpu, 0, sizeof(cpu));
	memset(&off, 0, sizeof(off));
	have_cpu = cpu_interval(p, false, &cpu);
	have_off = cpu_interval(p, true, &off);
	if (have_cpu) {
		struct qp_otlp_profile op = { .p = &cpu, .weight = 1, .type = "samples", .unit = "count",
					      .period_type = "cpu", .period_unit = "nanoseconds",
					      .period = (int64_t)cpu.period_ns };

		uint64_t lost = add_profile(p, s, &cpu, &op);

		samples += qp_cpu_profile_total(&cpu) - lost;
		count(p, &p->dropped_samples, lost);
		count(p, &p->built_samples, lost);
	}
	if (have_off) {
		struct qp_otlp_profile op = { .p = &off, .weight = 1, .type = "off_cpu", .unit = "nanoseconds",
					      .period_type = "off_cpu", .period_unit = "nanoseconds", .period = 1 };

		add_profile(p, s, &off, &op);
	}
	qprofd_model_src(p->d, NULL, &src);
	npids = p->d->heap ? qp_heap_pids(p->d->heap, &pids) : 0;
	for (i = 0; npids > 0 && i < (size_t)npids && nheap < QP_ARRAY_SIZE(heap); i++) {
		struct qp_heap_query hq = { .pid = pids[i], .kind = QP_HEAP_INUSE, .pprof = true };
		char note[256], msg[256];
		struct qp_cpu_profile *h = &heap[nheap];

		if (qp_heap_window(&src, &hq, h, note, sizeof(note), msg, sizeof(msg)))
			continue;	/* nothing to say of this one (not traced, no data) */
		nheap++;
		for (k = 0; k < QP_ARRAY_SIZE(heap_names); k++) {
			struct qp_otlp_profile op = { .p = h, .type = heap_names[k], .period_type = "space",
						      .period_unit = "bytes", .period = (int64_t)h->period_ns };
			size_t v;

			for (v = 0; v < h->nvalues && strcmp(h->value_types[v].type, heap_names[k]); v++)
				;
			if (v == h->nvalues)
				continue;
			op.value = v;
			op.unit = h->value_types[v].unit;
			add_profile(p, s, h, &op);
		}
	}
	free(pids);
	qp_buf_init(&out);
	if (s->n && !qp_export_otlp(s->r, s->n, QPROF_VERSION, &out)) {
		size_t len = 0, zlen = 0;
		char *body = qp_buf_steal(&out, &len), *z = body ? gzip(body, len, &zlen) : NULL;

		free(body);
		pthread_mutex_lock(&p->lock);
		p->builds++;
		p->built_samples += samples;
		p->built_bytes += len;
		p->gzipped_bytes += zlen;
		p->build_cpu_ns += thread_cpu_ns() - t0;
		pthread_mutex_unlock(&p->lock);
		if (z)
			otlp_enqueue(p, z, zlen, samples);
		else
			count(p, &p->build_errors, 1);
	} else if (s->n) {
		count(p, &p->build_errors, 1);
	}
	qp_buf_free(&out);
	if (have_cpu)
		qp_cpu_profile_free(&cpu);
	if (have_off)
		qp_cpu_profile_free(&off);
	for (i = 0; i < nheap; i++)
		qp_cpu_profile_free(&heap[i]);
	free(s);
}

static void *builder_main(void *arg)
{
	struct qp_otlp *p = arg;
	uint64_t next;

	build_once(p);	/* the first snapshots: the first push covers the first interval */
	next = qp_now_ns() + p->interval_s * 1000000000ull;
	pthread_mutex_lock(&p->lock);
	while (otlp_wait_until(p, next)) {
		pthread_mutex_unlock(&p->lock);
		next += p->interval_s * 1000000000ull;
		build_once(p);
		if (next < qp_now_ns())	/* a build longer than the interval: no catching up */
			next = qp_now_ns() + p->interval_s * 1000000000ull;
		pthread_mutex_lock(&p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* ---- start, stop, status ---- */

/* OTEL_RESOURCE_ATTRIBUTES: "k=v,k2=v2", values percent-decoded; its
 * service.name is the default service name. */
static void env_attributes(struct qp_otlp *p)
{
	const char *env = getenv("OTEL_RESOURCE_ATTRIBUTES");
	char *s, *save = NULL, *kv;

	if (!env || strlen(env) >= sizeof(p->env_attrs))
		return;
	snprintf(p->env_attrs, sizeof(p->env_attrs), "%s", env);
	for (s = p->env_attrs; (kv = strtok_r(s, ",", &save)); s = NULL) {
		char *eq = strchr(kv, '='), *r, *w;

		if (!eq || eq == kv)
			continue;
		*eq = '\0';
		for (r = w = eq + 1; *r; r++) {	/* percent-decoding */
			unsigned int x;

			if (r[0] == '%' && r[1] && r[2] && sscanf(r + 1, "%2x", &x) == 1) {
				*w++ = (char)x;
				r += 2;
			} else {
				*w++ = *r;
			}
		}
		*w = '\0';
		while (*kv == ' ')
			kv++;
		if (!strcmp(kv, "service.name")) {
			if (!p->service[0])
				snprintf(p->service, sizeof(p->service), "%s", eq + 1);
			continue;
		}
		if (!strcmp(kv, "host.name") || !strcmp(kv, "process.pid") ||
		    !strcmp(kv, "process.executable.name") || p->nextra == MAX_ATTRS)
			continue;	/* qprofd's own, per process */
		p->extra[p->nextra++] = (struct qp_otlp_attr){ .key = kv, .str = eq + 1 };
	}
}

int qp_otlp_start(struct qprofd *d, const struct qp_fleet_opts *o, struct qp_otlp **out)
{
	struct qp_otlp *p;
	const char *env;
	char h[1200];
	size_t i, n;

	*out = NULL;
	if (!o->otlp_endpoint)
		return 0;
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		fprintf(stderr, "qprofd: --otlp-endpoint: libcurl cannot start\n");
		return -EIO;
	}
	p = calloc(1, sizeof(*p));
	if (!p || !(p->q = calloc(o->otlp_queue, sizeof(*p->q)))) {
		free(p);
		fprintf(stderr, "qprofd: out of memory\n");
		return -ENOMEM;
	}
	p->d = d;
	p->qcap = o->otlp_queue;
	p->interval_s = o->otlp_interval_s;
	p->timeout_ms = o->otlp_timeout_ms;
	snprintf(p->endpoint, sizeof(p->endpoint), "%s", o->otlp_endpoint);
	n = strlen(p->endpoint);
	while (n && p->endpoint[n - 1] == '/')
		p->endpoint[--n] = '\0';
	snprintf(p->url, sizeof(p->url), "%s/v1development/profiles", p->endpoint);
	if (gethostname(p->host, sizeof(p->host) - 1))
		snprintf(p->host, sizeof(p->host), "unknown");
	if (o->service_name)
		snprintf(p->service, sizeof(p->service), "%s", o->service_name);
	else if ((env = getenv("OTEL_SERVICE_NAME")) && *env)
		snprintf(p->service, sizeof(p->service), "%s", env);
	env_attributes(p);
	p->headers = curl_slist_append(NULL, "Content-Type: application/x-protobuf");
	if (p->headers && !curl_slist_append(p->headers, "Content-Encoding: gzip")) {
		curl_slist_free_all(p->headers);
		p->headers = NULL;
	}
	for (i = 0; i < o->notlp_headers && p->headers; i++) {
		const char *eq = strchr(o->otlp_headers[i], '=');

		snprintf(h, sizeof(h), "%.*s: %s", (int)(eq - o->otlp_headers[i]), o->otlp_headers[i], eq + 1);
		struct curl_slist *nl = curl_slist_append(p->headers, h);

		if (!nl) {
			curl_slist_free_all(p->headers);
			p->headers = NULL;
		} else {
			p->headers = nl;
		}
	}
	pthread_mutex_init(&p->lock, NULL);
	qp_cond_init_monotonic(&p->cond);
	if (!p->headers) {
		qp_otlp_stop(p);
		fprintf(stderr, "qprofd: out of memory\n");
		return -ENOMEM;
	}
	p->sender_on = !pthread_create(&p->sender, NULL, otlp_sender_main, p);
	p->builder_on = p->sender_on && !pthread_create(&p->builder, NULL, builder_main, p);
	if (!p->builder_on) {
		qp_otlp_stop(p);
		fprintf(stderr, "qprofd: cannot start the OTLP threads\n");
		return -EAGAIN;
	}
	qp_info("pushing profiles to %s every %u s", p->url, p->interval_s);
	*out = p;
	return 0;
}

void qp_otlp_stop(struct qp_otlp *p)
{
	size_t i;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	if (p->builder_on)
		pthread_join(p->builder, NULL);
	if (p->sender_on)
		pthread_join(p->sender, NULL);
	for (i = 0; i < p->qn; i++)
		free(p->q[(p->qhead + i) % p->qcap].body);
	if (p->have_cpu)
		qp_cpu_snapshot_free(&p->cpu_base);
	if (p->have_off)
		qp_cpu_snapshot_free(&p->off_base);
	curl_slist_free_all(p->headers);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	free(p->q);
	free(p);
	curl_global_cleanup();
}

void qp_otlp_status_json(struct qp_otlp *p, struct qp_json *j)
{
	qp_json_key(j, "otlp");
	qp_json_obj_begin(j);
	qp_json_kv_bool(j, "enabled", p != NULL);
	if (p) {
		pthread_mutex_lock(&p->lock);
		qp_json_kv_str(j, "url", p->url);
		qp_json_kv_u64(j, "interval_s", p->interval_s);
		qp_json_kv_u64(j, "builds", p->builds);
		qp_json_kv_u64(j, "built_samples", p->built_samples);
		qp_json_kv_u64(j, "built_bytes", p->built_bytes);
		qp_json_kv_str(j, "compression", "gzip");
		qp_json_kv_u64(j, "gzipped_bytes", p->gzipped_bytes);
		qp_json_kv_u64(j, "build_cpu_us", p->build_cpu_ns / 1000);
		qp_json_kv_u64(j, "build_errors", p->build_errors);
		qp_json_kv_u64(j, "pushes", p->pushes);
		qp_json_kv_u64(j, "pushed_bytes", p->pushed_bytes);
		qp_json_kv_u64(j, "pushed_samples", p->pushed_samples);
		qp_json_kv_u64(j, "failed_attempts", p->failures);
		qp_json_kv_u64(j, "retries", p->retries);
		qp_json_kv_u64(j, "throttled", p->throttled);
		qp_json_kv_u64(j, "retry_after_honoured", p->retry_after_honoured);
		qp_json_kv_u64(j, "last_retry_after_s", p->last_retry_after_s);
		qp_json_kv_u64(j, "queued", p->qn);
		qp_json_kv_u64(j, "queue_max", p->qcap);
		qp_json_kv_u64(j, "dropped", p->dropped);
		qp_json_kv_u64(j, "dropped_samples", p->dropped_samples);
		qp_json_kv_u64(j, "dropped_queue_full", p->dropped_full);
		qp_json_kv_u64(j, "dropped_after_retries", p->dropped_tries);
		qp_json_kv_u64(j, "dropped_rejected", p->dropped_rejected);
		qp_json_kv_u64(j, "dropped_samples_processes", p->dropped_processes);
		qp_json_kv_i64(j, "last_http_status", p->last_status);
		if (p->last_ok_ns)
			qp_json_kv_u64(j, "last_push_age_ms", (qp_now_ns() - p->last_ok_ns) / 1000000);
		else
			qp_json_kv_null(j, "last_push_age_ms");
		qp_json_kv_str(j, "last_error", p->last_error[0] ? p->last_error : NULL);
		pthread_mutex_unlock(&p->lock);
	}
	qp_json_obj_end(j);
}
