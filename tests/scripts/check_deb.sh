#!/usr/bin/env bash
# check_deb.sh SOURCE_DIR BUILD_DIR VERSION build|system - the Debian package CPack
# builds: its metadata (name, version, architecture, Depends from
# dpkg-shlibdeps naming the real runtime libraries, maintainer scripts) and
# its file list (the same as `cmake --install --prefix /usr`), its copyright
# file (machine-readable, checked against the source tree) and, when
# lintian is installed, no lintian error. As root, on a
# machine where no qprof package is installed, it then installs the package
# with apt (`apt-get install ./qprof_*.deb`, as a user would), runs
# `qprofd --version`, profiles a marked program with the installed qprofd
# and qprof-cli, reads `man qprof-cli`, and removes the package, checking
# that its files are gone. The system is restored whatever fails (the
# package removed again by the EXIT trap). Exit 77 (skipped) only for that
# second part, when not root or a qprof package is already installed.
# "build" makes the package (into BUILD_DIR/deb-test) and checks it;
# "system" installs that package for real (ctest runs them in that order).
set -euo pipefail
src=$1 build=$2 version=$3 mode=${4:-build}
tmp=$(mktemp -d /tmp/qprof-deb.XXXXXX)
installed= strategy_pid= qprofd_pid=
cleanup() {
	[ -n "$qprofd_pid" ] && kill -TERM "$qprofd_pid" 2>/dev/null && wait "$qprofd_pid" 2>/dev/null
	[ -n "$strategy_pid" ] && kill -INT "$strategy_pid" 2>/dev/null && wait "$strategy_pid" 2>/dev/null
	if [ -n "$installed" ]; then
		dpkg --purge qprof >/dev/null 2>&1 || echo "WARNING: could not remove the qprof package" >&2
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

command -v dpkg-deb >/dev/null || fail "dpkg-deb missing"
command -v dpkg-shlibdeps >/dev/null || fail "dpkg-shlibdeps missing (dpkg-dev: scripts/install-deps.sh)"
pkgdir=$(realpath "$build")/deb-test
deb=$pkgdir/qprof_${version}_amd64.deb
if [ "$mode" = build ]; then
	rm -rf "$pkgdir"
	cpack -G DEB --config "$build/CPackConfig.cmake" -B "$pkgdir" >"$tmp/cpack.log" 2>&1 ||
		{ cat "$tmp/cpack.log" >&2; fail "cpack"; }
fi
[ -f "$deb" ] || fail "no $deb (run with 'build' first)"

field() { dpkg-deb -f "$deb" "$1"; }
[ "$(field Package)" = qprof ] || fail "Package: $(field Package)"
[ "$(field Version)" = "$version" ] || fail "Version: $(field Version)"
[ "$(field Architecture)" = amd64 ] || fail "Architecture: $(field Architecture)"
depends=$(field Depends)
echo "Depends: $depends"
# what the two binaries link, by soname, must each be a dependency
for lib in libbpf1 libelf1 libdw1 libmicrohttpd12 libjansson4 zlib1g libsystemd0 libc6; do
	grep -Eq "(^|, )$lib( |,|$)" <<<"$depends" || fail "Depends lacks $lib"
done
# and nothing that is only needed to build or test
for dev in -dev clang llvm golang chromium prometheus; do
	if grep -q -- "$dev" <<<"$depends"; then fail "Depends names a build or test package ($dev)"; fi
done
# (read whole into a variable: a grep -q in a pipe would SIGPIPE the writer)
info=$(dpkg-deb -I "$deb")
for s in postinst prerm postrm; do
	grep -Eq "^ +[0-9]+ bytes, +[0-9]+ lines +\\* +$s " <<<"$info" || fail "no executable $s"
done

# the package holds exactly what `cmake --install --prefix /usr` installs
DESTDIR=$tmp/stage cmake --install "$build" --prefix /usr >/dev/null
(cd "$tmp/stage" && find . -type f | sed 's|^\./|/|' | sort) >"$tmp/staged"
dpkg-deb -c "$deb" | awk '$1 !~ /^d/ { print $6 }' | sed 's|^\./|/|' | sort >"$tmp/packaged"
diff -u "$tmp/staged" "$tmp/packaged" || fail "the package's files differ from the install's"
echo "ok: $(wc -l <"$tmp/packaged") files, metadata and Depends"

# the licences: /usr/share/doc/qprof/copyright in Debian's machine-readable
# format, the same as the source's, and true of the source tree
dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ./usr/share/doc/qprof/copyright >"$tmp/copyright" ||
	fail "no /usr/share/doc/qprof/copyright in the package"
cmp -s "$tmp/copyright" "$src/cmake/deb/copyright" || fail "the packaged copyright differs from cmake/deb/copyright"
python3 "$src/tests/scripts/check_copyright.py" "$tmp/copyright" "$src" || fail "the copyright file (above)"
# the check can fail: without the MIT paragraph, the headers' own SPDX lines
# disagree with what is left (the whole tree under GPL-2.0-only)
awk '/^Files: include\/qprof/ { skip = 1 } skip && /^$/ { skip = 0; next } !skip' \
	"$tmp/copyright" >"$tmp/copyright.broken"
if python3 "$src/tests/scripts/check_copyright.py" "$tmp/copyright.broken" "$src" >"$tmp/broken.log" 2>&1 ||
	! grep -q 'include/qprof/qprof.h: declares MIT' "$tmp/broken.log"; then
	cat "$tmp/broken.log" >&2
	fail "check_copyright.py did not catch a copyright file without the MIT paragraph"
fi
echo "ok: copyright (DEP-5) installed and true of the source tree"
# lintian, when installed (scripts/install-deps.sh does): no error; its
# warnings and notes are printed
if command -v lintian >/dev/null 2>&1; then
	lintian --no-cfg --display-info "$deb" >"$tmp/lintian.log" 2>&1 || true
	sed 's/^/lintian: /' "$tmp/lintian.log"
	if grep -q '^E: ' "$tmp/lintian.log"; then fail "lintian reports errors (above)"; fi
	echo "ok: lintian: no error ($(grep -c '^W: ' "$tmp/lintian.log" || true) warnings)"
else
	echo "note: lintian is not installed: the package is not linted"
fi
dpkg-deb -c "$deb" | awk '$1 !~ /^d/ && $2 != "root/root" { bad = 1 } END { exit bad }' ||
	fail "files not owned by root/root"

if [ "$mode" = build ]; then
	echo "PASS"
	exit 0
fi

# ---- a real install, as a user would make it ----
if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: not root: the package is not installed for real"
	exit 77
fi
if [ -n "$(dpkg-query -W -f='${Status}' qprof 2>/dev/null || true)" ] &&
	[ "$(dpkg-query -W -f='${Status}' qprof 2>/dev/null)" != "unknown ok not-installed" ]; then
	echo "SKIP: a qprof package is installed on this machine: left alone"
	exit 77
fi
for f in /usr/sbin/qprofd /usr/bin/qprof-cli /usr/share/pkgconfig/qprof.pc; do
	[ -e "$f" ] && { echo "SKIP: $f exists (not from a package): left alone"; exit 77; }
done
installed=1
# apt resolves the Depends from what is installed or downloadable; the
# lock wait covers another apt run on a shared machine
DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=120 \
	--no-install-recommends "$deb" >"$tmp/apt.log" 2>&1 || { cat "$tmp/apt.log" >&2; fail "apt-get install ./$(basename "$deb")"; }
[ "$(dpkg-query -W -f='${Status}' qprof)" = "install ok installed" ] || fail "not installed after apt-get install"
[ "$(/usr/sbin/qprofd --version)" = "qprofd $version" ] || fail "installed qprofd --version"
[ "$(qprof-cli --version)" = "qprof-cli $version" ] || fail "installed qprof-cli --version"
man -w qprof-cli >/dev/null || fail "man qprof-cli: no page after install"
page=$(MANWIDTH=80 man qprof-cli-slow) || fail "man qprof-cli-slow"
grep -q -- '--seconds' <<<"$page" || fail "man qprof-cli-slow: no --seconds"
grep -q '^ExecStart=/usr/sbin/qprofd ' /usr/lib/systemd/system/qprofd.service || fail "installed unit's ExecStart"
echo "ok: installed with apt; --version, man pages and the unit in place"

# profile the example strategy with the installed programs
"$build/examples/strategy" --threads 1 --rate 5000 >"$tmp/strategy.log" 2>&1 &
strategy_pid=$!
sock=$tmp/qprofd.sock
/usr/sbin/qprofd --pid "$strategy_pid" --socket "$sock" --report-dir "$tmp/reports" --no-calibrate 2>"$tmp/qprofd.log" &
qprofd_pid=$!
for _ in $(seq 400); do
	[ -S "$sock" ] && break
	kill -0 "$qprofd_pid" 2>/dev/null || { cat "$tmp/qprofd.log" >&2; qprofd_pid=; fail "installed qprofd did not start"; }
	sleep 0.05
done
[ -S "$sock" ] || fail "installed qprofd: no socket after 20 s"
out=$(qprof-cli --socket "$sock" --json scopes --seconds 1)
count=$(python3 -c 'import json, sys
rows = [r for r in json.load(sys.stdin)["scopes"] if r["name"] == "on_tick"]
print(sum(r["count"] for r in rows))' <<<"$out")
[ "$count" -gt 0 ] || fail "no on_tick instance measured in 1 s: $out"
echo "ok: the installed qprofd measured $count instances of on_tick in 1 s"
kill -TERM "$qprofd_pid"
wait "$qprofd_pid" || fail "installed qprofd exited $? on SIGTERM"
qprofd_pid=

# remove it: nothing of it stays
dpkg --remove qprof >"$tmp/rm.log" 2>&1 || { cat "$tmp/rm.log" >&2; fail "dpkg --remove qprof"; }
installed=
dpkg --purge qprof >/dev/null 2>&1 || true
while read -r f; do
	[ -e "$f" ] && fail "$f still there after remove"
done <"$tmp/packaged"
st=$(dpkg-query -W -f='${Status}' qprof 2>/dev/null || true)
case $st in *" installed") fail "still installed ($st)" ;; esac
echo "ok: removed, none of its $(wc -l <"$tmp/packaged") files left"
echo "PASS"
