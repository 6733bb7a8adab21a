//! `git swarm demo`: a complete swarm exercise on a throwaway repository with
//! a local bare remote and two clones, narrated step by step. Every step runs
//! the real `git swarm` binary, as a user would.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Serialize;

use crate::ctx::plan::io_error;
use crate::error::{Code, Error, Result};

struct Demo<'a> {
    exe: &'a Path,
    root: PathBuf,
    log: &'a mut dyn Write,
    steps: Vec<Step>,
}

/// One command the demo ran, as a user would type it.
#[derive(Debug, Serialize)]
pub struct Step {
    /// The directory it ran in, relative to the demo root.
    pub dir: String,
    /// The command line, quoted as a shell reads it back.
    pub command: String,
    pub args: Vec<String>,
    pub exit: i32,
}

/// What `demo` did: its `Serialize` is the JSON.
#[derive(Debug, Serialize)]
pub struct Demoed {
    pub ok: bool,
    pub steps: Vec<Step>,
    /// Where the throwaway repositories are, with `--keep`.
    pub kept: Option<String>,
}

impl Demo<'_> {
    fn say(&mut self, text: &str) {
        let _ = writeln!(self.log, "\n== {text}");
    }

    /// Run a command in `dir` (relative to the demo root), show it and its output.
    fn run(&mut self, dir: &str, program: &str, args: &[&str], expect: i32) -> Result<String> {
        let cwd = self.root.join(dir);
        // Quoted as a shell needs it, so a narrated line can be pasted as shown.
        let shown = std::iter::once(program)
            .chain(args.iter().copied())
            .map(shell_quote)
            .collect::<Vec<_>>()
            .join(" ");
        let _ = writeln!(self.log, "[{dir}]$ {shown}");
        let mut cmd = if program == "git-swarm" {
            Command::new(self.exe)
        } else {
            Command::new(program)
        };
        // Hooks run `git swarm …`: put this very binary first on PATH, and
        // keep the user's git config out so signing or hooksPath cannot interfere.
        let path = format!(
            "{}:{}",
            self.exe
                .parent()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            std::env::var("PATH").unwrap_or_default()
        );
        let out = cmd
            .args(args)
            .current_dir(&cwd)
            .env("PATH", path)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env_remove("GIT_SWARM_AS")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .env("GIT_AUTHOR_NAME", "demo")
            .env("GIT_AUTHOR_EMAIL", "demo@example.invalid")
            .env("GIT_COMMITTER_NAME", "demo")
            .env("GIT_COMMITTER_EMAIL", "demo@example.invalid")
            .output()
            .map_err(|e| Error::new(Code::IoFailed, format!("cannot run {program}: {e}")))?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        for line in stdout.lines().chain(stderr.lines()) {
            let _ = writeln!(self.log, "    {line}");
        }
        let code = out.status.code().unwrap_or(-1);
        if code != expect {
            return Err(Error::new(
                Code::DemoFailed,
                format!("demo step `{shown}` in {dir} exited {code}, expected {expect}"),
            )
            .hint(format!(
                "the throwaway repository is kept at {}",
                self.root.display()
            )));
        }
        let mut argv = vec![program.to_string()];
        argv.extend(args.iter().map(|a| a.to_string()));
        self.steps.push(Step {
            dir: dir.to_string(),
            command: shown,
            args: argv,
            exit: code,
        });
        Ok(stdout)
    }

    fn swarm(&mut self, dir: &str, args: &[&str]) -> Result<String> {
        self.run(dir, "git-swarm", args, 0)
    }
}

/// The ui lane reserves the checkout files: the docs lane's commit to them
/// is refused by its hook, and made with `--no-verify` it is caught by the
/// CI gate.
fn reservations(d: &mut Demo<'_>, ui: &str, docs: &str) -> Result<()> {
    d.say("The ui lane reserves the checkout files (the remote arbitrates)");
    d.swarm(
        ui,
        &[
            "reserve",
            "checkout/",
            "--task",
            "checkout button",
            "--lease",
            "1h",
        ],
    )?;
    d.swarm(docs, &["reservations"])?;
    d.say("The docs lane's commit to a reserved file is refused by its pre-commit hook");
    d.run(
        docs,
        "sh",
        &[
            "-c",
            "mkdir -p checkout && echo 'help' > checkout/help.txt && git add checkout",
        ],
        0,
    )?;
    d.run(
        docs,
        "git",
        &["commit", "--quiet", "-m", "Checkout help"],
        1,
    )?;
    d.say("--no-verify skips the hook; the CI gate (check --range) catches the commit");
    d.run(
        docs,
        "git",
        &["commit", "--quiet", "--no-verify", "-m", "Checkout help"],
        0,
    )?;
    d.run(docs, "git-swarm", &["check", "--range", "main..HEAD"], 1)?;
    d.run(docs, "git", &["reset", "--quiet", "--hard", "HEAD~1"], 0)?;
    d.swarm(ui, &["release", "checkout/"])?;
    Ok(())
}

/// `arg` as a POSIX shell reads it back: bare when it holds only characters
/// no shell treats specially, else in single quotes (a `'` inside becomes `'\''`).
pub fn shell_quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"@%+=:,./_-".contains(&b));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}

pub fn run(exe: &Path, keep: bool, log: &mut dyn Write) -> Result<Demoed> {
    let base = std::env::temp_dir().join(format!(
        "git-swarm-demo-{}-{}",
        std::process::id(),
        jiff::Timestamp::now().as_millisecond()
    ));
    std::fs::create_dir_all(&base).map_err(|e| io_error(&base, e))?;
    let mut demo = Demo {
        exe,
        root: base.clone(),
        log,
        steps: Vec::new(),
    };
    let result = script(&mut demo);
    let steps = std::mem::take(&mut demo.steps);
    if result.is_ok() && !keep {
        let _ = std::fs::remove_dir_all(&base);
    }
    result?;
    Ok(Demoed {
        ok: true,
        steps,
        kept: keep.then(|| base.display().to_string()),
    })
}

fn script(d: &mut Demo<'_>) -> Result<()> {
    d.say("A shared bare remote and the coordinator's clone (machine A, alice)");
    d.run(
        ".",
        "git",
        &[
            "init",
            "--quiet",
            "--bare",
            "--initial-branch=main",
            "remote.git",
        ],
        0,
    )?;
    d.run(".", "git", &["clone", "--quiet", "remote.git", "alice"], 0)?;
    d.run("alice", "sh", &["-c", "echo '# shop' > README.md && git add README.md && git commit --quiet -m 'initial commit' && git push --quiet origin HEAD:main"], 0)?;
    d.run("alice", "git", &["config", "swarm.as", "alice"], 0)?;
    d.swarm("alice", &["init"])?;
    d.say("init is idempotent: a second run changes nothing");
    d.swarm("alice", &["init"])?;

    d.say("The plan lives in refs, never in a branch; one child plan per lane");
    d.swarm("alice", &["plan", "new", "shop", "--title", "Online shop"])?;
    for (child, title) in [
        ("shop-api", "Orders API"),
        ("shop-ui", "Checkout UI"),
        ("shop-docs", "User docs"),
    ] {
        d.swarm(
            "alice",
            &["plan", "new", child, "--parent", "shop", "--title", title],
        )?;
    }
    d.swarm(
        "alice",
        &[
            "lead",
            "claim",
            "--plan",
            "shop",
            "--succession",
            "alice,bob",
            "--lanes",
            "api,ui,docs",
        ],
    )?;

    d.say("Three lanes, each in its own worktree on feat/<feature>");
    d.swarm(
        "alice",
        &[
            "lane",
            "new",
            "api",
            "--plan",
            "shop-api",
            "--owner",
            "agent-api",
        ],
    )?;
    d.swarm(
        "alice",
        &[
            "lane", "new", "ui", "--plan", "shop-ui", "--owner", "agent-ui",
        ],
    )?;
    d.swarm(
        "alice",
        &[
            "lane",
            "new",
            "docs",
            "--plan",
            "shop-docs",
            "--owner",
            "agent-docs",
        ],
    )?;
    d.say("One executor per plan: a second lane on shop-api is refused");
    d.run(
        "alice",
        "git-swarm",
        &["lane", "new", "api-2", "--plan", "shop-api"],
        1,
    )?;

    let api = "alice/_swarm-worktrees/api";
    let ui = "alice/_swarm-worktrees/ui";
    let docs = "alice/_swarm-worktrees/docs";
    d.say("The hooks guard every commit in every lane");
    d.run(api, "sh", &["-c", "echo 'orders' > orders.txt && printf 'test -s orders.txt\\n' > check.sh && git add orders.txt check.sh && git commit --quiet -m 'Orders endpoint skeleton'"], 0)?;
    d.run(api, "git", &["add", "--force", "PLAN.md"], 0)?;
    d.run(api, "git", &["commit", "--quiet", "-m", "Add the plan"], 1)?;
    d.run(api, "git", &["reset", "--quiet", "PLAN.md"], 0)?;
    d.run(ui, "sh", &["-c", "mkdir -p .changeset && echo 'button' > .changeset/checkout-button.md && git add .changeset && git commit --quiet -m 'Changeset for the checkout button'"], 0)?;
    d.run(docs, "sh", &["-c", "mkdir -p .changeset && echo 'docs' > .changeset/Checkout-Button.md && git add .changeset"], 0)?;
    d.run(
        docs,
        "git",
        &["commit", "--quiet", "-m", "Changeset for the docs"],
        1,
    )?;
    d.run(
        docs,
        "git",
        &[
            "mv",
            ".changeset/Checkout-Button.md",
            ".changeset/checkout-docs.md",
        ],
        0,
    )?;
    d.run(
        docs,
        "git",
        &["commit", "--quiet", "-m", "Changeset for the docs"],
        0,
    )?;
    d.run(
        docs,
        "git",
        &[
            "commit",
            "--quiet",
            "--allow-empty",
            "-m",
            "Tidy docs\n\nCo-authored-by: Claude <noreply@anthropic.com>",
        ],
        1,
    )?;

    reservations(d, ui, docs)?;

    d.say("Lanes report in a fixed vocabulary, journalled in their plan");
    d.swarm(
        api,
        &[
            "--as",
            "agent-api",
            "report",
            "pr-open",
            "https://github.com/example/shop/pull/1",
            "--capacity",
            "low 18% @work1",
        ],
    )?;
    d.swarm("alice", &["lane", "list"])?;

    d.say("The api lane runs low mid-edit: it pushes its commits and writes a handoff packet that carries its uncommitted work");
    d.run(api, "git", &["push", "--quiet", "origin", "feat/api"], 0)?;
    d.run(
        api,
        "sh",
        &[
            "-c",
            "echo 'POST /orders: half done' >> orders.txt && echo 'validate totals' > notes.txt",
        ],
        0,
    )?;
    let packet = d.swarm(
        api,
        &[
            "--as",
            "agent-api",
            "handoff",
            "--json",
            "--reason",
            "capacity_critical",
            "--task",
            "orders endpoint",
            "--done",
            "GET /orders skeleton",
            "--unverified",
            "sh check.sh",
            "--next",
            "POST /orders",
        ],
    )?;
    let id = serde_json::from_str::<serde_json::Value>(&packet)
        .ok()
        .and_then(|v| v["id"].as_str().map(str::to_string))
        .ok_or_else(|| Error::new(Code::DemoFailed, "handoff did not print a packet id"))?;
    d.run(api, "git", &["status", "--short"], 0)?;
    d.swarm("alice", &["sync"])?;

    d.say("Machine B (bob, next in succession) clones and sees the whole swarm");
    d.run(".", "git", &["clone", "--quiet", "remote.git", "bob"], 0)?;
    d.run("bob", "git", &["config", "swarm.as", "bob"], 0)?;
    d.swarm("bob", &["init"])?;
    d.swarm("bob", &["sync"])?;
    d.swarm("bob", &["status"])?;

    d.say("On machine B a successor accepts: a worktree on the lane branch, the uncommitted work restored, branch, head and every file re-derived");
    let api2 = "bob/_swarm-worktrees/api";
    d.swarm(
        "bob",
        &[
            "--as",
            "agent-api-2",
            "accept",
            &id,
            "--worktree",
            "_swarm-worktrees/api",
        ],
    )?;
    d.run(api2, "git", &["status", "--short"], 0)?;
    d.say("…re-runs every gate the packet lists as unverified, and carries on from the restored files");
    d.run(api2, "sh", &["check.sh"], 0)?;
    d.run(api2, "sh", &["-c", "echo 'POST /orders: done' >> orders.txt && git add orders.txt notes.txt && git commit --quiet -m 'POST /orders' && git push --quiet origin feat/api"], 0)?;
    d.say("A packet is accepted once");
    d.run("bob", "git-swarm", &["--as", "agent-x", "accept", &id], 3)?;
    d.say(
        "The predecessor's worktree was left as it was; its copy of the work is no longer needed",
    );
    d.run(api, "sh", &["-c", "git checkout -- . && git clean -fdq"], 0)?;
    d.swarm("alice", &["sync"])?;

    d.say(
        "main is protected (init added it to swarm.protect): only a fenced `lead push` may move it",
    );
    d.run(
        "alice",
        "git",
        &[
            "commit",
            "--quiet",
            "--allow-empty",
            "-m",
            "Hotfix straight to main",
        ],
        0,
    )?;
    d.run(
        "alice",
        "git",
        &["push", "--quiet", "origin", "HEAD:main"],
        1,
    )?;
    d.run(
        "alice",
        "git",
        &["reset", "--quiet", "--hard", "origin/main"],
        0,
    )?;

    d.say("alice hands leadership over to bob: epoch 2");
    d.swarm("alice", &["lead", "handover", "bob", "--plan", "shop"])?;
    d.run("bob", "git", &["fetch", "--quiet", "origin", "feat/api"], 0)?;
    d.swarm(
        "bob",
        &[
            "lead",
            "push",
            "--plan",
            "shop",
            "refs/remotes/origin/feat/api:refs/heads/main",
        ],
    )?;
    d.say("alice, now stale, cannot move main: the lead record at the remote fences her");
    d.run(
        "alice",
        "git-swarm",
        &["lead", "push", "--plan", "shop", "HEAD:refs/heads/main"],
        3,
    )?;
    d.run(
        "alice",
        "git",
        &[
            "ls-remote",
            "origin",
            "refs/heads/main",
            "refs/swarm/lead/shop",
        ],
        0,
    )?;

    d.say("The api lane is merged on the remote: prune removes it, history stays");
    d.run("alice", "git", &["fetch", "--quiet", "origin"], 0)?;
    d.swarm("alice", &["lane", "prune"])?;
    d.swarm("alice", &["sync"])?;
    d.swarm("alice", &["status"])?;
    d.swarm("alice", &["plan", "log", "shop-api"])?;
    d.run("alice", "git", &["for-each-ref", "refs/swarm"], 0)?;

    d.say("Messages: bob, the leader now, tells alice; her wait wakes on it (it sleeps between cheap checks)");
    d.swarm(
        "bob",
        &[
            "notify",
            "alice",
            "--plan",
            "shop",
            "main has the api; start on the ui",
        ],
    )?;
    d.swarm(
        "alice",
        &[
            "wait",
            "--for",
            "message",
            "--timeout",
            "1m",
            "--interval",
            "1s",
        ],
    )?;
    d.say("A decision and an escalation, recorded once; a second identical escalation is refused");
    d.swarm(
        "alice",
        &[
            "decide",
            "ship the api first",
            "--plan",
            "shop",
            "--options",
            "api-first,together",
            "--reason",
            "the ui waits on it",
            "--undo",
            "revert the merge on main",
        ],
    )?;
    d.swarm(
        "alice",
        &[
            "escalate",
            "approval",
            "deploy to production",
            "--plan",
            "shop",
        ],
    )?;
    d.run(
        "alice",
        "git-swarm",
        &[
            "escalate",
            "approval",
            "deploy to production",
            "--plan",
            "shop",
        ],
        1,
    )?;
    d.say("state: a summary derived only from the refs, byte-identical on every clone after sync");
    d.swarm("alice", &["sync"])?;
    d.swarm("bob", &["sync"])?;
    d.swarm("bob", &["state", "--plan", "shop"])?;

    d.say("Names are checked before anything is written");
    d.run("bob", "git-swarm", &["plan", "new", "Bad/Name"], 2)?;
    tasks(d)
}

/// Tasks: a queue with a dependency, claims the remote arbitrates, a
/// recovered lease, and a done that waits for the merge.
fn tasks(d: &mut Demo<'_>) -> Result<()> {
    d.say("Tasks: alice cuts a plan into tasks; `search` waits for `model`");
    d.swarm(
        "alice",
        &["plan", "new", "catalog", "--title", "Product catalog"],
    )?;
    d.swarm(
        "alice",
        &[
            "lead",
            "claim",
            "--plan",
            "catalog",
            "--succession",
            "alice,bob",
        ],
    )?;
    let new = |id: &str, title: &str| -> Vec<String> {
        ["task", "new", id, "--plan", "catalog", "--title", title]
            .iter()
            .map(|s| s.to_string())
            .collect()
    };
    for (id, title) in [("model", "Product model"), ("reviews", "Review widget")] {
        let args = new(id, title);
        d.swarm(
            "alice",
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
        )?;
    }
    let mut search = new("search", "Search over products");
    search.extend(["--depends-on".to_string(), "model".to_string()]);
    d.swarm(
        "alice",
        &search.iter().map(String::as_str).collect::<Vec<_>>(),
    )?;
    d.swarm("alice", &["sync"])?;
    d.say("The queue an idle agent takes from: open, unclaimed, dependencies done");
    d.swarm("bob", &["task", "ready", "--plan", "catalog"])?;
    d.say("A lane takes `model` from the queue: the claim is published before the lane exists");
    d.swarm(
        "alice",
        &[
            "lane",
            "new",
            "catalog-model",
            "--plan",
            "catalog",
            "--task",
            "model",
        ],
    )?;
    d.say("Two agents claim `reviews`; the remote takes one claim, the other exits 3 naming the holder");
    d.swarm(
        "bob",
        &[
            "--as", "agent-r1", "task", "claim", "reviews", "--plan", "catalog", "--lease", "1s",
        ],
    )?;
    d.run(
        "bob",
        "git-swarm",
        &[
            "--as", "agent-r2", "task", "claim", "reviews", "--plan", "catalog",
        ],
        3,
    )?;
    d.say("agent-r1 goes silent; once its lease ends, only `task recover` with a reason takes the task");
    d.run("bob", "sleep", &["2"], 0)?;
    d.run(
        "bob",
        "git-swarm",
        &[
            "--as", "agent-r2", "task", "claim", "reviews", "--plan", "catalog",
        ],
        3,
    )?;
    d.swarm(
        "bob",
        &[
            "--as",
            "agent-r2",
            "task",
            "recover",
            "reviews",
            "--plan",
            "catalog",
            "--reason",
            "agent-r1 stopped renewing",
        ],
    )?;
    d.swarm("bob", &["task", "show", "reviews", "--plan", "catalog"])?;
    d.say("`task done` is never trusted: refused until the lane's branch is merged");
    let lane = "alice/_swarm-worktrees/catalog-model";
    d.run(lane, "sh", &["-c", "echo 'product' > product.txt && git add product.txt && git commit --quiet --no-verify -m 'Product model'"], 0)?;
    d.run(
        "alice",
        "git-swarm",
        &["task", "done", "model", "--plan", "catalog"],
        1,
    )?;
    d.swarm(
        "alice",
        &[
            "lead",
            "push",
            "--plan",
            "catalog",
            "refs/heads/feat/catalog-model:refs/heads/main",
        ],
    )?;
    d.run("alice", "git", &["fetch", "--quiet", "origin"], 0)?;
    d.swarm("alice", &["task", "done", "model", "--plan", "catalog"])?;
    d.say("`search` is ready now; status shows each plan's tasks");
    d.swarm("bob", &["task", "ready", "--plan", "catalog"])?;
    d.swarm("bob", &["status", "--plan", "catalog"])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::shell_quote;

    #[test]
    fn quoting_keeps_plain_words_and_quotes_the_rest() {
        assert_eq!(shell_quote("plan"), "plan");
        assert_eq!(shell_quote("HEAD:refs/heads/main"), "HEAD:refs/heads/main");
        assert_eq!(shell_quote("Online shop"), "'Online shop'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("$HOME"), "'$HOME'");
    }
}
