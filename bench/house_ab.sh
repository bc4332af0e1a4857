#!/usr/bin/env bash
# bench/house_ab.sh OLD_QPROFD [BUILD_DIR] - the costs of the stage
# restructure: an older qprofd against this build's, in one run, with the
# same target programs (BUILD_DIR/bench, this build's), so that only the
# daemon differs. Each figure is the existing bench's own:
#
#   scope, ring      bench/ring.sh: ns per scope (enter + exit) on the ring
#   scope, bpf       bench/ring.sh: ns per scope on the BPF collector
#   sampling 999 Hz  bench/cpu.sh 1): cpu_work's median run at 999 Hz over
#                    its median unprofiled run (a slowdown; 1.000 = none)
#   export folded    bench/cpu.sh 3): GET /api/cpu/folded of one run's
#                    samples (~2 x 999 x EXPORT_SECONDS), median ms
#
# The two daemons alternate: ring.sh ROUNDS times each (old, new, old, ...),
# then cpu.sh once each. It prints every figure of each round, the median
# of each daemon and the ratio new / old (below 1: the new one is cheaper),
# with the load average at the start and the end. Needs root (qprofd loads
# BPF), perf (cpu.sh's export part) and curl. The old qprofd is built from
# an older commit in a scratch directory, e.g.
#
#   git archive COMMIT | tar -x -C /tmp/old/src
#   cmake -S /tmp/old/src -B /tmp/old/build -DCMAKE_BUILD_TYPE=RelWithDebInfo
#   cmake --build /tmp/old/build --target qprofd
#   sudo bench/house_ab.sh /tmp/old/build/daemon/qprofd build
#
# Environment: ROUNDS (3), N_ATTACHED (2000000), and cpu.sh's REPS (3),
# OVERHEAD_SECONDS (3), ACC_SECONDS (3), EXPORT_SECONDS (20), EXPORT_REPS
# (3), THREADS. Figures are printed, never judged by the exit status.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
old=${1:?usage: house_ab.sh OLD_QPROFD [BUILD_DIR]}
build=$(cd "${2:-$root/build}" 2>/dev/null && pwd) || { echo "no build directory '${2:-$root/build}'" >&2; exit 2; }
new=$build/daemon/qprofd
for q in "$old" "$new"; do
	[ -x "$q" ] || { echo "$q: no qprofd there" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "house_ab.sh: needs root (qprofd loads BPF)" >&2; exit 2; }
ROUNDS=${ROUNDS:-3}
export N_ATTACHED=${N_ATTACHED:-2000000}
export REPS=${REPS:-3} OVERHEAD_SECONDS=${OVERHEAD_SECONDS:-3} ACC_SECONDS=${ACC_SECONDS:-3}
export EXPORT_SECONDS=${EXPORT_SECONDS:-20} EXPORT_REPS=${EXPORT_REPS:-3}
export RING_BPFTRACE=0	# the same for both daemons: not run
tmp=$(mktemp -d /tmp/qprof-house-ab.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
load() { cut -d' ' -f1-3 /proc/loadavg; }
median() { printf '%s\n' "$@" | grep . | sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

load0=$(load)
echo "== house_ab: old $old"
echo "             new $new"
echo "   targets from $build/bench; load $load0"
declare -A fig	# fig[which,daemon] = space-separated figures
for ((r = 1; r <= ROUNDS; r++)); do
	for d in old new; do
		q=$old
		[ $d = new ] && q=$new
		QPROFD=$q "$here/ring.sh" "$build" >"$tmp/ring.$d.$r" 2>&1
		ring=$(sed -n 's/.*under qprofd (default: ring):.* -> \([-0-9.]*\) ns per scope/\1/p' "$tmp/ring.$d.$r")
		bpf=$(sed -n 's/.*under qprofd --collector bpf:.* -> \([-0-9.]*\) ns per scope/\1/p' "$tmp/ring.$d.$r")
		fig[ring,$d]+=" $ring" fig[bpf,$d]+=" $bpf"
		echo "  round $r $d: ring ${ring:-?} ns/scope, bpf ${bpf:-?} ns/scope (load $(load))"
		[ -n "$ring" ] && [ -n "$bpf" ] || tail -5 "$tmp/ring.$d.$r" | sed 's/^/    /'
	done
done
for d in old new; do
	q=$old
	[ $d = new ] && q=$new
	QPROFD=$q "$here/cpu.sh" "$build" >"$tmp/cpu.$d" 2>&1
	m=$(grep -m1 'medians: unprofiled' "$tmp/cpu.$d")
	m0=$(sed -n 's/.*unprofiled \([0-9.]*\) ms.*/\1/p' <<<"$m")
	m999=$(sed -n 's/.*999 Hz \([0-9.]*\) ms.*/\1/p' <<<"$m")
	ex=$(sed -n 's/.*medians: qprofd folded \([0-9.]*\) ms.*/\1/p' "$tmp/cpu.$d")
	ns=$(sed -n 's/.*samples: qprofd \([0-9]*\) .*/\1/p' "$tmp/cpu.$d" | tail -1)
	slow=
	[ -n "$m0" ] && [ -n "$m999" ] && slow=$(awk -v a="$m999" -v b="$m0" 'BEGIN { printf "%.4f", a / b }')
	fig[samp,$d]=$slow fig[export,$d]=$ex
	echo "  cpu.sh $d: unprofiled ${m0:-?} ms, 999 Hz ${m999:-?} ms (x${slow:-?}), folded export ${ex:-?} ms of ${ns:-?} samples (load $(load))"
	[ -n "$slow" ] && [ -n "$ex" ] || grep -m5 -i 'skipped\|did not\|warning' "$tmp/cpu.$d" | sed 's/^/    /'
done
echo ""
echo "== summary (medians; ratio new / old: below 1 the new build is cheaper); load $load0 -> $(load)"
printf '  %-30s %12s %12s %8s\n' figure old new ratio
for k in ring bpf samp export; do
	case $k in
	ring) name="scope on the ring (ns)" ;;
	bpf) name="scope on BPF (ns)" ;;
	samp) name="run at 999 Hz / unprofiled" ;;
	export) name="folded export (ms)" ;;
	esac
	# shellcheck disable=SC2086
	o=$(median ${fig[$k,old]}) n=$(median ${fig[$k,new]})
	if [ -n "$o" ] && [ -n "$n" ]; then
		printf '  %-30s %12s %12s %8s\n' "$name" "$o" "$n" "$(awk -v a="$n" -v b="$o" 'BEGIN { if (b != 0) printf "%.3f", a / b; else print "-" }')"
	else
		printf '  %-30s %12s %12s %8s\n' "$name" "${o:-?}" "${n:-?}" "-"
	fi
done
exit 0
