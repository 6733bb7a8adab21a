//! The command line as a user meets it: flags and exit codes, help, man
//! pages and completions, the version, settings from `git -c` and the
//! environment, plural counts, and which repository a command acts on.

pub(crate) mod conveniences;
pub(crate) mod day;
pub(crate) mod docs;
pub(crate) mod init;
pub(crate) mod oldgit;
pub(crate) mod quickstart;

use crate::support::fixture::Swarm;
use crate::support::harness::TestEnv;

#[test]
fn unknown_flags_are_usage_errors_with_exit_2() {
    let env = TestEnv::new();
    let repo = env.repo("a");
    let run = env
        .swarm(&repo, &["plan", "list", "--frobnicate"])
        .err(2, "USAGE");
    run.expect_stderr("--frobnicate");
    let json = env
        .swarm(&repo, &["plan", "list", "--frobnicate", "--json"])
        .code(2)
        .json();
    assert_eq!(json["error"]["code"], "USAGE");
    assert_eq!(
        json["error"]["message"],
        "unexpected argument '--frobnicate' found"
    );
    let hints: Vec<&str> = json["error"]["hints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap())
        .collect();
    assert!(
        hints
            .iter()
            .any(|h| h.starts_with("usage: git swarm plan list")),
        "{hints:?}"
    );
    env.swarm(&repo, &["lead", "claim"])
        .err(2, "USAGE")
        .stderr_has("required arguments were not provided: --plan <P> --succession <A,B>");
}

#[test]
fn help_and_version_reach_our_binary() {
    let env = TestEnv::new();
    let repo = env.repo("a");
    env.swarm(&repo, &["-h"])
        .ok()
        .stdout_has("Usage: git swarm");
    env.swarm(&repo, &["plan", "-h"])
        .ok()
        .stdout_has("checkout");
    env.swarm(&repo, &["--version"])
        .ok()
        .stdout_has(env!("CARGO_PKG_VERSION"));
}

#[test]
fn commands_needing_an_identity_say_how_to_give_one() {
    let env = TestEnv::new();
    let repo = env.repo("a");
    env.git(&repo, &["config", "--unset", "swarm.as"]);
    let before = env.all_refs(&repo);
    env.swarm(&repo, &["plan", "new", "p"])
        .err(2, "IDENTITY_MISSING")
        .stderr_has("hint: pass --as <address>");
    assert_eq!(before, env.all_refs(&repo));
    // Each source of identity works, in order of precedence.
    env.swarm_env(
        &repo,
        &[("GIT_SWARM_AS", "from-env")],
        &["plan", "new", "p"],
    )
    .ok();
    let log = env.git(
        &repo,
        &["log", "-1", "--format=%an %B", "refs/swarm/plans/p"],
    );
    assert!(log.contains("Swarm-Actor: from-env"), "{log}");
    env.swarm_env(
        &repo,
        &[("GIT_SWARM_AS", "from-env")],
        &["--as", "from-flag", "plan", "new", "q"],
    )
    .ok();
    let log = env.git(&repo, &["log", "-1", "--format=%B", "refs/swarm/plans/q"]);
    assert!(log.contains("Swarm-Actor: from-flag"), "{log}");
    env.swarm(&repo, &["--as", "bad address", "plan", "new", "r"])
        .err(2, "NAME_INVALID");
    assert!(env.refs(&repo, "refs/swarm/plans/r").is_empty());
}

#[test]
fn completions_and_man_page() {
    let env = TestEnv::new();
    let repo = env.repo("a");
    env.swarm(&repo, &["completions", "bash"])
        .ok()
        .stdout_has("git-swarm");
    env.swarm(&repo, &["man"]).ok().stdout_has(".TH git-swarm");
    let man1 = env.root().join("man/man1");
    env.swarm(
        &repo,
        &["man", "--install", "--dir", man1.to_str().unwrap()],
    )
    .ok();
    assert!(env
        .read(&man1.join("git-swarm.1"))
        .contains(".TH git-swarm"));
}

#[test]
fn the_demo_runs_the_whole_swarm_and_cleans_up() {
    let env = TestEnv::new();
    let scratch = env.root().join("tmp");
    std::fs::create_dir_all(&scratch).unwrap();
    let run = env
        .swarm_env(
            env.root(),
            &[("TMPDIR", scratch.to_str().unwrap())],
            &["demo", "--json"],
        )
        .ok();
    let json = run.json();
    assert_eq!(json["ok"], true);
    let steps = json["steps"].as_array().unwrap();
    // The story the demo tells, each step with the exit code it must have.
    let find = |needle: &str| {
        steps
            .iter()
            .find(|s| s["command"].as_str().unwrap().contains(needle))
            .unwrap_or_else(|| panic!("no step {needle}"))["exit"]
            .as_i64()
            .unwrap()
    };
    assert_eq!(find("lane new api-2"), 1, "second executor refused");
    assert_eq!(find("accept"), 0);
    assert_eq!(
        find("--worktree _swarm-worktrees/api"),
        0,
        "the successor on machine B accepts and gets the work restored"
    );
    run.expect_stderr("restored the uncommitted work from the snapshot: 2 paths");
    assert_eq!(find("--as agent-x accept"), 3, "accepted once");
    // Two lanes forecast to conflict before any PR, then clear once rebased.
    assert_eq!(
        find("forecast --exit-code"),
        1,
        "the first forecast conflicts"
    );
    let last = steps
        .iter()
        .rfind(|s| s["command"] == "git-swarm forecast --exit-code")
        .unwrap();
    assert_eq!(last["exit"], 0, "rebased, the forecast clears");
    run.expect_stderr("warning: ui is forecast to conflict with lane docs in README.md");
    run.expect_stderr("uncommitted work of docs counted");
    run.expect_stderr("forecast: 1 conflict (");
    assert_eq!(find("lead handover bob"), 0);
    assert_eq!(
        find("lead push --plan shop HEAD:refs/heads/main"),
        3,
        "stale leader fenced"
    );
    // Lanes take tasks on two machines; a handoff carries the claim.
    assert_eq!(find("--as agent-m lane new catalog-model --task model"), 0);
    assert_eq!(find("--as agent-i lane new images --task images"), 0);
    assert_eq!(find("accept --lane images --worktree"), 0);
    run.expect_stderr("  claim: task catalog/images (claim 1, until ");
    // The packet carries the images/ reservation, by its id.
    let carried = run
        .stderr
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("reservation ")
                .and_then(|r| r.split_once(": images/ (until "))
                .map(|(id, _)| id.to_string())
        })
        .unwrap_or_else(|| panic!("no reservation of images/ carried: {}", run.stderr));
    assert!(carried.starts_with('r'), "{carried}");
    run.expect_stderr("moved to you: the claim on task catalog/images");
    assert!(
        run.stderr
            .lines()
            .any(|l| l.contains("moved to you: reservation") && l.contains(&carried)),
        "{carried} not moved: {}",
        run.stderr
    );
    assert_eq!(find("--as agent-i2 task renew"), 0);
    assert_eq!(
        find("--as agent-i task renew"),
        1,
        "the predecessor's renew in its old worktree is refused"
    );
    run.expect_stderr("error[LANE_MOVED]");
    run.expect_stderr("agent-i2 owns it now");
    run.expect_stderr("images (agent-i2, lane images, ");
    run.expect_stderr("[fenced-publish]");
    run.expect_stderr("[plan-untracked]");
    run.expect_stderr("[changeset-unique]");
    run.expect_stderr("[attribution]");
    // The agent hooks, called with host-shaped input: a denial and a wake.
    run.expect_stderr("\"permissionDecision\":\"deny\",\"permissionDecisionReason\":\"git swarm: pricing/plans.md is reserved by bob");
    run.expect_stderr("while you waited, new for alice:\\n- notify from bob");
    run.expect_stderr("pricing/ is yours after the release: start with its tests\\nAct on it now");
    // Every narrated command reads back, in a shell, as exactly what ran.
    let mut quoted = 0;
    for step in steps {
        let command = step["command"].as_str().unwrap();
        let args: Vec<&str> = step["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        quoted += usize::from(command.contains('\''));
        let out = env
            .command("sh", env.root())
            .args(["-c", &format!("printf '%s\\0' {command}")])
            .output()
            .unwrap();
        let back: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .split_terminator('\0')
            .map(str::to_string)
            .collect();
        assert_eq!(back, args, "{command}");
        assert!(
            run.stderr.contains(&format!("$ {command}\n")),
            "{command} not narrated"
        );
    }
    assert!(
        quoted > 0,
        "no step needed quoting: the check proves nothing"
    );
    // Without --keep nothing is left behind.
    assert_eq!(std::fs::read_dir(&scratch).unwrap().count(), 0);
}

#[test]
fn git_dir_and_work_tree_name_the_repository_as_for_git() {
    let env = TestEnv::new();
    let a = env.repo("a");
    let b = env.repo("b");
    env.swarm(&a, &["plan", "new", "only-in-a"]).ok();
    // From inside b, `git --git-dir=a/.git` means repository a, for us as for git.
    let git_dir = format!("--git-dir={}", a.join(".git").display());
    let out = env
        .command("git", &b)
        .args([git_dir.as_str(), "swarm", "plan", "list", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["plans"][0]["plan"], "only-in-a", "{json}");
}

#[test]
fn bash_completes_git_swarm_as_git_calls_it() {
    let env = TestEnv::new();
    let repo = env.repo("a");
    let script = env.swarm(&repo, &["completions", "bash"]).ok().stdout;
    let file = env.root().join("git-swarm.bash");
    env.write(&file, &script);
    // What git's completion does for `git swarm pl<TAB>` and `git swarm plan <TAB>`.
    let probe = format!(
        "source {}\nCOMP_WORDS=(git swarm pl); COMP_CWORD=2; _git_swarm; echo \"${{COMPREPLY[*]}}\"\nCOMP_WORDS=(git swarm plan ''); COMP_CWORD=3; _git_swarm; echo \"${{COMPREPLY[*]}}\"\n",
        file.display()
    );
    let out = env
        .command("bash", &repo)
        .args(["-c", &probe])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("plan"),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let second = lines.next().unwrap_or_default();
    for sub in ["new", "show", "checkout", "save", "log", "close"] {
        assert!(
            second.split_whitespace().any(|w| w == sub),
            "{sub} missing in {second:?}"
        );
    }
    // Typed as the binary, bash calls the function registered for git-swarm.
    assert!(script
        .contains("complete -F __git_swarm_clap -o nosort -o bashdefault -o default git-swarm"));
    let probe = format!(
        "source {}\nCOMP_WORDS=(git-swarm lead ''); COMP_CWORD=2; __git_swarm_clap git-swarm '' lead; echo \"${{COMPREPLY[*]}}\"\n",
        file.display()
    );
    let out = env
        .command("bash", &repo)
        .args(["-c", &probe])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.split_whitespace().any(|w| w == "takeover"), "{text}");
}

#[test]
fn a_closed_stderr_loses_the_message_not_the_exit_code() {
    let env = TestEnv::new();
    let repo = env.repo("r");
    // stderr is a pipe nobody reads any more (`2>&1 | head -c 10` once head
    // has exited): writing the error there must not panic (exit 101).
    for (args, code) in [
        (&["--as", "x", "notify", "bad..addr", "hi"][..], 2),
        (&["--as", "x", "reserve", "["][..], 2),
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = env
            .command("git-swarm", &repo)
            .args(args)
            .stderr(writer)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(code), "{args:?}: {out:?}");
    }
}

#[test]
fn an_argument_that_is_not_utf8_is_a_usage_error_not_a_panic() {
    use std::os::unix::ffi::OsStrExt;
    let env = TestEnv::new();
    let repo = env.repo("r");
    let bad = std::ffi::OsStr::from_bytes(b"\xff");
    for args in [vec!["reserve"], vec!["--json", "lane", "new"]] {
        let out = env
            .command("git-swarm", &repo)
            .args(&args)
            .arg(bad)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("error[USAGE]"),
            "{out:?}"
        );
    }
}

#[test]
fn all_refs_sees_every_ref() {
    // The "nothing changed" assertions all over the suite compare two
    // all_refs maps: an empty map would make every one of them pass.
    let env = TestEnv::new();
    let repo = env.repo("r");
    env.git(&repo, &["update-ref", "refs/swarm/plans/x", "HEAD"]);
    let all = env.all_refs(&repo);
    assert!(all.contains_key("refs/heads/main"), "{all:?}");
    assert!(all.contains_key("refs/swarm/plans/x"), "{all:?}");
    env.git(
        &repo,
        &["update-ref", "refs/swarm-remotes/origin/plans/x", "HEAD"],
    );
    assert!(!env
        .all_refs(&repo)
        .contains_key("refs/swarm-remotes/origin/plans/x"));
}

#[test]
fn git_dash_c_swarm_settings_are_honoured() {
    let env = TestEnv::new();
    let repo = env.repo("alice");
    env.git(&repo, &["swarm", "init"]);

    // swarm.as from `git -c` wins over the repository's swarm.as.
    env.git(&repo, &["-c", "swarm.as=zed", "swarm", "plan", "new", "x"]);
    let msg = env.git(&repo, &["log", "-1", "--format=%B", "refs/swarm/plans/x"]);
    assert!(msg.contains("Swarm-Actor: zed"), "{msg}");
    // Section and key names are case-insensitive, as in git; the last wins.
    env.git(
        &repo,
        &[
            "-c",
            "SWARM.AS=yan",
            "-c",
            "Swarm.As=wu",
            "swarm",
            "plan",
            "new",
            "y",
        ],
    );
    let msg = env.git(&repo, &["log", "-1", "--format=%B", "refs/swarm/plans/y"]);
    assert!(msg.contains("Swarm-Actor: wu"), "{msg}");
    // `-c` wins over GIT_CONFIG_COUNT, which wins over the files.
    let mut cmd = env.command("git", &repo);
    cmd.args(["-c", "swarm.as=cli", "swarm", "plan", "new", "z"])
        .env("GIT_CONFIG_COUNT", "1")
        .env("GIT_CONFIG_KEY_0", "swarm.as")
        .env("GIT_CONFIG_VALUE_0", "envy");
    assert!(cmd.status().unwrap().success());
    let msg = env.git(&repo, &["log", "-1", "--format=%B", "refs/swarm/plans/z"]);
    assert!(msg.contains("Swarm-Actor: cli"), "{msg}");

    // An unsafe swarm.planFile from `-c` is refused, not ignored.
    let run = env.git_run(
        &repo,
        &[
            "-c",
            "swarm.planFile=../x",
            "swarm",
            "plan",
            "checkout",
            "x",
            "--force",
        ],
    );
    assert_ne!(run.code, 0, "{run:?}");
    assert!(!repo.join("PLAN.md").exists());
    assert!(!env.root().join("x").exists());

    // Hooks see `git -c` too.
    env.write(&repo.join("f.txt"), "x\n");
    env.git(&repo, &["add", "."]);
    let claude = "Add\n\nCo-authored-by: Claude <noreply@anthropic.com>";
    env.git_run(&repo, &["commit", "-q", "-m", claude]).code(1);
    env.git(
        &repo,
        &[
            "-c",
            "swarm.attribution=allow",
            "commit",
            "-q",
            "-m",
            claude,
        ],
    );
}

#[test]
fn version_json_prints_json() {
    let env = TestEnv::new();
    let repo = env.repo("a");
    let run = env.swarm(&repo, &["--version", "--json"]).ok();
    let json = run.json();
    assert_eq!(json["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(json["name"], "git-swarm");
    // Like every JSON document: what it cost on the remote (nothing).
    assert_eq!(json["remote_ops"]["pushes"], 0, "{json}");
    env.swarm(&repo, &["--version"])
        .ok()
        .stdout_has(&format!("git-swarm {}", env!("CARGO_PKG_VERSION")));
}

#[test]
fn man_install_writes_a_page_per_command_and_every_reference_resolves() {
    let env = TestEnv::new();
    let repo = env.repo("a");
    let man1 = env.root().join("man/man1");
    let json = env
        .swarm(
            &repo,
            &[
                "man",
                "--install",
                "--dir",
                man1.to_str().unwrap(),
                "--json",
            ],
        )
        .ok()
        .json();
    let installed = json["installed"].as_array().unwrap();
    assert!(installed.len() > 40, "{json}");
    for page in [
        "git-swarm.1",
        "git-swarm-plan.1",
        "git-swarm-plan-reopen.1",
        "git-swarm-lead-claim.1",
        "git-swarm-lead-log.1",
    ] {
        assert!(man1.join(page).exists(), "{page} missing");
    }
    assert!(env
        .read(&man1.join("git-swarm-lead.1"))
        .contains(".TH git-swarm-lead 1"));
    // Every `git-swarm-…(1)` a page names is a page that exists.
    let re = regex::Regex::new(r"(git\\-swarm(?:\\-[a-z]+)+)\(1\)").unwrap();
    let mut refs = 0;
    for entry in std::fs::read_dir(&man1).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        for cap in re.captures_iter(&text) {
            refs += 1;
            let name = cap[1].replace("\\-", "-");
            assert!(
                man1.join(format!("{name}.1")).exists(),
                "{name}(1) is named but missing"
            );
        }
    }
    assert!(refs > 20, "only {refs} references found");
    // One page printed by command path; an unknown command is bad usage.
    env.swarm(&repo, &["man", "lead", "claim"])
        .ok()
        .stdout_has(".TH git-swarm-lead-claim 1");
    env.swarm(&repo, &["man", "frobnicate"]).err(2, "USAGE");
}

#[test]
fn help_opens_the_installed_page_or_falls_back_to_the_text_help() {
    let env = TestEnv::new();
    let repo = env.repo("a");
    // A stand-in `man`: `-w PAGE` succeeds iff the page file exists; else it "shows" it.
    let fake = env.root().join("fake-man");
    let pages = env.root().join("pages");
    std::fs::create_dir_all(&pages).unwrap();
    env.write(
        &fake.join("man"),
        &format!(
            "#!/bin/sh\nif [ \"$1\" = -w ]; then test -f {}/\"$2\".1; exit $?; fi\necho \"MAN PAGE $1\"\n",
            pages.display()
        ),
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(fake.join("man"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}:{}",
        fake.display(),
        env.bin.display(),
        std::env::var("PATH").unwrap()
    );
    let help = |mode: &str, args: &[&str]| {
        let out = env
            .command(env.bin.join("git-swarm").to_str().unwrap(), &repo)
            .env("PATH", &path)
            .env("GIT_SWARM_HELP", mode)
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        String::from_utf8(out.stdout).unwrap()
    };
    // No page installed: the text help.
    let text = help("man", &["plan", "--help"]);
    assert!(text.contains("Usage: git swarm plan"), "{text}");
    // Installed: the page of exactly that command.
    env.swarm(
        &repo,
        &["man", "--install", "--dir", pages.to_str().unwrap()],
    )
    .ok();
    assert_eq!(
        help("man", &["plan", "--help"]),
        "MAN PAGE git-swarm-plan\n"
    );
    assert_eq!(
        help("man", &["--as", "x", "lead", "claim", "--help"]),
        "MAN PAGE git-swarm-lead-claim\n"
    );
    assert_eq!(help("man", &["--help"]), "MAN PAGE git-swarm\n");
    // Through git, `git swarm <command> --help` reaches us too.
    let via_git = env
        .swarm_env(
            &repo,
            &[("PATH", &path), ("GIT_SWARM_HELP", "man")],
            &["plan", "--help"],
        )
        .ok();
    assert_eq!(via_git.stdout, "MAN PAGE git-swarm-plan\n");
    // -h is always the short text help; GIT_SWARM_HELP=text and a pipe give text.
    assert!(help("man", &["plan", "-h"]).contains("Usage: git swarm plan"));
    assert!(help("text", &["plan", "--help"]).contains("Usage: git swarm plan"));
    assert!(help("", &["plan", "--help"]).contains("Usage: git swarm plan"));
}

#[test]
fn bash_completes_plan_lane_and_packet_names_from_the_repository() {
    let (env, repo) = Swarm::repo("a").plan(0, "auth").plan(0, "api").repo_parts();
    env.swarm(&repo, &["lane", "new", "login", "--plan", "auth"])
        .ok();
    let wt = repo.join("_swarm-worktrees/login");
    let packet = env
        .swarm(&wt, &["handoff", "--reason", "capacity_low", "--json"])
        .ok()
        .json()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let script = env.swarm(&repo, &["completions", "bash"]).ok().stdout;
    let file = env.root().join("git-swarm.bash");
    env.write(&file, &script);
    let complete = |line: &[&str]| -> String {
        let words: Vec<String> = line.iter().map(|w| format!("'{w}'")).collect();
        let probe = format!(
            "source {}\nCOMP_WORDS=({}); COMP_CWORD={}; _git_swarm; echo \"${{COMPREPLY[*]}}\"\n",
            file.display(),
            words.join(" "),
            line.len() - 1
        );
        let out = env
            .command("bash", &repo)
            .args(["-c", &probe])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(complete(&["git", "swarm", "plan", "show", "a"]), "api auth");
    assert_eq!(complete(&["git", "swarm", "plan", "reopen", "au"]), "auth");
    assert_eq!(
        complete(&["git", "swarm", "status", "--plan", ""]),
        "api auth"
    );
    assert_eq!(
        complete(&["git", "swarm", "lane", "new", "x", "--plan", "ap"]),
        "api"
    );
    assert_eq!(complete(&["git", "swarm", "lane", "rm", ""]), "login");
    assert_eq!(complete(&["git", "swarm", "verify", "lane", "l"]), "login");
    assert_eq!(complete(&["git", "swarm", "accept", ""]), packet);
    assert_eq!(complete(&["git", "swarm", "packet", "show", ""]), packet);
    // Elsewhere, the static completion of subcommands and flags still works.
    let subs = complete(&["git", "swarm", "plan", ""]);
    assert!(subs.split_whitespace().any(|w| w == "reopen"), "{subs}");
    let subs = complete(&["git", "swarm", "lead", ""]);
    assert!(subs.split_whitespace().any(|w| w == "succession"), "{subs}");
    // The helper is no command a user is offered.
    let top = complete(&["git", "swarm", ""]);
    assert!(top.split_whitespace().any(|w| w == "status"), "{top}");
    assert!(!top.contains("__complete"), "{top}");
    assert!(
        !script
            .lines()
            .any(|l| l.trim_start().starts_with("opts=") && l.contains("__complete")),
        "the helper leaked into the static lists"
    );
    // The helper itself: nothing (and exit 0) where no name is wanted, or outside a repository.
    let run = env
        .swarm(&repo, &["__complete", "--", "plan", "new", ""])
        .ok();
    assert_eq!(run.stdout, "");
    env.swarm(env.root(), &["__complete", "--", "plan", "show", ""])
        .ok();
}

#[test]
fn counts_in_human_output_agree_in_number() {
    let env = TestEnv::new();
    let repo = env.repo("a");
    env.write(&repo.join("b.txt"), "b\n");
    env.git(&repo, &["add", "b.txt"]);
    env.git(&repo, &["commit", "-q", "--no-verify", "-m", "b"]);
    env.swarm(&repo, &["check", "--range", "HEAD~1..HEAD"])
        .ok()
        .stdout_has("ok: 1 commit in ");
    env.write(&repo.join("c.txt"), "c\n");
    env.git(&repo, &["add", "c.txt"]);
    env.git(&repo, &["commit", "-q", "--no-verify", "-m", "c"]);
    env.swarm(&repo, &["check", "--range", "HEAD~2..HEAD"])
        .ok()
        .stdout_has("ok: 2 commits in ");
    env.swarm(&repo, &["plan", "new", "p"]).ok();
    env.swarm(&repo, &["lane", "new", "one", "--plan", "p"])
        .ok();
    env.swarm(&repo, &["lane", "rm", "one"]).ok();
    env.swarm(&repo, &["lane", "list"])
        .ok()
        .stdout_has("(1 removed lane not shown");
}

#[test]
fn writing_commands_refuse_a_bare_repository_and_reading_ones_work() {
    let (env, remote, _) = Swarm::new(&["alice"]).plan(0, "auth").sync(0).parts();
    let before = env.all_refs(&remote);
    for args in [
        vec!["init"],
        vec!["plan", "new", "x"],
        vec!["plan", "close", "auth"],
        vec!["lane", "new", "l", "--plan", "auth"],
        vec!["report", "done", "--lane", "l"],
        vec!["lead", "claim", "--plan", "auth", "--succession", "alice"],
        vec!["gc"],
        vec!["sync"],
    ] {
        let mut full = vec!["--as", "alice"];
        full.extend(args.iter());
        let run = env.swarm(&remote, &full).err(4, "BARE_REPO");
        run.expect_stderr("hint: run it in a clone");
        assert!(run.stdout.is_empty());
    }
    let json = env
        .swarm(&remote, &["plan", "new", "x", "--as", "alice", "--json"])
        .code(4)
        .json();
    assert_eq!(json["error"]["code"], "BARE_REPO");
    assert_eq!(before, env.all_refs(&remote), "nothing written");
    env.swarm(&remote, &["status"])
        .ok()
        .stdout_has("auth [active]");
    env.swarm(&remote, &["plan", "list"])
        .ok()
        .stdout_has("auth");
    env.swarm(&remote, &["packets"]).ok();
    env.swarm(&remote, &["lane", "list"]).ok();
}

#[test]
fn an_invalid_git_swarm_now_is_refused() {
    let env = TestEnv::new();
    let repo = env.repo("alice");
    for bad in [
        "tomorrow",
        "2026-13-01T00:00:00Z",
        "1700000000",
        // RFC 3339 offsets stop at ±23:59 (the parser alone took +25:00).
        "2026-01-01T00:00:00+25:00",
        // Leases added to it would overflow later with a raw message.
        "9999-12-31T23:59:59Z",
    ] {
        env.swarm_env(&repo, &[("GIT_SWARM_NOW", bad)], &["status"])
            .err(2, "ENV_INVALID")
            .stderr_has("GIT_SWARM_NOW");
    }
    env.swarm_env(
        &repo,
        &[("GIT_SWARM_NOW", "2026-01-01T00:00:00-23:30")],
        &["status"],
    )
    .ok();
    env.swarm_env(
        &repo,
        &[("GIT_SWARM_NOW", "2026-01-01T00:00:00Z")],
        &["status"],
    )
    .ok();
}
