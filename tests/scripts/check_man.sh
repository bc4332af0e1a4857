#!/usr/bin/env bash
# check_man.sh SOURCE_DIR BUILD_DIR QPROFD QPROF_CLI VERSION - the built man
# pages are what the programs' --help texts and man/*.in make now (none
# stale, missing or left over), every option of every --help is in its page,
# and groff formats each page without a warning.
set -euo pipefail
src=$1 build=$2 qprofd=$3 cli=$4 version=$5
python3 "$src/scripts/gen_man.py" --check --qprofd "$qprofd" --cli "$cli" \
	--src "$src/man" --out "$build/man" --version "$version"
n=0
for page in "$build"/man/man1/*.1 "$build"/man/man8/*.8; do
	warn=$(groff -man -Tutf8 -ww -z "$page" 2>&1)
	if [ -n "$warn" ]; then
		echo "FAIL: groff warns on $page: $warn" >&2
		exit 1
	fi
	n=$((n + 1))
done
[ "$n" -ge 3 ] || { echo "FAIL: only $n pages" >&2; exit 1; }
echo "ok: $n pages format without warnings"
