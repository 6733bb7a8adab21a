#!/usr/bin/env bash
# Benchmark: the first `git swarm sync` of a clone that holds MESSAGES
# message records it has not published (written offline), to an empty
# remote on this machine: wall time and CPU seconds (user+sys, git's
# processes included), and how many pushes it took. The issue's figure:
# 2,000 messages in under 10 s.
#
#   benches/publish_messages.sh                      # 2,000 messages, the release binary
#   MESSAGES=500 GIT_SWARM_BIN=target/debug/git-swarm benches/publish_messages.sh
set -euo pipefail

MESSAGES=${MESSAGES:-2000}
# shellcheck source=benches/lib.sh
. "$(dirname "$0")/lib.sh"
bench_setup

git commit --quiet --allow-empty -m init
git init --quiet --bare "$work/remote.git"
git remote add origin "$work/remote.git"
git push --quiet origin main
git swarm plan new p >/dev/null 2>&1
# The messages, as this clone's own unpublished records (no mirror of them).
python3 "$here/benches/gen_records.py" 1 0 0 m 0 "$MESSAGES" 0 |
    git fast-import --quiet
echo "the clone holds $(git for-each-ref refs/swarm/messages/ | wc -l) unpublished message refs" >&2

TIMEFORMAT='%R %U %S'
times=$({ time git swarm sync --json >"$work/sync.json" 2>"$work/sync.err"; } 2>&1) || {
    cat "$work/sync.err" >&2
    exit 1
}
read -r wall user sys <<<"$times"
on_remote=$(git --git-dir="$work/remote.git" for-each-ref refs/swarm/messages/ | wc -l)
pushes=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d.get("remote_ops", {}).get("pushes", "?"))' "$work/sync.json" 2>/dev/null || echo "?")
printf 'first sync publishing %s messages: %s s wall, %.3f CPU-s, %s push(es), %s on the remote\n' \
    "$MESSAGES" "$wall" "$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')" "$pushes" "$on_remote"
[ "$on_remote" -ge "$MESSAGES" ] || { echo "not every message reached the remote" >&2; exit 1; }
