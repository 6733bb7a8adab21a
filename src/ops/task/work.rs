//! Where a claimed task is worked: the branch and base a claim reports.

use gix::ObjectId;

use crate::error::Result;
use crate::records::task::{TaskRecord, Work};
use crate::session::Ctx;

/// Whether the task's branch is merged: the lane rule (an ancestor of its
/// base, or a merged verdict note on its head). The base is `--base`, else
/// the lane's base when the task names a lane, else the default base.
pub(super) fn work(ctx: &Ctx, task: &TaskRecord, base_flag: Option<&str>) -> Result<Work> {
    let Some(branch) = &task.branch else {
        return Ok(Work::Unbound);
    };
    let store = &ctx.store;
    let mut head = store.ref_target(&format!("refs/heads/{branch}"))?;
    if head.is_none() {
        if let Some(r) = ctx.code_remote() {
            head = store.ref_target(&format!("refs/remotes/{r}/{branch}"))?;
        }
    }
    let lane = match &task.lane {
        Some(l) => crate::records::lane::load(store, l)?,
        None => None,
    };
    let base_name = match (base_flag, &lane) {
        (Some(b), _) => b.to_string(),
        (None, Some(l)) => l.record.base.clone(),
        (None, None) => crate::session::lane::default_base(ctx),
    };
    let base_commit = lane.map(|l| l.record.base_commit).unwrap_or_default();
    // The merge happened at the remote (a PR, the leader's push): judge
    // on the base as the remote has it now, not as last fetched.
    let refreshed = crate::session::base::refresh(ctx, &base_name);
    let mut bases: Vec<ObjectId> = store.git.resolve(&base_name)?.into_iter().collect();
    if let Some(tracking) = refreshed.tracking() {
        bases.extend(store.git.resolve(tracking)?);
    }
    let stale = refreshed
        .warning(&base_name, "judged on")
        .map(|w| format!(" ({w})"))
        .unwrap_or_default();
    let Some(h) = head else {
        return Ok(Work::NotMerged {
            why: format!("its branch {branch} does not exist here (fetch it, or `git swarm sync`)"),
        });
    };
    let verdict = crate::records::note::has_merged_verdict(store, h)?;
    let in_base = !verdict
        && bases
            .iter()
            .any(|&b| store.is_ancestor(h, b).unwrap_or(false));
    use crate::records::lane::Merged;
    Ok(
        match crate::records::lane::merged_state(head, verdict, in_base, &base_commit) {
            Merged::Verdict => Work::Merged { how: "verdict" },
            Merged::Ancestry => Work::Merged { how: "ancestry" },
            Merged::Empty => Work::NotMerged {
                why: format!("its branch {branch} has no commits beyond its base {base_name}"),
            },
            _ => Work::NotMerged {
                why: format!(
                    "its branch {branch} is not merged into {base_name} and has no merged verdict note{stale}"
                ),
            },
        },
    )
}
