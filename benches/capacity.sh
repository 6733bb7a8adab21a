#!/usr/bin/env bash
# Benchmark: the session-start hook with and without the capacity check,
# in the same run (medians of RUNS runs taken in turns; see benches/hook.sh
# for the method), on a repository with 1,000 records (as benches/agent.sh)
# and a kit stand-in (`ak` on PATH answering the kit's JSON). The cache is
# filled once before the runs, so every timed check finds it fresh: at most
# one process start and no network (goal: ≤ 1.2×). A third row times the
# check with a stale cache (the stand-in started every run).
#
#   benches/capacity.sh                 # RUNS=31
#   GIT_SWARM_BIN=target/debug/git-swarm RUNS=21 benches/capacity.sh
set -euo pipefail

FILES=${FILES:-2000}
RUNS=${RUNS:-31}
# shellcheck source=benches/lib.sh
. "$(dirname "$0")/lib.sh"
bench_setup

{ bench_files "$FILES"; printf '\n'; } | git fast-import --quiet
git reset --quiet --hard main
python3 "$here/benches/gen_records.py" 10 20 50 p 30 40 1 | git fast-import --quiet
echo "$(git for-each-ref refs/swarm | wc -l) swarm refs" >&2

cat >"$work/bin/ak" <<'AK'
#!/bin/sh
echo '{"state":"ok","percent_free":64,"window":"five_hour","resets_at":"2026-01-01T05:00:00Z","account":"work1"}'
AK
chmod +x "$work/bin/ak"
printf '{"session_id":"bench","cwd":"%s","hook_event_name":"SessionStart","source":"startup"}' "$repo" >"$work/start.json"
printf '#!/bin/sh\nGIT_SWARM_CAPACITY=off exec git-swarm agent hook session-start --host claude <"%s"\n' "$work/start.json" >"$work/bin/start-without"
printf '#!/bin/sh\nexec git-swarm agent hook session-start --host claude <"%s"\n' "$work/start.json" >"$work/bin/start-with"
printf '#!/bin/sh\nrm -f "%s"/.git/swarm/capacity/*.json\nexec git-swarm agent hook session-start --host claude <"%s"\n' "$repo" "$work/start.json" >"$work/bin/start-stale"
chmod +x "$work/bin/start-without" "$work/bin/start-with" "$work/bin/start-stale"
start-without | grep -q 'coordinated by git-swarm' || { echo "session-start said nothing" >&2; exit 1; }
start-without | grep -q 'Capacity:' && { echo "the check ran with GIT_SWARM_CAPACITY=off" >&2; exit 1; }
start-with | grep -q 'Capacity: ok 64% @work1 (command' || { echo "the check did not read the stand-in" >&2; exit 1; }

turns "" "- start-without" "- start-with" "- start-stale"
b=$(median <"$work/t.1"); w=$(median <"$work/t.2"); s=$(median <"$work/t.3")
awk -v b="$b" -v w="$w" -v s="$s" -v md="${MARKDOWN:-}" 'BEGIN {
    if (md != "") {
        printf "| session-start, capacity check off | %.1f ms | 1.00× |\n", b / 1000
        printf "| session-start, check with a fresh cache | %.1f ms | **%.2f×** |\n", w / 1000, w / b
        printf "| session-start, check with a stale cache (ak started) | %.1f ms | %.2f× |\n", s / 1000, s / b
    } else {
        printf "session-start, check off            %7.2f ms\n", b / 1000
        printf "session-start, check, fresh cache    %7.2f ms  ratio %5.2f\n", w / 1000, w / b
        printf "session-start, check, stale cache    %7.2f ms  ratio %5.2f\n", s / 1000, s / b
    } }'
