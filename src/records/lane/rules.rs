//! The pure decisions about lanes: may a lane start, how its branch relates
//! to its base, what `lane rm` refuses and what `lane prune` keeps.

use gix::ObjectId;
use serde::Serialize;

use super::{Lane, LaneRecord, LastReport, State};
use crate::error::{Code, Error, Result};

/// What `lane new` does, given the lane records known here.
#[derive(Debug)]
pub enum Start<'a> {
    /// Start the lane; `previous` is the feature's removed record, if any
    /// (the new version follows it).
    New { previous: Option<&'a Lane> },
    /// An interrupted start wrote this record but not its journal entry:
    /// finish that.
    FinishRecorded(&'a Lane),
}

/// The lane start check: a feature has one active lane, and a plan one
/// executor. `resuming`: a start of this feature was interrupted here.
pub fn check_start<'a>(
    lanes: &'a [Lane],
    feature: &str,
    plan: &str,
    resuming: bool,
) -> Result<Start<'a>> {
    let previous = lanes.iter().find(|l| l.feature == feature);
    if let Some(prev) = previous.filter(|l| l.record.is_active()) {
        if resuming && prev.record.plan == plan {
            return Ok(Start::FinishRecorded(prev));
        }
        return Err(Error::new(
            Code::LaneExists,
            format!(
                "lane '{feature}' is already active (plan {}, owner {}, {})",
                prev.record.plan, prev.record.owner, prev.record.path
            ),
        )
        .hint("pick another feature name, or `git swarm lane rm` the existing lane first"));
    }
    if let Some(exec) = executor_of(lanes, plan) {
        return Err(has_executor(plan, exec));
    }
    Ok(Start::New { previous })
}

/// The active lane of `plan`, if any.
fn executor_of<'a>(lanes: &'a [Lane], plan: &str) -> Option<&'a Lane> {
    lanes
        .iter()
        .find(|l| l.record.is_active() && l.record.plan == plan)
}

fn has_executor(plan: &str, exec: &Lane) -> Error {
    Error::new(
        Code::PlanHasExecutor,
        format!(
            "plan '{plan}' already has an executor: lane '{}' (owner {}, branch {}, {})",
            exec.feature, exec.record.owner, exec.record.branch, exec.record.path
        ),
    )
    .hint("one executor per plan: continue in that lane, or take it over with `git swarm handoff` / `git swarm accept`")
    .hint(format!(
        "if that lane is finished, remove it first: `git swarm lane rm {}` (or `git swarm lane prune`)",
        exec.feature
    ))
    .hint("for parallel work, make a child plan: `git swarm plan new <name> --parent <plan>`")
    .with_detail(serde_json::json!({
        "plan": plan,
        "lane": exec.feature,
        "owner": exec.record.owner,
        "path": exec.record.path,
    }))
}

/// How a lane's branch relates to its base.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Merged {
    /// The branch head is an ancestor of the base, and has commits of its own.
    Ancestry,
    /// A `verify` verdict note on the branch head says merged (squash, rebase).
    Verdict,
    /// The branch has no commit since the lane started.
    Empty,
    /// The branch has work the base does not have.
    No,
    /// The local branch is gone.
    BranchMissing,
}

impl Merged {
    pub fn is_merged(self) -> bool {
        matches!(self, Merged::Ancestry | Merged::Verdict)
    }
    /// Removing the branch loses no commit.
    pub fn loses_nothing(self) -> bool {
        !matches!(self, Merged::No)
    }
}

/// Why the local version `local` of a lane must not be joined into the
/// `published` one (both parted from `base`): the published side handed
/// the lane over (owner or path changed) while the local side, still the
/// previous holder's, wrote something. None: the lane was not handed over
/// there, the local side took part in the move, or it wrote nothing.
pub fn stale_owner_write(
    base: &LaneRecord,
    local: &LaneRecord,
    published: &LaneRecord,
) -> Option<String> {
    let moved = |r: &LaneRecord| r.owner != base.owner || r.path != base.path;
    if !moved(published) || moved(local) {
        return None;
    }
    let yaml = |r: &LaneRecord| crate::store::yaml::to_yaml(r).ok();
    if yaml(local) == yaml(base) {
        return None;
    }
    let what = match &local.last_report {
        Some(r) if base.last_report.as_ref().map(|b| &b.commit) != Some(&r.commit) => {
            format!("the report '{}' by {}", r.text, r.by)
        }
        _ => "this clone's change".to_string(),
    };
    Some(format!(
        "{what} was written for lane {}'s previous owner {}; the lane was handed to {} at {} meanwhile, so it was not merged",
        local.feature, base.owner, published.owner, published.path
    ))
}

/// How the branch at `head` relates to the base: `verdict`, a merged
/// verdict is recorded on the head; `in_base`, the head is an ancestor of
/// the base; `base_commit`, the commit the lane started from.
pub fn merged_state(
    head: Option<ObjectId>,
    verdict: bool,
    in_base: bool,
    base_commit: &str,
) -> Merged {
    match head {
        None => Merged::BranchMissing,
        Some(_) if verdict => Merged::Verdict,
        Some(h) if in_base => {
            if ObjectId::from_hex(base_commit.as_bytes()).ok() == Some(h) {
                Merged::Empty
            } else {
                Merged::Ancestry
            }
        }
        Some(_) => Merged::No,
    }
}

/// Where a lane's worktree is, as this clone sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Worktree {
    /// Registered here and on disk.
    Present,
    /// Registered here, directory gone.
    Missing,
    /// Another clone's lane.
    Elsewhere,
    /// A removed lane (not looked at).
    Removed,
    /// When `lane rm` looks for what an interrupted removal left: deleted here.
    Gone,
}

/// Where a lane stands in this clone.
#[derive(Debug, Clone, Serialize)]
pub struct LaneState {
    pub feature: String,
    pub plan: String,
    pub owner: String,
    pub branch: String,
    pub path: String,
    pub base: String,
    pub state: State,
    pub worktree: Worktree,
    pub head: Option<String>,
    pub ahead: Option<u64>,
    pub behind: Option<u64>,
    pub dirty: Vec<String>,
    /// The plan file in the worktree has edits the plan ref does not have.
    pub plan_unsaved: bool,
    pub merged: Option<Merged>,
    pub last_report: Option<LastReport>,
}

impl LaneState {
    /// The state of `r` before anything of this clone is looked at.
    pub fn of(feature: &str, r: &LaneRecord, worktree: Worktree) -> LaneState {
        LaneState {
            feature: feature.to_string(),
            plan: r.plan.clone(),
            owner: r.owner.clone(),
            branch: r.branch.clone(),
            path: r.path.clone(),
            base: r.base.clone(),
            state: r.state.clone(),
            worktree,
            head: None,
            ahead: None,
            behind: None,
            dirty: Vec::new(),
            plan_unsaved: false,
            merged: None,
            last_report: r.last_report.clone(),
        }
    }
    pub fn is_local(&self) -> bool {
        self.worktree != Worktree::Elsewhere
    }
    pub fn is_dirty(&self) -> bool {
        !self.dirty.is_empty() || self.plan_unsaved
    }
}

/// What a removed lane still has in this clone: an interrupted `lane rm`
/// (or prune) wrote the record, then stopped before deleting these.
pub fn has_leftovers(record: &LaneRecord, st: &LaneState) -> bool {
    !record.is_active()
        && (matches!(st.worktree, Worktree::Present | Worktree::Missing)
            || (st.worktree == Worktree::Gone && st.head.is_some() && !record.branch_kept))
}

/// What `lane rm` without `--force` refuses for a lane of this clone:
/// uncommitted work, or (unless the branch is kept) unmerged commits.
pub fn rm_check(feature: &str, st: &LaneState, keep_branch: bool, plan_file: &str) -> Result<()> {
    if st.is_dirty() {
        let mut what = st.dirty.clone();
        if st.plan_unsaved {
            what.push(format!("{plan_file} (edits not saved in the plan)"));
        }
        return Err(Error::new(
            Code::LaneDirty,
            format!(
                "lane '{feature}' has uncommitted work in {}: {}",
                st.path,
                what.join(", ")
            ),
        )
        .hint("commit or stash it (save plan edits with `git swarm plan save`), or pass --force to discard it")
        .with_detail(serde_json::json!({ "dirty": st.dirty, "plan_unsaved": st.plan_unsaved })));
    }
    if !keep_branch && !st.merged.is_none_or(Merged::loses_nothing) {
        let commits = st.ahead.map_or("commits".to_string(), |a| {
            crate::text::count(a as usize, "commit", "commits")
        });
        return Err(Error::new(
            Code::LaneUnmerged,
            format!(
                "branch {} of lane '{feature}' has {commits} not merged into {}",
                st.branch, st.base
            ),
        )
        .hint("merge it first (or record a merged verdict with `git swarm verify lane`)")
        .hint("keep the branch with --keep-branch, or delete it anyway with --force"));
    }
    Ok(())
}

/// What `lane prune` does with a lane.
#[derive(Debug, PartialEq, Eq)]
pub enum Keep {
    /// Remove it; the reason shown.
    Remove(&'static str),
    /// Keep it, for this reason.
    Keep(String),
    /// Another checkout's lane: kept for this reason, unless this clone has
    /// an old worktree of it left behind by a handover.
    Elsewhere(String),
}

/// The prune rule: a lane of this clone goes when its branch is merged and
/// its worktree clean; a removed lane's leftovers go when that loses nothing.
pub fn keep_reason(record: &LaneRecord, st: &LaneState) -> Keep {
    if !record.is_active() {
        // Removed already: only what an interrupted removal left here.
        return if st.is_dirty() {
            Keep::Keep(format!(
                "removed, but its worktree has uncommitted changes (`git swarm lane rm {}` once they are saved)",
                st.feature
            ))
        } else if !record.branch_kept && st.merged == Some(Merged::No) {
            Keep::Keep(format!(
                "removed, but branch {} is not merged into {} (`git swarm lane rm {} --keep-branch`)",
                st.branch, st.base, st.feature
            ))
        } else {
            Keep::Remove("removal completed")
        };
    }
    if !st.is_local() {
        return Keep::Elsewhere(format!(
            "its worktree is in another checkout ({}, owner {})",
            st.path, st.owner
        ));
    }
    match st.merged {
        Some(Merged::No) => Keep::Keep(format!("not merged into {}", st.base)),
        Some(Merged::Empty) => Keep::Keep("no commits yet".to_string()),
        Some(Merged::BranchMissing) | None => Keep::Keep(format!(
            "branch {} is missing (`git swarm lane rm {}` if its work is done)",
            st.branch, st.feature
        )),
        Some(Merged::Ancestry | Merged::Verdict) if st.is_dirty() => {
            Keep::Keep("merged, but the worktree has uncommitted changes".to_string())
        }
        Some(Merged::Verdict) => Keep::Remove("merged (verified)"),
        Some(Merged::Ancestry) => Keep::Remove("merged"),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{NewRecord, State};
    use super::*;

    fn oid(n: u8) -> ObjectId {
        ObjectId::from_bytes_or_panic(&[n; 20])
    }

    fn lane(feature: &str, plan: &str, active: bool) -> Lane {
        let r = LaneRecord::started(
            &NewRecord {
                feature,
                plan,
                owner: "alice",
                path: "/w",
                base: "main",
                base_commit: oid(1),
                actor: "alice",
                now: "T",
            },
            None,
        );
        Lane {
            feature: feature.into(),
            record: if active {
                r
            } else {
                r.removed("a", "T", false)
            },
            commit: oid(2),
        }
    }

    #[test]
    fn one_active_lane_per_feature() {
        let lanes = [lane("f", "p", true)];
        let e = check_start(&lanes, "f", "q", false).unwrap_err();
        assert_eq!(e.code, Code::LaneExists);
        // A re-run of an interrupted start of the same plan finishes it.
        assert!(matches!(
            check_start(&lanes, "f", "p", true),
            Ok(Start::FinishRecorded(_))
        ));
        assert_eq!(
            check_start(&lanes, "f", "q", true).unwrap_err().code,
            Code::LaneExists
        );
    }

    #[test]
    fn one_executor_per_plan() {
        let lanes = [lane("a", "p", true), lane("b", "q", false)];
        let e = check_start(&lanes, "c", "p", false).unwrap_err();
        assert_eq!(e.code, Code::PlanHasExecutor);
        assert!(e.message.contains("lane 'a'"));
        // A removed lane is no executor, and is the previous record of its feature.
        match check_start(&lanes, "b", "q", false).unwrap() {
            Start::New { previous } => assert_eq!(previous.unwrap().feature, "b"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            check_start(&lanes, "c", "r", false).unwrap(),
            Start::New { previous: None }
        ));
    }

    #[test]
    fn merged_states() {
        let base = oid(1).to_string();
        assert_eq!(merged_state(None, true, true, &base), Merged::BranchMissing);
        assert_eq!(
            merged_state(Some(oid(3)), true, false, &base),
            Merged::Verdict
        );
        assert_eq!(
            merged_state(Some(oid(3)), false, true, &base),
            Merged::Ancestry
        );
        assert_eq!(
            merged_state(Some(oid(1)), false, true, &base),
            Merged::Empty
        );
        assert_eq!(merged_state(Some(oid(3)), false, false, &base), Merged::No);
        assert!(Merged::Verdict.is_merged() && !Merged::Empty.is_merged());
        assert!(Merged::BranchMissing.loses_nothing() && !Merged::No.loses_nothing());
    }

    fn state(l: &Lane, wt: Worktree, merged: Option<Merged>, dirty: bool) -> LaneState {
        let mut st = LaneState::of(&l.feature, &l.record, wt);
        st.merged = merged;
        st.head = Some(oid(3).to_string());
        if dirty {
            st.dirty.push("x".into());
        }
        st
    }

    #[test]
    fn prune_keeps_what_would_lose_work() {
        let a = lane("f", "p", true);
        let keep = |m, dirty| keep_reason(&a.record, &state(&a, Worktree::Present, m, dirty));
        assert_eq!(keep(Some(Merged::Ancestry), false), Keep::Remove("merged"));
        assert_eq!(
            keep(Some(Merged::Verdict), false),
            Keep::Remove("merged (verified)")
        );
        assert!(matches!(keep(Some(Merged::Ancestry), true), Keep::Keep(_)));
        assert!(matches!(keep(Some(Merged::No), false), Keep::Keep(_)));
        assert!(matches!(keep(Some(Merged::Empty), false), Keep::Keep(_)));
        assert!(matches!(keep(None, false), Keep::Keep(_)));
        let st = state(&a, Worktree::Elsewhere, None, false);
        assert!(matches!(keep_reason(&a.record, &st), Keep::Elsewhere(_)));

        let r = lane("g", "p", false);
        assert_eq!(r.record.state(), State::Removed);
        let st = state(&r, Worktree::Present, Some(Merged::No), false);
        assert!(has_leftovers(&r.record, &st));
        assert!(matches!(keep_reason(&r.record, &st), Keep::Keep(_)));
        let st = state(&r, Worktree::Gone, Some(Merged::Ancestry), false);
        assert_eq!(
            keep_reason(&r.record, &st),
            Keep::Remove("removal completed")
        );
        assert!(!has_leftovers(&a.record, &st));
    }

    #[test]
    fn states_serialise_as_before() {
        let l = lane("f", "p", true);
        let mut st = LaneState::of(&l.feature, &l.record, Worktree::Elsewhere);
        st.merged = Some(Merged::BranchMissing);
        let v = serde_json::to_value(&st).unwrap();
        assert_eq!(v["worktree"], "elsewhere");
        assert_eq!(v["merged"], "branch-missing");
        assert_eq!(v["state"], "active");
        assert_eq!(serde_json::to_value(Worktree::Gone).unwrap(), "gone");
    }

    #[test]
    fn rm_refuses_dirty_then_unmerged() {
        let a = lane("f", "p", true);
        let mut st = state(&a, Worktree::Present, Some(Merged::No), true);
        st.plan_unsaved = true;
        let e = rm_check("f", &st, false, "PLAN.md").unwrap_err();
        assert_eq!(e.code, Code::LaneDirty);
        assert!(e
            .message
            .ends_with("x, PLAN.md (edits not saved in the plan)"));
        st.dirty.clear();
        st.plan_unsaved = false;
        st.ahead = Some(2);
        let e = rm_check("f", &st, false, "PLAN.md").unwrap_err();
        assert_eq!(e.code, Code::LaneUnmerged);
        assert!(e.message.contains("has 2 commits not merged into main"));
        assert!(rm_check("f", &st, true, "PLAN.md").is_ok());
    }

    #[test]
    fn a_write_for_the_previous_owner_is_not_joined_into_a_lane_handed_over() {
        let base = lane("f", "p", true).record;
        let report = |by: &str, commit: &str| LastReport {
            kind: "done".into(),
            text: "done".into(),
            cleared: None,
            capacity: None,
            at: "T2".into(),
            by: by.into(),
            commit: commit.into(),
            extra: Default::default(),
        };
        let bobs = base.with_report(&report("alice", "c1"));
        let mut handed = base.clone();
        handed.owner = "cat".into();
        handed.path = "/cat".into();
        let why = stale_owner_write(&base, &bobs, &handed).expect("refused");
        assert!(why.contains("the report 'done' by alice"), "{why}");
        assert!(why.contains("handed to cat at /cat"), "{why}");
        // Not handed over there: the journals join as before.
        let other = base.with_report(&report("alice", "c2"));
        assert!(stale_owner_write(&base, &bobs, &other).is_none());
        // Nothing written here, or the move made here too: nothing refused.
        assert!(stale_owner_write(&base, &base, &handed).is_none());
        assert!(
            stale_owner_write(&base, &handed.with_report(&report("cat", "c3")), &handed).is_none()
        );
    }
}
