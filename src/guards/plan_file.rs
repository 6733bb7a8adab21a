//! plan-untracked: no commit adds or modifies the plan file
//! (`swarm.planFile`, default `PLAN.md` at the worktree root). The plan lives
//! in `refs/swarm/plans/<plan>`; a committed PLAN.md collides with every
//! other lane's PLAN.md once merged.

use gix::ObjectId;

use super::findings::{unreadable, Findings, Violation, PLAN_UNTRACKED};
use super::staged::{Blob, Staged};
use crate::error::Result;
use crate::records::lane::LaneRecord;
use crate::session::Ctx;
use crate::store::records::Records;

/// `git swarm plan show <plan> --pr-body`, naming the lane's plan when HEAD is a lane branch.
fn pr_body_command(ctx: &Ctx) -> String {
    let plan = ctx
        .store
        .repo
        .head_name()
        .ok()
        .flatten()
        .and_then(|n| {
            n.as_bstr()
                .to_string()
                .strip_prefix("refs/heads/feat/")
                .map(str::to_string)
        })
        .filter(|f| crate::names::is_valid_name(f))
        .and_then(|f| {
            Records::<LaneRecord>::new(&ctx.store)
                .load(&f)
                .ok()
                .flatten()
        })
        .map(|l| l.value.plan)
        .unwrap_or_else(|| "<plan>".to_string());
    format!("git swarm plan show {plan} --pr-body")
}

pub fn check_staged(ctx: &Ctx, staged: &Staged, f: &mut Findings) -> Result<()> {
    let Some(blob) = staged.plan else {
        return Ok(());
    };
    if staged.plan_in_head == Some(blob) {
        return Ok(());
    }
    let path = ctx.settings.plan_file.trim_start_matches('/').to_string();
    let how = if staged.plan_in_head.is_some() {
        "modified"
    } else {
        "added"
    };
    f.violations.push(Violation {
        guard: PLAN_UNTRACKED,
        subject: path.clone(),
        commit: None,
        problem: format!(
            "the plan file is staged ({how}); it must stay untracked (the plan lives in refs/swarm/plans)"
        ),
        fix: format!(
            "git rm --cached {path}   (the file stays on disk, untracked); fold the plan into the PR body: {}",
            pr_body_command(ctx)
        ),
        proposed: None,
    });
    Ok(())
}

fn blob_in(commit: &gix::Commit<'_>, path: &str) -> Result<Option<Blob>> {
    let tree = commit
        .tree()
        .map_err(|e| unreadable(PLAN_UNTRACKED, format!("the tree of {}", commit.id), e))?;
    Ok(tree
        .lookup_entry_by_path(path)
        .map_err(|e| unreadable(PLAN_UNTRACKED, format!("{path} in {}", commit.id), e))?
        .filter(|e| e.mode().is_blob_or_symlink())
        .map(|e| Blob {
            id: e.object_id(),
            mode: e.mode().value() as u32,
        }))
}

/// Does `commit` add or modify the plan file? A merge only counts when its
/// plan file differs from every parent (the merge itself introduced it).
pub fn check_commit(ctx: &Ctx, id: ObjectId, f: &mut Findings) -> Result<()> {
    let repo = &ctx.store.repo;
    let path = ctx.settings.plan_file.trim_start_matches('/').to_string();
    let commit = repo
        .find_commit(id)
        .map_err(|e| unreadable(PLAN_UNTRACKED, format!("commit {id}"), e))?;
    let Some(mine) = blob_in(&commit, &path)? else {
        return Ok(());
    };
    let mut parents_have = Vec::new();
    for p in commit.parent_ids() {
        let parent = repo
            .find_commit(p.detach())
            .map_err(|e| unreadable(PLAN_UNTRACKED, format!("commit {p}"), e))?;
        parents_have.push(blob_in(&parent, &path)?);
    }
    if parents_have.contains(&Some(mine)) {
        return Ok(());
    }
    let how = if parents_have.iter().any(Option::is_some) {
        "modifies"
    } else {
        "adds"
    };
    let short = &id.to_string()[..12];
    f.violations.push(Violation {
        guard: PLAN_UNTRACKED,
        subject: path.clone(),
        commit: Some(id.to_string()),
        // The commit is named once, by the report line (" (commit …)").
        problem: format!("this commit {how} the plan file; it must stay untracked (the plan lives in refs/swarm/plans)"),
        fix: format!(
            "rewrite the branch without it: `git rebase -i {short}^`, mark {short} as edit, then `git rm --cached {path} && git commit --amend && git rebase --continue`; fold the plan into the PR body: {}",
            pr_body_command(ctx)
        ),
        proposed: None,
    });
    Ok(())
}
