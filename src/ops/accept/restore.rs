//! Restoring a packet's snapshot (the predecessor's uncommitted work) into
//! the successor's checkout before the facts are re-derived, and the
//! successor worktree `accept --worktree` creates.

use std::path::{Path, PathBuf};

use super::Asked;
use crate::error::{Code, Error, Result};
use crate::records::packet::snapshot::snapshot_ref;
use crate::records::packet::{
    content_mismatch, locate, mismatch_error, mismatches, read_at, Facts, Packet,
};
use crate::session::Ctx;
use crate::store::mirror::fetch_refs_from;
use crate::store::remote;
use crate::store::Store;
use crate::worktree::restore::{Expected, Predicted, Verified};

/// Restore the packet's snapshot when this checkout is on the packet's
/// branch at its head and clean — or holds what a killed restore of the
/// same snapshot began, which is put back first; returns what was
/// restored, so that a refusal after it can [`undo`] it. The whole
/// snapshot is verified before a byte is written. A checkout with changes
/// of its own is left untouched: the re-derived facts then compare them
/// with the packet (by path and content) and refuse any difference.
pub(super) fn restore(s: &Asked<'_>, packet: &Packet) -> Result<Option<Verified>> {
    let Some(snap) = &packet.snapshot else {
        return Ok(None);
    };
    let git = &s.store.git;
    if git.current_branch()? != packet.branch
        || git.rev_parse("HEAD")?.as_deref() != Some(packet.head.as_str())
    {
        return Ok(None);
    }
    let resume = crate::worktree::restore::interrupted(git, &snap.commit)?;
    if !resume && !git.dirty_paths()?.is_empty() {
        return Ok(None);
    }
    if !crate::worktree::snapshot::present(git, snap)? {
        fetch_refs_from(
            s.store,
            s.remote,
            &[&snapshot_ref(&packet.plan, &packet.id)],
        )?;
    }
    if !crate::worktree::snapshot::present(git, snap)? {
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
    let workdir = s.store.workdir_or_err()?;
    let expected = Expected {
        head: &packet.head,
        uncommitted: &packet.uncommitted,
        content: packet
            .uncommitted_content
            .keys()
            .map(String::as_str)
            .collect(),
    };
    let verified = crate::worktree::restore::verify(s.store, &workdir, &expected, snap, |p| {
        matches_packet(packet, p)
    })?;
    if resume {
        // A killed run wrote part of it: back to the head, then again.
        crate::worktree::restore::undo(git, &workdir, &verified)?;
    }
    if let Err(e) = crate::worktree::restore::restore(git, &workdir, &verified) {
        let _ = crate::worktree::restore::undo(git, &workdir, &verified);
        return Err(e);
    }
    Ok(Some(verified))
}

/// Whether the checkout a restore would leave is the one the packet
/// describes: its uncommitted paths, then their content.
fn matches_packet(packet: &Packet, predicted: &Predicted) -> Result<()> {
    let facts = Facts {
        contract: Some(packet.contract.clone()),
        branch: packet.branch.clone(),
        head: Some(packet.head.clone()),
        dirty: predicted.dirty.clone(),
    };
    let mut found = mismatches(packet, &facts);
    if found.is_empty() {
        found.extend(content_mismatch(
            &packet.uncommitted_content,
            &predicted.content,
        ));
    }
    if !found.is_empty() {
        return Err(mismatch_error(packet, &found).hint(
            "the snapshot was checked before restoring it: nothing was written into this checkout",
        ));
    }
    Ok(())
}

/// Put the checkout back as it was before [`restore`] (a refusal came
/// after the files were written).
pub(super) fn undo(s: &Asked<'_>, verified: &Verified) -> Result<()> {
    crate::worktree::restore::undo(&s.store.git, &s.store.workdir_or_err()?, verified)
}

/// The successor worktree for `accept --worktree <path>`: `path` as it is
/// when it exists, else a new worktree there on the packet's branch (the
/// local branch, else the remote's, fetched first). The packets are fetched
/// first, as `accept` itself does: the packet may have just been written
/// on another machine. Returns the directory and whether it was made here.
pub fn worktree(ctx: &Ctx, arg: &str, path: &Path) -> Result<(PathBuf, bool)> {
    let mut notes = Vec::new();
    worktree_noted(ctx, arg, path, &mut notes)
}

/// [`worktree`], saying in `notes` what it cleared away first: a worktree
/// whose `git worktree add` was killed half-way (git leaves it locked
/// "initializing"; it holds nothing of anyone's yet) is removed and made
/// again, and a stale lock on the branch is taken away, as `lane new` does.
pub fn worktree_noted(
    ctx: &Ctx,
    arg: &str,
    path: &Path,
    notes: &mut Vec<String>,
) -> Result<(PathBuf, bool)> {
    if path.exists() && half_made(&ctx.store.git, path)? {
        let shown = path.to_string_lossy().into_owned();
        ctx.store
            .git
            .run(["worktree", "remove", "--force", "--force", shown.as_str()])?;
        notes.push(format!(
            "removed the worktree {shown} a killed `git worktree add` had left half-made"
        ));
    }
    if path.exists() {
        return Ok((path.to_path_buf(), false));
    }
    fetch_refs_from(&ctx.store, ctx.remote(), &[crate::records::packet::PREFIX])?;
    let refname = locate(&ctx.store, ctx.remote(), arg)?;
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
    if ctx
        .store
        .clear_stale_branch_lock(&format!("refs/heads/{branch}"))
    {
        notes.push(format!(
            "removed a stale lock on refs/heads/{branch} left by a killed process"
        ));
    }
    add_worktree(ctx, path, branch, &packet.author)?;
    Ok((
        std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()),
        true,
    ))
}

/// Check `branch` out in a new worktree at `path`: the local branch, else
/// the code remote's, fetched first (`author` is who to ask for it).
fn add_worktree(ctx: &Ctx, path: &Path, branch: &str, author: &str) -> Result<()> {
    let git = &ctx.store.git;
    let shown = path.to_string_lossy().into_owned();
    if git.rev_parse(&format!("refs/heads/{branch}"))?.is_some() {
        git.run(["worktree", "add", "--quiet", shown.as_str(), branch])?;
    } else {
        let remote = ctx.code_remote().ok_or_else(|| {
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
            .hint(format!("ask {} to push it", author)));
        }
        git.worktree_add(
            &ctx.store.common_dir(),
            path,
            branch,
            &format!("refs/remotes/{remote}/{branch}"),
        )?;
    }
    Ok(())
}

/// Whether `path` is a worktree of this repository that git left locked
/// "initializing": its `git worktree add` never finished.
fn half_made(git: &crate::git::Git, path: &Path) -> Result<bool> {
    let want = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mut here = false;
    for field in git.worktree_fields()? {
        if let Some(p) = field.strip_prefix("worktree ") {
            here = std::fs::canonicalize(p).unwrap_or_else(|_| PathBuf::from(p)) == want;
        } else if here && field.starts_with("locked") {
            return Ok(field.trim_end() == "locked initializing");
        }
    }
    Ok(false)
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
pub(super) fn keep(store: &Store, packet: &Packet, actor: &str) -> Result<()> {
    let Some(snap) = &packet.snapshot else {
        return Ok(());
    };
    let refname = snapshot_ref(&packet.plan, &packet.id);
    if store.ref_target(&refname)?.is_some()
        || !crate::worktree::snapshot::present(&store.git, snap)?
    {
        return Ok(());
    }
    let id = gix::ObjectId::from_hex(snap.commit.as_bytes())
        .map_err(|e| Error::gix("bad snapshot commit id", e))?;
    remote::adopt(store, &refname, id, actor, "accept: keep the snapshot")
}
