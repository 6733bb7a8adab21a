//! The demo's agent scene: the hooks a host (here Claude Code's input
//! shape) calls, run by hand with host-shaped JSON on stdin: a write to a
//! reserved path denied before any work is done, and an idle agent woken by
//! a message from another machine.

use super::Demo;
use crate::error::Result;

const HELPER: &str = "alice/_swarm-worktrees/helper";

pub(super) fn agents(d: &mut Demo<'_>) -> Result<()> {
    d.say("Agents in Claude Code, Codex or Gemini CLI: `agent install` puts the hooks in every checkout of the clone, lanes made later included");
    d.swarm(
        "alice",
        &["plan", "new", "agents", "--title", "Agent hooks"],
    )?;
    d.swarm("alice", &["agent", "install", "--host", "claude"])?;
    d.swarm("alice", &["lane", "new", "helper", "--plan", "agents"])?;
    d.swarm("bob", &["reserve", "pricing/", "--lease", "1h"])?;
    d.swarm(HELPER, &["sync"])?;
    d.say("The agent in the helper lane is about to Write a file bob reserved: the host's pre-tool-use hook denies it, the reason goes to the model");
    let write = r#"{"hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"pricing/plans.md","content":"Plans"}}"#;
    d.run(
        HELPER,
        "sh",
        &[
            "-c",
            &format!("printf '%s' '{write}' | git-swarm agent hook pre-tool-use --host claude"),
        ],
        0,
    )?;
    d.say("At the agent's next prompt, the messages addressed to it by name arrive, each once (broadcasts wait for `inbox`)");
    d.run(
        HELPER,
        "sh",
        &[
            "-c",
            "printf '%s' '{\"hook_event_name\":\"UserPromptSubmit\",\"prompt\":\"go on\"}' | git-swarm agent hook user-prompt-submit --host claude",
        ],
        0,
    )?;
    d.say("Idle mode: with nothing left the agent's stop hook waits at zero tokens; bob's message wakes it with its next instruction");
    d.run("alice", "git", &["config", "swarm.agentIdleWait", "30s"], 0)?;
    let stop = r#"{"hook_event_name":"Stop","session_id":"demo","stop_hook_active":false}"#;
    d.run(
        HELPER,
        "sh",
        &[
            "-c",
            &format!(
                "printf '%s' '{stop}' | git-swarm agent hook stop --host claude & sleep 2; (cd ../../../bob && git-swarm notify alice 'pricing/ is yours after the release: start with its tests' >/dev/null); wait"
            ),
        ],
        0,
    )?;
    Ok(())
}
