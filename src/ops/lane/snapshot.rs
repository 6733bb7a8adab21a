//! `lane snapshot`: publish a lane's uncommitted work at
//! `refs/swarm/wip/<feature>` so the conflict forecast counts it. The
//! snapshot is taken as a handoff takes one (`worktree::snapshot`: a temporary
//! copy of the index, never the lane's own index or files; credentials and
//! the size limit refused before any object is written), dated now, and
//! replaces the published one whole: the lane's owner is its only writer,
//! and of two versions the newer wins (see `records::lane::wip`). A clean
//! worktree publishes "nothing uncommitted". Online the push carries the
//! value just fetched as its lease; offline the ref is local until `sync`.

use gix::ObjectId;
use serde::Serialize;

use crate::error::{Code, Error, Result};
use crate::git::{Git, PushUpdate};
use crate::records::lane::wip::wip_ref;
use crate::records::lane::Lane;
use crate::session::Ctx;
use crate::store::records::Publish;

/// How many times a publish re-fetches after the remote's wip ref moved.
const ATTEMPTS: usize = 5;

/// What `lane snapshot` did.
#[derive(Debug, Clone, Serialize)]
pub struct Snapshotted {
    pub lane: String,
    pub plan: String,
    pub owner: String,
    pub refname: String,
    /// The snapshot commit.
    pub commit: String,
    /// The head it was taken on.
    pub head: String,
    /// Nothing uncommitted: the snapshot says so.
    pub clean: bool,
    /// Uncommitted paths and their bytes.
    pub paths: usize,
    pub size: u64,
    pub taken_at: String,
    /// The same work on the same head was published already: nothing moved.
    pub unchanged: bool,
    /// The remote it was published to (None offline: `sync` publishes it).
    pub published_to: Option<String>,
}

/// `git swarm lane snapshot [--lane F]`
pub fn snapshot(ctx: &Ctx, lane_flag: Option<&str>) -> Result<Snapshotted> {
    let lane = which(ctx, lane_flag)?;
    let actor = ctx.actor()?;
    let r = &lane.record;
    if actor != r.owner {
        return Err(Error::new(
            Code::SnapshotNotOwner,
            format!(
                "lane {} is owned by {}; only its owner publishes its snapshot (you are {actor}); nothing was written",
                lane.feature, r.owner
            ),
        )
        .hint(format!("run it as the owner (in the lane's worktree, or with --as {})", r.owner)));
    }
    let git = worktree(ctx, &lane)?;
    let now = ctx.store.clock.now();
    let date = format!("@{} +0000", now.as_second());
    let exclude = vec![ctx.settings.plan_file.trim_start_matches('/').to_string()];
    let limit = crate::worktree::snapshot::limit(&ctx.store)?;
    let taken = crate::worktree::snapshot::take_at(
        &git,
        git.cwd(),
        &exclude,
        &actor,
        limit,
        &date,
        Code::SnapshotSecret,
    )?;
    let (commit, paths, size) = match &taken {
        Some(s) => (s.commit.clone(), s.paths.len(), s.size),
        None => (
            crate::worktree::snapshot::clean_at(&git, &actor, &date)?,
            0,
            0,
        ),
    };
    let id = ObjectId::from_hex(commit.as_bytes())
        .map_err(|e| Error::gix("bad snapshot commit id", e))?;
    let refname = wip_ref(&lane.feature);
    let (unchanged, published_to) = publish(ctx, &refname, id, &actor)?;
    Ok(Snapshotted {
        lane: lane.feature.clone(),
        plan: r.plan.clone(),
        owner: r.owner.clone(),
        refname,
        commit,
        head: git.run(["rev-parse", "HEAD"])?.trim().to_string(),
        clean: taken.is_none(),
        paths,
        size,
        taken_at: crate::clock::rfc3339(now),
        unchanged,
        published_to,
    })
}

/// The lane: `--lane F`, else the one whose worktree we are in.
fn which(ctx: &Ctx, lane_flag: Option<&str>) -> Result<Lane> {
    let feature = match lane_flag {
        Some(f) => {
            crate::names::validate_name("feature", f)?;
            f.to_string()
        }
        None => match ctx.lane_here() {
            Some(l) => l.feature,
            None => {
                return Err(
                    Error::new(Code::Usage, "which lane? you are not in a lane worktree")
                        .hint("pass --lane <feature>, or run it inside the lane's worktree"),
                )
            }
        },
    };
    let lane = crate::records::lane::require(&ctx.store, &feature)?;
    if !lane.record.is_active() {
        return Err(Error::new(
            Code::NotFound,
            format!("lane '{feature}' was removed; it has no work to snapshot"),
        ));
    }
    Ok(lane)
}

/// The lane's worktree in this repository, on the lane's branch.
fn worktree(ctx: &Ctx, lane: &Lane) -> Result<Git> {
    let r = &lane.record;
    let not_here = |why: &str| {
        Error::new(
            Code::LaneNotHere,
            format!(
                "lane {}'s worktree {} {why}; nothing was written",
                lane.feature, r.path
            ),
        )
        .hint("run it on the machine that holds the lane's worktree")
    };
    let path = std::path::Path::new(&r.path);
    if !path.is_dir() {
        return Err(not_here("is not in this clone"));
    }
    let git = ctx.store.git.at(path);
    let common = git
        .run(["rev-parse", "--path-format=absolute", "--git-common-dir"])
        .map_err(|_| not_here("is not a git checkout"))?;
    let same =
        crate::fsutil::same_path(std::path::Path::new(common.trim()), &ctx.store.common_dir());
    if !same {
        return Err(not_here("belongs to another repository"));
    }
    if git.current_branch()?.as_deref() != Some(r.branch.as_str()) {
        return Err(not_here(&format!(
            "is not on the lane's branch {}",
            r.branch
        )));
    }
    Ok(git)
}

/// Whether two snapshot commits hold the same work on the same head: the
/// same working tree, head and staged tree, whenever each was taken (their
/// dates, so their ids, differ).
fn same_work(ctx: &Ctx, a: ObjectId, b: ObjectId) -> bool {
    let repo = &ctx.store.repo;
    let tree_of = |id: ObjectId| -> Option<ObjectId> {
        Some(repo.find_commit(id).ok()?.tree_id().ok()?.detach())
    };
    let shape = |id: ObjectId| -> Option<(ObjectId, Vec<ObjectId>, Option<ObjectId>)> {
        let c = repo.find_commit(id).ok()?;
        let parents: Vec<ObjectId> = c.parent_ids().map(|p| p.detach()).collect();
        let staged = parents.get(1).and_then(|p| tree_of(*p));
        Some((tree_of(id)?, parents.into_iter().take(1).collect(), staged))
    };
    a == b || shape(a).is_some_and(|s| Some(s) == shape(b))
}

/// Publish `new` at `refname` (online: one leased push, then the local
/// ref; offline: the local ref). Returns (unchanged, the remote published to).
pub(super) fn publish(
    ctx: &Ctx,
    refname: &str,
    new: ObjectId,
    actor: &str,
) -> Result<(bool, Option<String>)> {
    let store = &ctx.store;
    let remote = ctx.remote();
    let unchanged = Publish::new(store, remote)
        .fetch([refname])
        .attempts(ATTEMPTS)
        .point("snapshot")
        .exhausted(|lines| {
            Error::new(
                Code::PushRejected,
                format!(
                    "{refname} kept moving on the remote under {ATTEMPTS} attempts; nothing was published ({})",
                    lines.join("; ")
                ),
            )
            .hint("run it again")
        })
        .run(|txn| {
            let tip = txn.tip(refname)?;
            let local_same = tip.local.is_some_and(|l| same_work(ctx, l, new));
            let published_same =
                !txn.online() || tip.remote.is_some_and(|r| same_work(ctx, r, new));
            if local_same && published_same {
                return Ok(true);
            }
            // Not a descendant of what it replaces: pushed with its lease,
            // the local ref set below.
            txn.push_along(PushUpdate {
                refname: refname.to_string(),
                new: Some(new.to_string()),
                expected: tip.remote.map(|r| r.to_string()),
            });
            Ok(false)
        })?
        .then;
    if !unchanged {
        // The owner is the only writer and this snapshot was just taken:
        // it replaces whatever the local ref held.
        store.force_many(&[(refname.to_string(), Some(new))], actor, "lane snapshot")?;
    }
    // Not `remote`: a remote that could not be reached left the loop
    // offline (`Ctx::remote` says so from then on).
    Ok((unchanged, ctx.remote().map(str::to_string)))
}
