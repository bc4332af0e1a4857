#!/usr/bin/env bash
# The newcomer's walk on a fresh Debian 12, by hand: debootstrap a bookworm
# root, copy a clean clone of this repository into it, and run the README's
# two commands in it exactly as written, as root, in a chroot that has what a
# freshly booted host mounts (proc, sysfs, the BPF filesystem, cgroup2, /dev,
# /run) and neither tracefs nor debugfs. Needs root and the network (the
# Debian mirror, and the npm registry for the trace client test).
#
#   scripts/fresh_host.sh [options] [demo|session|test|all|shell]  (default: all)
#     demo, test       the README's two commands (scripts/demo.sh, scripts/test.sh)
#     session          the README's install from the package and first session
#     all              demo, session, then test; shell: a shell in the root
#     --root DIR       where the fresh root goes (default /var/tmp/qprof-fresh)
#     --mirror URL     Debian mirror (default: the first bookworm URI in
#                      /etc/apt/sources.list*, else http://deb.debian.org/debian)
#     --variant V      debootstrap variant: minbase (default, the smallest
#                      system: only required packages and apt) or default
#     --ref REF        the commit to clone (default HEAD)
#     --reuse          keep the root of an earlier run (its installed
#                      packages); only the clone is made again
#
# Each command's output goes to DIR.log/<command>.log as well as the terminal;
# the script exits with the first failing command's status. The debootstrapped
# base is kept beside DIR as qprof-fresh-bookworm-VARIANT.tar, so a later run
# starts from it at once.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
root=/var/tmp/qprof-fresh
mirror= variant=minbase ref=HEAD reuse= what=all
while [ $# -gt 0 ]; do
	case $1 in
	--root) root=$2; shift 2 ;;
	--mirror) mirror=$2; shift 2 ;;
	--variant) variant=$2; shift 2 ;;
	--ref) ref=$2; shift 2 ;;
	--reuse) reuse=1; shift ;;
	demo | session | test | all | shell) what=$1; shift ;;
	-h | --help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "fresh_host: unknown argument '$1' (--help)" >&2; exit 2 ;;
	esac
done
case $variant in minbase | default) ;; *) echo "fresh_host: --variant minbase|default" >&2; exit 2 ;; esac
if [ "$(id -u)" -ne 0 ]; then
	echo "fresh_host: run as root (debootstrap, chroot, mounts)" >&2
	exit 1
fi
for t in debootstrap unshare git tar; do
	if ! command -v "$t" >/dev/null 2>&1; then
		echo "fresh_host: '$t' is missing (apt-get install debootstrap util-linux git tar)" >&2
		exit 1
	fi
done
if [ -z "$mirror" ]; then
	# deb822 (URIs:) or one-line (deb URL bookworm ...) sources
	mirror=$( (cat /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list 2>/dev/null || true) |
		awk '/^URIs:/ && $2 ~ /debian\/?$/ { print $2; exit }
		     /^deb / && $3 ~ /^bookworm$/ && $2 ~ /debian\/?$/ { print $2; exit }' || true)
	mirror=${mirror:-http://deb.debian.org/debian}
fi
sha=$(git -C "$repo" rev-parse --verify "$ref^{commit}")
logs=$root.log
base=$(dirname "$root")/qprof-fresh-bookworm-$variant.tar	# shared by every --root beside it
mkdir -p "$logs"

if [ -z "$reuse" ] || [ ! -x "$root/bin/sh" ]; then
	rm -rf "$root"
	if [ ! -s "$base" ]; then
		echo "fresh_host: debootstrap --variant=$variant bookworm from $mirror"
		tmpbase=$root.base.tmp
		rm -rf "$tmpbase"
		vopt=()
		[ "$variant" = minbase ] && vopt=(--variant=minbase)
		debootstrap "${vopt[@]}" bookworm "$tmpbase" "$mirror" >"$logs/debootstrap.log" 2>&1 || {
			echo "fresh_host: debootstrap failed (see $logs/debootstrap.log):" >&2
			tail -20 "$logs/debootstrap.log" >&2
			exit 1
		}
		# what the installer writes and debootstrap does not: the updates and
		# security suites, a hostname and the loopback names
		cat >"$tmpbase/etc/apt/sources.list" <<-EOF
			deb $mirror bookworm main
			deb $mirror bookworm-updates main
			deb ${mirror%/debian*}/debian-security bookworm-security main
		EOF
		echo fresh >"$tmpbase/etc/hostname"
		printf '127.0.0.1\tlocalhost\n127.0.1.1\tfresh\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' >"$tmpbase/etc/hosts"
		apt-get -o Dir="$tmpbase" clean >/dev/null 2>&1 || true
		tar -C "$tmpbase" -cf "$base" .
		rm -rf "$tmpbase"
	fi
	mkdir -p "$root"
	tar -C "$root" -xf "$base"
fi
# The README's install (the package) and first session, as a newcomer types
# them (root: no sudo on a fresh host; no systemd running in a chroot, so
# qprofd is started by hand, as the README shows beside the service). Each
# command is echoed; the first that fails ends the step.
cat >"$root/root/readme_session.sh" <<'SESSION'
set -euo pipefail
set -x
scripts/install-deps.sh --build
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$(nproc)"
cmake --build build --target package
apt install -y ./build/qprof_*_amd64.deb
qprofd --version
qprof-cli --version
if command -v man >/dev/null; then man -w qprof-cli; else echo "no man on this host (Debian package man-db)"; fi
pkg-config --cflags qprof
mkdir -p /root/mine && cp examples/strategy.c /root/mine/ && cd /root/mine
cc -O2 -g $(pkg-config --cflags qprof) -o strategy strategy.c -pthread
./strategy >/dev/null &
sp=$!
# the README's $(pidof strategy), by pid: a chroot sees every process of
# the machine, other programs named strategy included
trap 'kill -TERM $sp 2>/dev/null || true' EXIT
qprofd --pid $sp 2>qprofd.log &
qp=$!
trap 'kill -TERM $qp $sp 2>/dev/null || true' EXIT
for _ in $(seq 600); do [ -S /run/qprof/qprofd.sock ] && break; sleep 0.1; done
qprof-cli status
sleep 3
qprof-cli scopes
qprof-cli scopes --seconds 2
qprof-cli flamegraph -o cpu.svg --seconds 2
# calc_ma is a small part of the strategy's time: at 99 Hz it may have no
# sample yet, which the CLI says (exit 1) rather than print nothing
qprof-cli folded --scope calc_ma | awk 'END { print NR " folded stacks inside calc_ma" }' || true
qprof-cli pprof -o cpu.pb.gz
qprof-cli slow on_tick -n 5
qprof-cli offcpu -o wait.svg --seconds 2
qprof-cli trace -o trace.json --seconds 2
qprof-cli values
qprof-cli logs | tail -3
qprof-cli probes ./strategy
ls -l cpu.svg cpu.pb.gz wait.svg trace.json
kill -TERM $qp; wait $qp
kill -TERM $sp; wait $sp || true
apt-get remove -y qprof
SESSION

# the name server of this machine, as the installer's DHCP would set it
cp -L /etc/resolv.conf "$root/etc/resolv.conf"

# a clean clone of the commit: nothing of this worktree's build or state
rm -rf "$root/root/qprof"
git clone --quiet --no-hardlinks "$repo" "$root/root/qprof"
git -C "$root/root/qprof" checkout --quiet --detach "$sha"
echo "fresh_host: $root/root/qprof at $(git -C "$repo" log -1 --format='%h %s' "$sha" | cut -c1-100)"

# Inside a private mount namespace, so that every mount goes with it: what
# a freshly booted Debian 12 mounts, minus tracefs and debugfs.
inner=$(cat <<'EOF'
set -eu
r=$1; what=$2; logs=$3
# the root a mount of its own, as / is on a booted host (unshare
# --propagation and pivot_root need that; a bare chroot directory is not)
mount --bind "$r" "$r"
mount -t proc proc "$r/proc"
mount -t sysfs sysfs "$r/sys"
mount -t cgroup2 cgroup2 "$r/sys/fs/cgroup" 2>/dev/null || true
mount -t bpf bpf "$r/sys/fs/bpf"
mount -t devtmpfs devtmpfs "$r/dev" 2>/dev/null || mount --bind /dev "$r/dev"
mkdir -p "$r/dev/pts" "$r/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666 devpts "$r/dev/pts"
mount -t tmpfs -o mode=1777 tmpfs "$r/dev/shm"
mount -t tmpfs -o mode=755 tmpfs "$r/run"
mkdir -p "$r/run/lock"
if grep -Eq " $r/sys/kernel/(tracing|debug)" /proc/self/mounts; then
	echo "fresh_host: tracefs or debugfs is mounted in the fresh root" >&2
	exit 1
fi
run() {	# the command as a root login shell of the fresh host would run it
	chroot "$r" /usr/bin/env -i HOME=/root USER=root LOGNAME=root SHELL=/bin/bash TERM=dumb \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		/bin/bash -c "cd /root/qprof && $1"
}
step() {	# name, command: the output to the terminal and the log, the status kept
	echo "fresh_host: [$1] $2"
	start=$(date +%s)
	set +e
	run "$2" 2>&1 | tee "$logs/$1.log"
	rc=${PIPESTATUS[0]}
	set -e
	echo "fresh_host: [$1] exit $rc after $(($(date +%s) - start)) s (log $logs/$1.log)"
	return "$rc"
}
case $what in
shell) chroot "$r" /usr/bin/env -i HOME=/root TERM="${TERM:-dumb}" PATH=/usr/sbin:/usr/bin:/sbin:/bin /bin/bash -l ;;
demo) step demo scripts/demo.sh ;;
session) step session "bash /root/readme_session.sh" ;;
test) step test scripts/test.sh ;;
all) step demo scripts/demo.sh && step session "bash /root/readme_session.sh" && step test scripts/test.sh ;;
esac
EOF
)
exec unshare --mount --propagation private bash -c "$inner" fresh_host "$root" "$what" "$logs"
