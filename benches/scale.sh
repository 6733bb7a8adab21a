#!/usr/bin/env bash
# Benchmark: git-swarm at months-of-swarm scale, as ratios to plain git
# measured in the same run.
#
#   1. `status`, `plan list`, `packets` vs `git for-each-ref refs/swarm`, with
#      PLANS plans and PLANS*PACKETS_PER_PLAN packets, before and after gc;
#   2. `sync` of SYNC_RECORDS changed records: git processes spawned, pushes
#      made, and time vs a plain `git push --atomic` of the same refs;
#   3. peak memory (max RSS) of each git-swarm command.
#
#   benches/scale.sh
#   PLANS=1000 PACKETS_PER_PLAN=10 SYNC_RECORDS=1000 RUNS=10 benches/scale.sh
#   GIT_SWARM_BIN=path/to/git-swarm KEEP=1 benches/scale.sh
set -euo pipefail

PLANS=${PLANS:-1000}
PACKETS_PER_PLAN=${PACKETS_PER_PLAN:-10}
SYNC_RECORDS=${SYNC_RECORDS:-1000}
RUNS=${RUNS:-10}
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${GIT_SWARM_BIN:-$here/target/release/git-swarm}
if [ ! -x "$bin" ]; then
    echo "building $bin" >&2
    (cd "$here" && cargo build --release --quiet)
fi
real_git=$(command -v git)

work=$(mktemp -d)
if [ -n "${KEEP:-}" ]; then echo "keeping $work" >&2; else trap 'rm -rf "$work"' EXIT; fi
mkdir -p "$work/bin"
ln -s "$bin" "$work/bin/git-swarm"
export PATH="$work/bin:$PATH"
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.invalid
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.invalid

ms() { # mean milliseconds of RUNS runs of "$@" (output discarded)
    local t0 t1
    t0=$(date +%s%N)
    for _ in $(seq "$RUNS"); do "$@" >/dev/null; done
    t1=$(date +%s%N)
    awk -v ns=$(( t1 - t0 )) -v n="$RUNS" 'BEGIN { printf "%.1f", ns / n / 1e6 }'
}
rss() { /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -n 1; }
row() { # label, baseline ms, command ms, rss KB
    awk -v l="$1" -v b="$2" -v c="$3" -v m="$4" 'BEGIN { printf "%-34s %9.1f ms  (for-each-ref %6.1f ms)  ratio %6.2f   max RSS %6.1f MiB\n", l, c, b, c / b, m / 1024 }'
}

# -- 1. reads at scale ---------------------------------------------------------
repo="$work/repo"
git init --quiet -b main "$repo"
cd "$repo"
git commit --quiet --allow-empty -m init
git config swarm.as bench
echo "generating $PLANS plans and $(( PLANS * PACKETS_PER_PLAN )) packets (90% accepted)" >&2
python3 "$here/benches/gen_records.py" "$PLANS" "$PACKETS_PER_PLAN" 90 | git fast-import --quiet
git pack-refs --all
echo "live swarm refs: $(git for-each-ref refs/swarm | wc -l)" >&2

reads() { # phase
    local base
    base=$(ms git for-each-ref refs/swarm)
    for cmd in "status" "plan list" "packets"; do
        # shellcheck disable=SC2086
        row "$1: git swarm $cmd" "$base" "$(ms git-swarm $cmd)" "$(rss git-swarm $cmd)"
    done
}
echo "== reads (refs: $(git for-each-ref refs/swarm | wc -l))"
reads "before gc"
gc_ms=$( { /usr/bin/time -f '%e %M' git-swarm gc --json >"$work/gc.json"; } 2>&1 | tail -n 1)
echo "gc: $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["live_before"], "->", r["live_after"], "live refs")' "$work/gc.json"), ${gc_ms% *} s, max RSS $(( ${gc_ms#* } / 1024 )) MiB"
git pack-refs --all
echo "== reads (refs: $(git for-each-ref refs/swarm | wc -l))"
reads "after gc"

# -- 2. sync of many changed records -------------------------------------------
echo "== sync of $SYNC_RECORDS new records"
setup() { # dir: a bare remote and a clone with SYNC_RECORDS unpublished plans
    rm -rf "$1" && mkdir -p "$1" && cd "$1"
    git init --quiet --bare -b main remote.git
    git clone --quiet remote.git clone 2>/dev/null
    cd clone
    git commit --quiet --allow-empty -m init && git push --quiet origin HEAD:main
    git config swarm.as bench
    git-swarm init --no-hooks >/dev/null
    python3 "$here/benches/gen_records.py" "$SYNC_RECORDS" 0 0 s | git fast-import --quiet
}
# Count every git process git-swarm starts, through a logging `git` on PATH.
mkdir -p "$work/gitlog"
cat >"$work/gitlog/git" <<SH
#!/bin/sh
echo "\$1" >>"$work/git-calls.log"
exec "$real_git" "\$@"
SH
chmod +x "$work/gitlog/git"

setup "$work/sync"
: >"$work/git-calls.log"
t0=$(date +%s%N)
PATH="$work/gitlog:$PATH" git-swarm sync --json >"$work/sync.json"
t1=$(date +%s%N)
sync_ms=$(( (t1 - t0) / 1000000 ))
spawned=$(wc -l <"$work/git-calls.log")
pushes=$(grep -c '^push$' "$work/git-calls.log" || true)
pushed=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["pushed"]))' "$work/sync.json")
sync_rss=$(cd "$work/sync/clone" && rss git-swarm sync)

setup "$work/plain"
t0=$(date +%s%N)
git push --quiet --atomic origin 'refs/swarm/*:refs/swarm/*'
t1=$(date +%s%N)
plain_ms=$(( (t1 - t0) / 1000000 ))
echo "git swarm sync: $pushed refs published in $sync_ms ms with $spawned git processes and $pushes push(es); max RSS $(( sync_rss / 1024 )) MiB"
awk -v s="$sync_ms" -v p="$plain_ms" 'BEGIN { printf "plain git push --atomic of the same refs: %d ms; ratio %.2f\n", p, s / p }'
