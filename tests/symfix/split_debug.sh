#!/bin/sh
# split_debug.sh MODE IN OUT DEBUGROOT - strip IN into OUT and put its
# symbols in a separate debug file: MODE "buildid" puts it at
# DEBUGROOT/.build-id/xx/rest.debug, MODE "debuglink" at
# dirname(OUT)/.debug/basename(OUT).debug with a .gnu_debuglink in OUT.
set -eu
mode=$1
in=$2
out=$3
root=$4
dir=$(dirname "$out")
base=$(basename "$out")
mkdir -p "$dir"
rm -f "$out" "$out.dbgtmp"
objcopy --only-keep-debug "$in" "$out.dbgtmp"
strip --strip-all -o "$out" "$in"
case $mode in
buildid)
	id=$(readelf -n "$in" | sed -n 's/^ *Build ID: *\([0-9a-f]*\).*/\1/p' | head -n 1)
	if [ -z "$id" ]; then
		echo "split_debug.sh: no build-id in $in" >&2
		exit 1
	fi
	sub=$(printf '%s' "$id" | cut -c1-2)
	rest=$(printf '%s' "$id" | cut -c3-)
	mkdir -p "$root/.build-id/$sub"
	mv "$out.dbgtmp" "$root/.build-id/$sub/$rest.debug"
	;;
debuglink)
	mkdir -p "$dir/.debug"
	mv "$out.dbgtmp" "$dir/.debug/$base.debug"
	objcopy --add-gnu-debuglink="$dir/.debug/$base.debug" "$out"
	;;
strip)
	rm -f "$out.dbgtmp"
	;;
*)
	echo "split_debug.sh: unknown mode $mode" >&2
	exit 2
	;;
esac
