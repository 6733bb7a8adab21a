//! The `plan` commands: new, show, list, save, checkout, log, the PR body,
//! close and reopen. Each returns an outcome whose `Serialize` is the
//! command's JSON; `crate::cli` renders the text.

mod save;

pub use save::{save, SaveArgs, Saved};

use std::path::Path;

use serde::Serialize;

use crate::clock::rfc3339;
use crate::error::{Code, Error, Result};
use crate::names;
use crate::records::plan::{
    self, all, plan_ref, refuse_secrets, require, Plan, PlanDoc, PlanRecord, Status,
};
use crate::session::plan::{infer, plan_file_path, write_plan_file};
use crate::session::Ctx;
use crate::store::records::{Publication, Records, Update};
use crate::store::yaml::{self, Unreadable};
use crate::store::{Event, JournalEntry};

/// A plan as listings and `plan new`/`plan show` give it in JSON.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub plan: String,
    pub title: String,
    pub parent: Option<String>,
    pub contract: String,
    pub status: Status,
    pub commit: String,
    pub has_text: bool,
}

impl From<&Plan> for Summary {
    fn from(plan: &Plan) -> Self {
        Summary {
            plan: plan.record.plan.clone(),
            title: plan.record.title.clone(),
            parent: plan.record.parent.clone(),
            contract: plan.record.contract.clone(),
            status: plan.record.status.clone(),
            commit: plan.head.commit.to_string(),
            has_text: plan.text.is_some(),
        }
    }
}

fn records(ctx: &Ctx) -> Records<'_, PlanDoc> {
    Records::new(&ctx.store)
}

pub struct NewPlan<'a> {
    pub name: &'a str,
    pub title: Option<&'a str>,
    pub parent: Option<&'a str>,
    pub from: Option<&'a Path>,
}

#[derive(Debug, Serialize)]
pub struct Created {
    #[serde(flatten)]
    pub plan: Summary,
    #[serde(skip)]
    pub refname: String,
    pub publication: Publication,
    /// The plan existed already exactly as this command creates it (a
    /// repeat, e.g. of a run killed after its push): nothing was written.
    pub already: bool,
}

/// Whether `existing` is the plan `doc` would create: the same name,
/// creator, parent, title, contract, status, text and fields, whenever it
/// was created.
fn same_creation(existing: &PlanDoc, doc: &PlanDoc) -> bool {
    let undated = |d: &PlanDoc| {
        let mut d = d.clone();
        d.record.created_at.clear();
        d.record.updated_at.clear();
        serde_json::to_value(&d).ok()
    };
    let (a, b) = (undated(existing), undated(doc));
    a.is_some() && a == b
}

/// `plan new`: create the plan ref; never touches an existing one. A
/// repeat whose plan exists exactly as it would create it succeeds
/// (`already`); any other existing plan is `PLAN_EXISTS`.
pub fn new(ctx: &Ctx, args: NewPlan<'_>) -> Result<Created> {
    names::validate_name("plan", args.name)?;
    if let Some(parent) = args.parent {
        require(&ctx.store, parent)?;
    }
    let actor = ctx.actor()?;
    let refname = plan_ref(args.name);
    let exists = |by: &str| {
        Error::new(
            Code::PlanExists,
            format!("plan '{}' already exists{by}", args.name),
        )
        .hint(format!(
            "see it with `git swarm plan show {}`, or pick another name",
            args.name
        ))
    };
    let local = ctx.store.ref_target(&refname)?;
    let doc = new_doc(ctx, &args, &actor)?;
    if let Some(head) = local {
        let known = records(ctx).at(&args.name.to_string(), head)?;
        if !same_creation(&known.value, &doc) {
            return Err(exists(""));
        }
    }
    let event = Event::new(
        "plan-created",
        &actor,
        format!("plan {}: created", args.name),
    );
    // Fetched first: a plan another clone published is refused here, at
    // once, never joined later as a PLAN_CONFLICT by `sync`.
    let mut decided_absent = false;
    let mut already = false;
    let written = records(ctx).publish(ctx.remote(), &args.name.to_string(), |current| {
        match current {
            // A lost race: this command decided on an absent plan and
            // another writer created it first.
            Some(_) if decided_absent => Err(Error::new(
                Code::CasFailed,
                format!(
                    "plan '{}' was created by someone else at the same time",
                    args.name
                ),
            )
            .hint(format!("see it with `git swarm plan show {}`", args.name))),
            // This very creation, published already (a repeat): kept.
            Some(other) if same_creation(&other.value, &doc) => {
                already = true;
                Ok(Update::Keep)
            }
            Some(other) => Err(exists(&format!(
                " (published by {}; this clone had not fetched it)",
                other.value.record.created_by
            ))),
            None => {
                decided_absent = true;
                Ok(Update::Write(doc.clone(), event.clone()))
            }
        }
    })?;
    let plan = require(&ctx.store, args.name)?;
    Ok(Created {
        plan: Summary::from(&plan),
        refname,
        publication: written.publication,
        already,
    })
}

/// The new plan's record and text: from `--from FILE` (a plan record or
/// its text), else the template; refused when it holds a secret.
fn new_doc(ctx: &Ctx, args: &NewPlan<'_>, actor: &str) -> Result<PlanDoc> {
    let now = rfc3339(ctx.store.clock.now());
    let mut record = PlanRecord::new(args.name, args.title, args.parent, actor, &now);
    let text = read_from(ctx, args, &mut record)?;
    // The template's text derives from the record: scanning the record
    // covers it; text given with --from is scanned line by line.
    let from_name = args.from.map(|p| p.display().to_string());
    refuse_secrets(
        &format!("plan '{}'", args.name),
        &record,
        text.as_deref()
            .zip(from_name.as_deref())
            .map(|(t, n)| (n, t)),
        &[],
    )?;
    let text = text.unwrap_or_else(|| plan::template(&record.title, args.name));
    Ok(PlanDoc {
        record,
        text: Some(text),
    })
}

/// What `plan new --from FILE` brings: a plan record given as YAML adopted
/// into `record` (its parent must exist), or the plan text.
fn read_from(ctx: &Ctx, args: &NewPlan<'_>, record: &mut PlanRecord) -> Result<Option<String>> {
    let Some(path) = args.from else {
        return Ok(None);
    };
    let is_yaml = matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml")
    );
    let limit = if is_yaml {
        yaml::MAX_RECORD_BYTES as u64
    } else {
        crate::fsutil::MAX_TEXT
    };
    let bytes = crate::fsutil::read_input(path, limit)?;
    if !is_yaml {
        return utf8(bytes, path).map(Some);
    }
    let given: PlanRecord = yaml::parse(&bytes, "swarm-plan", &path.display().to_string())?;
    if args.parent.is_none() {
        if let Some(p) = &given.parent {
            require(&ctx.store, p)?;
        }
    }
    record.adopt(given, args.title.is_some(), args.parent.is_some());
    Ok(None)
}

fn utf8(bytes: Vec<u8>, path: &Path) -> Result<String> {
    String::from_utf8(bytes).map_err(|_| {
        Error::new(
            Code::YamlInvalid,
            format!("{} is not UTF-8 text", path.display()),
        )
    })
}

#[derive(Debug, Serialize)]
pub struct Shown {
    #[serde(flatten)]
    pub summary: Summary,
    pub text: Option<String>,
    pub record: PlanRecord,
}

/// `plan show`
pub fn show(ctx: &Ctx, name: &str) -> Result<Shown> {
    let plan = require(&ctx.store, name)?;
    Ok(Shown {
        summary: Summary::from(&plan),
        text: plan.text,
        record: plan.record,
    })
}

#[derive(Debug, Serialize)]
pub struct Listed {
    pub plans: Vec<Summary>,
    #[serde(skip)]
    pub unreadable: Vec<Unreadable>,
}

/// `plan list`
pub fn list(ctx: &Ctx) -> Result<Listed> {
    let (plans, unreadable) = all(&ctx.store)?;
    Ok(Listed {
        plans: plans.iter().map(Summary::from).collect(),
        unreadable,
    })
}

#[derive(Debug, Serialize)]
pub struct Log {
    pub plan: String,
    pub entries: Vec<JournalEntry>,
}

/// `plan log`: the journal, newest first.
pub fn log(ctx: &Ctx, name: &str) -> Result<Log> {
    let plan = require(&ctx.store, name)?;
    Ok(Log {
        plan: name.to_string(),
        entries: ctx.store.journal(plan.head.commit, None)?,
    })
}

#[derive(Debug, Serialize)]
pub struct PrBody {
    pub plan: String,
    pub body: String,
}

/// `plan show --pr-body`: a pull-request body that folds the plan in, so the
/// plan travels with the PR instead of being committed.
pub fn pr_body(ctx: &Ctx, name: &str) -> Result<PrBody> {
    let plan = require(&ctx.store, name)?;
    Ok(PrBody {
        plan: name.to_string(),
        body: plan::pr_body(&plan, name),
    })
}

#[derive(Debug, Serialize)]
pub struct CheckedOut {
    pub plan: String,
    pub path: String,
    pub written: bool,
    pub commit: String,
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// `plan checkout`: write the plan text as an untracked file. Without a
/// name, the plan of the lane we are in, or the only plan.
pub fn checkout(ctx: &Ctx, name: Option<&str>, force: bool) -> Result<CheckedOut> {
    let name = match name {
        Some(n) => n.to_string(),
        None => infer(ctx)?,
    };
    let plan = require(&ctx.store, &name)?;
    let path = plan_file_path(ctx)?;
    let written = write_plan_file(&ctx.store, &plan, &path, force)?;
    let mut warnings = Vec::new();
    if let Some(lane) = ctx.lane_here() {
        if lane.record.plan != name {
            warnings.push(format!(
                "this is lane {}'s worktree, whose plan is '{}': `plan save` here now saves to '{name}'",
                lane.feature, lane.record.plan
            ));
        }
    }
    Ok(CheckedOut {
        plan: name,
        path: path.display().to_string(),
        written,
        commit: plan.head.commit.to_string(),
        warnings,
    })
}

#[derive(Debug, Serialize)]
pub struct StatusChange {
    pub plan: String,
    pub changed: bool,
    pub status: Status,
    /// The new version, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// `plan reopen` of a plan `gc` archived: its live ref is back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unarchived: Option<bool>,
}

/// `plan close`: mark the plan finished (status: closed). A closed plan and
/// its released leader record may later be archived by `gc`.
pub fn close(ctx: &Ctx, name: &str, force: bool) -> Result<StatusChange> {
    let plan = require(&ctx.store, name)?;
    let actor = ctx.actor()?;
    let mut out = StatusChange {
        plan: name.to_string(),
        changed: false,
        status: Status::Closed,
        commit: None,
        unarchived: None,
    };
    if plan.record.status.is_closed() {
        return Ok(out);
    }
    if !force {
        plan::refuse_busy(name, &work_in_progress(ctx, name)?)?;
    }
    let mut record = plan.record.clone();
    record.status = Status::Closed;
    record.updated_at = rfc3339(ctx.store.clock.now());
    let event = Event::new("plan-closed", &actor, format!("plan {name}: closed"));
    let id = records(ctx).write(
        &name.to_string(),
        Some(plan.head.commit),
        &plan.doc(record),
        &event,
    )?;
    out.changed = true;
    out.commit = Some(id.to_string());
    Ok(out)
}

/// The active lanes and open child plans of plan `name`.
fn work_in_progress(ctx: &Ctx, name: &str) -> Result<Vec<String>> {
    let lanes = crate::records::lane::all(&ctx.store)?
        .0
        .into_iter()
        .filter(|l| l.record.is_active() && l.record.plan == name)
        .map(|l| format!("lane {}", l.feature));
    let children = all(&ctx.store)?
        .0
        .into_iter()
        .filter(|p| p.record.parent.as_deref() == Some(name) && !p.record.status.is_closed())
        .map(|p| format!("child plan {}", p.record.plan));
    Ok(lanes.chain(children).collect())
}

/// `plan reopen`: the inverse of `plan close` (status: active again), journalled
/// as `plan-reopened`. A plan that gc archived gets its live ref back, its
/// new version continuing the archived history.
pub fn reopen(ctx: &Ctx, name: &str) -> Result<StatusChange> {
    let plan = require(&ctx.store, name)?;
    let actor = ctx.actor()?;
    if !plan.record.status.is_closed() {
        return Ok(StatusChange {
            plan: name.to_string(),
            changed: false,
            status: plan.record.status,
            commit: None,
            unarchived: None,
        });
    }
    let mut record = plan.record.clone();
    record.status = Status::Active;
    record.updated_at = rfc3339(ctx.store.clock.now());
    let files = crate::store::records::Record::to_files(&plan.doc(record))?;
    let event = Event::new("plan-reopened", &actor, format!("plan {name}: reopened"));
    let refname = plan_ref(name);
    // Live: move it by CAS. Archived by gc: no live ref, so it must not
    // exist yet, and the new version's parent is the archived tip.
    let live = ctx.store.ref_target(&refname)?;
    let tree = ctx.store.write_tree(&files)?;
    let id = ctx.store.commit(tree, &[plan.head.commit], &event)?;
    ctx.store
        .cas(&refname, live, Some(id), &actor, &event.summary)?;
    Ok(StatusChange {
        plan: name.to_string(),
        changed: true,
        status: Status::Active,
        commit: Some(id.to_string()),
        unarchived: Some(live.is_none()),
    })
}
