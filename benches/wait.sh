#!/usr/bin/env bash
# Benchmark: what `git swarm wait --for packet` costs while nothing arrives,
# with many unrelated records on the remote, as a ratio to the same wait
# with none (issue 30: each round used to list every swarm ref of the
# remote, so 10,000 message refs made every round dearer).
#
#   benches/wait.sh                       # 10,000 message refs, the release binary
#   MESSAGES=2000 benches/wait.sh
#   GIT_SWARM_BIN=path/to/git-swarm benches/wait.sh   # e.g. an older build, for a before/after
#
# The wait runs with virtual sleeps (GIT_SWARM_VIRTUAL_WAITS=1): a 30-minute
# timeout is played out at once, always in the same number of rounds, so
# the CPU seconds (user+sys, git's processes included) compare the rounds
# themselves. Prints both CPU times and their ratio (1.0: the unrelated
# records cost nothing).
set -euo pipefail

MESSAGES=${MESSAGES:-10000}
# shellcheck source=benches/lib.sh
. "$(dirname "$0")/lib.sh"
bench_setup

git commit --quiet --allow-empty -m init
git init --quiet --bare "$work/remote.git"
git remote add origin "$work/remote.git"
git push --quiet origin main
git swarm plan new p >/dev/null
git swarm sync >/dev/null 2>&1 || true
head=$(git rev-parse HEAD)

# CPU seconds (user+sys, children included) of one 30-minute virtual wait.
cpu() {
    local TIMEFORMAT='%U %S'
    { time GIT_SWARM_VIRTUAL_WAITS=1 git swarm wait --for packet --plan p \
        --timeout 30m --json >/dev/null 2>&1 || true; } 2>&1 | awk '{print $1 + $2}'
}

quiet=$(cpu)
echo "adding $MESSAGES message refs to the remote" >&2
for i in $(seq 1 "$MESSAGES"); do
    echo "create refs/swarm/messages/_/bench-$i $head"
done | git --git-dir="$work/remote.git" update-ref --stdin
busy=$(cpu)
printf '%-44s %8s CPU-s\n' "wait --for packet, no message refs" "$quiet"
printf '%-44s %8s CPU-s\n' "wait --for packet, $MESSAGES message refs" "$busy"
awk -v a="$busy" -v b="$quiet" 'BEGIN { printf "ratio %.2f\n", (b > 0 ? a / b : 0) }'
