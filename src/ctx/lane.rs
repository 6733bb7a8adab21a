//! The session's view of lanes: reading lane records, where lanes live in
//! this clone (the main worktree, `swarm.worktreeRoot`, the default base),
//! which lane we run in, and handing a lane over after an accepted handoff.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use gix::ObjectId;

use super::Ctx;
use crate::clock::rfc3339;
use crate::error::{Code, Error, Result};
use crate::git::Git;
use crate::model::lane::{self, Lane, LaneRecord};
use crate::store::kind::{Record, Records, Update};
use crate::store::record::Unreadable;
use crate::store::Store;

mod probe;

pub use probe::{
    cwd_inside, has_merged_verdict, ignored_paths, inspect, left_behind, merged, probe, uncommitted,
};

fn records(store: &Store) -> Records<'_, LaneRecord> {
    Records::new(store)
}

/// Every lane known here (local, or `remote`'s mirror as last fetched),
/// each at its newer version: what `status`, `lane list` and `lane prune`
/// all show, so they never disagree on a lane's owner.
pub fn known(store: &Store, remote: Option<&str>) -> Result<(Vec<Lane>, Vec<Unreadable>)> {
    let (good, bad) = records(store).known(remote)?;
    Ok((good.into_iter().map(Lane::from).collect(), bad))
}

/// The lane record of `feature`, if it exists.
pub fn load(store: &Store, feature: &str) -> Result<Option<Lane>> {
    Ok(records(store).load(&feature.to_string())?.map(Lane::from))
}

/// A lane as one version of its record (e.g. the mirror's) has it.
pub fn at(store: &Store, feature: &str, commit: ObjectId) -> Result<Lane> {
    records(store)
        .at(&feature.to_string(), commit)
        .map(Lane::from)
}

/// Every lane record that can be read, sorted by feature, and those that
/// cannot (one bad record must not hide every other lane).
pub fn all(store: &Store) -> Result<(Vec<Lane>, Vec<Unreadable>)> {
    let (good, bad) = records(store).all()?;
    Ok((good.into_iter().map(Lane::from).collect(), bad))
}

/// The lane of `feature`; `NOT_FOUND` when it has no record.
pub fn require(store: &Store, feature: &str) -> Result<Lane> {
    crate::names::validate_name("feature", feature)?;
    records(store)
        .require(
            &feature.to_string(),
            "list lanes with `git swarm lane list`",
        )
        .map(Lane::from)
}

/// [`require`] at the newer of the local and the mirrored version (as last
/// fetched through `remote`): what `status` and `lane list` show.
pub fn require_newest(store: &Store, remote: Option<&str>, feature: &str) -> Result<Lane> {
    let local = require(store, feature);
    let refname = LaneRecord::refname(&feature.to_string());
    let tip = crate::store::remote::tip(store, remote, &refname)?;
    match (local, tip.base) {
        (Ok(l), Some(b)) if b != l.commit && !tip.archived => at(store, feature, b),
        (Err(e), Some(b)) if e.code == Code::NotFound && !tip.archived => at(store, feature, b),
        (other, _) => other,
    }
}

/// An accepted handoff of lane `feature` to `owner` working at `path`
/// backs the lane's record naming them there.
pub fn handoff_accepted(
    store: &Store,
    remote: Option<&str>,
    feature: &str,
    owner: &str,
    path: &str,
) -> Result<bool> {
    use crate::model::packet::PacketVersion;
    use crate::store::kind::Record;
    let backs = |v: &PacketVersion| {
        v.acceptance.as_ref().is_some_and(|acc| {
            v.packet.lane.as_deref() == Some(feature)
                && acc.accepted_by == owner
                && same_path(Path::new(&acc.checkout), Path::new(path))
        })
    };
    let packets = Records::<PacketVersion>::new(store);
    // Local and mirror (newest wins): the acceptance may be known here
    // only from the last fetch.
    if packets.known(remote)?.0.iter().any(|v| backs(&v.value)) {
        return Ok(true);
    }
    // An accepted packet `gc` archived still backs the move: read the
    // archive only when no live packet does (rare: a warning is at stake).
    let ns = <PacketVersion as Record>::NAMESPACE;
    for (refname, tip) in crate::store::archive::archived(store, ns)? {
        let Some(key) = PacketVersion::key_of(&refname) else {
            continue;
        };
        if packets.at(&key, tip).is_ok_and(|v| backs(&v.value)) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Two paths naming one directory (by their canonical forms when both exist).
pub fn same_path(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

/// The main worktree's root: lanes live under it, whichever worktree we run in.
pub fn main_worktree(store: &Store) -> Result<PathBuf> {
    store
        .git
        .worktree_paths()?
        .into_iter()
        .next()
        .ok_or_else(|| Error::new(Code::GitFailed, "`git worktree list` named no worktree"))
}

/// The base a new lane starts from when `--base` is not given:
/// `swarm.base`, else the code remote's default branch (`<remote>/HEAD`,
/// else `<remote>/main`), else `main`, else the branch checked out
/// (`master`…). The code remote, not the coordination remote: that is where
/// the base branch lives (and what the trust list is read from).
pub fn default_base(ctx: &Ctx) -> String {
    if let Some(base) = &ctx.settings.base {
        return base.clone();
    }
    if let Some(remote) = ctx.settings.code_remote.as_deref() {
        if let Some(base) = remote_base(ctx, remote) {
            return base;
        }
    }
    // No remote base: main, else the branch checked out here (e.g. master).
    if let Ok(Some(_)) = ctx.store.repo.try_find_reference("refs/heads/main") {
        return "main".to_string();
    }
    if let Ok(Some(head)) = ctx.store.repo.head_name() {
        if let Some(short) = head.as_bstr().to_string().strip_prefix("refs/heads/") {
            return short.to_string();
        }
    }
    "main".to_string()
}

fn remote_base(ctx: &Ctx, remote: &str) -> Option<String> {
    let head = format!("refs/remotes/{remote}/HEAD");
    if let Ok(Some(r)) = ctx.store.repo.try_find_reference(head.as_str()) {
        if let Some(name) = r.target().try_name() {
            let name = name.as_bstr().to_string();
            if let Some(short) = name.strip_prefix("refs/remotes/") {
                return Some(short.to_string());
            }
            return Some(name);
        }
    }
    // A clone of a then-empty remote has no <remote>/HEAD: the remote's
    // main is still what "merged" means for shared work.
    let main = format!("refs/remotes/{remote}/main");
    if let Ok(Some(_)) = ctx.store.repo.try_find_reference(main.as_str()) {
        return Some(format!("{remote}/main"));
    }
    None
}

/// The commit `rev` names, if any.
pub fn resolve(git: &Git, rev: &str) -> Result<Option<ObjectId>> {
    Ok(git
        .rev_parse(rev)?
        .and_then(|s| ObjectId::from_hex(s.as_bytes()).ok()))
}

/// Where this clone puts lane `feature`'s worktree.
pub fn lane_path(ctx: &Ctx, main: &Path, feature: &str) -> PathBuf {
    let root = Path::new(&ctx.settings.worktree_root);
    let root = if root.is_absolute() {
        root.to_path_buf()
    } else {
        main.join(root)
    };
    root.join(feature)
}

/// [`lane_path`] for a lane about to be created: `swarm.worktreeRoot` must
/// lead inside the main worktree (symlinks resolved), unless
/// `swarm.worktreeRootAllowOutside` is true, and never into the git directory.
pub fn confined_lane_path(ctx: &Ctx, main: &Path, feature: &str) -> Result<PathBuf> {
    let value = &ctx.settings.worktree_root;
    let refuse = |why: &str| {
        Error::new(
            Code::ConfigInvalid,
            format!("swarm.worktreeRoot = '{}' {why}", value.escape_debug()),
        )
    };
    let path = lane_path(ctx, main, feature);
    let lexical = if Path::new(value).is_absolute() {
        Path::new(value).starts_with(main)
            && !Path::new(value)
                .components()
                .any(|c| matches!(c, std::path::Component::ParentDir))
    } else {
        crate::fsutil::confined_relative(value).is_some()
    };
    let inside = lexical && crate::fsutil::resolves_inside(main, &path);
    if !inside && !ctx.settings.worktree_root_allow_outside {
        return Err(refuse("leads outside the main worktree")
            .hint("use a directory inside the main worktree (default _swarm-worktrees)")
            .hint("to keep lane worktrees elsewhere on purpose, allow it: `git config swarm.worktreeRootAllowOutside true`"));
    }
    if crate::fsutil::resolves_inside(&ctx.store.common_dir(), &path)
        || crate::fsutil::resolves_inside(ctx.store.repo.git_dir(), &path)
        || Path::new(value)
            .components()
            .any(|c| c.as_os_str().eq_ignore_ascii_case(".git"))
    {
        return Err(refuse("leads into the git directory")
            .hint("use a directory of the worktree (default _swarm-worktrees)"));
    }
    Ok(path)
}

/// Where `lane new` marks a start under way (a cache in the git directory
/// shared by all worktrees): present after a kill, it tells a re-run that
/// the branch and worktree it finds were made for this lane.
pub fn start_marker(store: &Store, feature: &str) -> PathBuf {
    store
        .common_dir()
        .join("swarm")
        .join("lane-start")
        .join(feature)
}

impl Ctx {
    /// The active lane whose worktree is the one we run in, if any: the
    /// checked-out branch is the lane's branch and the path is the record's
    /// path; and it is a linked worktree, or the main checkout of a clone
    /// where the lane was accepted (an acceptance there backs the record).
    /// A lane record comes from the shared remote: its `path` alone proves
    /// nothing here.
    pub fn lane_here(&self) -> Option<Lane> {
        let here = std::fs::canonicalize(self.store.workdir()?).ok()?;
        let main = main_worktree(&self.store).ok()?;
        let in_main = std::fs::canonicalize(&main).ok().as_deref() == Some(here.as_path());
        let branch = Git::new(&here).current_branch().ok()??;
        all(&self.store).ok()?.0.into_iter().find(|lane| {
            lane.record.is_active()
                && lane.record.branch == branch
                && lane.record.branch == lane::branch_of(&lane.feature)
                && std::fs::canonicalize(&lane.record.path).ok().as_deref() == Some(here.as_path())
                && (!in_main
                    || handoff_accepted(
                        &self.store,
                        None,
                        &lane.feature,
                        &lane.record.owner,
                        &lane.record.path,
                    )
                    .unwrap_or(false))
        })
    }

    /// Identity comes from a lane only in a linked worktree: the owner of
    /// the active lane whose branch is checked out here and whose record
    /// names this path ([`Ctx::lane_here`] without the main checkout). The
    /// hooks ask on every commit, so this spawns no process and reads the
    /// one lane record the branch names (`feat/<feature>`), not every lane.
    pub(super) fn lane_owner_here(&self) -> Option<String> {
        let repo = &self.store.repo;
        if repo.kind() != gix::repository::Kind::LinkedWorkTree {
            return None;
        }
        let here = std::fs::canonicalize(self.store.workdir()?).ok()?;
        let head = repo.head_name().ok()??;
        let branch = std::str::from_utf8(head.as_bstr())
            .ok()?
            .strip_prefix("refs/heads/")?;
        let feature = branch.strip_prefix("feat/")?;
        if !crate::names::is_valid_name(feature) {
            return None;
        }
        let lane = load(&self.store, feature).ok()??;
        (lane.record.is_active()
            && lane.record.branch == branch
            && std::fs::canonicalize(&lane.record.path).ok().as_deref() == Some(here.as_path()))
        .then_some(lane.record.owner)
    }

    /// The lane whose old worktree we run in, if it was handed over since.
    pub fn moved_from_here(&self) -> Option<Lane> {
        let here = self.store.workdir()?.to_path_buf();
        let worktrees = self.store.git.worktree_paths().ok()?;
        all(&self.store).ok()?.0.into_iter().find(|lane| {
            left_behind(self, lane, &worktrees)
                .ok()
                .flatten()
                .is_some_and(|p| same_path(&p, &here))
        })
    }
}

/// Each active lane's owner and path, as this clone has them.
pub fn holders(store: &Store) -> BTreeMap<String, (String, String)> {
    all(store)
        .map(|(lanes, _)| lanes)
        .unwrap_or_default()
        .into_iter()
        .filter(|l| l.record.is_active())
        .map(|l| (l.feature, (l.record.owner, l.record.path)))
        .collect()
}

/// After `sync`: the lanes whose record now names another owner or path
/// than `before` without an accepted handoff backing it, one warning each.
/// Such a move is not honoured by `lane prune`.
pub fn unbacked_moves(store: &Store, before: &BTreeMap<String, (String, String)>) -> Vec<String> {
    let mut out = Vec::new();
    for (feature, (owner, path)) in holders(store) {
        let Some((old_owner, old_path)) = before.get(&feature) else {
            continue;
        };
        if *old_owner == owner && same_path(Path::new(old_path), Path::new(&path)) {
            continue;
        }
        if handoff_accepted(store, None, &feature, &owner, &path).unwrap_or(false) {
            continue;
        }
        out.push(format!(
            "lane {feature} now names {owner} at {path} (was {old_owner} at {old_path}) without an accepted handoff: `lane prune` and `lane rm` keep this clone's worktree; check `git log refs/swarm/lanes/{feature}`"
        ));
    }
    out
}

/// The lane record `current` handed to `new_owner` working at `checkout`.
fn handed(
    feature: &str,
    current: &LaneRecord,
    new_owner: &str,
    packet: &str,
    checkout: &Path,
    now: &str,
) -> Option<(LaneRecord, crate::store::Event)> {
    let here = std::fs::canonicalize(checkout).unwrap_or_else(|_| checkout.to_path_buf());
    let moved = !same_path(Path::new(&current.path), &here);
    let here = here.display().to_string();
    lane::handed(feature, current, new_owner, packet, &here, moved, now)
}

/// After a successor accepts a handoff, the lane whose branch the packet
/// names belongs to them: rewrite the lane's owner (a new version of its
/// record; `sync` publishes it). Idempotent. Returns whether it wrote.
/// When the successor accepts in another checkout (another clone), the lane
/// now lives there: its `path` follows, so commands run in that checkout know
/// the lane and the old worktree no longer speaks for it.
pub fn hand_over(
    store: &Store,
    branch: &str,
    new_owner: &str,
    packet: &str,
    checkout: &Path,
) -> Result<bool> {
    let Some(lane) = all(store)?
        .0
        .into_iter()
        .find(|l| l.record.is_active() && l.record.branch == branch)
    else {
        return Ok(false);
    };
    let feature = lane.feature;
    let wrote = records(store).update(&feature, |current| {
        let Some(cur) = current.filter(|c| c.value.is_active() && c.value.branch == branch) else {
            return Ok(Update::Keep);
        };
        let now = rfc3339(store.clock.now());
        Ok(
            match handed(&feature, &cur.value, new_owner, packet, checkout, &now) {
                Some((record, event)) => Update::Write(record, event),
                None => Update::Keep,
            },
        )
    });
    match wrote {
        Ok(id) => Ok(id.is_some()),
        Err(e) if e.code == Code::CasFailed => Err(Error::new(
            Code::CasFailed,
            "the lane record kept changing; its owner was not updated",
        )
        .hint("run `git swarm accept` again: it completes what is missing")),
        Err(e) => Err(e),
    }
}

/// For `accept` with a remote: the next version of the lane record at
/// `base` (the newest version known here) that hands the lane to
/// `new_owner` at `checkout`, so it is published in the same atomic push as
/// the acceptance. None when the lane is not active on `branch`, or is
/// theirs there already.
pub fn handover_commit(
    store: &Store,
    feature: &str,
    base: ObjectId,
    branch: &str,
    new_owner: &str,
    packet: &str,
    checkout: &Path,
) -> Result<Option<ObjectId>> {
    let current = at(store, feature, base)?.record;
    if !current.is_active() || current.branch != branch {
        return Ok(None);
    }
    let now = rfc3339(store.clock.now());
    let Some((record, event)) = handed(feature, &current, new_owner, packet, checkout, &now) else {
        return Ok(None);
    };
    let tree = store.write_tree(&record.to_files()?)?;
    Ok(Some(store.commit(tree, &[base], &event)?))
}
