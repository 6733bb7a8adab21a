#!/usr/bin/env python3
"""Write a `git fast-import` stream of swarm records on stdout: PLANS plans,
PACKETS_PER_PLAN packets each (ACCEPTED_PERCENT of them accepted), all dated
2023 so that `git swarm gc` (default age 14 days) may archive the finished
ones. Records have the same shape `git swarm plan new` / `handoff` / `accept`
write; with TASKS_PER_PLAN, MESSAGES_PER_PLAN and LANES_PER_PLAN also that
many tasks (40% done, 20% claimed, 10% blocked, 30% open, each after the
one before), messages and active lanes per plan, as `task new|claim|done`,
`notify` and `lane new` write them.
Usage: gen_records.py PLANS PACKETS_PER_PLAN ACCEPTED_PERCENT [PREFIX
       [TASKS_PER_PLAN MESSAGES_PER_PLAN LANES_PER_PLAN]]"""
import sys

plans, per_plan, accepted_pct = (int(a) for a in sys.argv[1:4])
prefix = sys.argv[4] if len(sys.argv) > 4 else "p"
tasks_per_plan, messages_per_plan, lanes_per_plan = (
    int(a) for a in (sys.argv[5:8] if len(sys.argv) > 7 else ("0", "0", "0")))
out = sys.stdout.buffer
t0 = 1700000000


def data(text):
    b = text.encode()
    out.write(b"data %d\n" % len(b) + b + b"\n")


def commit(ref, when, actor, summary, trailers, files):
    out.write(f"commit {ref}\n".encode())
    out.write(f"author {actor} <{actor}@git-swarm.invalid> {when} +0000\n".encode())
    out.write(f"committer {actor} <{actor}@git-swarm.invalid> {when} +0000\n".encode())
    data(summary + "\n\n" + "".join(f"{k}: {v}\n" for k, v in trailers))
    # A second commit on the same ref continues it: fast-import chains it.
    out.write(b"deleteall\n")
    for name, text in files:
        out.write(f"M 100644 inline {name}\n".encode())
        data(text)
    out.write(b"\n")


head = "0" * 40
for p in range(plans):
    plan = f"{prefix}{p:04d}"
    when = t0 + p
    stamp = "2023-11-14T22:13:20Z"
    commit(f"refs/swarm/plans/{plan}", when, "bench", f"plan {plan}: created",
           [("Swarm-Event", "plan-created"), ("Swarm-Actor", "bench")],
           [("plan.yaml", f"schema: swarm-plan/v1\nplan: {plan}\ntitle: Plan {plan}\ncontract: v1\nstatus: active\n"
                          f"created_at: {stamp}\ncreated_by: bench\nupdated_at: {stamp}\n"),
            ("PLAN.md", f"# Plan {plan}\n")])
    for k in range(per_plan):
        pid = f"20231114T{(k // 3600) % 24:02d}{(k // 60) % 60:02d}{k % 60:02d}Z-agent{p:04d}"
        ref = f"refs/swarm/packets/{plan}/{pid}"
        packet = (f"schema: dwp-handoff/v1\nid: {pid}\nplan: {plan}\ncontract: v1\nauthor: agent{p:04d}\n"
                  f"created_at: {stamp}\nreason: capacity_low\ntask: null\nstep: null\nrepo: null\n"
                  f"checkout: /work/{plan}\nbranch: feat/{plan}\nhead: {head}\npushed: true\nuncommitted: []\n"
                  f"leader: null\nepoch: null\ndone: []\nverified: []\nunverified:\n- cargo test\nnext:\n- go on\n"
                  f"requests: []\ndecisions: []\n")
        commit(ref, when, f"agent{p:04d}", f"handoff {pid}: packet written (capacity_low)",
               [("Swarm-Event", "handoff-written"), ("Swarm-Actor", f"agent{p:04d}"), ("Swarm-Packet", pid), ("Swarm-Plan", plan)],
               [("packet.yaml", packet)])
        if (k * 100) // per_plan < accepted_pct:
            acceptance = (f"schema: swarm-acceptance/v1\npacket: {pid}\nplan: {plan}\ncontract: v1\naccepted_by: next{p:04d}\n"
                          f"accepted_at: {stamp}\ncheckout: /work/{plan}\nbranch: feat/{plan}\nhead: {head}\nuncommitted: []\n"
                          f"leader: null\nepoch: null\nmust_rerun:\n- cargo test\nnext:\n- go on\n")
            commit(ref, when + 1, f"next{p:04d}", f"handoff {pid}: accepted by next{p:04d}",
                   [("Swarm-Event", "handoff-accepted"), ("Swarm-Actor", f"next{p:04d}"), ("Swarm-Packet", pid)],
                   [("packet.yaml", packet), ("acceptance.yaml", acceptance)])

    for k in range(tasks_per_plan):
        tid = f"t{k:03d}"
        bucket = (k * 10) // max(tasks_per_plan, 1)
        status = "done" if bucket < 4 else "in_progress" if bucket < 6 else "blocked" if bucket < 7 else "open"
        owner = f"agent{p:04d}" if status in ("done", "in_progress") else None
        claim = (f"\n  holder: {owner}\n  lease_until: 2023-11-14T23:13:20Z\n  claimed_at: {stamp}\n  epoch: 1"
                 if status == "in_progress" else " null")
        after = f"\n- t{k - 1:03d}" if k else " []"
        task = (f"schema: swarm-task/v1\nplan: {plan}\nid: {tid}\ntitle: Task {tid} of {plan}\nstatus: {status}\n"
                f"owner: {owner or 'null'}\ndepends_on:{after}\nfiles_hint: []\nacceptance: []\nbranch: null\nlane: null\n"
                f"claim:{claim}\nepoch: {1 if owner else 0}\nprevious_owner: null\nprevious_lease_until: null\n"
                f"recovery_reason: null\nblocked_reason: {'waiting on review' if status == 'blocked' else 'null'}\n"
                f"done_unverified: false\ndone_reason: null\ncreated_at: {stamp}\nupdated_at: {stamp}\n")
        commit(f"refs/swarm/tasks/{plan}/{tid}", when, "bench", f"task {tid}: Task {tid} of {plan}",
               [("Swarm-Event", "task-created"), ("Swarm-Actor", "bench"), ("Swarm-Plan", plan), ("Swarm-Task", tid)],
               [("task.yaml", task)])
    for k in range(messages_per_plan):
        mid = f"20231114T{(k // 3600) % 24:02d}{(k // 60) % 60:02d}{k % 60:02d}Z-bench-{p:04d}{k:04d}"
        msg = (f"schema: swarm-message/v1\nid: {mid}\nfrom: bench\nto: agent{p:04d}\nkind: notify\nplan: {plan}\n"
               f"reply_to: null\nat: {stamp}\nbody: message {k} about {plan}\n")
        commit(f"refs/swarm/messages/{plan}/{mid}", when, "bench", f"notify {mid} -> agent{p:04d}",
               [("Swarm-Event", "message"), ("Swarm-Actor", "bench")], [("message.yaml", msg)])
    for k in range(lanes_per_plan):
        feature = f"{plan}-f{k}"
        lane = (f"schema: swarm-lane/v1\nfeature: {feature}\nplan: {plan}\nowner: agent{p:04d}\nbranch: feat/{feature}\n"
                f"path: /work/{feature}\nbase: main\nbase_commit: {head}\nstate: active\ncreated_at: {stamp}\n"
                f"created_by: bench\nupdated_at: {stamp}\n")
        commit(f"refs/swarm/lanes/{feature}", when, "bench", f"lane {feature}: started",
               [("Swarm-Event", "lane-started"), ("Swarm-Actor", "bench")], [("lane.yaml", lane)])
