//! The agent hosts' hook contracts (Claude Code, Codex, Gemini CLI): what
//! each sends on stdin (the few fields the hooks read), which of its tools
//! write files and where, and what it accepts on stdout. Pure: no I/O.
//!
//! Claude Code and Codex share one contract (Codex publishes JSON Schemas
//! of it, tests/agents/codex-schema/); Gemini CLI names its events
//! differently (BeforeTool, BeforeAgent, AfterAgent, AfterTool) and answers
//! a denial or a continued turn with `{"decision":"deny","reason":…}`.

use serde_json::{json, Value};

/// An agent host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Host {
    Claude,
    Codex,
    Gemini,
}

pub const HOSTS: &[Host] = &[Host::Claude, Host::Codex, Host::Gemini];

impl Host {
    pub fn parse(s: &str) -> Option<Host> {
        match s {
            "claude" => Some(Host::Claude),
            "codex" => Some(Host::Codex),
            "gemini" => Some(Host::Gemini),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Host::Claude => "claude",
            Host::Codex => "codex",
            Host::Gemini => "gemini",
        }
    }

    /// The host's name for one of our events.
    pub fn event_name(self, e: Event) -> &'static str {
        match (self, e) {
            (Host::Gemini, Event::PreToolUse) => "BeforeTool",
            (Host::Gemini, Event::PostToolUse) => "AfterTool",
            (Host::Gemini, Event::UserPromptSubmit) => "BeforeAgent",
            (Host::Gemini, Event::Stop) => "AfterAgent",
            (_, Event::SessionStart) => "SessionStart",
            (_, Event::PreToolUse) => "PreToolUse",
            (_, Event::PostToolUse) => "PostToolUse",
            (_, Event::UserPromptSubmit) => "UserPromptSubmit",
            (_, Event::Stop) => "Stop",
        }
    }

    /// The tools that write files, as a matcher (a regular expression over
    /// tool names in all three hosts).
    pub fn write_matcher(self) -> &'static str {
        match self {
            Host::Claude => "Write|Edit|MultiEdit|NotebookEdit",
            Host::Codex => "apply_patch|Write|Edit",
            Host::Gemini => "write_file|replace",
        }
    }

    /// What the host needs before it runs hooks installed at project
    /// scope (None: nothing), as the pinned versions behave (tested live,
    /// tests/it/agents_live_*.rs).
    pub fn activation_note(self) -> Option<&'static str> {
        match self {
            Host::Claude => None,
            Host::Codex => Some(
                "Codex runs them once the project is trusted (`codex exec --trust`, or the trust prompt of `codex` there) and the hooks are trusted (review them with `/hooks` in `codex`); a headless run may pass `--dangerously-bypass-hook-trust` instead. Until then the commit guard still refuses reserved paths",
            ),
            Host::Gemini => Some(
                "Gemini CLI runs them in a trusted folder only (the trust prompt of `gemini`, or GEMINI_CLI_TRUST_WORKSPACE=true for a headless run); until then the commit guard still refuses reserved paths",
            ),
        }
    }

    /// Timeouts in the host's unit: Claude Code and Codex count seconds,
    /// Gemini CLI milliseconds.
    pub fn timeout_value(self, seconds: u64) -> u64 {
        match self {
            Host::Gemini => seconds * 1000,
            _ => seconds,
        }
    }
}

/// One of the hook events git-swarm answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    SessionStart,
    PreToolUse,
    UserPromptSubmit,
    Stop,
    PostToolUse,
}

pub const EVENTS: &[Event] = &[
    Event::SessionStart,
    Event::PreToolUse,
    Event::UserPromptSubmit,
    Event::Stop,
    Event::PostToolUse,
];

impl Event {
    pub fn parse(s: &str) -> Option<Event> {
        EVENTS.iter().copied().find(|e| e.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Event::SessionStart => "session-start",
            Event::PreToolUse => "pre-tool-use",
            Event::UserPromptSubmit => "user-prompt-submit",
            Event::Stop => "stop",
            Event::PostToolUse => "post-tool-use",
        }
    }
}

/// What a hook reads of the host's input.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Input {
    pub session_id: Option<String>,
    pub cwd: Option<String>,
    pub tool_name: Option<String>,
    pub tool_input: Value,
    /// True when the agent already goes on because a stop hook said so.
    pub stop_hook_active: bool,
}

impl Input {
    /// Read the host's JSON; anything missing or malformed is left empty
    /// (a hook never fails on its input).
    pub fn parse(text: &str) -> Input {
        let v: Value = serde_json::from_str(text).unwrap_or(Value::Null);
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        Input {
            session_id: s("session_id"),
            cwd: s("cwd"),
            tool_name: s("tool_name"),
            tool_input: v.get("tool_input").cloned().unwrap_or(Value::Null),
            stop_hook_active: v
                .get("stop_hook_active")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        }
    }

    /// The paths a file-writing tool call would write (as the tool got
    /// them: absolute or relative to `cwd`); empty for every other tool.
    /// Shell commands are not parsed.
    pub fn written_paths(&self) -> Vec<String> {
        let tool = self.tool_name.as_deref().unwrap_or("");
        let field = |k: &str| self.tool_input.get(k).and_then(Value::as_str);
        match tool {
            "Write" | "Edit" | "MultiEdit" | "write_file" | "replace" => field("file_path")
                .or_else(|| field("path"))
                .map(|p| vec![p.to_string()])
                .unwrap_or_default(),
            "NotebookEdit" => field("notebook_path")
                .map(|p| vec![p.to_string()])
                .unwrap_or_default(),
            "apply_patch" => {
                let text = match &self.tool_input {
                    Value::String(s) => Some(s.as_str()),
                    _ => field("command")
                        .or_else(|| field("input"))
                        .or_else(|| field("patch")),
                };
                text.map(patch_paths).unwrap_or_default()
            }
            _ => Vec::new(),
        }
    }
}

/// The files an `apply_patch` envelope adds, updates, deletes or moves to.
pub fn patch_paths(patch: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in patch.lines() {
        let line = line.trim_end();
        for head in [
            "*** Add File: ",
            "*** Update File: ",
            "*** Delete File: ",
            "*** Move to: ",
        ] {
            if let Some(p) = line.strip_prefix(head) {
                let p = p.trim().to_string();
                if !p.is_empty() && !out.contains(&p) {
                    out.push(p);
                }
            }
        }
    }
    out
}

/// What a hook answers, whatever the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Nothing to say: exit 0, empty stdout (Gemini: `{}`).
    Nothing,
    /// Text added to the agent's context.
    Context(String),
    /// Refuse the tool call, with the reason the agent is shown.
    Deny(String),
    /// Do not stop: the reason is the agent's next instruction.
    Block(String),
}

/// The host's stdout for `answer` to `event`.
pub fn render(host: Host, event: Event, answer: &Answer) -> String {
    let name = host.event_name(event);
    let doc = match answer {
        Answer::Nothing => {
            return match host {
                // Gemini parses stdout as JSON: an empty object, not nothing.
                Host::Gemini => "{}\n".to_string(),
                _ => String::new(),
            };
        }
        Answer::Context(text) => json!({
            "hookSpecificOutput": {"hookEventName": name, "additionalContext": text}
        }),
        Answer::Deny(reason) => match host {
            Host::Gemini => json!({"decision": "deny", "reason": reason}),
            _ => json!({
                "hookSpecificOutput": {
                    "hookEventName": name,
                    "permissionDecision": "deny",
                    "permissionDecisionReason": reason,
                }
            }),
        },
        Answer::Block(reason) => match host {
            Host::Gemini => json!({"decision": "deny", "reason": reason}),
            _ => json!({"decision": "block", "reason": reason}),
        },
    };
    format!("{doc}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_paths_per_tool() {
        let input = |tool: &str, ti: Value| Input {
            tool_name: Some(tool.into()),
            tool_input: ti,
            ..Input::default()
        };
        assert_eq!(
            input("Write", json!({"file_path": "/r/a.txt", "content": "x"})).written_paths(),
            ["/r/a.txt"]
        );
        assert_eq!(
            input("NotebookEdit", json!({"notebook_path": "n.ipynb"})).written_paths(),
            ["n.ipynb"]
        );
        assert_eq!(
            input("replace", json!({"file_path": "src/x"})).written_paths(),
            ["src/x"]
        );
        let patch = "*** Begin Patch\n*** Add File: a/new.rs\n+x\n*** Update File: b.rs\n*** Move to: c.rs\n@@\n*** Delete File: d.rs\n*** End Patch\n";
        assert_eq!(
            input("apply_patch", json!({"command": patch})).written_paths(),
            ["a/new.rs", "b.rs", "c.rs", "d.rs"]
        );
        assert!(input("Bash", json!({"command": "echo > x"}))
            .written_paths()
            .is_empty());
        assert!(Input::parse("not json").written_paths().is_empty());
    }

    #[test]
    fn answers_per_host() {
        let deny = Answer::Deny("held".into());
        let v: Value =
            serde_json::from_str(&render(Host::Claude, Event::PreToolUse, &deny)).unwrap();
        assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
        let v: Value =
            serde_json::from_str(&render(Host::Gemini, Event::PreToolUse, &deny)).unwrap();
        assert_eq!(v, json!({"decision": "deny", "reason": "held"}));
        let ctx = Answer::Context("hi".into());
        let v: Value =
            serde_json::from_str(&render(Host::Gemini, Event::UserPromptSubmit, &ctx)).unwrap();
        assert_eq!(v["hookSpecificOutput"]["hookEventName"], "BeforeAgent");
        assert_eq!(render(Host::Codex, Event::Stop, &Answer::Nothing), "");
        assert_eq!(render(Host::Gemini, Event::Stop, &Answer::Nothing), "{}\n");
    }
}
