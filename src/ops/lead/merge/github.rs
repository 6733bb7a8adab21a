//! Landing a lane through its GitHub PR: the PR a lane reported, `verify`
//! re-deriving its state, the merge API with the expected head.

use super::*;

/// The GitHub PR a lane reported (`PR open <url>`), when the URL names one.
pub(super) fn pr_of(item: &Item) -> Option<(RepoId, u64, String)> {
    let r = item.lane.record.last_report.as_ref()?;
    if r.kind != LastReportKind::PrOpen {
        return None;
    }
    let url = r.text.strip_prefix("PR open ")?.trim();
    let (repo, number) = parse_pr_arg(url).ok()?;
    Some((repo?, number, url.to_string()))
}

/// Warnings of `verify` go to the queue's warnings.
struct Collect<'a>(&'a mut Vec<String>);

impl verify::Report for Collect<'_> {
    fn warn(&mut self, message: &str) {
        self.0.push(message.to_string());
    }
    fn progress(&mut self, _: &str) {}
}

/// Land a lane through its GitHub PR: `verify` re-derives the PR's state
/// (checks green, review as required, no hold comment) and it must be
/// `ready` on the head the lane pushed; the leader is checked again; then
/// the merge API with the expected head `sha`, so a branch that moved is
/// refused by GitHub (409), not merged. The PR's checks are its gate.
#[allow(clippy::too_many_arguments)]
pub(super) fn land_github(
    ctx: &Ctx,
    plan: &str,
    item: &Item,
    repo: &RepoId,
    number: u64,
    url: &str,
    style: Style,
    gh: &mut dyn GitHub,
    warnings: &mut Vec<String>,
) -> Result<Outcome> {
    let req = Request {
        target: Target::Pr(url.to_string()),
        repo: None,
        require: Some(Require::Ready),
        wait: false,
        timeout: std::time::Duration::ZERO,
    };
    let out = verify::verify(ctx, gh, &req, &Timing::from_env(), &mut Collect(warnings))?;
    let pr = format!("{repo}#{number}");
    if let Some(settled) = settled_by_verdict(item, &pr, out.verdict) {
        return Ok(settled);
    }
    // Right before the irreversible step: still the leader? (A renew
    // fails LEAD_FENCED / NOT_LEADER when not.)
    if !super::super::check(ctx, plan)?.is_leader {
        super::super::run(
            ctx,
            plan,
            Op::Renew {
                lease: None,
                lanes: None,
            },
        )?;
    }
    let method = match style {
        Style::Merge => "merge",
        Style::Squash => "squash",
        Style::Rebase => "rebase",
    };
    let ans = gh.merge_pull(repo, number, &item.head, method)?;
    if ans.merged {
        return Ok(Outcome::Landed {
            commit: ans.sha.unwrap_or_else(|| item.head.clone()),
            gate: Some(format!("{pr}: checks green, merged by the API")),
        });
    }
    Ok(Outcome::Refused {
        code: if ans.status == 409 {
            "HEAD_MOVED"
        } else {
            "PR_NOT_MERGEABLE"
        },
        paths: Vec::new(),
        detail: format!(
            "GitHub refused to merge {pr} at {} (HTTP {}): {}\n",
            item.head, ans.status, ans.message
        ),
    })
}

/// What the pull request's verdict settles before any merge: merged
/// already (landed), not ready, or its head is not the lane's; None when
/// it is ready at the lane's head.
fn settled_by_verdict(
    item: &Item,
    pr: &str,
    v: crate::integrations::github::verdict::Verdict,
) -> Option<Outcome> {
    match v.state {
        State::Merged | State::MergedUnconfirmed => {
            return Some(Outcome::Landed {
                commit: v.merge_commit.unwrap_or_else(|| item.head.clone()),
                gate: Some(format!("{pr} was merged already")),
            })
        }
        State::Ready => {}
        other => {
            return Some(Outcome::Refused {
                code: "PR_NOT_READY",
                paths: v.conflicts.clone(),
                detail: format!("{pr} is {}: {}\n", other.as_str(), v.reasons.join("; ")),
            })
        }
    }
    if v.head_sha.as_deref() != Some(item.head.as_str()) {
        return Some(Outcome::Refused {
            code: "HEAD_MOVED",
            paths: Vec::new(),
            detail: format!(
                "{pr}'s head is {}, but {} on the code remote is {}: push the branch the PR is for\n",
                v.head_sha.as_deref().unwrap_or("unknown"),
                item.lane.record.branch,
                item.head
            ),
        });
    }
    None
}

pub(super) enum Outcome {
    Landed {
        commit: String,
        gate: Option<String>,
    },
    Refused {
        code: &'static str,
        paths: Vec<String>,
        /// The hunks or the gate's output, trimmed.
        detail: String,
    },
}
