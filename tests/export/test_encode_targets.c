/* test_encode_targets.c - the targets model's JSON from a hand-made view,
 * byte for byte: GET /api/targets (a running target attached by pid, an
 * exited one of a --binary file, a hostile exe path), the target and binary
 * objects of POST /api/targets, and the target keys of GET /api/status (a
 * binary in each state and mode, fork/exec figures present and absent). */
#include <stdlib.h>
#include "testlib.h"
#include "export/export_targets.h"
#include "common/util.h"

static int pids_b0[] = { 200, 300 };
/* a plugin loaded twice and unloaded, one refused (a hostile path) */
static struct qp_module_view mods_t0[] = {
	{ .path = "/opt/s/libmr.so", .state = "unloaded", .probes = 2, .loads = 2,
	  .attached_ms = 1700000000200ULL, .detached_ms = 1700000000300ULL },
	{ .path = "/tmp/x\"y.so", .state = "refused", .error = "1 unreadable note" },
};

static void make_view(struct qp_targets_view *v, struct qp_target_view *t, struct qp_binary_view *b)
{
	memset(v, 0, sizeof(*v));
	memset(t, 0, 2 * sizeof(*t));
	memset(b, 0, 3 * sizeof(*b));
	t[0] = (struct qp_target_view){ .pid = 100, .comm = "strategy", .exe = "/opt/s/strategy",
		.state = QP_TARGET_RUNNING, .attached_ms = 1700000000123ULL, .exited_ms = 99, .probes = 12,
		.reported_ms = 98, .released_ms = 97,	/* a running target shows none of the three */
		.sites_refused = 1, .files_unopened = 2, .ring = true, .has_ring_status = true,
		.ring_status = { .c = { .records = 10, .lost = 11, .garbage = 12, .after_loss = 13,
					.before_attach = 14, .logs = 15, .logs_cut = 16, .lost_at_exit = 4,
					.start_unknown = 0, .unreadable = 1, .unreadable_ns = 1500000000 },
				.rings = 3, .rings_gone = 1, .head = 40, .base = 2, .read = 27, .lost = 11,
				.bytes = 4194624, .bytes_max = 4194624,
				.est = { .records = 11, .scopes = 6, .scopes_partial = 1 }, .nlist = 1,
				.list = { { .addr = 0x7f0000000000, .bytes = 4194624, .tid = 101, .nrec = 262144,
					    .head = 40, .base = 2, .read = 27, .lost = 11 } } },
		.modules = mods_t0, .nmodules = 2, .libs_loaded = 3,
		.libs_unloaded = 4, .libs_without_markers = 5, .libs_refused = 6, .libs_probed_late = 9, .sites_reused = 7 };
	t[1] = (struct qp_target_view){ .pid = 200, .comm = "md\"feed", .exe = "/opt/m d/feed\n(deleted)",
		.state = QP_TARGET_EXITED, .attached_ms = 1700000000456ULL, .exited_ms = 1700000009999ULL,
		.reported_ms = 1700000010100ULL, .released_ms = 1700000010050ULL,
		.probes = 0, .cpu_only = true, .by_binary = true, .collector_note = "lib \"x\" has markers of ABI 1" };
	b[0] = (struct qp_binary_view){ .path = "/opt/m d/feed", .probes = 7, .attached_ms = 1700000000001ULL,
		.state = QP_BINARY_ATTACHED, .versions_replaced = 3, .old_versions_running = 1,
		.sites_refused = 4, .processes_refused = 5, .pids = pids_b0, .npids = 2 };
	b[1] = (struct qp_binary_view){ .path = "/opt/x", .probes = 1, .attached_ms = 2,
		.state = QP_BINARY_CHANGED, .per_process = true, .ring = true };
	b[2] = (struct qp_binary_view){ .path = "/opt/y", .state = QP_BINARY_UNPROBED };
	v->targets = t;
	v->ntargets = 2;
	v->binaries = b;
	v->nbinaries = 3;
	v->exited_forgotten = 6;
	v->has_lifecycle = true;
	v->lifecycle = (struct qp_lifecycle_figures){ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17,
						      18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30 };
}

#define T0 "{\"pid\":100,\"comm\":\"strategy\",\"exe\":\"/opt/s/strategy\",\"state\":\"running\"," \
	"\"attached_ms\":1700000000123,\"probes\":12,\"cpu_only\":false,\"exited_ms\":null,\"reported_ms\":null,\"released_ms\":null,\"attached_by\":\"pid\"," \
	"\"sites_refused\":1,\"files_unopened\":2,\"collector\":\"ring\",\"collector_reason\":\"\",\"collector_note\":null," \
	"\"ring\":{\"rings\":3,\"records\":10,\"lost\":11,\"garbage\":12,\"open_at_loss\":13," \
	"\"before_attach\":14,\"logs\":15,\"logs_cut\":16,\"rings_gone\":1,\"head\":40,\"base\":2," \
	"\"read\":27,\"unread\":0,\"lost_at_exit\":4,\"start_unknown\":0,\"unreadable\":1,\"unreadable_ms\":1500," \
	"\"bytes\":4194624,\"bytes_max_ring\":4194624,\"lost_scopes\":6,\"lost_scopes_partial\":1,\"lost_marks\":0," \
	"\"lost_values\":0,\"lost_other_records\":0,\"lost_estimated\":false,\"list\":[{\"tid\":101," \
	"\"records\":262144,\"bytes\":4194624,\"head\":40,\"base\":2,\"read\":27,\"lost\":11," \
	"\"unreadable\":false,\"start_unknown\":false}]},\"modules\":[{\"path\":\"/opt/s/libmr.so\"," \
	"\"state\":\"unloaded\",\"probes\":2,\"attached_ms\":1700000000200,\"detached_ms\":1700000000300," \
	"\"loads\":2},{\"path\":\"/tmp/x\\\"y.so\",\"state\":\"refused\",\"probes\":0,\"attached_ms\":null," \
	"\"detached_ms\":null,\"loads\":0,\"error\":\"1 unreadable note\"}],\"libs_loaded\":3," \
	"\"libs_unloaded\":4,\"libs_without_markers\":5,\"libs_refused\":6,\"libs_probed_late\":9,\"sites_reused\":7}"
#define T1 "{\"pid\":200,\"comm\":\"md\\\"feed\",\"exe\":\"/opt/m d/feed\\n(deleted)\",\"state\":\"exited\"," \
	"\"attached_ms\":1700000000456,\"probes\":0,\"cpu_only\":true,\"exited_ms\":1700000009999,\"reported_ms\":1700000010100,\"released_ms\":1700000010050,\"attached_by\":\"binary\"," \
	"\"sites_refused\":0,\"files_unopened\":0,\"collector\":\"bpf\",\"collector_reason\":\"\"," \
	"\"collector_note\":\"lib \\\"x\\\" has markers of ABI 1\",\"modules\":[],\"libs_loaded\":0,\"libs_unloaded\":0," \
	"\"libs_without_markers\":0,\"libs_refused\":0,\"libs_probed_late\":0,\"sites_reused\":0}"
#define B0 "{\"binary\":\"/opt/m d/feed\",\"probes\":7,\"attached_ms\":1700000000001,\"state\":\"attached\"," \
	"\"mode\":\"every_process\",\"collector\":\"bpf\",\"collector_reason\":\"\",\"collector_note\":null,\"versions_replaced\":3,\"old_versions_running\":1,\"sites_refused\":4," \
	"\"processes_refused\":5,\"pids\":[200,300]}"
#define B1 "{\"binary\":\"/opt/x\",\"probes\":1,\"attached_ms\":2,\"state\":\"changed\",\"mode\":\"per_process\"," \
	"\"collector\":\"ring\",\"collector_reason\":\"\",\"collector_note\":null,\"versions_replaced\":0,\"old_versions_running\":0,\"sites_refused\":0,\"processes_refused\":0,\"pids\":[]}"
#define B2 "{\"binary\":\"/opt/y\",\"probes\":0,\"attached_ms\":0,\"state\":\"unprobed\",\"mode\":\"every_process\"," \
	"\"collector\":\"bpf\",\"collector_reason\":\"\",\"collector_note\":null,\"versions_replaced\":0,\"old_versions_running\":0,\"sites_refused\":0,\"processes_refused\":0,\"pids\":[]}"
#define LC "{\"forks\":1,\"shared_mm_children\":2,\"children_stopped\":3,\"stop_failed\":4,\"records_lost\":5," \
	"\"descendants_unwatched\":6,\"children_resumed\":7,\"sites_restored_nop\":8,\"sites_restored_int3\":9," \
	"\"site_rewrites_failed\":10,\"semaphores_lowered\":29,\"semaphore_writes_failed\":30," \
	"\"child_stall_max_ns\":11,\"child_stall_mean_ns\":12,\"execs\":13," \
	"\"exec_stall_max_ns\":14,\"binary_starts\":15,\"execs_seen_in_proc\":16,\"execs_dropped\":17," \
	"\"dl_rendezvous\":18,\"dl_held\":19,\"dl_unheld\":20,\"dl_released\":21,\"dl_released_late\":22," \
	"\"dl_hold_max_ns\":23,\"dl_hold_mean_ns\":24,\"dl_linkers\":25,\"dl_skipped_unresponsive\":26," \
	"\"dl_skipped_traced\":27,\"dl_skipped_no_signal\":28}"

static void check_text(const char *what, const char *got, size_t len, const char *want)
{
	size_t i;

	CHECK(got != NULL);
	if (!got)
		return;
	CHECK_INT(len, strlen(want));
	for (i = 0; got[i] && got[i] == want[i]; i++)
		;
	if (got[i] || want[i])
		fprintf(stderr, "%s differs at byte %zu:\n got: %.80s\nwant: %.80s\n", what, i, got + i, want + i);
	CHECK_STR(got, want);
}

/* Run ENCODE on V (inside an object when IN_OBJ) and compare with WANT. */
static void check(const char *what, const struct qp_targets_view *v,
		  void (*encode)(const struct qp_targets_view *, struct qp_json *), bool in_obj, const char *want)
{
	struct qp_json j;
	size_t len;
	char *s;

	qp_json_init(&j);
	if (in_obj)
		qp_json_obj_begin(&j);
	encode(v, &j);
	if (in_obj)
		qp_json_obj_end(&j);
	s = qp_json_finish(&j, &len);
	check_text(what, s, len, want);
	free(s);
}

int main(void)
{
	struct qp_target_view t[2];
	struct qp_binary_view b[3];
	struct qp_targets_view v;
	struct qp_json j;
	size_t len;
	char *s;

	make_view(&v, t, b);
	check("targets", &v, qp_export_targets_json, false, "{\"targets\":[" T0 "," T1 "]}");
	check("status targets", &v, qp_export_status_targets_json, true,
	      "{\"targets\":[" T0 "," T1 "],\"binaries\":[" B0 "," B1 "," B2 "],"
	      "\"exited_targets_forgotten\":6,\"lifecycle\":" LC "}");

	/* no fork/exec tracking: "lifecycle" is null, not missing */
	v.has_lifecycle = false;
	v.ntargets = 0;
	v.nbinaries = 0;
	check("status, nothing", &v, qp_export_status_targets_json, true,
	      "{\"targets\":[],\"binaries\":[],\"exited_targets_forgotten\":6,\"lifecycle\":null}");
	check("no targets", &v, qp_export_targets_json, false, "{\"targets\":[]}");

	/* POST /api/targets answers one object */
	qp_json_init(&j);
	qp_export_target_json(&t[1], &j);
	s = qp_json_finish(&j, &len);
	check_text("one target", s, len, T1);
	free(s);
	qp_json_init(&j);
	qp_export_binary_json(&b[0], &j);
	s = qp_json_finish(&j, &len);
	check_text("one binary", s, len, B0);
	free(s);
	return test_done("test_encode_targets");
}
