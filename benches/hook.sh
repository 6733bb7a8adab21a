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
# Each row: the median of RUNS timed runs per command (the commands take
# turns, so a loaded machine slows them alike), the ratio of the medians,
# and each command's peak memory (max RSS, /usr/bin/time -f %M).
# CALLGRIND=1 adds instruction counts (valgrind, children included): a
# ratio that load does not move. MARKDOWN=1 prints the rows as docs/benchmarks.md's
# table rows. Builds target/release/git-swarm if needed.
set -euo pipefail

FILES=${FILES:-50000}
LANES=${LANES:-500}
CHANGESETS=${CHANGESETS:-2000}
RUNS=${RUNS:-50}
# shellcheck source=benches/lib.sh
. "$(dirname "$0")/lib.sh"
bench_setup

echo "building the repository: $FILES files, $CHANGESETS changesets, $LANES lane branches" >&2
start=$(date +%s)
{
    bench_files "$FILES"
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

# label, prepare command ("" for none), then the commands; the first is the
# baseline. Runs alternate between the commands (so load that comes and
# goes hits them alike) and each is timed on its own; the row shows medians,
# the ratio of medians, and the peak memory of each command.
measure() {
    local label=$1 prepare=$2
    shift 2
    if [ -n "${GIT_SWARM_BIN_BEFORE:-}" ]; then # two builds: see compare.sh
        local slots=("- $1") cmd i=2
        for cmd in "${@:2}"; do slots+=("before $cmd" "after $cmd"); done
        turns "$prepare" "${slots[@]}"
        for cmd in "${@:2}"; do
            compare_row "$label" "$cmd" 1 "$i" $(( i + 1 )) "$(compare_instructions "$prepare" "$cmd")"
            i=$(( i + 2 ))
        done
        return
    fi
    local n=$# i cmd slots=("- $1")
    for cmd in "${@:2}"; do slots+=("after $cmd"); done
    turns "$prepare" "${slots[@]}"
    local base_us base_kib base_ir="" us kib ir=""
    base_us=$(median <"$work/t.1")
    base_kib=$(peak_kib "$prepare" "$1")
    [ -n "${CALLGRIND:-}" ] && base_ir=$(instructions "$prepare" "$1")
    for i in $(seq 2 "$n"); do
        cmd=${!i}
        us=$(median <"$work/t.$i")
        kib=$(peak_kib "$prepare" "$cmd")
        [ -n "${CALLGRIND:-}" ] && ir=$(instructions "$prepare" "$cmd")
        awk -v l="$label" -v c="$cmd" -v m="$us" -v b="$base_us" -v mk="$kib" -v bk="$base_kib" -v ir="$ir" -v bir="$base_ir" -v md="${MARKDOWN:-}" 'BEGIN {
            if (md != "") {
                printf "| %s | `%s` | %.1f ms | %.1f ms | **%.2f×** | ", l, c, m / 1000, b / 1000, m / b
                if (ir != "") printf "%.2f× (%.1fM / %.1fM)", ir / bir, ir / 1e6, bir / 1e6
                printf " | %.1f / %.1f MiB |\n", mk / 1024, bk / 1024
                exit
            }
            printf "%-30s %-28s %7.2f ms (baseline %6.2f ms)  ratio %5.2f   max RSS %5.1f MiB (baseline %5.1f MiB)", l, c, m / 1000, b / 1000, m / b, mk / 1024, bk / 1024
            if (ir != "") printf "   instructions %.1fM (baseline %.1fM) ratio %.2f", ir / 1e6, bir / 1e6, ir / bir
            printf "\n" }'
    done
}

# The hook must pass in every scenario (a refusal would be a cheap exit).
check() { git swarm hook pre-commit || { echo "the hook refused the staged change" >&2; exit 1; }; }
diff="git diff --cached --name-only"

# A: the common commit — an ordinary file changed (500 loose lane refs).
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
# ... the first time, before .git/swarm/ (the name and lane-ref caches) exists.
measure "new-changeset-cold-cache" "rm -rf .git/swarm" "$diff" "git swarm hook pre-commit"
# ... after `git gc` / `git pack-refs` has packed the lane refs.
git pack-refs --all
check
measure "new-changeset-packed-refs" "" "$diff" "git swarm hook pre-commit"
git reset --quiet
git add src/d000/f00000.txt
check
measure "ordinary-commit-packed-refs" "" "$diff" "git swarm hook pre-commit"

# C: the same ordinary commit with 200 live reservations of other agents
# (100 files, 60 directories, 40 globs, none covering the staged file), so
# the reservations guard reads the ledger and compares the index and HEAD
# under every reserved path.
echo "reserving 200 paths for other agents" >&2
for i in $(seq 0 199); do
    k=$(( i % 249 + 1 ))
    d=$(printf 'd%03d' "$k")
    case $(( i % 10 )) in
        [0-4]) p=$(printf 'src/%s/f%05d.txt' "$d" $(( k + 250 * (i % 100) ))) ;;
        [5-7]) p="src/$d/" ;;
        *) p="src/$d/lane-*.txt" ;;
    esac
    git swarm --as "agent$i" reserve "$p" --lease 1d >/dev/null
done
echo "$(git swarm reservations --json | grep -c '"holder"') live reservations" >&2
check
measure "ordinary-commit-200-reservations" "" "$diff" "git swarm hook pre-commit" "git-swarm hook pre-commit"
# ... and a new changeset with them (packed lane refs, as after section B).
git reset --quiet
git add .changeset/new-unique-change.md
check
measure "new-changeset-200-reservations" "" "$diff" "git swarm hook pre-commit"

