//! The lane kind: one worktree and branch `feat/<feature>` per feature,
//! recorded in `refs/swarm/lanes/<feature>` (`lane.yaml`). A plan has at
//! most one active lane (its executor). Removing a lane leaves the record in
//! place with a final `lane-removed` commit (state `removed`) so its history
//! stays readable.
//!
//! This module holds the record, its states and the pure rules (the lane
//! start check, the removal and prune decisions, reports and capacity
//! lines); nothing here runs git or reads the file system.

use gix::ObjectId;
use serde::{Deserialize, Serialize};

use crate::error::{Code, Error, Result};
use crate::store::records::{Diverged, Files, Record, Versioned};
use crate::store::yaml::{self, Extra};
use crate::store::Event;

mod known;
mod report;
mod rules;
pub mod wip;

pub use known::{
    all, at, hand_over, handover_commit, holders, known, load, recover, require, require_newest,
};
pub use report::{parse_capacity, ReportKind};
pub use rules::{
    check_start, has_leftovers, keep_reason, merged_state, rm_check, Keep, LaneState, Merged,
    Start, Worktree,
};

pub const SCHEMA: &str = "swarm-lane/v1";
pub const RECORD_FILE: &str = "lane.yaml";

/// Where every lane ref lives.
pub const PREFIX: &str = "refs/swarm/lanes/";

pub fn lane_ref(feature: &str) -> String {
    format!("{PREFIX}{feature}")
}

pub fn branch_of(feature: &str) -> String {
    format!("feat/{feature}")
}

open_enum! {
    /// A lane record's `state`; a state this version does not know is kept
    /// as it is.
    pub enum State {
        Active = "active",
        Removed = "removed",
    }
}

/// `lane.yaml`. Field names `plan`, `owner`, `branch`, `state` and `path`
/// are read by `status` and by `Ctx::lane_here`; keep them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LaneRecord {
    pub schema: String,
    pub feature: String,
    pub plan: String,
    pub owner: String,
    pub branch: String,
    /// Absolute path of the lane's worktree, on the machine that created it.
    pub path: String,
    /// The base as named when the lane started (`main`, `origin/main`, a rev).
    pub base: String,
    /// The commit the branch started from.
    #[serde(default)]
    pub base_commit: String,
    /// `active` or `removed`, or a state a newer version wrote.
    pub state: State,
    #[serde(default)]
    pub created_at: String,
    #[serde(default)]
    pub created_by: String,
    #[serde(default)]
    pub updated_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed_by: Option<String>,
    /// Removed with `--keep-branch`: the branch stays, also when a re-run
    /// completes an interrupted removal.
    #[serde(default, skip_serializing_if = "is_false")]
    pub branch_kept: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_report: Option<LastReport>,
    /// The task the lane took (`lane new --task`), as `<plan>/<id>`: task
    /// commands run in the lane's worktree default to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

open_enum! {
    /// A lane report's kind (`last_report.kind`, [`ReportKind::slug`]); a
    /// kind a newer version wrote is kept as it is.
    pub enum LastReportKind {
        PlanReady = "plan-ready",
        PrOpen = "pr-open",
        Blocked = "blocked",
        Handoff = "handoff",
        Done = "done",
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LastReport {
    /// `plan-ready`, `pr-open`, `blocked`, `handoff` or `done`, or a kind a
    /// newer version wrote.
    pub kind: LastReportKind,
    /// The vocabulary line, e.g. `PR open https://…`.
    pub text: String,
    /// Why a `blocked` report no longer counts ([`LaneRecord::blocked_cleared`]):
    /// set by the read models when they show it, never stored.
    #[serde(default, skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub cleared: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<String>,
    #[serde(default)]
    pub at: String,
    #[serde(default)]
    pub by: String,
    /// The plan journal commit that carries the report.
    #[serde(default)]
    pub commit: String,
    #[serde(flatten)]
    pub extra: Extra,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// What a new lane record says (see [`LaneRecord::started`]).
pub struct NewRecord<'a> {
    pub feature: &'a str,
    pub plan: &'a str,
    pub owner: &'a str,
    pub path: &'a str,
    pub base: &'a str,
    pub base_commit: ObjectId,
    pub actor: &'a str,
    pub now: &'a str,
}

impl LaneRecord {
    pub fn state(&self) -> State {
        self.state.clone()
    }
    pub fn is_active(&self) -> bool {
        self.state() == State::Active
    }

    /// The record of a lane starting now; a removed `previous` record of
    /// the feature passes on its unknown fields and its last report.
    pub fn started(n: &NewRecord<'_>, previous: Option<&LaneRecord>) -> LaneRecord {
        let (extra, last_report) = match previous {
            Some(p) => (p.extra.clone(), p.last_report.clone()),
            None => (Extra::new(), None),
        };
        LaneRecord {
            schema: SCHEMA.into(),
            feature: n.feature.into(),
            plan: n.plan.into(),
            owner: n.owner.into(),
            branch: branch_of(n.feature),
            path: n.path.into(),
            base: n.base.into(),
            base_commit: n.base_commit.to_string(),
            state: State::Active,
            created_at: n.now.into(),
            created_by: n.actor.into(),
            updated_at: n.now.into(),
            removed_at: None,
            removed_by: None,
            branch_kept: false,
            last_report,
            task: None,
            extra,
        }
    }

    /// This record marked removed by `actor` at `now`.
    pub fn removed(&self, actor: &str, now: &str, keep_branch: bool) -> LaneRecord {
        let mut record = self.clone();
        record.state = State::Removed;
        record.updated_at = now.to_string();
        record.removed_at = Some(now.to_string());
        record.removed_by = Some(actor.to_string());
        record.branch_kept = keep_branch;
        record
    }

    /// Why the lane's last report, a `blocked` one, no longer counts as
    /// blocked, if something answered it since: its task is done or
    /// cancelled (`task_closed`: that status), a handoff packet for the
    /// lane was written after it (`handoff_at`: the newest one's time), or
    /// the lane passed to another owner after it (an accept). The lane's
    /// next report replaces it. None: still blocked (or not a `blocked`
    /// report).
    pub fn blocked_cleared(
        &self,
        task_closed: Option<&str>,
        handoff_at: Option<&str>,
    ) -> Option<String> {
        let r = self.last_report.as_ref()?;
        if r.kind != LastReportKind::Blocked {
            return None;
        }
        if let Some(status) = task_closed {
            let task = self.task.as_deref().unwrap_or("-");
            return Some(format!("task {task} is {status}"));
        }
        if let Some(at) = handoff_at.filter(|at| *at >= r.at.as_str()) {
            return Some(format!("handed off at {at}"));
        }
        if self.owner != r.by && self.updated_at > r.at && !r.by.is_empty() {
            return Some(format!("passed to {} since", self.owner));
        }
        None
    }

    /// The last report if it is a `blocked` one that still counts.
    pub fn open_blocked(&self) -> Option<&LastReport> {
        self.last_report
            .as_ref()
            .filter(|r| r.kind == LastReportKind::Blocked && r.cleared.is_none())
    }

    /// This record with `report` as its last report.
    pub fn with_report(&self, report: &LastReport) -> LaneRecord {
        let mut record = self.clone();
        record.last_report = Some(report.clone());
        record.updated_at = report.at.clone();
        record
    }
}

/// The summary of `lane-started` (the lane record's event and the plan's
/// journal entry).
pub fn started_summary(feature: &str, branch: &str, base: &str, plan: &str) -> String {
    format!("lane {feature}: started on {branch} from {base} for plan {plan}")
}

/// The plan journal entry claiming the plan for the lane whose record is
/// `record` (the CAS on the plan makes one executor per plan hold).
pub fn claim_event(actor: &str, summary: String, feature: &str, record: &str) -> Event {
    Event::new("lane-started", actor, summary)
        .trailer("Swarm-Lane", feature)
        .trailer("Swarm-Lane-Record", record)
}

/// The lane record's `lane-removed` event.
pub fn removed_event(actor: &str, feature: &str, why: &str) -> Event {
    Event::new(
        "lane-removed",
        actor,
        format!("lane {feature}: removed ({why})"),
    )
    .trailer("Swarm-Lane", feature)
}

/// The lane record's event when it keeps a report as `last_report`.
pub fn report_event(feature: &str, report: &LastReport) -> Event {
    Event::new(
        "lane-report",
        &report.by,
        format!("lane {feature}: {}", report.text),
    )
    .trailer("Swarm-Lane", feature)
}

/// The lane record handed to `new_owner` working at `here` (the canonical
/// checkout; `moved`: it is not the record's path), and the journal event;
/// None when it is theirs there already.
pub fn handed(
    feature: &str,
    current: &LaneRecord,
    new_owner: &str,
    packet: &str,
    here: &str,
    moved: bool,
    now: &str,
) -> Option<(LaneRecord, Event)> {
    if current.owner == new_owner && !moved {
        return None;
    }
    let mut record = current.clone();
    let previous = std::mem::replace(&mut record.owner, new_owner.to_string());
    if moved {
        record.path = here.to_string();
    }
    record.updated_at = now.to_string();
    let event = Event::new(
        "handoff-accepted",
        new_owner,
        format!("lane {feature}: handed from {previous} to {new_owner} (packet {packet})"),
    )
    .trailer("Swarm-Packet", packet)
    .trailer("Swarm-Lane", feature.to_string());
    Some((record, event))
}

/// One lane as read from its ref.
#[derive(Debug, Clone)]
pub struct Lane {
    pub feature: String,
    pub record: LaneRecord,
    pub commit: ObjectId,
}

impl From<Versioned<LaneRecord>> for Lane {
    fn from(v: Versioned<LaneRecord>) -> Lane {
        Lane {
            feature: v.key,
            record: v.value,
            commit: v.commit,
        }
    }
}

fn parse(feature: &str, bytes: &[u8]) -> Result<LaneRecord> {
    let what = format!("{}:{RECORD_FILE}", lane_ref(feature));
    let rec: LaneRecord = yaml::parse(bytes, "swarm-lane", &what)?;
    yaml::check_identities(
        &what,
        &[("feature", &rec.feature), ("plan", &rec.plan)],
        &[("owner", &rec.owner)],
    )?;
    // What a lane is, checked on every read: a forged record naming another
    // lane's branch (or `main`, or an option) would otherwise take over that
    // lane's handoffs and forecasts.
    let invalid = |why: String| {
        Err(Error::new(
            Code::RecordInvalid,
            format!("{what}: {why}; it was not read"),
        )
        .hint(
            "git-swarm never writes such a record: find who published it with `git log` on its ref",
        ))
    };
    if rec.feature != feature {
        return invalid(format!(
            "it holds lane '{}' under the name '{feature}'",
            rec.feature
        ));
    }
    if rec.branch != branch_of(feature) {
        return invalid(format!(
            "it names the branch '{}'; lane {feature}'s branch is {}",
            rec.branch,
            branch_of(feature)
        ));
    }
    if rec.base.starts_with('-') || rec.base_commit.starts_with('-') {
        return invalid("its base starts with '-'".to_string());
    }
    Ok(rec)
}

impl Record for LaneRecord {
    const NAMESPACE: &'static str = "lanes";
    const KIND: &'static str = "lane";
    const DIVERGED: Diverged = Diverged::MergeJournals;
    type Key = String;

    crate::store::record_cache::json_cache!();
    fn to_files(&self) -> Result<Files> {
        yaml::yaml_file(RECORD_FILE, self)
    }
    fn from_files(files: &Files, feature: &String, _what: &str) -> Result<Self> {
        let bytes = files.get(RECORD_FILE).ok_or_else(|| {
            Error::new(
                Code::YamlInvalid,
                format!("{}:{RECORD_FILE} is missing", lane_ref(feature)),
            )
        })?;
        parse(feature, bytes)
    }
    /// A removed lane.
    fn is_finished(&self, _: &String, _: &dyn Fn(&str, &str) -> bool) -> bool {
        self.state() == State::Removed
    }
    /// A lane handed over on the published side (its owner or its path
    /// changed since the two sides parted) takes no write this clone made
    /// for its previous holder: the old owner's report after the handover
    /// is not merged into the new owner's lane.
    fn refuses_join(&self, base: &Self, published: &Self) -> Option<String> {
        rules::stale_owner_write(base, self, published)
    }
    const REFUSES_JOINS: bool = true;
}

#[cfg(test)]
mod tests {
    use super::*;

    const YAML: &str = "schema: swarm-lane/v1\nfeature: f\nplan: p\nowner: alice\nbranch: feat/f\npath: /w/f\nbase: main\nbase_commit: ''\nstate: paused\ncreated_at: ''\ncreated_by: ''\nupdated_at: ''\nwhatever: 1\n";

    #[test]
    fn unknown_states_and_fields_round_trip() {
        let mut files = Files::new();
        files.insert(RECORD_FILE.into(), YAML.as_bytes().to_vec());
        let rec = LaneRecord::from_files(&files, &"f".to_string(), "x").unwrap();
        assert_eq!(rec.state(), State::Other("paused".into()));
        assert!(!rec.is_active());
        assert!(!rec.is_finished(&"f".into(), &|_, _| false));
        let back = rec.to_files().unwrap();
        assert_eq!(String::from_utf8_lossy(&back[RECORD_FILE]), YAML);
    }

    #[test]
    fn states_parse_and_print() {
        for s in ["active", "removed", "other"] {
            assert_eq!(State::parse(s).as_str(), s);
        }
        assert_eq!(State::parse("active"), State::Active);
        assert_eq!(State::Removed.to_string(), "removed");
    }

    #[test]
    fn a_report_kind_a_newer_version_wrote_round_trips() {
        let yaml = YAML.replace(
            "whatever: 1\n",
            "last_report:\n  kind: reviewed\n  text: reviewed ok\n  at: ''\n  by: ''\n  commit: ''\nwhatever: 1\n",
        );
        let mut files = Files::new();
        files.insert(RECORD_FILE.into(), yaml.as_bytes().to_vec());
        let rec = LaneRecord::from_files(&files, &"f".to_string(), "x").unwrap();
        let report = rec.last_report.clone().unwrap();
        assert_eq!(report.kind, LastReportKind::Other("reviewed".into()));
        let back = rec.to_files().unwrap();
        assert_eq!(String::from_utf8_lossy(&back[RECORD_FILE]), yaml);
        for k in ["plan-ready", "pr-open", "blocked", "handoff", "done"] {
            assert_eq!(LastReportKind::parse(k).as_str(), k);
            assert!(!matches!(
                LastReportKind::parse(k),
                LastReportKind::Other(_)
            ));
        }
    }

    #[test]
    fn a_missing_file_is_yaml_invalid() {
        let e = LaneRecord::from_files(&Files::new(), &"f".to_string(), "x").unwrap_err();
        assert_eq!(e.code, Code::YamlInvalid);
        assert!(e
            .message
            .contains("refs/swarm/lanes/f:lane.yaml is missing"));
    }

    fn record() -> LaneRecord {
        let n = NewRecord {
            feature: "f",
            plan: "p",
            owner: "alice",
            path: "/w/f",
            base: "main",
            base_commit: ObjectId::null(gix::hash::Kind::Sha1),
            actor: "bob",
            now: "T0",
        };
        LaneRecord::started(&n, None)
    }

    #[test]
    fn a_started_record_is_active_on_its_branch() {
        let r = record();
        assert!(r.is_active());
        assert_eq!(r.branch, "feat/f");
        assert_eq!((r.created_by.as_str(), r.owner.as_str()), ("bob", "alice"));
        let removed = r.removed("carol", "T1", true);
        assert_eq!(removed.state(), State::Removed);
        assert!(removed.is_finished(&"f".into(), &|_, _| false));
        assert!(removed.branch_kept);
        assert_eq!(removed.removed_by.as_deref(), Some("carol"));
        let again = LaneRecord::started(
            &NewRecord {
                feature: "f",
                plan: "q",
                owner: "bob",
                path: "/w/f",
                base: "main",
                base_commit: ObjectId::null(gix::hash::Kind::Sha1),
                actor: "bob",
                now: "T2",
            },
            Some(&removed.with_report(&LastReport {
                kind: "done".into(),
                text: "done".into(),
                cleared: None,
                capacity: None,
                at: "T1".into(),
                by: "alice".into(),
                commit: String::new(),
                extra: Extra::new(),
            })),
        );
        assert!(again.is_active() && !again.branch_kept && again.removed_at.is_none());
        assert_eq!(again.last_report.unwrap().kind, "done");
    }

    #[test]
    fn a_new_record_is_written_as_before() {
        let yaml = String::from_utf8(record().to_files().unwrap()[RECORD_FILE].clone()).unwrap();
        let zero = "0".repeat(40);
        assert_eq!(
            yaml,
            format!("schema: swarm-lane/v1\nfeature: f\nplan: p\nowner: alice\nbranch: feat/f\npath: /w/f\nbase: main\nbase_commit: '{zero}'\nstate: active\ncreated_at: T0\ncreated_by: bob\nupdated_at: T0\n")
        );
    }

    #[test]
    fn handing_over_changes_owner_and_path_only_when_needed() {
        let r = record();
        assert!(handed("f", &r, "alice", "pk", "/w/f", false, "T1").is_none());
        let (to_bob, ev) = handed("f", &r, "bob", "pk", "/w/f", false, "T1").unwrap();
        assert_eq!(
            (to_bob.owner.as_str(), to_bob.path.as_str()),
            ("bob", "/w/f")
        );
        assert_eq!(ev.summary, "lane f: handed from alice to bob (packet pk)");
        let (moved, _) = handed("f", &r, "alice", "pk", "/x/f", true, "T1").unwrap();
        assert_eq!(
            (moved.owner.as_str(), moved.path.as_str()),
            ("alice", "/x/f")
        );
        assert_eq!(moved.updated_at, "T1");
    }
}
