#!/usr/bin/env bash
# htab_ab.sh - the three open-addressing indexes of collect/
# (unwind_fast.c's rule cache, cpu_table.c's aggregate and stack indexes)
# against qp_htab on the same key streams (bench/htab_ab.c): instructions a
# lookup counted by callgrind inside the lookup loop, and the ratio to the
# index as written. Deterministic: the load of the machine does not change
# it. N lookups a run (default 200000). The program is built here, -O2 and
# linked statically (CC, default cc): a dynamic one runs ld.so, where
# qprofd or another tracer may hold a uprobe (_dl_debug_state), on which
# valgrind stops with SIGTRAP.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
n=${N:-200000}
command -v valgrind >/dev/null || { echo "valgrind not installed" >&2; exit 2; }
tmp=$(mktemp -d /tmp/qprof-htab-ab.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
bin=$tmp/htab_ab
${CC:-cc} -O2 -g -std=gnu11 -static -I"$root" -I"$root/include" -o "$bin" "$here/htab_ab.c" \
	"$root/common/hashtab.c" "$root/common/arena.c" -lpthread
printf '%-7s %-9s %12s %10s %8s\n' index way instructions per_lookup ratio
for c in rules keys stacks; do
	base=
	ref=
	for w in hand htab htab-mix; do
		out=$(valgrind --tool=callgrind --toggle-collect=run --callgrind-out-file="$tmp/cg" \
			"$bin" "$c" "$w" "$n" 2>"$tmp/err") || { tail -5 "$tmp/err" >&2; exit 1; }
		ir=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$tmp/err")
		ans=${out#* lookups }
		if [ -z "$ref" ]; then ref=$ans; elif [ "$ans" != "$ref" ]; then
			echo "$c $w: answers differ from hand's ($ans against $ref)" >&2; exit 1
		fi
		[ -n "$base" ] || base=$ir
		awk -v c="$c" -v w="$w" -v ir="$ir" -v n="$n" -v b="$base" \
			'BEGIN { printf "%-7s %-9s %12d %10.1f %7.2fx\n", c, w, ir, ir / n, ir / b }'
	done
done
