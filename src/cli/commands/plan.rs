//! `git swarm plan …`

use std::path::PathBuf;

use crate::cli::output::report_unreadable;
use crate::cli::output::Output;
use crate::cli::spec::{Facts, Spec};
use clap::Subcommand;
use git_swarm::error::Result;
use git_swarm::ops::plan::{
    self, CheckedOut, Created, Listed, Log, PrBody, Saved, Shown, StatusChange,
};
use git_swarm::store::records::Publication;
use git_swarm::store::short;

use crate::cli::Global;

/// What each command of this group is (see [`crate::cli::spec`]).
pub const SPECS: &[Spec] = &[
    Spec::new("plan new", Facts::WRITE),
    Spec::new("plan show", Facts::LIST),
    Spec::new("plan list", Facts::LIST),
    Spec::new("plan save", Facts::WRITE.and(Facts::BUDGETED)),
    Spec::new("plan checkout", Facts::WRITE),
    Spec::new("plan log", Facts::LIST),
    Spec::new("plan close", Facts::WRITE),
    Spec::new("plan reopen", Facts::WRITE),
];

#[derive(Debug, Subcommand)]
pub enum PlanCmd {
    /// Create a plan (fails with PLAN_EXISTS if another plan of that name exists; a repeat whose plan exists exactly as it creates it says so and succeeds).
    New {
        /// Plan name: [a-z0-9][a-z0-9._-]{0,62}.
        plan: String,
        /// One-line title (default: the name).
        #[arg(long)]
        title: Option<String>,
        /// Make this a child plan of P (shown under P in `status`).
        #[arg(long, value_name = "P")]
        parent: Option<String>,
        /// Start from this file: a PLAN.md text (at most 1 MiB), or a plan.yaml record (*.yaml, *.yml; at most 64 KiB). A regular file only: no FIFO or device.
        #[arg(long, value_name = "FILE")]
        from: Option<PathBuf>,
    },
    /// Show a plan's record and text.
    Show {
        /// The plan's name.
        plan: String,
        /// Print a pull-request body that folds the plan in (instead of committing PLAN.md).
        #[arg(long)]
        pr_body: bool,
    },
    /// List all plans (an unreadable record is listed as UNREADABLE, with a warning; exit 0).
    List,
    /// Snapshot the worktree's plan file into the plan ref, merging in what
    /// others saved since it was checked out (PLAN_SAVE_CONFLICT when both
    /// changed the same lines: nothing is saved). The plan file must be a
    /// regular file (never a symlink, FIFO or device; PLAN_FILE_UNSAFE) of
    /// at most 1 MiB.
    Save {
        /// Plan name (default: the plan of the lane you are in, or the only plan).
        plan: Option<String>,
        /// Read the plan text from this file (default: swarm.planFile at the worktree root). Named here, a symlink is followed; it must reach a regular file.
        #[arg(long, value_name = "FILE")]
        file: Option<PathBuf>,
        /// Journal message.
        #[arg(short = 'm', long = "message", value_name = "MSG")]
        message: Option<String>,
        /// Set the contract in force (packets name it; accept checks it).
        #[arg(long, value_name = "ID")]
        contract: Option<String>,
    },
    /// Write the plan text into the worktree as an untracked file. Never writes through a symlink (refused with PLAN_FILE_UNSAFE, --force or not).
    Checkout {
        /// Plan name (default: the plan of the lane you are in, or the only plan).
        plan: Option<String>,
        /// Overwrite local edits that were never saved.
        #[arg(long)]
        force: bool,
    },
    /// Print the plan's journal, newest first.
    Log {
        /// The plan's name.
        plan: String,
    },
    /// Mark the plan finished (gc may archive it later).
    Close {
        /// The plan's name.
        plan: String,
        /// Close it even with active lanes or open child plans.
        #[arg(long)]
        force: bool,
    },
    /// Reopen a closed plan (the inverse of close; also brings back a plan gc archived).
    Reopen {
        /// The plan's name.
        plan: String,
    },
}

pub fn run(g: &Global, cmd: PlanCmd) -> Result<Output> {
    let ctx = g.ctx()?;
    match cmd {
        PlanCmd::New {
            plan: name,
            title,
            parent,
            from,
        } => plan::new(
            &ctx,
            plan::NewPlan {
                name: &name,
                title: title.as_deref(),
                parent: parent.as_deref(),
                from: from.as_deref(),
            },
        )
        .map(created),
        PlanCmd::Show {
            plan: name,
            pr_body: true,
        } => plan::pr_body(&ctx, &name).map(pr_body),
        PlanCmd::Show { plan: name, .. } => plan::show(&ctx, &name).map(shown),
        PlanCmd::List => plan::list(&ctx).map(|l| listed(g.json, l)),
        PlanCmd::Save {
            plan: name,
            file,
            message,
            contract,
        } => plan::save(
            &ctx,
            plan::SaveArgs {
                name: name.as_deref(),
                file: file.as_deref(),
                message: message.as_deref(),
                contract: contract.as_deref(),
            },
        )
        .map(saved),
        PlanCmd::Checkout { plan: name, force } => {
            plan::checkout(&ctx, name.as_deref(), force).map(checked_out)
        }
        PlanCmd::Log { plan: name } => plan::log(&ctx, &name).map(log),
        PlanCmd::Close { plan: name, force } => plan::close(&ctx, &name, force).map(closed),
        PlanCmd::Reopen { plan: name } => plan::reopen(&ctx, &name).map(reopened),
    }
}

fn created(c: Created) -> Output {
    let name = &c.plan.plan;
    let published = match &c.publication {
        Publication::Published { remote } => format!(", published to {remote}"),
        Publication::Kept { .. } => String::new(),
    };
    let done = if c.already {
        format!("plan {name} was already created: nothing to do")
    } else {
        format!("created plan {name}")
    };
    let text = format!(
        "{done} ({}){published}\nedit it with `git swarm plan checkout {name}`, then `git swarm plan save {name}`\n",
        c.refname
    );
    let warning = c.publication.warning();
    let out = Output::new(&c, text);
    match warning {
        Some(w) => out.warn(w),
        None => out,
    }
}

fn shown(s: Shown) -> Output {
    let r = &s.record;
    let mut text = format!("plan:     {}\ntitle:    {}\n", r.plan, r.title);
    if let Some(p) = &r.parent {
        text.push_str(&format!("parent:   {p}\n"));
    }
    text.push_str(&format!(
        "contract: {}\nstatus:   {}\ncreated:  {} by {}\nupdated:  {}\ncommit:   {}\n",
        r.contract, r.status, r.created_at, r.created_by, r.updated_at, s.summary.commit
    ));
    if let Some(t) = &s.text {
        text.push('\n');
        text.push_str(t);
        if !t.ends_with('\n') {
            text.push('\n');
        }
    }
    Output::new(&s, text)
}

fn listed(wanted: bool, l: Listed) -> Output {
    let mut text = String::new();
    if l.plans.is_empty() && l.unreadable.is_empty() {
        text.push_str("no plans yet: create one with `git swarm plan new <plan>`\n");
    }
    for p in &l.plans {
        let parent = p
            .parent
            .as_deref()
            .map(|x| format!(" (child of {x})"))
            .unwrap_or_default();
        text.push_str(&format!(
            "{:<24} {:<8} {}{}\n",
            p.plan,
            p.status.as_str(),
            p.title,
            parent
        ));
    }
    report_unreadable(Output::listing(wanted, &l, text), &l.unreadable)
}

fn saved(s: Saved) -> Output {
    let name = &s.plan;
    let path = s.path.display();
    let mut text = if s.changed {
        format!("plan {name}: saved {path} ({})\n", &s.commit[..12])
    } else {
        format!("plan {name}: unchanged ({})\n", short(s.previous))
    };
    match (s.merged, s.changed) {
        (false, _) => {}
        (true, true) => text.push_str(&format!(
            "merged with the newer version {} saved since {path} was checked out; the file now holds the result\n",
            short(s.previous)
        )),
        (true, false) => text.push_str(&format!(
            "{path} was behind the plan: it now holds the newer version\n"
        )),
    }
    if s.contract_changed {
        text.push_str(&format!(
            "contract is now {}: `accept` refuses packets written against the old one\n",
            s.contract.as_deref().unwrap_or_default()
        ));
    }
    Output::new(&s, text)
}

fn checked_out(c: CheckedOut) -> Output {
    let msg = if c.written {
        format!(
            "wrote {} from plan {} ({}); it stays untracked\n",
            c.path,
            c.plan,
            &c.commit[..12]
        )
    } else {
        format!("{} already matches plan {}\n", c.path, c.plan)
    };
    let mut out = Output::new(&c, msg);
    out.warnings = c.warnings;
    out
}

fn log(l: Log) -> Output {
    let mut text = String::new();
    for e in &l.entries {
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
    Output::new(&l, text)
}

fn pr_body(b: PrBody) -> Output {
    let text = b.body.clone();
    Output::new(&b, text)
}

fn closed(c: StatusChange) -> Output {
    let text = if c.changed {
        format!("plan {}: closed\n", c.plan)
    } else {
        format!("plan {} is already closed\n", c.plan)
    };
    Output::new(&c, text)
}

fn reopened(c: StatusChange) -> Output {
    let name = &c.plan;
    let text = if !c.changed {
        format!(
            "plan {name} is not closed ({}): nothing to reopen\n",
            c.status
        )
    } else if c.unarchived == Some(true) {
        format!("plan {name}: reopened (restored from the gc archive)\n")
    } else {
        format!("plan {name}: reopened\n")
    };
    Output::new(&c, text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use git_swarm::ops::plan::Summary;
    use git_swarm::records::plan::Status;

    fn summary(plan: &str, status: Status, parent: Option<&str>) -> Summary {
        Summary {
            plan: plan.into(),
            title: format!("{plan} title"),
            parent: parent.map(str::to_string),
            contract: "v1".into(),
            status,
            commit: "1".repeat(40),
            has_text: true,
        }
    }

    #[test]
    fn a_listing_pads_names_and_statuses_into_columns() {
        let out = listed(
            true,
            Listed {
                plans: vec![
                    summary("a", Status::Active, None),
                    summary("b", Status::Closed, Some("a")),
                ],
                unreadable: Vec::new(),
            },
        );
        let want = format!(
            "{:<24} active   a title\n{:<24} closed   b title (child of a)\n",
            "a", "b"
        );
        assert_eq!(out.text, want);
        assert_eq!(out.json["plans"][1]["status"], "closed");
        assert_eq!(out.json["unreadable"], serde_json::json!([]));
        let empty = listed(
            false,
            Listed {
                plans: Vec::new(),
                unreadable: Vec::new(),
            },
        );
        assert!(empty.text.starts_with("no plans yet"));
    }

    #[test]
    fn close_and_reopen_say_what_changed() {
        let change = |changed, status, unarchived| StatusChange {
            plan: "p".into(),
            changed,
            status,
            commit: changed.then(|| "c".into()),
            unarchived,
        };
        assert_eq!(
            closed(change(false, Status::Closed, None)).text,
            "plan p is already closed\n"
        );
        let out = closed(change(true, Status::Closed, None));
        assert_eq!(out.text, "plan p: closed\n");
        assert_eq!(
            out.json,
            serde_json::json!({ "plan": "p", "changed": true, "status": "closed", "commit": "c" })
        );
        let out = reopened(change(false, Status::Active, None));
        assert_eq!(
            out.text,
            "plan p is not closed (active): nothing to reopen\n"
        );
        assert_eq!(out.json.as_object().unwrap().len(), 3);
        let out = reopened(change(true, Status::Active, Some(true)));
        assert_eq!(
            out.text,
            "plan p: reopened (restored from the gc archive)\n"
        );
        assert_eq!(out.json["unarchived"], true);
    }
}
