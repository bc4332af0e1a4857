#!/bin/sh
# cfi_tables.sh - table memory and build time of the CFI table compiler for
# glibc, libstdc++ and the biggest ELF file with CFI found on this machine
# (or the files given). The goal for the set: <= 16 MiB, built in <= 1 s.
# Usage: bench/cfi_tables.sh [BUILD-DIR] [ELF-FILE...]
set -eu
build=${1:-build}
[ $# -gt 0 ] && shift
tool=$build/tests/cfi_tables_bench
[ -x "$tool" ] || { echo "cfi_tables.sh: $tool not built" >&2; exit 2; }
if [ $# -eq 0 ]; then
	libc=$(ldconfig -p | awk '/libc\.so\.6 .*x86-64/ && !f {print $NF; f = 1}')
	cxx=$(ldconfig -p | awk '/libstdc\+\+\.so\.6 .*x86-64/ && !f {print $NF; f = 1}')
	# the biggest shared library or program with an .eh_frame
	big=$(find /usr/lib /usr/bin /usr/local -xdev -type f -size +20M 2>/dev/null | while read -r f; do
		if readelf -S "$f" 2>/dev/null | grep '\.eh_frame ' >/dev/null; then
			echo "$(stat -c %s "$f") $f"
		fi
	done | sort -n | tail -1 | cut -d' ' -f2-)
	set -- "$libc" "$cxx" ${big:+"$big"}
fi
echo "load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs, $(date -u +%FT%TZ)"
for f in "$@"; do ls -lL "$f" | awk '{printf "%s: %.1f MB\n", $NF, $5 / 1e6}'; done
"$tool" "$@"
