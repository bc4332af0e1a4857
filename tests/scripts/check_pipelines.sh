#!/usr/bin/env bash
# check_pipelines.sh - fails when a shell script of scripts/ or bench/ pipes
# into a reader that exits before its input ends (head, grep -q/-m, sed ...q,
# awk ... exit): the writer then dies of SIGPIPE, and under `set -o pipefail`
# the whole pipeline, and the script with it, exits 141 (the
# demo). Read everything and print part of it instead (awk 'NR <= 5').
#
#   check_pipelines.sh SOURCE_DIR
set -u
src=${1:?usage: check_pipelines.sh SOURCE_DIR}
bad=0 n=0
for f in "$src"/scripts/*.sh "$src"/bench/*.sh; do
	[ -f "$f" ] || continue
	n=$((n + 1))
	# a line with a pipe (not ||) whose later command is an early-exiting reader
	while IFS=: read -r line text; do
		echo "check_pipelines: ${f#"$src"/}:$line: early-exiting reader in a pipeline: $text" >&2
		bad=$((bad + 1))
	done < <(grep -nE '(^|[^|])\|[[:space:]]*(head([[:space:]]|$)|grep[[:space:]]+(-[a-zA-Z]*[qm]|--quiet|--max-count)|sed[[:space:]].*q['\''"]?([[:space:]]|$)|awk[[:space:]].*[{;][[:space:]]*exit)' "$f" |
		 grep -vE '^[0-9]+:[[:space:]]*#')
done
echo "check_pipelines: $n scripts, $bad early-exiting reader(s) in pipelines"
[ "$n" -gt 0 ] && [ "$bad" -eq 0 ]
