#!/usr/bin/env bash
# Benchmark: the agent hooks, whole process, as ratios to plain git in the
# same run (see benches/hook.sh for the method: medians of RUNS runs taken
# in turns, peak memory, CALLGRIND=1 instruction counts, MARKDOWN=1 rows).
#
#   - pre-tool-use (a Claude Code Write of an ordinary file) with 200 live
#     reservations of other agents, against `git diff --cached --name-only`
#     (goal: ≤ 1.5×);
#   - session-start with 1,000 records (10 plans × (20 packets, 30 tasks,
#     40 messages, 1 lane) + the 200 reservations), against
#     `git for-each-ref refs/swarm` (goal: ≤ 3×).
#
#   benches/agent.sh                    # FILES=20000 RUNS=31
#   GIT_SWARM_BIN=path/to/git-swarm FILES=50000 RUNS=51 benches/agent.sh
set -euo pipefail

FILES=${FILES:-20000}
RUNS=${RUNS:-31}
# shellcheck source=benches/lib.sh
. "$(dirname "$0")/lib.sh"
bench_setup

echo "building the repository: $FILES files, 1,000 records, 200 reservations" >&2
{ bench_files "$FILES"; printf '\n'; } | git fast-import --quiet
git reset --quiet --hard main
python3 "$here/benches/gen_records.py" 10 20 50 p 30 40 1 | git fast-import --quiet
for i in $(seq 0 199); do
    k=$(( i % 249 + 1 ))
    d=$(printf 'd%03d' "$k")
    case $(( i % 10 )) in
        [0-4]) p=$(printf 'src/%s/f%05d.txt' "$d" $(( k + 250 * (i % 80) ))) ;;
        [5-7]) p="src/$d/" ;;
        *) p="src/$d/lane-*.txt" ;;
    esac
    git swarm --as "agent$i" reserve "$p" --lease 1d >/dev/null
done
echo "$(git for-each-ref refs/swarm | wc -l) swarm refs, $(git swarm reservations --json | grep -c '"holder"') live reservations" >&2
echo changed >> src/d000/f00000.txt
git add src/d000/f00000.txt

printf '{"session_id":"bench","cwd":"%s","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"%s/src/d000/f00000.txt","content":"x"}}' "$repo" "$repo" >"$work/pre.json"
printf '{"session_id":"bench","cwd":"%s","hook_event_name":"SessionStart","source":"startup"}' "$repo" >"$work/start.json"
# The hook reads stdin: a wrapper per input, so `measure` runs plain commands.
printf '#!/bin/sh\nexec git-swarm agent hook pre-tool-use --host claude <"%s"\n' "$work/pre.json" >"$work/bin/pre-tool-use"
printf '#!/bin/sh\nexec git-swarm agent hook session-start --host claude <"%s"\n' "$work/start.json" >"$work/bin/session-start"
printf '#!/bin/sh\nexec git diff --cached --name-only </dev/null\n' >"$work/bin/diff-cached"
printf '#!/bin/sh\nexec git for-each-ref refs/swarm </dev/null\n' >"$work/bin/for-each-ref"
chmod +x "$work/bin/pre-tool-use" "$work/bin/session-start" "$work/bin/diff-cached" "$work/bin/for-each-ref"
# A denial must be a denial (a reserved path), an allowance must be silent.
[ -z "$(pre-tool-use)" ] || { echo "pre-tool-use answered for a free path" >&2; exit 1; }
session-start | grep -q 'coordinated by git-swarm' || { echo "session-start said nothing" >&2; exit 1; }

row() { # label, baseline, command
    local label=$1 base=$2 cmd=$3
    if [ -n "${GIT_SWARM_BIN_BEFORE:-}" ]; then # two builds: see compare.sh
        turns "" "- $base" "before $cmd" "after $cmd"
        compare_row "$label" "$cmd" 1 2 3 "$(compare_instructions "" "$cmd")"
        return
    fi
    turns "" "- $base" "after $cmd"
    local b m
    b=$(median <"$work/t.1"); m=$(median <"$work/t.2")
    awk -v l="$label" -v c="$cmd" -v m="$m" -v b="$b" -v base="$base" -v md="${MARKDOWN:-}" 'BEGIN {
        if (md != "") printf "| %s | `%s` | %.1f ms | `%s` %.1f ms | **%.2f×** |\n", l, c, m / 1000, base, b / 1000, m / b
        else printf "%-34s %-14s %7.2f ms  %-13s %7.2f ms  ratio %5.2f\n", l, c, m / 1000, base, b / 1000, m / b }'
}
row "pre-tool-use, 200 reservations" diff-cached pre-tool-use
row "session-start, 1,000 records" for-each-ref session-start
