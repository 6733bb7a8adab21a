//! Plans: the unit of continuity. A plan lives in `refs/swarm/plans/<plan>`
//! as `plan.yaml` (the record) and `PLAN.md` (the text), never in a branch;
//! `plan checkout` writes the text back as an untracked file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::clock::rfc3339;
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::names;
use crate::output::Output;
use crate::store::record::{self, Extra};
use crate::store::{Event, JournalEntry, Record, Store};

pub const SCHEMA: &str = "swarm-plan/v1";
pub const RECORD_FILE: &str = "plan.yaml";
pub const TEXT_FILE: &str = "PLAN.md";
const TEMPLATE: &str = include_str!("../templates/PLAN.md");

pub fn plan_ref(plan: &str) -> String {
    format!("refs/swarm/plans/{plan}")
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
    #[serde(default = "default_status")]
    pub status: String,
    #[serde(default)]
    pub created_at: String,
    #[serde(default)]
    pub created_by: String,
    #[serde(default)]
    pub updated_at: String,
    #[serde(flatten)]
    pub extra: Extra,
}

fn default_contract() -> String {
    "v1".into()
}
fn default_status() -> String {
    "active".into()
}

/// A plan as read from its ref.
#[derive(Debug, Clone)]
pub struct Plan {
    pub record: PlanRecord,
    pub text: Option<String>,
    pub head: Record,
}

/// Read a plan, live or archived by `gc`.
pub fn load(store: &Store, plan: &str) -> Result<Option<Plan>> {
    let Some(tip) = crate::gc::find_record(store, &plan_ref(plan))? else {
        return Ok(None);
    };
    from_record(plan, store.read_commit(tip)?).map(Some)
}

pub fn from_record(plan: &str, head: Record) -> Result<Plan> {
    let bytes = head.file(RECORD_FILE).ok_or_else(|| {
        Error::usage(
            "YAML_INVALID",
            format!("{}:{RECORD_FILE} is missing", plan_ref(plan)),
        )
    })?;
    let record: PlanRecord = record::parse(
        bytes,
        "swarm-plan",
        &format!("{}:{RECORD_FILE}", plan_ref(plan)),
    )?;
    let text = head
        .file(TEXT_FILE)
        .map(|b| String::from_utf8_lossy(b).into_owned());
    Ok(Plan { record, text, head })
}

pub fn require(store: &Store, plan: &str) -> Result<Plan> {
    names::validate_name("plan", plan)?;
    load(store, plan)?.ok_or_else(|| {
        Error::usage("NOT_FOUND", format!("plan '{plan}' does not exist")).hint(
            "list plans with `git swarm plan list`, or `git swarm sync` to fetch the shared ones",
        )
    })
}

fn files(record: &PlanRecord, text: Option<&str>) -> Result<BTreeMap<String, Vec<u8>>> {
    let mut files = BTreeMap::new();
    files.insert(RECORD_FILE.to_string(), record::to_yaml(record)?);
    if let Some(text) = text {
        files.insert(TEXT_FILE.to_string(), text.as_bytes().to_vec());
    }
    Ok(files)
}

#[derive(Serialize)]
struct PlanSummary<'a> {
    plan: &'a str,
    title: &'a str,
    parent: Option<&'a str>,
    contract: &'a str,
    status: &'a str,
    commit: String,
    has_text: bool,
}

fn summary(plan: &Plan) -> PlanSummary<'_> {
    PlanSummary {
        plan: &plan.record.plan,
        title: &plan.record.title,
        parent: plan.record.parent.as_deref(),
        contract: &plan.record.contract,
        status: &plan.record.status,
        commit: plan.head.commit.to_string(),
        has_text: plan.text.is_some(),
    }
}

pub struct NewPlan<'a> {
    pub name: &'a str,
    pub title: Option<&'a str>,
    pub parent: Option<&'a str>,
    pub from: Option<&'a Path>,
}

/// `plan new`: create the plan ref; never touches an existing one.
pub fn new(ctx: &Ctx, args: NewPlan<'_>) -> Result<Output> {
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
    let mut record = PlanRecord {
        schema: SCHEMA.into(),
        plan: args.name.into(),
        title: args.title.unwrap_or(args.name).into(),
        parent: args.parent.map(str::to_string),
        contract: default_contract(),
        status: default_status(),
        created_at: now.clone(),
        created_by: actor.clone(),
        updated_at: now,
        extra: Extra::new(),
    };
    let mut text = None;
    if let Some(path) = args.from {
        let bytes = read_file(path)?;
        let is_yaml = matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml")
        );
        if is_yaml {
            // A plan record given as YAML: keep its fields, the name is ours.
            let given: PlanRecord =
                record::parse(&bytes, "swarm-plan", &path.display().to_string())?;
            if args.title.is_none() && !given.title.is_empty() {
                record.title = given.title;
            }
            if args.parent.is_none() {
                if let Some(p) = given.parent {
                    require(&ctx.store, &p)?;
                    record.parent = Some(p);
                }
            }
            record.contract = given.contract;
            record.extra = given.extra;
        } else {
            text = Some(String::from_utf8(bytes).map_err(|_| {
                Error::usage(
                    "YAML_INVALID",
                    format!("{} is not UTF-8 text", path.display()),
                )
            })?);
        }
    }
    if text.is_none() {
        text = Some(
            TEMPLATE
                .replace("{title}", &record.title)
                .replace("{plan}", args.name),
        );
    }
    let files = files(&record, text.as_deref())?;
    let event = Event::new(
        "plan-created",
        &actor,
        format!("plan {}: created", args.name),
    );
    ctx.store
        .write(&refname, None, &files, &event)
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
    let text = format!(
        "created plan {} ({})\nedit it with `git swarm plan checkout {}`, then `git swarm plan save {}`\n",
        args.name, refname, args.name, args.name
    );
    Ok(Output::new(summary(&plan), text))
}

/// `plan show`
pub fn show(ctx: &Ctx, name: &str) -> Result<Output> {
    let plan = require(&ctx.store, name)?;
    let r = &plan.record;
    let mut text = format!("plan:     {}\ntitle:    {}\n", r.plan, r.title);
    if let Some(p) = &r.parent {
        text.push_str(&format!("parent:   {p}\n"));
    }
    text.push_str(&format!(
        "contract: {}\nstatus:   {}\ncreated:  {} by {}\nupdated:  {}\ncommit:   {}\n",
        r.contract, r.status, r.created_at, r.created_by, r.updated_at, plan.head.commit
    ));
    if let Some(t) = &plan.text {
        text.push('\n');
        text.push_str(t);
        if !t.ends_with('\n') {
            text.push('\n');
        }
    }
    let mut json = serde_json::to_value(summary(&plan)).expect("serialisable");
    json["text"] = serde_json::json!(plan.text);
    json["record"] = serde_json::to_value(&plan.record).expect("serialisable");
    Ok(Output {
        json,
        text,
        exit: 0,
        warnings: Vec::new(),
    })
}

/// All plans, sorted by name.
pub fn all(store: &Store) -> Result<Vec<Plan>> {
    let mut out = Vec::new();
    for (refname, id) in store.list_refs("refs/swarm/plans/")? {
        let name = refname.trim_start_matches("refs/swarm/plans/");
        out.push(from_record(name, store.read_commit(id)?)?);
    }
    Ok(out)
}

/// `plan list`
pub fn list(ctx: &Ctx) -> Result<Output> {
    let plans = all(&ctx.store)?;
    let mut text = String::new();
    if plans.is_empty() {
        text.push_str("no plans yet: create one with `git swarm plan new <plan>`\n");
    }
    for p in &plans {
        let parent = p
            .record
            .parent
            .as_deref()
            .map(|x| format!(" (child of {x})"))
            .unwrap_or_default();
        text.push_str(&format!(
            "{:<24} {:<8} {}{}\n",
            p.record.plan, p.record.status, p.record.title, parent
        ));
    }
    let json: Vec<_> = plans.iter().map(summary).collect();
    Ok(Output::new(serde_json::json!({ "plans": json }), text))
}

/// The plan a command means when none is named: the plan whose text was
/// checked out here, else the plan of the lane we are in, else the only plan.
pub fn infer(ctx: &Ctx) -> Result<String> {
    if let Some(plan) = checked_out_here(ctx) {
        if ctx.store.ref_target(&plan_ref(&plan))?.is_some() {
            return Ok(plan);
        }
    }
    if let Some(lane) = ctx.lane_here() {
        return Ok(lane.record.plan);
    }
    let plans = ctx.store.list_refs("refs/swarm/plans/")?;
    match plans.as_slice() {
        [(only, _)] => Ok(only.trim_start_matches("refs/swarm/plans/").to_string()),
        [] => Err(Error::usage("NOT_FOUND", "there is no plan yet")
            .hint("create one with `git swarm plan new <plan>`")),
        _ => Err(Error::usage("USAGE", "several plans exist: say which one")
            .hint("pass the plan name (or --plan P); `git swarm plan list` shows them")),
    }
}

/// Where the plan file lives in this worktree.
pub fn plan_file_path(ctx: &Ctx) -> Result<PathBuf> {
    Ok(ctx.store.workdir_or_err()?.join(&ctx.settings.plan_file))
}

/// `plan save`: snapshot the worktree's plan file into the plan ref.
pub fn save(
    ctx: &Ctx,
    name: Option<&str>,
    file: Option<&Path>,
    message: Option<&str>,
    contract: Option<&str>,
) -> Result<Output> {
    let name = match name {
        Some(n) => n.to_string(),
        None => infer(ctx)?,
    };
    let plan = require(&ctx.store, &name)?;
    let actor = ctx.actor()?;
    let path = match file {
        Some(f) => f.to_path_buf(),
        None => plan_file_path(ctx)?,
    };
    if file.is_none() {
        if let Some(holder) = checked_out_here(ctx) {
            if holder != name {
                return Err(Error::usage(
                    "PLAN_FILE_MISMATCH",
                    format!("{} holds plan '{holder}' (it was checked out from it), not plan '{name}'", path.display()),
                )
                .hint(format!("save it where it belongs: `git swarm plan save {holder}`"))
                .hint(format!("to store this text in '{name}' on purpose: `git swarm plan save {name} --file {}`", path.display())));
            }
        }
    }
    let bytes = read_file(&path)?;
    let new_text = String::from_utf8(bytes).map_err(|_| {
        Error::usage(
            "YAML_INVALID",
            format!("{} is not UTF-8 text", path.display()),
        )
    })?;
    let text_changed = plan.text.as_deref() != Some(new_text.as_str());
    let contract_changed = contract.is_some_and(|c| c != plan.record.contract);
    if !text_changed && !contract_changed {
        let out = serde_json::json!({ "plan": name, "changed": false, "commit": plan.head.commit.to_string() });
        return Ok(Output::new(
            out,
            format!(
                "plan {name}: unchanged ({})\n",
                crate::store::short(plan.head.commit)
            ),
        ));
    }
    let mut record = plan.record.clone();
    record.updated_at = rfc3339(ctx.store.clock.now());
    if let Some(c) = contract {
        record.contract = c.to_string();
    }
    let files = files(&record, Some(&new_text))?;
    let summary = message
        .map(str::to_string)
        .unwrap_or_else(|| format!("plan {name}: saved"));
    let event = Event::new("plan-saved", &actor, summary);
    let id = ctx
        .store
        .write(&plan_ref(&name), Some(plan.head.commit), &files, &event)?;
    let out = serde_json::json!({ "plan": name, "changed": true, "commit": id.to_string(), "contract": record.contract });
    let mut text = format!(
        "plan {name}: saved {} ({})\n",
        path.display(),
        crate::store::short(id)
    );
    if contract_changed {
        text.push_str(&format!(
            "contract is now {}: `accept` refuses packets written against the old one\n",
            record.contract
        ));
    }
    Ok(Output::new(out, text))
}

/// `plan checkout`: write the plan text as an untracked file.
pub fn checkout(ctx: &Ctx, name: &str, force: bool) -> Result<Output> {
    let plan = require(&ctx.store, name)?;
    let path = plan_file_path(ctx)?;
    let written = write_plan_file(&ctx.store, &plan, &path, force)?;
    let out = serde_json::json!({
        "plan": name,
        "path": path.display().to_string(),
        "written": written,
        "commit": plan.head.commit.to_string(),
    });
    let mut warnings = Vec::new();
    if let Some(lane) = ctx.lane_here() {
        if lane.record.plan != name {
            warnings.push(format!(
                "this is lane {}'s worktree, whose plan is '{}': `plan save` here now saves to '{name}'",
                lane.feature, lane.record.plan
            ));
        }
    }
    let msg = if written {
        format!(
            "wrote {} from plan {name} ({}); it stays untracked\n",
            path.display(),
            crate::store::short(plan.head.commit)
        )
    } else {
        format!("{} already matches plan {name}\n", path.display())
    };
    let mut output = Output::new(out, msg);
    output.warnings = warnings;
    Ok(output)
}

/// Write the plan's text to `path` unless that would lose local edits:
/// a file that equals some saved version of the plan is safe to replace.
pub fn write_plan_file(store: &Store, plan: &Plan, path: &Path, force: bool) -> Result<bool> {
    let text = plan.text.clone().unwrap_or_default();
    let dir = path.parent().unwrap_or(Path::new("."));
    let holder = checked_out(store, dir);
    if let Ok(existing) = std::fs::read(path) {
        if existing == text.as_bytes() {
            remember_checkout(store, dir, &plan.record.plan);
            return Ok(false);
        }
        // The file may hold a saved version of this plan, or of the plan it
        // was checked out from: replacing either loses nothing.
        let from_other = match holder.as_deref() {
            Some(h) if h != plan.record.plan => match load(store, h)? {
                Some(other) => is_saved_version(store, &other, &existing)?,
                None => false,
            },
            _ => false,
        };
        if !force && !from_other && !is_saved_version(store, plan, &existing)? {
            let owner = holder.unwrap_or_else(|| plan.record.plan.clone());
            return Err(Error::check(
                "PLAN_DIRTY",
                format!(
                    "{} has edits that plan '{owner}' does not have",
                    path.display()
                ),
            )
            .hint(format!(
                "save them first with `git swarm plan save {owner}`"
            ))
            .hint("or overwrite them with --force"));
        }
    }
    std::fs::create_dir_all(dir).map_err(|e| io_error(dir, e))?;
    std::fs::write(path, text.as_bytes()).map_err(|e| io_error(path, e))?;
    remember_checkout(store, dir, &plan.record.plan);
    Ok(true)
}

/// Where a worktree remembers which plan its plan file was checked out
/// from: `<worktree git dir>/swarm/plan-checkout`. A cache: when it is
/// missing, commands fall back to the lane's plan or the only plan. The
/// current worktree's git dir is known; another worktree's (a new lane's)
/// is asked of git.
fn checkout_marker(store: &Store, worktree: &Path) -> Option<PathBuf> {
    let same = store
        .workdir()
        .is_some_and(|w| std::fs::canonicalize(w).ok() == std::fs::canonicalize(worktree).ok());
    let git_dir = if same {
        store.repo.git_dir().to_path_buf()
    } else {
        let out = crate::git::Git::new(worktree)
            .run(["rev-parse", "--absolute-git-dir"])
            .ok()?;
        PathBuf::from(out.trim())
    };
    Some(git_dir.join("swarm").join("plan-checkout"))
}

/// The plan whose text the worktree's plan file was checked out from.
pub fn checked_out(store: &Store, worktree: &Path) -> Option<String> {
    let name = std::fs::read_to_string(checkout_marker(store, worktree)?).ok()?;
    let name = name.trim();
    names::is_valid_name(name).then(|| name.to_string())
}

/// The plan checked out in the worktree we run in.
fn checked_out_here(ctx: &Ctx) -> Option<String> {
    checked_out(&ctx.store, ctx.store.workdir()?)
}

fn remember_checkout(store: &Store, worktree: &Path, plan: &str) {
    if let Some(marker) = checkout_marker(store, worktree) {
        if let Some(dir) = marker.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = std::fs::write(marker, format!("{plan}\n"));
    }
}

pub fn is_saved_version(store: &Store, plan: &Plan, content: &[u8]) -> Result<bool> {
    let walk = store.journal(plan.head.commit, None)?;
    for entry in walk {
        let id = gix::ObjectId::from_hex(entry.commit.as_bytes())
            .map_err(|e| Error::gix("bad commit id", e))?;
        if store.blob_at(id, TEXT_FILE)?.as_deref() == Some(content) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// `plan log`: the journal, newest first.
pub fn log(ctx: &Ctx, name: &str) -> Result<Output> {
    let plan = require(&ctx.store, name)?;
    let entries: Vec<JournalEntry> = ctx.store.journal(plan.head.commit, None)?;
    let mut text = String::new();
    for e in &entries {
        let epoch = e.epoch.map(|n| format!(" epoch={n}")).unwrap_or_default();
        text.push_str(&format!(
            "{} {} {:<16} {}{} — {}\n",
            &e.commit[..12],
            e.time,
            e.event,
            e.actor,
            epoch,
            e.summary
        ));
    }
    Ok(Output::new(
        serde_json::json!({ "plan": name, "entries": entries }),
        text,
    ))
}

pub fn read_file(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::usage("NOT_FOUND", format!("{} does not exist", path.display()))
        } else {
            io_error(path, e)
        }
    })
}

pub fn io_error(path: &Path, e: std::io::Error) -> Error {
    Error::env("IO_FAILED", format!("{}: {e}", path.display()))
}

/// `plan show --pr-body`: a pull-request body that folds the plan in, so the
/// plan travels with the PR instead of being committed.
pub fn pr_body(ctx: &Ctx, name: &str) -> Result<Output> {
    let plan = require(&ctx.store, name)?;
    let body = include_str!("../templates/pr-body.md")
        .replace("{title}", &plan.record.title)
        .replace("{plan}", name)
        .replace("{commit}", &plan.head.commit.to_string())
        .replace(
            "{plan_text}",
            plan.text.as_deref().unwrap_or("(no plan text)").trim_end(),
        );
    Ok(Output::new(
        serde_json::json!({ "plan": name, "body": body }),
        body,
    ))
}

/// `plan close`: mark the plan finished (status: closed). A closed plan and
/// its released leader record may later be archived by `gc`.
pub fn close(ctx: &Ctx, name: &str, force: bool) -> Result<Output> {
    let plan = require(&ctx.store, name)?;
    let actor = ctx.actor()?;
    if !force && plan.record.status != "closed" {
        let lanes: Vec<String> = crate::lane::all(&ctx.store)?
            .into_iter()
            .filter(|l| l.record.state == "active" && l.record.plan == name)
            .map(|l| format!("lane {}", l.feature))
            .collect();
        let children: Vec<String> = all(&ctx.store)?
            .into_iter()
            .filter(|p| p.record.parent.as_deref() == Some(name) && p.record.status != "closed")
            .map(|p| format!("child plan {}", p.record.plan))
            .collect();
        let busy: Vec<String> = lanes.into_iter().chain(children).collect();
        if !busy.is_empty() {
            return Err(Error::check(
                "PLAN_BUSY",
                format!(
                    "plan '{name}' still has work in progress: {}",
                    busy.join(", ")
                ),
            )
            .hint("finish or remove it first (`git swarm lane rm`, `git swarm plan close <child>`)")
            .hint("or close anyway with --force"));
        }
    }
    if plan.record.status == "closed" {
        let out = serde_json::json!({ "plan": name, "changed": false, "status": "closed" });
        return Ok(Output::new(out, format!("plan {name} is already closed\n")));
    }
    let mut record = plan.record.clone();
    record.status = "closed".into();
    record.updated_at = rfc3339(ctx.store.clock.now());
    let files = files(&record, plan.text.as_deref())?;
    let event = Event::new("plan-closed", &actor, format!("plan {name}: closed"));
    let id = ctx
        .store
        .write(&plan_ref(name), Some(plan.head.commit), &files, &event)?;
    let out = serde_json::json!({ "plan": name, "changed": true, "status": "closed", "commit": id.to_string() });
    Ok(Output::new(out, format!("plan {name}: closed\n")))
}

/// `plan reopen`: the inverse of `plan close` (status: active again), journalled
/// as `plan-reopened`. A plan that gc archived gets its live ref back, its
/// new version continuing the archived history.
pub fn reopen(ctx: &Ctx, name: &str) -> Result<Output> {
    let plan = require(&ctx.store, name)?;
    let actor = ctx.actor()?;
    if plan.record.status != "closed" {
        let out =
            serde_json::json!({ "plan": name, "changed": false, "status": plan.record.status });
        return Ok(Output::new(
            out,
            format!(
                "plan {name} is not closed ({}): nothing to reopen\n",
                plan.record.status
            ),
        ));
    }
    let mut record = plan.record.clone();
    record.status = default_status();
    record.updated_at = rfc3339(ctx.store.clock.now());
    let files = files(&record, plan.text.as_deref())?;
    let event = Event::new("plan-reopened", &actor, format!("plan {name}: reopened"));
    let refname = plan_ref(name);
    // Live: move it by CAS. Archived by gc: no live ref, so it must not
    // exist yet, and the new version's parent is the archived tip.
    let live = ctx.store.ref_target(&refname)?;
    let tree = ctx.store.write_tree(&files)?;
    let id = ctx.store.commit(tree, &[plan.head.commit], &event)?;
    ctx.store
        .cas(&refname, live, Some(id), &actor, &event.summary)?;
    let out = serde_json::json!({
        "plan": name,
        "changed": true,
        "status": record.status,
        "commit": id.to_string(),
        "unarchived": live.is_none(),
    });
    Ok(Output::new(
        out,
        format!(
            "plan {name}: reopened{}\n",
            if live.is_none() {
                " (restored from the gc archive)"
            } else {
                ""
            }
        ),
    ))
}

/// The plan's local head, and the head to build on: the local one, unless
/// it is missing or behind the remote's published one (never dropping
/// unpublished local saves). Part of [`journal`]; `accept` checks contracts
/// against it too.
pub fn newest_head(
    ctx: &Ctx,
    plan: &str,
) -> Result<(Option<gix::ObjectId>, Option<gix::ObjectId>)> {
    let store = &ctx.store;
    let refname = plan_ref(plan);
    let local = store.ref_target(&refname)?;
    let published = match ctx.remote() {
        Some(r) => store.ref_target(&crate::sync::mirror_ref(r, &refname))?,
        None => None,
    };
    let base = match (local, published) {
        (None, p) => p,
        (Some(l), Some(p)) if l != p && store.is_ancestor(l, p)? => Some(p),
        (l, _) => l,
    };
    Ok((local, base))
}

/// Append `event` to the plan's journal: a commit with the plan's own tree
/// whose parent is the plan's head, moved in with a compare-and-swap. This
/// is how lanes and packets write in a plan.
///
/// - `on: Some(head)`: exactly on that head, the one the caller decided on
///   (e.g. "this plan has no executor"); a plan that moved since is
///   `CAS_FAILED` (exit 3) and nothing is written.
/// - `on: None`: on the newest head known here (the local ref, or the
///   remote's published one when the local ref is missing or behind it, so
///   unpublished local saves are never dropped), re-read and tried again
///   when another writer wins.
///
/// `once`: a trailer (`("Swarm-Packet", id)`) that makes the entry
/// idempotent: when the journal already has an entry of this kind carrying
/// it, nothing is written (a local ref behind that entry catches up).
///
/// Returns the commit written, or None when `once` found the entry there.
pub fn journal(
    ctx: &Ctx,
    plan: &str,
    event: &Event,
    on: Option<gix::ObjectId>,
    once: Option<(&str, &str)>,
) -> Result<Option<gix::ObjectId>> {
    let store = &ctx.store;
    let refname = plan_ref(plan);
    for _ in 0..20 {
        let (local, base) = match on {
            Some(head) => (Some(head), Some(head)),
            None => newest_head(ctx, plan)?,
        };
        let Some(base) = base else {
            return Err(
                Error::usage("NOT_FOUND", format!("plan '{plan}' does not exist here"))
                    .hint("run `git swarm sync` to fetch the shared plans"),
            );
        };
        if let Some((key, value)) = once {
            let found = store.journal(base, None)?.iter().any(|e| {
                e.event == event.kind && e.trailers.get(key).map(String::as_str) == Some(value)
            });
            if found {
                if local != Some(base) {
                    match store.cas(&refname, local, Some(base), &event.actor, "catch up") {
                        Err(e) if e.code == "CAS_FAILED" && on.is_none() => continue,
                        other => other?,
                    }
                }
                return Ok(None);
            }
        }
        let tree = store.commit_tree(base)?;
        let commit = store.commit(tree, &[base], event)?;
        match store.cas(&refname, local, Some(commit), &event.actor, &event.summary) {
            Ok(()) => return Ok(Some(commit)),
            Err(e) if e.code == "CAS_FAILED" && on.is_none() => continue,
            Err(e) => return Err(e),
        }
    }
    Err(Error::race(
        "CAS_FAILED",
        format!("plan '{plan}' kept changing; its journal entry was not written"),
    )
    .hint("run the command again: it completes what is missing"))
}
