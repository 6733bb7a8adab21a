//! `git swarm agent hook|install|guide` without a host: host-shaped input
//! on stdin, the answer checked against the host's contract. Codex's
//! answers are validated against the JSON Schemas Codex publishes
//! (tests/agents/codex-schema/, source named there); Gemini CLI's against
//! its documented fields. The real Claude Code CLI is in `agents_live`.

pub(crate) mod agent_lane_task;
pub(crate) mod agents_live;
pub(crate) mod agents_live_codex;
pub(crate) mod agents_live_gemini;
pub(crate) mod agents_live_handoff;

use std::io::Write;
use std::path::Path;
use std::process::Stdio;

use serde_json::{json, Value};

use crate::support::fixture::Swarm;
use crate::support::harness::{Run, TestEnv};

fn hook(env: &TestEnv, dir: &Path, event: &str, host: &str, input: &Value) -> Run {
    let mut child = env
        .command("git-swarm", dir)
        .args(["agent", "hook", event, "--host", host])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the hook");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        shown: format!("agent hook {event} --host {host}"),
    }
}

/// A draft-07 subset: the keywords the Codex schema files use.
fn validate(schema: &Value, root: &Value, v: &Value, at: &str, errors: &mut Vec<String>) {
    if let Some(r) = schema["$ref"].as_str() {
        let name = r.trim_start_matches("#/definitions/");
        return validate(&root["definitions"][name], root, v, at, errors);
    }
    if let Some(t) = schema.get("type") {
        let types: Vec<&str> = match t {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        let ok = types.iter().any(|t| match *t {
            "object" => v.is_object(),
            "string" => v.is_string(),
            "boolean" => v.is_boolean(),
            "null" => v.is_null(),
            "array" => v.is_array(),
            "number" | "integer" => v.is_number(),
            _ => false,
        });
        if !ok {
            errors.push(format!("{at}: {v} is not {types:?}"));
            return;
        }
    }
    if let Some(e) = schema["enum"].as_array() {
        if !e.contains(v) {
            errors.push(format!("{at}: {v} not in {e:?}"));
        }
    }
    if let Some(c) = schema.get("const") {
        if c != v {
            errors.push(format!("{at}: {v} is not {c}"));
        }
    }
    if let (Some(p), Some(s)) = (schema["pattern"].as_str(), v.as_str()) {
        if !regex::Regex::new(p).unwrap().is_match(s) {
            errors.push(format!("{at}: {s:?} does not match {p}"));
        }
    }
    for sub in schema["allOf"].as_array().into_iter().flatten() {
        validate(sub, root, v, at, errors);
    }
    if let Some(any) = schema["anyOf"].as_array() {
        let fits = any.iter().any(|s| {
            let mut e = Vec::new();
            validate(s, root, v, at, &mut e);
            e.is_empty()
        });
        if !fits {
            errors.push(format!("{at}: {v} fits none of anyOf"));
        }
    }
    if let Some(cond) = schema.get("if") {
        let mut e = Vec::new();
        validate(cond, root, v, at, &mut e);
        if e.is_empty() {
            validate(&schema["then"], root, v, at, errors);
        }
    }
    if let Some(obj) = v.as_object() {
        let props = schema["properties"].as_object();
        for r in schema["required"].as_array().into_iter().flatten() {
            if !obj.contains_key(r.as_str().unwrap()) {
                errors.push(format!("{at}: {r} is required"));
            }
        }
        for (k, val) in obj {
            match props.and_then(|p| p.get(k)) {
                Some(s) => validate(s, root, val, &format!("{at}.{k}"), errors),
                None if schema["additionalProperties"] == json!(false) => {
                    errors.push(format!("{at}: {k} is not allowed"))
                }
                None => {}
            }
        }
    }
}

#[track_caller]
fn assert_codex(schema: &str, out: &str) {
    let path = format!(
        "{}/tests/agents/codex-schema/{schema}.command.output.schema.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let s: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let v: Value = serde_json::from_str(out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"));
    let mut errors = Vec::new();
    validate(&s, &s, &v, "$", &mut errors);
    assert!(errors.is_empty(), "{schema}: {errors:?}\n{out}");
}

/// Two clones; bob reserved src/api.rs; ann's clone has fetched it.
fn reserved() -> (TestEnv, std::path::PathBuf) {
    let (env, _, clones) = Swarm::new(&["ann", "bob"])
        .run(
            1,
            &["reserve", "src/api.rs", "--lease", "1h", "--task", "T1"],
        )
        .sync(0)
        .parts();
    (env, clones[0].clone())
}

#[test]
fn codex_answers_fit_the_published_schemas() {
    let (env, a) = reserved();
    let patch = "*** Begin Patch\n*** Update File: src/api.rs\n@@\n-a\n+b\n*** End Patch\n";
    let pre = json!({"session_id": "s1", "cwd": a, "hook_event_name": "PreToolUse", "tool_name": "apply_patch", "tool_input": {"command": patch}});
    let run = hook(&env, &a, "pre-tool-use", "codex", &pre).ok();
    assert_codex("pre-tool-use", &run.stdout);
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
    let reason = v["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(
        reason.contains("src/api.rs is reserved by bob") && reason.contains("for task T1"),
        "{reason}"
    );

    let start = json!({"session_id": "s1", "cwd": a, "hook_event_name": "SessionStart", "source": "startup"});
    let run = hook(&env, &a, "session-start", "codex", &start).ok();
    assert_codex("session-start", &run.stdout);
    assert!(run.stdout.contains("You are ann"), "{}", run.stdout);

    // A message to ann by name reaches her next prompt, once.
    let b = env.root().join("bob");
    env.swarm(&b, &["ask", "ann", "which schema version?"]).ok();
    env.swarm(&b, &["notify", "all", "lunch"]).ok();
    env.swarm(&a, &["sync"]).ok();
    let prompt = json!({"session_id": "s1", "cwd": a, "hook_event_name": "UserPromptSubmit", "prompt": "go"});
    let run = hook(&env, &a, "user-prompt-submit", "codex", &prompt).ok();
    assert_codex("user-prompt-submit", &run.stdout);
    assert!(
        run.stdout.contains("which schema version?") && run.stdout.contains("git swarm reply"),
        "{}",
        run.stdout
    );
    assert!(
        !run.stdout.contains("lunch"),
        "a broadcast waits for inbox: {}",
        run.stdout
    );
    let again = hook(&env, &a, "user-prompt-submit", "codex", &prompt).ok();
    assert_eq!(again.stdout, "", "shown once");
    env.swarm(
        &b,
        &["notify", "all", "--urgent", "main is broken, stop merging"],
    )
    .ok();
    env.swarm(&a, &["sync"]).ok();
    let urgent = hook(&env, &a, "user-prompt-submit", "codex", &prompt).ok();
    assert!(
        urgent.stdout.contains("urgent notify from bob"),
        "{}",
        urgent.stdout
    );
    // The inbox still lists them: the hook has its own cursor.
    env.swarm(&a, &["inbox", "--peek"])
        .ok()
        .stdout_has("which schema version?");

    // Stop: a claimed task blocks once, with the exact command.
    env.swarm(&a, &["plan", "new", "p"]).ok();
    env.swarm(
        &a,
        &["task", "new", "t1", "--plan", "p", "--title", "Schema"],
    )
    .ok();
    env.swarm(&a, &["task", "claim", "t1", "--plan", "p"]).ok();
    let stop =
        json!({"session_id": "s1", "cwd": a, "hook_event_name": "Stop", "stop_hook_active": false});
    let run = hook(&env, &a, "stop", "codex", &stop).ok();
    assert_codex("stop", &run.stdout);
    assert!(
        run.stdout.contains("git swarm task release t1 --plan p"),
        "{}",
        run.stdout
    );
    let active =
        json!({"session_id": "s1", "cwd": a, "hook_event_name": "Stop", "stop_hook_active": true});
    assert_eq!(hook(&env, &a, "stop", "codex", &active).ok().stdout, "");
}

#[test]
fn gemini_answers_are_json_only_in_its_contract() {
    let (env, a) = reserved();
    let target = a.join("src/api.rs");
    let pre = json!({"session_id": "g", "cwd": a, "hook_event_name": "BeforeTool", "tool_name": "write_file", "tool_input": {"file_path": target, "content": "x"}});
    let run = hook(&env, &a, "pre-tool-use", "gemini", &pre).ok();
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["decision"], "deny");
    assert!(v["reason"].as_str().unwrap().contains("reserved by bob"));
    // A free path: `{}` (Gemini parses stdout as JSON), nothing on stderr.
    let free = json!({"cwd": a, "tool_name": "replace", "tool_input": {"file_path": "docs/x.md"}});
    let run = hook(&env, &a, "pre-tool-use", "gemini", &free).ok();
    assert_eq!((run.stdout.as_str(), run.stderr.as_str()), ("{}\n", ""));
    let start = json!({"cwd": a, "hook_event_name": "SessionStart", "source": "startup"});
    let v: Value = serde_json::from_str(
        &hook(&env, &a, "session-start", "gemini", &start)
            .ok()
            .stdout,
    )
    .unwrap();
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "SessionStart");
}

#[test]
fn claude_pre_tool_use_denies_only_others_live_reservations() {
    let (env, a) = reserved();
    let write = |p: &str| json!({"cwd": a, "hook_event_name": "PreToolUse", "tool_name": "Write", "tool_input": {"file_path": p, "content": "x"}});
    let denied = hook(&env, &a, "pre-tool-use", "claude", &write("src/api.rs")).ok();
    assert!(
        denied.stdout.contains("\"permissionDecision\":\"deny\""),
        "{}",
        denied.stdout
    );
    // Free path, a shell command (not parsed), a read: allowed, silent.
    for input in [
        write("src/other.rs"),
        json!({"cwd": a, "tool_name": "Bash", "tool_input": {"command": "echo x > src/api.rs"}}),
        json!({"cwd": a, "tool_name": "Read", "tool_input": {"file_path": "src/api.rs"}}),
    ] {
        let run = hook(&env, &a, "pre-tool-use", "claude", &input).ok();
        assert_eq!(
            (run.stdout.as_str(), run.stderr.as_str()),
            ("", ""),
            "{input}"
        );
    }
    // bob himself may write it.
    let b = env.root().join("bob");
    let mine = json!({"cwd": b, "tool_name": "Edit", "tool_input": {"file_path": "src/api.rs"}});
    assert_eq!(
        hook(&env, &b, "pre-tool-use", "claude", &mine).ok().stdout,
        ""
    );
    // An unreadable ledger: allowed, with one warning line (the commit guard still refuses).
    use crate::support::reservations::{shard_of, LOCAL};
    let shard = shard_of(LOCAL, "src/api.rs");
    let mirrored = shard.replace("refs/swarm/", "refs/swarm-remotes/origin/");
    let ledger = env.git(&a, &["rev-parse", &mirrored]);
    let blob = env.git_stdin(&a, &["hash-object", "-w", "--stdin"], b"{not yaml: [");
    let tree = env.git_stdin(
        &a,
        &["mktree"],
        format!("100644 blob {blob}\treservations.yaml\n").as_bytes(),
    );
    let bad = env.git(&a, &["commit-tree", &tree, "-p", &ledger, "-m", "broken"]);
    env.git(&a, &["update-ref", &shard, &bad]);
    let run = hook(&env, &a, "pre-tool-use", "claude", &write("src/api.rs")).ok();
    assert_eq!(run.stdout, "");
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("allowed") && run.stderr.contains("commit guard"),
        "{}",
        run.stderr
    );
}

#[test]
fn hooks_outside_a_swarm_repository_say_nothing() {
    let env = TestEnv::new();
    let plain = env.root().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    env.git(&plain, &["init", "--quiet"]);
    let not_git = env.root().join("nothing");
    std::fs::create_dir_all(&not_git).unwrap();
    for dir in [&plain, &not_git] {
        for event in [
            "session-start",
            "pre-tool-use",
            "user-prompt-submit",
            "stop",
            "post-tool-use",
        ] {
            let input = json!({"cwd": dir, "tool_name": "Write", "tool_input": {"file_path": "a"}});
            let run = hook(&env, dir, event, "claude", &input);
            assert_eq!(
                (run.code, run.stdout.as_str(), run.stderr.as_str()),
                (0, "", ""),
                "{event} in {}",
                dir.display()
            );
        }
    }
    // Garbage on stdin is an empty input, not an error.
    let (env2, a) = reserved();
    let mut child = env2
        .command("git-swarm", &a)
        .args(["agent", "hook", "pre-tool-use", "--host", "claude"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"\x00not json")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success() && out.stdout.is_empty());
    // Unknown event or host: a usage error (exit 2).
    env2.swarm(&a, &["agent", "hook", "nap", "--host", "claude"])
        .err(2, "USAGE");
    env2.swarm(&a, &["agent", "hook", "stop", "--host", "vim"])
        .err(2, "USAGE");
}

#[test]
fn hooks_in_a_swarm_repository_with_an_unusable_setting_warn_instead_of_going_silent() {
    // A typo in swarm.trust (or swarm.pushBudget) makes every command
    // refuse with CONFIG_INVALID; the hooks must not take it for "not a
    // swarm repository" and answer nothing without a word.
    let (env, a) = reserved();
    env.git(&a, &["config", "swarm.trust", "requre"]);
    env.swarm(&a, &["status"]).err(2, "CONFIG_INVALID");
    let write = json!({"cwd": a, "tool_name": "Write", "tool_input": {"file_path": "src/api.rs", "content": "x"}});
    for event in [
        "session-start",
        "pre-tool-use",
        "user-prompt-submit",
        "stop",
        "post-tool-use",
    ] {
        let run = hook(&env, &a, event, "claude", &write).ok();
        assert_eq!(run.stdout, "", "{event}: no answer");
        assert_eq!(run.stderr.lines().count(), 1, "{event}: {}", run.stderr);
        assert!(
            run.stderr.starts_with("warning: git swarm agent hook")
                && run.stderr.contains("swarm.trust")
                && run.stderr.contains("requre"),
            "{event}: {}",
            run.stderr
        );
    }
    // The commit guard still refuses bob's path (it fails closed).
    let code = env
        .command("git", &a)
        .args(["swarm", "check"])
        .output()
        .unwrap()
        .status
        .code();
    assert_ne!(code, Some(0), "check must not pass under a bad swarm.trust");
}

#[test]
fn agent_install_never_writes_through_a_symlink_out_of_the_checkout_nor_opens_a_fifo() {
    // A repository can track symlinks: a hostile one (or a careless one)
    // could point AGENTS.md, the skill or the settings at a file of the
    // user's outside the checkout; install must refuse, writing nothing.
    let (env, _, clones) = Swarm::new(&["ann"]).parts();
    let a = clones[0].clone();
    let outside = env.root().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let precious = outside.join("authorized_keys");
    env.write(&precious, "ssh-ed25519 AAAA precious\n");
    let settings = outside.join("settings.json");
    env.write(&settings, "{\"mine\": 1}\n");
    for (link, target) in [
        (".claude/skills/git-swarm/SKILL.md", &precious),
        ("AGENTS.md", &precious),
        (".claude/settings.local.json", &settings),
        (".codex", &outside),
    ] {
        let path = a.join(link);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, &path).unwrap();
        let host = if link.starts_with(".codex") {
            "codex"
        } else {
            "claude"
        };
        env.swarm(&a, &["agent", "install", "--host", host])
            .err(2, "FILE_NOT_REGULAR")
            .stderr_has(link.split('/').next().unwrap());
        assert_eq!(env.read(&precious), "ssh-ed25519 AAAA precious\n", "{link}");
        assert_eq!(env.read(&settings), "{\"mine\": 1}\n", "{link}");
        assert!(!outside.join("hooks.json").exists(), "{link}");
        assert!(
            !a.join(".claude/settings.local.json").is_file()
                || link == ".claude/settings.local.json",
            "{link}: nothing was written"
        );
        std::fs::remove_file(&path).unwrap();
    }
    // A FIFO where a settings file goes: refused at once, not waited on.
    let fifo = a.join(".claude/settings.local.json");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    env.swarm(&a, &["agent", "install"])
        .err(2, "FILE_NOT_REGULAR")
        .stderr_has("settings.local.json");
    std::fs::remove_file(&fifo).unwrap();
    // A symlink that stays inside the checkout (AGENTS.md -> CLAUDE.md, a
    // common layout) is followed: the block goes into CLAUDE.md.
    env.write(&a.join("CLAUDE.md"), "# Ours\n");
    std::os::unix::fs::symlink("CLAUDE.md", a.join("AGENTS.md")).unwrap();
    env.swarm(&a, &["agent", "install"]).ok();
    assert!(env
        .read(&a.join("CLAUDE.md"))
        .contains("git-swarm agent guide"));
    assert!(std::fs::symlink_metadata(a.join("AGENTS.md"))
        .unwrap()
        .file_type()
        .is_symlink());
}

#[test]
fn a_lane_whose_branch_tracks_a_symlink_out_gets_no_agent_files_through_it() {
    // `lane new` writes the installed hosts' files into the worktree it
    // makes; a base branch that tracks the skill as a symlink out of the
    // checkout must not make it write there.
    let (env, remote, clones) = Swarm::new(&["ann"]).plan(0, "p").parts();
    let a = clones[0].clone();
    env.swarm(&a, &["agent", "install"]).ok();
    let precious = env.root().join("precious.txt");
    env.write(&precious, "keep me\n");
    let scratch = env.root().join("scratch");
    env.git(
        env.root(),
        &["clone", "--quiet", remote.to_str().unwrap(), "scratch"],
    );
    std::fs::create_dir_all(scratch.join(".claude/skills/git-swarm")).unwrap();
    std::os::unix::fs::symlink(&precious, scratch.join(".claude/skills/git-swarm/SKILL.md"))
        .unwrap();
    env.git(&scratch, &["add", "-f", ".claude"]);
    env.git(&scratch, &["commit", "--quiet", "-m", "a tracked symlink"]);
    env.git(
        &scratch,
        &["push", "--quiet", "--no-verify", "origin", "HEAD:main"],
    );
    env.git(&a, &["fetch", "--quiet", "origin"]);
    let run = env.swarm(&a, &["lane", "new", "w", "--plan", "p"]).ok();
    assert!(
        run.stderr.contains("agent hooks were not written") && run.stderr.contains("symbolic link"),
        "{}",
        run.stderr
    );
    assert_eq!(env.read(&precious), "keep me\n");
}

#[test]
fn agent_install_reaches_every_worktree_and_uninstall_restores_bytes() {
    let (env, _, clones) = Swarm::new(&["ann"]).plan(0, "p").parts();
    let a = clones[0].clone();
    let agents_md = "# Our agents\n\nBe kind.\n";
    env.write(&a.join("AGENTS.md"), agents_md);
    let codex_user = "{\n  \"hooks\": {\n    \"Stop\": [\n      {\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"./notify.sh\"\n          }\n        ]\n      }\n    ]\n  },\n  \"other\": 1\n}\n";
    env.write(&a.join(".codex/hooks.json"), codex_user);
    let dry = env
        .swarm(
            &a,
            &["agent", "install", "--host", "claude,codex", "--dry-run"],
        )
        .ok();
    assert!(dry.stdout.contains("would be created"), "{}", dry.stdout);
    assert!(!a.join(".claude").exists(), "a dry run writes nothing");
    env.swarm(&a, &["init", "--agents", "claude,codex"]).ok();
    assert_eq!(env.git(&a, &["config", "swarm.agentHosts"]), "claude,codex");
    // A lane made later gets them; git sees none of the files.
    let lane = env
        .swarm(&a, &["lane", "new", "w", "--plan", "p", "--json"])
        .ok()
        .json();
    let path = std::path::PathBuf::from(
        lane["path"]
            .as_str()
            .or(lane["lane"]["path"].as_str())
            .unwrap(),
    );
    for dir in [&a, &path] {
        assert!(dir.join(".claude/settings.local.json").is_file());
        assert!(dir.join(".claude/skills/git-swarm/SKILL.md").is_file());
        assert!(dir.join(".codex/hooks.json").is_file());
        assert_eq!(
            env.git(dir, &["status", "--porcelain", "--untracked-files=all"])
                .lines()
                .filter(|l| !l.contains("AGENTS.md"))
                .count(),
            0,
            "{}",
            dir.display()
        );
    }
    let codex: Value = serde_json::from_str(&env.read(&a.join(".codex/hooks.json"))).unwrap();
    assert_eq!(
        codex["hooks"]["Stop"][0]["hooks"][0]["command"],
        "./notify.sh"
    );
    assert!(env.read(&a.join("AGENTS.md")).starts_with(agents_md));
    env.swarm(&a, &["agent", "guide"])
        .ok()
        .stdout_has("## 1. Claim a task");
    // Idempotent, then undone byte for byte.
    let before = env.read(&a.join(".claude/settings.local.json"));
    env.swarm(&a, &["agent", "install", "--host", "claude,codex"])
        .ok()
        .stdout_has("nothing to change");
    assert_eq!(env.read(&a.join(".claude/settings.local.json")), before);
    env.swarm(
        &a,
        &["agent", "install", "--uninstall", "--host", "claude,codex"],
    )
    .ok();
    assert_eq!(env.read(&a.join(".codex/hooks.json")), codex_user);
    assert_eq!(env.read(&a.join("AGENTS.md")), agents_md);
    assert!(
        !a.join(".claude").exists()
            && !path.join(".claude").exists()
            && !path.join(".codex").exists()
    );
    assert!(env.git_run(&a, &["config", "swarm.agentHosts"]).code != 0);
}

/// What each host needs before it runs project hooks (seen live in
/// agents_live_codex / agents_live_gemini): install says it; Claude Code
/// needs nothing.
#[test]
fn install_notes_what_codex_and_gemini_need_before_they_run_the_hooks() {
    let (env, _, clones) = Swarm::new(&["ann"]).parts();
    let a = clones[0].clone();
    let run = env
        .swarm(&a, &["agent", "install", "--host", "claude"])
        .ok();
    assert!(!run.stdout.contains("note:"), "{run:?}");
    env.swarm(&a, &["agent", "install", "--host", "codex,gemini"])
        .ok()
        .stdout_has("note: Codex runs them once the project is trusted (`codex exec --trust`")
        .stdout_has("`--dangerously-bypass-hook-trust`")
        .stdout_has("note: Gemini CLI runs them in a trusted folder only");
}

#[test]
fn user_scope_install_writes_home_settings() {
    let (env, _, clones) = Swarm::new(&["ann"]).parts();
    let a = clones[0].clone();
    env.swarm(&a, &["agent", "install", "--user", "--host", "gemini"])
        .ok();
    let s: Value =
        serde_json::from_str(&env.read(&env.home.join(".gemini/settings.json"))).unwrap();
    assert_eq!(
        s["hooks"]["BeforeTool"][0]["hooks"][0]["command"],
        "git-swarm agent hook pre-tool-use --host gemini"
    );
    env.swarm(
        &a,
        &[
            "agent",
            "install",
            "--user",
            "--host",
            "gemini",
            "--uninstall",
        ],
    )
    .ok();
    assert!(!env.home.join(".gemini").exists());
}

#[test]
fn post_tool_use_renews_everything_held_in_one_push_once_a_claim_is_past_half_its_lease() {
    let (mut env, remote, clones) = Swarm::new(&["ann"])
        .plan(0, "p")
        .task(0, "t1", "Schema")
        .parts();
    let a = clones[0].clone();
    // The clock pinned, and moved a minute on for the hook: a renewal in
    // the same second as the reservation would not change its lease (and
    // an unchanged shard is not written).
    let t0 = jiff::Timestamp::from_second(jiff::Timestamp::now().as_second()).unwrap();
    env.set_env("GIT_SWARM_NOW", &t0.to_string());
    // Claimed for 10 minutes while the configured lease is 30: past half.
    env.swarm(
        &a,
        &["task", "claim", "t1", "--plan", "p", "--lease", "10m"],
    )
    .ok();
    env.git(&a, &["config", "swarm.reservationLease", "30m"]);
    env.swarm(&a, &["reserve", "db/"]).ok();
    let until = |env: &TestEnv| {
        env.swarm(&a, &["task", "show", "t1", "--plan", "p", "--json"])
            .ok()
            .json()["task"]["claim"]["lease_until"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let first = until(&env);
    let ledger = env.refs(&a, "refs/swarm/reservations/");
    let input = json!({"cwd": a, "hook_event_name": "PostToolUse", "tool_name": "Write", "tool_input": {"file_path": "x"}});
    let later = t0 + jiff::SignedDuration::from_mins(1);
    env.set_env("GIT_SWARM_NOW", &later.to_string());
    let run = hook(&env, &a, "post-tool-use", "claude", &input).ok();
    assert_eq!((run.stdout.as_str(), run.stderr.as_str()), ("", ""));
    let renewed = until(&env);
    assert!(renewed > first, "{first} -> {renewed}");
    // The claim was due: the fresh reservation rode in the same push
    // (`git swarm renew`), so both leases run out together from now on.
    assert_ne!(env.refs(&a, "refs/swarm/reservations/"), ledger);
    assert_eq!(
        env.refs(&remote, "refs/swarm/"),
        env.refs(&a, "refs/swarm/"),
        "published"
    );
    // Renewed for the full lease: the next call writes nothing.
    let tasks = env.refs(&a, "refs/swarm/tasks/");
    hook(&env, &a, "post-tool-use", "claude", &input).ok();
    assert_eq!(env.refs(&a, "refs/swarm/tasks/"), tasks);
}

#[test]
fn under_a_push_budget_post_tool_use_queues_the_claims_renewal_and_the_next_hook_flushes_it() {
    let (mut env, remote, clones) = Swarm::new(&["ann"])
        .plan(0, "p")
        .task(0, "t1", "Schema")
        .parts();
    let a = clones[0].clone();
    let t0 = jiff::Timestamp::from_second(jiff::Timestamp::now().as_second()).unwrap();
    env.set_env("GIT_SWARM_NOW", &t0.to_string());
    // Claimed for 10 minutes of a configured 30: past half, but more than
    // a quarter (7.5 minutes) left at the remote.
    env.swarm(
        &a,
        &["task", "claim", "t1", "--plan", "p", "--lease", "10m"],
    )
    .ok();
    env.git(&a, &["config", "swarm.pushBudget", "6/min"]);
    let t1 = "refs/swarm/tasks/p/t1";
    let published = env.refs(&remote, t1);
    let input = json!({"cwd": a, "hook_event_name": "PostToolUse", "tool_name": "Write", "tool_input": {"file_path": "x"}});
    let later = t0 + jiff::SignedDuration::from_mins(1);
    env.set_env("GIT_SWARM_NOW", &later.to_string());
    let run = hook(&env, &a, "post-tool-use", "claude", &input).ok();
    assert_eq!((run.stdout.as_str(), run.stderr.as_str()), ("", ""));
    // Renewed here and queued: the remote still shows the old lease.
    assert_eq!(env.refs(&remote, t1), published, "nothing pushed yet");
    assert_ne!(env.refs(&a, t1), published, "renewed in the clone");
    let status = env.swarm(&a, &["status", "--offline", "--json"]).ok();
    assert_eq!(
        status.json()["queued"]["refs"],
        json!([t1]),
        "{}",
        status.stdout
    );
    // The next hook after the budget's 10-second window publishes it.
    let after = later + jiff::SignedDuration::from_secs(11);
    env.set_env("GIT_SWARM_NOW", &after.to_string());
    hook(&env, &a, "post-tool-use", "claude", &input).ok();
    assert_eq!(env.refs(&remote, t1), env.refs(&a, t1), "rode the flush");
}

/// The Claude Code plugin in the repository (`.claude-plugin/plugin.json`,
/// `hooks/hooks.json`, `skills/git-swarm/SKILL.md`) is what `agent
/// install` writes: the same hooks and the same guide
/// (`GIT_SWARM_BLESS=1` rewrites it).
#[test]
fn the_claude_plugin_in_the_repository_is_current() {
    use git_swarm::integrations::agent::{guide, install, json::Json};
    use git_swarm::records::agent::Host;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut hooks = Json::obj();
    install::merge(&mut hooks, Host::Claude, None).unwrap();
    let manifest = json!({
        "name": "git-swarm",
        "description": "Agents in a git-swarm repository: session context, reserved paths refused before a write, messages at the next prompt, no stop with work left, idle agents woken by their next instruction. Needs the git-swarm binary on PATH.",
        "version": env!("CARGO_PKG_VERSION"),
        "license": "MIT OR Apache-2.0",
    });
    let files = [
        ("hooks/hooks.json", hooks.render()),
        ("skills/git-swarm/SKILL.md", guide::skill()),
        (
            ".claude-plugin/plugin.json",
            format!("{}\n", serde_json::to_string_pretty(&manifest).unwrap()),
        ),
    ];
    for (path, want) in files {
        let file = root.join(path);
        if std::env::var("GIT_SWARM_BLESS").as_deref() == Ok("1") {
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, &want).unwrap();
        }
        let have = std::fs::read_to_string(&file).unwrap_or_default();
        assert_eq!(
            have, want,
            "{path} is stale: GIT_SWARM_BLESS=1 cargo test --test it agents::the_claude_plugin"
        );
    }
}
