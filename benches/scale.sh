#!/usr/bin/env bash
# Benchmark: git-swarm at months-of-swarm scale, as ratios to plain git
# measured in the same run.
#
#   1. `status`, `plan list`, `lane list`, `packets`, `task list` and the
#      dashboard page (`state --html FILE`, what `git swarm serve` renders) vs
#      `git for-each-ref refs/swarm`, with PLANS plans and, per plan,
#      PACKETS_PER_PLAN packets (90% accepted), TASKS_PER_PLAN tasks,
#      MESSAGES_PER_PLAN messages and LANES_PER_PLAN lanes, before and after
#      gc: warm (the record cache filled by an earlier run) and cold (the
#      cache deleted before every run, so each run also writes it);
#   2. "read 150 records": `task list --plan` of a plan with 150 tasks;
#   3. `sync` of SYNC_RECORDS changed records: git processes spawned, pushes
#      made, and time vs a plain `git push --atomic` of the same refs;
#   4. peak memory (max RSS) of every git-swarm row;
#   5. trust: `plan list` of TRUST_PLANS plans signed with an ssh key, warm,
#      with swarm.trust=require (a trust list on main) vs swarm.trust=off
#      (ONLY_TRUST=1 runs this part alone).
#
#   benches/scale.sh
#   PLANS=1000 PACKETS_PER_PLAN=10 TASKS_PER_PLAN=10 MESSAGES_PER_PLAN=10 \
#     LANES_PER_PLAN=1 SYNC_RECORDS=1000 RUNS=10 benches/scale.sh
#   GIT_SWARM_BIN=path/to/git-swarm KEEP=1 benches/scale.sh
set -euo pipefail

PLANS=${PLANS:-1000}
PACKETS_PER_PLAN=${PACKETS_PER_PLAN:-10}
TASKS_PER_PLAN=${TASKS_PER_PLAN:-10}
MESSAGES_PER_PLAN=${MESSAGES_PER_PLAN:-10}
LANES_PER_PLAN=${LANES_PER_PLAN:-1}
SYNC_RECORDS=${SYNC_RECORDS:-1000}
RUNS=${RUNS:-10}
TRUST_PLANS=${TRUST_PLANS:-1000}
# shellcheck source=benches/lib.sh
. "$(dirname "$0")/lib.sh"
real_git=$(command -v git)
bench_setup

cache="" # the record cache of the repository measured
now_ns() { date +%s%N; }
# Median milliseconds of RUNS runs each of the baseline and of "$@", taken
# in turns (so load that comes and goes hits both alike): prints
# "<baseline ms> <command ms>". COLD=1: the cache is deleted before each run.
paired() {
    local b c t0 t1
    : >"$work/b.ns"; : >"$work/c.ns"
    for _ in $(seq "$RUNS"); do
        t0=$(now_ns); git for-each-ref refs/swarm >/dev/null; t1=$(now_ns)
        echo $(( t1 - t0 )) >>"$work/b.ns"
        if [ -n "${COLD:-}" ]; then rm -rf "$cache"; fi
        t0=$(now_ns); "$@" >/dev/null; t1=$(now_ns)
        echo $(( t1 - t0 )) >>"$work/c.ns"
    done
    b=$(median <"$work/b.ns"); c=$(median <"$work/c.ns")
    awk -v b="$b" -v c="$c" 'BEGIN { printf "%.1f %.1f", b / 1e6, c / 1e6 }'
}
rss() { # max RSS in KB of one run of "$@"; COLD=1: cache deleted first
    if [ -n "${COLD:-}" ]; then rm -rf "$cache"; fi
    /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -n 1
}
row() { # label, "warm baseline, warm ms", warm rss KB, "cold baseline, cold ms", cold rss KB, instructions ratio
    awk -v l="$1" -v w="$2" -v wm="$3" -v c="$4" -v cm="$5" -v ir="$6" 'BEGIN {
        split(w, W, " "); split(c, C, " ")
        printf "%-36s warm %7.1f ms / %6.1f ms = %5.2fx (%5.1f MiB)   cold %7.1f ms / %6.1f ms = %6.2fx (%5.1f MiB)%s\n",
            l, W[2], W[1], W[2] / W[1], wm / 1024, C[2], C[1], C[2] / C[1], cm / 1024,
            (ir == "" ? "" : "   instructions " ir) }'
}

# -- 5. trust: a warm listing with signatures checked vs not ---------------------
trust_bench() {
    local dir="$work/trust" b c t0 t1 on=(env GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=swarm.trust GIT_CONFIG_VALUE_0=require)
    rm -rf "$dir" && git init --quiet -b main "$dir" && cd "$dir"
    git config swarm.as bench
    ssh-keygen -q -t ed25519 -N "" -C bench -f "$work/bench-key"
    mkdir -p .swarm
    echo "bench namespaces=\"git\" $(cut -d' ' -f1,2 "$work/bench-key.pub")" >.swarm/allowed_signers
    git add .swarm && git commit --quiet -m "trust list"
    python3 "$here/benches/gen_records.py" "$TRUST_PLANS" 0 0 t | git fast-import --quiet
    echo "signing $TRUST_PLANS plans with ssh-keygen" >&2
    python3 "$here/benches/sign_records.py" "$work/bench-key" refs/swarm/plans >/dev/null
    git pack-refs --all
    git-swarm plan list >/dev/null
    "${on[@]}" git-swarm plan list >/dev/null # fills the verdict cache: warm runs find it
    if "${on[@]}" git-swarm plan list | grep -q UNTRUSTED; then
        echo "trust bench: some plans are not trusted" >&2
        exit 1
    fi
    : >"$work/b.ns"; : >"$work/c.ns"
    for _ in $(seq "$RUNS"); do
        t0=$(now_ns); git-swarm plan list >/dev/null; t1=$(now_ns)
        echo $(( t1 - t0 )) >>"$work/b.ns"
        t0=$(now_ns); "${on[@]}" git-swarm plan list >/dev/null; t1=$(now_ns)
        echo $(( t1 - t0 )) >>"$work/c.ns"
    done
    b=$(median <"$work/b.ns"); c=$(median <"$work/c.ns")
    echo "== trust ($TRUST_PLANS signed plans; medians of $RUNS, in turns)"
    awk -v b="$b" -v c="$c" 'BEGIN { printf "plan list, warm: swarm.trust=require %.1f ms / off %.1f ms = %.2fx\n", c / 1e6, b / 1e6, c / b }'
    : >"$work/c.ns"
    for _ in $(seq "$RUNS"); do
        rm -rf "$(git rev-parse --git-common-dir)/swarm/cache/trust"
        t0=$(now_ns); "${on[@]}" git-swarm plan list >/dev/null; t1=$(now_ns)
        echo $(( t1 - t0 )) >>"$work/c.ns"
    done
    c=$(median <"$work/c.ns")
    awk -v b="$b" -v c="$c" 'BEGIN { printf "plan list, verdicts cold (one ssh-keygen per plan): %.1f ms / off warm %.1f ms = %.2fx\n", c / 1e6, b / 1e6, c / b }'
}
if [ -n "${ONLY_TRUST:-}" ]; then
    trust_bench
    exit 0
fi

# -- 1. reads at scale ---------------------------------------------------------
cd "$repo"
git commit --quiet --allow-empty -m init
cache="$(git rev-parse --git-common-dir)/swarm/cache/records"
echo "generating $PLANS plans with $PACKETS_PER_PLAN packets (90% accepted), $TASKS_PER_PLAN tasks, $MESSAGES_PER_PLAN messages and $LANES_PER_PLAN lanes each" >&2
python3 "$here/benches/gen_records.py" "$PLANS" "$PACKETS_PER_PLAN" 90 p \
    "$TASKS_PER_PLAN" "$MESSAGES_PER_PLAN" "$LANES_PER_PLAN" | git fast-import --quiet
# One more plan with 150 tasks: "read 150 records".
python3 "$here/benches/gen_records.py" 1 0 0 big 150 0 0 | git fast-import --quiet
git pack-refs --all

reads() { # phase
    echo "$1: $(git for-each-ref refs/swarm | wc -l) refs; each row: git-swarm / git for-each-ref refs/swarm (medians of $RUNS, in turns)"
    local cmd warm cold ir
    # The floor of a cold listing: git itself reading every object of the
    # repository once (a cold read of every record inflates its commit,
    # tree and blob; git-swarm then also parses and caches them).
    paired git cat-file --batch-all-objects --batch --unordered | awk -v p="$1" '{
        printf "%s: git cat-file --batch-all-objects --batch (every object read once) %.1f ms / %.1f ms = %.2fx\n", p, $2, $1, $2 / $1 }'
    for cmd in "status" "plan list" "lane list" "packets" "task list" "task list --plan big0000" \
        "state --html $work/dashboard.html"; do
        if [ -n "${GIT_SWARM_BIN_BEFORE:-}" ]; then # two builds: see compare.sh
            WARMUP=1 turns "" "- git for-each-ref refs/swarm" "before git-swarm $cmd" "after git-swarm $cmd"
            compare_row "$1: $cmd, warm" "$cmd" 1 2 3 "$(compare_instructions "" "git-swarm $cmd")"
            WARMUP=1 turns "rm -rf '$cache'" "- git for-each-ref refs/swarm" "before git-swarm $cmd" "after git-swarm $cmd"
            compare_row "$1: $cmd, cold" "$cmd" 1 2 3
            continue
        fi
        # shellcheck disable=SC2086
        git-swarm $cmd >/dev/null # fills the cache: the warm runs find it
        # shellcheck disable=SC2086
        warm=$(paired git-swarm $cmd)
        ir=""
        if [ -n "${CALLGRIND:-}" ]; then
            # shellcheck disable=SC2086
            ir=$(awk -v c="$(instructions "" "git-swarm $cmd")" -v b="$(instructions "" "git for-each-ref refs/swarm")" \
                'BEGIN { printf "%.1fM / %.1fM = %.2fx", c / 1e6, b / 1e6, c / b }')
        fi
        # shellcheck disable=SC2086
        row "$1: $cmd" "$warm" "$(rss git-swarm $cmd)" "$(COLD=1 paired git-swarm $cmd)" \
            "$(COLD=1 rss git-swarm $cmd)" "$ir"
    done
    for cmd in "status" "plan list" "lane list" "packets" "task list"; do
        # shellcheck disable=SC2086
        git-swarm $cmd >/dev/null
    done
    echo "$1: record cache after these listings: $(du -sk "$cache" | cut -f1) KiB in $(find "$cache" -type f | wc -l) files"
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

# One sync with build NAME ("after" unless two builds are compared) and a
# plain push of the same refs right after it.
sync_once() { # name
    local t0 t1 sync_ms spawned pushes pushed sync_rss plain_ms label=""
    [ -n "${GIT_SWARM_BIN_BEFORE:-}" ] && label=" ($1)"
    build_bin "$1"
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
    echo "git swarm sync$label: $pushed refs published in $sync_ms ms with $spawned git processes and $pushes push(es); max RSS $(( sync_rss / 1024 )) MiB"
    awk -v s="$sync_ms" -v p="$plain_ms" 'BEGIN { printf "plain git push --atomic of the same refs: %d ms; ratio %.2f\n", p, s / p }'
    build_bin after
}
# SYNC_ROUNDS rounds (default 1), each build in turn.
for _ in $(seq "${SYNC_ROUNDS:-1}"); do
    for b in $(builds); do sync_once "$b"; done
done

if [ -n "${GIT_SWARM_BIN_BEFORE:-}" ]; then
    echo "== trust: not measured with two builds (a build before swarm.trust would not check)"
else
    trust_bench
fi
