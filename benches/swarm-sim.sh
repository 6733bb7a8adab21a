#!/usr/bin/env bash
# Benchmark: a swarm of N agents through one remote, one pinned-clock hour.
#
# A bare repository served by `git daemon` on 127.0.0.1 (receive-pack on;
# one daemon per clone over the same repository, DAEMONS=1 for one),
# M = ceil(N / AGENTS_PER_CLONE) clones of it, and N agents (`--as
# agentNNN`) spread over them. A coordinator creates plan p and 4N tasks
# offline and publishes them with one `sync` (batched, swarm.pushBatch).
# Then the hour, in steps; in each step every agent runs its command at
# once (N processes), the clock pinned (GIT_SWARM_NOW) to the step's minute:
#
#   min  0  task claim      (a random task of a pool of 2N; on LEASE_HELD the next one)
#   min  2  reserve src/<agent>.rs --task <it>
#   min  5  notify <next agent>
#   min 10  notify
#   min 15  task renew      (half of the 30m lease; `renew --due` at 16 with BUDGET)
#   min 20  notify
#   min 25  task done --unverified --reason sim   (releases the reservation
#                           for the task in the same push: no `release`)
#   min 30  task claim      (a second task, from a second pool of 2N)
#   min 35  notify
#   min 45  task renew      (`renew --due` at 46 with BUDGET)
#   min 50  notify
#   min 55  task done --unverified --reason sim
#
# Every command runs with --json; its `remote_ops` (pushes, refs pushed,
# fetches, queries, retries) are summed. A `post-receive` hook on the
# remote logs every push it accepted. Printed per N: pushes per minute at
# the remote (client pushes / 60 simulated minutes; accepted ones in
# brackets), pushes per agent, refs per push, read queries per simulated
# second (fetches + ls-remote), claim latency p50/p99 (wall time of one
# claim, LEASE_HELD retries included), claims lost (a claim that exited 0
# but whose task ended owned by someone else or not done) and doubled (two
# agents whose claim of the same task exited 0), transient retries, and
# commands that failed.
#
# With BUDGET (e.g. BUDGET=6/min) every clone sets swarm.pushBudget to it,
# and the renewals are `git swarm renew --due` one minute past half the
# lease (what the agent hook runs: under the budget the claim is renewed
# in the clone and queued, to ride the clone's next push); a last step
# at minute 60 runs `status` in each clone (the first command after the
# window publishes what is queued). Messages lost = notifies that exited 0
# whose message is not on the remote at the end.
#
#   benches/swarm-sim.sh                 # N = 10 50 100
#   NS="10 50 100 200" benches/swarm-sim.sh
#   BUDGET=6/min NS="20 200" benches/swarm-sim.sh
#   GIT_SWARM_BIN=target/debug/git-swarm KEEP=1 benches/swarm-sim.sh
set -euo pipefail

NS=${NS:-"10 50 100"}
BUDGET=${BUDGET:-}
mode=${BUDGET:-at once}
AGENTS_PER_CLONE=${AGENTS_PER_CLONE:-10}
T0=${T0:-2026-03-01T10:00:00Z}
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${GIT_SWARM_BIN:-$here/target/release/git-swarm}
if [ ! -x "$bin" ]; then
    echo "building $bin" >&2
    (cd "$here" && cargo build --release --quiet)
fi
work=$(mktemp -d)
daemon_pid=
cleanup() {
    # shellcheck disable=SC2086 # one pid a word
    [ -n "$daemon_pid" ] && kill $daemon_pid 2>/dev/null || true
    [ -n "${KEEP:-}" ] && echo "kept $work" >&2 || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 143' INT TERM
mkdir -p "$work/bin"
ln -s "$bin" "$work/bin/git-swarm"
export PATH="$work/bin:$PATH"
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.invalid
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.invalid

at() { date -u -d "$T0 + $1 minutes" +%Y-%m-%dT%H:%M:%SZ; }

# One agent's command at minute $2: `git swarm --json …` in its clone, its
# JSON kept in $log/<agent>.<step>.json, "exit seconds" in …<step>.rc.
run() { # agent minute step args...
    local agent=$1 minute=$2 step=$3
    shift 3
    local dir=${clone_of[$agent]} t0 t1 rc=0
    t0=$EPOCHREALTIME
    (cd "$dir" && GIT_SWARM_NOW=$(at "$minute") git-swarm --as "$agent" "$@" --json) \
        >"$log/$agent.$step.json" 2>"$log/$agent.$step.err" || rc=$?
    t1=$EPOCHREALTIME
    echo "$rc $(echo "$t1 - $t0" | bc)" >"$log/$agent.$step.rc"
    return $rc
}

# Claim a free task, trying from a random one on: LEASE_HELD moves on.
# Each attempt is its own step (<step>_<try>); the task won is in
# <agent>.<step>.task, the wall time of the whole claim in ….latency.
claim() { # agent minute step pool
    local agent=$1 minute=$2 step=$3 pool=$4 tries=0 k rc t0 t1
    # Each claim round has a pool of its own: 2N tasks (the first round
    # t0…t(2N-1), the second the next 2N), so that the second does not
    # walk past the first round's done tasks.
    k=$((RANDOM % pool_size))
    t0=$EPOCHREALTIME
    while [ $tries -lt $pool_size ]; do
        rc=0
        run "$agent" "$minute" "${step}_$tries" task claim "t$((pool * pool_size + k))" --plan p || rc=$?
        if [ $rc -eq 0 ]; then
            echo "t$((pool * pool_size + k))" >"$log/$agent.$step.task"
            break
        fi
        k=$(((k + 1) % pool_size))
        tries=$((tries + 1))
    done
    t1=$EPOCHREALTIME
    echo "$t1 - $t0" | bc >"$log/$agent.$step.latency"
}

step() { # minute name command...
    local minute=$1 name=$2 a pids=()
    shift 2
    for a in "${agents[@]}"; do
        "$@" "$a" "$minute" "$name" &
        pids+=($!)
    done
    # Not a bare `wait`: that would wait for the daemon too.
    wait "${pids[@]}" || true
    echo "N=${#agents[@]}: step $name (minute $minute) done at $(echo "$EPOCHREALTIME - $start" | bc | cut -d. -f1) s" >&2
}

do_claim1() { claim "$1" "$2" "$3" 0; }
do_claim2() { claim "$1" "$2" "$3" 1; }
do_reserve() { run "$1" "$2" "$3" reserve "src/$1.rs" --task "$(cat "$log/$1.claim1.task")" || true; }
do_notify() { run "$1" "$2" "$3" notify "${next_of[$1]}" "minute $2 from $1" || true; }
do_renew() {
    if [ -n "$BUDGET" ]; then
        run "$1" "$2" "$3" renew --due || true
    else
        run "$1" "$2" "$3" task renew "$(cat "$log/$1.$4.task")" --plan p || true
    fi
}
do_renew1() { do_renew "$1" "$2" "$3" claim1; }
do_renew2() { do_renew "$1" "$2" "$3" claim2; }
do_done() { run "$1" "$2" "$3" task done "$(cat "$log/$1.$4.task")" --plan p --unverified --reason sim || true; }
do_done1() { do_done "$1" "$2" "$3" claim1; }
do_done2() { do_done "$1" "$2" "$3" claim2; }

printf '| budget | N | clones | pushes/min (accepted) | pushes/agent/h (accepted) | refs/push | read queries/s | claim p50 | claim p99 | claims lost | claims doubled | messages lost | retries | failed commands | wall time |\n'
printf '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n'
for n in $NS; do
    run_dir="$work/n$n"
    mkdir -p "$run_dir/srv" "$run_dir/log"
    log="$run_dir/log"
    git init --quiet --bare "$run_dir/srv/remote.git"
    printf '#!/bin/sh\nwc -l >> accepted-pushes\n' >"$run_dir/srv/remote.git/hooks/post-receive"
    chmod +x "$run_dir/srv/remote.git/hooks/post-receive"
    clones=$(((n + AGENTS_PER_CLONE - 1) / AGENTS_PER_CLONE))
    # One `git daemon` per clone (DAEMONS of them, clone c served by daemon
    # c mod DAEMONS), every one over the same bare repository: its refs and
    # their locks are the one arbiter, as a forge's many front ends share
    # one store. A single daemon listens with a backlog of 5 connections:
    # 200 agents connecting at once overflow it, and the connections it
    # drops time out after two minutes of SYN retries (REMOTE_UNREACHABLE),
    # which measures the daemon, not the swarm.
    daemons=${DAEMONS:-$clones}
    urls=()
    daemon_pids=()
    for d in $(seq 0 $((daemons - 1))); do
        port=$((20000 + RANDOM % 20000))
        git daemon --reuseaddr --listen=127.0.0.1 --port=$port --base-path="$run_dir/srv" \
            --export-all --enable=receive-pack --max-connections=0 "$run_dir/srv" 2>>"$run_dir/daemon.err" &
        daemon_pids+=($!)
        urls+=("git://127.0.0.1:$port/remote.git")
    done
    daemon_pid="${daemon_pids[*]}"
    url=${urls[0]}
    for u in "${urls[@]}"; do
        for _ in $(seq 50); do git ls-remote "$u" >/dev/null 2>&1 && break; sleep 0.1; done
    done
    git init --quiet -b main "$run_dir/seed"
    (cd "$run_dir/seed" && git commit --quiet --allow-empty -m initial && git push --quiet "$url" HEAD:main)
    for c in $(seq 0 $((clones - 1))); do
        git clone --quiet "${urls[$((c % daemons))]}" "$run_dir/c$c"
        (cd "$run_dir/c$c" && git config swarm.as coordinator && git-swarm init >/dev/null)
    done
    # The budget is set once the coordinator's tasks are out (below).
    pool_size=$((2 * n))
    tasks=$((2 * pool_size))
    (cd "$run_dir/c0" && GIT_SWARM_NOW=$(at -5) git-swarm --offline plan new p >/dev/null 2>&1)
    # All the tasks in one command (`task new --from`, one `<id> <title>`
    # a line), published by the sync below in one push.
    setup_start=$EPOCHREALTIME
    for k in $(seq 0 $((tasks - 1))); do echo "t$k task $k"; done >"$run_dir/tasks.txt"
    (cd "$run_dir/c0" && GIT_SWARM_NOW=$(at -5) git-swarm --offline task new --plan p --from "$run_dir/tasks.txt" >/dev/null 2>"$run_dir/task-new.err") ||
        { echo "task new --from failed: $(cat "$run_dir/task-new.err")" >&2; exit 1; }
    (cd "$run_dir/c0" && GIT_SWARM_NOW=$(at -5) git-swarm sync >/dev/null)
    created=$(git --git-dir="$run_dir/srv/remote.git" for-each-ref refs/swarm/tasks/p/ | wc -l)
    [ "$created" -eq "$tasks" ] || { echo "the remote has $created tasks of $tasks" >&2; exit 1; }
    for c in $(seq 1 $((clones - 1))); do (cd "$run_dir/c$c" && git-swarm sync >/dev/null); done
    echo "N=$n set-up ($tasks tasks, $clones clones synced): $(echo "$EPOCHREALTIME - $setup_start" | bc) s" >&2
    if [ -n "$BUDGET" ]; then
        for c in $(seq 0 $((clones - 1))); do git -C "$run_dir/c$c" config swarm.pushBudget "$BUDGET"; done
    fi
    : >"$run_dir/srv/remote.git/accepted-pushes"
    declare -A clone_of=() next_of=()
    agents=()
    for i in $(seq 0 $((n - 1))); do
        a=$(printf 'agent%03d' "$i")
        agents+=("$a")
        clone_of[$a]="$run_dir/c$((i % clones))"
        next_of[$a]=$(printf 'agent%03d' $(((i + 1) % n)))
    done
    start=$EPOCHREALTIME
    step 0 claim1 do_claim1
    step 2 reserve do_reserve
    step 5 notify1 do_notify
    step 10 notify2 do_notify
    renew_at=15
    [ -n "$BUDGET" ] && renew_at=16
    step $renew_at renew1 do_renew1
    step 20 notify3 do_notify
    step 25 done1 do_done1
    step 30 claim2 do_claim2
    step 35 notify4 do_notify
    step $((renew_at + 30)) renew2 do_renew2
    step 50 notify5 do_notify
    step 55 done2 do_done2
    # The first command in each clone after the window publishes its queue.
    for c in $(seq 0 $((clones - 1))); do
        (cd "$run_dir/c$c" && GIT_SWARM_NOW=$(at 60) git-swarm status --json >"$log/status-c$c.json" 2>/dev/null) || true
    done
    wall=$(echo "$EPOCHREALTIME - $start" | bc)
    git --git-dir="$run_dir/srv/remote.git" for-each-ref --format='%(refname)' refs/swarm/messages/ >"$run_dir/messages.txt"
    # The remote's final word on every task, from a fresh look.
    (cd "$run_dir/c0" && GIT_SWARM_NOW=$(at 60) git-swarm sync >/dev/null &&
        GIT_SWARM_NOW=$(at 60) git-swarm --offline task list --plan p --json) >"$run_dir/tasks.json"
    # The dones released the reservations: none should be left live.
    # (Every shard, each id once: an entry is stored in each of its shards.)
    left=$(for r in $(git --git-dir="$run_dir/srv/remote.git" for-each-ref --format='%(refname)' refs/swarm/reservations/); do
        git --git-dir="$run_dir/srv/remote.git" show "$r:reservations.yaml" | sed -n 's/^- id: //p'
    done | sort -u | wc -l)
    shards=$(git --git-dir="$run_dir/srv/remote.git" for-each-ref refs/swarm/reservations/ | wc -l)
    echo "N=$n: reservations left at the end: $left (in $shards shard refs)" >&2
    python3 - "$run_dir" "$n" "$clones" "$wall" "$mode" <<'EOF'
import json, glob, os, sys
run_dir, n, clones, wall, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
log = os.path.join(run_dir, "log")
ops = {"pushes": 0, "refs_pushed": 0, "fetches": 0, "queries": 0, "retries": 0}
failed = 0
codes = {}
for path in glob.glob(os.path.join(log, "*.json")):
    try:
        doc = json.load(open(path))
    except ValueError:
        continue
    for k in ops:
        ops[k] += doc.get("remote_ops", {}).get(k, 0)
for path in glob.glob(os.path.join(log, "*.rc")):
    rc = int(open(path).read().split()[0])
    step = os.path.basename(path).split(".")[1]
    if rc != 0 and not step.startswith("claim"):
        failed += 1
    if rc != 0:
        try:
            code = json.load(open(path[: -len(".rc")] + ".json"))["error"]["code"]
        except (ValueError, KeyError, OSError):
            code = "no JSON (exit %d)" % rc
        kind = step.rstrip("0123456789_")
        codes[(kind, code)] = codes.get((kind, code), 0) + 1
# A claim attempt that lost (LEASE_HELD) moved on to the next task; a
# claim that never got a task is a failed command.
claims = {}
for path in glob.glob(os.path.join(log, "*.task")):
    agent, step = os.path.basename(path).split(".")[:2]
    claims.setdefault(open(path).read().strip(), []).append(agent)
for path in glob.glob(os.path.join(log, "*.latency")):
    if not os.path.exists(path[: -len(".latency")] + ".task"):
        failed += 1
tasks = {t["id"]: t for t in json.load(open(os.path.join(run_dir, "tasks.json")))["tasks"]}
doubled = sum(len(v) - 1 for v in claims.values() if len(v) > 1)
lost = 0
for task, agents in claims.items():
    t = tasks.get(task)
    if t is None or t.get("status") != "done" or t.get("owner") not in agents:
        lost += 1
lat = sorted(float(open(p).read()) for p in glob.glob(os.path.join(log, "*.latency")))
def pct(p):
    return lat[min(len(lat) - 1, int(p * len(lat)))] if lat else 0.0
accepted = sum(1 for _ in open(os.path.join(run_dir, "srv", "remote.git", "accepted-pushes")))
on_remote = set(l.strip() for l in open(os.path.join(run_dir, "messages.txt")))
sent = 0
msg_lost = 0
for path in glob.glob(os.path.join(log, "*.notify*.json")):
    if int(open(path[: -len(".json")] + ".rc").read().split()[0]) != 0:
        continue
    sent += 1
    if json.load(open(path))["ref"] not in on_remote:
        msg_lost += 1
# Per operation, counts that do not depend on the machine: pushes, fetches
# and retries per command of each kind (every command, exit 0 or not).
per = {}
for path in glob.glob(os.path.join(log, "*.json")):
    step = os.path.basename(path).split(".")[1]
    kind = step.rstrip("0123456789_")
    try:
        doc = json.load(open(path))
    except ValueError:
        continue
    c = per.setdefault(kind, {"n": 0, "pushes": 0, "fetches": 0, "retries": 0})
    c["n"] += 1
    for k in ("pushes", "fetches", "retries"):
        c[k] += doc.get("remote_ops", {}).get(k, 0)
for kind in ("claim", "reserve", "renew", "done"):
    c = per.get(kind)
    if c and c["n"]:
        print(f"N={n} {kind}: {c['n']} commands, {c['pushes'] / c['n']:.2f} pushes, "
              f"{c['fetches'] / c['n']:.2f} fetches, {c['retries'] / c['n']:.2f} retries each", file=sys.stderr)
# Every non-zero exit by step and code (a claim's LEASE_HELD is its move
# to the next task, not a failure).
for (kind, code), count in sorted(codes.items()):
    print(f"N={n} exit != 0: {kind} {code}: {count}", file=sys.stderr)
refs_per_push = ops["refs_pushed"] / ops["pushes"] if ops["pushes"] else 0
reads = (ops["fetches"] + ops["queries"]) / 3600
print(f"| {mode} | {n} | {clones} | {ops['pushes'] / 60:.1f} ({accepted / 60:.1f}) | {ops['pushes'] / n:.1f} ({accepted / n:.1f}) | {refs_per_push:.2f} "
      f"| {reads:.2f} | {pct(0.5):.2f} s | {pct(0.99):.2f} s | {lost} | {doubled} | {msg_lost} of {sent} | {ops['retries']} | {failed} | {wall:.0f} s |")
EOF
    # shellcheck disable=SC2086 # one pid a word
    kill $daemon_pid 2>/dev/null || true
    wait $daemon_pid 2>/dev/null || true
    daemon_pid=
    unset clone_of next_of
done
