#!/bin/sh
# dwarf_seeds.sh OUTDIR PROGRAM... - seeds of fuzz_dwarf: each program's
# .debug_* sections in fuzz_dwarf.c's order, joined by the separator
# "QPDW|" (an absent section is empty). A stamp file when done.
set -eu
out=$1
shift
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for prog in "$@"; do
	seed="$out/$(basename "$prog").dw"
	: >"$seed"
	first=1
	for sec in .debug_info .debug_abbrev .debug_line .debug_str .debug_line_str \
		.debug_rnglists .debug_ranges .debug_aranges .debug_addr .debug_str_offsets \
		.debug_loclists; do
		[ $first -eq 1 ] || printf 'QPDW|' >>"$seed"
		first=0
		rm -f "$tmp/s"
		if objcopy --dump-section "$sec=$tmp/s" "$prog" "$tmp/o" 2>/dev/null && [ -f "$tmp/s" ]; then
			cat "$tmp/s" >>"$seed"
		fi
	done
done
touch "$out/stamp"
