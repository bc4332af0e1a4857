/* collect_attach.c - attaches the scope collector's programs to USDT sites:
 * uprobe-multi links made by qprofd with its own spec ids, or libbpf's USDT
 * links (which also raise semaphores), and detaches them. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "collect_internal.h"
#include "common/elf_probes.h"
#include "common/log.h"
#include "redzone.h"
#include "ring_collect.h"
#include "common/usdt_spec.h"

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

/* The kernel side of one link: its release waits for grace periods. */
static void close_kernel(struct qp_scope_link *l)
{
	if (!l)
		return;
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
	bpf_link__destroy(l->blink);
	l->blink = NULL;
}

/* A pool of closers taking the next link of a batch: every release waits
 * for its own grace periods, which overlap instead of adding up (the
 * kernel serves the waiters of one grace period together). */
struct close_pool {
	struct qp_scope_link **links;
	size_t n;
	size_t next;		/* atomic */
};

static void *close_worker(void *arg)
{
	struct close_pool *p = arg;
	size_t i;

	while ((i = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED)) < p->n)
		close_kernel(p->links[i]);
	return NULL;
}

#define CLOSE_POOL_MAX 128

void qp_scopes_close_links(struct qp_scope_link **links, size_t n)
{
	struct close_pool p = { .links = links, .n = n };
	pthread_t th[CLOSE_POOL_MAX];
	size_t k, nt = n < CLOSE_POOL_MAX ? n : CLOSE_POOL_MAX, started = 0;
	pthread_attr_t attr;
	bool attr_ok;

	if (n <= 1) {
		close_worker(&p);
		return;
	}
	/* small stacks: a closer only makes a system call */
	attr_ok = !pthread_attr_init(&attr) && !pthread_attr_setstacksize(&attr, 64 << 10);
	for (k = 0; k + 1 < nt; k++) {
		if (pthread_create(&th[started], attr_ok ? &attr : NULL, close_worker, &p))
			break;	/* the ones started, and this thread, do the rest */
		started++;
	}
	if (attr_ok)
		pthread_attr_destroy(&attr);
	close_worker(&p);
	for (k = 0; k < started; k++)
		pthread_join(th[k], NULL);
}

/* Caller holds the owner's lock. */
static void links_free(struct qp_scope_link **links, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		link_free(links[i]);
}

/* Closing a uprobe link waits for a grace period, so a target's links are
 * closed by several threads at once (an exec'd target stays stopped until
 * its old links are gone). */
void qp_scopes_detach_links(struct qp_scope_link **links, size_t n)
{
	size_t i;

	if (n > 1)
		qp_scopes_close_links(links, n);
	for (i = 0; i < n; i++) {
		struct qp_scopes *s = links[i] ? links[i]->owner : NULL;

		if (!s)
			continue;
		pthread_mutex_lock(&s->lock);
		link_free(links[i]);
		pthread_mutex_unlock(&s->lock);
	}
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

int qp_uprobe_multi_link(int prog_fd, const char *path, const uint64_t *offs, const uint64_t *refs,
			 const uint64_t *cookies, uint32_t cnt, int pid)
{
	struct uprobe_multi_attr a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.prog_fd = (uint32_t)prog_fd;
	a.attach_type = ATTACH_UPROBE_MULTI;
	a.path = (uint64_t)(uintptr_t)path;
	a.offsets = (uint64_t)(uintptr_t)offs;
	a.ref_ctr_offsets = (uint64_t)(uintptr_t)refs;
	a.cookies = (uint64_t)(uintptr_t)cookies;
	a.cnt = cnt;
	a.pid = pid > 0 ? (uint32_t)pid : 0;
	fd = (int)syscall(SYS_bpf, BPF_LINK_CREATE, &a, sizeof(a));
	return fd < 0 ? -errno : fd;
}

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

static int attach_some_locked(struct qp_scopes *s, int pid, const char *path, const struct qp_elf_probes *elf,
			      uint64_t epoch, unsigned int which, struct qp_scope_link ***links, size_t *nlinks,
			      char *err, size_t errlen)
{
	LIBBPF_OPTS(bpf_usdt_opts, opts);
	/* exits first: an exit seen without its enter is counted and harmless,
	 * an enter seen without its exit would sit at the bottom of the stack */
	struct bpf_program *progs[] = {
		s->skel->progs.scope_exit, s->skel->progs.scope_enter, s->skel->progs.mark_probe,
		s->skel->progs.value_probe, s->skel->progs.log_probe, s->skel->progs.async_end,
		s->skel->progs.async_step, s->skel->progs.async_begin,
	};
	const char *names[] = { "scope_exit", "scope_enter", "mark", "value", "log",
				"span_end", "span_step", "span_begin" };
	uint64_t cookie = QPROF_COOKIE(epoch, pid < 0, 0);
	size_t first = *nlinks, k;
	int i, made = 0, ret;

	opts.usdt_cookie = cookie;
	{
		/* nop5 sites in functions that keep data in the red zone: this
		 * kernel's optimised uprobe would overwrite it (redzone.c) */
		const char *chosen[sizeof(names) / sizeof(names[0])];
		char why[256] = "";
		size_t nchosen = 0;

		for (i = 0; i < (int)(sizeof(names) / sizeof(names[0])); i++)
			if (which & (1u << i))
				chosen[nchosen++] = names[i];
		/* markers of ABI 2 (they announce rings) never keep data there: a
		 * function holding one pushes (or calls) on its cold path, so the
		 * compilers keep nothing below %rsp (unit_marker_redzone) */
		ret = qp_ring_capable(elf) ? 0 : qp_redzone_check(path, elf, "qprof", chosen, nchosen, why, sizeof(why));
		if (ret) {
			snprintf(err, errlen, "%s: not probed: %s, which a uprobe on its nop5 overwrites on "
				 "this kernel (Linux >= 6.18 turns it into a call); markers of this "
				 "qprof.h never do: rebuild with it", path, why);
			return ret < 0 ? ret : -EPERM;
		}
	}
	for (i = 0; i < (int)(sizeof(names) / sizeof(names[0])); i++) {
		struct qp_scope_link *l = NULL;
		bool present = false;

		if (!(which & (1u << i)))
			continue;
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
			struct bpf_program *prog = qp_scopes_late_prog(s, progs[i]);

			if (!prog) {
				ret = -errno;
				snprintf(err, errlen, "cannot attach qprof:%s in %s: its program is not loaded (%s)",
					 names[i], path, strerror(errno));
				goto undo;
			}
			ret = attach_multi(s, prog, "qprof", names[i], true, pid, path, elf, cookie, &l,
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
	links_free(*links + first, *nlinks - first);
	*nlinks = first;
	return ret;
}

int qp_scopes_attach_some(struct qp_scopes *s, int pid, const char *path, const struct qp_elf_probes *elf,
			  uint64_t epoch, unsigned int which, struct qp_scope_link ***links, size_t *nlinks,
			  char *err, size_t errlen)
{
	int ret;

	/* the programs first, without the lock: a load takes the verifier's time */
	ret = qp_scope_progs_need(s, qp_scope_progs_of(elf, which), err, errlen);
	if (ret)
		return ret;
	pthread_mutex_lock(&s->lock);
	ret = attach_some_locked(s, pid, path, elf, epoch, which, links, nlinks, err, errlen);
	pthread_mutex_unlock(&s->lock);
	return ret;
}

int qp_scopes_attach(struct qp_scopes *s, int pid, const char *path, const struct qp_elf_probes *elf,
		     uint64_t epoch, struct qp_scope_link ***links, size_t *nlinks, char *err,
		     size_t errlen)
{
	return qp_scopes_attach_some(s, pid, path, elf, epoch, QP_PROBES_ALL, links, nlinks, err, errlen);
}

/* The program of a USDT request's role. */
static enum qp_scope_prog usdt_prog(enum qp_usdt_role role)
{
	return role == QP_USDT_COUNT ? QP_SP_USDT_COUNT :
	       role == QP_USDT_SPAN_BEGIN ? QP_SP_USDT_SPAN_BEGIN : QP_SP_USDT_SPAN_END;
}

static int attach_usdt_locked(struct qp_scopes *s, int pid, const char *path,
			      const struct qp_elf_probes *elf, uint64_t epoch,
			      const struct qp_usdt_req *req, struct qp_scope_link ***links,
			      size_t *nlinks, char *err, size_t errlen)
{
	struct bpf_program *prog = req->role == QP_USDT_COUNT ? s->skel->progs.usdt_count :
				   req->role == QP_USDT_SPAN_BEGIN ? s->skel->progs.usdt_span_begin :
								     s->skel->progs.usdt_span_end;
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
	{
		const char *one[1] = { req->name };
		char why[256] = "";

		ret = qp_redzone_check(path, elf, req->provider, one, 1, why, sizeof(why));
		if (ret) {
			snprintf(err, errlen, "%s: %s:%s not probed: %s, which a uprobe on its nop5 "
				 "overwrites on this kernel (Linux >= 6.18 turns it into a call)", path,
				 req->provider, req->name, why);
			return ret < 0 ? ret : -EPERM;
		}
	}
	if (!s->multi && bad_sites(elf, req->provider, req->name)) {
		snprintf(err, errlen, "%s: %zu %s:%s site(s) are not the nop their notes promise", path,
			 bad_sites(elf, req->provider, req->name), req->provider, req->name);
		return -EILSEQ;
	}
	if (s->multi) {
		prog = qp_scopes_late_prog(s, prog);
		if (!prog) {
			ret = -errno;
			snprintf(err, errlen, "cannot attach %s:%s in %s: its program is not loaded (%s)",
				 req->provider, req->name, path, strerror(-ret));
			return ret;
		}
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

int qp_scopes_attach_usdt(struct qp_scopes *s, int pid, const char *path,
			  const struct qp_elf_probes *elf, uint64_t epoch, const struct qp_usdt_req *req,
			  struct qp_scope_link ***links, size_t *nlinks, char *err, size_t errlen)
{
	int ret;

	bool present = false;
	size_t k;

	for (k = 0; k < elf->nnotes && !present; k++)
		present = !strcmp(elf->notes[k].provider, req->provider) && !strcmp(elf->notes[k].name, req->name);
	/* its program first, without the lock */
	ret = present ? qp_scope_progs_need(s, QP_SP_BIT(usdt_prog(req->role)), err, errlen) : 0;
	if (ret)
		return ret;
	pthread_mutex_lock(&s->lock);
	ret = attach_usdt_locked(s, pid, path, elf, epoch, req, links, nlinks, err, errlen);
	pthread_mutex_unlock(&s->lock);
	return ret;
}
