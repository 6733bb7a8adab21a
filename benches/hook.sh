#!/usr/bin/env bash
# Benchmark: the cost of the pre-commit hook (`git swarm hook pre-commit`)
# as a ratio to `git diff --cached --name-only`, measured in the same run on
# a big repository: 50,000 files, 2,000 changesets on main, 500 lane
# branches (each with a changeset of its own).
#
#   benches/hook.sh                 # build the repository in a temp dir, measure, print ratios
#   GIT_SWARM_BIN=path/to/git-swarm FILES=50000 LANES=500 CHANGESETS=2000 RUNS=50 benches/hook.sh
#   KEEP=1 benches/hook.sh          # leave the repository behind (for profiling)
#
# Uses hyperfine when it is installed (apt-get install hyperfine), else a
# loop of RUNS runs per command. Builds target/release/git-swarm if needed.
set -euo pipefail

FILES=${FILES:-50000}
LANES=${LANES:-500}
CHANGESETS=${CHANGESETS:-2000}
RUNS=${RUNS:-50}
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${GIT_SWARM_BIN:-$here/target/release/git-swarm}
if [ ! -x "$bin" ]; then
    echo "building $bin" >&2
    (cd "$here" && cargo build --release --quiet)
fi

work=$(mktemp -d)
if [ -n "${KEEP:-}" ]; then
    echo "keeping the benchmark repository in $work/repo" >&2
else
    trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work/bin"
ln -s "$bin" "$work/bin/git-swarm"
export PATH="$work/bin:$PATH"
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.invalid
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.invalid
repo="$work/repo"
git init --quiet -b main "$repo"
cd "$repo"
git config swarm.as bench

echo "building the repository: $FILES files, $CHANGESETS changesets, $LANES lane branches" >&2
start=$(date +%s)
{
    printf 'blob\nmark :1\ndata 6\nhello\n'
    printf 'commit refs/heads/main\nmark :2\ncommitter bench <bench@example.invalid> 1700000000 +0000\ndata 5\ninit\n'
    awk -v n="$FILES" 'BEGIN { for (i = 0; i < n; i++) printf "M 100644 :1 src/d%03d/f%05d.txt\n", i % 250, i }'
    awk -v n="$CHANGESETS" 'BEGIN { for (i = 0; i < n; i++) printf "M 100644 :1 .changeset/change-%04d.md\n", i }'
    printf 'M 100644 :1 .changeset/README.md\n\n'
    awk -v n="$LANES" 'BEGIN {
        for (i = 0; i < n; i++) {
            printf "commit refs/heads/feat/lane-%03d\ncommitter bench <bench@example.invalid> 1700000000 +0000\ndata 5\nlane\nfrom :2\n", i
            printf "M 100644 :1 .changeset/lane-%03d.md\nM 100644 :1 src/d%03d/lane-%03d.txt\n\n", i, i % 250, i
        }
    }'
} | git fast-import --quiet
git reset --quiet --hard main
echo "built in $(( $(date +%s) - start ))s: $(git ls-files | wc -l) files in the index, $(git for-each-ref refs/heads/feat | wc -l) lane branches" >&2

measure() { # label, [hyperfine --prepare command], then the commands; the first is the baseline
    local label=$1 prepare=$2
    shift 2
    if command -v hyperfine >/dev/null 2>&1; then
        local extra=()
        [ -n "$prepare" ] && extra=(--prepare "$prepare")
        hyperfine -N --warmup 5 --runs "$RUNS" "${extra[@]}" --export-csv "$work/$label.csv" "$@" >&2
        awk -F, -v label="$label" 'NR > 1 { mean[NR - 1] = $2; cmd[NR - 1] = $1 }
            END { for (i = 2; i <= NR - 1; i++) printf "%-28s %-28s %6.1f ms   %s %5.1f ms   ratio %.2f\n", label, cmd[i], mean[i] * 1000, cmd[1], mean[1] * 1000, mean[i] / mean[1] }' "$work/$label.csv"
    else
        local base=""
        for cmd in "$@"; do
            local total=0
            for _ in $(seq "$RUNS"); do
                [ -n "$prepare" ] && sh -c "$prepare"
                local t0 t1
                t0=$(date +%s%N)
                $cmd >/dev/null
                t1=$(date +%s%N)
                total=$(( total + t1 - t0 ))
            done
            local us=$(( total / RUNS / 1000 ))
            if [ -z "$base" ]; then
                base=$us
            else
                awk -v l="$label" -v c="$cmd" -v m="$us" -v b="$base" 'BEGIN { printf "%-28s %-28s %6.1f ms   baseline %5.1f ms   ratio %.2f\n", l, c, m / 1000, b / 1000, m / b }'
            fi
        done
    fi
}

# The hook must pass in every scenario (a refusal would be a cheap exit).
check() { git swarm hook pre-commit || { echo "the hook refused the staged change" >&2; exit 1; }; }
diff="git diff --cached --name-only"

# A: the common commit — an ordinary file changed.
echo changed >> src/d000/f00000.txt
git add src/d000/f00000.txt
check
measure "ordinary-commit" "" "$diff" "git swarm hook pre-commit" "git-swarm hook pre-commit"

# B: a new changeset, compared with main and all $LANES lane branches (loose refs).
git reset --quiet
echo "a change" > .changeset/new-unique-change.md
git add .changeset/new-unique-change.md
check
measure "new-changeset" "" "$diff" "git swarm hook pre-commit"
# ... the first time, before .git/swarm/changeset-names.cache exists.
measure "new-changeset-cold-cache" "rm -rf .git/swarm" "$diff" "git swarm hook pre-commit"
# ... after `git gc` / `git pack-refs` has packed the lane refs.
git pack-refs --all
measure "new-changeset-packed-refs" "" "$diff" "git swarm hook pre-commit"
