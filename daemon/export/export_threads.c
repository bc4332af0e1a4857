/* export_threads.c - the thread model as JSON (`threads[]`: tid, name,
 * state, cpu_ms, unwind, on_cpu, stack[] of frames innermost first) and as
 * the remote profiler's text form (`Thread TID (name):`, then `#N` frames). */
#include <inttypes.h>
#include <stdio.h>
#include "common/buf.h"
#include "export_threads.h"
#include "common/json_writer.h"
#include "model/model_threads.h"

void qp_export_threads_json(const struct qp_thread_model *m, struct qp_json *j)
{
	size_t i, k;
	char hex[24], st[2];

	qp_json_obj_begin(j);
	qp_json_kv_u64(j, "pid", (uint64_t)m->pid);
	qp_json_kv_bool(j, "truncated", m->truncated);
	qp_json_key(j, "threads");
	qp_json_arr_begin(j);
	for (i = 0; i < m->n; i++) {
		const struct qp_thread_row *r = &m->rows[i];

		qp_json_obj_begin(j);
		qp_json_kv_u64(j, "tid", (uint64_t)r->tid);
		qp_json_kv_str(j, "name", r->name);
		st[0] = r->state;
		st[1] = 0;
		qp_json_kv_str(j, "state", st);
		qp_json_kv_u64(j, "cpu_ms", r->cpu_ms);
		qp_json_kv_str(j, "unwind", r->unwind);
		qp_json_kv_bool(j, "on_cpu", r->on_cpu);
		qp_json_kv_bool(j, "sampled", r->sampled);
		qp_json_key(j, "stack");
		qp_json_arr_begin(j);
		for (k = 0; k < r->nframes; k++) {
			const struct qp_thread_frame *f = &r->frames[k];

			qp_json_obj_begin(j);
			snprintf(hex, sizeof(hex), "0x%" PRIx64, f->addr);
			qp_json_kv_str(j, "addr", hex);
			qp_json_kv_str(j, "name", f->name);
			qp_json_kv_str(j, "module", f->module);
			qp_json_kv_bool(j, "kernel", f->kernel);
			qp_json_obj_end(j);
		}
		qp_json_arr_end(j);
		qp_json_obj_end(j);
	}
	qp_json_arr_end(j);
	qp_json_obj_end(j);
}

void qp_export_threads_text(const struct qp_thread_model *m, struct qp_buf *b)
{
	size_t i, k;

	qp_buf_printf(b, "Thread stacks of process %d (read without stopping it)\n", m->pid);
	qp_buf_printf(b, "Total threads: %zu%s\n", m->n, m->truncated ? " (more left out: the first 8192 only)" : "");
	for (i = 0; i < m->n; i++) {
		const struct qp_thread_row *r = &m->rows[i];

		qp_buf_printf(b, "\nThread %d (%s):\n", r->tid, r->name);
		qp_buf_printf(b, "  state %c, cpu %" PRIu64 " ms, unwind %s%s, frames %zu\n", r->state, r->cpu_ms,
			      r->unwind,
			      r->sampled ? " (running: sampled at a tick of its own CPU time)" :
			      r->on_cpu ? " (running: user stack as of its last kernel entry)" : "",
			      r->nframes);
		for (k = 0; k < r->nframes; k++)
			qp_buf_printf(b, "    #%zu %s [%s]\n", k, r->frames[k].name, r->frames[k].module);
	}
}
