//! The demo's forecast scene: two lanes forecast to conflict before either
//! has a pull request — one lane's uncommitted work published as a
//! snapshot, the other's commit warned about by its pre-push hook — and the
//! forecast clearing once one lane is rebased onto the other.

use super::{Demo, DOCS, UI};
use crate::error::Result;

pub(super) fn forecast(d: &mut Demo<'_>) -> Result<()> {
    let (ui, docs) = (UI, DOCS);
    d.say("No PR yet: the docs lane edits the README mid-task and publishes its uncommitted work");
    d.run(
        docs,
        "sh",
        &[
            "-c",
            "printf '# shop\\nCheckout: see the user guide\\n' > README.md",
        ],
        0,
    )?;
    d.swarm(docs, &["lane", "snapshot"])?;
    d.say("The ui lane commits the same line; its pre-push hook warns (and pushes)");
    d.run(
        ui,
        "sh",
        &[
            "-c",
            "printf '# shop\\nCheckout: one click\\n' > README.md && git commit --quiet -am 'Checkout in the README'",
        ],
        0,
    )?;
    d.run(ui, "git", &["push", "--quiet", "origin", "feat/ui"], 0)?;
    d.say("The forecast merges every pair of lanes in memory: ui and docs conflict, hunks shown");
    d.swarm("alice", &["forecast"])?;
    d.run("alice", "git-swarm", &["forecast", "--exit-code"], 1)?;
    d.swarm("alice", &["status", "--plan", "shop-ui"])?;
    d.say("docs commits and rebases onto ui's work, taking both lines: the forecast clears");
    d.run(
        docs,
        "sh",
        &[
            "-c",
            "git commit --quiet -am 'Docs: checkout' && { git rebase --quiet feat/ui >/dev/null 2>&1 || { printf '# shop\\nCheckout: one click\\nSee the user guide\\n' > README.md && git add README.md && GIT_EDITOR=true git rebase --continue >/dev/null; }; }",
        ],
        0,
    )?;
    d.swarm(docs, &["lane", "snapshot"])?;
    d.swarm("alice", &["forecast", "--exit-code"])?;
    Ok(())
}
