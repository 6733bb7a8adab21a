//! `git swarm forecast`: the conflict forecast between live lanes.

use crate::cli::output::{count, Output};
use crate::cli::spec::{Facts, Spec};
use clap::Args;
use git_swarm::error::{Code, Error, Result};
use git_swarm::integrations::forecast::{self, ConflictPath, Forecast, Verdict};
use git_swarm::records::lane::wip::Standing;

use crate::cli::Global;

/// What each command of this group is (see [`crate::cli::spec`]).
pub const SPECS: &[Spec] = &[Spec::new("forecast", Facts::LIST)];

#[derive(Debug, Args)]
pub struct ForecastArgs {
    /// Only pairs with a lane of this plan (and its lanes against their base).
    #[arg(long, value_name = "P")]
    pub plan: Option<String>,
    /// Exit 1 (FORECAST_CONFLICT) when any pair or base check is forecast to conflict (for CI).
    #[arg(long)]
    pub exit_code: bool,
}

pub fn forecast(g: &Global, a: ForecastArgs) -> Result<Output> {
    let ctx = g.ctx()?;
    let f = forecast::forecast(&ctx, a.plan.as_deref())?;
    let mut out = render(&f);
    for w in &f.warnings {
        out = out.warn(w.clone());
    }
    if a.exit_code && f.conflicts > 0 {
        for w in &out.warnings {
            say!("warning: {}", git_swarm::text::clean_block(w));
        }
        if !g.json {
            crate::cli::emit(
                &mut std::io::stdout().lock(),
                &git_swarm::text::clean_block(&out.text),
            );
        }
        let lanes: Vec<String> = forecast::conflicting_lanes(&f).into_iter().collect();
        return Err(Error::new(
            Code::ForecastConflict,
            format!(
                "{} forecast to conflict ({})",
                count(f.conflicts, "merge is", "merges are"),
                lanes.join(", ")
            ),
        )
        .hint("rebase one lane onto the other's work, or agree who changes those lines first; `git swarm forecast` shows the hunks")
        .with_detail(out.json));
    }
    Ok(out)
}

fn render(f: &Forecast) -> Output {
    let mut text = String::new();
    let pairs = f.pairs.len();
    text.push_str(&format!(
        "forecast: {}, {}, {} ({} merged, {} cached, {} trivial){}\n",
        count(f.lanes.len(), "lane", "lanes"),
        count(pairs, "pair", "pairs"),
        count(f.bases.len(), "base check", "base checks"),
        f.merged,
        f.cached,
        f.trivial,
        if f.fetched { "; fetched" } else { "" }
    ));
    for p in &f.pairs {
        match p.verdict {
            Verdict::Conflict => {
                text.push_str(&format!("CONFLICT {} × {}\n", p.a, p.b));
                conflicts(&mut text, &p.conflicts, &p.a, &p.b);
            }
            Verdict::SameFiles => text.push_str(&format!(
                "same files {} × {}: {} (merge clean)\n",
                p.a,
                p.b,
                p.same_files.join(", ")
            )),
            Verdict::Clean => {}
        }
    }
    for b in &f.bases {
        if b.verdict == Verdict::Conflict {
            text.push_str(&format!(
                "CONFLICT {} against its base {} (moved to {})\n",
                b.lane,
                b.base,
                short(&b.base_commit)
            ));
            conflicts(&mut text, &b.conflicts, &b.base, &b.lane);
        }
    }
    for s in &f.skipped {
        text.push_str(&format!("skipped {}: {}\n", s.feature, s.reason));
    }
    snapshots(&mut text, f);
    for r in &f.reserved {
        text.push_str(&format!(
            "RESERVED {} ({}) changes {}: reserved by {} ({}{}) until {}\n",
            r.lane,
            r.owner,
            r.path,
            r.holder,
            r.reservation,
            r.task
                .as_deref()
                .map(|t| format!(", task {t}"))
                .unwrap_or_default(),
            r.until
        ));
    }
    let clean = f
        .pairs
        .iter()
        .filter(|p| p.verdict == Verdict::Clean)
        .count();
    text.push_str(&format!(
        "{}; {}, {} clean{}\n",
        count(f.conflicts, "conflict", "conflicts"),
        count(f.same_files, "pair touches", "pairs touch") + " the same files",
        count(clean, "pair", "pairs"),
        if f.reserved.is_empty() {
            String::new()
        } else {
            format!(
                "; {} reserved by others",
                count(f.reserved.len(), "changed path", "changed paths")
            )
        }
    ));
    Output::new(f, text)
}

/// Which lanes were forecast with their uncommitted work, and which
/// snapshots the branch moved past.
fn snapshots(text: &mut String, f: &Forecast) {
    for l in &f.lanes {
        let Some(s) = &l.snapshot else { continue };
        match s.standing {
            Standing::Current if s.clean => {}
            Standing::Current => text.push_str(&format!(
                "uncommitted work of {} counted: its snapshot of {} on {}\n",
                l.feature,
                s.taken_at,
                short(&s.on)
            )),
            Standing::Stale => text.push_str(&format!(
                "stale snapshot {}: taken {} on {}, but {} is at {} since; ignored (`git swarm lane snapshot` in the lane publishes a new one)\n",
                l.feature,
                s.taken_at,
                short(&s.on),
                l.branch,
                short(&l.head)
            )),
        }
    }
}

/// `hook pre-push`: warn (never refuse) when a pushed lane head is
/// forecast to conflict with a sibling lane; a forecast that fails is one
/// line of warning too.
pub fn warn_pre_push(ctx: &git_swarm::session::Ctx, input: &str) {
    // Not even a bug in the forecast may fail the push: a panic is caught
    // (quietly) and becomes the same one line.
    let quiet = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        forecast::pushed(ctx, input)
    }));
    std::panic::set_hook(quiet);
    let result = result.unwrap_or_else(|_| {
        Err(Error::new(
            Code::Internal,
            "the forecast stopped unexpectedly",
        ))
    });
    match result {
        Ok(found) => {
            for c in found {
                say!(
                    "git swarm: warning: {} is forecast to conflict with lane {} in {} (`git swarm forecast` shows the hunks; the push goes on)",
                    c.lane,
                    c.with,
                    c.paths.join(", ")
                );
            }
        }
        Err(e) => say!(
            "git swarm: warning: no conflict forecast for this push ({}); the push goes on",
            git_swarm::text::clean(&e.message)
        ),
    }
}

fn conflicts(text: &mut String, list: &[ConflictPath], a: &str, b: &str) {
    for c in list {
        text.push_str(&format!("  {} ({})\n", c.path, c.kinds.join(", ")));
        for (side, lines) in [(a, &c.ours), (b, &c.theirs)] {
            if lines.is_empty() {
                continue;
            }
            text.push_str(&format!("    {side}:\n"));
            for l in lines {
                text.push_str(&format!("      | {l}\n"));
            }
        }
    }
}

fn short(id: &str) -> &str {
    &id[..id.len().min(12)]
}
