/* scope_snapshot.c - the plain-data side of a scope snapshot (see
 * collect_scopes.h): key order, lookup by key, free. No BPF here, so the
 * model's unit tests link it without root. */
#include <stdlib.h>
#include <string.h>
#include "collect_scopes.h"

int qp_scope_key_cmp(const struct scope_key *a, const struct scope_key *b)
{
	if (a->tgid != b->tgid)
		return a->tgid < b->tgid ? -1 : 1;
	if (a->site != b->site)
		return a->site < b->site ? -1 : 1;
	if (a->parent != b->parent)
		return a->parent < b->parent ? -1 : 1;
	return 0;
}

static int cmp_key_row(const void *key, const void *row)
{
	return qp_scope_key_cmp(key, &((const struct qp_scope_row *)row)->key);
}

const struct qp_scope_row *qp_scope_snapshot_find(const struct qp_scope_snapshot *snap,
						  const struct scope_key *key)
{
	return snap->n ? bsearch(key, snap->rows, snap->n, sizeof(*snap->rows), cmp_key_row) : NULL;
}

void qp_scope_snapshot_free(struct qp_scope_snapshot *snap)
{
	free(snap->rows);
	memset(snap, 0, sizeof(*snap));
}
