//! The briefs the runner gives the agents it launches: data the agent
//! reads, never an authority beyond the plan's.

use serde_json::Value;

const PROTOCOL: &str = "\
Start by running `git swarm agent guide` and follow that protocol. \
Never add AI attribution to commits (no Co-authored-by, no \"Generated with\" line). \
Never answer a permission, login, consent or payment prompt: stop instead. \
When your capacity is low, hand off with `git swarm handoff --reason capacity_critical` \
(or capacity_low, context_pressure) and stop: a successor takes over from your packet.";

/// A fresh agent on a ready task.
pub fn fresh(plan: &str, task: &Value, lane: &str, address: &str) -> String {
    let id = task["id"].as_str().unwrap_or("");
    let title = task["title"].as_str().unwrap_or("");
    let acceptance = task["acceptance"].as_str().unwrap_or("");
    let mut out = format!(
        "You are {address}, an agent of git-swarm plan {plan}. Your task is {id}: {title}. \
         This directory is its lane {lane} (branch feat/{lane})."
    );
    if !acceptance.is_empty() {
        out.push_str(&format!(" Acceptance criteria: {acceptance}."));
    }
    out.push_str(&format!(
        " When the task meets them and its work is merged, run `git swarm task done`. {PROTOCOL}"
    ));
    out
}

/// A successor that takes a lane over from a packet.
pub fn successor(plan: &str, task: &str, lane: &str, packet: &str, address: &str) -> String {
    format!(
        "You are {address}, an agent of git-swarm plan {plan}, taking over task {task} in lane {lane} \
         from a handoff. First run `git swarm accept {packet}`, then resume from the packet and the plan: \
         re-run every gate it lists as unverified, finish the task, and run `git swarm task done`. {PROTOCOL}"
    )
}

/// A successor for an agent lost without a packet (killed, crashed,
/// stopped by a usage limit) or for an orphaned lane.
pub fn resume(plan: &str, task: &str, lane: &str, address: &str, why: &str) -> String {
    format!(
        "You are {address}, an agent of git-swarm plan {plan}, taking over task {task} in lane {lane} \
         (branch feat/{lane}): the previous agent stopped without a handoff packet ({why}). \
         The task's claim is yours. Resume from the plan (`git swarm state`, the lane's plan and journal) \
         and from the work in this directory: uncommitted files the previous agent left are here, and its \
         snapshot is at refs/swarm/wip/{lane}. Check what is done, finish the task, and run \
         `git swarm task done`. {PROTOCOL}"
    )
}
