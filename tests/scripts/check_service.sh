#!/usr/bin/env bash
# check_service.sh - systemd/qprofd.service against systemd's own checkers:
# `systemd-analyze verify` must pass (ExecStart pointed at the built qprofd)
# and `systemd-analyze security --offline=true` must score it <= MAX
# (it scored 9.6, UNSAFE).
#
#   check_service.sh UNIT QPROFD [MAX]
set -u
unit=${1:?usage: check_service.sh UNIT QPROFD [MAX]} qprofd=${2:?usage: check_service.sh UNIT QPROFD [MAX]}
max=${3:-3.5}
if ! command -v systemd-analyze >/dev/null; then
	echo "check_service: systemd-analyze is missing (package systemd, scripts/install-deps.sh)" >&2
	exit 1
fi
tmp=$(mktemp -d /tmp/qprof-unit.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
sed "s|/usr/local/sbin/qprofd|$qprofd|g" "$unit" >"$tmp/qprofd.service"
fail=0

out=$(systemd-analyze verify "$tmp/qprofd.service" 2>&1)
rc=$?
# verify also reports on units it pulls in; only lines about ours count
ours=$(printf '%s\n' "$out" | grep -F "qprofd.service" || true)
echo "check_service: systemd-analyze verify: exit $rc${ours:+; $ours}"
if [ "$rc" -ne 0 ] || [ -n "$ours" ]; then
	printf '%s\n' "$out" >&2
	fail=1
fi

out=$(systemd-analyze security --offline=true --no-pager "$tmp/qprofd.service" 2>&1)
score=$(printf '%s\n' "$out" | sed -n 's/.*Overall exposure level for qprofd\.service: \([0-9][0-9.]*\).*/\1/p')
echo "check_service: systemd-analyze security --offline=true: ${score:-no score} (at most $max)"
if [ -z "$score" ] || ! awk -v s="$score" -v m="$max" 'BEGIN { exit !(s + 0 <= m + 0) }'; then
	printf '%s\n' "$out" | grep -E '✗|Overall' >&2
	fail=1
fi

# the unit's contract with qprofd: notify type, the report dir under StateDirectory
for want in "Type=notify" "StateDirectory=qprof" "--report-dir /var/lib/qprof/reports" \
	    "RuntimeDirectory=qprof" "--socket /run/qprof/qprofd.sock"; do
	if ! grep -qF -- "$want" "$unit"; then
		echo "check_service: the unit lacks '$want'" >&2
		fail=1
	fi
done
exit $fail
