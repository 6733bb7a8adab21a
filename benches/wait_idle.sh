#!/usr/bin/env bash
# Benchmark: what an idle `git swarm wait --for message` costs in CPU
# seconds over SECONDS of real time (user+sys, git's processes included),
# with MESSAGES message records on the remote and in the clone's mirror,
# the remote asked every round; beside the peer, `agent-chat wait`
# (agent-chat-plugin 0.7.5 from PyPI, a file-polling wait over local
# folders) on a channel of as many messages, in the same run.
#
#   benches/wait_idle.sh                        # 2,000 messages, 20 s, the release binary
#   MESSAGES=200 SECONDS_IDLE=20 benches/wait_idle.sh
#   GIT_SWARM_BIN=target/debug/git-swarm benches/wait_idle.sh
#   AGENT_CHAT=/path/to/agent-chat benches/wait_idle.sh   # else installed into a venv
#
# Real sleeps (not virtual ones): both waits sleep between rounds as they
# would for a user, git-swarm's interval doubling from 2 s to --max-interval
# (given as 5 s, so that its remote is asked about as often as the peer
# polls its folder: every round), the peer's every --interval (5 s).
set -euo pipefail

MESSAGES=${MESSAGES:-2000}
SECONDS_IDLE=${SECONDS_IDLE:-20}
# shellcheck source=benches/lib.sh
. "$(dirname "$0")/lib.sh"
bench_setup

git commit --quiet --allow-empty -m init
git init --quiet --bare "$work/remote.git"
git remote add origin "$work/remote.git"
git push --quiet origin main
git swarm plan new p >/dev/null 2>&1
python3 "$here/benches/gen_records.py" 1 0 0 m 0 "$MESSAGES" 0 |
    git --git-dir="$work/remote.git" fast-import --quiet
git swarm sync >/dev/null 2>&1
echo "the clone mirrors $(git for-each-ref refs/swarm-remotes/origin/messages/ | wc -l) message refs" >&2
# Read them all once: the wait starts with nothing unread.
git swarm inbox --all >/dev/null 2>&1 || git swarm inbox >/dev/null 2>&1 || true

cpu() { # command...
    local TIMEFORMAT='%U %S'
    { time "$@" >/dev/null 2>&1 || true; } 2>&1 | awk '{ printf "%.3f\n", $1 + $2 }'
}

swarm=$(cpu git swarm wait --for message --timeout "${SECONDS_IDLE}s" --max-interval 5s --json)

# The peer: a channel of as many messages, all read by the waiting agent.
chat=${AGENT_CHAT:-}
if [ -z "$chat" ]; then
    python3 -m venv "$work/venv"
    "$work/venv/bin/pip" install --quiet --disable-pip-version-check agent-chat-plugin==0.7.5
    chat="$work/venv/bin/agent-chat"
fi
root="$work/chat"
"$chat" --root "$root" init chan >/dev/null
python3 - "$root/chan" "$MESSAGES" <<'PY'
import sys
chan, n = sys.argv[1], int(sys.argv[2])
for i in range(1, n + 1):
    with open(f"{chan}/{i:04d}-ann-m{i}.md", "w") as f:
        f.write(f"---\nseq: {i}\nfrom: ann\nto: all\nchannel: chan\nts: 2026-01-01T00:00:00+00:00\n"
                f"status: discussion\ntitle: m{i}\n---\nmessage {i}\n")
PY
"$chat" --root "$root" read chan --as bob >/dev/null
peer=$(cpu "$chat" --root "$root" wait chan --as bob --timeout "$SECONDS_IDLE" --interval 5)

printf '%-58s %8s CPU-s\n' "git swarm wait --for message, $MESSAGES message refs, ${SECONDS_IDLE} s" "$swarm"
printf '%-58s %8s CPU-s\n' "agent-chat wait, $MESSAGES messages, ${SECONDS_IDLE} s" "$peer"
awk -v a="$swarm" -v b="$peer" 'BEGIN { printf "ratio %.2f\n", (b > 0 ? a / b : 0) }'
