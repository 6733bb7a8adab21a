//! The plan record kind: the unit of continuity. A plan lives in
//! `refs/swarm/plans/<plan>` as `plan.yaml` (the record) and `PLAN.md` (the
//! text), never in a branch. Here: its serde types, its status, how it is
//! read (live or archived), and the pure rules of the plan commands.

use gix::ObjectId;
use serde::{Deserialize, Serialize};

use crate::error::{Code, Error, Result};
use crate::names;
use crate::store::records::{Diverged, Files, Record, Records, Versioned};
use crate::store::yaml::{self, Extra, Unreadable};
use crate::store::Store;

mod journal;

pub use journal::{catch_up, journal, newest_head};

pub const SCHEMA: &str = "swarm-plan/v1";
pub const RECORD_FILE: &str = "plan.yaml";
pub const TEXT_FILE: &str = "PLAN.md";
/// The plan record fields that may hold newlines.
pub const MULTILINE_FIELDS: &[&str] = &["contract"];
pub const TEMPLATE: &str = include_str!("../../templates/PLAN.md");
const PR_BODY: &str = include_str!("../../templates/pr-body.md");

/// Where every plan ref lives.
pub const PREFIX: &str = "refs/swarm/plans/";

pub fn plan_ref(plan: &str) -> String {
    format!("refs/swarm/plans/{plan}")
}

/// A plan's status. In YAML a plain string: `active` or `closed`; any
/// other value (a newer git-swarm's) is kept as it was read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Status {
    #[default]
    Active,
    Closed,
    Other(String),
}

impl Status {
    pub fn as_str(&self) -> &str {
        match self {
            Status::Active => "active",
            Status::Closed => "closed",
            Status::Other(s) => s,
        }
    }
    pub fn is_closed(&self) -> bool {
        *self == Status::Closed
    }
}

impl From<String> for Status {
    fn from(s: String) -> Self {
        match s.as_str() {
            "active" => Status::Active,
            "closed" => Status::Closed,
            _ => Status::Other(s),
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Status {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Status {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        String::deserialize(d).map(Status::from)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlanRecord {
    pub schema: String,
    /// The plan's name; a YAML given to `plan new --from` may leave it out.
    #[serde(default)]
    pub plan: String,
    #[serde(default)]
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// The contract in force; a handoff packet names it and `accept` checks it.
    #[serde(default = "default_contract")]
    pub contract: String,
    #[serde(default)]
    pub status: Status,
    #[serde(default)]
    pub created_at: String,
    #[serde(default)]
    pub created_by: String,
    #[serde(default)]
    pub updated_at: String,
    #[serde(flatten)]
    pub extra: Extra,
}

pub fn default_contract() -> String {
    "v1".into()
}

impl PlanRecord {
    /// A new plan's record, before `--from` adds to it.
    pub fn new(
        name: &str,
        title: Option<&str>,
        parent: Option<&str>,
        actor: &str,
        now: &str,
    ) -> Self {
        PlanRecord {
            schema: SCHEMA.into(),
            plan: name.into(),
            title: title.unwrap_or(name).into(),
            parent: parent.map(str::to_string),
            contract: default_contract(),
            status: Status::Active,
            created_at: now.into(),
            created_by: actor.into(),
            updated_at: now.into(),
            extra: Extra::new(),
        }
    }

    /// Take over what a plan record given as YAML (`plan new --from x.yaml`)
    /// says: its title and parent unless given on the command line, its
    /// contract and unknown fields; the name stays ours.
    pub fn adopt(&mut self, given: PlanRecord, title_given: bool, parent_given: bool) {
        if !title_given && !given.title.is_empty() {
            self.title = given.title;
        }
        if !parent_given {
            if let Some(p) = given.parent {
                self.parent = Some(p);
            }
        }
        self.contract = given.contract;
        self.extra = given.extra;
    }
}

/// The text a new plan starts with when none is given.
pub fn template(title: &str, plan: &str) -> String {
    TEMPLATE.replace("{title}", title).replace("{plan}", plan)
}

/// A plan as one record version holds it: `plan.yaml` and `PLAN.md`.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct PlanDoc {
    pub record: PlanRecord,
    pub text: Option<String>,
}

impl Record for PlanDoc {
    const NAMESPACE: &'static str = "plans";
    const KIND: &'static str = "plan";
    const DIVERGED: Diverged = Diverged::MergeJournals;
    type Key = String;
    const MULTILINE_FIELDS: &'static [&'static str] = MULTILINE_FIELDS;

    crate::store::record_cache::json_cache!();
    fn to_files(&self) -> Result<Files> {
        let mut files = Files::new();
        files.insert(RECORD_FILE.to_string(), yaml::to_yaml(&self.record)?);
        if let Some(text) = &self.text {
            files.insert(TEXT_FILE.to_string(), text.as_bytes().to_vec());
        }
        Ok(files)
    }
    fn from_files(files: &Files, plan: &String, _what: &str) -> Result<Self> {
        let what = format!("{}:{RECORD_FILE}", plan_ref(plan));
        let bytes = files
            .get(RECORD_FILE)
            .ok_or_else(|| Error::new(Code::YamlInvalid, format!("{what} is missing")))?;
        let record: PlanRecord = yaml::parse(bytes, "swarm-plan", &what)?;
        let text = files
            .get(TEXT_FILE)
            .map(|b| String::from_utf8_lossy(b).into_owned());
        Ok(PlanDoc { record, text })
    }
    /// A closed plan.
    fn is_finished(&self, _: &String, _: &dyn Fn(&str, &str) -> bool) -> bool {
        self.record.status.is_closed()
    }
}

/// The commit a plan was read at.
#[derive(Debug, Clone, Copy)]
pub struct Head {
    pub commit: ObjectId,
}

/// A plan as read from its ref.
#[derive(Debug, Clone)]
pub struct Plan {
    pub record: PlanRecord,
    pub text: Option<String>,
    pub head: Head,
}

impl From<Versioned<PlanDoc>> for Plan {
    fn from(v: Versioned<PlanDoc>) -> Self {
        Plan {
            record: v.value.record,
            text: v.value.text,
            head: Head { commit: v.commit },
        }
    }
}

impl Plan {
    /// The record and text, to write as the next version.
    pub fn doc(&self, record: PlanRecord) -> PlanDoc {
        PlanDoc {
            record,
            text: self.text.clone(),
        }
    }
}

/// Read a plan, live or archived by `gc`.
pub fn load(store: &Store, plan: &str) -> Result<Option<Plan>> {
    let Some(tip) = crate::store::archive::find_record(store, &plan_ref(plan))? else {
        return Ok(None);
    };
    Ok(Some(
        Records::<PlanDoc>::new(store)
            .at(&plan.to_string(), tip)?
            .into(),
    ))
}

/// A plan read from one commit of its ref (e.g. the mirror's).
pub fn from_record(plan: &str, head: crate::store::RecordCommit) -> Result<Plan> {
    let doc = PlanDoc::from_files(&head.files, &plan.to_string(), "")?;
    Ok(Plan {
        record: doc.record,
        text: doc.text,
        head: Head {
            commit: head.commit,
        },
    })
}

/// A plan that must exist (live or archived); `NOT_FOUND` (exit 2) otherwise.
pub fn require(store: &Store, plan: &str) -> Result<Plan> {
    names::validate_name("plan", plan)?;
    if let Some(found) = load(store, plan)? {
        return Ok(found);
    }
    let prefix = plan_ref("");
    let known: Vec<String> = store
        .list_refs(&prefix)
        .unwrap_or_default()
        .into_iter()
        .map(|(r, _)| r[prefix.len()..].to_string())
        .collect();
    let err = Error::new(Code::NotFound, format!("plan '{plan}' does not exist"));
    Err(
        names::did_you_mean(err, plan, known.iter().map(String::as_str)).hint(
            "list plans with `git swarm plan list`, or `git swarm sync` to fetch the shared ones",
        ),
    )
}

/// All plans that can be read, sorted by name, and those that cannot
/// (one bad record must not hide every other plan).
pub fn all(store: &Store) -> Result<(Vec<Plan>, Vec<Unreadable>)> {
    let (good, bad) = Records::<PlanDoc>::new(store).all()?;
    Ok((good.into_iter().map(Plan::from).collect(), bad))
}

/// Refuse plan content that looks like it holds a credential: the record's
/// fields (title, contract, whatever `--from` brought), the text line by
/// line, and the other words the command would store (`-m`). The plan is
/// the user's document, but `sync` publishes it to every clone and history
/// keeps it, so a secret in it is refused (`PLAN_SECRET`, naming the field
/// or the line) rather than stored. Control characters are refused too
/// (`TEXT_INVALID`).
pub fn refuse_secrets(
    subject: &str,
    record: &PlanRecord,
    text: Option<(&str, &str)>,
    fields: &[(&str, &str)],
) -> Result<()> {
    let value = serde_yaml_ng::to_value(record)
        .map_err(|e| Error::new(Code::Internal, format!("could not serialise a plan: {e}")))?;
    let mut findings = crate::secret::scan(&value);
    if let Some((name, text)) = text {
        findings.extend(crate::secret::scan_lines(name, text));
    }
    findings.extend(crate::secret::scan_fields(fields));
    if findings.is_empty() {
        crate::text::check_value(subject, &value, MULTILINE_FIELDS)?;
        return crate::text::check_fields(subject, fields);
    }
    Err(crate::secret::refusal(Code::PlanSecret, subject, &findings))
}

/// A closed plan is finished: starting a lane on it or saving new text
/// into it is refused until it is reopened.
pub fn refuse_closed(plan: &Plan, name: &str, doing: &str) -> Result<()> {
    if plan.record.status.is_closed() {
        return Err(Error::new(
            Code::PlanClosed,
            format!("plan '{name}' is closed: cannot {doing}"),
        )
        .hint(format!("reopen it first: `git swarm plan reopen {name}`")));
    }
    Ok(())
}

/// `PLAN_BUSY` when `busy` (active lanes, open child plans) is not empty.
pub fn refuse_busy(name: &str, busy: &[String]) -> Result<()> {
    if busy.is_empty() {
        return Ok(());
    }
    Err(Error::new(
        Code::PlanBusy,
        format!(
            "plan '{name}' still has work in progress: {}",
            busy.join(", ")
        ),
    )
    .hint("finish or remove it first (`git swarm lane rm`, `git swarm plan close <child>`)")
    .hint("or close anyway with --force"))
}

/// How `plan save` joins the worktree's file (ours) with the plan's head
/// text (theirs), given the text of the version the file was checked out
/// from (base).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Join {
    /// The plan did not change since the base: save ours as it is.
    Ours,
    /// Only the plan changed: the file takes the plan's text.
    Theirs,
    /// Both changed: a line-level three-way merge decides.
    ThreeWay,
}

/// The pure part of the save decision.
pub fn join(base: &[u8], ours: &str, theirs: &str) -> Join {
    if base == theirs.as_bytes() {
        Join::Ours
    } else if ours.as_bytes() == base {
        Join::Theirs
    } else {
        Join::ThreeWay
    }
}

/// `PLAN_SAVE_CONFLICT`: the plan moved from `base` to `plan`'s head and the
/// two cannot be merged (`overlap`: both changed the same lines; else the
/// base cannot be read here). Nothing is saved.
pub fn save_conflict(plan: &Plan, base: ObjectId, overlap: bool) -> Error {
    let name = &plan.record.plan;
    let newer = crate::store::short(plan.head.commit);
    let why = if overlap {
        "and both changed the same lines"
    } else {
        "and that version cannot be read here to merge with"
    };
    Error::new(
        Code::PlanSaveConflict,
        format!(
            "plan '{name}' moved to {newer} since the plan file was checked out from {} {why}; nothing was saved",
            crate::store::short(base)
        ),
    )
    .hint(format!("see the newer text: git show {}:{TEXT_FILE}", plan.head.commit))
    .hint(format!(
        "keep a copy of your file, `git swarm plan checkout {name} --force`, re-apply your edits, then `git swarm plan save {name}`"
    ))
    .with_detail(serde_json::json!({
        "plan": name,
        "newer": plan.head.commit.to_string(),
        "base": base.to_string(),
    }))
}

/// A pull-request body that folds the plan in, so the plan travels with
/// the PR instead of being committed.
pub fn pr_body(plan: &Plan, name: &str) -> String {
    PR_BODY
        .replace("{title}", &plan.record.title)
        .replace("{plan}", name)
        .replace("{commit}", &plan.head.commit.to_string())
        .replace(
            "{plan_text}",
            plan.text.as_deref().unwrap_or("(no plan text)").trim_end(),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(status: Status) -> Plan {
        let mut record = PlanRecord::new("p", None, None, "ann", "2026-01-01T00:00:00Z");
        record.status = status;
        Plan {
            record,
            text: Some("line\n".into()),
            head: Head {
                commit: ObjectId::null(gix::hash::Kind::Sha1),
            },
        }
    }

    #[test]
    fn status_round_trips_known_and_unknown_values() {
        for (yaml, want) in [
            ("active", Status::Active),
            ("closed", Status::Closed),
            ("paused", Status::Other("paused".into())),
        ] {
            let text = format!("schema: swarm-plan/v1\nplan: p\nstatus: {yaml}\n");
            let rec: PlanRecord = yaml::parse(text.as_bytes(), "swarm-plan", "t").unwrap();
            assert_eq!(rec.status, want);
            let out = String::from_utf8(yaml::to_yaml(&rec).unwrap()).unwrap();
            assert!(out.contains(&format!("status: {yaml}\n")), "{out}");
        }
        let rec: PlanRecord = yaml::parse(b"schema: swarm-plan/v1\n", "swarm-plan", "t").unwrap();
        assert_eq!(rec.status, Status::Active);
        assert_eq!(rec.contract, "v1");
    }

    #[test]
    fn a_doc_round_trips_through_its_files() {
        let doc = plan(Status::Closed).doc(PlanRecord::new("p", Some("T"), Some("q"), "a", "n"));
        let files = doc.to_files().unwrap();
        assert_eq!(files[TEXT_FILE], b"line\n");
        let back = PlanDoc::from_files(&files, &"p".into(), "").unwrap();
        assert_eq!(back.record.title, "T");
        assert_eq!(back.record.parent.as_deref(), Some("q"));
        assert_eq!(back.text.as_deref(), Some("line\n"));
        let none = PlanDoc::from_files(&Files::new(), &"p".into(), "").unwrap_err();
        assert_eq!(none.code, Code::YamlInvalid);
        assert!(none.message.contains("refs/swarm/plans/p:plan.yaml"));
    }

    #[test]
    fn only_a_closed_plan_is_finished() {
        let never = |_: &str, _: &str| false;
        let active = PlanDoc {
            record: plan(Status::Active).record,
            text: None,
        };
        assert!(!active.is_finished(&"p".into(), &never));
        let closed = PlanDoc {
            record: plan(Status::Closed).record,
            text: None,
        };
        assert!(closed.is_finished(&"p".into(), &never));
    }

    #[test]
    fn a_given_record_adopts_what_the_command_line_leaves_open() {
        let mut rec = PlanRecord::new("p", None, None, "a", "n");
        let mut given = PlanRecord::new("other", Some("Given"), Some("parent"), "b", "m");
        given.contract = "v7".into();
        rec.adopt(given.clone(), false, false);
        assert_eq!((rec.plan.as_str(), rec.title.as_str()), ("p", "Given"));
        assert_eq!(rec.parent.as_deref(), Some("parent"));
        assert_eq!(rec.contract, "v7");
        let mut rec = PlanRecord::new("p", Some("Mine"), None, "a", "n");
        rec.adopt(given, true, true);
        assert_eq!((rec.title.as_str(), rec.parent), ("Mine", None));
    }

    #[test]
    fn a_closed_plan_refuses_and_a_busy_one_too() {
        assert!(refuse_closed(&plan(Status::Active), "p", "save").is_ok());
        let e = refuse_closed(&plan(Status::Closed), "p", "save into it").unwrap_err();
        assert_eq!(e.code, Code::PlanClosed);
        assert_eq!(e.message, "plan 'p' is closed: cannot save into it");
        assert!(refuse_busy("p", &[]).is_ok());
        let e = refuse_busy("p", &["lane a".into(), "child plan c".into()]).unwrap_err();
        assert_eq!(e.code, Code::PlanBusy);
        assert!(e.message.ends_with("lane a, child plan c"), "{}", e.message);
    }

    #[test]
    fn secrets_in_plan_content_are_refused_naming_where() {
        let rec = plan(Status::Active).record;
        assert!(refuse_secrets("s", &rec, Some(("PLAN.md", "fine\n")), &[("-m", "ok")]).is_ok());
        let key = format!("{}{}", "AKIA", "IOSFODNN7EXAMPLE");
        let e =
            refuse_secrets("s", &rec, Some(("PLAN.md", &format!("a\n{key}\n"))), &[]).unwrap_err();
        assert_eq!(e.code, Code::PlanSecret);
        let mut titled = rec.clone();
        titled.title = key.clone();
        assert_eq!(
            refuse_secrets("s", &titled, None, &[]).unwrap_err().code,
            Code::PlanSecret
        );
        let e = refuse_secrets("s", &rec, None, &[("-m", &key)]).unwrap_err();
        assert_eq!(e.code, Code::PlanSecret);
        let e = refuse_secrets("s", &rec, None, &[("-m", "a\u{1b}b")]).unwrap_err();
        assert_eq!(e.code, Code::TextInvalid);
        let mut multi = rec;
        multi.contract = "two\nlines".into();
        assert!(refuse_secrets("s", &multi, None, &[]).is_ok());
    }

    #[test]
    fn the_save_join_is_decided_by_who_changed_the_text() {
        assert_eq!(join(b"a\n", "b\n", "a\n"), Join::Ours);
        assert_eq!(join(b"a\n", "a\n", "c\n"), Join::Theirs);
        assert_eq!(join(b"a\n", "b\n", "c\n"), Join::ThreeWay);
        assert_eq!(join(b"", "", ""), Join::Ours);
    }

    #[test]
    fn a_save_conflict_names_both_versions() {
        let p = plan(Status::Active);
        let base = ObjectId::from_hex(b"1111111111111111111111111111111111111111").unwrap();
        let e = save_conflict(&p, base, true);
        assert_eq!(e.code, Code::PlanSaveConflict);
        assert!(e.message.contains("both changed the same lines"));
        assert!(
            e.message.contains("checked out from 111111111111"),
            "{}",
            e.message
        );
        let e = save_conflict(&p, base, false);
        assert!(e.message.contains("cannot be read here"));
    }

    #[test]
    fn the_pr_body_and_template_fill_in_the_plan() {
        let p = plan(Status::Active);
        let body = pr_body(&p, "p");
        assert!(body.contains("line"));
        assert!(!body.contains("{plan_text}") && !body.contains("{plan}"));
        let t = template("Title", "p");
        assert!(t.starts_with("# Title\n"));
        assert!(t.contains("refs/swarm/plans/p"));
        assert_eq!(plan_ref("p"), "refs/swarm/plans/p");
    }
}
