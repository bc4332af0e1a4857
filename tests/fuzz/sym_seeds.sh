#!/bin/sh
# sym_seeds.sh OUT SF_OUT DEBUGROOT PROGRAM... - seeds of fuzz_symbolize from
# the symfix fixtures: each program as it is, and each stripped program
# followed by the separator line and its debug file.
set -eu
out=$1
sf=$2
droot=$3
shift 3
mkdir -p "$out"
for p in "$@"; do
	cp "$p" "$out/$(basename "$p")"
done
sep='\nQPFUZZ-DEBUG\n'
# stripped with a .gnu_debuglink; its debug file is .debug/sf_link.debug
{ cat "$sf/link/sf_link"; printf "$sep"; cat "$sf/link/.debug/sf_link.debug"; } >"$out/link+debug"
# stripped with a build-id; the debug file is the only one under DEBUGROOT
dbg=$(find "$droot/.build-id" -name '*.debug' | head -n 1)
{ cat "$sf/bid/sf_bid"; printf "$sep"; cat "$dbg"; } >"$out/bid+debug"
cp "$sf/dyn/sf_dyn" "$out/sf_dyn"
touch "$out/stamp"
