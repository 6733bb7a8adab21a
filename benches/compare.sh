#!/usr/bin/env bash
# Two builds of git-swarm in the same run: each benchmark times the git
# baseline, the before build and the after build in turns (the order rotated
# every round), so load that comes and goes hits all three alike. Each row:
# the baseline's median, each build's median and ratio to the baseline, and
# after/before of the medians with the 25th, 50th and 75th percentiles of the per-round after/before
# ratios (the run's noise). CALLGRIND=1 adds each build's instruction count
# (valgrind, children included), which the machine's load does not move.
#
#   benches/compare.sh BEFORE_BIN AFTER_BIN [hook] [agent] [scale]   # default: all three
#   CALLGRIND=1 RUNS=51 benches/compare.sh old/git-swarm target/release/git-swarm hook
#   MARKDOWN=1 ...        # rows as docs/benchmarks.md's before/after table
#
# The benchmarks' own variables (RUNS, FILES, PLANS, …) pass through;
# SYNC_ROUNDS (default 3 here) rounds of scale.sh's sync, both builds each.
# Prints the load average (1 min) every 10 s of the run as min / median /
# max at the end. The same as GIT_SWARM_BIN=AFTER GIT_SWARM_BIN_BEFORE=BEFORE
# benches/<name>.sh, plus the header and the load.
set -euo pipefail

if [ $# -lt 2 ]; then
    echo "usage: benches/compare.sh BEFORE_BIN AFTER_BIN [hook] [agent] [scale]" >&2
    exit 2
fi
before=$(realpath "$1") after=$(realpath "$2")
shift 2
for b in "$before" "$after"; do
    [ -x "$b" ] || { echo "$b is not an executable" >&2; exit 2; }
done
benches=("$@")
[ ${#benches[@]} -gt 0 ] || benches=(hook agent scale)
dir=$(cd "$(dirname "$0")" && pwd)

load=$(mktemp)
(while :; do cut -d' ' -f1 /proc/loadavg >>"$load"; sleep 10; done) &
sampler=$!
trap 'kill "$sampler" 2>/dev/null; rm -f "$load"' EXIT

echo "before: $before ($(sha256sum "$before" | cut -c1-12))"
echo "after:  $after ($(sha256sum "$after" | cut -c1-12))"
echo "started $(date -u '+%F %T') UTC, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for name in "${benches[@]}"; do
    echo "== $name.sh"
    GIT_SWARM_BIN=$after GIT_SWARM_BIN_BEFORE=$before SYNC_ROUNDS=${SYNC_ROUNDS:-3} "$dir/$name.sh"
done
echo "ended $(date -u '+%F %T') UTC; load average (1 min) during the run: $(sort -g "$load" |
    awk '{ v[NR] = $1 } END { printf "min %s, median %s, max %s (%d samples)", v[1], v[int((NR + 1) / 2)], v[NR], NR }')"
