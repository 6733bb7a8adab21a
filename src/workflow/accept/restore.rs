//! Restoring a packet's snapshot (the predecessor's uncommitted work) into
//! the successor's checkout before the facts are re-derived, and the
//! successor worktree `accept --worktree` creates.

use std::path::{Path, PathBuf};

use crate::ctx::packet::{fetch, locate, read_at};
use crate::ctx::Ctx;
use crate::error::{Code, Error, Result};
use crate::model::packet::snapshot::snapshot_ref;
use crate::model::packet::Packet;
use crate::store::remote;

/// Restore the packet's snapshot when this checkout is clean on the
/// packet's branch at its head; returns whether it did. A checkout with
/// changes of its own is left untouched: the re-derived facts then compare
/// them with the packet (by path and content) and refuse any difference.
pub fn restore(ctx: &Ctx, packet: &Packet) -> Result<bool> {
    let Some(snap) = &packet.snapshot else {
        return Ok(false);
    };
    let git = &ctx.store.git;
    if git.current_branch()? != packet.branch
        || git.rev_parse("HEAD")?.as_deref() != Some(packet.head.as_str())
        || !git.dirty_paths()?.is_empty()
    {
        return Ok(false);
    }
    if !crate::ctx::snapshot::present(git, snap)? {
        fetch(ctx, &[&snapshot_ref(&packet.plan, &packet.id)])?;
    }
    if !crate::ctx::snapshot::present(git, snap)? {
        return Err(Error::new(
            Code::SnapshotMissing,
            format!(
                "packet {} carries a snapshot of the uncommitted work ({}) that has not reached this clone; nothing was recorded",
                packet.id, snap.commit
            ),
        )
        .hint("run `git swarm sync` to fetch it, then accept again")
        .hint("or `git swarm accept --no-restore` to take the packet over without the files"));
    }
    crate::ctx::snapshot::restore(git, &ctx.store.workdir_or_err()?, snap)?;
    Ok(true)
}

/// The successor worktree for `accept --worktree <path>`: `path` as it is
/// when it exists, else a new worktree there on the packet's branch (the
/// local branch, else the remote's, fetched first). The packets are fetched
/// first, as `accept` itself does: the packet may have just been written
/// on another machine. Returns the directory and whether it was made here.
pub fn worktree(ctx: &Ctx, arg: &str, path: &Path) -> Result<(PathBuf, bool)> {
    if path.exists() {
        return Ok((path.to_path_buf(), false));
    }
    fetch(ctx, &[crate::model::packet::PREFIX])?;
    let refname = locate(ctx, arg)?;
    let tip = remote::tip(&ctx.store, ctx.remote(), &refname)?;
    let base = tip.base.expect("a located packet has a version");
    let packet = read_at(&ctx.store, &refname, base)?.packet;
    let Some(branch) = packet.branch.as_deref() else {
        return Err(Error::new(
            Code::Usage,
            format!("packet {} was written on a detached head: --worktree needs a branch", packet.id),
        )
        .hint("create a worktree at the packet's head yourself (`git worktree add --detach <path> <head>`), then accept there"));
    };
    let git = &ctx.store.git;
    let shown = path.to_string_lossy().into_owned();
    if let Some(there) = checked_out_in(git, branch)? {
        return Err(Error::new(
            Code::Usage,
            format!(
                "{branch} is checked out in the worktree {there}: a second worktree cannot have it"
            ),
        )
        .hint(format!(
            "accept there: `cd {there} && git swarm accept {arg}`"
        )));
    }
    if git.rev_parse(&format!("refs/heads/{branch}"))?.is_some() {
        git.run(["worktree", "add", "--quiet", shown.as_str(), branch])?;
    } else {
        let remote = ctx.remote().ok_or_else(|| {
            Error::new(
                Code::NotFound,
                format!(
                    "branch {branch} is not in this clone and there is no remote to fetch it from"
                ),
            )
        })?;
        if !git.fetch_branch(remote, branch)? {
            return Err(Error::new(
                Code::NotFound,
                format!("branch {branch} is neither in this clone nor on {remote}"),
            )
            .hint(format!("ask {} to push it", packet.author)));
        }
        git.worktree_add(
            &ctx.store.common_dir(),
            path,
            branch,
            &format!("refs/remotes/{remote}/{branch}"),
        )?;
    }
    Ok((
        std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()),
        true,
    ))
}

/// The worktree that has `branch` checked out, if one does.
fn checked_out_in(git: &crate::git::Git, branch: &str) -> Result<Option<String>> {
    let listed = git.run(["worktree", "list", "--porcelain"])?;
    let mut path = None;
    for line in listed.lines() {
        if let Some(p) = line.strip_prefix("worktree ") {
            path = Some(p.to_string());
        } else if line.strip_prefix("branch refs/heads/") == Some(branch) {
            return Ok(path);
        }
    }
    Ok(None)
}

/// Take away a worktree `accept --worktree` made for an accept that then
/// failed: it holds nothing but the branch and, maybe, files restored from
/// the snapshot, which stays published with the packet.
pub fn remove_made(ctx: &Ctx, dir: &Path) {
    let shown = dir.to_string_lossy().into_owned();
    let _ = ctx
        .store
        .git
        .run(["worktree", "remove", "--force", shown.as_str()]);
}

/// Keep the packet's snapshot under its ref here too (from the commit
/// fetched), so that it lives as long as the packet here and `gc` archives
/// it with the packet.
pub fn keep(ctx: &Ctx, packet: &Packet, actor: &str) -> Result<()> {
    let Some(snap) = &packet.snapshot else {
        return Ok(());
    };
    let refname = snapshot_ref(&packet.plan, &packet.id);
    if ctx.store.ref_target(&refname)?.is_some()
        || !crate::ctx::snapshot::present(&ctx.store.git, snap)?
    {
        return Ok(());
    }
    let id = gix::ObjectId::from_hex(snap.commit.as_bytes())
        .map_err(|e| Error::gix("bad snapshot commit id", e))?;
    remote::adopt(&ctx.store, &refname, id, actor, "accept: keep the snapshot")
}
