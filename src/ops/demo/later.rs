//! The demo's later scenes: reservations, leadership, messages and tasks.

use super::{Demo, DOCS, UI};
use crate::error::Result;

/// The ui lane reserves the checkout files: the docs lane's commit to them
/// is refused by its hook, and made with `--no-verify` it is caught by the
/// CI gate.
pub(super) fn reservations(d: &mut Demo<'_>) -> Result<()> {
    let (ui, docs) = (UI, DOCS);
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

/// Leadership handed over; the stale leader fenced; the merged lane pruned.
pub(super) fn leadership(d: &mut Demo<'_>) -> Result<()> {
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
            &crate::records::lead::lead_ref("shop"),
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
    Ok(())
}

/// Messages, a wait that wakes, a decision, an escalation, `state`, a bad name.
pub(super) fn messages(d: &mut Demo<'_>) -> Result<()> {
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
    Ok(())
}

/// Tasks: a queue with a dependency, claims the remote arbitrates, a
/// recovered lease, and a done that waits for the merge.
pub(super) fn tasks(d: &mut Demo<'_>) -> Result<()> {
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
    for (id, title) in [
        ("model", "Product model"),
        ("images", "Product images"),
        ("reviews", "Review widget"),
    ] {
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
    d.say("Lanes take tasks: on each machine an agent starts a lane from a ready task. One push each: a child plan of catalog made for the lane, the lane, the claim");
    d.swarm(
        "alice",
        &[
            "--as",
            "agent-m",
            "lane",
            "new",
            "catalog-model",
            "--task",
            "model",
        ],
    )?;
    d.swarm(
        "bob",
        &[
            "--as", "agent-i", "lane", "new", "images", "--task", "images",
        ],
    )?;
    d.swarm("alice", &["status", "--plan", "catalog"])?;
    handoff_with_claim(d)?;
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
    d.run("alice", "git", &["fetch", "--quiet", "origin"], 0)?;
    let lane = "alice/_swarm-worktrees/catalog-model";
    d.run(lane, "sh", &["-c", "echo 'product' > product.txt && git add product.txt && git commit --quiet --no-verify -m 'Product model'"], 0)?;
    d.run(lane, "git-swarm", &["--as", "agent-m", "task", "done"], 1)?;
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
    d.swarm(lane, &["--as", "agent-m", "task", "done"])?;
    d.say("`search` is ready now; status shows each plan's tasks");
    d.swarm("bob", &["task", "ready", "--plan", "catalog"])?;
    d.swarm("bob", &["sync"])?;
    d.swarm("bob", &["status", "--plan", "catalog"])?;
    Ok(())
}

/// A lane of a claimed task hands off mid-edit on machine B; a successor on
/// machine A accepts: the branch, the uncommitted work, the claim and the
/// reservation move in one push; the predecessor's renew is refused.
fn handoff_with_claim(d: &mut Demo<'_>) -> Result<()> {
    let images = "bob/_swarm-worktrees/images";
    d.say("agent-i reserves images/ and stops mid-edit: the packet carries the branch head (never pushed), the uncommitted work, the claim and the reservation");
    d.swarm(images, &["--as", "agent-i", "reserve", "images/"])?;
    d.run(
        images,
        "sh",
        &[
            "-c",
            "mkdir -p images && echo 'thumbnails: half done' > images/README.md",
        ],
        0,
    )?;
    d.swarm(
        images,
        &[
            "--as",
            "agent-i",
            "handoff",
            "--reason",
            "usage_limit",
            "--next",
            "finish the thumbnails",
        ],
    )?;
    d.say("On machine A a successor accepts it by lane: the claim (counter +1) and the reservation are hers now");
    d.swarm(
        "alice",
        &[
            "--as",
            "agent-i2",
            "accept",
            "--lane",
            "images",
            "--worktree",
            "_swarm-worktrees/images",
        ],
    )?;
    let succ = "alice/_swarm-worktrees/images";
    d.swarm(succ, &["--as", "agent-i2", "task", "renew"])?;
    d.run(succ, "sh", &["-c", "echo 'thumbnails: done' > images/README.md && git add images && git commit --quiet -m 'Product images' && git push --quiet origin feat/images"], 0)?;
    d.say(
        "The predecessor's renew in its old worktree is refused (LANE_MOVED), naming the successor",
    );
    d.run(
        images,
        "git-swarm",
        &["--as", "agent-i", "task", "renew"],
        1,
    )?;
    Ok(())
}
