//! The demo's first scenes: the remote and clones, plans and lanes, the
//! guards, and a handoff across machines.

use super::{Demo, API, DOCS, UI};
use crate::error::{Code, Error, Result};

/// A bare remote, alice's clone, init, the plans and three lanes.
pub(super) fn setup(d: &mut Demo<'_>) -> Result<()> {
    d.say("A shared bare remote and the coordinator's clone (machine A, alice)");
    d.remote_and_first_clone("alice", "shop")?;
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
    Ok(())
}

/// The hooks guard every commit in every lane.
pub(super) fn guards(d: &mut Demo<'_>) -> Result<()> {
    let (api, ui, docs) = (API, UI, DOCS);
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
    Ok(())
}

/// Reports, a handoff carrying uncommitted work, and its acceptance on machine B.
pub(super) fn handoff(d: &mut Demo<'_>) -> Result<()> {
    let api = API;
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
    Ok(())
}
