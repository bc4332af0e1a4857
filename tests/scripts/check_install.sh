#!/usr/bin/env bash
# check_install.sh SOURCE_DIR BUILD_DIR VERSION - `cmake --install` into a
# staging root (DESTDIR, prefix /usr), then: the file list; the unit's
# ExecStart naming the installed qprofd; both programs' --version; a marked
# program compiled through qprof.pc and through find_package(qprof), its
# sites read back by the installed qprof-cli; `man qprof-cli` from the
# staged man pages; the bash completion's commands, options and pids.
set -euo pipefail
src=$1 build=$2 version=$3
tmp=$(mktemp -d /tmp/qprof-install.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
stage=$tmp/stage
fail() { echo "FAIL: $*" >&2; exit 1; }

DESTDIR=$stage cmake --install "$build" --prefix /usr >"$tmp/install.log" 2>&1 ||
	{ cat "$tmp/install.log" >&2; fail "cmake --install"; }
root=$stage/usr

# --- the file list: exactly these, plus the docs tree ---
help=$("$build/cli/qprof-cli" --help)
cmds=$(awk '/^Commands:/ { on = 1; next } on && NF == 0 { on = 0 } on { print $1 }' <<<"$help")
expect=$tmp/expect
{
	echo usr/bin/qprof-cli
	echo usr/sbin/qprofd
	for h in "$src"/include/qprof/*.h; do echo "usr/include/qprof/$(basename "$h")"; done
	echo usr/lib/systemd/system/qprofd.service
	echo usr/share/bash-completion/completions/qprof-cli
	echo usr/share/cmake/qprof/qprofConfig.cmake
	echo usr/share/cmake/qprof/qprofConfigVersion.cmake
	echo usr/share/cmake/qprof/qprofTargets.cmake
	echo usr/share/doc/qprof/CHANGELOG.md
	echo usr/share/doc/qprof/README.md
	echo usr/share/doc/qprof/changelog.gz
	echo usr/share/doc/qprof/copyright
	echo usr/share/man/man1/qprof-cli.1.gz
	for c in $cmds; do echo "usr/share/man/man1/qprof-cli-$c.1.gz"; done
	echo usr/share/man/man8/qprofd.8.gz
	echo usr/share/pkgconfig/qprof.pc
} | sort >"$expect"
(cd "$stage" && find . -type f | sed 's|^\./||' | grep -v '^usr/share/doc/qprof/docs/' | sort) >"$tmp/got"
if ! diff -u "$expect" "$tmp/got"; then fail "installed files differ from the expected list"; fi
ndocs=$(cd "$src/docs" && find . -name '*.md' | wc -l)
ngot=$(cd "$root/share/doc/qprof/docs" && find . -name '*.md' | wc -l)
[ "$ndocs" -eq "$ngot" ] || fail "docs: $ngot installed of $ndocs"
echo "ok: $(wc -l <"$tmp/got") files + $ngot docs pages installed"

# --- the unit names the installed qprofd ---
exec_start=$(grep '^ExecStart=' "$root/lib/systemd/system/qprofd.service")
case $exec_start in
ExecStart=/usr/sbin/qprofd\ *) echo "ok: $exec_start" ;;
*) fail "unit: $exec_start" ;;
esac
grep -q '^Documentation=man:qprofd(8) file:///usr/share/doc/qprof/README.md$' "$root/lib/systemd/system/qprofd.service" ||
	fail "unit: Documentation= not rewritten"

# --- --version ---
[ "$("$root/sbin/qprofd" --version)" = "qprofd $version" ] || fail "qprofd --version: $("$root/sbin/qprofd" --version)"
[ "$("$root/bin/qprof-cli" --version)" = "qprof-cli $version" ] || fail "qprof-cli --version"
echo "ok: --version $version on both"

# --- a marked program, through qprof.pc and through find_package(qprof) ---
cat >"$tmp/marked.c" <<'EOF'
#include <qprof/qprof.h>
static int work(int n)
{
	QPROF_FUNC();
	int s = 0;
	{
		QPROF_SCOPE("installed_scope");
		for (int i = 0; i < n; i++)
			s += i;
	}
	QPROF_MARK("installed_mark");
	return s;
}
int main(void) { return work(10) == 45 ? 0 : 1; }
EOF
check_sites() {	# BINARY HOW
	"$1" || fail "$2: the marked program exits $?"
	out=$("$root/bin/qprof-cli" probes "$1")
	grep -q 'scope  *installed_scope' <<<"$out" || { echo "$out" >&2; fail "$2: scope site not found"; }
	grep -q 'mark  *installed_mark' <<<"$out" || fail "$2: mark site not found"
	grep -q 'func  *work' <<<"$out" || fail "$2: func site not found"
	echo "ok: $2: a marked program compiled, its 3 sites read by the installed qprof-cli"
}
grep -qx 'prefix=/usr' "$root/share/pkgconfig/qprof.pc" || fail "qprof.pc: prefix is not /usr"
# the staged root as the sysroot: what a build on the installed system sees
pc() { PKG_CONFIG_SYSROOT_DIR=$stage PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 \
	PKG_CONFIG_LIBDIR=$root/share/pkgconfig pkg-config "$@"; }
cflags=$(pc --cflags qprof | sed 's/ *$//')
[ "$cflags" = "-I$root/include" ] || fail "pkg-config --cflags qprof: '$cflags' (want -I$root/include)"
pcver=$(pc --modversion qprof)
[ "$pcver" = "$version" ] || fail "pkg-config --modversion: $pcver"
cc -O2 $cflags -o "$tmp/marked_pc" "$tmp/marked.c"
check_sites "$tmp/marked_pc" "qprof.pc"

mkdir -p "$tmp/proj"
cp "$tmp/marked.c" "$tmp/proj/"
cat >"$tmp/proj/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.18)
project(uses_qprof C)
find_package(qprof $version REQUIRED)
add_executable(marked marked.c)
target_link_libraries(marked PRIVATE qprof::markers)
EOF
cmake -S "$tmp/proj" -B "$tmp/proj/build" -DCMAKE_PREFIX_PATH="$root" \
	-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF >"$tmp/proj.log" 2>&1 ||
	{ cat "$tmp/proj.log" >&2; fail "find_package(qprof)"; }
grep -q "qprof_DIR:PATH=$root/share/cmake/qprof" "$tmp/proj/build/CMakeCache.txt" ||
	fail "find_package found another qprof: $(grep qprof_DIR "$tmp/proj/build/CMakeCache.txt")"
cmake --build "$tmp/proj/build" >>"$tmp/proj.log" 2>&1 || { cat "$tmp/proj.log" >&2; fail "build with qprof::markers"; }
check_sites "$tmp/proj/build/marked" "find_package(qprof)"
# a version the package is not compatible with is refused
sed -i "s/find_package(qprof $version REQUIRED)/find_package(qprof 99 REQUIRED)/" "$tmp/proj/CMakeLists.txt"
if cmake -S "$tmp/proj" -B "$tmp/proj/build99" -DCMAKE_PREFIX_PATH="$root" >/dev/null 2>&1; then
	fail "find_package(qprof 99) accepted version $version"
fi

# --- man pages ---
page=$(MANWIDTH=80 man -M "$root/share/man" qprof-cli 2>&1) || fail "man qprof-cli: $page"
grep -q '^COMMANDS' <<<"$page" || fail "man qprof-cli: no COMMANDS section"
grep -q 'scopes' <<<"$page" || fail "man qprof-cli: no scopes command"
page=$(MANWIDTH=80 man -M "$root/share/man" qprof-cli-scopes)
grep -q -- '--seconds' <<<"$page" || fail "man qprof-cli-scopes"
page=$(MANWIDTH=80 man -M "$root/share/man" 8 qprofd)
grep -q -- '--frequency' <<<"$page" || fail "man 8 qprofd"
echo "ok: man qprof-cli, qprof-cli-scopes, qprofd from the staged pages"

# --- bash completion ---
complete_words() {	# WORD...: what completing the last word offers
	bash -c '
		source "$1"; shift
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		_qprof_cli
		printf "%s\n" "${COMPREPLY[@]}"' _ "$root/share/bash-completion/completions/qprof-cli" "$@"
}
got=$(complete_words "$root/bin/qprof-cli" sc)
[ "$got" = scopes ] || fail "completion of 'sc': '$got'"
got=$(complete_words "$root/bin/qprof-cli" scopes --s)
grep -qx -- --seconds <<<"$got" || fail "completion of 'scopes --s': '$got'"
grep -qx -- --socket <<<"$got" || fail "completion of 'scopes --s': no --socket"
got=$(complete_words "$root/bin/qprof-cli" heap --kind gr)
[ "$got" = growth ] || fail "completion of '--kind gr': '$got'"
sleep 30 & spid=$!
got=$(complete_words "$root/bin/qprof-cli" --socket "$tmp/none.sock" scopes --pid "$spid")
kill "$spid"; wait "$spid" 2>/dev/null || true
[ "$got" = "$spid" ] || fail "completion of --pid $spid without a daemon: '$got'"
echo "ok: bash completion: commands, options, --kind values, pids"
echo "PASS"
