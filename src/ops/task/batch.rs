//! `task new --from FILE`: many tasks of one plan in one command, published
//! in one atomic push. The file is either
//!
//! - a YAML list of tasks (`- id: t1` / `  title: …`, with the optional
//!   `depends_on`, `files_hint`, `acceptance`, `owner`, `branch`, `lane`
//!   of `task new`'s flags), when its first line that is not blank or a
//!   `#` comment starts with `-`; or
//! - one task a line: `<id> <title>` (blank lines and `#` comments
//!   skipped).
//!
//! Every line is checked before anything is written: a bad line (no
//! title, a bad id, an id twice, an unknown dependency, a cycle, an id the
//! plan already has with other fields) refuses the whole file with its
//! line number, and nothing is written. A task the plan already has with
//! the same fields (an earlier run of the same file) is left as it is.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::fields::Fields;
use super::MAX_ATTEMPTS;
use crate::error::{Code, Error, Result};
use crate::failpoint;
use crate::names;
use crate::records::task::{self, Known, TaskKey, TaskRecord};
use crate::session::Ctx;
use crate::store::records::Publish;
use crate::store::remote;

/// One task of the file, and the line it starts on.
#[derive(Debug, Clone)]
pub struct Line {
    pub line: usize,
    pub id: String,
    pub fields: Fields,
}

/// A YAML entry of the file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    id: String,
    title: String,
    #[serde(default)]
    depends_on: Vec<String>,
    #[serde(default)]
    files_hint: Vec<String>,
    #[serde(default)]
    acceptance: Vec<String>,
    owner: Option<String>,
    branch: Option<String>,
    lane: Option<String>,
}

/// What `task new --from` did.
#[derive(Debug, Clone, Serialize)]
pub struct Created {
    pub command: &'static str,
    pub plan: String,
    /// The tasks written, in the file's order.
    pub created: Vec<String>,
    /// The tasks the plan already had just so (left as they were).
    pub already: Vec<String>,
    pub published: bool,
}

fn at(file: &str, line: usize, e: Error) -> Error {
    Error {
        message: format!("{file}:{line}: {}; nothing was written", e.message),
        ..e
    }
}

/// Read the tasks of `text` (the file named `file`), checking each line.
pub fn parse(file: &str, text: &str) -> Result<Vec<Line>> {
    let first = text
        .lines()
        .map(str::trim_start)
        .find(|l| !l.is_empty() && !l.starts_with('#'));
    let lines = match first {
        Some(l) if l.starts_with('-') => parse_yaml(file, text)?,
        _ => parse_lines(file, text)?,
    };
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for l in &lines {
        names::validate_name("task", &l.id).map_err(|e| at(file, l.line, e))?;
        l.fields.validate().map_err(|e| at(file, l.line, e))?;
        if let Some(first) = seen.insert(&l.id, l.line) {
            return Err(at(
                file,
                l.line,
                Error::new(
                    Code::Usage,
                    format!("task '{}' is already on line {first}", l.id),
                ),
            ));
        }
    }
    if lines.is_empty() {
        return Err(Error::new(Code::Usage, format!("{file}: no tasks in it"))
            .hint("one `<id> <title>` a line, or a YAML list of `- id: …` / `  title: …`"));
    }
    Ok(lines)
}

fn parse_lines(file: &str, text: &str) -> Result<Vec<Line>> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let l = raw.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let (id, title) = l.split_once(char::is_whitespace).unwrap_or((l, ""));
        if title.trim().is_empty() {
            return Err(at(
                file,
                i + 1,
                Error::new(Code::Usage, format!("task '{id}' has no title"))
                    .hint("one `<id> <title>` a line, e.g. `t1 add the login form`"),
            ));
        }
        out.push(Line {
            line: i + 1,
            id: id.to_string(),
            fields: Fields {
                title: Some(title.trim().to_string()),
                ..Fields::default()
            },
        });
    }
    Ok(out)
}

fn parse_yaml(file: &str, text: &str) -> Result<Vec<Line>> {
    // The line each top-level item starts on (for the errors).
    let starts: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.starts_with('-'))
        .map(|(i, _)| i + 1)
        .collect();
    let items: Vec<serde_yaml_ng::Value> = serde_yaml_ng::from_str(text).map_err(|e| {
        let line = e.location().map(|l| l.line()).unwrap_or(1);
        Error::new(
            Code::Usage,
            format!("{file}:{line}: not a YAML list of tasks: {e}; nothing was written"),
        )
    })?;
    let mut out = Vec::new();
    for (n, item) in items.into_iter().enumerate() {
        let line = starts.get(n).copied().unwrap_or(1);
        let e: Entry = serde_yaml_ng::from_value(item).map_err(|e| {
            at(
                file,
                line,
                Error::new(Code::Usage, format!("not a task: {e}")).hint(
                    "each item needs `id` and `title`; optional: depends_on, files_hint, acceptance, owner, branch, lane",
                ),
            )
        })?;
        if e.title.trim().is_empty() {
            return Err(at(
                file,
                line,
                Error::new(Code::Usage, format!("task '{}' has no title", e.id)),
            ));
        }
        let non_empty = |v: Vec<String>| (!v.is_empty()).then_some(v);
        out.push(Line {
            line,
            id: e.id,
            fields: Fields {
                title: Some(e.title),
                depends_on: non_empty(e.depends_on),
                files_hint: non_empty(e.files_hint),
                acceptance: non_empty(e.acceptance),
                owner: e.owner,
                branch: e.branch,
                lane: e.lane,
                ..Fields::default()
            },
        });
    }
    Ok(out)
}

/// Create every task of `lines` in `plan`: one atomic push for them all.
pub fn create_many(ctx: &Ctx, plan: &str, file: &str, lines: &[Line]) -> Result<Created> {
    let actor = ctx.actor()?;
    names::validate_name("plan", plan)?;
    let store = &ctx.store;
    let now = store.clock.now();
    let plan_ref = crate::records::plan::plan_ref(plan);
    let outcome = Publish::new(store, ctx.remote())
        .fetch([task::plan_prefix(plan), plan_ref.clone()])
        .attempts(MAX_ATTEMPTS)
        .point("task")
        .run(|txn| {
            if txn.tip(&plan_ref)?.base.is_none() {
                return Err(
                    Error::new(Code::NotFound, format!("plan '{plan}' does not exist"))
                        .hint("create it with `git swarm plan new <plan>`"),
                );
            }
            let (tasks, _) = task::known(store, ctx.remote(), Some(plan))?;
            let mut graph: BTreeMap<String, Vec<String>> = tasks
                .iter()
                .map(|k| (k.key.id.clone(), k.record.depends_on.clone()))
                .collect();
            let mut new: Vec<(&Line, TaskRecord)> = Vec::new();
            let mut already = Vec::new();
            for l in lines {
                let mut rec = TaskRecord::new(plan, &l.id, "", now);
                l.fields.apply(&mut rec);
                if already_there(ctx, plan, file, l, &rec, &tasks)? {
                    already.push(l.id.clone());
                    continue;
                }
                graph.insert(l.id.clone(), rec.depends_on.clone());
                new.push((l, rec));
            }
            for (l, _) in &new {
                task::check_graph(&l.id, &graph).map_err(|e| at(file, l.line, e))?;
            }
            for (l, rec) in &new {
                let ev = task::event(
                    "task-created",
                    &actor,
                    rec,
                    format!("task {}: {}", l.id, rec.title),
                );
                let key = TaskKey {
                    plan: plan.to_string(),
                    id: l.id.clone(),
                };
                txn.write(&key, rec, &ev)?;
            }
            failpoint::point("task:objects");
            Ok(Created {
                command: "new",
                plan: plan.to_string(),
                created: new.iter().map(|(l, _)| l.id.clone()).collect(),
                already,
                published: false,
            })
        })?;
    let published = outcome.publication.is_published();
    let then = outcome.then;
    Ok(Created { published, ..then })
}

/// Whether the plan already has line `l`'s task as `rec` (an earlier run
/// of the same file); `TASK_EXISTS` at the line when it has one with other
/// fields, or had one that gc archived.
fn already_there(
    ctx: &Ctx,
    plan: &str,
    file: &str,
    l: &Line,
    rec: &TaskRecord,
    tasks: &[Known],
) -> Result<bool> {
    if let Some(cur) = tasks.iter().find(|k| k.key.id == l.id) {
        let mut same = cur.record.clone();
        same.created_at.clone_from(&rec.created_at);
        same.updated_at.clone_from(&rec.updated_at);
        if same == *rec {
            return Ok(true);
        }
        return Err(at(
            file,
            l.line,
            Error::new(
                Code::TaskExists,
                format!(
                    "plan '{plan}' already has a task '{}' ({})",
                    l.id, cur.record.title
                ),
            )
            .hint("pick another id, or change it with `git swarm task update`"),
        ));
    }
    if remote::tip(&ctx.store, ctx.remote(), &task::task_ref(plan, &l.id))?.archived {
        return Err(at(
            file,
            l.line,
            Error::new(
                Code::TaskExists,
                format!("plan '{plan}' had a task '{}' (archived by gc)", l.id),
            ),
        ));
    }
    Ok(false)
}
