#!/usr/bin/env bash
# test_redzone.sh - no function holding a qprof marker keeps data below %rsp.
# A leaf function may keep live data in the x86-64 red zone (the 128 bytes
# below %rsp); on Linux >= 6.18 a uprobe on a nop5 becomes a call into
# [uprobes-trampoline], which writes 32 bytes there. tests/qprof/
# redzone_leaf.c holds leaf-shaped functions (twenty live values and a
# marker of every kind, two small ones): built with gcc and clang at -O2,
# -O3 and -Os, as C and as C++, no rz_* function may address memory below
# %rsp (the marker's own step below the red zone, lea -0x80(%rsp),%rsp, is
# no access), nor below %rbp where %rbp is %rsp. Self-check: the same file
# built against the ABI-1 header (a bare nop5 marker) must be caught in
# every configuration. 77 (skipped) on a host other than x86-64 or without
# a compiler.
#   test_redzone.sh SOURCE_DIR
set -u
src=$1
[ "$(uname -m)" = x86_64 ] || { echo "not x86-64: skipped"; exit 77; }
command -v objdump >/dev/null || { echo "no objdump: skipped"; exit 77; }
tmp=$(mktemp -d /tmp/qprof-redzone.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# below OBJ: one line "function count" for every rz_* function that
# addresses memory below the stack pointer.
below() {
	objdump -d --no-show-raw-insn "$1" | awk '
		/^[0-9a-f]+ <[^>]+>:$/ {
			fn = $2; gsub(/[<>:]/, "", fn); fp = 0; sub_ = 0; next
		}
		fn !~ /^_?rz_/ { next }
		/mov +%rsp,%rbp/ { fp = 1 }
		/sub +\$0x[0-9a-f]+,%rsp/ { sub_ = 1 }
		/lea +-0x80\(%rsp\),%rsp/ { next }
		/-0x[0-9a-f]+\(%rsp\)/ { n[fn]++ }
		fp && !sub_ && /-0x[0-9a-f]+\(%rbp\)/ { n[fn]++ }
		END { for (f in n) print f, n[f] }'
}

fail=0 built=0
for cc in gcc clang; do
	command -v $cc >/dev/null || { echo "$cc not installed: not checked"; continue; }
	for lang in c c++; do
		for opt in -O2 -O3 -Os; do
			cfg="$cc -x $lang $opt"
			for hdr in include tests/fixtures/abi1; do
				obj=$tmp/leaf.o
				if ! $cc -x $lang $opt -g0 -I"$src/$hdr" -c "$src/tests/qprof/redzone_leaf.c" \
					-o "$obj" 2>"$tmp/err"; then
					cat "$tmp/err"
					echo "FAIL: $cfg ($hdr) does not build"
					fail=1
					continue
				fi
				nfn=$(objdump -d "$obj" | grep -cE '^[0-9a-f]+ <_?rz_[a-z_]+>:$')
				bad=$(below "$obj")
				if [ "$hdr" = include ]; then
					built=1
					if [ "$nfn" -lt 8 ]; then
						echo "FAIL: $cfg: $nfn rz_* functions found, want >= 8"
						fail=1
					elif [ -n "$bad" ]; then
						echo "FAIL: $cfg: data below %rsp in a function with a marker:"
						echo "$bad" | sed 's/^/    /'
						fail=1
					else
						echo "ok: $cfg: $nfn functions, nothing below %rsp"
					fi
				else
					# self-check: ABI-1 markers leave the compiler free to use it
					if [ -z "$bad" ]; then
						echo "FAIL: self-check: $cfg with the ABI-1 header: no red zone use found (the check cannot fail)"
						fail=1
					else
						echo "ok: self-check: $cfg with the ABI-1 header: caught $(echo "$bad" | wc -l) function(s)"
					fi
				fi
			done
		done
	done
done
[ $built = 1 ] || { echo "no compiler: skipped"; exit 77; }
exit $fail
