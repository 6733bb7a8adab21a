//! The `plan` commands: new, show, list, save, checkout, log, the PR body,
//! close and reopen. Each returns an outcome whose `Serialize` is the
//! command's JSON; `crate::cli` renders the text.

use std::path::{Path, PathBuf};

use gix::ObjectId;
use serde::Serialize;

use crate::clock::rfc3339;
use crate::ctx::plan::{
    checked_out_at, checked_out_here, infer, io_error, plan_file_path, read_plan_file,
    remember_checkout, write_plan_file,
};
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::model::plan::{
    self as model, all, plan_ref, refuse_closed, refuse_secrets, require, save_conflict, Join,
    Plan, PlanDoc, PlanRecord, Status, TEXT_FILE,
};
use crate::names;
use crate::store::kind::Records;
use crate::store::record::{self, Unreadable};
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
}

/// `plan new`: create the plan ref; never touches an existing one.
pub fn new(ctx: &Ctx, args: NewPlan<'_>) -> Result<Created> {
    names::validate_name("plan", args.name)?;
    if let Some(parent) = args.parent {
        require(&ctx.store, parent)?;
    }
    let actor = ctx.actor()?;
    let refname = plan_ref(args.name);
    if ctx.store.ref_target(&refname)?.is_some() {
        return Err(Error::usage(
            "PLAN_EXISTS",
            format!("plan '{}' already exists", args.name),
        )
        .hint(format!(
            "see it with `git swarm plan show {}`, or pick another name",
            args.name
        )));
    }
    let now = rfc3339(ctx.store.clock.now());
    let mut record = PlanRecord::new(args.name, args.title, args.parent, &actor, &now);
    let text = read_from(ctx, &args, &mut record)?;
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
    let text = text.unwrap_or_else(|| model::template(&record.title, args.name));
    let doc = PlanDoc {
        record,
        text: Some(text),
    };
    let event = Event::new(
        "plan-created",
        &actor,
        format!("plan {}: created", args.name),
    );
    records(ctx)
        .create(&args.name.to_string(), &doc, &event)
        .map_err(|e| {
            if e.code == "CAS_FAILED" {
                Error::race(
                    "CAS_FAILED",
                    format!(
                        "plan '{}' was created by someone else at the same time",
                        args.name
                    ),
                )
                .hint(format!("see it with `git swarm plan show {}`", args.name))
            } else {
                e
            }
        })?;
    let plan = require(&ctx.store, args.name)?;
    Ok(Created {
        plan: Summary::from(&plan),
        refname,
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
        record::MAX_RECORD_BYTES as u64
    } else {
        crate::fsutil::MAX_TEXT
    };
    let bytes = crate::fsutil::read_input(path, limit)?;
    if !is_yaml {
        return utf8(bytes, path).map(Some);
    }
    let given: PlanRecord = record::parse(&bytes, "swarm-plan", &path.display().to_string())?;
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
        Error::usage(
            "YAML_INVALID",
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
        body: model::pr_body(&plan, name),
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

pub struct SaveArgs<'a> {
    pub name: Option<&'a str>,
    pub file: Option<&'a Path>,
    pub message: Option<&'a str>,
    pub contract: Option<&'a str>,
}

#[derive(Debug, Serialize)]
pub struct Saved {
    pub plan: String,
    pub changed: bool,
    /// The new version, or the plan's head when nothing changed.
    pub commit: String,
    /// The contract in force, when a new version was saved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contract: Option<String>,
    /// The plan had moved on since the file was checked out, and the file
    /// was merged with it (and now holds the result).
    pub merged: bool,
    #[serde(skip)]
    pub path: PathBuf,
    /// The plan's head before this save.
    #[serde(skip)]
    pub previous: ObjectId,
    #[serde(skip)]
    pub contract_changed: bool,
}

/// `plan save`: snapshot the worktree's plan file (or `--file`) into the
/// plan ref, merging in what others saved since it was checked out.
pub fn save(ctx: &Ctx, a: SaveArgs<'_>) -> Result<Saved> {
    let name = match a.name {
        Some(n) => n.to_string(),
        None => infer(ctx)?,
    };
    let plan = require(&ctx.store, &name)?;
    refuse_closed(&plan, &name, "save into it")?;
    let actor = ctx.actor()?;
    let path = match a.file {
        Some(f) => f.to_path_buf(),
        None => plan_file_path(ctx)?,
    };
    let bytes = match a.file {
        // Named on the command line: the user's choice, links followed.
        Some(f) => crate::fsutil::read_input(f, crate::fsutil::MAX_TEXT)?,
        None => {
            refuse_other_holder(ctx, &name, &path)?;
            read_plan_file(&path)?
        }
    };
    let file_text = utf8(bytes, &path)?;
    // The worktree whose plan file this is (None with --file). The version
    // it came from is the merge base: what others saved since then is
    // merged in, never overwritten.
    let tracked = ctx
        .store
        .workdir()
        .map(Path::to_path_buf)
        .filter(|_| a.file.is_none());
    let base = tracked
        .as_deref()
        .and_then(|w| checked_out_at(&ctx.store, w))
        .filter(|(p, _)| *p == name)
        .and_then(|(_, c)| c);
    let merged = merge_newer(ctx, &plan, base, &file_text)?;
    let new_text = merged.as_deref().unwrap_or(&file_text).to_string();
    let text_changed = plan.text.as_deref() != Some(new_text.as_str());
    let contract_changed = a.contract.is_some_and(|c| c != plan.record.contract);
    let mut saved = Saved {
        plan: name,
        changed: text_changed || contract_changed,
        commit: plan.head.commit.to_string(),
        contract: None,
        merged: merged.is_some(),
        path,
        previous: plan.head.commit,
        contract_changed,
    };
    let mut at = plan.head.commit;
    if saved.changed {
        let (contract, id) =
            write_saved(ctx, &plan, &saved.plan, &actor, &a, &file_text, &new_text)?;
        at = id;
        saved.commit = id.to_string();
        saved.contract = Some(contract);
    }
    if let Some(w) = &tracked {
        if merged.is_some() {
            // The file now shows the plan's text: the others' lines and ours.
            std::fs::write(&saved.path, new_text.as_bytes())
                .map_err(|e| io_error(&saved.path, e))?;
        }
        remember_checkout(&ctx.store, w, &saved.plan, at);
    }
    Ok(saved)
}

/// The worktree's plan file was checked out from another plan: saving it
/// into this one is refused (`PLAN_FILE_MISMATCH`).
fn refuse_other_holder(ctx: &Ctx, name: &str, path: &Path) -> Result<()> {
    match checked_out_here(ctx) {
        Some(holder) if holder != name => Err(Error::usage(
            "PLAN_FILE_MISMATCH",
            format!(
                "{} holds plan '{holder}' (it was checked out from it), not plan '{name}'",
                path.display()
            ),
        )
        .hint(format!(
            "save it where it belongs: `git swarm plan save {holder}`"
        ))
        .hint(format!(
            "to store this text in '{name}' on purpose: `git swarm plan save {name} --file {}`",
            path.display()
        ))),
        _ => Ok(()),
    }
}

/// Write the saved text (and contract) as the plan's next version, after
/// refusing secrets in it; the contract in force and the new commit.
fn write_saved(
    ctx: &Ctx,
    plan: &Plan,
    name: &str,
    actor: &str,
    a: &SaveArgs<'_>,
    file_text: &str,
    new_text: &str,
) -> Result<(String, ObjectId)> {
    let mut record = plan.record.clone();
    record.updated_at = rfc3339(ctx.store.clock.now());
    if let Some(c) = a.contract {
        record.contract = c.to_string();
    }
    let shown = match a.file {
        Some(f) => f.display().to_string(),
        None => ctx.settings.plan_file.clone(),
    };
    // The file as the user wrote it: its line numbers are the ones they can
    // find (lines merged in from others were checked when those were saved).
    refuse_secrets(
        &format!("saving plan '{name}'"),
        &record,
        Some((&shown, file_text)),
        &[("-m", a.message.unwrap_or(""))],
    )?;
    let summary = a
        .message
        .map(str::to_string)
        .unwrap_or_else(|| format!("plan {name}: saved"));
    let event = Event::new("plan-saved", actor, summary);
    let contract = record.contract.clone();
    let doc = PlanDoc {
        record,
        text: Some(new_text.to_string()),
    };
    let id = records(ctx).write(&name.to_string(), Some(plan.head.commit), &doc, &event)?;
    Ok((contract, id))
}

/// When the plan moved on since `base` (the version the file was checked
/// out from), a line-level three-way merge of the file with the plan's
/// head, as `sync` joins two journals. Some(merged text) when the plan
/// moved and the merge is clean; None when there is nothing to merge
/// (no base known, or the plan is still at it); `PLAN_SAVE_CONFLICT` when
/// both changed the same lines, so nobody's lines are dropped.
fn merge_newer(
    ctx: &Ctx,
    plan: &Plan,
    base: Option<ObjectId>,
    ours: &str,
) -> Result<Option<String>> {
    let Some(base) = base.filter(|b| *b != plan.head.commit) else {
        return Ok(None);
    };
    let theirs = plan.text.clone().unwrap_or_default();
    // A base that cannot be read (archived, or from another clone) gives
    // nothing to merge against: refuse rather than overwrite blindly.
    let base_text = match ctx.store.blob_at(base, TEXT_FILE) {
        Ok(t) => t.unwrap_or_default(),
        Err(_) => return Err(save_conflict(plan, base, false)),
    };
    match model::join(&base_text, ours, &theirs) {
        Join::Ours => Ok(None),
        Join::Theirs => Ok(Some(theirs)),
        Join::ThreeWay => {
            match ctx
                .store
                .git
                .merge_text(&base_text, ours.as_bytes(), theirs.as_bytes())?
            {
                Some(merged) => Ok(Some(String::from_utf8_lossy(&merged).into_owned())),
                None => Err(save_conflict(plan, base, true)),
            }
        }
    }
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
        model::refuse_busy(name, &work_in_progress(ctx, name)?)?;
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
    let lanes = crate::lane::all(&ctx.store)?
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
    let files = crate::store::kind::Record::to_files(&plan.doc(record))?;
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
