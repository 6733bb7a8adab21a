//! `git swarm handoff`, `packets`, `packet show`, `packet withdraw`, `accept`

use std::path::PathBuf;

use crate::cli::output::Output;
use crate::cli::spec::{Facts, Spec};
use clap::{Args, Subcommand};
use git_swarm::error::{Code, Result};

use crate::cli::output::report_unreadable;
use git_swarm::ops::accept::{self, Accepted};
use git_swarm::ops::handoff::{self as handoff_op, Handoff};
use git_swarm::ops::packet::list::{self, Listing, Shown};
use git_swarm::ops::packet::withdraw::{self, Withdrawn};
use git_swarm::records::packet::HandoffInput;
use git_swarm::store::short;

use crate::cli::Global;

/// What each command of this group is (see [`crate::cli::spec`]).
pub const SPECS: &[Spec] = &[
    Spec::new("handoff", Facts::WRITE.and(Facts::IN_LANE)),
    Spec::new("packets", Facts::LIST),
    Spec::new("packet show", Facts::LIST),
    Spec::new("packet withdraw", Facts::WRITE),
    Spec::new(
        "accept",
        Facts::WRITE.and(Facts::ARBITRATION).and(Facts::BOUNDARY),
    ),
];

#[derive(Debug, Args)]
pub struct HandoffArgs {
    /// capacity_critical, capacity_low, context_pressure, usage_limit or lead_handover.
    #[arg(long, value_name = "R")]
    pub reason: String,
    /// The plan (default: the plan of the lane you are in, or the only plan).
    #[arg(long, value_name = "P")]
    pub plan: Option<String>,
    /// The task in progress.
    #[arg(long, value_name = "T", allow_hyphen_values = true)]
    pub task: Option<String>,
    /// The step in progress.
    #[arg(long, value_name = "S", allow_hyphen_values = true)]
    pub step: Option<String>,
    /// Something done (repeatable).
    #[arg(long = "done", value_name = "X", allow_hyphen_values = true)]
    pub done: Vec<String>,
    /// A verified claim with its evidence path (repeatable).
    #[arg(
        long = "verified",
        value_name = "CLAIM=EVIDENCE",
        allow_hyphen_values = true
    )]
    pub verified: Vec<String>,
    /// A gate not yet verified: the successor must re-run it (repeatable).
    #[arg(long = "unverified", value_name = "GATE", allow_hyphen_values = true)]
    pub unverified: Vec<String>,
    /// The next step, in order (repeatable).
    #[arg(long = "next", value_name = "STEP", allow_hyphen_values = true)]
    pub next: Vec<String>,
    /// An open request (repeatable).
    #[arg(long = "request", value_name = "X", allow_hyphen_values = true)]
    pub request: Vec<String>,
    /// A decision taken (repeatable).
    #[arg(long = "decision", value_name = "TEXT", allow_hyphen_values = true)]
    pub decision: Vec<String>,
    /// Also write the packet to FILE (mode 0600).
    #[arg(long, value_name = "FILE")]
    pub export: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct PacketsArgs {
    /// Only packets of this plan.
    #[arg(long, value_name = "P")]
    pub plan: Option<String>,
    /// Only packets not yet accepted (nor withdrawn).
    #[arg(long)]
    pub open: bool,
}

#[derive(Debug, Subcommand)]
pub enum PacketCmd {
    /// Show one packet (and its acceptance, if any).
    Show {
        /// The packet id (`git swarm packets` lists them), or <plan>/<id>.
        packet_id: String,
    },
    /// Withdraw a packet you wrote, before anyone accepted it (e.g. one
    /// written to the wrong plan): recorded on the packet ref, never
    /// deleted; a withdrawn packet refuses `accept`.
    Withdraw {
        /// The packet id (`git swarm packets` lists them), or <plan>/<id>.
        packet_id: String,
        /// Why it is withdrawn (kept with the packet).
        #[arg(long, value_name = "R", allow_hyphen_values = true)]
        reason: String,
    },
}

#[derive(Debug, Args)]
pub struct AcceptArgs {
    /// The packet id (`git swarm packets --open` lists them), or <plan>/<id>.
    #[arg(required_unless_present = "lane")]
    pub packet_id: Option<String>,
    /// Instead of an id: the one open packet that hands over lane F.
    #[arg(long, value_name = "F", conflicts_with = "packet_id")]
    pub lane: Option<String>,
    /// Do not restore the packet's snapshot of the uncommitted work: the
    /// checkout must already hold it (the behaviour before snapshots).
    #[arg(long)]
    pub no_restore: bool,
    /// Accept in the worktree at PATH, created on the packet's branch
    /// when absent (the snapshot is then restored into it).
    #[arg(long, value_name = "PATH")]
    pub worktree: Option<std::path::PathBuf>,
}

pub fn handoff(g: &Global, a: HandoffArgs) -> Result<Output> {
    let ctx = g.ctx()?;
    let done = handoff_op::handoff(
        &ctx,
        HandoffInput {
            reason: a.reason,
            plan: a.plan,
            task: a.task,
            step: a.step,
            done: a.done,
            verified: a.verified,
            unverified: a.unverified,
            next: a.next,
            requests: a.request,
            decisions: a.decision,
            export: a.export,
        },
    )?;
    Ok(render_handoff(&done))
}

pub fn packets(g: &Global, a: PacketsArgs) -> Result<Output> {
    let ctx = g.ctx()?;
    Ok(render_listing(
        g.json,
        &list::list(&ctx, a.plan.as_deref(), a.open)?,
    ))
}

pub fn packet(g: &Global, c: PacketCmd) -> Result<Output> {
    let ctx = g.ctx()?;
    match c {
        PacketCmd::Show { packet_id } => Ok(render_shown(&list::show(&ctx, &packet_id)?)),
        PacketCmd::Withdraw { packet_id, reason } => Ok(render_withdrawn(&withdraw::withdraw(
            &ctx, &packet_id, &reason,
        )?)),
    }
}

pub fn accept(g: &Global, mut a: AcceptArgs) -> Result<Output> {
    let ctx = g.ctx()?;
    let id = match (a.packet_id.take(), &a.lane) {
        (Some(id), _) => id,
        (None, Some(lane)) => accept::open_packet_of(&ctx, lane)?,
        (None, None) => unreachable!("clap requires a packet id or --lane"),
    };
    let a = AcceptArgs {
        packet_id: Some(id),
        ..a
    };
    let packet_id = a.packet_id.clone().unwrap_or_default();
    let Some(path) = &a.worktree else {
        return Ok(render_accepted(&accept::accept_with(
            &ctx,
            &packet_id,
            !a.no_restore,
        )?));
    };
    let mut notes = Vec::new();
    let (dir, made) = accept::worktree_noted(&ctx, &packet_id, path, &mut notes)?;
    let accepted = git_swarm::session::Ctx::open(&dir, g.as_.clone(), g.network(), None, &g.run)
        .and_then(|there| accept::accept_with(&there, &packet_id, !a.no_restore));
    match accepted {
        Ok(mut acc) => {
            acc.notes = notes;
            // The agent hooks installed in this clone, in the new checkout.
            let hooks = git_swarm::integrations::agent::install::into_worktree(&ctx, &dir);
            let mut out = render_accepted(&acc);
            out.warnings.extend(hooks);
            Ok(out)
        }
        // Only a refusal before anything was published: after the
        // acceptance went out, the worktree is where the successor works.
        Err(e) if made && nothing_recorded(e.code) => {
            accept::remove_made(&ctx, &dir);
            Err(e.hint(format!(
                "the worktree {} made for this accept was removed again",
                dir.display()
            )))
        }
        Err(e) => Err(e),
    }
}

/// The codes with which `accept` refuses before it publishes anything.
fn nothing_recorded(code: Code) -> bool {
    matches!(
        code,
        Code::PacketMismatch
            | Code::PacketAlreadyAccepted
            | Code::PacketWithdrawn
            | Code::SnapshotUnsafe
            | Code::SnapshotMissing
            | Code::PacketLaneMissing
            | Code::NotFound
            | Code::Usage
    )
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn render_handoff(h: &Handoff) -> Output {
    let packet = &h.packet;
    let mut text = format!(
        "{} packet {} ({})\n",
        if h.resumed { "completed" } else { "wrote" },
        packet.id,
        h.refname
    );
    text.push_str(&format!(
        "  work: {} at {} ({}), {} uncommitted path{}\n",
        packet.branch.as_deref().unwrap_or("(detached HEAD)"),
        &packet.head[..12],
        if packet.pushed {
            "pushed"
        } else {
            "not on the remote"
        },
        packet.uncommitted.len(),
        plural(packet.uncommitted.len())
    ));
    if let Some(c) = &packet.claim {
        text.push_str(&format!(
            "  claim: task {}/{} (claim {}, until {}): accept moves it to the successor\n",
            c.plan, c.task, c.epoch, c.lease_until
        ));
    }
    for r in &packet.reservations {
        text.push_str(&format!(
            "  reservation {}: {} (until {}): accept moves it to the successor\n",
            r.id,
            r.paths.join(", "),
            r.lease_until
        ));
    }
    if let Some(remote) = &h.published_to {
        text.push_str(&format!("  published to {remote}\n"));
    }
    if let Some(path) = &h.exported_to {
        text.push_str(&format!("  exported to {} (mode 0600)\n", path.display()));
    }
    text.push_str(&format!(
        "a successor takes over with: git swarm accept {}\n",
        packet.id
    ));
    if let Some(lane) = &packet.lane {
        text.push_str(&format!(
            "  (or, as the one open packet of the lane: git swarm accept --lane {lane})\n"
        ));
    }
    let mut json = serde_json::to_value(packet).expect("a packet serialises");
    json["ref"] = serde_json::json!(h.refname);
    json["resumed"] = serde_json::json!(h.resumed);
    json["published"] = serde_json::json!(h.published_to.is_some());
    json["warnings"] = serde_json::json!(h.warnings);
    let mut out = Output::new(json, text);
    out.warnings = h.warnings.clone();
    out
}

/// What the packet tells its successor to do: the next steps, the gates
/// to re-run, what the author verified, and what is done, asked and
/// decided.
fn what_to_do(packet: &git_swarm::records::packet::Packet) -> String {
    let mut text = String::new();
    text.push_str("\nnext steps, in order:\n");
    if packet.next.is_empty() {
        text.push_str("  (none given: re-derive the next action from the plan)\n");
    }
    for (i, n) in packet.next.iter().enumerate() {
        text.push_str(&format!("  {}. {n}\n", i + 1));
    }
    text.push_str("\ngates you must re-run (unverified in the packet):\n");
    if packet.unverified.is_empty() {
        text.push_str("  (none listed)\n");
    }
    for g in &packet.unverified {
        text.push_str(&format!("  - {g}\n"));
    }
    if !packet.verified.is_empty() {
        text.push_str("\nverified by the author (with evidence):\n");
        for v in &packet.verified {
            text.push_str(&format!("  - {} ({})\n", v.claim, v.evidence));
        }
    }
    for (title, items) in [
        ("done", &packet.done),
        ("open requests", &packet.requests),
        ("decisions", &packet.decisions),
    ] {
        if !items.is_empty() {
            text.push_str(&format!("\n{title}:\n"));
            for i in items {
                text.push_str(&format!("  - {i}\n"));
            }
        }
    }
    text
}

fn render_accepted(a: &Accepted) -> Output {
    let packet = &a.packet;
    let mut text = format!(
        "accepted packet {} (plan {}, from {}: {}){}\n",
        packet.id,
        packet.plan,
        packet.author,
        packet.reason,
        if a.resumed {
            " — completed an interrupted acceptance"
        } else {
            ""
        }
    );
    if a.already {
        text = format!(
            "packet {} was already accepted by you ({}) at {}: nothing to do\n",
            packet.id, a.acceptance.accepted_by, a.acceptance.accepted_at
        );
    }
    for n in &a.notes {
        text.push_str(&format!("{n}\n"));
    }
    if let Some(t) = &packet.task {
        text.push_str(&format!("task: {t}\n"));
    }
    if let Some(s) = &packet.step {
        text.push_str(&format!("step: {s}\n"));
    }
    if let (true, Some(snap)) = (a.restored, &packet.snapshot) {
        text.push_str(&format!(
            "restored the uncommitted work from the snapshot: {} path{} ({} bytes) in {}\n",
            snap.paths.len(),
            plural(snap.paths.len()),
            snap.size,
            a.acceptance.checkout
        ));
    }
    let moved = &a.acceptance.moved;
    if let Some(c) = &moved.claim {
        text.push_str(&format!(
            "moved to you: the claim on task {c} (renew it with `git swarm task renew`)\n"
        ));
    }
    if !moved.reservations.is_empty() {
        text.push_str(&format!(
            "moved to you: reservation{} {}\n",
            plural(moved.reservations.len()),
            moved.reservations.join(", ")
        ));
    }
    for n in &moved.not_moved {
        text.push_str(&format!("NOT moved: {n}\n"));
    }
    text.push_str(&what_to_do(packet));
    let acc = &a.acceptance;
    let json = serde_json::json!({
        "packet": packet.id,
        "plan": packet.plan,
        "ref": a.refname,
        "accepted_by": acc.accepted_by,
        "accepted_at": acc.accepted_at,
        "next": packet.next,
        "must_rerun": packet.unverified,
        "task": packet.task,
        "step": packet.step,
        "resumed": a.resumed,
        "already": a.already,
        "notes": a.notes,
        "restored": a.restored,
        "published": a.published,
        "acceptance": acc,
        "moved": acc.moved,
    });
    let mut out = Output::new(json, text);
    out.warnings = a.warnings.clone();
    out
}

fn render_withdrawn(w: &Withdrawn) -> Output {
    match w.commit {
        None => Output::new(
            serde_json::json!({ "packet": w.packet, "ref": w.refname, "withdrawal": w.withdrawal, "changed": false }),
            format!(
                "packet {} is already withdrawn ({})\n",
                w.packet, w.withdrawal.reason
            ),
        ),
        Some(commit) => Output::new(
            serde_json::json!({ "packet": w.packet, "ref": w.refname, "withdrawal": w.withdrawal, "changed": true, "commit": commit.to_string() }),
            format!(
                "withdrew packet {} ({}); it stays readable and can no longer be accepted\n",
                w.packet, w.refname
            ),
        ),
    }
}

fn render_listing(wanted: bool, l: &Listing) -> Output {
    let mut text = String::new();
    if l.rows.is_empty() && l.unreadable.is_empty() {
        text.push_str(if l.open {
            "no open packets\n"
        } else {
            "no packets\n"
        });
    }
    for r in &l.rows {
        text.push_str(&format!(
            "{:<36} {:<16} {:<18} {:<24} {}\n",
            r.id,
            r.plan,
            r.reason,
            format!(
                "{}@{}",
                r.branch.as_deref().unwrap_or("detached"),
                &r.head[..12.min(r.head.len())]
            ),
            match (&r.accepted_by, &r.withdrawn_by) {
                (Some(by), _) => format!("accepted by {by}"),
                (None, Some(by)) => format!(
                    "withdrawn by {by}: {}",
                    r.withdrawn_reason.as_deref().unwrap_or_default()
                ),
                (None, None) => "open".to_string(),
            }
        ));
    }
    if let Some(m) = &l.mirror {
        text.push_str(&crate::cli::output::mirror_text(m, l.now));
    }
    #[derive(serde::Serialize)]
    struct Json<'l> {
        packets: &'l [list::Row],
        mirror: &'l Option<git_swarm::store::remote::MirrorView>,
    }
    let json = Json {
        packets: &l.rows,
        mirror: &l.mirror,
    };
    report_unreadable(Output::listing(wanted, json, text), &l.unreadable)
}

fn render_shown(s: &Shown) -> Output {
    let v = &s.version;
    let mut text = format!("# {} ({})\n", s.refname, short(s.commit));
    text.push_str(&String::from_utf8_lossy(&s.packet_yaml));
    match (&s.acceptance_yaml, &s.withdrawal_yaml) {
        (Some(a), _) => {
            text.push_str("# acceptance\n");
            text.push_str(&String::from_utf8_lossy(a));
        }
        (None, Some(w)) => {
            text.push_str("# withdrawn by its author: it cannot be accepted\n");
            text.push_str(&String::from_utf8_lossy(w));
        }
        (None, None) => text.push_str(&format!(
            "# not accepted yet: git swarm accept {}\n",
            v.packet.id
        )),
    }
    let json = serde_json::json!({
        "ref": s.refname,
        "commit": s.commit.to_string(),
        "published": s.published,
        "packet": v.packet,
        "acceptance": v.acceptance,
        "withdrawal": v.withdrawal,
    });
    Output::new(json, text)
}
