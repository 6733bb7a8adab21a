#!/usr/bin/env bash
# Benchmark: `git swarm forecast` over LANES live lanes (LANES*(LANES-1)/2
# pairs plus one base check per lane) on a big repository, cold (empty
# cache) and warm (cache filled, nothing changed), and after one lane moved
# on; each as a ratio to ONE `git merge-tree --write-tree` of two lane
# branches (the unit), measured in the same run.
#
#   benches/forecast.sh                      # 50,000 files, 30 lanes (435 pairs)
#   FILES=5000 LANES=30 RUNS=5 benches/forecast.sh
#   GIT_SWARM_BIN=path/to/git-swarm KEEP=1 benches/forecast.sh
#
# The lanes: each changes a file of its own and its base's moved main
# changes another; every tenth lane edits line 1 of shared/hot.txt (those
# pairs conflict) and every tenth-plus-one edits its own line of
# shared/warm.txt, lines apart (those pairs touch the same file, cleanly). Lane records
# are written straight into refs/swarm/lanes/* (as `lane new` would leave
# them, without checking out 30 worktrees of the big tree).
# Builds target/release/git-swarm if needed. Medians of RUNS runs.
set -euo pipefail

FILES=${FILES:-50000}
LANES=${LANES:-30}
RUNS=${RUNS:-5}
# shellcheck source=benches/lib.sh
. "$(dirname "$0")/lib.sh"
bench_setup

echo "building the repository: $FILES files, $LANES lanes" >&2
start=$(date +%s)
{
    bench_files "$FILES"
    seven=$'line1\nline2\nline3\nline4\nline5\nline6\nl7\n'
    printf 'M 100644 inline shared/hot.txt\ndata %d\n%s\n' "${#seven}" "$seven"
    printf 'M 100644 inline shared/warm.txt\ndata %d\n%s\n\n' "${#seven}" "$seven"
    awk -v n="$LANES" -v files="$FILES" 'BEGIN {
        for (i = 0; i < n; i++) {
            printf "commit refs/heads/feat/lane-%03d\ncommitter bench <bench@example.invalid> 1700000000 +0000\ndata 5\nlane\nfrom :2\n", i
            body = sprintf("lane %03d\n", i)
            printf "M 100644 inline src/d%03d/f%05d.txt\ndata %d\n%s\n", i % 250, (i * 997) % files, length(body), body
            if (i % 10 == 0) {
                hot = sprintf("hot from lane %03d\nline2\nline3\nline4\nline5\nline6\nl7\n", i)
                printf "M 100644 inline shared/hot.txt\ndata %d\n%s\n", length(hot), hot
            }
            if (i % 10 == 1) {
                warm = ""
                for (l = 1; l <= 7; l++) warm = warm ((l == int(i / 10) * 3 % 7 + 1) ? sprintf("warm %03d\n", i) : (l < 7 ? "line" l "\n" : "l7\n"))
                printf "M 100644 inline shared/warm.txt\ndata %d\n%s\n", length(warm), warm
            }
            printf "\n"
            rec = sprintf("schema: swarm-lane/v1\nfeature: lane-%03d\nplan: plan-%03d\nowner: bench\nbranch: feat/lane-%03d\npath: /nowhere/lane-%03d\nbase: main\nbase_commit: \"\"\nstate: active\n", i, i % 3, i, i)
            msg = sprintf("lane lane-%03d: started\n\nSwarm-Event: lane-started\nSwarm-Actor: bench\nSwarm-Lane: lane-%03d\n", i, i)
            printf "commit refs/swarm/lanes/lane-%03d\ncommitter bench <bench@example.invalid> 1700000000 +0000\ndata %d\n%s\n", i, length(msg), msg
            printf "M 100644 inline lane.yaml\ndata %d\n%s\n\n", length(rec), rec
        }
    }'
    # main moves on after the lanes forked (a base check that must merge).
    printf 'commit refs/heads/main\ncommitter bench <bench@example.invalid> 1700000001 +0000\ndata 5\nmove\nfrom :2\n'
    printf 'M 100644 inline src/d001/moved.txt\ndata 6\nmoved\n\n'
} | git fast-import --quiet
git reset --quiet --hard main
echo "built in $(( $(date +%s) - start ))s: $(git ls-files | wc -l) files, $(git for-each-ref refs/swarm/lanes | wc -l) lane records" >&2

cache="$(git rev-parse --git-common-dir)/swarm/cache/forecast"

# lane-010 edits shared/hot.txt as lane-000 does (the last lane when fewer).
other=$(printf 'feat/lane-%03d' $(( LANES > 10 ? 10 : LANES - 1 )))
unit=$(time_us "" "git merge-tree --write-tree --name-only --messages -z feat/lane-000 $other")
git swarm forecast --json >"$work/f.json" || true
pairs=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(len(d["pairs"]), len(d["bases"]), d["conflicts"], d["same_files"])' "$work/f.json")
cold=$(time_us "rm -rf $cache" "git swarm forecast")
warm=$(time_us "" "git swarm forecast")
# One lane moves on (a new file, new content every run): its LANES-1
# pairs merge again, the rest come from the cache.
cat >"$work/move.sh" <<'MOVE'
n=$(date +%s%N)
blob=$(echo "$n" | git hash-object -w --stdin)
tree=$( (git ls-tree feat/lane-005; printf '100644 blob %s\tmoved-%s.txt\n' "$blob" "$n") | git mktree)
git update-ref refs/heads/feat/lane-005 "$(git commit-tree -p feat/lane-005 -m more "$tree")"
MOVE
one=$(time_us "sh $work/move.sh" "git swarm forecast")
sh "$work/move.sh"
git swarm forecast --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print("last run: merged", d["merged"], "cached", d["cached"], "trivial", d["trivial"])' >&2

read -r npairs nbases nconf nsame <<<"$pairs"
echo "lanes $LANES, pairs $npairs, base checks $nbases, conflicts $nconf, same-file pairs $nsame, files $FILES, cores $(nproc)"
awk -v u="$unit" -v c="$cold" -v w="$warm" -v o="$one" 'BEGIN {
    printf "unit: one git merge-tree   %8.1f ms\n", u / 1000
    printf "forecast cold (no cache)   %8.1f ms   %6.1f units\n", c / 1000, c / u
    printf "forecast warm (all cached) %8.1f ms   %6.1f units\n", w / 1000, w / u
    printf "one lane moved on          %8.1f ms   %6.1f units\n", o / 1000, o / u
}'
