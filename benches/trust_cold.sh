#!/usr/bin/env bash
# Benchmark: a cold trust check, `plan list` of PLANS plans signed with an
# ssh key under swarm.trust=require with the verdict cache deleted before
# every run: the checks one by one (GIT_SWARM_TRUST_JOBS=1, or the build
# GIT_SWARM_BIN_BEFORE when given) against the checks a few at once (the
# default), in turns in the same run, medians of RUNS; and the warm listing
# and the listing with trust off as the floor.
#
#   benches/trust_cold.sh
#   PLANS=200 RUNS=5 GIT_SWARM_BIN=target/release/git-swarm \
#     GIT_SWARM_BIN_BEFORE=/tmp/git-swarm-before benches/trust_cold.sh
set -euo pipefail

PLANS=${PLANS:-200}
RUNS=${RUNS:-5}
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=benches/lib.sh
. "$here/benches/lib.sh"
bench_setup
now_ns() { date +%s%N; }
on=(env GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=swarm.trust GIT_CONFIG_VALUE_0=require)

ssh-keygen -q -t ed25519 -N "" -C bench -f "$work/bench-key"
mkdir -p .swarm
echo "bench namespaces=\"git\" $(cut -d' ' -f1,2 "$work/bench-key.pub")" >.swarm/allowed_signers
git add .swarm && git commit --quiet -m "trust list"
python3 "$here/benches/gen_records.py" "$PLANS" 0 0 t | git fast-import --quiet
echo "signing $PLANS plans with ssh-keygen" >&2
python3 "$here/benches/sign_records.py" "$work/bench-key" refs/swarm/plans >/dev/null
git pack-refs --all
git-swarm plan list >/dev/null
if "${on[@]}" git-swarm plan list | grep -q UNTRUSTED; then
    echo "trust cold bench: some plans are not trusted" >&2
    exit 1
fi
trust_cache="$(git rev-parse --git-common-dir)/swarm/cache/trust"

serial=("${on[@]}" GIT_SWARM_TRUST_JOBS=1 git-swarm plan list)
serial_label="one by one (GIT_SWARM_TRUST_JOBS=1)"
if [ -n "${GIT_SWARM_BIN_BEFORE:-}" ]; then
    serial=("${on[@]}" "$GIT_SWARM_BIN_BEFORE" plan list)
    serial_label="before ($GIT_SWARM_BIN_BEFORE)"
fi
parallel=("${on[@]}" git-swarm plan list)
: >"$work/serial.ns"; : >"$work/parallel.ns"; : >"$work/off.ns"; : >"$work/warm.ns"
for i in $(seq "$RUNS"); do
    # Rotate the order every round.
    for slot in $(if [ $((i % 2)) = 0 ]; then echo serial parallel; else echo parallel serial; fi); do
        rm -rf "$trust_cache"
        t0=$(now_ns)
        if [ "$slot" = serial ]; then "${serial[@]}" >/dev/null; else "${parallel[@]}" >/dev/null; fi
        t1=$(now_ns)
        echo $((t1 - t0)) >>"$work/$slot.ns"
    done
    t0=$(now_ns); "${on[@]}" git-swarm plan list >/dev/null; t1=$(now_ns)
    echo $((t1 - t0)) >>"$work/warm.ns"
    t0=$(now_ns); git-swarm plan list >/dev/null; t1=$(now_ns)
    echo $((t1 - t0)) >>"$work/off.ns"
done
s=$(median <"$work/serial.ns"); p=$(median <"$work/parallel.ns")
w=$(median <"$work/warm.ns"); o=$(median <"$work/off.ns")
echo "== trust, cold ($PLANS signed plans, verdict cache deleted before each run; medians of $RUNS, in turns; $(nproc) cores)"
awk -v s="$s" -v p="$p" -v l="$serial_label" 'BEGIN { printf "plan list cold: a few at once %.0f ms / %s %.0f ms = %.2fx\n", p / 1e6, l, s / 1e6, p / s }'
awk -v s="$s" -v p="$p" -v n="$PLANS" 'BEGIN { printf "per plan: %.1f ms / %.1f ms\n", p / n / 1e6, s / n / 1e6 }'
awk -v w="$w" -v o="$o" 'BEGIN { printf "plan list warm %.1f ms, trust off %.1f ms\n", w / 1e6, o / 1e6 }'
