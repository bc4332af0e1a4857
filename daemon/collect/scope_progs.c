/* scope_progs.c - the BPF collector's programs, loaded the first time a
 * target needs them. qprofd opens bpf/scopes.bpf.c once for its maps (and
 * usdt_count, the smallest, which tells whether the kernel has uprobe-multi
 * links); each program a target needs (its
 * markers are of ABI 1, it asked for the BPF collector, it has USDT spans
 * or QPROF_LOG calls) is loaded in another instance of the object that
 * reuses every map of the first, so that all programs share one set of
 * aggregates. The kernel's verifier takes most of a load (scope_exit and
 * the span programs some 75,000-100,000 instructions each): a daemon whose
 * targets are all on the ring loads only what their logs need. A load runs
 * without S->lock (attaches and detaches of other targets go on) and one at
 * a time; the calibration hook runs once before the first program that
 * measures a duration can be attached. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "collect_internal.h"
#include "common/elf_probes.h"
#include "common/log.h"
#include "common/util.h"

/* In the order of enum qp_scope_prog. */
static const char *const prog_names[QP_SP__N] = {
	"scope_enter", "scope_exit", "mark_probe", "value_probe", "log_probe", "usdt_count",
	"usdt_span_begin", "usdt_span_end", "async_begin", "async_step", "async_end", "thread_exit",
};

/* The programs that subtract the calibrated cost from what they measure. */
#define MEASURES (QP_SP_BIT(QP_SP_SCOPE_EXIT) | QP_SP_BIT(QP_SP_USDT_SPAN_END))
/* The programs that push a thread stack (which thread_exit counts and clears). */
#define STACKS (QP_SP_BIT(QP_SP_SCOPE_ENTER) | QP_SP_BIT(QP_SP_SCOPE_EXIT) | QP_SP_BIT(QP_SP_USDT_SPAN_BEGIN) | \
		QP_SP_BIT(QP_SP_USDT_SPAN_END) | QP_SP_BIT(QP_SP_ASYNC_BEGIN) | QP_SP_BIT(QP_SP_ASYNC_STEP) | \
		QP_SP_BIT(QP_SP_ASYNC_END))

static int index_of(const char *name)
{
	int i;

	for (i = 0; i < QP_SP__N; i++)
		if (!strcmp(prog_names[i], name))
			return i;
	return -1;
}

void qp_scope_progs_init(struct qp_scopes *s)
{
	pthread_mutex_init(&s->progs.lock, NULL);
	pthread_cond_init(&s->progs.cond, NULL);
}

void qp_scope_progs_setup(struct qp_scopes *s, struct scopes *skel, bool all)
{
	const char *test = getenv("QPROF_TEST_PROGS");
	struct bpf_program *p;

	bpf_object__for_each_program(p, skel->obj) {
		int i = index_of(bpf_program__name(p));

		if (i >= 0) {
			/* with uprobe-multi links, one small program is loaded at
			 * once: a kernel without them refuses it (and qprofd goes
			 * back to perf-event uprobes, all loaded here) */
			bpf_program__set_autoload(p, all || i == QP_SP_USDT_COUNT);
			if (s->multi && i != QP_SP_THREAD_EXIT)
				bpf_program__set_expected_attach_type(p, ATTACH_UPROBE_MULTI);
		}
	}
	/* the test program (tests/unit/test_scope_poll_race.c) only on demand */
	bpf_program__set_autoload(skel->progs.test_record, test && !strcmp(test, "1"));
}

void qp_scope_progs_loaded(struct qp_scopes *s, bool all)
{
	int i;

	for (i = 0; i < QP_SP__N; i++)
		if (all || i == QP_SP_USDT_COUNT)
			s->progs.prog[i] = bpf_object__find_program_by_name(s->skel->obj, prog_names[i]);
	s->progs.tried = all ? QP_SP_ALL : QP_SP_BIT(QP_SP_USDT_COUNT);
}

void qp_scope_progs_fini(struct qp_scopes *s)
{
	size_t i;

	pthread_mutex_lock(&s->progs.lock);
	while (s->progs.loading)	/* a load is never abandoned: it is short next to a stop's other work */
		pthread_cond_wait(&s->progs.cond, &s->progs.lock);
	pthread_mutex_unlock(&s->progs.lock);
	bpf_link__destroy(s->progs.exit_link);
	s->progs.exit_link = NULL;
	for (i = 0; i < s->progs.ninst; i++)
		scopes__destroy(s->progs.inst[i]);
	s->progs.ninst = 0;
	memset(s->progs.prog, 0, sizeof(s->progs.prog));
	pthread_cond_destroy(&s->progs.cond);
	pthread_mutex_destroy(&s->progs.lock);
}

/* An instance of the object with the programs of MASK, every map that of
 * S->skel: 0 and *OUT, or -errno. */
static int load_instance(struct qp_scopes *s, unsigned int mask, struct scopes **out)
{
	struct bpf_program *p;
	struct bpf_map *m;
	struct scopes *l = scopes__open();
	int ret = l ? 0 : -errno;

	*out = NULL;
	if (!l)
		return ret;
	bpf_object__for_each_map(m, l->obj) {
		struct bpf_map *mine = bpf_object__find_map_by_name(s->skel->obj, bpf_map__name(m));

		ret = mine ? bpf_map__reuse_fd(m, bpf_map__fd(mine)) : -ENOENT;
		if (ret)
			break;
	}
	if (!ret) {
		bpf_object__for_each_program(p, l->obj) {
			int i = index_of(bpf_program__name(p));
			bool want = i >= 0 && (mask & QP_SP_BIT(i));

			bpf_program__set_autoload(p, want);
			if (want && i != QP_SP_THREAD_EXIT)
				bpf_program__set_expected_attach_type(p, ATTACH_UPROBE_MULTI);
		}
		ret = scopes__load(l);
	}
	if (ret) {
		scopes__destroy(l);
		return ret;
	}
	*out = l;
	return 0;
}

/* The names of the programs of MASK, for a message. */
static void names_of(unsigned int mask, char *buf, size_t len)
{
	size_t off = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < QP_SP__N && off < len; i++) {
		if (!(mask & QP_SP_BIT(i)))
			continue;
		int k = snprintf(buf + off, len - off, "%s%s", off ? ", " : "", prog_names[i]);

		if (k < 0)
			break;
		off += (size_t)k;
	}
}

/* Load MASK (P->lock held on entry and on return, released meanwhile). */
static void load_locked(struct qp_scopes *s, unsigned int mask)
{
	struct qp_scope_progs *p = &s->progs;
	struct scopes *l = NULL;
	uint64_t t0 = qp_now_ns(), dt;
	char names[256];
	int ret, i;

	p->loading = true;
	pthread_mutex_unlock(&p->lock);
	ret = load_instance(s, mask, &l);
	dt = qp_now_ns() - t0;
	names_of(mask, names, sizeof(names));
	if (ret)
		qp_warn("the BPF program(s) %s could not be loaded: %s", names, strerror(-ret));
	else
		qp_info("BPF program(s) %s loaded (a target needs them) in %.1f ms", names, (double)dt / 1e6);
	pthread_mutex_lock(&p->lock);
	p->load_ns += dt;
	for (i = 0; i < QP_SP__N; i++) {
		if (!(mask & QP_SP_BIT(i)))
			continue;
		p->prog[i] = l ? bpf_object__find_program_by_name(l->obj, prog_names[i]) : NULL;
		p->err[i] = l ? (p->prog[i] ? 0 : -ENOENT) : ret;
		/* a refusal is for good (the verifier, the kernel's program
		 * types); a lack of memory or an interrupted load is tried again */
		if (l || ret == -EINVAL || ret == -EACCES || ret == -EPERM || ret == -E2BIG || ret == -ENOTSUP ||
		    ret == -EOPNOTSUPP)
			p->tried |= QP_SP_BIT(i);
	}
	if (l)
		p->inst[p->ninst++] = l;
	p->loading = false;
	pthread_cond_broadcast(&p->cond);
}

int qp_scope_progs_need(struct qp_scopes *s, unsigned int mask, char *err, size_t errlen)
{
	struct qp_scope_progs *p = &s->progs;
	bool self;
	int i, ret = 0;

	mask &= QP_SP_ALL;
	if (mask & MEASURES)	/* the calibration measures an empty scope with them */
		mask |= QP_SP_BIT(QP_SP_SCOPE_ENTER) | QP_SP_BIT(QP_SP_SCOPE_EXIT);
	if (mask & STACKS)	/* a thread that exits with scopes open: counted */
		mask |= QP_SP_BIT(QP_SP_THREAD_EXIT);
	if (!mask)
		return 0;
	pthread_mutex_lock(&p->lock);
	for (;;) {
		unsigned int missing = mask & ~p->tried;

		self = p->first_state == 1 && pthread_equal(p->first_thread, pthread_self());
		if (p->loading) {
			pthread_cond_wait(&p->cond, &p->lock);
			continue;
		}
		if (missing) {
			unsigned int before = p->tried;

			load_locked(s, missing);
			if (p->tried == before && !(p->tried & missing))
				break;	/* failed, to be tried again by a later attach */
			continue;
		}
		if ((mask & STACKS) && !p->exit_link && p->prog[QP_SP_THREAD_EXIT]) {
			/* from the first program that pushes a thread stack on */
			p->exit_link = bpf_program__attach(p->prog[QP_SP_THREAD_EXIT]);
			if (!p->exit_link) {
				ret = -errno;
				snprintf(err, errlen, "cannot attach to sched_process_exit: %s", strerror(errno));
				break;
			}
		}
		if ((mask & MEASURES) && p->first && p->first_state == 0 && p->prog[QP_SP_SCOPE_ENTER] &&
		    p->prog[QP_SP_SCOPE_EXIT]) {
			p->first_state = 1;
			p->first_thread = pthread_self();
			pthread_mutex_unlock(&p->lock);
			p->first(p->first_arg, s);
			pthread_mutex_lock(&p->lock);
			p->first_state = 2;
			pthread_cond_broadcast(&p->cond);
			continue;
		}
		if ((mask & MEASURES) && p->first_state == 1 && !self) {
			pthread_cond_wait(&p->cond, &p->lock);
			continue;
		}
		break;
	}
	for (i = 0; !ret && i < QP_SP__N; i++) {
		if (!(mask & QP_SP_BIT(i)) || p->prog[i])
			continue;
		ret = p->err[i] ? p->err[i] : -EAGAIN;
		snprintf(err, errlen, "the BPF program %s could not be loaded: %s", prog_names[i], strerror(-ret));
	}
	pthread_mutex_unlock(&p->lock);
	return ret;
}

struct bpf_program *qp_scopes_late_prog(struct qp_scopes *s, struct bpf_program *prog)
{
	struct bpf_program *p = NULL;
	int i = index_of(bpf_program__name(prog)), err = ENOENT;

	if (i < 0)
		return bpf_program__fd(prog) >= 0 ? prog : NULL;
	pthread_mutex_lock(&s->progs.lock);
	p = s->progs.prog[i];
	if (!p && s->progs.err[i])
		err = -s->progs.err[i];
	pthread_mutex_unlock(&s->progs.lock);
	if (!p)
		errno = err;
	return p;
}

void qp_scopes_set_first_use(struct qp_scopes *s, qp_scopes_first_fn fn, void *arg)
{
	pthread_mutex_lock(&s->progs.lock);
	s->progs.first = fn;
	s->progs.first_arg = arg;
	pthread_mutex_unlock(&s->progs.lock);
}

unsigned int qp_scope_progs_of(const struct qp_elf_probes *elf, unsigned int which)
{
	/* the probe names of qp_scopes_attach_some's bits, and their programs */
	static const struct {
		const char *name;
		enum qp_scope_prog prog;
	} probes[] = {
		{ "scope_exit", QP_SP_SCOPE_EXIT }, { "scope_enter", QP_SP_SCOPE_ENTER }, { "mark", QP_SP_MARK },
		{ "value", QP_SP_VALUE }, { "log", QP_SP_LOG }, { "span_end", QP_SP_ASYNC_END },
		{ "span_step", QP_SP_ASYNC_STEP }, { "span_begin", QP_SP_ASYNC_BEGIN },
	};
	unsigned int mask = 0;
	size_t i, k;

	for (i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		if (!(which & (1u << i)))
			continue;
		for (k = 0; k < elf->nnotes; k++) {
			if (!strcmp(elf->notes[k].provider, "qprof") && !strcmp(elf->notes[k].name, probes[i].name)) {
				mask |= QP_SP_BIT(probes[i].prog);
				break;
			}
		}
	}
	return mask;
}

void qp_scopes_publish_calibration(struct qp_scopes *s, const struct qp_calibration *c)
{
	pthread_mutex_lock(&s->progs.lock);
	s->progs.calib = *c;
	pthread_mutex_unlock(&s->progs.lock);
}

void qp_scopes_calibration_read(struct qp_scopes *s, struct qp_calibration *out)
{
	pthread_mutex_lock(&s->progs.lock);
	*out = s->progs.calib;
	pthread_mutex_unlock(&s->progs.lock);
}
