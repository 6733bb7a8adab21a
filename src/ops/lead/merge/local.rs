//! Landing a lane locally: merged in a temporary worktree, gated there,
//! published by the fenced push; and what an earlier run already landed.

use super::*;

/// The commit on the base that already carries this lane's work, if an
/// earlier run landed it: the head in the base, or a first-parent commit
/// since the lane's start with its `Swarm-Landed` trailer.
pub(super) fn already_landed(git: &Git, item: &Item, base_tip: &str) -> Result<Option<String>> {
    if base_tip.is_empty() {
        return Ok(None);
    }
    if git.is_ancestor(&item.head, base_tip)? {
        return Ok(Some(base_tip.to_string()));
    }
    let found = landings(git, &item.lane.record.base_commit, base_tip)?;
    Ok(found
        .into_iter()
        .find(|l| l.feature == item.lane.feature && l.head == item.head)
        .map(|l| l.commit))
}

/// A landing on the base: the commit carrying a `Swarm-Landed: <feature>
/// <head>` trailer.
#[derive(Debug, Clone, Serialize)]
pub struct Landing {
    pub commit: String,
    pub feature: String,
    pub head: String,
}

/// The landings on `base_tip`'s first-parent line since `since` (all of
/// it when `since` is empty or unknown here), newest first.
pub fn landings(git: &Git, since: &str, base_tip: &str) -> Result<Vec<Landing>> {
    let range = if since.is_empty() || !git.has_commit(since)? {
        base_tip.to_string()
    } else {
        format!("{since}..{base_tip}")
    };
    let log = git.run([
        "log",
        "--first-parent",
        "--format=%H%x00%(trailers:key=Swarm-Landed,valueonly)%x01",
        &range,
    ])?;
    let mut out = Vec::new();
    for entry in log.split('\u{1}') {
        if let Some((commit, trailers)) = entry.trim().split_once('\0') {
            for t in trailers.lines() {
                if let Some((feature, head)) = t.trim().split_once(' ') {
                    out.push(Landing {
                        commit: commit.trim().to_string(),
                        feature: feature.to_string(),
                        head: head.trim().to_string(),
                    });
                }
            }
        }
    }
    Ok(out)
}

fn landed_trailer(feature: &str, head: &str) -> String {
    format!("Swarm-Landed: {feature} {head}")
}

/// Merge, gate and publish one lane.
pub(super) fn land(
    ctx: &Ctx,
    plan: &str,
    code: &str,
    item: &Item,
    base_tip: &str,
    style: Style,
    gate: Option<&str>,
) -> Result<Outcome> {
    let store = &ctx.store;
    let dir = store
        .common_dir()
        .join("swarm")
        .join("merge")
        .join(&item.lane.feature);
    let _ = store
        .git
        .run(["worktree", "remove", "--force", &dir.display().to_string()]);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = store.git.worktree_prune();
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| Error::new(Code::IoFailed, format!("{}: {e}", parent.display())))?;
    }
    store.git.run([
        "worktree",
        "add",
        "--detach",
        "--quiet",
        &dir.display().to_string(),
        base_tip,
    ])?;
    let out = in_worktree(ctx, plan, code, item, base_tip, style, gate, &dir);
    let _ = store
        .git
        .run(["worktree", "remove", "--force", &dir.display().to_string()]);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = store.git.worktree_prune();
    out
}

/// A merge (or rebase) that stopped: the conflicting paths and hunks (or
/// what git said), the worktree put back as it was.
fn conflicted(wt: &Git, merged: &std::process::Output) -> Outcome {
    let paths: Vec<String> = wt
        .run(["diff", "--name-only", "--diff-filter=U"])
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect();
    let hunks = wt.run(["diff"]).unwrap_or_default();
    let _ = wt.output(["merge", "--abort"]);
    let _ = wt.output(["rebase", "--abort"]);
    let detail = if paths.is_empty() {
        trim_head(&format!(
            "{}{}",
            String::from_utf8_lossy(&merged.stdout),
            String::from_utf8_lossy(&merged.stderr)
        ))
    } else {
        trim_head(&hunks)
    };
    Outcome::Refused {
        code: "MERGE_CONFLICT",
        paths,
        detail,
    }
}

#[allow(clippy::too_many_arguments)]
fn in_worktree(
    ctx: &Ctx,
    plan: &str,
    code: &str,
    item: &Item,
    base_tip: &str,
    style: Style,
    gate: Option<&str>,
    dir: &Path,
) -> Result<Outcome> {
    let wt = ctx.store.git.at(dir);
    let feature = &item.lane.feature;
    let task = item
        .lane
        .record
        .task
        .as_deref()
        .map(|t| format!(" (task {t})"))
        .unwrap_or_default();
    let subject = format!("Merge lane {feature}{task} into {}", item.base);
    let trailer = landed_trailer(feature, &item.head);
    let message = format!("{subject}\n\n{trailer}\n");
    let merged = match style {
        Style::Merge => wt.output(["merge", "--no-ff", "--no-edit", "-m", &message, &item.head])?,
        Style::Squash => wt.output(["merge", "--squash", &item.head])?,
        Style::Rebase => {
            wt.run(["checkout", "--quiet", "--detach", &item.head])?;
            wt.output(["rebase", "--quiet", base_tip])?
        }
    };
    if !merged.status.success() {
        return Ok(conflicted(&wt, &merged));
    }
    match style {
        Style::Merge => {}
        Style::Squash => {
            wt.run(["commit", "--quiet", "--allow-empty", "-m", &message])?;
        }
        Style::Rebase => {
            wt.run([
                "commit",
                "--quiet",
                "--amend",
                "--no-edit",
                "--trailer",
                &trailer,
            ])?;
        }
    }
    let commit = wt.rev_parse("HEAD")?.unwrap_or_default();
    gate_and_push(ctx, plan, code, item, gate, dir, commit)
}

/// Run the gate (if any) in the merged worktree, then push the merged
/// `commit` to the base under the leader's fence.
fn gate_and_push(
    ctx: &Ctx,
    plan: &str,
    code: &str,
    item: &Item,
    gate: Option<&str>,
    dir: &Path,
    commit: String,
) -> Result<Outcome> {
    let gate_line = match gate {
        None => None,
        Some(cmd) => match run_gate(cmd, dir)? {
            Ok(last) => Some(last),
            Err(output) => {
                return Ok(Outcome::Refused {
                    code: "GATE_FAILED",
                    paths: Vec::new(),
                    detail: output,
                })
            }
        },
    };
    failpoint::point("lead-merge:gated");
    let spec = format!("{commit}:refs/heads/{}", item.base);
    match super::super::run(
        ctx,
        plan,
        Op::Push {
            refspecs: vec![spec],
        },
    ) {
        Ok(_) => Ok(Outcome::Landed {
            commit,
            gate: gate_line,
        }),
        Err(e) if e.code == Code::PushRejected => Ok(Outcome::Refused {
            code: "PUSH_REJECTED",
            paths: Vec::new(),
            detail: format!(
                "{} refused the landing push (its {} moved meanwhile): {}",
                code, item.base, e.message
            ),
        }),
        Err(e) => Err(e),
    }
}
