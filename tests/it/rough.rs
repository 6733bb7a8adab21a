//! Rough edges of a first afternoon (issue 14): commands a new team expected
//! (`lead log`, `lead succession`, `plan reopen`), warnings on stderr only,
//! and the small things (`--version --json`, name hints, plural counts).

use std::path::Path;

use crate::harness::TestEnv;
use crate::process::ref_of;

const LEAD: &str = "refs/swarm/lead/auth";

fn lead_yaml(env: &TestEnv, dir: &Path, rev: &str) -> serde_yaml_ng::Value {
    serde_yaml_ng::from_str(&env.git(dir, &["show", &format!("{rev}:lead.yaml")])).unwrap()
}

#[test]
fn a_claim_whose_succession_omits_the_claimant_warns_on_stderr() {
    let env = TestEnv::new();
    let (remote, clones) = env.remote_with_clones(&["alice"]);
    let a = &clones[0];
    env.swarm(a, &["plan", "new", "auth"]).ok();
    let run = env
        .swarm(
            a,
            &[
                "lead",
                "claim",
                "--plan",
                "auth",
                "--succession",
                "bob,carol",
                "--json",
            ],
        )
        .ok();
    run.expect_stderr(
        "warning: the succession of plan 'auth' (bob, carol) does not name you (alice)",
    );
    assert_eq!(run.json()["leader"], "alice", "the claim still happened");
    assert!(ref_of(&env, &remote, LEAD).is_some());
    // Naming yourself: no warning.
    env.swarm(a, &["plan", "new", "other"]).ok();
    let run = env
        .swarm(
            a,
            &[
                "lead",
                "claim",
                "--plan",
                "other",
                "--succession",
                "alice,bob",
            ],
        )
        .ok();
    assert!(!run.stderr.contains("warning"), "{}", run.stderr);
}

#[test]
fn lead_succession_is_leader_only_fenced_and_published_at_once() {
    let env = TestEnv::new();
    let (remote, clones) = env.remote_with_clones(&["alice", "bob"]);
    let (a, b) = (&clones[0], &clones[1]);
    env.swarm(a, &["plan", "new", "auth"]).ok();
    env.swarm(
        a,
        &[
            "lead",
            "claim",
            "--plan",
            "auth",
            "--succession",
            "alice,bob",
        ],
    )
    .ok();
    let claimed = ref_of(&env, &remote, LEAD).unwrap();

    // The leader edits it: published at once, epoch unchanged, no re-claim.
    let run = env
        .swarm(
            a,
            &[
                "lead",
                "succession",
                "--plan",
                "auth",
                "alice,bob,carol",
                "--json",
            ],
        )
        .ok();
    let json = run.json();
    assert_eq!(
        json["succession"],
        serde_json::json!(["alice", "bob", "carol"])
    );
    assert_eq!(json["epoch"], 1);
    assert_eq!(json["leader"], "alice");
    assert_eq!(json["event"], "lead-succession");
    let published = ref_of(&env, &remote, LEAD).unwrap();
    assert_ne!(published, claimed);
    assert_eq!(ref_of(&env, a, LEAD).as_deref(), Some(published.as_str()));
    let rec = lead_yaml(&env, a, LEAD);
    assert_eq!(rec["succession"][2], "carol");
    let msg = env.git(a, &["log", "-1", "--format=%B", LEAD]);
    assert!(msg.contains("Swarm-Event: lead-succession"), "{msg}");
    assert!(
        msg.contains("Swarm-Previous-Succession: alice,bob"),
        "{msg}"
    );
    assert_eq!(
        env.git(a, &["rev-parse", &format!("{LEAD}^")]),
        claimed,
        "one new version on top of the claim"
    );

    // Not the leader: refused, nothing moves anywhere.
    let before = env.all_refs(&remote);
    env.swarm(b, &["lead", "succession", "--plan", "auth", "bob"])
        .err(3, "NOT_LEADER");
    assert_eq!(before, env.all_refs(&remote));

    // Bad input: an invalid address, a duplicate, the same list.
    env.swarm(
        a,
        &["lead", "succession", "--plan", "auth", "bob,Not Valid"],
    )
    .err(2, "NAME_INVALID");
    env.swarm(a, &["lead", "succession", "--plan", "auth", "bob,bob"])
        .err(2, "USAGE");
    assert_eq!(before, env.all_refs(&remote));
    // The same list again: nothing to change, nothing written, exit 0 (and
    // so a re-run after an interrupted publish completes).
    let again = env
        .swarm(
            a,
            &[
                "lead",
                "succession",
                "--plan",
                "auth",
                "alice,bob,carol",
                "--json",
            ],
        )
        .ok();
    assert_eq!(again.json()["already"], true);
    assert_eq!(before, env.all_refs(&remote));

    // Killed after its push, before the local ref moved: the re-run completes.
    let killed = env.swarm_env(
        a,
        &[("GIT_SWARM_FAILPOINT", "lead:pushed")],
        &["lead", "succession", "--plan", "auth", "alice,bob,dave"],
    );
    assert_ne!(killed.code, 0);
    let published = ref_of(&env, &remote, LEAD).unwrap();
    assert_ne!(ref_of(&env, a, LEAD).as_deref(), Some(published.as_str()));
    env.swarm(
        a,
        &["lead", "succession", "--plan", "auth", "alice,bob,dave"],
    )
    .ok()
    .stdout_has("already alice, bob, dave");
    assert_eq!(ref_of(&env, a, LEAD), Some(published.clone()));
    assert_eq!(ref_of(&env, &remote, LEAD), Some(published));

    // Leaving yourself out is allowed, with a warning on stderr.
    let run = env
        .swarm(a, &["lead", "succession", "--plan", "auth", "bob,carol"])
        .ok();
    run.expect_stderr("warning: the succession of plan 'auth' (bob, carol) does not name you");
    run.expect_stdout("succession of plan auth is now bob, carol (epoch 1 unchanged)");
    assert!(!run.stdout.contains("warning"));

    // A fenced leader: alice hands over to bob (epoch 2), then tries again.
    env.swarm(a, &["lead", "handover", "bob", "--plan", "auth"])
        .ok();
    let before = env.all_refs(&remote);
    env.swarm(a, &["lead", "succession", "--plan", "auth", "alice"])
        .err(3, "LEAD_FENCED")
        .stderr_has("bob leads at epoch 2");
    assert_eq!(before, env.all_refs(&remote));
    // The new leader may.
    env.swarm(b, &["lead", "succession", "--plan", "auth", "bob,alice"])
        .ok();
    assert_eq!(lead_yaml(&env, &remote, LEAD)["succession"][1], "alice");
}

#[test]
fn lead_log_prints_the_leader_journal_newest_first() {
    let env = TestEnv::new();
    let (_remote, clones) = env.remote_with_clones(&["alice", "bob"]);
    let (a, b) = (&clones[0], &clones[1]);
    env.swarm(a, &["plan", "new", "auth"]).ok();
    // Published at once: bob's clone finds the plan without a sync.
    env.swarm(b, &["lead", "log", "--plan", "auth"])
        .ok()
        .stdout_has("nobody has claimed it");
    env.swarm(a, &["lead", "log", "--plan", "auth"])
        .ok()
        .stdout_has("nobody has claimed it");
    env.swarm(
        a,
        &[
            "lead",
            "claim",
            "--plan",
            "auth",
            "--succession",
            "alice,bob",
        ],
    )
    .ok();
    env.swarm(a, &["lead", "renew", "--plan", "auth"]).ok();
    env.swarm(a, &["lead", "handover", "bob", "--plan", "auth"])
        .ok();
    env.swarm(b, &["lead", "release", "--plan", "auth"]).ok();

    // bob's clone reads the published journal (fetched first).
    let json = env
        .swarm(b, &["lead", "log", "--plan", "auth", "--json"])
        .ok()
        .json();
    let entries = json["entries"].as_array().unwrap();
    let seen: Vec<(&str, u64, &str)> = entries
        .iter()
        .map(|e| {
            (
                e["event"].as_str().unwrap(),
                e["epoch"].as_u64().unwrap(),
                e["actor"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            ("lead-released", 2, "bob"),
            ("lead-handover", 2, "alice"),
            ("lead-renewed", 1, "alice"),
            ("lead-claimed", 1, "alice"),
        ]
    );
    assert_eq!(entries[1]["leader"], "bob");
    assert_eq!(entries[0]["leader"], serde_json::Value::Null);
    assert_eq!(json["published"], true);

    let text = env.swarm(a, &["lead", "log", "--plan", "auth"]).ok().stdout;
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(
        lines[0].contains("lead-released") && lines[0].contains("epoch 2"),
        "{text}"
    );
    assert!(
        lines[3].contains("lead-claimed") && lines[3].contains("alice"),
        "{text}"
    );
    env.swarm(a, &["lead", "log", "--plan", "Auth"])
        .err(2, "NAME_INVALID")
        .stderr_has("hint: did you mean 'auth'?");
}

#[test]
fn plan_reopen_is_the_inverse_of_close_even_after_gc() {
    let env = TestEnv::new();
    let repo = env.repo("a");
    env.swarm(&repo, &["plan", "new", "auth"]).ok();
    let open = env
        .swarm(&repo, &["plan", "reopen", "auth", "--json"])
        .ok()
        .json();
    assert_eq!(open["changed"], false);
    assert_eq!(open["status"], "active");
    env.swarm(&repo, &["plan", "close", "auth"]).ok();
    let before = env.git(&repo, &["rev-parse", "refs/swarm/plans/auth"]);
    env.swarm(&repo, &["plan", "reopen", "auth"])
        .ok()
        .stdout_has("plan auth: reopened\n");
    let show = env
        .swarm(&repo, &["plan", "show", "auth", "--json"])
        .ok()
        .json();
    assert_eq!(show["status"], "active", "{show}");
    assert_eq!(
        env.git(&repo, &["rev-parse", "refs/swarm/plans/auth^"]),
        before
    );
    let log = env.git(
        &repo,
        &["log", "-1", "--format=%B", "refs/swarm/plans/auth"],
    );
    assert!(log.contains("Swarm-Event: plan-reopened"), "{log}");

    // Closed and archived by gc: reopen brings the live ref back on top of
    // the archived history.
    env.swarm(&repo, &["plan", "close", "auth"]).ok();
    let closed = env.git(&repo, &["rev-parse", "refs/swarm/plans/auth"]);
    env.swarm(&repo, &["gc", "--older-than", "0s"]).ok();
    assert!(env.refs(&repo, "refs/swarm/plans/").is_empty());
    let json = env
        .swarm(&repo, &["plan", "reopen", "auth", "--json"])
        .ok()
        .json();
    assert_eq!(json["unarchived"], true);
    assert_eq!(
        env.git(&repo, &["rev-parse", "refs/swarm/plans/auth^"]),
        closed
    );
    env.swarm(&repo, &["plan", "list"]).ok().stdout_has("auth");
    env.swarm(&repo, &["plan", "reopen", "nope"])
        .err(2, "NOT_FOUND");
}

#[test]
fn version_json_prints_json() {
    let env = TestEnv::new();
    let repo = env.repo("a");
    let run = env.swarm(&repo, &["--version", "--json"]).ok();
    let json = run.json();
    assert_eq!(json["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(json["name"], "git-swarm");
    env.swarm(&repo, &["--version"])
        .ok()
        .stdout_has(&format!("git-swarm {}", env!("CARGO_PKG_VERSION")));
}

#[test]
fn name_invalid_suggests_the_sanitised_name() {
    let env = TestEnv::new();
    let repo = env.repo("a");
    let before = env.all_refs(&repo);
    env.swarm(&repo, &["plan", "new", "Token Auth"])
        .err(2, "NAME_INVALID")
        .stderr_has("hint: did you mean 'token-auth'?");
    let json = env
        .swarm(&repo, &["plan", "new", "Auth", "--json"])
        .code(2)
        .json();
    assert_eq!(json["error"]["hints"][0], "did you mean 'auth'?");
    // Addresses keep their case; only what is not allowed is replaced.
    env.swarm(&repo, &["--as", "Claude work1", "plan", "new", "x"])
        .err(2, "NAME_INVALID")
        .stderr_has("hint: did you mean 'Claude-work1'?");
    // Nothing usable to suggest: no suggestion, only the rule.
    let run = env
        .swarm(&repo, &["plan", "new", "!!!"])
        .err(2, "NAME_INVALID");
    assert!(!run.stderr.contains("did you mean"), "{}", run.stderr);
    assert_eq!(before, env.all_refs(&repo));
}

/// A directory holding only `git`, for a PATH without git-swarm.
fn path_without_git_swarm(env: &TestEnv) -> String {
    let dir = env.root().join("git-only");
    std::fs::create_dir_all(&dir).unwrap();
    let git = std::process::Command::new("sh")
        .args(["-c", "command -v git"])
        .output()
        .unwrap();
    let git = String::from_utf8(git.stdout).unwrap().trim().to_string();
    std::os::unix::fs::symlink(&git, dir.join("git")).unwrap();
    dir.display().to_string()
}

#[test]
fn a_hook_without_git_swarm_on_path_says_what_is_missing_and_fails_closed() {
    let env = TestEnv::new();
    let repo = env.repo("a");
    env.swarm(&repo, &["init"]).ok();
    let head = env.git(&repo, &["rev-parse", "HEAD"]);
    env.write(&repo.join("x.txt"), "x\n");
    env.git(&repo, &["add", "x.txt"]);
    let path = path_without_git_swarm(&env);
    let out = env
        .command("git", &repo)
        .env("PATH", &path)
        .args(["commit", "-q", "-m", "x"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("error[GUARD_ERROR]: the git-swarm pre-commit hook cannot run: the git-swarm binary is not on PATH"),
        "{stderr}"
    );
    assert!(
        stderr.contains("hint: install it (cargo install"),
        "{stderr}"
    );
    assert!(!stderr.contains("is not a git command"), "{stderr}");
    assert_eq!(
        env.git(&repo, &["rev-parse", "HEAD"]),
        head,
        "no commit made"
    );
    // The hook itself exits 4, like a guard that cannot run; so does the shim in hooks/.
    for hook in [
        repo.join(".git/hooks/pre-commit"),
        repo.join(".git/hooks/commit-msg"),
        std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/hooks/pre-push")),
    ] {
        let out = env
            .command("/bin/sh", &repo)
            .env("PATH", &path)
            .arg(&hook)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(4), "{}", hook.display());
        assert!(out.stdout.is_empty());
        assert!(String::from_utf8_lossy(&out.stderr).contains("git-swarm binary is not on PATH"));
    }
    // With the binary on PATH, the same commit goes through.
    env.git(&repo, &["commit", "-q", "-m", "x"]);
}

#[test]
fn init_upgrades_old_shims_in_place_once() {
    let env = TestEnv::new();
    let repo = env.repo("a");
    let hook = repo.join(".git/hooks/pre-commit");
    // What an earlier `git swarm init` wrote, plus a user's own line.
    env.write(
        &hook,
        "#!/bin/sh\n# >>> git-swarm >>> (managed by `git swarm init`; keep your own lines outside this block)\ngit swarm hook pre-commit \"$@\" || exit $?\n# <<< git-swarm <<<\necho mine\n",
    );
    env.swarm(&repo, &["init"])
        .ok()
        .stdout_has("installed the pre-commit hook");
    let text = env.read(&hook);
    assert!(text.contains("command -v git-swarm"), "{text}");
    assert_eq!(text.matches("# >>> git-swarm >>>").count(), 1, "{text}");
    assert!(text.ends_with("# <<< git-swarm <<<\necho mine\n"), "{text}");
    assert_eq!(
        env.swarm(&repo, &["init"]).ok().stdout,
        "already swarm-ready: nothing to change\n"
    );
    assert_eq!(env.read(&hook), text);
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
    let env = TestEnv::new();
    let repo = env.repo("a");
    env.swarm(&repo, &["plan", "new", "auth"]).ok();
    env.swarm(&repo, &["plan", "new", "api"]).ok();
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
fn status_lists_open_packets_and_blocked_lanes_and_cuts_long_titles() {
    let env = TestEnv::new();
    let repo = env.repo("a");
    let title =
        "Token auth with refresh rotation, audit logging and a migration path for old sessions";
    env.swarm(&repo, &["plan", "new", "auth", "--title", title])
        .ok();
    env.swarm(&repo, &["lane", "new", "login", "--plan", "auth"])
        .ok();
    let wt = repo.join("_swarm-worktrees/login");
    let quiet = env.swarm(&repo, &["status"]).ok();
    assert!(
        !quiet.stdout.contains("needs attention"),
        "{}",
        quiet.stdout
    );

    env.swarm(
        &wt,
        &[
            "report",
            "blocked",
            "creds",
            "needs a deploy key for staging",
        ],
    )
    .ok();
    let id = env
        .swarm(&wt, &["handoff", "--reason", "capacity_low", "--json"])
        .ok()
        .json()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let run = env.swarm(&repo, &["status"]).ok();
    let first = run.stdout.lines().next().unwrap();
    assert!(
        first.starts_with("auth [active] — Token auth with refresh rotation, audit logging… — "),
        "{first}"
    );
    run.expect_stdout("blocked creds needs a deploy key for staging (reported by a at ");
    run.expect_stdout(&format!(
        "  packet {id} open: capacity_low by a on feat/login — `git swarm accept {id}`"
    ));
    run.expect_stdout("needs attention: 1 open packet, 1 blocked lane\n");
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    let json = env.swarm(&repo, &["status", "--json"]).ok().json();
    let plan = &json["plans"][0];
    assert_eq!(plan["title"], title, "JSON keeps the whole title");
    assert_eq!(plan["open_packets"][0]["id"], id.as_str());
    assert_eq!(plan["lanes"][0]["blocked"]["kind"], "blocked");

    // Accepted: no longer open; a new report clears the block.
    env.swarm(&wt, &["--as", "bob", "accept", &id]).ok();
    env.swarm(&wt, &["report", "plan-ready"]).ok();
    let run = env.swarm(&repo, &["status"]).ok();
    assert!(!run.stdout.contains("packet "), "{}", run.stdout);
    assert!(!run.stdout.contains("needs attention"), "{}", run.stdout);
    let json = env.swarm(&repo, &["status", "--json"]).ok().json();
    assert_eq!(json["plans"][0]["open_packets"], serde_json::json!([]));
    // A withdrawn packet is not open either.
    let id2 = env
        .swarm(
            &wt,
            &[
                "--as",
                "bob",
                "handoff",
                "--reason",
                "capacity_low",
                "--json",
            ],
        )
        .ok()
        .json()["id"]
        .as_str()
        .unwrap()
        .to_string();
    env.swarm(&repo, &["status"])
        .ok()
        .stdout_has(&format!("packet {id2} open"));
    env.swarm(
        &wt,
        &[
            "--as",
            "bob",
            "packet",
            "withdraw",
            &id2,
            "--reason",
            "wrong plan",
        ],
    )
    .ok();
    let run = env.swarm(&repo, &["status"]).ok();
    assert!(!run.stdout.contains(&id2), "{}", run.stdout);
    assert_eq!(
        json["plans"][0]["lanes"][0]["blocked"],
        serde_json::Value::Null
    );
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
fn a_mistyped_swarm_remote_leaves_reading_commands_working_with_a_warning() {
    let env = TestEnv::new();
    let (_remote, clones) = env.remote_with_clones(&["alice"]);
    let a = &clones[0];
    env.swarm(a, &["plan", "new", "auth"]).ok();
    env.swarm(a, &["lane", "new", "login", "--plan", "auth"])
        .ok();
    env.swarm(a, &["sync"]).ok();
    env.git(a, &["config", "swarm.remote", "orgin"]);
    let before = env.all_refs(a);
    for args in [
        vec!["status"],
        vec!["plan", "list"],
        vec!["plan", "show", "auth"],
        vec!["plan", "log", "auth"],
        vec!["packets"],
        vec!["lane", "list"],
        vec!["lead", "status", "--plan", "auth"],
    ] {
        let run = env.swarm(a, &args).ok();
        run.expect_stderr(
            "warning: remote 'orgin' does not exist; showing this repository's records only",
        );
        run.expect_stderr("hint: add it with `git remote add orgin <url>`");
        assert!(!run.stdout.contains("warning"), "{args:?}: {}", run.stdout);
    }
    env.swarm(a, &["status"]).ok().stdout_has("auth [active]");
    env.swarm(a, &["lane", "list"]).ok().stdout_has("login");
    let json = env.swarm(a, &["plan", "list", "--json"]).ok().json();
    assert_eq!(json["plans"][0]["plan"], "auth");
    // Writing commands and those that must ask the remote still refuse.
    env.swarm(a, &["plan", "new", "other"])
        .err(2, "REMOTE_MISSING");
    env.swarm(a, &["lead", "check", "--plan", "auth"])
        .err(2, "REMOTE_MISSING");
    env.swarm(a, &["sync"]).err(2, "REMOTE_MISSING");
    assert_eq!(before, env.all_refs(a));
}

#[test]
fn writing_commands_refuse_a_bare_repository_and_reading_ones_work() {
    let env = TestEnv::new();
    let (remote, clones) = env.remote_with_clones(&["alice"]);
    let a = &clones[0];
    env.swarm(a, &["plan", "new", "auth"]).ok();
    env.swarm(a, &["sync"]).ok();
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
