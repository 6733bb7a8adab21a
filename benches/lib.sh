# Shared by the benchmark scripts (sourced, not run): the binary, a
# throw-away repository with a fixed identity and no user or system config,
# the generator of its big tree, and the timing helpers.
#
#   bench_setup            # $here, $bin, $work, $repo; cd into a fresh repository
#   bench_files N          # fast-import lines: blob :1 and commit :2 on main with N files
#   median                 # the median of the numbers on stdin
#   time_us PREPARE CMD    # median wall time (µs) of $RUNS runs of CMD
#   peak_kib PREPARE CMD   # max RSS (KiB) of one run of CMD
#   instructions PREPARE CMD  # instructions (callgrind, children included) of one run

# The binary (built if missing), a temporary work directory ($work, kept
# with KEEP=1), `git-swarm` first on PATH, and an empty repository $repo on
# branch main, entered.
bench_setup() {
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
    if [ -n "${GIT_SWARM_BIN_BEFORE:-}" ] && [ ! -x "$GIT_SWARM_BIN_BEFORE" ]; then
        echo "GIT_SWARM_BIN_BEFORE=$GIT_SWARM_BIN_BEFORE is not an executable" >&2
        exit 2
    fi
    bin=$(realpath "$bin")
    [ -z "${GIT_SWARM_BIN_BEFORE:-}" ] || GIT_SWARM_BIN_BEFORE=$(realpath "$GIT_SWARM_BIN_BEFORE")
    mkdir -p "$work/bin"
    ln -s "$bin" "$work/bin/git-swarm"
    export PATH="$work/bin:$PATH"
    export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
    export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.invalid
    export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.invalid
    repo="$work/repo"
    git init --quiet -b main "$repo"
    cd "$repo" || exit 1
    git config swarm.as bench
}

# The start of a `git fast-import` stream: blob :1 ("hello") and commit :2
# on refs/heads/main holding N files spread over 250 directories
# (src/d<i % 250>/f<i>.txt). The caller adds more lines to the commit and
# ends it with an empty line.
bench_files() {
    printf 'blob\nmark :1\ndata 6\nhello\n'
    printf 'commit refs/heads/main\nmark :2\ncommitter bench <bench@example.invalid> 1700000000 +0000\ndata 5\ninit\n'
    awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++) printf "M 100644 :1 src/d%03d/f%05d.txt\n", i % 250, i }'
}

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

time_us() { # prepare, command
    local prepare=$1 cmd=$2 t0 t1
    : >"$work/t"
    for _ in $(seq "$RUNS"); do
        [ -n "$prepare" ] && sh -c "$prepare"
        t0=$EPOCHREALTIME
        $cmd >/dev/null
        t1=$EPOCHREALTIME
        echo $(( (${t1/./} - ${t0/./}) )) >>"$work/t"
    done
    median <"$work/t"
}

# Peak memory (max RSS, KiB) of one run, by GNU time.
peak_kib() { # prepare, command
    [ -n "$1" ] && sh -c "$1"
    if [ -x /usr/bin/time ]; then
        # shellcheck disable=SC2086
        /usr/bin/time -f %M $2 2>&1 >/dev/null | tail -n 1
    else
        echo 0
    fi
}

# Instructions (valgrind callgrind, children included) of one run: steady
# where wall time is noisy on a loaded machine.
instructions() { # prepare, command
    [ -n "$1" ] && sh -c "$1"
    rm -f "$work"/cg.out.*
    # shellcheck disable=SC2086
    valgrind --tool=callgrind --trace-children=yes --callgrind-out-file="$work/cg.out.%p" $2 >/dev/null 2>&1
    cat "$work"/cg.out.* | awk '/^summary:/ { s += $2 } END { print s }'
}

# -- two builds in one run ------------------------------------------------------
# GIT_SWARM_BIN_BEFORE=path (beside GIT_SWARM_BIN, the "after" build): every
# git-swarm command is timed with both builds, in turns with the baseline,
# so load that comes and goes hits all three alike (benches/compare.sh sets
# both). The set-up between measurements always runs the after build. Each
# build keeps its own `.git/swarm/` (caches name the build that wrote them):
# a measurement starts both from a copy of the after build's, and the build
# whose turn it is has its own moved into place (a rename, outside the time).
#
#   builds                 # "after", or "before after" with GIT_SWARM_BIN_BEFORE
#   builds_fork            # at a measurement's start: the before build's state := a copy of the after's
#   build_use NAME         # make NAME's binary and state the live ones
#   build_bin NAME         # make NAME's binary the live one (state untouched)
#   turns PREPARE SLOT...  # time RUNS rounds of the slots in turns: $work/t.<i>
#   compare_row LABEL CMD BASE_I BEFORE_I AFTER_I [EXTRA]  # medians, ratios and after/before
builds() { if [ -n "${GIT_SWARM_BIN_BEFORE:-}" ]; then echo "before after"; else echo after; fi; }
live_build=after
build_state() { echo "$(git rev-parse --path-format=absolute --git-common-dir)/swarm"; }
builds_fork() {
    [ -n "${GIT_SWARM_BIN_BEFORE:-}" ] || return 0
    build_use after
    rm -rf "$work/state.before"
    local s
    s=$(build_state)
    if [ -d "$s" ]; then cp -a "$s" "$work/state.before"; fi
}
build_use() { # name
    [ "$1" = "$live_build" ] && return 0
    local s
    s=$(build_state)
    if [ -d "$s" ]; then mv "$s" "$work/state.$live_build"; fi
    if [ -d "$work/state.$1" ]; then mv "$work/state.$1" "$s"; fi
    build_bin "$1"
    live_build=$1
}
# Only the binary: `git-swarm` on PATH is NAME's build.
build_bin() { # name
    local b=$bin
    [ "$1" = before ] && b=$GIT_SWARM_BIN_BEFORE
    ln -sfn "$b" "$work/bin/git-swarm"
}

# PREPARE (sh -c, "" for none) runs before each timed run; a SLOT is
# "BUILD COMMAND" (BUILD "-" for a command that runs no git-swarm). WARMUP
# (default 3) untimed rounds first, then RUNS rounds of every slot once, the
# order rotated every round; slot i's times (µs, one line per round) go to
# $work/t.<i>. Ends with the after build live.
turns() {
    local prepare=$1
    shift
    local n=$# i k r b c t0 t1 slot
    for i in $(seq "$n"); do : >"$work/t.$i"; done
    builds_fork
    for r in $(seq $(( ${WARMUP:-3} + RUNS ))); do
        for i in $(seq "$n"); do
            k=$(( (i + r) % n + 1 ))
            slot=${!k}
            b=${slot%% *} c=${slot#* }
            [ "$b" = - ] || build_use "$b"
            [ -n "$prepare" ] && sh -c "$prepare"
            t0=$EPOCHREALTIME
            $c >/dev/null
            t1=$EPOCHREALTIME
            [ "$r" -gt "${WARMUP:-3}" ] && echo $(( ${t1/./} - ${t0/./} )) >>"$work/t.$k"
        done
    done
    build_use after
}

# One line (or, with MARKDOWN=1, one table row) for a command timed with
# both builds by `turns`: the baseline's median, each build's median and
# ratio to it, after/before (of the medians), and the 25th, 50th and 75th
# percentiles of the per-round after/before ratios (the run's noise).
# EXTRA is appended.
compare_row() { # label, command, baseline slot, before slot, after slot, [extra]
    local g b a lo mid hi
    g=$(median <"$work/t.$3"); b=$(median <"$work/t.$4"); a=$(median <"$work/t.$5")
    paste "$work/t.$4" "$work/t.$5" | awk '{ print $2 / $1 }' | sort -g >"$work/r"
    lo=$(quantile 0.25 <"$work/r"); mid=$(quantile 0.5 <"$work/r"); hi=$(quantile 0.75 <"$work/r")
    awk -v l="${1//$work/\$work}" -v c="${2//$work/\$work}" -v G="$g" -v B="$b" -v A="$a" -v lo="$lo" -v mid="$mid" -v hi="$hi" -v x="${6:-}" -v md="${MARKDOWN:-}" 'BEGIN {
        if (md != "") printf "| %s | `%s` | %.1f ms | %.1f ms, %.2f× | %.1f ms, %.2f× | **%.2f×** | %.2f / %.2f / %.2f |%s\n", l, c, G / 1000, B / 1000, B / G, A / 1000, A / G, A / B, lo, mid, hi, x
        else printf "%-34s %-26s git %7.2f ms  before %7.2f ms %5.2fx  after %7.2f ms %5.2fx  after/before %5.2f (rounds %.2f/%.2f/%.2f)%s\n", l, c, G / 1000, B / 1000, B / G, A / 1000, A / G, A / B, lo, mid, hi, x
    }'
}
# The P quantile (0..1, linear between ranks) of the sorted numbers on stdin.
quantile() { awk -v p="$1" '{ v[NR] = $1 } END { i = 1 + (NR - 1) * p; j = int(i); k = (i > j) ? j + 1 : j; print v[j] + (v[k] - v[j]) * (i - j) }'; }

# Instructions of CMD with each build: "before / after = ratio" (CALLGRIND=1).
compare_instructions() { # prepare, command
    [ -n "${CALLGRIND:-}" ] || return 0
    local b a
    build_use before; b=$(instructions "$1" "$2")
    build_use after; a=$(instructions "$1" "$2")
    awk -v b="$b" -v a="$a" -v md="${MARKDOWN:-}" 'BEGIN {
        if (md != "") printf " %.1fM → %.1fM, **%.3f×** |", b / 1e6, a / 1e6, a / b
        else printf "  instructions %.1fM -> %.1fM = %.3fx", b / 1e6, a / 1e6, a / b }'
}
