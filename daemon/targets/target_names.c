/* target_names.c - see target_names.h: the registry as the model's namer. */
#include "target_names.h"
#include "targets.h"

static bool reg_target(void *arg, uint32_t pid, bool adopt, struct qp_target_times *out)
{
	struct qp_registry *r = arg;
	struct qp_target *t = qp_registry_find(r, (int)pid);

	if (!t && adopt) {
		qp_registry_adopt(r, (int)pid);
		t = qp_registry_find(r, (int)pid);
	}
	if (!t)
		return false;
	out->exited = t->state == QP_TARGET_EXITED;
	out->attached_ms = t->attached_ms;
	out->exited_ms = t->exited_ms;
	out->exe = t->exe;
	out->ring = t->ring != NULL;
	return true;
}

static const struct qp_site_info *reg_site(void *arg, uint32_t pid, uint64_t addr)
{
	struct qp_registry *r = arg;
	struct qp_target *t = qp_registry_find(r, (int)pid);

	return t ? qp_target_site(r, t, addr) : NULL;
}

static const struct qp_usdt_def *reg_def(void *arg, uint32_t id)
{
	return qp_registry_def(arg, id);
}

void qp_registry_namer(struct qp_registry *r, struct qp_namer *out)
{
	out->target = reg_target;
	out->site = reg_site;
	out->def = reg_def;
	out->arg = r;
}
