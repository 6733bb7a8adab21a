//! `git swarm lead …`

use crate::cli::output::Output;
use crate::cli::spec::{Facts, Spec};
use clap::Subcommand;
use git_swarm::error::{Code, Result};
use git_swarm::ops::lead::{self, merge, Check, Log, Ran, Status};
use git_swarm::ops::message::announce;
use git_swarm::records::lead::{lead_ref, succession_omits, Change, LeadRecord, Op, Verb};

use crate::cli::Global;

/// What each command of this group is (see [`crate::cli::spec`]).
pub const SPECS: &[Spec] = &[
    Spec::new(
        "lead claim",
        Facts::WRITE.and(Facts::ARBITRATION).and(Facts::BOUNDARY),
    ),
    Spec::new("lead renew", Facts::WRITE),
    Spec::new("lead handover", Facts::WRITE),
    Spec::new(
        "lead takeover",
        Facts::WRITE.and(Facts::ARBITRATION).and(Facts::BOUNDARY),
    ),
    Spec::new("lead release", Facts::WRITE),
    Spec::new("lead succession", Facts::WRITE),
    Spec::new("lead log", Facts::LIST),
    Spec::new("lead status", Facts::LIST),
    Spec::new("lead check", Facts::REMOTE),
    Spec::new("lead push", Facts::WRITE.and(Facts::NO_KEEP)),
    Spec::new("lead merge", Facts::WRITE.and(Facts::NO_KEEP)),
];

#[derive(Debug, Subcommand)]
pub enum LeadCmd {
    /// Claim leadership of a plan (epoch 1, or epoch+1 after a release).
    Claim {
        /// The plan.
        #[arg(long, value_name = "P")]
        plan: String,
        /// Ordered successors, comma-separated.
        #[arg(long, value_name = "A,B", value_delimiter = ',', required = true)]
        succession: Vec<String>,
        /// Lanes under this leader, comma-separated.
        #[arg(long, value_name = "X,Y", value_delimiter = ',')]
        lanes: Vec<String>,
        /// Lease length, e.g. 30m, 2h (default swarm.lease, else 30m).
        #[arg(long, value_name = "DURATION")]
        lease: Option<String>,
    },
    /// Extend the lease (leader only; epoch unchanged).
    Renew {
        /// The plan.
        #[arg(long, value_name = "P")]
        plan: String,
        /// Lease length from now, e.g. 30m, 2h (default swarm.lease, else 30m).
        #[arg(long, value_name = "DURATION")]
        lease: Option<String>,
        /// Replace the lanes list (as lanes start and finish), comma-separated.
        #[arg(long, value_name = "X,Y", value_delimiter = ',')]
        lanes: Option<Vec<String>>,
    },
    /// Hand leadership to ADDR (leader only; epoch+1).
    Handover {
        /// The new leader's address.
        addr: String,
        /// The plan.
        #[arg(long, value_name = "P")]
        plan: String,
        /// The new leader's lease, e.g. 30m, 2h (default swarm.lease, else 30m).
        #[arg(long, value_name = "DURATION")]
        lease: Option<String>,
        /// Hand over to an address that is not in the succession (it is added).
        #[arg(long)]
        force: bool,
    },
    /// Take leadership as a succession member (lease expired, or --force).
    Takeover {
        /// The plan.
        #[arg(long, value_name = "P")]
        plan: String,
        /// Why you take over (recorded in the lead record's journal).
        #[arg(long, value_name = "R")]
        reason: String,
        /// Take over although the lease is still live.
        #[arg(long)]
        force: bool,
        /// Your lease, e.g. 30m, 2h (default swarm.lease, else 30m).
        #[arg(long, value_name = "DURATION")]
        lease: Option<String>,
    },
    /// Give up leadership (leader only; epoch unchanged).
    Release {
        /// The plan.
        #[arg(long, value_name = "P")]
        plan: String,
    },
    /// Replace the ordered succession (leader only; epoch unchanged; published at once).
    Succession {
        /// The plan.
        #[arg(long, value_name = "P")]
        plan: String,
        /// The new succession, in order, comma-separated.
        #[arg(value_name = "A,B", value_delimiter = ',', required = true)]
        succession: Vec<String>,
    },
    /// Print the leader record's journal, newest first (epochs, events, actors).
    Log {
        /// The plan.
        #[arg(long, value_name = "P")]
        plan: String,
    },
    /// Show the leader record.
    Status {
        /// The plan.
        #[arg(long, value_name = "P")]
        plan: String,
    },
    /// Exit 0 iff you are the current leader (at the remote, when there is one).
    Check {
        /// The plan.
        #[arg(long, value_name = "P")]
        plan: String,
    },
    /// Fenced publish: push refspecs and a new lead record in one atomic push.
    Push {
        /// The plan.
        #[arg(long, value_name = "P")]
        plan: String,
        /// What to publish, as for `git push` (e.g. HEAD:<base>, v1.2); none: the base branch (`swarm.base`, else the code remote's default branch). In one atomic push with the lead ref (with a coordination remote of its own: the lead ref there first, then these to the code remote).
        #[arg(value_name = "REFSPEC")]
        refspecs: Vec<String>,
    },
    /// The merge queue: land the plan's ready lanes (forecast order, gate run, fenced push); refused lanes get a resolution brief.
    Merge {
        /// Only these lanes (a named lane counts as ready without a `PR open`/`done` report).
        #[arg(value_name = "F")]
        features: Vec<String>,
        /// The plan (default: the only one).
        #[arg(long, value_name = "P")]
        plan: Option<String>,
        /// The gate, run in the merged tree (default swarm.gate); exit 0 with no test run fails.
        #[arg(long, value_name = "CMD")]
        gate: Option<String>,
        /// Land without a gate (said in each owner's message).
        #[arg(long)]
        no_gate: bool,
        /// Show the queue (ready lanes in order, waiting ones and why); land nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

/// `lead merge`: the merge queue, with a GitHub client made only if a
/// lane's pull request needs one.
fn merge_queue(ctx: &git_swarm::session::Ctx, args: &merge::Args) -> Result<Output> {
    let mut github = || -> Result<Box<dyn git_swarm::integrations::github::client::GitHub>> {
        Ok(Box::new(super::verify::rest_client(
            ctx,
            &git_swarm::integrations::verify::Target::Lane(String::new()),
        )?))
    };
    merge::merge(ctx, args, &mut github).map(|q| queue(&q))
}

/// A leadership write (claim, renew, handover, takeover, release,
/// succession, push), with the announcements it owes.
fn arbitrate(ctx: &git_swarm::session::Ctx, plan: &str, op: Op) -> Result<Output> {
    let verb = op.verb();
    let r = match lead::run(ctx, plan, op) {
        Ok(r) => r,
        Err(e) => {
            // A fenced leader learns who leads now and why at this very
            // command (the notices after it read what this fetched).
            if matches!(e.code, Code::LeadFenced | Code::NotLeader) {
                announce::fetch(ctx, plan);
            }
            if verb.contest() || verb == Verb::Handover {
                announce::flush(ctx, plan);
            }
            return Err(e);
        }
    };
    let announced = match (verb, &r.commit) {
        (Verb::Claim | Verb::Handover | Verb::Takeover, Some(commit)) => {
            announce::flush(ctx, plan);
            announce::leadership(ctx, plan, &r.record, commit)?
        }
        _ => None,
    };
    let mut out = ran(&r);
    if let Some(a) = announced {
        out = announcement(out, &a);
    }
    Ok(out)
}

pub fn run(g: &Global, cmd: LeadCmd) -> Result<Output> {
    let ctx = g.ctx()?;
    let (plan, op) = match cmd {
        LeadCmd::Log { plan } => return lead::log(&ctx, &plan).map(|l| log(&l)),
        LeadCmd::Status { plan } => return lead::status(&ctx, &plan).map(|s| status(&s)),
        LeadCmd::Check { plan } => return lead::check(&ctx, &plan).map(|c| check(&c)),
        LeadCmd::Claim {
            plan,
            succession,
            lanes,
            lease,
        } => (
            plan,
            Op::Claim {
                succession,
                lanes,
                lease,
            },
        ),
        LeadCmd::Renew { plan, lease, lanes } => (plan, Op::Renew { lease, lanes }),
        LeadCmd::Handover {
            addr,
            plan,
            lease,
            force,
        } => (
            plan,
            Op::Handover {
                to: addr,
                lease,
                force,
            },
        ),
        LeadCmd::Takeover {
            plan,
            reason,
            force,
            lease,
        } => (
            plan,
            Op::Takeover {
                reason,
                force,
                lease,
            },
        ),
        LeadCmd::Release { plan } => (plan, Op::Release),
        LeadCmd::Succession { plan, succession } => (plan, Op::Succession { succession }),
        LeadCmd::Push { plan, refspecs } => (plan, Op::Push { refspecs }),
        LeadCmd::Merge {
            features,
            plan,
            gate,
            no_gate,
            dry_run,
        } => {
            let args = merge::Args {
                features,
                plan,
                gate,
                no_gate,
                dry_run,
            };
            return merge_queue(&ctx, &args);
        }
    };
    arbitrate(&ctx, &plan, op)
}

/// Add a leadership announcement to a leader command's output: in the JSON
/// as `announced`, in the text as one line, and a warning when it stayed
/// local.
fn announcement(mut out: Output, a: &announce::Announced) -> Output {
    if let Some(map) = out.json.as_object_mut() {
        map.insert(
            "announced".into(),
            serde_json::to_value(a).unwrap_or_default(),
        );
    }
    let m = &a.posted.message;
    out.text.push_str(&format!(
        "announced to plan {} ({}{}): {}\n",
        m.plan.as_deref().unwrap_or("-"),
        m.id,
        if a.already {
            ", written by an earlier run"
        } else {
            ""
        },
        m.body
    ));
    if let Some(w) = &a.posted.warning {
        out = out.warn(w.clone());
    }
    out
}

fn lease_until(rec: &LeadRecord) -> &str {
    rec.lease_until.as_deref().unwrap_or("-")
}

/// A leader command's outcome: what changed, or what an earlier run did.
pub fn ran(r: &Ran) -> Output {
    let mut out = Output::new(r, ran_text(r));
    if let Some(stale) = &r.stale {
        out = out.warn(stale.clone());
    }
    let list = &r.record.succession;
    if r.change.is_some() && succession_omits(r.verb, list, &r.actor) {
        return out.warn(format!(
            "the succession of plan '{}' ({}) does not name you ({}): once your lease lapses you cannot take the plan back with `lead takeover`",
            r.plan,
            list.join(", "),
            r.actor
        ));
    }
    out
}

fn ran_text(r: &Ran) -> String {
    let (plan, rec) = (&r.plan, &r.record);
    let epoch = rec.epoch;
    let Some(change) = &r.change else {
        return already_text(r);
    };
    match change {
        Change::Claimed => format!(
            "you lead plan {plan} at epoch {epoch} (lease until {}; succession {})\n",
            lease_until(rec),
            if rec.succession.is_empty() {
                "none".to_string()
            } else {
                rec.succession.join(", ")
            }
        ),
        Change::Renewed => format!(
            "you lead plan {plan} at epoch {epoch}; lease until {}\n",
            lease_until(rec)
        ),
        Change::Succession => format!(
            "succession of plan {plan} is now {} (epoch {epoch} unchanged)\n",
            rec.succession.join(", ")
        ),
        Change::HandedOver { to } => {
            format!("{to} now leads plan {plan} at epoch {epoch}; you are fenced from now on\n")
        }
        Change::TookOver { previous, forced } => format!(
            "you lead plan {plan} at epoch {epoch} (took over from {previous}, {}); lease until {}\n",
            if *forced { "forced" } else { "lease expired" },
            lease_until(rec)
        ),
        Change::Released => {
            format!("released plan {plan} at epoch {epoch}; nobody leads it now\n")
        }
        Change::Pushed { refspecs } => format!(
            "published {} as leader of plan {plan} at epoch {epoch}\n",
            refspecs.join(" ")
        ),
    }
}

/// An earlier run had published what this one asked for.
fn already_text(r: &Ran) -> String {
    let (plan, rec) = (&r.plan, &r.record);
    let epoch = rec.epoch;
    let earlier = |what: &str| format!("(your earlier {what} was published; local ref updated)");
    match r.verb {
        Verb::Succession => format!(
            "the succession of plan {plan} is already {} (epoch {epoch}): nothing to change\n",
            rec.succession.join(", ")
        ),
        Verb::Handover => format!(
            "{} leads plan {plan} at epoch {epoch} {}\n",
            rec.current_leader().unwrap_or("-"),
            earlier("handover")
        ),
        Verb::Release => format!(
            "plan {plan} is released at epoch {epoch} {}\n",
            earlier("release")
        ),
        verb => format!(
            "you lead plan {plan} at epoch {epoch} {}\n",
            earlier(verb.name())
        ),
    }
}

/// `lead status`.
pub fn status(s: &Status) -> Output {
    let plan = &s.plan;
    let mut text = if !s.exists {
        format!(
            "plan {plan}: nobody has claimed it (no {})\n",
            lead_ref(plan)
        )
    } else {
        status_fields(s)
    };
    if let Some(view) = &s.mirror {
        text.push_str(&crate::cli::output::mirror_text(view, s.now));
    }
    Output::new(s, text)
}

fn status_fields(s: &Status) -> String {
    let rec = &s.record;
    let list = |l: &[String]| {
        if l.is_empty() {
            "-".to_string()
        } else {
            l.join(", ")
        }
    };
    let lease = match (&rec.lease_until, s.lease_live) {
        (Some(u), true) => format!("until {u}"),
        (Some(u), false) => format!("expired at {u}"),
        (None, _) => "-".into(),
    };
    let commit = s.commit.as_deref().unwrap_or("");
    format!(
        "plan:       {}\nleader:     {}\nepoch:      {}\nlease:      {lease}\nsuccession: {}\nlanes:      {}\nupdated:    {}\ncommit:     {}{}\n",
        s.plan,
        rec.current_leader().unwrap_or("(none: released)"),
        rec.epoch,
        list(&rec.succession),
        list(&rec.lanes),
        rec.updated_at,
        &commit[..commit.len().min(12)],
        if s.online && s.published != Some(true) {
            " (not published: `git swarm sync` publishes it)"
        } else {
            ""
        }
    )
}

/// `lead log`.
pub fn log(l: &Log) -> Output {
    let plan = &l.plan;
    if !l.exists {
        return Output::new(
            l,
            format!(
                "plan {plan}: nobody has claimed it (no {})\n",
                lead_ref(plan)
            ),
        );
    }
    let mut text = String::new();
    for e in &l.entries {
        text.push_str(&format!(
            "{} {} epoch {:<3} {:<16} {:<12} leader {:<12} {}\n",
            &e.commit[..12],
            e.time,
            e.epoch,
            e.event,
            e.actor,
            e.leader.as_deref().unwrap_or("-"),
            e.summary
        ));
    }
    Output::new(l, text)
}

/// `lead check`: exit 0 iff the actor leads.
pub fn check(c: &Check) -> Output {
    let (plan, actor, epoch) = (&c.plan, &c.actor, c.epoch);
    let text = match (&c.leader, c.is_leader) {
        (_, true) => format!("you ({actor}) lead plan {plan} at epoch {epoch}\n"),
        (Some(l), false) => format!("{l} leads plan {plan} at epoch {epoch}, not you ({actor})\n"),
        (None, false) if c.exists => {
            format!("nobody leads plan {plan} (released at epoch {epoch})\n")
        }
        (None, false) => format!("nobody has claimed plan {plan}\n"),
    };
    Output::new(c, text).with_exit(if c.is_leader { 0 } else { 1 })
}

/// `lead merge`: what landed, what was refused (with its brief), what waits.
/// Exit 1 when a ready lane was refused (each names its code).
pub fn queue(q: &merge::Queue) -> Output {
    let mut text = String::new();
    let short = |c: &str| c[..c.len().min(12)].to_string();
    if q.dry_run {
        text.push_str(&format!(
            "plan {}: {} ready, in this order: {}\n",
            q.plan,
            q.order.len(),
            if q.order.is_empty() {
                "-".to_string()
            } else {
                q.order.join(", ")
            }
        ));
    }
    for l in &q.landed {
        text.push_str(&format!(
            "landed {} on {} in {}{}{}\n",
            l.lane,
            l.base,
            short(&l.commit),
            match &l.gate {
                Some(g) => format!(" (gate: {g})"),
                None => " (no gate)".into(),
            },
            if l.resumed {
                " (landed by an earlier run; finished now)"
            } else {
                ""
            }
        ));
        if !l.closed.is_empty() {
            text.push_str(&format!("  closed: {}\n", l.closed.join(", ")));
        }
    }
    for r in &q.refused {
        text.push_str(&format!(
            "not landed {} ({}): brief sent to {}\n",
            r.lane, r.code, r.owner
        ));
        for line in r.brief.lines().take(4) {
            text.push_str(&format!("  {line}\n"));
        }
    }
    for w in &q.waiting {
        text.push_str(&format!("waiting {}: {}\n", w.lane, w.why));
    }
    if q.landed.is_empty() && q.refused.is_empty() && q.waiting.is_empty() && !q.dry_run {
        text.push_str(&format!("plan {}: no lane to land\n", q.plan));
    }
    let mut out = Output::new(q, text);
    for w in &q.warnings {
        out = out.warn(w.clone());
    }
    if q.refused.is_empty() {
        out
    } else {
        out.with_exit(1)
    }
}
