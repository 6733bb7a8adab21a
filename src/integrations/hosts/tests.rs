//! The adapters against recorded streams (tests/agents/streams/: see its
//! README.md and claude.md for how each was recorded).

use super::*;

fn stream(name: &str) -> String {
    let path = format!("{}/tests/agents/streams/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn claude_command_lines_keep_the_developers_arguments_first() {
    let argv = command(
        Host::Claude,
        "/opt/claude --allowedTools Bash",
        "do t1",
        None,
    )
    .unwrap();
    assert_eq!(
        argv,
        [
            "/opt/claude",
            "--allowedTools",
            "Bash",
            "-p",
            "do t1",
            "--output-format",
            "stream-json",
            "--verbose"
        ]
    );
    let argv = command(Host::Claude, "claude", "go on", Some("s-1")).unwrap();
    assert_eq!(argv[..3], ["claude", "--resume", "s-1"]);
    let argv = command(Host::Codex, "codex -s workspace-write", "do t1", None).unwrap();
    assert_eq!(
        argv,
        ["codex", "exec", "-s", "workspace-write", "--json", "do t1"]
    );
    let argv = command(Host::Codex, "codex", "go on", Some("th-1")).unwrap();
    assert_eq!(argv, ["codex", "exec", "--json", "resume", "th-1", "go on"]);
    let argv = command(
        Host::Gemini,
        "gemini --approval-mode auto_edit",
        "do",
        Some("g-1"),
    )
    .unwrap();
    assert_eq!(
        argv,
        [
            "gemini",
            "--approval-mode",
            "auto_edit",
            "--resume",
            "g-1",
            "-p",
            "do",
            "--output-format",
            "stream-json"
        ]
    );
    let e = command(Host::Claude, "claude 'unclosed", "x", None).unwrap_err();
    assert_eq!(e.code, Code::ConfigInvalid);
    assert!(e.to_string().contains("swarm.host.claude.command"), "{e}");
    assert_eq!(
        command(Host::Claude, "  ", "x", None).unwrap_err().code,
        Code::ConfigInvalid
    );
}

#[test]
fn a_claude_session_gives_its_id_tokens_cost_and_a_clean_end() {
    let s = summarize(Host::Claude, &stream("claude-stream-bash.jsonl"));
    assert_eq!(
        s.session.as_deref(),
        Some("6eb654de-6d27-4f90-bc9b-f4d1abe16c57")
    );
    assert_eq!(
        s.usage,
        Usage {
            input_tokens: 20,
            cache_read_tokens: 8,
            cache_write_tokens: 4,
            output_tokens: 10,
            cost_usd: Some(0.0003016),
        }
    );
    assert_eq!(
        (s.turns, s.error.as_deref(), s.awaiting_human.as_ref()),
        (1, None, None)
    );
    assert_eq!(s.last_event.as_deref(), Some("turn_end"));
    assert!(!s.limited());
}

#[test]
fn a_claude_429_is_a_final_error_and_the_rate_limit_event_a_stop() {
    let s = summarize(Host::Claude, &stream("claude-stream-429.jsonl"));
    assert!(s.error.as_deref().unwrap().contains("429"), "{s:?}");
    assert_eq!(s.usage.cost_usd, Some(0.0));
    assert!(!s.limited(), "no rate_limit_event in an API-key session");
    let s = summarize(Host::Claude, &stream("claude-stream-rate-limit.jsonl"));
    assert_eq!(s.rate_limit, Some(("rejected".into(), Some(1796184000))));
    assert!(s.limited());
    let events: Vec<Event> = stream("claude-stream-rate-limit.jsonl")
        .lines()
        .flat_map(|l| parse_line(Host::Claude, l))
        .collect();
    assert_eq!(
        events[1],
        Event::RateLimit {
            status: "allowed_warning".into(),
            resets_at: Some(1796180400),
            window: Some("five_hour".into())
        }
    );
}

#[test]
fn a_permission_a_login_and_a_payment_are_waits_for_a_person() {
    let denied = r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"This command requires approval","is_error":true,"tool_use_id":"t"}]}}"#;
    assert_eq!(
        parse_line(Host::Claude, denied),
        [Event::AwaitingHuman {
            class: "permission".into(),
            what: "This command requires approval".into()
        }]
    );
    let login = r#"{"type":"result","is_error":true,"result":"Invalid API key · Please run /login","session_id":"s","usage":{}}"#;
    let s = summarize(Host::Claude, login);
    assert_eq!(s.awaiting_human.unwrap().0, "login");
    assert_eq!(
        human_class("Your credit balance is too low to access the API"),
        Some("payment")
    );
    assert_eq!(
        human_class("Do you trust the files in this folder?"),
        Some("consent")
    );
    assert_eq!(human_class("ok from mock"), None);
    let denials = r#"{"type":"result","is_error":false,"result":"x","usage":{},"permission_denials":[{"tool_name":"Bash"}]}"#;
    assert_eq!(
        summarize(Host::Claude, denials).awaiting_human.unwrap().0,
        "permission"
    );
}

#[test]
fn codex_streams_give_the_thread_the_usage_and_the_failure() {
    let s = summarize(Host::Codex, &stream("codex-exec-shell.jsonl"));
    assert_eq!(
        s.session.as_deref(),
        Some("01a23459-7799-7ed1-a627-c638d6b06379")
    );
    assert_eq!(
        (
            s.usage.input_tokens,
            s.usage.output_tokens,
            s.usage.cost_usd
        ),
        (20, 10, None)
    );
    assert_eq!((s.turns, s.error.as_ref()), (1, None));
    let s = summarize(Host::Codex, &stream("codex-exec-apply-patch.jsonl"));
    assert_eq!(s.turns, 1);
    let s = summarize(Host::Codex, &stream("codex-exec-error.jsonl"));
    assert!(s.error.unwrap().contains("scripted failure"));
    assert_eq!(s.last_event.as_deref(), Some("turn_end"));
    assert!(s.awaiting_human.is_none());
}

#[test]
fn gemini_streams_give_the_session_the_stats_and_the_failure() {
    let s = summarize(Host::Gemini, &stream("gemini-stream-write-file.jsonl"));
    assert_eq!(
        s.session.as_deref(),
        Some("8eb9ee93-ce69-4544-9e40-bbf3917c11c2")
    );
    assert_eq!((s.usage.input_tokens, s.usage.output_tokens), (20, 10));
    assert_eq!((s.turns, s.error.as_ref()), (1, None));
    let s = summarize(Host::Gemini, &stream("gemini-stream-error.jsonl"));
    assert!(s.error.as_deref().unwrap().contains("[API Error:"));
    assert!(!s.limited());
}

#[test]
fn lines_that_are_not_json_say_nothing() {
    assert!(parse_line(Host::Claude, "npm WARN something").is_empty());
    assert!(parse_line(Host::Codex, "").is_empty());
    assert!(parse_line(Host::Gemini, "{\"type\":\"message\"}").is_empty());
}
