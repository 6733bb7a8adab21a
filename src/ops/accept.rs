//! `git swarm accept <packet-id>`: a successor re-derives every fact of the
//! packet it can check, then appends its acceptance (`acceptance.yaml`,
//! `swarm-acceptance/v1`) to the packet ref by compare-and-swap at the
//! arbiter (the remote, else the local ref) — with the lane record handed
//! over in the same atomic push — so a packet is accepted exactly once.
//! Only then are the local refs, the plan's journal and the note moved.
//!
//! A re-run after an interruption takes the same path: it finds its own
//! acceptance already published and runs the same completion steps
//! ([`complete`]), each of which does nothing when done already.

use std::cell::RefCell;
use std::path::Path;

use gix::ObjectId;
use jiff::SignedDuration;

use crate::clock::rfc3339;
use crate::error::{Code, Error, Result};
use crate::failpoint;
use crate::records::note::Note;
use crate::records::packet::{
    content_mismatch, locate, mismatch_error, mismatches, read_at, Acceptance, Facts, Packet,
    ACCEPTANCE_FILE, PREFIX,
};
use crate::session::Ctx;
use crate::store::records::{Publish, Txn};
use crate::store::remote;
use crate::store::yaml;
use crate::store::{Event, Store};

mod carry;
mod lane;
mod restore;

pub use lane::open_packet_of;
pub use restore::{remove_made, worktree, worktree_noted};

/// What `accept` did.
#[derive(Debug, Clone)]
pub struct Accepted {
    pub refname: String,
    pub packet: Packet,
    pub acceptance: Acceptance,
    /// This run completed an interrupted acceptance.
    pub resumed: bool,
    /// The acceptor had accepted the packet already and nothing was left
    /// to do: a re-run after a completed acceptance (a no-op, exit 0).
    pub already: bool,
    /// The packet's snapshot was restored into this checkout.
    pub restored: bool,
    /// A remote arbitrated.
    pub published: bool,
    pub warnings: Vec<String>,
    /// What was cleared away first (a half-made worktree, a stale lock).
    pub notes: Vec<String>,
}

/// What the refs this command reads are fetched as, each round.
const WANTED: &[&str] = &[
    PREFIX,
    crate::records::lead::PREFIX,
    crate::records::plan::PREFIX,
    crate::records::lane::PREFIX,
    crate::records::task::PREFIX,
    crate::records::reservation::shard::PREFIX,
    // The note on the head builds on the published notes (same fetch).
    crate::store::notes::NOTES_REF,
];

/// What one round of the publication decided.
struct Decided {
    refname: String,
    packet: Packet,
    acc: Acceptance,
    /// The version holding the acceptance.
    commit: ObjectId,
    resumed: bool,
    restored: bool,
}

/// What `accept` asks the session, once, and hands down: the steps below
/// take these and the store, and do not climb back into the session.
struct Asked<'c> {
    store: &'c Store,
    /// Who accepts.
    actor: String,
    /// The arbiter: None offline or without a remote (the local CAS).
    remote: Option<&'c str>,
    /// The leases the claim and the reservations move with (`swarm.taskLease`,
    /// `swarm.reservationLease`): read once, a bad value refuses only an
    /// acceptance that moves one.
    task_lease: Result<SignedDuration>,
    reservation_lease: Result<SignedDuration>,
}

impl<'c> Asked<'c> {
    fn of(ctx: &'c Ctx) -> Result<Self> {
        Ok(Asked {
            store: &ctx.store,
            actor: ctx.actor()?,
            remote: ctx.remote(),
            task_lease: ctx.lease(None, &crate::records::task::LEASE),
            reservation_lease: ctx.lease(None, &crate::records::reservation::LEASE),
        })
    }
}

/// `git swarm accept <packet-id>`
pub fn accept(ctx: &Ctx, arg: &str) -> Result<Accepted> {
    accept_with(ctx, arg, true)
}

/// `git swarm accept <packet-id> [--no-restore]`: with `restore`, a clean
/// checkout at the packet's head gets the packet's snapshot first.
pub fn accept_with(ctx: &Ctx, arg: &str, restore: bool) -> Result<Accepted> {
    let s = &Asked::of(ctx)?;
    let actor = &s.actor;
    // One round decides and publishes; a lost race is decided on a fresh
    // fetch in the second round, which only explains it. What was tried
    // last: the packet's ref and the packet.
    let tried: RefCell<Option<(String, Packet)>> = RefCell::new(None);
    let published = Publish::new(s.store, s.remote)
        .fetch(WANTED.iter().copied())
        .attempts(4)
        .point("accept")
        // A local packet ref holding a change the acceptance lacks fails
        // the command (`CAS_FAILED`, `sync` joins them).
        .strict()
        .exhausted(|lines| {
            let tried = tried.borrow();
            let (_, packet) = tried.as_ref().expect("a refused acceptance was tried");
            refused(packet, lines)
        })
        .run(|txn| {
            let lost = txn.rejected().is_some();
            if let (true, Some((refname, packet))) = (lost, tried.borrow().clone()) {
                // None: not an acceptance, the task or the ledger moved
                // meanwhile: decided again.
                if let Some(e) = lost_race(s, txn, &refname, &packet) {
                    return Err(e);
                }
            }
            decide(s, txn, arg, restore, &tried)
        })?;
    let d = published.then;
    if !d.resumed {
        failpoint::point("accept:ref");
    }
    let completed = complete(s, &d.refname, &d.packet, &d.acc, d.commit)?;
    // The acceptor's own acceptance with nothing left to do: a re-run after
    // a run that completed (perhaps killed after its last step) is a no-op.
    let already = d.resumed && !completed;
    let mut warnings = Vec::new();
    // Accepting your own packet is allowed (an address may stand for an
    // account whose next session resumes), but it locks out any other successor.
    if !d.resumed && d.packet.author == *actor {
        warnings.push(format!(
            "you accepted a packet you wrote yourself ({}): no other successor can accept it now",
            d.packet.author
        ));
    }
    Ok(Accepted {
        refname: d.refname,
        packet: d.packet,
        acceptance: d.acc,
        resumed: d.resumed && completed,
        already,
        restored: d.restored,
        published: s.remote.is_some(),
        warnings,
        notes: Vec::new(),
    })
}

/// Find the packet and decide: our own acceptance already there (an
/// interrupted run: nothing to publish), or check the packet against this
/// checkout and write the acceptance, published at the arbiter with the
/// lane handed over (and the claim and reservations moved) in the same push.
fn decide(
    s: &Asked<'_>,
    txn: &mut Txn<'_>,
    arg: &str,
    restore: bool,
    tried: &RefCell<Option<(String, Packet)>>,
) -> Result<Decided> {
    let (store, actor) = (s.store, s.actor.as_str());
    let refname = locate(store, s.remote, arg)?;
    let tip = txn.tip(&refname)?;
    let base = tip.base.expect("a located packet has a version");
    let version = read_at(store, &refname, base)?;
    let packet = version.packet.clone();
    if let Some(acc) = version.may_accept(actor)? {
        return Ok(Decided {
            refname,
            acc: acc.clone(),
            packet,
            commit: base,
            resumed: true,
            restored: false,
        });
    }
    let restored = if restore {
        restore::restore(s, &packet)?
    } else {
        None
    };
    // A refusal after the restore puts the checkout back as it was.
    let checked = (|| {
        let found = rederive(s, &packet)?;
        if !found.is_empty() {
            return Err(mismatch_error(&packet, &found));
        }
        let workdir = store.workdir_or_err()?;
        let mut acc = acceptance(s, &packet, &workdir)?;
        let mut lane_move = lane::lane_move(s, &packet, &workdir)?;
        // The claim and the reservations go out in the same push.
        let moves = carry::decide(s, &packet)?;
        acc.moved = moves.moved.clone();
        lane_move.extend(moves.updates.iter().cloned());
        Ok((acc, lane_move, moves))
    })();
    let (acc, lane_move, moves) = match (checked, &restored) {
        (Ok(c), _) => c,
        (Err(e), Some(v)) => {
            let _ = restore::undo(s, v);
            return Err(e.hint("the files restored from the snapshot were taken away again"));
        }
        (Err(e), None) => return Err(e),
    };
    let restored = restored.is_some();
    // The packet's own bytes stay as they are: the acceptance is added.
    let mut files = store.read_commit(base)?.files;
    files.insert(ACCEPTANCE_FILE.to_string(), yaml::to_yaml(&acc)?);
    let tree = store.write_tree(&files)?;
    let event = accept_event(&acc);
    let commit = store.commit(tree, &[base], &event)?;
    failpoint::point("accept:objects");
    *tried.borrow_mut() = Some((refname.clone(), packet.clone()));
    txn.write_on(&refname, tip, commit, actor, &event.summary);
    for update in lane_move {
        txn.push_along(update);
    }
    // Offline the claim and the ledger move in the acceptance's own local
    // CAS: a run killed after it finds them moved with the acceptance.
    if !txn.online() {
        for (moved, tip, new) in &moves.local {
            txn.write_on(moved, *tip, *new, actor, "accept: handed over");
        }
    }
    Ok(Decided {
        refname,
        packet,
        acc,
        commit,
        resumed: false,
        restored,
    })
}

/// `actor`'s acceptance of the packet in the checkout at `workdir`.
fn acceptance(s: &Asked<'_>, packet: &Packet, workdir: &Path) -> Result<Acceptance> {
    let store = s.store;
    let leader = crate::records::lead::known(store, s.remote, &packet.plan)?;
    let checkout = std::fs::canonicalize(workdir)
        .unwrap_or_else(|_| workdir.to_path_buf())
        .display()
        .to_string();
    Ok(Acceptance::new(
        packet,
        &s.actor,
        rfc3339(store.clock.now()),
        checkout,
        leader
            .as_ref()
            .and_then(|l| l.current_leader())
            .map(str::to_string),
        leader.as_ref().map(|l| l.epoch),
    ))
}

/// Why the arbiter refused the acceptance, read after a fresh fetch:
/// someone else's acceptance won (an error), or a record that travels with
/// it moved (None: decide again on what was fetched).
fn lost_race(s: &Asked<'_>, txn: &mut Txn<'_>, refname: &str, packet: &Packet) -> Option<Error> {
    let won = txn.tip(refname).and_then(|after| match after.base {
        Some(b) => read_at(s.store, refname, b).map(|v| v.acceptance),
        None => Ok(None),
    });
    Some(match won {
        Err(e) => e,
        Ok(Some(won)) => Error::new(
            Code::PacketAlreadyAccepted,
            format!(
                "packet {} was accepted by {} at {} while you were accepting it",
                packet.id, won.accepted_by, won.accepted_at
            ),
        )
        .hint("nothing of yours was recorded; the first published acceptance wins"),
        Ok(None) => return None,
    })
}

fn refused(packet: &Packet, lines: &[String]) -> Error {
    Error::new(
        Code::PushRejected,
        format!(
            "the remote refused the acceptance of packet {}: {}",
            packet.id,
            lines.join("; ")
        ),
    )
    .hint("run the command again")
}

/// Every step after the acceptance is published, each a no-op when done
/// already: the local packet ref, the plan's journal, the note on the head,
/// and the lane (caught up to the published one, else handed over here).
/// Returns whether any step had something left to do.
fn complete(
    s: &Asked<'_>,
    refname: &str,
    packet: &Packet,
    acc: &Acceptance,
    commit: ObjectId,
) -> Result<bool> {
    let store = s.store;
    let mut completed = false;
    if store.ref_target(refname)? != Some(commit) {
        remote::adopt(store, refname, commit, &acc.accepted_by, "accept: catch up")?;
        completed = true;
    }
    // The claim and the reservations went out with the acceptance.
    completed |= carry::catch_up(s, &acc.moved, &acc.accepted_by)?;
    restore::keep(store, packet, &acc.accepted_by)?;
    let event = accept_event(acc);
    completed |= crate::records::plan::journal(
        store,
        s.remote,
        &packet.plan,
        &event,
        None,
        Some(("Swarm-Packet", &packet.id)),
    )?
    .is_some();
    failpoint::point("accept:journal");
    let head_id = ObjectId::from_hex(packet.head.as_bytes())
        .map_err(|e| Error::gix("bad head commit id", e))?;
    let note = Note::Acceptance {
        packet: acc.packet.clone(),
        plan: acc.plan.clone(),
        by: acc.accepted_by.clone(),
        commit: commit.to_string(),
    };
    if !store.note_lines(head_id)?.contains(&note.line()) {
        note.append(store, s.remote, head_id, &event)?;
        completed = true;
    }
    if let Some(branch) = &packet.branch {
        // The lane record may have gone out with the acceptance: take it
        // first, so the handover here is not written twice.
        completed |= lane::catch_up(s, packet, &acc.accepted_by)?;
        completed |= crate::records::lane::hand_over(
            store,
            branch,
            &acc.accepted_by,
            &packet.id,
            &store.workdir_or_err()?,
        )?;
    }
    Ok(completed)
}

/// Re-derive every fact the packet states that this checkout can check.
fn rederive(s: &Asked<'_>, packet: &Packet) -> Result<Vec<crate::records::packet::Mismatch>> {
    let store = s.store;
    let (_, plan_tip) = crate::records::plan::newest_head(store, s.remote, &packet.plan)?;
    let contract = match plan_tip {
        None => None,
        Some(tip) => Some({
            // A plan version the trust policy refuses names no contract.
            store.trusted(
                <crate::records::plan::PlanDoc as crate::store::records::Record>::NAMESPACE,
                "plan",
                &packet.plan,
                tip,
            )?;
            crate::records::plan::from_record(&packet.plan, store.read_commit(tip)?)?
                .record
                .contract
        }),
    };
    let facts = Facts {
        contract,
        branch: store.git.current_branch()?,
        head: store.git.rev_parse("HEAD")?,
        dirty: store.git.dirty_paths()?,
    };
    let mut out = mismatches(packet, &facts);
    if !out.iter().any(|m| m.field == "uncommitted") && !packet.uncommitted_content.is_empty() {
        let workdir = store.workdir_or_err()?;
        let paths: Vec<String> = packet.uncommitted_content.keys().cloned().collect();
        let actual = crate::worktree::contents::content_ids(&store.repo, &workdir, &paths)?;
        out.extend(content_mismatch(&packet.uncommitted_content, &actual));
    }
    Ok(out)
}

fn accept_event(acc: &Acceptance) -> Event {
    let mut event = Event::new(
        "handoff-accepted",
        &acc.accepted_by,
        format!("handoff {}: accepted by {}", acc.packet, acc.accepted_by),
    )
    .trailer("Swarm-Packet", acc.packet.clone());
    if let Some(e) = acc.epoch {
        event = event.epoch(e);
    }
    event
}
