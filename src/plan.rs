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
use crate::store::record::{self, Extra, Unreadable};
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

/// Refuse plan content that looks like it holds a credential: the record's
/// fields (title, contract, whatever `--from` brought), the text line by
/// line, and the other words the command would store (`-m`). The plan is
/// the user's document, but `sync` publishes it to every clone and history
/// keeps it, so a secret in it is refused (`PLAN_SECRET`, naming the field
/// or the line) rather than stored.
/// The plan record fields that may hold newlines.
pub const MULTILINE_FIELDS: &[&str] = &["contract"];

fn refuse_secrets(
    subject: &str,
    record: &PlanRecord,
    text: Option<(&str, &str)>,
    fields: &[(&str, &str)],
) -> Result<()> {
    let value = serde_yaml_ng::to_value(record)
        .map_err(|e| Error::env("INTERNAL", format!("could not serialise a plan: {e}")))?;
    let mut findings = crate::secret::scan(&value);
    if let Some((name, text)) = text {
        findings.extend(crate::secret::scan_lines(name, text));
    }
    findings.extend(crate::secret::scan_fields(fields));
    if findings.is_empty() {
        crate::text::check_value(subject, &value, MULTILINE_FIELDS)?;
        return crate::text::check_fields(subject, fields);
    }
    Err(crate::secret::refusal("PLAN_SECRET", subject, &findings))
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

/// All plans that can be read, sorted by name, and those that cannot
/// (one bad record must not hide every other plan).
pub fn all(store: &Store) -> Result<(Vec<Plan>, Vec<Unreadable>)> {
    let mut out = Vec::new();
    let mut bad = Vec::new();
    for (refname, id) in store.list_refs("refs/swarm/plans/")? {
        let name = refname.trim_start_matches("refs/swarm/plans/");
        match store.read_commit(id).and_then(|rec| from_record(name, rec)) {
            Ok(plan) => out.push(plan),
            Err(e) => bad.push(Unreadable::new("plan", name, &refname, &e)),
        }
    }
    Ok((out, bad))
}

/// `plan list`
pub fn list(ctx: &Ctx) -> Result<Output> {
    let (plans, unreadable) = all(&ctx.store)?;
    let mut text = String::new();
    if plans.is_empty() && unreadable.is_empty() {
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
    Ok(record::report_unreadable(
        Output::new(serde_json::json!({ "plans": json }), text),
        &unreadable,
    ))
}

/// The plan a command means when none is named: the plan of the lane we
/// are in, else the only plan, else a usage error listing the plans. Never
/// the plan last checked out here: a main worktree serves many plans, and
/// a guess there writes into an unrelated one.
pub fn infer(ctx: &Ctx) -> Result<String> {
    if let Some(lane) = ctx.lane_here() {
        return Ok(lane.record.plan);
    }
    let plans: Vec<String> = ctx
        .store
        .list_refs("refs/swarm/plans/")?
        .into_iter()
        .map(|(r, _)| r.trim_start_matches("refs/swarm/plans/").to_string())
        .collect();
    match plans.as_slice() {
        [only] => Ok(only.clone()),
        [] => Err(Error::usage("NOT_FOUND", "there is no plan yet")
            .hint("create one with `git swarm plan new <plan>`, or `git swarm sync` to fetch the shared ones")),
        many => {
            let mut err = Error::usage(
                "PLAN_AMBIGUOUS",
                format!(
                    "{} plans exist and this is no lane's worktree: say which one ({})",
                    many.len(),
                    many.join(", ")
                ),
            )
            .hint("pass the plan: --plan P (for `plan save` and `plan checkout`, the name)");
            if let Some(held) = checked_out_here(ctx) {
                err = err.hint(format!(
                    "the plan file here was checked out from plan '{held}'"
                ));
            }
            Err(err.with_detail(serde_json::json!({ "plans": many })))
        }
    }
}

/// Where the plan file lives in this worktree.
pub fn plan_file_path(ctx: &Ctx) -> Result<PathBuf> {
    plan_file_in(ctx, &ctx.store.workdir_or_err()?)
}

/// Where the plan file lives in `worktree`: `swarm.planFile`, which must be
/// a relative path without `..` or a `.git` component, in a directory that
/// (symlinks resolved) is inside the worktree and outside the git directory.
pub fn plan_file_in(ctx: &Ctx, worktree: &Path) -> Result<PathBuf> {
    let value = &ctx.settings.plan_file;
    let refuse = |why: &str| {
        Error::usage(
            "CONFIG_INVALID",
            format!("swarm.planFile = '{}' {why}", value.escape_debug()),
        )
        .hint("the plan file is a path relative to the worktree root, inside it: `git config swarm.planFile PLAN.md`")
    };
    let rel = crate::fsutil::confined_relative(value).ok_or_else(|| {
        refuse("is not a relative path inside the worktree (absolute, `..` or `.git`)")
    })?;
    let path = worktree.join(&rel);
    let dir = path.parent().unwrap_or(worktree);
    if !crate::fsutil::resolves_inside(worktree, dir) {
        return Err(refuse(
            "leads outside the worktree (through a symbolic link)",
        ));
    }
    let git_dirs = [
        ctx.store.common_dir(),
        ctx.store.repo.git_dir().to_path_buf(),
    ];
    if git_dirs
        .iter()
        .any(|g| crate::fsutil::resolves_inside(g, dir))
    {
        return Err(refuse("leads into the git directory"));
    }
    Ok(path)
}

/// Read the worktree's plan file: a regular file, never through a symlink,
/// at most [`crate::fsutil::MAX_TEXT`] bytes.
pub fn read_plan_file(path: &Path) -> Result<Vec<u8>> {
    use crate::fsutil::{self, Follow, ReadError};
    fsutil::read_limited(path, Follow::No, fsutil::MAX_TEXT).map_err(|e| match e {
        ReadError::Symlink => unsafe_plan_file(path, "is a symbolic link"),
        ReadError::NotRegular(kind) => unsafe_plan_file(path, &format!("is {kind}")),
        other => fsutil::input_error(path, other, fsutil::MAX_TEXT),
    })
}

fn unsafe_plan_file(path: &Path, what: &str) -> Error {
    Error::usage(
        "PLAN_FILE_UNSAFE",
        format!(
            "{} {what}; the plan file must be a regular file, and git-swarm neither reads nor writes through anything else",
            path.display()
        ),
    )
    .hint(format!(
        "remove it (`rm {}`) and run `git swarm plan checkout <plan>` to get the plan text back",
        path.display()
    ))
    .hint("to save text kept elsewhere on purpose, name it: `git swarm plan save <plan> --file <path>`")
}

/// `plan save`: snapshot the worktree's plan file into the plan ref.
/// A closed plan is finished: starting a lane on it or saving new text
/// into it is refused until it is reopened.
pub fn refuse_closed(plan: &Plan, name: &str, doing: &str) -> Result<()> {
    if plan.record.status == "closed" {
        return Err(Error::check(
            "PLAN_CLOSED",
            format!("plan '{name}' is closed: cannot {doing}"),
        )
        .hint(format!("reopen it first: `git swarm plan reopen {name}`")));
    }
    Ok(())
}

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
    refuse_closed(&plan, &name, "save into it")?;
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
    let bytes = match file {
        // Named on the command line: the user's choice, links followed.
        Some(f) => crate::fsutil::read_input(f, crate::fsutil::MAX_TEXT)?,
        None => read_plan_file(&path)?,
    };
    let file_text = String::from_utf8(bytes).map_err(|_| {
        Error::usage(
            "YAML_INVALID",
            format!("{} is not UTF-8 text", path.display()),
        )
    })?;
    // The version this worktree's plan file came from is the merge base:
    // what others saved since then is merged in, never overwritten.
    let workdir = ctx.store.workdir().map(Path::to_path_buf);
    let base = match (&workdir, file) {
        (Some(w), None) => checked_out_at(&ctx.store, w)
            .filter(|(p, _)| *p == name)
            .and_then(|(_, c)| c),
        _ => None,
    };
    let merged = merge_newer(ctx, &plan, base, &file_text)?;
    let new_text = merged.as_deref().unwrap_or(&file_text).to_string();
    let text_changed = plan.text.as_deref() != Some(new_text.as_str());
    let contract_changed = contract.is_some_and(|c| c != plan.record.contract);
    if !text_changed && !contract_changed {
        if let (Some(w), None) = (&workdir, file) {
            if merged.is_some() {
                std::fs::write(&path, new_text.as_bytes()).map_err(|e| io_error(&path, e))?;
            }
            remember_checkout(&ctx.store, w, &name, plan.head.commit);
        }
        let out = serde_json::json!({ "plan": name, "changed": false, "commit": plan.head.commit.to_string(), "merged": merged.is_some() });
        let mut text = format!(
            "plan {name}: unchanged ({})\n",
            crate::store::short(plan.head.commit)
        );
        if merged.is_some() {
            text.push_str(&format!(
                "{} was behind the plan: it now holds the newer version\n",
                path.display()
            ));
        }
        return Ok(Output::new(out, text));
    }
    let mut record = plan.record.clone();
    record.updated_at = rfc3339(ctx.store.clock.now());
    if let Some(c) = contract {
        record.contract = c.to_string();
    }
    let shown = match file {
        Some(f) => f.display().to_string(),
        None => ctx.settings.plan_file.clone(),
    };
    // The file as the user wrote it: its line numbers are the ones they can
    // find (lines merged in from others were checked when those were saved).
    refuse_secrets(
        &format!("saving plan '{name}'"),
        &record,
        Some((&shown, &file_text)),
        &[("-m", message.unwrap_or(""))],
    )?;
    let files = files(&record, Some(&new_text))?;
    let summary = message
        .map(str::to_string)
        .unwrap_or_else(|| format!("plan {name}: saved"));
    let event = Event::new("plan-saved", &actor, summary);
    let id = ctx
        .store
        .write(&plan_ref(&name), Some(plan.head.commit), &files, &event)?;
    if let (Some(w), None) = (&workdir, file) {
        if merged.is_some() {
            // The file now shows what was saved: the others' lines and ours.
            std::fs::write(&path, new_text.as_bytes()).map_err(|e| io_error(&path, e))?;
        }
        remember_checkout(&ctx.store, w, &name, id);
    }
    let out = serde_json::json!({ "plan": name, "changed": true, "commit": id.to_string(), "contract": record.contract, "merged": merged.is_some() });
    let mut text = format!(
        "plan {name}: saved {} ({})\n",
        path.display(),
        crate::store::short(id)
    );
    if merged.is_some() {
        text.push_str(&format!(
            "merged with the newer version {} saved since {} was checked out; the file now holds the result\n",
            crate::store::short(plan.head.commit),
            path.display()
        ));
    }
    if contract_changed {
        text.push_str(&format!(
            "contract is now {}: `accept` refuses packets written against the old one\n",
            record.contract
        ));
    }
    Ok(Output::new(out, text))
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
    base: Option<gix::ObjectId>,
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
    if base_text == theirs.as_bytes() {
        return Ok(None);
    }
    if ours.as_bytes() == base_text {
        return Ok(Some(theirs));
    }
    match ctx
        .store
        .git
        .merge_text(&base_text, ours.as_bytes(), theirs.as_bytes())?
    {
        Some(merged) => Ok(Some(String::from_utf8_lossy(&merged).into_owned())),
        None => Err(save_conflict(plan, base, true)),
    }
}

fn save_conflict(plan: &Plan, base: gix::ObjectId, overlap: bool) -> Error {
    let name = &plan.record.plan;
    let newer = crate::store::short(plan.head.commit);
    let why = if overlap {
        "and both changed the same lines"
    } else {
        "and that version cannot be read here to merge with"
    };
    Error::race(
        "PLAN_SAVE_CONFLICT",
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
    // Never through a symlink, with or without --force: the link may point
    // anywhere (a file outside the repository, a hook in .git).
    let existing = match std::fs::symlink_metadata(path) {
        Err(_) => None,
        Ok(_) => match read_plan_file(path) {
            Ok(bytes) => Some(bytes),
            // Too large to be a saved version: only --force replaces it.
            Err(e) if e.code == "FILE_TOO_LARGE" && force => None,
            Err(e) if e.code == "FILE_TOO_LARGE" => {
                return Err(e.hint("--force replaces it with the plan's text"))
            }
            Err(e) => return Err(e),
        },
    };
    if let Some(existing) = existing {
        if existing == text.as_bytes() {
            remember_checkout(store, dir, &plan.record.plan, plan.head.commit);
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
    // A new file renamed into place: a link made meanwhile is replaced, not
    // written through.
    crate::fsutil::replace_file(path, text.as_bytes()).map_err(|e| io_error(path, e))?;
    remember_checkout(store, dir, &plan.record.plan, plan.head.commit);
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
    checked_out_at(store, worktree).map(|(plan, _)| plan)
}

/// The plan the worktree's plan file was checked out from, and the plan
/// version (commit) it was checked out or last saved at: the merge base
/// of the next `plan save`. Older markers name only the plan.
pub fn checked_out_at(store: &Store, worktree: &Path) -> Option<(String, Option<gix::ObjectId>)> {
    let marker = std::fs::read_to_string(checkout_marker(store, worktree)?).ok()?;
    let mut lines = marker.lines();
    let name = lines.next()?.trim();
    if !names::is_valid_name(name) {
        return None;
    }
    let commit = lines
        .next()
        .and_then(|l| gix::ObjectId::from_hex(l.trim().as_bytes()).ok());
    Some((name.to_string(), commit))
}

/// The plan checked out in the worktree we run in.
fn checked_out_here(ctx: &Ctx) -> Option<String> {
    checked_out(&ctx.store, ctx.store.workdir()?)
}

/// A cache, so a failure to write it is not one: `plan save` then merges
/// against nothing older than the plan's head, as before markers had commits.
fn remember_checkout(store: &Store, worktree: &Path, plan: &str, commit: gix::ObjectId) {
    if let Some(marker) = checkout_marker(store, worktree) {
        if let Some(dir) = marker.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = std::fs::write(marker, format!("{plan}\n{commit}\n"));
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
            .0
            .into_iter()
            .filter(|l| l.record.state == "active" && l.record.plan == name)
            .map(|l| format!("lane {}", l.feature))
            .collect();
        let children: Vec<String> = all(&ctx.store)?
            .0
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

/// A plan as one record version holds it: `plan.yaml` and `PLAN.md`.
#[derive(Debug, Clone)]
pub struct PlanDoc {
    pub record: PlanRecord,
    pub text: Option<String>,
}

impl crate::store::kind::Record for PlanDoc {
    const NAMESPACE: &'static str = "plans";
    const KIND: &'static str = "plan";
    const DIVERGED: crate::store::kind::Diverged = crate::store::kind::Diverged::MergeJournals;
    const MULTILINE_FIELDS: &'static [&'static str] = MULTILINE_FIELDS;
    type Key = String;

    fn to_files(&self) -> Result<crate::store::kind::Files> {
        files(&self.record, self.text.as_deref())
    }
    fn from_files(files: &crate::store::kind::Files, plan: &String, _what: &str) -> Result<Self> {
        let head = Record {
            commit: gix::ObjectId::null(gix::hash::Kind::Sha1),
            files: files.clone(),
        };
        let plan = from_record(plan, head)?;
        Ok(PlanDoc {
            record: plan.record,
            text: plan.text,
        })
    }
    /// A closed plan.
    fn is_finished(&self, _: &String, _: &dyn Fn(&str, &str) -> bool) -> bool {
        self.record.status == "closed"
    }
}
