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
