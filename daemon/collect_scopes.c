/* collect_scopes.c - loads bpf/scopes.bpf.c through its skeleton, attaches
 * it to USDT sites with libbpf's USDT support (which also raises semaphores),
 * and reads its per-CPU maps back into plain snapshots for the model. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "collect_scopes.h"
#include "elf_probes.h"
#include "log.h"
#include "scopes.skel.h"
#include "usdt_spec.h"

#define SPEC_IDS 1024		/* BPF_USDT_MAX_SPEC_CNT in scopes.bpf.c */
/* Kernel memory reserved up front for scope aggregates (the preallocated
 * map scope_stats: 8.5 KiB per entry per possible CPU); never fewer than
 * PREALLOC_MIN entries, and QPROF_PREALLOC_SITES in the environment sets the
 * number. The rest of --max-sites is allocated on demand. */
#define PREALLOC_BYTES (32u << 20)
#define PREALLOC_MIN 16u
#define ATTACH_UPROBE_MULTI 48	/* BPF_TRACE_UPROBE_MULTI (kernel >= 6.6) */

struct qp_scopes {
	struct scopes *skel;
	int ncpus;
	uint64_t epoch;		/* last attach epoch handed out */
	bool multi;		/* programs loaded for uprobe-multi links */
	unsigned char spec_used[SPEC_IDS];
};

/* One attachment of one probe name in one file: a uprobe-multi link and the
 * spec ids it holds in __bpf_usdt_specs, or a libbpf USDT link. */
struct qp_scope_link {
	struct qp_scopes *owner;
	int fd;
	struct bpf_link *blink;
	int *specs;
	size_t nspecs;
};

int qp_scopes_open(struct qp_scopes **out, unsigned int max_sites, bool allow_multi, char *err,
		   size_t errlen)
{
	struct qp_scopes *s;
	size_t per_entry;
	unsigned int pre;
	const char *env;
	int ret;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->ncpus = libbpf_num_possible_cpus();
	if (s->ncpus <= 0) {
		snprintf(err, errlen, "cannot count possible CPUs: %s", strerror(-s->ncpus));
		ret = s->ncpus ? s->ncpus : -EINVAL;
		goto fail;
	}
	per_entry = ((sizeof(struct scope_stats) + 7) & ~(size_t)7) * (size_t)s->ncpus;
	pre = PREALLOC_BYTES / per_entry;
	if (pre < PREALLOC_MIN)
		pre = PREALLOC_MIN;
	env = getenv("QPROF_PREALLOC_SITES");
	if (env && *env) {
		char *end;
		unsigned long v;

		errno = 0;
		v = strtoul(env, &end, 10);
		if (errno || *end || v < 1 || v > (1ul << 18)) {
			ret = -EINVAL;
			snprintf(err, errlen, "QPROF_PREALLOC_SITES must be 1..262144, not '%s'", env);
			goto fail;
		}
		pre = (unsigned int)v;
	}
	if (pre > max_sites)
		pre = max_sites;
	/* uprobe-multi links first: about 30 ns cheaper per probe hit than a
	 * perf-event uprobe each; an older kernel refuses the attach type */
	for (int attempt = allow_multi ? 0 : 1; attempt < 2; attempt++) {
		s->multi = attempt == 0;
		s->skel = scopes__open();
		if (!s->skel) {
			ret = -errno;
			snprintf(err, errlen, "cannot open the BPF object: %s", strerror(errno));
			goto fail;
		}
		bpf_map__set_max_entries(s->skel->maps.scope_stats, pre);
		bpf_map__set_max_entries(s->skel->maps.scope_stats_more,
					 max_sites > pre ? max_sites - pre : 1);
		if (s->multi) {
			bpf_program__set_expected_attach_type(s->skel->progs.scope_enter, ATTACH_UPROBE_MULTI);
			bpf_program__set_expected_attach_type(s->skel->progs.scope_exit, ATTACH_UPROBE_MULTI);
			bpf_program__set_expected_attach_type(s->skel->progs.mark_probe, ATTACH_UPROBE_MULTI);
			bpf_program__set_expected_attach_type(s->skel->progs.value_probe, ATTACH_UPROBE_MULTI);
			bpf_program__set_expected_attach_type(s->skel->progs.log_probe, ATTACH_UPROBE_MULTI);
			bpf_program__set_expected_attach_type(s->skel->progs.span_begin, ATTACH_UPROBE_MULTI);
			bpf_program__set_expected_attach_type(s->skel->progs.span_end, ATTACH_UPROBE_MULTI);
			bpf_program__set_expected_attach_type(s->skel->progs.usdt_count, ATTACH_UPROBE_MULTI);
		}
		ret = scopes__load(s->skel);
		if (!ret)
			break;
		scopes__destroy(s->skel);
		s->skel = NULL;
		if (!s->multi) {
			snprintf(err, errlen, "cannot load the BPF programs: %s", strerror(-ret));
			goto fail;
		}
		qp_info("uprobe-multi links unavailable (%s): using perf-event uprobes", strerror(-ret));
	}
	if (s->multi && bpf_map__value_size(s->skel->maps.__bpf_usdt_specs) != sizeof(struct qp_usdt_spec)) {
		ret = -EINVAL;
		snprintf(err, errlen, "libbpf's USDT spec layout is not the one qprofd writes");
		goto fail;
	}
	qp_info("scope aggregates: %u preallocated (%zu KiB), %u more allocated on demand", pre,
		pre * per_entry >> 10, max_sites > pre ? max_sites - pre : 0);
	s->skel->links.thread_exit = bpf_program__attach(s->skel->progs.thread_exit);
	if (!s->skel->links.thread_exit) {
		ret = -errno;
		snprintf(err, errlen, "cannot attach to sched_process_exit: %s", strerror(errno));
		goto fail;
	}
	*out = s;
	return 0;
fail:
	qp_scopes_close(s);
	return ret;
}

void qp_scopes_close(struct qp_scopes *s)
{
	if (!s)
		return;
	scopes__destroy(s->skel);
	free(s);
}

int qp_scopes_thread_stacks_fd(struct qp_scopes *s)
{
	return bpf_map__fd(s->skel->maps.thread_stacks);
}

uint64_t qp_scopes_new_epoch(struct qp_scopes *s)
{
	return ++s->epoch;
}

bool qp_scopes_multi(const struct qp_scopes *s)
{
	return s->multi;
}

static int push_link(struct qp_scope_link ***links, size_t *n, struct qp_scope_link *l)
{
	struct qp_scope_link **v = realloc(*links, (*n + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	v[(*n)++] = l;
	*links = v;
	return 0;
}

static void link_free(struct qp_scope_link *l)
{
	size_t i;

	if (!l)
		return;
	if (l->fd >= 0)
		close(l->fd);
	bpf_link__destroy(l->blink);
	for (i = 0; i < l->nspecs; i++)
		l->owner->spec_used[l->specs[i]] = 0;
	free(l->specs);
	free(l);
}

void qp_scopes_detach_links(struct qp_scope_link **links, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		link_free(links[i]);
}

/* Notes PROVIDER:NAME of ELF refused by qp_elf_check_sites. */
static size_t bad_sites(const struct qp_elf_probes *elf, const char *provider, const char *name)
{
	size_t k, n = 0;

	for (k = 0; k < elf->nnotes; k++)
		n += elf->notes[k].bad && !strcmp(elf->notes[k].provider, provider) &&
		     !strcmp(elf->notes[k].name, name);
	return n;
}

/* File offset of link-time address ADDR through the PT_LOAD segments. */
static int addr_to_offset(const struct qp_elf_probes *elf, uint64_t addr, uint64_t *off)
{
	size_t i;

	for (i = 0; i < elf->nsegs; i++) {
		const struct qp_elf_segment *g = &elf->segs[i];

		if (addr >= g->vaddr && addr - g->vaddr < g->filesz) {
			*off = addr - g->vaddr + g->offset;
			return 0;
		}
	}
	return -ENOENT;
}

/* A spec id for SPEC: one already used by this link with the same bytes,
 * else a free one, written to the map. */
static int spec_id(struct qp_scopes *s, struct qp_scope_link *l, const struct qp_usdt_spec *spec)
{
	int fd = bpf_map__fd(s->skel->maps.__bpf_usdt_specs);
	struct qp_usdt_spec cur;
	size_t i;
	int id, *v;

	for (i = 0; i < l->nspecs; i++) {
		if (!bpf_map_lookup_elem(fd, &l->specs[i], &cur) && !memcmp(&cur, spec, sizeof(cur)))
			return l->specs[i];
	}
	for (id = 0; id < SPEC_IDS && s->spec_used[id]; id++)
		;
	if (id == SPEC_IDS)
		return -ENOSPC;
	if (bpf_map_update_elem(fd, &id, spec, BPF_ANY))
		return -errno;
	v = realloc(l->specs, (l->nspecs + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	l->specs = v;
	l->specs[l->nspecs++] = id;
	s->spec_used[id] = 1;
	return id;
}

/* link_create for BPF_TRACE_UPROBE_MULTI, laid out as in the kernel's
 * union bpf_attr (libbpf 1.1 predates it). */
struct uprobe_multi_attr {
	uint32_t prog_fd, target_fd, attach_type, flags;
	uint64_t path, offsets, ref_ctr_offsets, cookies;
	uint32_t cnt, multi_flags, pid;
	uint32_t pad[9];
};

static int attach_multi(struct qp_scopes *s, struct bpf_program *prog, const char *provider,
			const char *name, bool parse_args, int pid, const char *path,
			const struct qp_elf_probes *elf, uint64_t cookie, struct qp_scope_link **out,
			char *err, size_t errlen)
{
	struct qp_scope_link *l = calloc(1, sizeof(*l));
	uint64_t *offs = NULL, *refs = NULL, *cookies = NULL;
	struct uprobe_multi_attr a;
	bool any_ref = false;
	size_t i, n = 0;
	int ret;

	*out = NULL;
	if (!l)
		return -ENOMEM;
	l->owner = s;
	l->fd = -1;
	offs = calloc(elf->nnotes + 1, sizeof(*offs));
	refs = calloc(elf->nnotes + 1, sizeof(*refs));
	cookies = calloc(elf->nnotes + 1, sizeof(*cookies));
	if (!offs || !refs || !cookies) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < elf->nnotes; i++) {
		const struct qp_usdt_note *nt = &elf->notes[i];
		struct qp_usdt_spec spec;
		int id;

		if (strcmp(nt->provider, provider) || strcmp(nt->name, name) || nt->bad)
			continue;	/* a refused site (elf_file.c) is never probed */
		if (addr_to_offset(elf, nt->pc, &offs[n]) ||
		    (nt->sema && addr_to_offset(elf, nt->sema, &refs[n]))) {
			snprintf(err, errlen, "%s: %s:%s at 0x%llx is outside the file's segments", path,
				 provider, name, (unsigned long long)nt->pc);
			ret = -EINVAL;
			goto out;
		}
		any_ref |= nt->sema != 0;
		memset(&spec, 0, sizeof(spec));
		if (parse_args && qp_usdt_parse_args(nt->args, &spec)) {
			snprintf(err, errlen, "%s: %s:%s has arguments qprofd cannot read: '%s'", path,
				 provider, name, nt->args);
			ret = -EINVAL;
			goto out;
		}
		spec.usdt_cookie = cookie;
		id = spec_id(s, l, &spec);
		if (id < 0) {
			snprintf(err, errlen, "no room for USDT argument specs (%d in use)", SPEC_IDS);
			ret = id;
			goto out;
		}
		cookies[n++] = (uint64_t)id;
	}
	if (!n) {
		ret = 0; /* this file has no such probe */
		goto out;
	}
	memset(&a, 0, sizeof(a));
	a.prog_fd = (uint32_t)bpf_program__fd(prog);
	a.attach_type = ATTACH_UPROBE_MULTI;
	a.path = (uint64_t)(uintptr_t)path;
	a.offsets = (uint64_t)(uintptr_t)offs;
	a.ref_ctr_offsets = any_ref ? (uint64_t)(uintptr_t)refs : 0;
	a.cookies = (uint64_t)(uintptr_t)cookies;
	a.cnt = (uint32_t)n;
	a.pid = pid > 0 ? (uint32_t)pid : 0;
	l->fd = (int)syscall(SYS_bpf, BPF_LINK_CREATE, &a, sizeof(a));
	if (l->fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot attach %s:%s in %s: %s", provider, name, path, strerror(errno));
		goto out;
	}
	*out = l;
	l = NULL;
	ret = 1;
out:
	link_free(l);
	free(offs);
	free(refs);
	free(cookies);
	return ret;
}

int qp_scopes_attach(struct qp_scopes *s, int pid, const char *path, const struct qp_elf_probes *elf,
		     uint64_t epoch, struct qp_scope_link ***links, size_t *nlinks, char *err,
		     size_t errlen)
{
	LIBBPF_OPTS(bpf_usdt_opts, opts);
	/* exits first: an exit seen without its enter is counted and harmless,
	 * an enter seen without its exit would sit at the bottom of the stack */
	struct bpf_program *progs[] = {
		s->skel->progs.scope_exit, s->skel->progs.scope_enter, s->skel->progs.mark_probe,
		s->skel->progs.value_probe, s->skel->progs.log_probe,
	};
	const char *names[] = { "scope_exit", "scope_enter", "mark", "value", "log" };
	uint64_t cookie = QPROF_COOKIE(epoch, pid < 0, 0);
	size_t first = *nlinks, k;
	int i, made = 0, ret;

	opts.usdt_cookie = cookie;
	for (i = 0; i < (int)(sizeof(names) / sizeof(names[0])); i++) {
		struct qp_scope_link *l = NULL;
		bool present = false;

		for (k = 0; k < elf->nnotes && !present; k++)
			present = !strcmp(elf->notes[k].provider, "qprof") && !strcmp(elf->notes[k].name, names[i]);
		if (!present)
			continue;
		if (!s->multi && bad_sites(elf, "qprof", names[i])) {
			/* libbpf attaches every site of a name: none, then */
			ret = -EILSEQ;
			snprintf(err, errlen, "%s: %zu qprof:%s site(s) are not the nop their notes promise",
				 path, bad_sites(elf, "qprof", names[i]), names[i]);
			goto undo;
		}
		if (s->multi) {
			ret = attach_multi(s, progs[i], "qprof", names[i], true, pid, path, elf, cookie, &l,
					   err, errlen);
			if (ret < 0)
				goto undo;
			if (!l)
				continue;
		} else {
			l = calloc(1, sizeof(*l));
			if (!l) {
				ret = -ENOMEM;
				snprintf(err, errlen, "out of memory");
				goto undo;
			}
			l->owner = s;
			l->fd = -1;
			l->blink = bpf_program__attach_usdt(progs[i], pid, path, "qprof", names[i], &opts);
			if (!l->blink) {
				ret = -errno;
				free(l);
				snprintf(err, errlen, "cannot attach qprof:%s in %s: %s", names[i], path,
					 strerror(-ret));
				goto undo;
			}
		}
		ret = push_link(links, nlinks, l);
		if (ret) {
			link_free(l);
			snprintf(err, errlen, "out of memory");
			goto undo;
		}
		made++;
	}
	return made;
undo:
	qp_scopes_detach_links(*links + first, *nlinks - first);
	*nlinks = first;
	return ret;
}

int qp_scopes_attach_usdt(struct qp_scopes *s, int pid, const char *path,
			  const struct qp_elf_probes *elf, uint64_t epoch, const struct qp_usdt_req *req,
			  struct qp_scope_link ***links, size_t *nlinks, char *err, size_t errlen)
{
	struct bpf_program *prog = req->role == QP_USDT_COUNT ? s->skel->progs.usdt_count :
				   req->role == QP_USDT_SPAN_BEGIN ? s->skel->progs.span_begin :
								     s->skel->progs.span_end;
	uint64_t cookie = QPROF_COOKIE(epoch, pid < 0, req->id);
	struct qp_scope_link *l = NULL;
	bool present = false;
	size_t k;
	int ret;

	for (k = 0; k < elf->nnotes && !present; k++)
		present = !strcmp(elf->notes[k].provider, req->provider) &&
			  !strcmp(elf->notes[k].name, req->name);
	if (!present)
		return 0;
	if (!s->multi && bad_sites(elf, req->provider, req->name)) {
		snprintf(err, errlen, "%s: %zu %s:%s site(s) are not the nop their notes promise", path,
			 bad_sites(elf, req->provider, req->name), req->provider, req->name);
		return -EILSEQ;
	}
	if (s->multi) {
		ret = attach_multi(s, prog, req->provider, req->name, false, pid, path, elf, cookie, &l,
				   err, errlen);
		if (ret <= 0)
			return ret;
	} else {
		LIBBPF_OPTS(bpf_usdt_opts, opts, .usdt_cookie = cookie);

		l = calloc(1, sizeof(*l));
		if (!l)
			return -ENOMEM;
		l->owner = s;
		l->fd = -1;
		l->blink = bpf_program__attach_usdt(prog, pid, path, req->provider, req->name, &opts);
		if (!l->blink) {
			ret = -errno;
			free(l);
			snprintf(err, errlen, "cannot attach %s:%s in %s: %s", req->provider, req->name, path,
				 strerror(-ret));
			return ret;
		}
	}
	ret = push_link(links, nlinks, l);
	if (ret) {
		link_free(l);
		return ret;
	}
	return 1;
}

int qp_probe_counts_read(struct qp_scopes *s, int pid, struct qp_probe_row **rows, size_t *n)
{
	int fd = bpf_map__fd(s->skel->maps.probe_counts);
	__u64 *pc = calloc((size_t)s->ncpus, sizeof(*pc));
	struct probe_key key, next;
	struct qp_probe_row *v = NULL, *nv;
	size_t cnt = 0, cap = 0, steps = 0;
	void *prev = NULL;
	int cpu;

	*rows = NULL;
	*n = 0;
	if (!pc)
		return -ENOMEM;
	while (bpf_map_get_next_key(fd, prev, &next) == 0 && ++steps < (1u << 22)) {
		key = next;
		prev = &key;
		if (pid > 0 && next.tgid != (uint32_t)pid)
			continue;
		if (bpf_map_lookup_elem(fd, &next, pc))
			continue;
		if (cnt == cap) {
			cap = cap ? cap * 2 : 32;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				free(pc);
				return -ENOMEM;
			}
			v = nv;
		}
		v[cnt].tgid = next.tgid;
		v[cnt].id = next.id;
		v[cnt].count = 0;
		for (cpu = 0; cpu < s->ncpus; cpu++)
			v[cnt].count += pc[cpu];
		cnt++;
	}
	free(pc);
	*rows = v;
	*n = cnt;
	return 0;
}

int qp_scopes_exclude(struct qp_scopes *s, uint32_t pid, bool excluded)
{
	int fd = bpf_map__fd(s->skel->maps.excluded);
	__u8 one = 1;

	if (excluded)
		return bpf_map_update_elem(fd, &pid, &one, BPF_ANY) ? -errno : 0;
	if (bpf_map_delete_elem(fd, &pid) && errno != ENOENT)
		return -errno;
	return 0;
}

static int cmp_key(const struct scope_key *a, const struct scope_key *b)
{
	if (a->tgid != b->tgid)
		return a->tgid < b->tgid ? -1 : 1;
	if (a->site != b->site)
		return a->site < b->site ? -1 : 1;
	if (a->parent != b->parent)
		return a->parent < b->parent ? -1 : 1;
	return 0;
}

static int cmp_row(const void *a, const void *b)
{
	return cmp_key(&((const struct qp_scope_row *)a)->key, &((const struct qp_scope_row *)b)->key);
}

/* All keys of a map whose keys start with the tgid (of PID when pid > 0),
 * as an array of KSZ-byte keys. Keys deleted while we walk make
 * get_next_key restart from the beginning; a cap bounds that. */
static int map_keys(int fd, size_t ksz, int pid, void **out, size_t *n)
{
	unsigned char key[64], next[64], *v = NULL, *nv;
	size_t cap = 0, cnt = 0, steps = 0;
	void *prev = NULL;
	uint32_t tgid;

	if (ksz > sizeof(key))
		return -EINVAL;
	while (bpf_map_get_next_key(fd, prev, next) == 0 && ++steps <= (1u << 22)) {
		memcpy(&tgid, next, sizeof(tgid));
		if (pid <= 0 || tgid == (uint32_t)pid) {
			if (cnt == cap) {
				cap = cap ? cap * 2 : 64;
				nv = realloc(v, cap * ksz);
				if (!nv) {
					free(v);
					return -ENOMEM;
				}
				v = nv;
			}
			memcpy(v + cnt++ * ksz, next, ksz);
		}
		memcpy(key, next, ksz);
		prev = key;
	}
	*out = v;
	*n = cnt;
	return 0;
}

static int list_keys(int fd, int pid, struct scope_key **out, size_t *n)
{
	return map_keys(fd, sizeof(**out), pid, (void **)out, n);
}

int qp_scopes_forget(struct qp_scopes *s, uint32_t pid)
{
	int fds[2] = { bpf_map__fd(s->skel->maps.scope_stats),
		       bpf_map__fd(s->skel->maps.scope_stats_more) };
	struct scope_key *keys;
	size_t n, i;
	int ret, m;

	/* its thread stacks need no cleaning: a later attach has a newer epoch */
	for (m = 0; m < 2; m++) {
		keys = NULL;
		n = 0;
		ret = list_keys(fds[m], (int)pid, &keys, &n);
		if (ret)
			return ret;
		for (i = 0; i < n; i++)
			bpf_map_delete_elem(fds[m], &keys[i]);
		free(keys);
	}
	return 0;
}

static void add_stats(struct scope_stats *to, const struct scope_stats *p)
{
	unsigned int b;

	if (!p->count)
		return;
	if (!to->count || p->min_ns < to->min_ns)
		to->min_ns = p->min_ns;
	if (p->max_ns > to->max_ns)
		to->max_ns = p->max_ns;
	to->count += p->count;
	to->sum_ns += p->sum_ns;
	for (b = 0; b < QPROF_HIST_BUCKETS; b++)
		to->hist[b] += p->hist[b];
}

/* Append to *ROWS (N of them) the aggregates of PID in map FD, summed over
 * CPUs; PERCPU holds one lookup's values. */
static int read_map_rows(struct qp_scopes *s, int fd, int pid, void *percpu,
			 struct qp_scope_row **rows, size_t *n)
{
	size_t vsz = (sizeof(struct scope_stats) + 7) & ~(size_t)7;
	struct scope_key *keys = NULL;
	struct qp_scope_row *v;
	size_t nk = 0, i;
	int ret, cpu;

	ret = list_keys(fd, pid, &keys, &nk);
	if (ret)
		return ret;
	v = realloc(*rows, (*n + nk + 1) * sizeof(*v));
	if (!v) {
		free(keys);
		return -ENOMEM;
	}
	*rows = v;
	for (i = 0; i < nk; i++) {
		struct qp_scope_row *r = &v[*n];

		if (bpf_map_lookup_elem(fd, &keys[i], percpu))
			continue; /* deleted meanwhile */
		memset(r, 0, sizeof(*r));
		r->key = keys[i];
		for (cpu = 0; cpu < s->ncpus; cpu++)
			add_stats(&r->stats, (const void *)((const char *)percpu + vsz * cpu));
		if (r->stats.count)
			(*n)++;
	}
	free(keys);
	return 0;
}

int qp_scopes_read(struct qp_scopes *s, int pid, struct qp_scope_snapshot *out)
{
	int fds[2] = { bpf_map__fd(s->skel->maps.scope_stats),
		       bpf_map__fd(s->skel->maps.scope_stats_more) };
	int cfd = bpf_map__fd(s->skel->maps.counters);
	size_t vsz = (sizeof(struct scope_stats) + 7) & ~(size_t)7;
	void *percpu;
	size_t n = 0, i, kept;
	__u64 cnt[256];
	__u32 c;
	int ret, cpu, m;

	memset(out, 0, sizeof(*out));
	percpu = malloc(vsz * s->ncpus);
	if (!percpu)
		return -ENOMEM;
	for (m = 0; m < 2; m++) {
		ret = read_map_rows(s, fds[m], pid, percpu, &out->rows, &n);
		if (ret)
			goto done;
	}
	if (!out->rows) {
		out->rows = calloc(1, sizeof(*out->rows));
		if (!out->rows) {
			ret = -ENOMEM;
			goto done;
		}
	}
	qsort(out->rows, n, sizeof(*out->rows), cmp_row);
	/* a key in both maps (made in the second while the first was full,
	 * then room freed by a detach): one row */
	for (i = 0, kept = 0; i < n; i++) {
		if (kept && !cmp_key(&out->rows[kept - 1].key, &out->rows[i].key)) {
			add_stats(&out->rows[kept - 1].stats, &out->rows[i].stats);
			continue;
		}
		if (kept != i)
			out->rows[kept] = out->rows[i];
		kept++;
	}
	out->n = kept;
	for (c = 0; c < QPROF_CNT__MAX && s->ncpus <= 256; c++) {
		if (bpf_map_lookup_elem(cfd, &c, cnt))
			continue;
		for (cpu = 0; cpu < s->ncpus; cpu++)
			out->counters[c] += cnt[cpu];
	}
	ret = 0;
done:
	free(percpu);
	if (ret)
		qp_scope_snapshot_free(out);
	return ret;
}

void qp_scope_snapshot_free(struct qp_scope_snapshot *snap)
{
	free(snap->rows);
	memset(snap, 0, sizeof(*snap));
}

const struct qp_scope_row *qp_scope_snapshot_find(const struct qp_scope_snapshot *snap,
						  const struct scope_key *key)
{
	size_t lo = 0, hi = snap->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = cmp_key(&snap->rows[mid].key, key);

		if (!c)
			return &snap->rows[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int qp_scopes_logs_fd(struct qp_scopes *s)
{
	return bpf_map__fd(s->skel->maps.logs);
}

static int cmp_mark_key(const struct mark_key *a, const struct mark_key *b)
{
	if (a->tgid != b->tgid)
		return a->tgid < b->tgid ? -1 : 1;
	return a->site < b->site ? -1 : a->site > b->site;
}

static int cmp_mark_row(const void *a, const void *b)
{
	return cmp_mark_key(&((const struct qp_mark_row *)a)->key, &((const struct qp_mark_row *)b)->key);
}

static int cmp_value_row(const void *a, const void *b)
{
	return cmp_mark_key(&((const struct qp_value_row *)a)->key, &((const struct qp_value_row *)b)->key);
}

static int list_mark_keys(int fd, int pid, struct mark_key **out, size_t *n)
{
	return map_keys(fd, sizeof(**out), pid, (void **)out, n);
}

int qp_marks_read(struct qp_scopes *s, int pid, struct qp_mark_row **rows, size_t *n)
{
	int fd = bpf_map__fd(s->skel->maps.mark_stats);
	struct mark_stats *pc = calloc((size_t)s->ncpus, sizeof(*pc));
	struct mark_key *keys = NULL;
	struct qp_mark_row *v = NULL;
	size_t nk = 0, i, kept = 0;
	int ret, cpu;

	*rows = NULL;
	*n = 0;
	if (!pc)
		return -ENOMEM;
	ret = list_mark_keys(fd, pid, &keys, &nk);
	if (!ret && nk && !(v = calloc(nk, sizeof(*v))))
		ret = -ENOMEM;
	for (i = 0; !ret && i < nk; i++) {
		if (bpf_map_lookup_elem(fd, &keys[i], pc))
			continue;
		v[kept].key = keys[i];
		for (cpu = 0; cpu < s->ncpus; cpu++) {
			v[kept].count += pc[cpu].count;
			if (pc[cpu].last_ns > v[kept].last_ns)
				v[kept].last_ns = pc[cpu].last_ns;
		}
		kept++;
	}
	free(keys);
	free(pc);
	if (ret) {
		free(v);
		return ret;
	}
	if (kept > 1)
		qsort(v, kept, sizeof(*v), cmp_mark_row);
	*rows = v;
	*n = kept;
	return 0;
}

struct hist_ent {
	struct value_bucket_key k;
	__u64 cnt;
};

static int cmp_hist(const void *a, const void *b)
{
	const struct value_bucket_key *x = &((const struct hist_ent *)a)->k;
	const struct value_bucket_key *y = &((const struct hist_ent *)b)->k;

	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	if (x->site != y->site)
		return x->site < y->site ? -1 : 1;
	return x->bucket < y->bucket ? -1 : x->bucket > y->bucket;
}

static int hist_add(struct hist_ent **v, size_t *n, size_t *cap, int pid,
		    const struct value_bucket_key *k, __u64 cnt)
{
	if (pid > 0 && k->tgid != (uint32_t)pid)
		return 0;
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 1024;
		struct hist_ent *nv = realloc(*v, nc * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = nc;
	}
	(*v)[*n].k = *k;
	(*v)[(*n)++].cnt = cnt;
	return 0;
}

/* Every histogram bucket of PID (all when <= 0). One batch syscall per few
 * thousand entries (a walk with get_next_key + lookup costs two per entry:
 * 350 ms for the example strategy's two values after 10 s); the walk stays
 * for kernels without batch operations on hash maps. */
static int hist_read(int hfd, int pid, struct hist_ent **out, size_t *n)
{
	struct value_bucket_key *keys = NULL, in_b, out_b, k, next;
	size_t cap = 0, batch = 4096, steps = 0;
	__u64 *vals = NULL, cnt;
	void *in = NULL, *prev = NULL;
	bool done;
	int ret = 0;

	*out = NULL;
	*n = 0;
	for (;;) {
		LIBBPF_OPTS(bpf_map_batch_opts, opts);
		__u32 got = (__u32)batch, i;

		if (!keys) {
			keys = malloc(batch * sizeof(*keys));
			vals = malloc(batch * sizeof(*vals));
			if (!keys || !vals) {
				ret = -ENOMEM;
				break;
			}
		}
		ret = bpf_map_lookup_batch(hfd, in, &out_b, keys, vals, &got, &opts) ? -errno : 0;
		if (ret == -ENOSPC && batch < (1u << 20)) {
			/* a hash bucket holds more than a batch: a bigger one */
			free(keys);
			free(vals);
			keys = NULL;
			vals = NULL;
			batch *= 4;
			continue;
		}
		if (ret && ret != -ENOENT)
			break;
		done = ret == -ENOENT;	/* the last batch (maybe with entries) */
		ret = 0;
		for (i = 0; i < got && !ret; i++)
			ret = hist_add(out, n, &cap, pid, &keys[i], vals[i]);
		if (ret || done)
			break;
		in_b = out_b;
		in = &in_b;
	}
	free(keys);
	free(vals);
	/* 524: the kernel's ENOTSUPP, when a map type has no batch operations */
	if (ret == -EINVAL || ret == -EOPNOTSUPP || ret == -524) {
		/* no batch lookup here: the walk */
		free(*out);
		*out = NULL;
		*n = cap = 0;
		ret = 0;
		while (bpf_map_get_next_key(hfd, prev, &next) == 0 && ++steps < (1u << 22)) {
			k = next;
			prev = &k;
			if (bpf_map_lookup_elem(hfd, &k, &cnt))
				continue;
			ret = hist_add(out, n, &cap, pid, &k, cnt);
			if (ret)
				break;
		}
	}
	if (ret) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return ret;
}

int qp_values_read(struct qp_scopes *s, int pid, struct qp_value_row **rows, size_t *n)
{
	int fd = bpf_map__fd(s->skel->maps.value_stats);
	int hfd = bpf_map__fd(s->skel->maps.value_hist);
	struct value_stats *pc = calloc((size_t)s->ncpus, sizeof(*pc));
	struct mark_key *keys = NULL;
	struct qp_value_row *v = NULL;
	struct hist_ent *h = NULL;
	size_t nk = 0, i, j, kept = 0, nh = 0;
	int ret, cpu;

	*rows = NULL;
	*n = 0;
	if (!pc)
		return -ENOMEM;
	ret = list_mark_keys(fd, pid, &keys, &nk);
	if (!ret && nk && !(v = calloc(nk, sizeof(*v))))
		ret = -ENOMEM;
	for (i = 0; !ret && i < nk; i++) {
		struct value_stats *t = &v[kept].st;

		if (bpf_map_lookup_elem(fd, &keys[i], pc))
			continue;
		v[kept].key = keys[i];
		for (cpu = 0; cpu < s->ncpus; cpu++) {
			const struct value_stats *p = &pc[cpu];

			if (p->count) {
				if (!t->count || p->min_key < t->min_key)
					t->min_key = p->min_key;
				if (p->max_key > t->max_key)
					t->max_key = p->max_key;
			}
			t->count += p->count;
			t->nan += p->nan;
			t->pos_inf += p->pos_inf;
			t->neg_inf += p->neg_inf;
			if (p->last_ns > t->last_ns) {
				t->last_ns = p->last_ns;
				t->last_bits = p->last_bits;
			}
		}
		kept++;
	}
	free(keys);
	free(pc);
	if (kept > 1)
		qsort(v, kept, sizeof(*v), cmp_value_row);
	/* histogram buckets, sorted like the rows, handed out in one merge */
	if (!ret && kept)
		ret = hist_read(hfd, pid, &h, &nh);
	if (nh > 1)
		qsort(h, nh, sizeof(*h), cmp_hist);
	for (i = 0, j = 0; !ret && i < kept; i++) {
		struct mark_key hk;
		size_t first;
		int c = 1;

		while (j < nh) {
			hk.tgid = h[j].k.tgid;
			hk.site = h[j].k.site;
			c = cmp_mark_key(&hk, &v[i].key);
			if (c >= 0)
				break;
			j++;	/* a bucket of no row (its row came after we listed them) */
		}
		for (first = j; j < nh; j++) {
			hk.tgid = h[j].k.tgid;
			hk.site = h[j].k.site;
			if (cmp_mark_key(&hk, &v[i].key))
				break;
		}
		if (j == first)
			continue;
		v[i].buckets = malloc((j - first) * sizeof(*v[i].buckets));
		if (!v[i].buckets) {
			ret = -ENOMEM;
			break;
		}
		for (; first < j; first++) {
			v[i].buckets[v[i].nbuckets].bucket = h[first].k.bucket;
			v[i].buckets[v[i].nbuckets++].count = h[first].cnt;
		}
	}
	free(h);
	if (ret) {
		qp_values_free(v, kept);
		return ret;
	}
	*rows = v;
	*n = kept;
	return 0;
}

void qp_values_free(struct qp_value_row *rows, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(rows[i].buckets);
	free(rows);
}

uint64_t qp_scopes_counter(struct qp_scopes *s, unsigned int which)
{
	__u64 cnt[256] = { 0 };
	uint64_t sum = 0;
	__u32 k = which;
	int cpu;

	if (which >= QPROF_CNT__MAX || s->ncpus > 256 ||
	    bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.counters), &k, cnt))
		return 0;
	for (cpu = 0; cpu < s->ncpus; cpu++)
		sum += cnt[cpu];
	return sum;
}
