#!/usr/bin/env bash
# check_docs_selftest.sh SOURCE_DIR QPROFD QPROF_CLI - the docs checks fail
# on inputs broken on purpose: a file citing a path outside its tree, a
# README showing an option that does not exist, a stale man page.
set -uo pipefail
src=$1 qprofd=$2 cli=$3
tmp=$(mktemp -d /tmp/qprof-docs-self.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# the broken paths are spelt in pieces, so that this file cites none itself
up=..
sib=sha; sib=${sib}red
doc=DES; doc=${doc}IGN; doc=$doc.md
mkdir -p "$tmp/tree/daemon"
printf '/* the API of %s/%s/%s/API.md */\n' "$up" "$up" "$sib" >"$tmp/tree/daemon/x.c"
python3 "$src/scripts/check_paths.py" "$tmp/tree" >/dev/null && fail "check_paths passed a path two folders up"
printf '/* see docs/api.md */\n' >"$tmp/tree/daemon/x.c"
mkdir -p "$tmp/tree/docs" && echo '# api' >"$tmp/tree/docs/api.md"
python3 "$src/scripts/check_paths.py" "$tmp/tree" >/dev/null || fail "check_paths refused a path inside"
printf 'see [x](%s/%s/%s/elsewhere.md)\n' "$up" "$up" "$up" >"$tmp/tree/docs/api.md"
python3 "$src/scripts/check_paths.py" "$tmp/tree" >/dev/null && fail "check_paths passed a link outside"
printf 'the contracts are in %s\n' "$doc" >"$tmp/tree/docs/api.md"
python3 "$src/scripts/check_paths.py" "$tmp/tree" >/dev/null && fail "check_paths passed a document name that is absent"
echo "ok: check_paths fails on a relative path, a link and a document name outside"

mkdir -p "$tmp/docs_src"
cp -r "$src/docs" "$tmp/docs_src/docs"
cp "$src/README.md" "$tmp/docs_src/README.md"
python3 "$src/scripts/check_doc_commands.py" "$qprofd" "$cli" "$tmp/docs_src" >/dev/null ||
	fail "check_doc_commands failed on the real README"
printf '\n```sh\nqprof-cli scopes --no-such-flag\n```\n' >>"$tmp/docs_src/README.md"
python3 "$src/scripts/check_doc_commands.py" "$qprofd" "$cli" "$tmp/docs_src" >/dev/null &&
	fail "check_doc_commands passed an unknown option"
cp "$src/README.md" "$tmp/docs_src/README.md"
printf '\n`sudo qprofd --pid N --no-such-daemon-flag`\n' >>"$tmp/docs_src/README.md"
python3 "$src/scripts/check_doc_commands.py" "$qprofd" "$cli" "$tmp/docs_src" >/dev/null &&
	fail "check_doc_commands passed an unknown qprofd flag"
cp "$src/README.md" "$tmp/docs_src/README.md"
printf '\n```\nqprof-cli nosuchcommand [--pid N]\n```\n' >>"$tmp/docs_src/README.md"
python3 "$src/scripts/check_doc_commands.py" "$qprofd" "$cli" "$tmp/docs_src" >/dev/null &&
	fail "check_doc_commands passed an unknown command in a synopsis"
echo "ok: check_doc_commands fails on an unknown option, daemon flag and command"

python3 "$src/scripts/gen_man.py" --qprofd "$qprofd" --cli "$cli" --src "$src/man" --out "$tmp/man" --version 0 ||
	fail "gen_man"
python3 "$src/scripts/gen_man.py" --check --qprofd "$qprofd" --cli "$cli" --src "$src/man" --out "$tmp/man" --version 0 >/dev/null ||
	fail "gen_man --check failed on fresh pages"
sed -i 's/frequency/frequencyX/' "$tmp/man/man8/qprofd.8"
python3 "$src/scripts/gen_man.py" --check --qprofd "$qprofd" --cli "$cli" --src "$src/man" --out "$tmp/man" --version 0 >/dev/null &&
	fail "gen_man --check passed a stale page"
echo "ok: gen_man --check fails on a stale page"
echo PASS
