#!/bin/bash
# check_deps_selftest.sh SOURCE_DIR - scripts/check_deps.py on the real tree
# (must pass) and on copies of it broken three ways (must fail, naming the
# fault): an include that points up a layer, an include cycle, a file too long.
set -u
src=$1
check=$src/scripts/check_deps.py
tmp=$(mktemp -d /tmp/qprof-check-deps.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
expect() {	# expect RC PATTERN WHAT DIR
	out=$(python3 "$check" "$4" 2>&1)
	rc=$?
	if [ "$rc" != "$1" ] || ! grep -q -- "$2" <<<"$out"; then
		echo "FAIL: $3: exit $rc, output:"; echo "$out" | tail -5; fail=1
	else
		echo "ok: $3"
	fi
}
fresh() {
	rm -rf "$tmp/t" && mkdir -p "$tmp/t" &&
	cp -r "$src/common" "$src/daemon" "$src/cli" "$src/bpf" "$src/include" "$tmp/t/"
}
expect 0 "every one points down" "the tree as it is" "$src"
fresh
sed -i '0,/#include "/s//#include "http\/http_routes.h"\n#include "/' "$tmp/t/common/util.c"
expect 1 "common/util.c:.*may not include daemon/http/http_routes.h" "common/ including http/" "$tmp/t"
fresh
sed -i '0,/#include "/s//#include "model\/model_scopes.h"\n#include "/' "$tmp/t/daemon/collect/cpu_table.c"
expect 1 "daemon/collect/cpu_table.c:.*may not include daemon/model/model_scopes.h" "collect/ including model/" "$tmp/t"
fresh
printf '#include "cyc_b.h"\n' >"$tmp/t/common/cyc_a.h"
printf '#include "cyc_a.h"\n' >"$tmp/t/common/cyc_b.h"
expect 1 "include cycle: common/cyc_a.h -> common/cyc_b.h -> common/cyc_a.h" "a cycle between two headers" "$tmp/t"
fresh
seq 1 700 | sed 's/^/\/\/ /' >>"$tmp/t/daemon/model/percentile.c"
expect 1 "daemon/model/percentile.c: [0-9]* lines" "a file over the limit" "$tmp/t"
exit $fail
