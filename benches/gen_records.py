#!/usr/bin/env python3
"""Write a `git fast-import` stream of swarm records on stdout: PLANS plans,
PACKETS_PER_PLAN packets each (ACCEPTED_PERCENT of them accepted), all dated
2023 so that `git swarm gc` (default age 14 days) may archive the finished
ones. Records have the same shape `git swarm plan new` / `handoff` / `accept`
write. Usage: gen_records.py PLANS PACKETS_PER_PLAN ACCEPTED_PERCENT [PREFIX]"""
import sys

plans, per_plan, accepted_pct = (int(a) for a in sys.argv[1:4])
prefix = sys.argv[4] if len(sys.argv) > 4 else "p"
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
