#!/bin/bash
# check_deps_selftest.sh SOURCE_DIR BUILD_DIR - scripts/check_deps.py on the
# real tree and build (must pass) and on copies of them broken on purpose
# (each must fail, naming the fault): an include that points up a layer, an
# include cycle, a file too long, an include with ../, a header of another
# stage named without its stage, per-thread state in a stage, model/ naming
# the server's request (not in a comment or string), a handler on services
# that includes the daemon's state; in the build (what cmake configured,
# copied and edited): a stage library linking a stage above it, one with
# another stage's include folder, a test linking two stages, a test including
# a header above its stage, and a circle of calls between two files of a
# stage (a small archive of two objects that call each other); with the
# layout rule on (--tests-mirror), a test of collect/ kept in tests/model/
# and a tests/unit/ left over. The build is read from
# BUILD/qprof_targets.txt, which the broken copies edit.
set -u
src=$1
build=$2
check=$src/scripts/check_deps.py
tmp=$(mktemp -d /tmp/qprof-check-deps.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
expect() {	# expect RC PATTERN WHAT DIR [--build B]
	local rc=$1 pat=$2 what=$3
	shift 3
	out=$(python3 "$check" "$@" 2>&1)
	got=$?
	if [ "$got" != "$rc" ] || ! grep -q -- "$pat" <<<"$out"; then
		echo "FAIL: $what: exit $got, output:"; echo "$out" | tail -5; fail=1
	else
		echo "ok: $what"
	fi
}
fresh() {
	rm -rf "$tmp/t" && mkdir -p "$tmp/t" &&
	tar -C "$src" --exclude='corpus_*' --exclude='build*' -cf - common daemon cli bpf include \
		tests bench | tar -C "$tmp/t" -xf -
}
fresh_build() {
	rm -rf "$tmp/b" && mkdir -p "$tmp/b" && cp "$build/qprof_targets.txt" "$tmp/b/"
}
# edit TARGET KEY SUFFIX: append ";SUFFIX" to the line "TARGET KEY ..." of the
# copied BUILD/qprof_targets.txt; set TARGET KEY VALUE: replace the line's value
edit() {
	sed -i "s|^$1 $2 \(.*\)\$|$1 $2 \1;$3|" "$tmp/b/qprof_targets.txt"
}
set_line() {
	sed -i "s|^$1 $2 .*\$|$1 $2 $3|" "$tmp/b/qprof_targets.txt"
}
bdir=$(sed -n 's/^@ BINARY_DIR //p' "$build/qprof_targets.txt")
sdir=$(sed -n 's/^@ SOURCE_DIR //p' "$build/qprof_targets.txt")

expect 0 "every one points down" "the tree as it is" "$src"
expect 0 "no call circle" "the tree and its build as they are" "$src" --build "$build"

# One copy of the tree with every fault of the sources at once: check_deps
# reports them all, each by its own rule.
fresh
sed -i '0,/#include "/s//#include "http\/http_routes.h"\n#include "/' "$tmp/t/common/util.c"
sed -i '0,/#include "/s//#include "model\/model_scopes.h"\n#include "/' "$tmp/t/daemon/collect/cpu_table.c"
printf '#include "cyc_b.h"\n' >"$tmp/t/common/cyc_a.h"
printf '#include "cyc_a.h"\n' >"$tmp/t/common/cyc_b.h"
seq 1 700 | sed 's/^/\/\/ /' >>"$tmp/t/daemon/model/percentile.c"
sed -i '0,/#include "/s//#include "..\/collect\/cpu_table.h"\n#include "/' "$tmp/t/daemon/model/value_math.c"
sed -i '0,/#include "/s//#include "..\/testlib.h"\n#include "/' "$tmp/t/tests/common/test_hashtab.c"
sed -i '0,/#include "/s//#include "util.h"\n#include "/' "$tmp/t/daemon/model/scope_window.c"
printf 'static __thread const void *routing_now;\n' >>"$tmp/t/daemon/http/http_data.c"
sed -i '0,/#include "services.h"/s//#include "services.h"\n#include "qprofd.h"/' "$tmp/t/daemon/http/http_targets.c"
printf 'struct qp_request;\nvoid model_knows(const struct qp_request *req);\n' >>"$tmp/t/daemon/model/model_values.c"
printf '/* a comment may say qp_request and __thread */\nstatic const char *w = "qprofd";\n' \
	>>"$tmp/t/daemon/model/model_status.c"
out=$(python3 "$check" "$tmp/t" 2>&1)
rc=$?
[ $rc = 1 ] || { echo "FAIL: the broken sources: exit $rc"; fail=1; }
found() {	# found PATTERN WHAT
	if grep -q -- "$1" <<<"$out"; then
		echo "ok: $2"
	else
		echo "FAIL: $2: not reported; output:"; echo "$out" | tail -8; fail=1
	fi
}
found "common/util.c:.*may not include daemon/http/http_routes.h" "common/ including http/"
found "daemon/collect/cpu_table.c:.*may not include daemon/model/model_scopes.h" "collect/ including model/"
found "include cycle: common/cyc_a.h -> common/cyc_b.h -> common/cyc_a.h" "a cycle between two headers"
found "daemon/model/percentile.c: [0-9]* lines" "a file over the limit"
found 'daemon/model/value_math.c:.*no "../" in an include' "an include with ../"
found 'tests/common/test_hashtab.c:.*no "../" in an include' "an include with ../ in a test"
found 'daemon/model/scope_window.c:.*include it as "common/util.h"' "a header of common/ without its stage"
found 'daemon/http/http_data.c:.*per-thread state (__thread)' "per-thread state in a stage"
found 'daemon/model/model_values.c:.*names qp_request: only http/ knows the server' "model/ naming the server's request"
found 'daemon/http/http_targets.c:.*includes qprofd.h and services.h' "a handler on services seeing the daemon's state"
if grep -q 'daemon/model/model_status.c' <<<"$out"; then
	echo "FAIL: a comment or a string naming the server was reported"; fail=1
else
	echo "ok: comments and strings may name the server"
fi

# One copy of the build (its qprof_targets.txt) with every fault of the
# build at once, on a clean copy of the tree but for one test's include.
fresh
fresh_build
edit qprof_collect LINKS qprof_model
edit qprof_symbolize INCLUDES "$bdir/stage_inc/collect"
edit qprof_model INCLUDES "$sdir/daemon/export"
edit test_cpu_table LINKS qprof_http
sed -i '0,/#include "/s//#include "model\/model_scopes.h"\n#include "/' "$tmp/t/tests/collect/test_slow_kev.c"
mkdir -p "$tmp/ar"
printf 'int qp_b(int);\nint qp_a(int x) { return x ? qp_b(x - 1) : 0; }\n' >"$tmp/ar/a.c"
printf 'int qp_a(int);\nint qp_b(int x) { return x ? qp_a(x - 1) : 1; }\n' >"$tmp/ar/b.c"
cc -c -o "$tmp/ar/a.c.o" "$tmp/ar/a.c" && cc -c -o "$tmp/ar/b.c.o" "$tmp/ar/b.c" &&
	ar rcs "$tmp/ar/libfake.a" "$tmp/ar/a.c.o" "$tmp/ar/b.c.o"
set_line qprof_symbolize FILE "$tmp/ar/libfake.a"
out=$(python3 "$check" "$tmp/t" --build "$tmp/b" 2>&1)
rc=$?
[ $rc = 1 ] || { echo "FAIL: the broken build: exit $rc"; fail=1; }
found "qprof_collect: links qprof_model" "a stage library linking a stage above it"
found "qprof_symbolize: has stage_inc/collect on its include path" "symbolize/ seeing collect/'s headers"
found "qprof_model: has the source folder daemon/export/ on its include path" "a source folder on a stage's include path"
found "test_cpu_table: links 2 stage libraries" "a test linking two stages"
found "tests/collect/test_slow_kev.c:.*test_slow_kev tests daemon/collect/: may not include daemon/model/model_scopes.h" \
	"a test including a header above its stage"
found "daemon/symbolize/: call circle between a.c, b.c (a.c calls qp_b() of b.c; b.c calls qp_a() of a.c)" \
	"a circle of calls between two files of a stage"

# The layout of tests/ (TESTS_MIRROR, here --tests-mirror): a test of
# collect/ whose source is in tests/model/, and a tests/unit/ left over.
fresh
fresh_build
left=tests/unit	# a folder that is gone once tests/ mirrors daemon/
mkdir -p "$tmp/t/tests/model" "$tmp/t/$left"
cp "$(find "$src/tests" -name test_cpu_table.c | head -1)" "$tmp/t/tests/model/test_cpu_table.c"
touch "$tmp/t/$left/test_left.c"
set_line test_cpu_table SOURCES "$sdir/tests/model/test_cpu_table.c"
out=$(python3 "$check" "$tmp/t" --build "$tmp/b" --tests-mirror 2>&1)
rc=$?
[ $rc = 1 ] || { echo "FAIL: the broken layout: exit $rc"; fail=1; }
found "test_cpu_table: tests/model/test_cpu_table.c is not in tests/collect/" \
	"a test of collect/ kept in tests/model/"
found "tests/unit/: still there" "a tests/unit/ left over"
exit $fail
