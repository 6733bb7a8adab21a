//! The live lanes a forecast merges: every active lane record (local or
//! mirrored, the newer of the two), each with the commit its work is at
//! (the lane branch here, or as fetched from the remote, or the lane's
//! published snapshot of its uncommitted work while that sits on the
//! branch's head) and its base's current tip. Refs are read in process:
//! the pre-push hook reads them for every lane.

use std::collections::BTreeSet;

use gix::ObjectId;
use serde::Serialize;

use crate::error::Result;
use crate::records::lane::wip::{standing, wip_ref, Standing};
use crate::records::lane::Lane;
use crate::session::Ctx;

/// Where a forecast reads: the records (lane records and snapshots, and
/// their mirror) through the coordination remote, the lane branches and
/// their bases (remote-tracking branches) from the code remote. One remote
/// for both unless `swarm.remote` names a coordination remote of its own.
#[derive(Debug, Clone, Copy)]
pub struct Remotes<'a> {
    pub records: Option<&'a str>,
    pub code: Option<&'a str>,
}

impl Remotes<'_> {
    pub fn of(ctx: &Ctx) -> Remotes<'_> {
        Remotes {
            records: ctx.settings.remote.as_deref(),
            code: ctx.settings.code_remote.as_deref(),
        }
    }
}

/// Where a lane's head was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HeadSource {
    /// The branch in this clone.
    Local,
    /// The branch as fetched from the remote (another machine pushed it).
    Remote,
    /// The lane's published snapshot of its uncommitted work
    /// (`refs/swarm/wip/<feature>`), taken on the branch's head.
    Snapshot,
}

/// A lane's newest snapshot of its uncommitted work, as the forecast saw it.
#[derive(Debug, Clone, Serialize)]
pub struct WipView {
    /// The snapshot commit.
    pub commit: String,
    /// The head it was taken on (its first parent).
    pub on: String,
    /// When it was taken (its commit date).
    pub taken_at: String,
    /// `current`: it stands for the lane; `stale`: the branch moved past
    /// it, so it is ignored.
    pub standing: Standing,
    /// It says "nothing uncommitted" (its tree is the head's).
    pub clean: bool,
}

/// One live lane as the forecast merges it.
#[derive(Debug, Clone, Serialize)]
pub struct LaneHead {
    pub feature: String,
    pub plan: String,
    pub owner: String,
    pub branch: String,
    pub head: String,
    pub source: HeadSource,
    /// The base as the lane record names it.
    pub base: String,
    /// The base's current tip (None when it cannot be resolved here).
    pub base_commit: Option<String>,
    /// The lane's newest published snapshot, if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<WipView>,
    #[serde(skip)]
    pub head_id: ObjectId,
    #[serde(skip)]
    pub base_id: Option<ObjectId>,
}

/// An active lane with nothing to merge.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    pub feature: String,
    pub plan: String,
    pub branch: String,
    pub reason: String,
}

/// Fetch lane records (the mirror) from the records' remote, and the lane
/// branches `feat/*` into `refs/remotes/<code>/feat/*` from the code
/// remote, then each base branch the lanes name.
pub fn fetch(ctx: &Ctx, records: &str, code: Option<&str>) -> Result<()> {
    crate::store::mirror::fetch(&ctx.store, records)?;
    let Some(remote) = code else { return Ok(()) };
    if ctx.store.run.reach.unreached().as_deref() == Some(records) {
        // A listing's tolerated fetch: the one warning says it; the
        // branches are what was fetched before.
        return Ok(());
    }
    ctx.store.git.fetch(
        remote,
        &[format!("+refs/heads/feat/*:refs/remotes/{remote}/feat/*")],
    )?;
    let (lanes, _) = active(ctx, Some(records))?;
    let bases: BTreeSet<String> = lanes
        .iter()
        .map(|l| {
            let b = &l.record.base;
            b.strip_prefix(&format!("{remote}/"))
                .unwrap_or(b)
                .to_string()
        })
        .filter(|b| !looks_like_id(b))
        .collect();
    for b in bases {
        if branch_like(&b) {
            // A base that is not a branch on the remote is not an error.
            let _ = ctx.store.git.fetch_branch(remote, &b);
        }
    }
    Ok(())
}

/// A plain branch name (`main`, `release/1.2`): worth fetching.
fn branch_like(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('-')
        && !s.contains("..")
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-/".contains(&b))
}

fn looks_like_id(s: &str) -> bool {
    s.len() >= 7 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Every active lane record known here, local or mirrored (the newer of
/// the two), sorted by feature; plus a note per unreadable record.
fn active(ctx: &Ctx, remote: Option<&str>) -> Result<(Vec<Lane>, Vec<String>)> {
    let mut lanes = Vec::new();
    let mut notes = Vec::new();
    for (name, tip) in
        crate::store::remote::tips_under(&ctx.store, remote, crate::records::lane::PREFIX)?
    {
        let Some(id) = tip.base else { continue };
        match crate::records::lane::at(&ctx.store, &name, id) {
            Ok(l) if l.record.is_active() => lanes.push(l),
            Ok(_) => {}
            Err(e) => notes.push(format!(
                "lane {name}: its record cannot be read ({}); left out of the forecast",
                e.message
            )),
        }
    }
    Ok((lanes, notes))
}

/// The live lanes with their heads and bases, those skipped, and notes.
pub fn live(
    ctx: &Ctx,
    remotes: Remotes<'_>,
    _fetched: bool,
) -> Result<(Vec<LaneHead>, Vec<Skipped>, Vec<String>)> {
    let (lanes, mut notes) = active(ctx, remotes.records)?;
    let present = Present::list(ctx, remotes)?;
    let mut heads = Vec::new();
    let mut skipped = Vec::new();
    // Lanes mostly share one base: resolve each once.
    let mut bases: std::collections::HashMap<String, Option<ObjectId>> = Default::default();
    for lane in lanes {
        let r = &lane.record;
        let Some((head_id, source, snapshot)) =
            lane_head(ctx, remotes, &present, &lane, &mut notes)?
        else {
            skipped.push(Skipped {
                feature: lane.feature.clone(),
                plan: r.plan.clone(),
                branch: r.branch.clone(),
                reason: format!(
                    "branch {} is neither here nor on the remote (not pushed yet?)",
                    r.branch
                ),
            });
            continue;
        };
        let base_id = match bases.get(&r.base) {
            Some(b) => *b,
            None => {
                let b = base_of(ctx, remotes.code, &r.base)?;
                bases.insert(r.base.clone(), b);
                b
            }
        };
        if base_id.is_none() {
            notes.push(format!(
                "lane {}: its base '{}' cannot be resolved here; only its pairs are forecast",
                lane.feature, r.base
            ));
        }
        heads.push(LaneHead {
            feature: lane.feature.clone(),
            plan: r.plan.clone(),
            owner: r.owner.clone(),
            branch: r.branch.clone(),
            head: head_id.to_string(),
            source,
            base: r.base.clone(),
            base_commit: base_id.map(|b| b.to_string()),
            snapshot,
            head_id,
            base_id,
        });
    }
    Ok((heads, skipped, notes))
}

/// What the forecast merges for a lane: its snapshot while that stands
/// (also when the branch is not pushed yet: the snapshot carries its
/// head), else its branch. None when there is neither.
/// The names of the refs a lane's head may be at (branches here and as
/// fetched from the code remote, snapshots here and mirrored), listed
/// once: looking each up costs a file system lookup per name, and a
/// thousand lanes mostly have none of them.
struct Present(std::collections::HashSet<String>);

impl Present {
    fn list(ctx: &Ctx, remotes: Remotes<'_>) -> Result<Present> {
        let wip = crate::records::lane::wip::WIP_PREFIX;
        let mut prefixes = vec!["refs/heads/".to_string(), wip.to_string()];
        if let Some(r) = remotes.code {
            prefixes.push(format!("refs/remotes/{r}/"));
        }
        if let Some(r) = remotes.records {
            prefixes.push(crate::store::mirror::mirror_ref(r, wip));
        }
        let mut names = std::collections::HashSet::new();
        for p in prefixes {
            names.extend(ctx.store.list_refs(&p)?.into_iter().map(|(name, _)| name));
        }
        Ok(Present(names))
    }
    fn has(&self, refname: &str) -> bool {
        self.0.contains(refname)
    }
}

fn lane_head(
    ctx: &Ctx,
    remotes: Remotes<'_>,
    present: &Present,
    lane: &Lane,
    notes: &mut Vec<String>,
) -> Result<Option<(ObjectId, HeadSource, Option<WipView>)>> {
    let branch = head_of(ctx, remotes.code, present, &lane.record.branch)?;
    let snapshot = wip_of(
        ctx,
        remotes.records,
        present,
        &lane.feature,
        branch.map(|b| b.0),
    )
    .unwrap_or_else(|e| {
        notes.push(format!(
            "lane {}: its snapshot cannot be read ({}); its branch stands for it",
            lane.feature, e.message
        ));
        None
    });
    Ok(match (snapshot, branch) {
        (Some((view, id)), _) if view.standing == Standing::Current => {
            Some((id, HeadSource::Snapshot, Some(view)))
        }
        (view, Some((head, source))) => Some((head, source, view.map(|(v, _)| v))),
        (_, None) => None,
    })
}

/// The newer of two commits when one contains the other; else `prefer`.
fn newer(ctx: &Ctx, a: ObjectId, b: ObjectId, prefer_b: bool) -> Result<ObjectId> {
    if a == b || ctx.store.is_ancestor(b, a)? {
        Ok(a)
    } else if ctx.store.is_ancestor(a, b)? || prefer_b {
        Ok(b)
    } else {
        Ok(a)
    }
}

/// A lane's head: its branch here or as fetched, the one that contains the
/// other; when they diverged, this clone's branch (the work in front of us).
fn head_of(
    ctx: &Ctx,
    remote: Option<&str>,
    present: &Present,
    branch: &str,
) -> Result<Option<(ObjectId, HeadSource)>> {
    let at = |name: String| present.has(&name).then(|| commit_at(ctx, &name)).flatten();
    let local = at(format!("refs/heads/{branch}"));
    let fetched = remote.and_then(|r| at(format!("refs/remotes/{r}/{branch}")));
    Ok(match (local, fetched) {
        (Some(l), Some(f)) => {
            let n = newer(ctx, l, f, false)?;
            let src = if n == l {
                HeadSource::Local
            } else {
                HeadSource::Remote
            };
            Some((n, src))
        }
        (Some(l), None) => Some((l, HeadSource::Local)),
        (None, Some(f)) => Some((f, HeadSource::Remote)),
        (None, None) => None,
    })
}

/// The commit the full ref name `refname` points at (peeled), if any; read
/// in process (a forecast or a pre-push hook looks up several per lane).
fn commit_at(ctx: &Ctx, refname: &str) -> Option<ObjectId> {
    let mut r = ctx.store.repo.try_find_reference(refname).ok()??;
    let id = r.peel_to_id().ok()?.detach();
    let commit = ctx.store.repo.find_object(id).ok()?.peel_to_commit().ok()?;
    Some(commit.id)
}

/// The base's current tip: the base as named, and its remote-tracking
/// branch (as fetched) when it names a branch; the newer of the two, the
/// remote's when they diverged (that is where merges land).
fn base_of(ctx: &Ctx, remote: Option<&str>, base: &str) -> Result<Option<ObjectId>> {
    let named = ctx.store.git.resolve(&format!("{base}^{{commit}}"))?;
    let tracking = match remote {
        Some(r) if !base.starts_with(&format!("{r}/")) && !looks_like_id(base) => {
            commit_at(ctx, &format!("refs/remotes/{r}/{base}"))
        }
        _ => None,
    };
    Ok(match (named, tracking) {
        (Some(n), Some(t)) => Some(newer(ctx, n, t, true)?),
        (n, t) => n.or(t),
    })
}

/// One version of a lane's snapshot: commit, first parent, tree, commit time.
struct Wip {
    id: ObjectId,
    on: ObjectId,
    tree: ObjectId,
    seconds: i64,
}

fn read_wip(ctx: &Ctx, id: ObjectId) -> Option<Wip> {
    let c = ctx.store.repo.find_commit(id).ok()?;
    let on = c.parent_ids().next()?.detach();
    let tree = c.tree_id().ok()?.detach();
    let now = ctx.store.clock.now().as_second();
    let seconds = crate::clock::claimed_time(c.time().ok()?.seconds, now);
    Some(Wip {
        id,
        on,
        tree,
        seconds,
    })
}

/// The lane's newest snapshot (local or as fetched; the later commit date
/// wins, as in `sync`) and what the forecast merges for it: the snapshot,
/// or its head when it says "nothing uncommitted". None without one.
fn wip_of(
    ctx: &Ctx,
    remote: Option<&str>,
    present: &Present,
    feature: &str,
    branch_head: Option<ObjectId>,
) -> Result<Option<(WipView, ObjectId)>> {
    let refname = wip_ref(feature);
    let mut refs = vec![refname.clone()];
    if let Some(r) = remote {
        refs.push(crate::store::mirror::mirror_ref(r, &refname));
    }
    let mut newest: Option<Wip> = None;
    for r in refs.into_iter().filter(|r| present.has(r)) {
        let Some(w) = ctx.store.ref_target(&r)?.and_then(|id| read_wip(ctx, id)) else {
            continue;
        };
        if newest.as_ref().is_none_or(|n| w.seconds > n.seconds) {
            newest = Some(w);
        }
    }
    let Some(w) = newest else { return Ok(None) };
    // Without a branch here or as fetched nothing has moved past it.
    let head = branch_head.unwrap_or(w.on);
    let head_in_on = w.on != head && ctx.store.is_ancestor(head, w.on)?;
    let clean = ctx.store.commit_tree(w.on)? == w.tree;
    let view = WipView {
        commit: w.id.to_string(),
        on: w.on.to_string(),
        taken_at: jiff::Timestamp::from_second(w.seconds)
            .map(crate::clock::rfc3339)
            .unwrap_or_default(),
        standing: standing(w.on, head, head_in_on),
        clean,
    };
    Ok(Some((view, if clean { w.on } else { w.id })))
}
