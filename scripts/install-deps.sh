#!/usr/bin/env bash
# Install the Debian 12 packages qprof needs, only those that are missing.
# Run as root. Idempotent.
#
#   scripts/install-deps.sh            everything: build, tests, benchmarks (scripts/test.sh)
#   scripts/install-deps.sh --build    what building qprof needs
#   scripts/install-deps.sh --demo     what scripts/demo.sh needs (the build's)
set -euo pipefail

# building qprofd, qprof-cli, the BPF objects and the man pages
build_pkgs=(
  build-essential cmake pkg-config clang llvm
  libbpf-dev bpftool libelf-dev zlib1g-dev libmicrohttpd-dev libjansson-dev
  libcapstone-dev          # capstone: qprofd disassembles the functions around nop5 probe sites (red zone)
  libdw-dev                # elfutils' libdw/libdwfl: source lines, inlined frames, CFI unwinding
  libsystemd-dev           # sd_notify: qprofd.service is Type=notify
  libcurl4-openssl-dev     # qprofd --otlp-endpoint and --debuginfod: pushes and fetches over http(s) (OpenSSL)
  python3                  # the man pages are generated from --help at build time
  systemtap-sdt-dev        # <sys/sdt.h>: the baseline probes of the test fixtures built with the tree
  dpkg-dev file            # the .deb (--target package): dpkg-shlibdeps finds its Depends, with file
)
# the test suite and the benchmarks, on top of the build
test_pkgs=(
  linux-perf               # perf record: the CPU unwinding baselines (bench/unwind.sh)
  systemd                  # systemd-analyze verify/security check the unit in the tests
  bpftrace                 # the attached-cost baseline (bench/)
  valgrind                 # callgrind instruction counts (bench/)
  libclang-rt-14-dev       # libFuzzer and sanitizer runtimes for the fuzz targets (tests/fuzz)
  curl                     # talking to the unix socket by hand
  golang-go                # `go tool pprof` reads /pprof/profile in the CPU integration test
  procps
  jq                       # bench/soak.sh reads the daemon's JSON (bench_soak_smoke)
  strace                   # counts the bpf() syscalls of a request in the values test
  chromium                 # headless: runs speedscope on the trace (integration_trace_client)
  prometheus               # promtool checks /metrics; the Prometheus test scrapes qprofd
  lintian                  # lints the .deb in install_deb (no error allowed)
  man-db groff-base        # the man pages read and checked in the tests
  protobuf-compiler        # protoc --decode: integration_otlp decodes every push against the schema
  debuginfod               # elfutils' server: integration_debuginfod fetches a stripped target's debug file from it
  debootstrap              # scripts/fresh_host.sh: a fresh Debian 12 root for the newcomer's walk
)

mode=all
case ${1:-} in
  --build | --demo) mode=build ;;
  "" | --all) mode=all ;;
  -h | --help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "install-deps: unknown option '$1' (--build, --demo, --all)" >&2; exit 2 ;;
esac
pkgs=("${build_pkgs[@]}")
if [ "$mode" = all ]; then
  pkgs+=("${test_pkgs[@]}")
fi

missing=()
for p in "${pkgs[@]}"; do
  # the status in a variable, not piped to grep -q: under pipefail grep -q's
  # early exit would SIGPIPE dpkg-query and count the package as missing
  st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  if [ "$st" != "install ok installed" ]; then
    missing+=("$p")
  fi
done

# npm fetches speedscope for the trace client test. A Node.js from elsewhere
# (NodeSource's nodejs bundles npm and conflicts with Debian's npm) will do:
# Debian's packages only when there is no npm at all.
if [ "$mode" = all ] && ! command -v npm >/dev/null 2>&1; then
  missing+=(nodejs npm)
fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#pkgs[@]} packages present ($mode)"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages: ${missing[*]}; run as root to install them" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# The prometheus package starts its service on every interface (:9090) and
# enables it at boot. The tests start their own on loopback: while apt
# runs, a policy-rc.d (when the machine has none) forbids service starts,
# and the boot links are removed after.
policy=/usr/sbin/policy-rc.d
own_policy=
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy"
  chmod 755 "$policy"
  own_policy=1
fi
cleanup() { if [ -n "$own_policy" ]; then rm -f "$policy"; fi; }
trap cleanup EXIT
# apt's own output (hundreds of lines on a fresh host) goes to a log, shown
# only when it fails
log=$(mktemp /tmp/qprof-install-deps.XXXXXX.log)
if ! { apt-get update -q && apt-get install -y -q --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
  tail -40 "$log" >&2
  echo "install-deps: apt-get failed (its whole output: $log)" >&2
  exit 1
fi
echo "install-deps: installed ${#missing[@]} packages and what they need (apt's output: $log)"
if [[ " ${missing[*]} " == *" prometheus "* ]]; then
  if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    systemctl disable --now prometheus >/dev/null 2>&1 || true
  else
    update-rc.d prometheus disable >/dev/null 2>&1 || true
  fi
fi
