//! Publishing a packet: a free id, one commit, one atomic push at the
//! arbiter together with the lane record; or, on a re-run, the open packet
//! of the same content an interrupted run wrote.

use crate::clock::rfc3339;
use crate::error::{Code, Error, Result};
use crate::failpoint;
use crate::git::PushUpdate;
use crate::names;
use crate::records::packet::snapshot::snapshot_ref;
use crate::records::packet::{
    known_refs, packet_ref, read_at, same_content, Packet, PacketVersion, PREFIX,
};
use crate::session::Ctx;
use crate::store::records::{Publish, Record};
use crate::store::remote::Tip;
use crate::store::Event;
use crate::store::{mirror, remote};

/// Publish `packet` (completing an interrupted run's when there is one):
/// its ref, and whether it was resumed. The packet gets its id and time.
pub fn publish(
    ctx: &Ctx,
    packet: &mut Packet,
    actor: &str,
    branch: Option<PushUpdate>,
) -> Result<(String, bool)> {
    let lane_ref = packet.lane.as_deref().map(crate::records::lane::lane_ref);
    let now = ctx.store.clock.now();
    let mut companions = lane_companion(ctx, lane_ref.as_deref())?;
    companions.extend(branch);
    match find_resumable(ctx, &packet.plan, packet)? {
        Some(refname) => {
            *packet = resume(ctx, &refname, actor, &companions)?;
            Ok((refname, true))
        }
        None => Ok((publish_new(ctx, packet, actor, now, &companions)?, false)),
    }
}

/// An open packet of ours with the same content (a re-run after an interruption).
fn find_resumable(ctx: &Ctx, plan: &str, candidate: &Packet) -> Result<Option<String>> {
    for refname in known_refs(&ctx.store, ctx.remote(), &format!("{PREFIX}{plan}/"), false)? {
        let tip = remote::tip(&ctx.store, ctx.remote(), &refname)?;
        let Some(base) = tip.base else { continue };
        let Ok(v) = read_at(&ctx.store, &refname, base) else {
            continue;
        };
        if v.acceptance.is_none() && same_content(&v.packet, candidate) {
            return Ok(Some(refname));
        }
    }
    Ok(None)
}

/// Complete the publication of the packet an interrupted run wrote: push it
/// when it never reached the remote, else catch the local ref up.
fn resume(ctx: &Ctx, refname: &str, actor: &str, companions: &[PushUpdate]) -> Result<Packet> {
    let store = &ctx.store;
    let tip = remote::tip(store, ctx.remote(), refname)?;
    let commit = tip.base.expect("a resumable packet has a version");
    let packet = read_at(store, refname, commit)?.packet;
    if tip.online && tip.remote.is_none() {
        // Written here but never published: publish it now, once.
        Publish::new(store, ctx.remote())
            .attempts(1)
            .point("handoff")
            .exhausted(|lines| {
                Error::new(
                    Code::CasFailed,
                    format!(
                        "{refname} exists on the remote with other content: {}",
                        lines.join("; ")
                    ),
                )
                .hint("run `git swarm sync`, then hand off again")
            })
            .run(|txn| {
                txn.write_on(refname, tip, commit, actor, "handoff: publish");
                for c in with_snapshot(companions, &packet) {
                    txn.push_along(c);
                }
                Ok(())
            })?;
    } else if tip.local != Some(commit) {
        remote::adopt(store, refname, commit, actor, "handoff: catch up")?;
    }
    Ok(packet)
}

/// The companions plus the packet's snapshot ref (new: it must not exist
/// at the remote yet), so that the snapshot and the packet are published
/// together or not at all.
fn with_snapshot(companions: &[PushUpdate], packet: &Packet) -> Vec<PushUpdate> {
    let mut out = companions.to_vec();
    if let Some(s) = &packet.snapshot {
        out.push(PushUpdate {
            refname: snapshot_ref(&packet.plan, &packet.id),
            new: Some(s.commit.clone()),
            expected: None,
        });
    }
    out
}

/// Point the local snapshot ref at the packet's snapshot (offline, where
/// no push carries it; online, after the push, a no-op).
pub fn snapshot_local(ctx: &Ctx, packet: &Packet, actor: &str) -> Result<()> {
    let Some(s) = &packet.snapshot else {
        return Ok(());
    };
    let refname = snapshot_ref(&packet.plan, &packet.id);
    let id = gix::ObjectId::from_hex(s.commit.as_bytes())
        .map_err(|e| Error::gix("bad snapshot commit id", e))?;
    if ctx.store.ref_target(&refname)? != Some(id) {
        remote::adopt(&ctx.store, &refname, id, actor, "handoff: snapshot")?;
    }
    Ok(())
}

/// The branch at the packet's head, to publish with the packet when the
/// code remote lacks that head: so a successor on another machine checks
/// it out without the author pushing by hand. Only a new branch or a
/// fast-forward, leased at the value just fetched; a branch that diverged
/// on the remote is left (the handoff warns).
pub fn branch_companion(
    ctx: &Ctx,
    branch: Option<&str>,
    head: &str,
    pushed: bool,
) -> Result<Option<PushUpdate>> {
    let (Some(remote), Some(branch), false) = (ctx.code_remote(), branch, pushed) else {
        return Ok(None);
    };
    let git = &ctx.store.git;
    let fetched = match git.fetch_branch(remote, branch) {
        Ok(found) => found,
        // A code remote of its own that does not answer: the branch is not
        // pushed (the handoff warns); the packet still goes out.
        Err(_) if ctx.split_remotes() => return Ok(None),
        Err(e) => return Err(e),
    };
    let published = if fetched {
        git.rev_parse(&format!("refs/remotes/{remote}/{branch}"))?
    } else {
        None
    };
    if let Some(p) = &published {
        if !git.is_ancestor(p, head)? {
            return Ok(None);
        }
    }
    Ok(Some(PushUpdate {
        refname: format!("refs/heads/{branch}"),
        new: Some(head.to_string()),
        expected: published,
    }))
}

/// With a coordination remote of its own, the branch and the packet cannot
/// be one atomic push: the branch goes to the code remote first, on its
/// own, leased like the companion it replaces. That order loses nothing:
/// a branch pushed whose packet then fails to publish is only the lane's
/// own branch moved forward (a re-run finds it pushed and publishes the
/// packet alone); the other order could publish a packet that names a
/// head nobody else can fetch. True when it landed; false when the code
/// remote refused the lease (the branch moved there meanwhile) or could
/// not be reached: the packet then says `pushed: false` and the handoff
/// warns, as for a branch that diverged.
pub fn push_branch_first(ctx: &Ctx, update: &PushUpdate) -> Result<bool> {
    let Some(code) = ctx.code_remote() else {
        return Ok(false);
    };
    // Pushed by git directly, not through the record publish: an
    // unreachable code remote must not mark the coordination remote's
    // state (what the packet's publish goes by) as unreached.
    match ctx
        .store
        .git
        .push_atomic(code, std::slice::from_ref(update), &[])
    {
        Ok(crate::git::PushOutcome::Ok) => {
            let branch = update.refname.trim_start_matches("refs/heads/");
            let new = update
                .new
                .as_deref()
                .and_then(|n| gix::ObjectId::from_hex(n.as_bytes()).ok());
            let tracking = format!("refs/remotes/{code}/{branch}");
            // A cache of the remote, as the mirror is: the next fetch
            // corrects a failure here.
            let _ = ctx
                .store
                .force_many(&[(tracking, new)], "git-swarm", "handoff: branch pushed");
            Ok(true)
        }
        Ok(crate::git::PushOutcome::Rejected(_)) => Ok(false),
        Err(e) if mirror::is_unreachable(&e) => Ok(false),
        Err(e) => Err(e),
    }
}

/// The lane record to publish in the same push as the packet, so that a
/// successor on another clone finds the lane it takes over: the local
/// version, when the remote lacks it or is behind it. A local version that
/// diverged from the published one is `sync`'s to join (the published one
/// still names the lane).
fn lane_companion(ctx: &Ctx, lane_ref: Option<&str>) -> Result<Vec<PushUpdate>> {
    let (Some(remote), Some(refname)) = (ctx.remote(), lane_ref) else {
        return Ok(Vec::new());
    };
    let store = &ctx.store;
    let Some(local) = store.ref_target(refname)? else {
        return Ok(Vec::new());
    };
    let published = store.ref_target(&mirror::mirror_ref(remote, refname))?;
    let ahead = match published {
        None => true,
        Some(p) => p != local && store.is_ancestor(p, local)?,
    };
    Ok(if ahead {
        vec![PushUpdate {
            refname: refname.to_string(),
            new: Some(local.to_string()),
            expected: published.map(|p| p.to_string()),
        }]
    } else {
        Vec::new()
    })
}

/// An id is taken when any plan's packet (local, last fetched, or archived)
/// already has it: commands name packets by id alone, so an id must be unique
/// across plans, not just within one (two handoffs in one second by one
/// author to two plans would otherwise make the id ambiguous).
fn id_taken(ctx: &Ctx, refname: &str) -> Result<bool> {
    if ctx.store.ref_target(refname)?.is_some() {
        return Ok(true);
    }
    let id = refname.rsplit('/').next().unwrap_or(refname);
    Ok(known_refs(&ctx.store, ctx.remote(), PREFIX, true)?
        .iter()
        .any(|r| r.rsplit('/').next() == Some(id)))
}

/// How many ids `handoff` tries (`<stem>`, `<stem>-2`, …) before giving up.
const ID_TRIES: usize = 64;

/// Give the packet a free id, write it, publish it at the arbiter; a lost
/// race for an id (same author, same second) moves on to the next suffix.
fn publish_new(
    ctx: &Ctx,
    packet: &mut Packet,
    actor: &str,
    now: jiff::Timestamp,
    companions: &[PushUpdate],
) -> Result<String> {
    let stem = format!("{}-{}", now.strftime("%Y%m%dT%H%M%SZ"), actor);
    names::validate_address(actor)?;
    let no_free_id = || {
        Error::new(
            Code::CasFailed,
            format!("could not find a free packet id ({ID_TRIES} tries)"),
        )
    };
    let mut n = 0;
    let published = Publish::new(&ctx.store, ctx.remote())
        .attempts(ID_TRIES)
        .point("handoff")
        // A local packet ref another local handoff wrote meanwhile fails
        // the command (`CAS_FAILED`), not left behind silently.
        .strict()
        .exhausted(|_| no_free_id())
        .run(|txn| {
            match txn.rejected().map(|r| r.lines().to_vec()) {
                // The first round, or one after a push that found the
                // remote gone (this round arbitrates locally): the id tried
                // was taken nowhere, so the search starts again from the
                // handoff's own.
                None => n = 0,
                Some(lost) => {
                    txn.fetch(&[&format!("{PREFIX}{}/", packet.plan)])?;
                    let refname = packet_ref(&packet.plan, &packet.id);
                    if !companions.is_empty() && !id_taken(ctx, &refname)? {
                        // Not the id: the lane record moved at the remote meanwhile.
                        return Err(Error::new(
                            Code::PushRejected,
                            format!(
                                "the remote refused the packet with its lane record: {}",
                                lost.join("; ")
                            ),
                        )
                        .hint("run `git swarm sync`, then hand off again"));
                    }
                }
            }
            let Some(refname) = next_free_id(ctx, packet, &stem, &mut n)? else {
                return Ok(None);
            };
            packet.created_at = rfc3339(now);
            let (commit, summary) = first_version(ctx, packet, actor)?;
            // A new ref: it must not exist at the arbiter yet.
            let tip = Tip {
                local: None,
                remote: None,
                base: None,
                online: txn.online(),
                archived: false,
                skipped: None,
            };
            txn.write_on(&refname, tip, commit, actor, &summary);
            for c in with_snapshot(companions, packet) {
                txn.push_along(c);
            }
            Ok(Some(refname))
        })?;
    published.then.ok_or_else(no_free_id)
}

/// The next id after the `n`th that no packet has yet, given to `packet`,
/// and its ref; None after [`ID_TRIES`].
fn next_free_id(
    ctx: &Ctx,
    packet: &mut Packet,
    stem: &str,
    n: &mut usize,
) -> Result<Option<String>> {
    while *n < ID_TRIES {
        *n += 1;
        let id = if *n == 1 {
            stem.to_string()
        } else {
            format!("{stem}-{n}")
        };
        let refname = packet_ref(&packet.plan, &id);
        if !id_taken(ctx, &refname)? {
            packet.id = id;
            return Ok(Some(refname));
        }
    }
    Ok(None)
}

/// Write the packet's first version: its commit, and the event's summary.
fn first_version(ctx: &Ctx, packet: &Packet, actor: &str) -> Result<(gix::ObjectId, String)> {
    let store = &ctx.store;
    let version = PacketVersion {
        packet: packet.clone(),
        acceptance: None,
        withdrawal: None,
    };
    let tree = store.write_tree(&version.to_files()?)?;
    let mut event = Event::new(
        "handoff-written",
        actor,
        format!("handoff {}: packet written ({})", packet.id, packet.reason),
    )
    .trailer("Swarm-Packet", packet.id.clone())
    .trailer("Swarm-Plan", packet.plan.clone());
    if let Some(e) = packet.epoch {
        event = event.epoch(e);
    }
    let commit = store.commit(tree, &[], &event)?;
    failpoint::point("handoff:objects");
    Ok((commit, event.summary))
}
