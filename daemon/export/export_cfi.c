/* export_cfi.c - the walk in the kernel by compiled CFI tables in
 * /api/status (cpu.unwind.kernel): whether it runs, how the walks ended
 * (the samples that kept the kernel's stack and those that fell back to
 * the stack copy, by reason), and the tables: loaded, their kernel memory
 * and its room, compiled, shared, refused, evicted, found no room. */
#include "export_json.h"

static const char *const end_names[QPROF_WALK__MAX] = {
	[QPROF_WALK_NONE] = "none",	     [QPROF_WALK_COMPLETE] = "complete", [QPROF_WALK_DEPTH] = "depth",
	[QPROF_WALK_LOOP] = "loop",	     [QPROF_WALK_FALLBACK] = "fallback", [QPROF_WALK_NOCFI] = "no_cfi",
	[QPROF_WALK_NOMAP] = "no_mapping",   [QPROF_WALK_NOTABLE] = "no_table",  [QPROF_WALK_NOPROC] = "no_process",
	[QPROF_WALK_STALE] = "stale",	     [QPROF_WALK_BAD] = "bad_registers",
};

const char *qp_cfi_walk_end_name(unsigned int e)
{
	return e < QPROF_WALK__MAX ? end_names[e] : NULL;
}

/* the walks of one user of the tables but the CPU sampler: NAME {walks, kept, fallbacks, frames, ends} */
static void walks_of(struct qp_json *j, const char *name, const uint64_t *ends, uint64_t frames)
{
	uint64_t kept = 0, fell = 0;
	unsigned int e;

	for (e = QPROF_WALK_COMPLETE; e < QPROF_WALK__MAX; e++) {
		if (QPROF_WALK_KEPT(e))
			kept += ends[e];
		else
			fell += ends[e];
	}
	qp_json_key(j, name);
	qp_json_obj_begin(j);
	qp_json_kv_u64(j, "walks", kept + fell);
	qp_json_kv_u64(j, "kept", kept);
	qp_json_kv_u64(j, "fallbacks", fell);
	qp_json_kv_u64(j, "frames", frames);
	qp_json_key(j, "ends");
	qp_json_obj_begin(j);
	for (e = QPROF_WALK_COMPLETE; e < QPROF_WALK__MAX; e++)
		qp_json_kv_u64(j, end_names[e], ends[e]);
	qp_json_obj_end(j);
	qp_json_obj_end(j);
}

void qp_export_cfi_kernel(struct qp_json *j, const struct qp_cpu_unwind_figures *u)
{
	const struct qp_cfi_bpf_stats *t = &u->tables;
	uint64_t kept = 0, fell = 0;
	unsigned int e;

	for (e = QPROF_WALK_COMPLETE; e < QPROF_WALK__MAX; e++) {
		if (QPROF_WALK_KEPT(e))
			kept += u->walk_ends[e];
		else
			fell += u->walk_ends[e];
	}
	qp_json_key(j, "kernel");
	qp_json_obj_begin(j);
	qp_json_kv_bool(j, "running", u->kernel);
	if (u->kernel_error[0])
		qp_json_kv_str(j, "error", u->kernel_error);
	qp_json_kv_u64(j, "walks", kept + fell);
	qp_json_kv_u64(j, "walked", u->walked);
	qp_json_kv_u64(j, "kept", kept);
	qp_json_kv_u64(j, "fallbacks", fell);
	qp_json_kv_u64(j, "frames", u->walk_frames);
	if (u->verify) {
		/* QPROF_CFI_VERIFY=1: each walk kept against libdwfl on its copy */
		qp_json_key(j, "verify");
		qp_json_obj_begin(j);
		qp_json_kv_u64(j, "same", u->verify_same);
		qp_json_kv_u64(j, "prefix", u->verify_prefix);
		qp_json_kv_u64(j, "differ", u->verify_differ);
		qp_json_kv_u64(j, "not_unwound", u->verify_none);
		qp_json_obj_end(j);
	}
	qp_json_key(j, "ends");
	qp_json_obj_begin(j);
	for (e = QPROF_WALK_COMPLETE; e < QPROF_WALK__MAX; e++)
		qp_json_kv_u64(j, end_names[e], u->walk_ends[e]);
	qp_json_obj_end(j);
	/* at off-CPU switch-outs and sampled allocations: a walk that falls
	 * back keeps frame pointers */
	walks_of(j, "offcpu", u->off_walk_ends, u->off_walk_frames);
	walks_of(j, "heap", u->heap_walk_ends, u->heap_walk_frames);
	qp_json_key(j, "tables");
	qp_json_obj_begin(j);
	qp_json_kv_u64(j, "files", t->files);
	qp_json_kv_u64(j, "rows", t->rows);
	qp_json_kv_u64(j, "bytes", t->bytes);
	qp_json_kv_u64(j, "bytes_max", t->bytes_cap);
	qp_json_kv_u64(j, "builds", t->builds);
	qp_json_kv_u64(j, "hits", t->hits);
	qp_json_kv_u64(j, "refused", t->refused);
	qp_json_kv_u64(j, "evictions", t->evictions);
	qp_json_kv_u64(j, "no_room", t->no_room);
	qp_json_kv_u64(j, "rows_without_rule", t->rows_no_rule);
	qp_json_kv_milli(j, "build_ms", t->build_ns / 1000);
	qp_json_kv_milli(j, "build_cpu_ms", t->build_cpu_ns / 1000);
	qp_json_kv_u64(j, "processes", t->procs);
	qp_json_kv_u64(j, "scans", t->scans);
	qp_json_kv_u64(j, "scan_errors", t->scan_errors);
	qp_json_kv_u64(j, "too_many_mappings", t->too_many);
	qp_json_obj_end(j);
	qp_json_obj_end(j);
}
