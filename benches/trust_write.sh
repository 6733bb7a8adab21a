#!/usr/bin/env bash
# Benchmark: what signing costs a write. WRITES record writes (`task new`)
# in a repository with swarm.trust=require and an agent key (each commit
# signed by `ssh-keygen -Y sign`, each record read checked) against the same
# writes with trust off and no key, one write of each per round, in turns,
# in the same run; the ratio of the totals and of the medians.
#
#   benches/trust_write.sh
#   WRITES=100 GIT_SWARM_BIN=target/debug/git-swarm benches/trust_write.sh
set -euo pipefail

WRITES=${WRITES:-100}
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=benches/lib.sh
. "$here/benches/lib.sh"
bench_setup
now_ns() { date +%s%N; }

make_repo() { # dir
    git init --quiet -b main "$1"
    git -C "$1" config swarm.as bench
    git -C "$1" commit --quiet --allow-empty -m init
}
off=$work/off
on=$work/on
make_repo "$off"
make_repo "$on"
line=$(cd "$on" && git-swarm agent keygen --as bench --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["allowed_signers"])')
mkdir -p "$on/.swarm"
echo "$line" >"$on/.swarm/allowed_signers"
git -C "$on" add .swarm
git -C "$on" commit --quiet -m "trust list"
git -C "$on" config swarm.trust require
(cd "$off" && git-swarm plan new p >/dev/null)
(cd "$on" && git-swarm plan new p >/dev/null)

: >"$work/off.ns"
: >"$work/on.ns"
for i in $(seq "$WRITES"); do
    for side in off on; do
        cd "$work/$side"
        t0=$(now_ns)
        git-swarm task new "t$i" --plan p --title "task $i" >/dev/null
        t1=$(now_ns)
        echo $((t1 - t0)) >>"$work/$side.ns"
    done
done
cd "$on"
if git-swarm task list --plan p | grep -q UNTRUSTED; then
    echo "trust write bench: some tasks are not trusted" >&2
    exit 1
fi
signed=$(git for-each-ref --format='%(objectname)' refs/swarm/tasks | while read -r c; do git cat-file commit "$c" | grep -c '^gpgsig ' || true; done | awk '{ s += $1 } END { print s }')
sum() { awk '{ s += $1 } END { print s }' "$1"; }
b=$(sum "$work/off.ns")
c=$(sum "$work/on.ns")
bm=$(median <"$work/off.ns")
cm=$(median <"$work/on.ns")
echo "== trust, writes ($WRITES task new each, in turns; $signed of $WRITES signed with trust on)"
awk -v b="$b" -v c="$c" -v n="$WRITES" 'BEGIN { printf "total: swarm.trust=require + key %.0f ms / off %.0f ms = %.2fx (%.1f ms more a write)\n", c / 1e6, b / 1e6, c / b, (c - b) / n / 1e6 }'
awk -v b="$bm" -v c="$cm" 'BEGIN { printf "median write: %.1f ms / %.1f ms = %.2fx\n", c / 1e6, b / 1e6, c / b }'
