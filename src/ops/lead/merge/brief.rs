//! The resolution brief a refused lane's owner gets, and the message
//! that tells them.

use super::*;

/// The resolution brief a refused lane's owner gets.
#[allow(clippy::too_many_arguments)]
pub(super) fn brief(
    item: &Item,
    base_tip: &str,
    git: &Git,
    code: &str,
    paths: &[String],
    detail: &str,
    pairs: &[String],
    landed: &[Landed],
) -> String {
    let f = &item.lane.feature;
    let base = &item.base;
    let short = |c: &str| c[..c.len().min(12)].to_string();
    let mut b = match code {
        "MERGE_CONFLICT" => format!(
            "lead merge did not land lane {f}: {} conflicts with {base} at {}.\nConflicting paths: {}\n",
            item.lane.record.branch,
            short(base_tip),
            paths.join(", ")
        ),
        "GATE_FAILED" => format!(
            "lead merge did not land lane {f}: the gate failed on {} merged onto {base} at {}.\n",
            item.lane.record.branch,
            short(base_tip)
        ),
        "PUSH_REJECTED" => format!("lead merge did not land lane {f}: the push to {base} was refused.\n"),
        other => format!("lead merge did not land lane {f} through its pull request ({other}).\n"),
    };
    if !pairs.is_empty() {
        b.push_str(&format!("Forecast pairs: {}\n", pairs.join("; ")));
    }
    let now: Vec<String> = landed
        .iter()
        .map(|l| format!("lane {} ({})", l.lane, short(&l.commit)))
        .collect();
    if !now.is_empty() {
        b.push_str(&format!("{base} now holds: {}\n", now.join(", ")));
    }
    let log = git
        .run(["log", "--oneline", "-5", base_tip])
        .unwrap_or_default();
    if !log.trim().is_empty() {
        b.push_str(&format!("{base} at {}:\n{log}", short(base_tip)));
        if !log.ends_with('\n') {
            b.push('\n');
        }
    }
    b.push_str(&format!(
        "To resolve: `git fetch origin && git merge origin/{base}` in the lane, resolve, commit, `git push origin {}`; the next `lead merge` lands it.\n",
        item.lane.record.branch
    ));
    if !detail.trim().is_empty() {
        b.push_str("---\n");
        b.push_str(detail);
    }
    b
}

/// Send the lane's owner `body` (a notify to the owner, for the plan).
pub(super) fn tell(
    ctx: &Ctx,
    plan: &str,
    item: &Item,
    body: &str,
    warnings: &mut Vec<String>,
) -> Option<String> {
    let post = Post {
        plan: Some(plan.to_string()),
        task: item.lane.record.task.clone(),
        ..Post::new(Kind::Notify, item.lane.record.owner.clone(), body)
    };
    match message::post(ctx, post) {
        Ok(p) => Some(p.message.id.clone()),
        Err(e) => {
            warnings.push(format!(
                "could not message {} about lane {}: {}",
                item.lane.record.owner, item.lane.feature, e.message
            ));
            None
        }
    }
}
