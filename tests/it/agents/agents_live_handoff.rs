//! A handoff across hosts, live: a packet written by one host's agent (its
//! shell tool running `git swarm handoff`) is accepted and the task
//! finished by another host's agent on another clone, each CLI driven by
//! its scripted model ([`crate::support::model_server`]): Claude Code to Codex, and
//! Codex to Gemini CLI.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::json;

use crate::agents::agents_live::{claude, run_claude_with};
use crate::agents::agents_live_codex::{codex, run_codex_with};
use crate::agents::agents_live_gemini::{gemini, run_gemini_with};
use crate::support::fixture::Swarm;
use crate::support::model_server::{has_tools, request_text, serve, Reply, Wire};

#[test]
fn a_handoff_written_by_a_claude_lane_is_accepted_and_finished_by_a_codex_lane() {
    let (Some(claude), Some(codex)) = (claude(), codex()) else {
        return;
    };
    let (env, _, clones) = Swarm::new(&["lead", "ann", "bob"])
        .plan(0, "p")
        .sync(0)
        .task(0, "t", "the parser")
        .parts();
    let (lead, ann, bob) = (&clones[0], &clones[1], &clones[2]);
    env.swarm(ann, &["agent", "install", "--host", "claude"])
        .ok();
    let lane = env
        .swarm(ann, &["lane", "new", "f1", "--task", "t", "--json"])
        .ok()
        .json();
    let wt = PathBuf::from(lane["path"].as_str().unwrap());
    env.write(&wt.join("src/b.txt"), "half done\n");

    // Claude Code's agent hands off through its Bash tool.
    let model = serve(
        Wire::Messages,
        Arc::new(|req, _| {
            if request_text(Wire::Messages, req).contains("[tool_result]") {
                Reply::Text("handed off".into())
            } else if has_tools(Wire::Messages, req) {
                Reply::Tool {
                    name: "Bash".into(),
                    input: json!({
                        "command": "git swarm handoff --reason context_pressure --next \"finish b\"",
                        "description": "hand the lane off"
                    }),
                }
            } else {
                Reply::Text("ok".into())
            }
        }),
    );
    let run = run_claude_with(
        &env,
        &claude,
        &wt,
        &model,
        "hand off",
        &["--allowedTools", "Bash(git swarm handoff:*)"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let shown = model.all_text();
    assert!(
        shown.contains("[tool_result]") && shown.contains("wrote packet"),
        "the agent saw its handoff: {shown}"
    );
    let packets = env.swarm(bob, &["packets", "--open", "--json"]).ok().json();
    let open = packets["packets"].as_array().cloned().unwrap_or_default();
    assert_eq!(open.len(), 1, "one open packet: {packets}");

    // Codex's agent on bob's clone accepts it and finishes the task.
    env.swarm(bob, &["agent", "install", "--host", "codex"])
        .ok();
    let succ = bob.join("succ");
    let accept = format!("git swarm accept --lane f1 --worktree {}", succ.display());
    let finish = format!(
        "cd {} && git add -A && git commit -q -m 'parser: second half' && git swarm task done t --unverified --reason 'finished by the Codex lane'",
        succ.display()
    );
    let model = serve(
        Wire::Responses,
        Arc::new(move |req, _| {
            let done = request_text(Wire::Responses, req)
                .matches("[tool_result]")
                .count();
            match done {
                _ if !has_tools(Wire::Responses, req) => Reply::Text("ok".into()),
                0 => Reply::Tool {
                    name: "exec_command".into(),
                    input: json!({"cmd": accept, "yield_time_ms": 30000, "login": false}),
                },
                1 => Reply::Tool {
                    name: "exec_command".into(),
                    input: json!({"cmd": finish, "yield_time_ms": 30000, "login": false}),
                },
                _ => Reply::Text("finished".into()),
            }
        }),
    );
    let run = run_codex_with(
        &env,
        &codex,
        bob,
        bob,
        &model,
        "take over lane f1",
        "danger-full-access",
    );
    assert_eq!(run.code, 0, "{run:?}");
    let shown = model.all_text();
    assert!(
        shown.contains("restored the uncommitted work"),
        "the agent saw its accept: {shown}"
    );
    assert_eq!(env.read(&succ.join("src/b.txt")), "half done\n");
    assert_eq!(
        env.git(&succ, &["log", "-1", "--format=%s"]),
        "parser: second half"
    );
    // Everyone sees it: the task is done, by bob, and no packet is open.
    env.swarm(lead, &["sync"]).ok();
    let task = env
        .swarm(lead, &["task", "show", "t", "--plan", "p", "--json"])
        .ok()
        .json();
    assert_eq!(task["task"]["status"], "done", "{task}");
    assert_eq!(
        task["task"]["done_reason"], "finished by the Codex lane",
        "{task}"
    );
    let journal = task["journal"].as_array().cloned().unwrap_or_default();
    assert!(
        journal
            .iter()
            .any(|e| e["actor"] == "bob"
                && e["event"].as_str().is_some_and(|ev| ev.contains("done"))),
        "bob recorded it done: {task}"
    );
    let packets = env
        .swarm(lead, &["packets", "--open", "--json"])
        .ok()
        .json();
    let open = packets["packets"].as_array().cloned().unwrap_or_default();
    assert!(open.is_empty(), "{packets}");
}

#[test]
fn a_handoff_written_by_a_codex_lane_is_accepted_and_finished_by_a_gemini_lane() {
    let (Some(codex), Some(gemini)) = (codex(), gemini()) else {
        return;
    };
    let (env, _, clones) = Swarm::new(&["lead", "ann", "bob"])
        .plan(0, "p")
        .sync(0)
        .task(0, "t", "the parser")
        .parts();
    let (lead, ann, bob) = (&clones[0], &clones[1], &clones[2]);
    env.swarm(ann, &["agent", "install", "--host", "codex"])
        .ok();
    let lane = env
        .swarm(ann, &["lane", "new", "f1", "--task", "t", "--json"])
        .ok()
        .json();
    let wt = PathBuf::from(lane["path"].as_str().unwrap());
    env.write(&wt.join("src/b.txt"), "half done\n");

    // Codex's agent hands off through its shell tool.
    let model = serve(
        Wire::Responses,
        Arc::new(|req, _| {
            if request_text(Wire::Responses, req).contains("[tool_result]") {
                Reply::Text("handed off".into())
            } else if has_tools(Wire::Responses, req) {
                Reply::Tool {
                    name: "exec_command".into(),
                    input: json!({
                        "cmd": "git swarm handoff --reason usage_limit --next \"finish b\"",
                        "yield_time_ms": 30000,
                        "login": false
                    }),
                }
            } else {
                Reply::Text("ok".into())
            }
        }),
    );
    let run = run_codex_with(
        &env,
        &codex,
        ann,
        &wt,
        &model,
        "hand off",
        "danger-full-access",
    );
    assert_eq!(run.code, 0, "{run:?}");
    let shown = model.all_text();
    assert!(
        shown.contains("[tool_result]") && shown.contains("Process exited with code 0"),
        "the agent saw its handoff succeed: {shown}"
    );
    let packets = env.swarm(bob, &["packets", "--open", "--json"]).ok().json();
    let open = packets["packets"].as_array().cloned().unwrap_or_default();
    assert_eq!(open.len(), 1, "one open packet: {packets}");

    // Gemini CLI's agent on bob's clone accepts it and finishes the task.
    env.swarm(bob, &["agent", "install", "--host", "gemini"])
        .ok();
    let succ = bob.join("succ");
    let accept = format!("git swarm accept --lane f1 --worktree {}", succ.display());
    let finish = format!(
        "cd {} && git add -A && git commit -q -m 'parser: second half' && git swarm task done t --unverified --reason 'finished by the Gemini lane'",
        succ.display()
    );
    let model = serve(
        Wire::Gemini,
        Arc::new(move |req, _| {
            let done = request_text(Wire::Gemini, req)
                .matches("[tool_result]")
                .count();
            match done {
                _ if !has_tools(Wire::Gemini, req) => Reply::Text("ok".into()),
                0 => Reply::Tool {
                    name: "run_shell_command".into(),
                    input: json!({"command": accept, "description": "accept the handoff"}),
                },
                1 => Reply::Tool {
                    name: "run_shell_command".into(),
                    input: json!({"command": finish, "description": "finish the task"}),
                },
                _ => Reply::Text("finished".into()),
            }
        }),
    );
    let run = run_gemini_with(&env, &gemini, bob, &model, "take over lane f1", "yolo");
    assert_eq!(run.code, 0, "{run:?}");
    let shown = model.all_text();
    assert!(
        shown.contains("restored the uncommitted work"),
        "the agent saw its accept: {shown}"
    );
    assert_eq!(env.read(&succ.join("src/b.txt")), "half done\n");
    assert_eq!(
        env.git(&succ, &["log", "-1", "--format=%s"]),
        "parser: second half"
    );
    env.swarm(lead, &["sync"]).ok();
    let task = env
        .swarm(lead, &["task", "show", "t", "--plan", "p", "--json"])
        .ok()
        .json();
    assert_eq!(task["task"]["status"], "done", "{task}");
    assert_eq!(
        task["task"]["done_reason"], "finished by the Gemini lane",
        "{task}"
    );
    let journal = task["journal"].as_array().cloned().unwrap_or_default();
    assert!(
        journal
            .iter()
            .any(|e| e["actor"] == "bob"
                && e["event"].as_str().is_some_and(|ev| ev.contains("done"))),
        "bob recorded it done: {task}"
    );
    let packets = env
        .swarm(lead, &["packets", "--open", "--json"])
        .ok()
        .json();
    let open = packets["packets"].as_array().cloned().unwrap_or_default();
    assert!(open.is_empty(), "{packets}");
}
