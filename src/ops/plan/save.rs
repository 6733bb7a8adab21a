//! `plan save`: snapshot the worktree's plan file into the plan ref,
//! merging in what others saved since it was checked out.

use std::path::{Path, PathBuf};

use gix::ObjectId;
use serde::Serialize;

use super::{records, utf8};
use crate::clock::rfc3339;
use crate::error::{Code, Error, Result};
use crate::fsutil::io_error;
use crate::records::plan::{
    self, refuse_closed, refuse_secrets, require, save_conflict, Join, Plan, PlanDoc, TEXT_FILE,
};
use crate::session::plan::{
    checked_out_at, checked_out_here, infer, plan_file_path, read_plan_file, remember_checkout,
};
use crate::session::Ctx;
use crate::store::Event;

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
        Some(holder) if holder != name => Err(Error::new(
            Code::PlanFileMismatch,
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
    match plan::join(&base_text, ours, &theirs) {
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
