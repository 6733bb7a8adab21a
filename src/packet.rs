//! Handoff packets (`dwp-handoff/v1`) and their acceptance.
//!
//! A lane that must stop writes a packet to
//! `refs/swarm/packets/<plan>/<packet-id>` (tree `packet.yaml`): what the
//! caller says (reason, task, step, done, verified with evidence, unverified
//! gates, next steps, open requests, decisions) and what the tool derives
//! (repo, checkout, branch, head, pushed or not, uncommitted paths, the
//! plan's contract, leader and epoch, author, time). The packet is data that
//! travels and stays in history: anything that looks like a credential
//! refuses it before a single object is written.
//!
//! A successor accepts it only after re-deriving every fact it can check;
//! the acceptance (`acceptance.yaml`, `swarm-acceptance/v1`) is appended to
//! the packet ref by compare-and-swap at the arbiter (the remote, else the
//! local ref), so a packet is accepted exactly once.
//!
//! Both commands are idempotent under interruption: a re-run finds the
//! packet or the acceptance it already published and completes the steps
//! that follow (local ref, plan journal, note).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use gix::ObjectId;
use serde::{Deserialize, Serialize};

use crate::clock::rfc3339;
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::failpoint;
use crate::git::PushUpdate;
use crate::lead;
use crate::names;
use crate::output::Output;
use crate::plan;
use crate::secret;
use crate::store::record::{self, Extra};
use crate::store::{short, Event, Record, Store};
use crate::sync::{self, Published};

pub const SCHEMA: &str = "dwp-handoff/v1";
pub const ACCEPTANCE_SCHEMA: &str = "swarm-acceptance/v1";
pub const PACKET_FILE: &str = "packet.yaml";
pub const ACCEPTANCE_FILE: &str = "acceptance.yaml";
pub const WITHDRAWAL_FILE: &str = "withdrawal.yaml";
pub const WITHDRAWAL_SCHEMA: &str = "swarm-withdrawal/v1";
pub const REASONS: &[&str] = &[
    "capacity_critical",
    "capacity_low",
    "context_pressure",
    "usage_limit",
    "lead_handover",
];
const PREFIX: &str = "refs/swarm/packets/";

pub fn packet_ref(plan: &str, id: &str) -> String {
    format!("{PREFIX}{plan}/{id}")
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Verified {
    pub claim: String,
    pub evidence: String,
}

/// The packet (`packet.yaml`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Packet {
    pub schema: String,
    pub id: String,
    pub plan: String,
    /// The plan's contract in force when the packet was written.
    pub contract: String,
    pub author: String,
    pub created_at: String,
    pub reason: String,
    #[serde(default)]
    pub task: Option<String>,
    #[serde(default)]
    pub step: Option<String>,
    /// The shared remote's URL (credentials stripped), if any.
    #[serde(default)]
    pub repo: Option<String>,
    /// Absolute path of the checkout the work is in.
    pub checkout: String,
    /// None on a detached HEAD.
    #[serde(default)]
    pub branch: Option<String>,
    pub head: String,
    /// The head is reachable from the remote-tracking branch.
    #[serde(default)]
    pub pushed: bool,
    /// Uncommitted paths, without the packet's own export file.
    #[serde(default)]
    pub uncommitted: Vec<String>,
    /// What each uncommitted path holds: the git blob id of the working-tree
    /// file (as `git hash-object` without filters), or `deleted`. `accept`
    /// compares it, so equal paths with other content do not pass.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub uncommitted_content: BTreeMap<String, String>,
    /// Where `--export` wrote the packet: relative to the checkout when
    /// inside it (that file is not part of the work), else absolute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub export: Option<String>,
    /// The lane whose branch this is: its record is published with the
    /// packet, and `accept` hands it over or refuses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lane: Option<String>,
    #[serde(default)]
    pub leader: Option<String>,
    #[serde(default)]
    pub epoch: Option<u64>,
    #[serde(default)]
    pub done: Vec<String>,
    #[serde(default)]
    pub verified: Vec<Verified>,
    #[serde(default)]
    pub unverified: Vec<String>,
    #[serde(default)]
    pub next: Vec<String>,
    #[serde(default)]
    pub requests: Vec<String>,
    #[serde(default)]
    pub decisions: Vec<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// The acceptance (`acceptance.yaml`), appended to the packet ref once.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Acceptance {
    pub schema: String,
    pub packet: String,
    pub plan: String,
    pub contract: String,
    pub accepted_by: String,
    pub accepted_at: String,
    /// Where the successor re-derived the facts.
    pub checkout: String,
    #[serde(default)]
    pub branch: Option<String>,
    pub head: String,
    #[serde(default)]
    pub uncommitted: Vec<String>,
    #[serde(default)]
    pub leader: Option<String>,
    #[serde(default)]
    pub epoch: Option<u64>,
    /// The packet's unverified gates: the successor must re-run every one.
    #[serde(default)]
    pub must_rerun: Vec<String>,
    #[serde(default)]
    pub next: Vec<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// The withdrawal (`withdrawal.yaml`, `swarm-withdrawal/v1`): the author
/// took a packet back before anyone accepted it. The packet stays on its
/// ref, readable, and can no longer be accepted.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Withdrawal {
    pub schema: String,
    pub packet: String,
    pub plan: String,
    pub withdrawn_by: String,
    pub withdrawn_at: String,
    pub reason: String,
    #[serde(flatten)]
    pub extra: Extra,
}

/// What the caller of `handoff` says.
#[derive(Debug, Clone, Default)]
pub struct HandoffInput {
    pub reason: String,
    pub plan: Option<String>,
    pub task: Option<String>,
    pub step: Option<String>,
    pub done: Vec<String>,
    /// `CLAIM=EVIDENCE`
    pub verified: Vec<String>,
    pub unverified: Vec<String>,
    pub next: Vec<String>,
    pub requests: Vec<String>,
    pub decisions: Vec<String>,
    pub export: Option<PathBuf>,
}

fn fetch(ctx: &Ctx, refs: &[&str]) -> Result<()> {
    if let Some(remote) = ctx.remote() {
        sync::fetch_refs(&ctx.store, remote, refs)?;
    }
    Ok(())
}

fn scan<T: Serialize>(value: &T) -> Result<()> {
    let value = serde_yaml_ng::to_value(value)
        .map_err(|e| Error::env("INTERNAL", format!("could not serialise a packet: {e}")))?;
    refuse_findings(secret::scan(&value))
}

fn refuse_findings(findings: Vec<secret::Finding>) -> Result<()> {
    if findings.is_empty() {
        Ok(())
    } else {
        Err(secret::refusal("PACKET_SECRET", "the packet", &findings))
    }
}

fn parse_verified(raw: &[String]) -> Result<Vec<Verified>> {
    raw.iter()
        .enumerate()
        .map(|(i, v)| {
            // Never echo the value: it has not been scanned yet when this fails.
            let (claim, evidence) = v.split_once('=').ok_or_else(|| {
                Error::usage(
                    "USAGE",
                    format!("--verified #{} is not CLAIM=EVIDENCE", i + 1),
                )
                .hint("e.g. --verified \"unit tests pass=target/test-log.txt\"")
            })?;
            let (claim, evidence) = (claim.trim(), evidence.trim());
            if claim.is_empty() || evidence.is_empty() {
                return Err(Error::usage(
                    "USAGE",
                    format!(
                        "--verified #{} needs both a claim and an evidence path",
                        i + 1
                    ),
                ));
            }
            Ok(Verified {
                claim: claim.to_string(),
                evidence: evidence.to_string(),
            })
        })
        .collect()
}

/// Strip credentials from a remote URL: all user info of http(s) URLs, the
/// password of any other.
fn clean_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let Some((userinfo, host)) = authority.rsplit_once('@') else {
        return url.to_string();
    };
    let scheme_l = scheme.to_ascii_lowercase();
    if scheme_l == "http" || scheme_l == "https" {
        return format!("{scheme}://{host}{path}");
    }
    let user = userinfo.split_once(':').map_or(userinfo, |(u, _)| u);
    format!("{scheme}://{user}@{host}{path}")
}

/// Whether the head is pushed: reachable from the remote-tracking branch
/// (fetched first when online), or, detached, from any remote-tracking branch.
fn pushed(ctx: &Ctx, branch: Option<&str>, head: &str) -> Result<bool> {
    let git = &ctx.store.git;
    let Some(remote) = ctx.settings.remote.as_deref() else {
        return Ok(false);
    };
    match branch {
        Some(b) => {
            if ctx.remote().is_some() && !git.fetch_branch(remote, b)? {
                return Ok(false);
            }
            let tracking = format!("refs/remotes/{remote}/{b}");
            if git.rev_parse(&tracking)?.is_none() {
                return Ok(false);
            }
            git.is_ancestor(head, &tracking)
        }
        None => {
            let out = git.run([
                "for-each-ref",
                "--format=%(refname)",
                "--contains",
                head,
                &format!("refs/remotes/{remote}/"),
            ])?;
            Ok(!out.trim().is_empty())
        }
    }
}

fn head_commit(store: &Store) -> Result<String> {
    store.git.rev_parse("HEAD")?.ok_or_else(|| {
        Error::usage(
            "USAGE",
            "this checkout has no commit yet: nothing to hand off",
        )
        .hint("commit the work first (a handoff names the head commit)")
    })
}

/// Compare two packets ignoring their identity (id and time).
fn same_content(a: &Packet, b: &Packet) -> bool {
    let mut a = a.clone();
    a.id = b.id.clone();
    a.created_at = b.created_at.clone();
    a == *b
}

/// Whether an accepted handoff backs lane `feature` being `owner`'s at
/// `path`: a packet (here) for that lane whose acceptance is by `owner` in
/// the checkout at `path`. Unreadable packets back nothing.
pub fn handoff_accepted(store: &Store, feature: &str, owner: &str, path: &str) -> Result<bool> {
    for (refname, id) in store.list_refs(PREFIX)? {
        let Ok((packet, Some(acc))) = read_version(store, id, &refname) else {
            continue;
        };
        if packet.lane.as_deref() == Some(feature)
            && acc.accepted_by == owner
            && same_dir(&acc.checkout, path)
        {
            return Ok(true);
        }
    }
    Ok(false)
}

fn same_dir(a: &str, b: &str) -> bool {
    let canon = |p: &str| std::fs::canonicalize(p).unwrap_or_else(|_| std::path::PathBuf::from(p));
    canon(a) == canon(b)
}

/// Read a packet version: the packet and its acceptance, if any.
fn read_version(store: &Store, id: ObjectId, what: &str) -> Result<(Packet, Option<Acceptance>)> {
    let rec = store.read_commit(id)?;
    parse_version(&rec, what)
}

fn parse_version(rec: &Record, what: &str) -> Result<(Packet, Option<Acceptance>)> {
    let bytes = rec.file(PACKET_FILE).ok_or_else(|| {
        Error::usage(
            "YAML_INVALID",
            format!("{what} at {} has no {PACKET_FILE}", short(rec.commit)),
        )
    })?;
    let packet_what = format!("{what}:{PACKET_FILE}");
    let packet: Packet = record::parse(bytes, "dwp-handoff", &packet_what)?;
    record::check_identities(&packet_what, &[], &[("author", &packet.author)])?;
    let acceptance = rec
        .file(ACCEPTANCE_FILE)
        .map(|b| {
            record::parse::<Acceptance>(b, "swarm-acceptance", &format!("{what}:{ACCEPTANCE_FILE}"))
        })
        .transpose()?;
    Ok((packet, acceptance))
}

fn parse_withdrawal(rec: &Record, what: &str) -> Result<Option<Withdrawal>> {
    rec.file(WITHDRAWAL_FILE)
        .map(|b| {
            record::parse::<Withdrawal>(b, "swarm-withdrawal", &format!("{what}:{WITHDRAWAL_FILE}"))
        })
        .transpose()
}

fn withdrawn_error(packet: &Packet, w: &Withdrawal) -> Error {
    Error::check(
        "PACKET_WITHDRAWN",
        format!(
            "packet {} was withdrawn by {} at {}: {}",
            packet.id, w.withdrawn_by, w.withdrawn_at, w.reason
        ),
    )
    .hint(format!(
        "ask {} for a new handoff; `git swarm packets --plan {}` lists the open ones",
        packet.author, packet.plan
    ))
    .with_detail(serde_json::json!({ "withdrawal": w }))
}

/// Local names of every packet ref known here (local or mirrored), under `prefix`.
/// Packet refs under `prefix`, local or published; with `archived`, also
/// those `gc` folded into the archive (for finding one packet by id).
fn known_refs(
    ctx: &Ctx,
    remote: Option<&str>,
    prefix: &str,
    archived: bool,
) -> Result<Vec<String>> {
    let mut names: Vec<String> = ctx
        .store
        .list_refs(prefix)?
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    if let Some(remote) = remote {
        let root = sync::mirror_ref(remote, "refs/swarm/");
        for (n, _) in ctx.store.list_refs(&sync::mirror_ref(remote, prefix))? {
            names.push(format!("refs/swarm/{}", &n[root.len()..]));
        }
    }
    if archived {
        names.extend(
            crate::gc::archived(&ctx.store, "packets")?
                .into_keys()
                .filter(|n| n.starts_with(prefix)),
        );
    }
    names.sort();
    names.dedup();
    Ok(names)
}

/// An open packet of ours with the same content (a re-run after an interruption).
fn find_resumable(ctx: &Ctx, plan: &str, candidate: &Packet) -> Result<Option<String>> {
    for refname in known_refs(ctx, ctx.remote(), &format!("{PREFIX}{plan}/"), false)? {
        let tip = sync::tip(&ctx.store, ctx.remote(), &refname)?;
        let Some(base) = tip.base else { continue };
        let Ok((p, acc)) = read_version(&ctx.store, base, &refname) else {
            continue;
        };
        if acc.is_none() && same_content(&p, candidate) {
            return Ok(Some(refname));
        }
    }
    Ok(None)
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
    Ok(known_refs(ctx, ctx.remote(), PREFIX, true)?
        .iter()
        .any(|r| r.rsplit('/').next() == Some(id)))
}

fn handoff_note(p: &Packet) -> serde_json::Value {
    serde_json::json!({ "kind": "handoff", "packet": p.id, "plan": p.plan, "author": p.author, "reason": p.reason })
}

/// `commit` is the acceptance's record commit: notes are a union across
/// machines, so a superseded offline acceptance may leave a line too; the
/// one whose commit is on the packet ref is the acceptance that counts.
fn acceptance_note(a: &Acceptance, commit: ObjectId) -> serde_json::Value {
    serde_json::json!({ "kind": "acceptance", "packet": a.packet, "plan": a.plan, "by": a.accepted_by, "commit": commit.to_string() })
}

/// Where an export goes, as the packet records it: the path relative to the
/// checkout root (as `git status` names it) when inside, else absolute.
fn export_location(workdir: &Path, path: &Path) -> Result<String> {
    let cwd = std::env::current_dir().map_err(|e| {
        Error::env(
            "IO_FAILED",
            format!("cannot read the current directory: {e}"),
        )
    })?;
    let absolute = cwd.join(path);
    let name = absolute.file_name().map(PathBuf::from).unwrap_or_default();
    // The file may not exist yet: resolve its directory, as far as it exists.
    let mut dir = absolute.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut rest = Vec::new();
    while !dir.as_os_str().is_empty() && std::fs::canonicalize(&dir).is_err() {
        rest.push(dir.file_name().map(PathBuf::from).unwrap_or_default());
        if !dir.pop() {
            break;
        }
    }
    let mut resolved = std::fs::canonicalize(&dir).unwrap_or(dir);
    for part in rest.iter().rev() {
        resolved.push(part);
    }
    resolved.push(name);
    let root = std::fs::canonicalize(workdir).unwrap_or_else(|_| workdir.to_path_buf());
    Ok(match resolved.strip_prefix(&root) {
        Ok(rel) => rel.to_string_lossy().into_owned(),
        Err(_) => resolved.to_string_lossy().into_owned(),
    })
}

fn write_export(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let io = |e| plan::io_error(path, e);
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(|e| plan::io_error(&dir, e))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "packet.yaml".into());
    // Owner-only from the first byte, then an atomic rename into place.
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(io)?;
    f.set_permissions(std::fs::Permissions::from_mode(0o600))
        .map_err(io)?;
    f.write_all(bytes).map_err(io)?;
    f.sync_all().map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)?;
    Ok(())
}

/// `git swarm handoff`
pub fn handoff(ctx: &Ctx, input: HandoffInput) -> Result<Output> {
    let store = &ctx.store;
    // The caller's text is scanned before anything else, so that a credential
    // never reaches a message, a fetch or an object.
    let verified = parse_verified(&input.verified)?;
    let said = serde_json::json!({
        "reason": input.reason,
        "plan": input.plan,
        "task": input.task,
        "step": input.step,
        "done": input.done,
        "verified": verified,
        "unverified": input.unverified,
        "next": input.next,
        "requests": input.requests,
        "decisions": input.decisions,
    });
    let value = serde_yaml_ng::to_value(&said)
        .map_err(|e| Error::env("INTERNAL", format!("could not serialise a packet: {e}")))?;
    let mut findings = secret::scan(&value);
    // `--verified CLAIM=EVIDENCE` is judged whole too: split at its `=`, a
    // password assignment would pass as the claim "password" and the rest.
    for (i, raw) in input.verified.iter().enumerate() {
        let field = format!("verified[{i}]");
        let prefix = format!("{field}.");
        if !findings.iter().any(|f| f.field.starts_with(&prefix)) {
            findings.extend(secret::scan_fields(&[(field.as_str(), raw.as_str())]));
        }
    }
    refuse_findings(findings)?;
    crate::text::check_value("the packet", &value, &[])?;
    if !REASONS.contains(&input.reason.as_str()) {
        return Err(Error::usage(
            "USAGE",
            format!("--reason must be one of {}", REASONS.join(", ")),
        ));
    }
    let actor = ctx.actor()?;
    let plan_name = match &input.plan {
        Some(p) => p.clone(),
        None => plan::infer(ctx)?,
    };
    let plan_rec = plan::require(store, &plan_name)?;
    let workdir = store.workdir_or_err()?;
    let lead_ref = lead::lead_ref(&plan_name);
    let packets_prefix = format!("{PREFIX}{plan_name}/");
    let branch = store.git.current_branch()?;
    let lane = match &branch {
        Some(b) => crate::lane::all(store)?
            .0
            .into_iter()
            .find(|l| l.record.is_active() && l.record.branch == *b),
        None => None,
    };
    let lane_ref = lane.as_ref().map(|l| crate::lane::lane_ref(&l.feature));
    let mut wanted = vec![lead_ref.as_str(), packets_prefix.as_str()];
    wanted.extend(lane_ref.as_deref());
    fetch(ctx, &wanted)?;

    let head = head_commit(store)?;
    let export = input
        .export
        .as_deref()
        .map(|p| export_location(&workdir, p))
        .transpose()?;
    let mut uncommitted = store.git.dirty_paths()?;
    uncommitted.retain(|p| Some(p) != export.as_ref());
    let uncommitted_content = content_ids(store, &workdir, &uncommitted)?;
    let repo = ctx
        .settings
        .remote
        .as_deref()
        .and_then(|r| store.config(&format!("remote.{r}.url")))
        .map(|u| clean_url(&u));
    let is_pushed = pushed(ctx, branch.as_deref(), &head)?;
    let leader = lead::known(store, ctx.remote(), &plan_name)?;
    let checkout = std::fs::canonicalize(&workdir)
        .unwrap_or(workdir)
        .display()
        .to_string();
    let mut packet = Packet {
        schema: SCHEMA.into(),
        id: String::new(),
        plan: plan_name.clone(),
        contract: plan_rec.record.contract.clone(),
        author: actor.clone(),
        created_at: String::new(),
        reason: input.reason.clone(),
        task: input.task.clone(),
        step: input.step.clone(),
        repo,
        checkout,
        branch: branch.clone(),
        head: head.clone(),
        pushed: is_pushed,
        uncommitted,
        uncommitted_content,
        export,
        lane: lane.as_ref().map(|l| l.feature.clone()),
        leader: leader
            .as_ref()
            .and_then(|l| l.current_leader())
            .map(str::to_string),
        epoch: leader.as_ref().map(|l| l.epoch),
        done: input.done.clone(),
        verified,
        unverified: input.unverified.clone(),
        next: input.next.clone(),
        requests: input.requests.clone(),
        decisions: input.decisions.clone(),
        extra: Extra::new(),
    };
    // What the tool derived travels too (a path or a URL can carry a secret).
    // `uncommitted_content` repeats the `uncommitted` paths as its keys, with
    // blob ids: scanned once, as `uncommitted`, so a finding names that field.
    let mut probe = packet.clone();
    probe.uncommitted_content.clear();
    scan(&probe)?;

    let now = store.clock.now();
    let companions = lane_companion(ctx, lane_ref.as_deref())?;
    let resumed = find_resumable(ctx, &plan_name, &packet)?;
    let refname = match &resumed {
        Some(refname) => {
            let tip = sync::tip(store, ctx.remote(), refname)?;
            let commit = tip.base.expect("a resumable packet has a version");
            packet = read_version(store, commit, refname)?.0;
            if tip.online && tip.remote.is_none() {
                // Written here but never published: publish it now.
                let record = sync::Publish {
                    refname,
                    tip: &tip,
                    new: commit,
                    actor: &actor,
                    reason: "handoff: publish",
                    point: "handoff",
                };
                if let Published::Rejected(lines) =
                    sync::publish_records(store, ctx.remote(), &record, &companions, &[])?
                {
                    return Err(Error::race(
                        "CAS_FAILED",
                        format!(
                            "{refname} exists on the remote with other content: {}",
                            lines.join("; ")
                        ),
                    )
                    .hint("run `git swarm sync`, then hand off again"));
                }
            } else if tip.local != Some(commit) {
                sync::adopt(store, refname, commit, &actor, "handoff: catch up")?;
            }
            refname.clone()
        }
        None => publish_new(ctx, &mut packet, &actor, now, &companions)?,
    };
    failpoint::point("handoff:ref");

    let summary = format!(
        "handoff {}: {} ({})",
        packet.id,
        packet.task.as_deref().unwrap_or("work"),
        packet.reason
    );
    let mut event = Event::new("handoff-written", &actor, summary)
        .trailer("Swarm-Packet", packet.id.clone())
        .trailer("Swarm-Reason", packet.reason.clone());
    if let Some(e) = packet.epoch {
        event = event.epoch(e);
    }
    plan::journal(
        ctx,
        &plan_name,
        &event,
        None,
        Some(("Swarm-Packet", &packet.id)),
    )?;
    failpoint::point("handoff:journal");
    let head_id = ObjectId::from_hex(packet.head.as_bytes())
        .map_err(|e| Error::gix("bad head commit id", e))?;
    store.note_append(head_id, &handoff_note(&packet), &event)?;

    let yaml = record::to_yaml(&packet)?;
    if let Some(path) = &input.export {
        write_export(path, &yaml)?;
    }

    let mut text = format!(
        "{} packet {} ({refname})\n",
        if resumed.is_some() {
            "completed"
        } else {
            "wrote"
        },
        packet.id
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
        if packet.uncommitted.len() == 1 {
            ""
        } else {
            "s"
        }
    ));
    if let Some(remote) = ctx.remote() {
        text.push_str(&format!("  published to {remote}\n"));
    }
    if let Some(path) = &input.export {
        text.push_str(&format!("  exported to {} (mode 0600)\n", path.display()));
    }
    let mut warnings = Vec::new();
    if !packet.pushed {
        // A successor elsewhere checks out the branch by name, so what
        // matters is the branch on the remote at this head.
        let warning = match (&packet.branch, ctx.settings.remote.as_deref()) {
            (Some(b), Some(r)) => format!(
                "{b} is not on {r} at this head: push it (`git push -u {r} {b}`) so that a successor on another machine can check it out"
            ),
            (_, None) => "there is no remote: only a successor working in this repository can take this over".to_string(),
            (None, Some(_)) => "the detached head is not on the remote: push it to a branch so that a successor on another machine can reach it".to_string(),
        };
        warnings.push(warning);
    }
    text.push_str(&format!(
        "a successor takes over with: git swarm accept {}\n",
        packet.id
    ));
    let mut json = serde_json::to_value(&packet).expect("a packet serialises");
    json["ref"] = serde_json::json!(refname);
    json["resumed"] = serde_json::json!(resumed.is_some());
    json["published"] = serde_json::json!(ctx.remote().is_some());
    json["warnings"] = serde_json::json!(warnings);
    let mut out = Output::new(json, text);
    out.warnings = warnings;
    Ok(out)
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
    let published = store.ref_target(&sync::mirror_ref(remote, refname))?;
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

/// Give the packet a free id, write it, publish it at the arbiter; a lost
/// race for an id (same author, same second) moves on to the next suffix.
fn publish_new(
    ctx: &Ctx,
    packet: &mut Packet,
    actor: &str,
    now: jiff::Timestamp,
    companions: &[PushUpdate],
) -> Result<String> {
    let store = &ctx.store;
    let stem = format!("{}-{}", now.strftime("%Y%m%dT%H%M%SZ"), actor);
    names::validate_address(actor)?;
    for n in 1..=64 {
        let id = if n == 1 {
            stem.clone()
        } else {
            format!("{stem}-{n}")
        };
        let refname = packet_ref(&packet.plan, &id);
        if id_taken(ctx, &refname)? {
            continue;
        }
        packet.id = id;
        packet.created_at = rfc3339(now);
        let mut files = BTreeMap::new();
        files.insert(PACKET_FILE.to_string(), record::to_yaml(&*packet)?);
        let tree = store.write_tree(&files)?;
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
        let tip = sync::Tip {
            local: None,
            remote: None,
            base: None,
            online: ctx.remote().is_some(),
            archived: false,
        };
        let record = sync::Publish {
            refname: &refname,
            tip: &tip,
            new: commit,
            actor,
            reason: &event.summary,
            point: "handoff",
        };
        match sync::publish_records(store, ctx.remote(), &record, companions, &[])? {
            Published::Ok => return Ok(refname),
            Published::Rejected(lines) => {
                fetch(ctx, &[&format!("{PREFIX}{}/", packet.plan)])?;
                if !companions.is_empty() && !id_taken(ctx, &refname)? {
                    // Not the id: the lane record moved at the remote meanwhile.
                    return Err(Error::race(
                        "PUSH_REJECTED",
                        format!(
                            "the remote refused the packet with its lane record: {}",
                            lines.join("; ")
                        ),
                    )
                    .hint("run `git swarm sync`, then hand off again"));
                }
                continue;
            }
        }
    }
    Err(Error::race(
        "CAS_FAILED",
        "could not find a free packet id (64 tries)",
    ))
}

/// Find the packet ref an id names (`<id>` or `<plan>/<id>`).
pub fn locate(ctx: &Ctx, arg: &str) -> Result<String> {
    locate_in(ctx, ctx.remote(), arg)
}

/// [`locate`] among the local refs and `remote`'s mirror.
fn locate_in(ctx: &Ctx, remote: Option<&str>, arg: &str) -> Result<String> {
    let (plan, id) = match arg.split_once('/') {
        Some((p, i)) => (Some(p), i),
        None => (None, arg),
    };
    if let Some(p) = plan {
        names::validate_name("plan", p)?;
    }
    if id.is_empty()
        || !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '@' | '-'))
    {
        return Err(Error::usage(
            "NAME_INVALID",
            format!("'{}' is not a packet id", arg.escape_debug()),
        )
        .hint("packet ids look like 20261129T091131Z-alice; list them with `git swarm packets`"));
    }
    let prefix = match plan {
        Some(p) => format!("{PREFIX}{p}/"),
        None => PREFIX.to_string(),
    };
    let found: Vec<String> = known_refs(ctx, remote, &prefix, true)?
        .into_iter()
        .filter(|r| r.rsplit('/').next() == Some(id))
        .collect();
    match found.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(
            Error::usage("NOT_FOUND", format!("packet '{arg}' does not exist")).hint(
                "list packets with `git swarm packets`; `git swarm sync` fetches the shared ones",
            ),
        ),
        many => Err(Error::usage(
            "USAGE",
            format!("packet id '{id}' is ambiguous: {}", many.join(", ")),
        )
        .hint("name it as <plan>/<packet-id>")),
    }
}

/// One fact that does not match the packet.
#[derive(Debug, Clone, Serialize)]
pub struct Mismatch {
    pub field: String,
    pub expected: serde_json::Value,
    pub actual: serde_json::Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}

fn list_diff(expected: &[String], actual: &[String]) -> String {
    use similar::{ChangeTag, TextDiff};
    let e: Vec<&str> = expected.iter().map(String::as_str).collect();
    let a: Vec<&str> = actual.iter().map(String::as_str).collect();
    let diff = TextDiff::configure().diff_slices(&e, &a);
    let mut out = String::new();
    for change in diff.iter_all_changes() {
        let sign = match change.tag() {
            ChangeTag::Delete => "- ",
            ChangeTag::Insert => "+ ",
            ChangeTag::Equal => "  ",
        };
        out.push_str(sign);
        out.push_str(change.value());
        out.push('\n');
    }
    out
}

/// Re-derive every fact the packet states that this checkout can check.
fn rederive(ctx: &Ctx, packet: &Packet) -> Result<Vec<Mismatch>> {
    let store = &ctx.store;
    let mut out = Vec::new();
    let (_, plan_tip) = plan::newest_head(ctx, &packet.plan)?;
    match plan_tip {
        None => out.push(Mismatch {
            field: "plan".into(),
            expected: serde_json::json!(format!("plan {} exists", packet.plan)),
            actual: serde_json::json!("not found here"),
            diff: None,
        }),
        Some(tip) => {
            let p = plan::from_record(&packet.plan, store.read_commit(tip)?)?;
            if p.record.contract != packet.contract {
                out.push(Mismatch {
                    field: "contract".into(),
                    expected: serde_json::json!(packet.contract),
                    actual: serde_json::json!(p.record.contract),
                    diff: None,
                });
            }
        }
    }
    let branch = store.git.current_branch()?;
    if branch != packet.branch {
        out.push(Mismatch {
            field: "branch".into(),
            expected: serde_json::json!(packet.branch),
            actual: serde_json::json!(branch),
            diff: None,
        });
    }
    let head = store.git.rev_parse("HEAD")?;
    if head.as_deref() != Some(packet.head.as_str()) {
        out.push(Mismatch {
            field: "head".into(),
            expected: serde_json::json!(packet.head),
            actual: serde_json::json!(head),
            diff: None,
        });
    }
    let mut dirty = store.git.dirty_paths()?;
    // The packet's own export file is not part of the work.
    dirty.retain(|p| Some(p) != packet.export.as_ref());
    dirty.sort();
    let mut want = packet.uncommitted.clone();
    want.sort();
    if dirty != want {
        out.push(Mismatch {
            field: "uncommitted".into(),
            diff: Some(list_diff(&want, &dirty)),
            expected: serde_json::json!(want),
            actual: serde_json::json!(dirty),
        });
    } else {
        out.extend(content_mismatch(ctx, packet)?);
    }
    Ok(out)
}

/// The content of each path in the checkout, as git would store it: the
/// blob id of a file's bytes (of a symlink's target, for a link), or
/// `deleted`. No filters run, so both sides of a handoff hash alike.
fn content_ids(
    store: &Store,
    workdir: &Path,
    paths: &[String],
) -> Result<BTreeMap<String, String>> {
    let kind = store.repo.object_hash();
    let mut out = BTreeMap::new();
    for p in paths {
        let full = workdir.join(p);
        let bytes = match std::fs::symlink_metadata(&full) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                out.insert(p.clone(), "deleted".to_string());
                continue;
            }
            Err(e) => return Err(plan::io_error(&full, e)),
            Ok(m) if m.file_type().is_symlink() => std::fs::read_link(&full)
                .map_err(|e| plan::io_error(&full, e))?
                .into_os_string()
                .into_encoded_bytes(),
            Ok(m) if m.is_dir() => {
                // A nested repository or submodule: its content is not ours to hash.
                out.insert(p.clone(), "directory".to_string());
                continue;
            }
            Ok(_) => std::fs::read(&full).map_err(|e| plan::io_error(&full, e))?,
        };
        let id = gix::objs::compute_hash(kind, gix::objs::Kind::Blob, &bytes)
            .map_err(|e| Error::gix("could not hash a file", e))?;
        out.insert(p.clone(), id.to_string());
    }
    Ok(out)
}

/// Paths whose content differs from what the packet recorded, as
/// `path blob` lines (expected, actual); empty when the packet recorded
/// none (an older packet) or every path matches.
fn content_mismatch(ctx: &Ctx, packet: &Packet) -> Result<Option<Mismatch>> {
    if packet.uncommitted_content.is_empty() {
        return Ok(None);
    }
    let workdir = ctx.store.workdir_or_err()?;
    let paths: Vec<String> = packet.uncommitted_content.keys().cloned().collect();
    let actual = content_ids(&ctx.store, &workdir, &paths)?;
    let differ: Vec<&String> = paths
        .iter()
        .filter(|p| actual.get(*p) != packet.uncommitted_content.get(*p))
        .collect();
    if differ.is_empty() {
        return Ok(None);
    }
    let line = |map: &BTreeMap<String, String>, p: &String| {
        format!("{p} {}", map.get(p).map(String::as_str).unwrap_or("?"))
    };
    let want: Vec<String> = differ
        .iter()
        .map(|p| line(&packet.uncommitted_content, p))
        .collect();
    let got: Vec<String> = differ.iter().map(|p| line(&actual, p)).collect();
    Ok(Some(Mismatch {
        field: "uncommitted_content".into(),
        diff: Some(list_diff(&want, &got)),
        expected: serde_json::json!(want),
        actual: serde_json::json!(got),
    }))
}

fn show_value(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "(none)".into(),
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn mismatch_error(packet: &Packet, mismatches: &[Mismatch]) -> Error {
    let mut msg = format!(
        "packet {} does not match this checkout ({} mismatch{}); nothing was recorded",
        packet.id,
        mismatches.len(),
        if mismatches.len() == 1 { "" } else { "es" }
    );
    for m in mismatches {
        match &m.diff {
            Some(d) => {
                msg.push_str(&format!(
                    "\n  {}: the packet's list (-) vs this checkout's (+):",
                    m.field
                ));
                for line in d.lines() {
                    msg.push_str(&format!("\n    {line}"));
                }
            }
            None => msg.push_str(&format!(
                "\n  {}: expected {}, found {}",
                m.field,
                show_value(&m.expected),
                show_value(&m.actual)
            )),
        }
    }
    let mut err = Error::check("PACKET_MISMATCH", msg);
    if mismatches
        .iter()
        .any(|m| m.field == "branch" || m.field == "head")
    {
        let target = packet.branch.as_deref().unwrap_or(&packet.head);
        err = err.hint(format!(
            "check out the work first: git fetch && git switch {target} (at {})",
            &packet.head[..12.min(packet.head.len())]
        ));
    }
    if mismatches.iter().any(|m| m.field == "uncommitted") {
        err = err.hint("the uncommitted paths must be the packet's: bring the same working-tree changes over (or ask the author to commit and push them)");
    }
    if mismatches.iter().any(|m| m.field == "uncommitted_content") {
        err = err.hint("the same paths hold other content than the packet's (blob ids shown): bring the author's exact working-tree changes over (or ask them to commit and push them)");
    }
    if mismatches.iter().any(|m| m.field == "plan") {
        err = err.hint("fetch the plan with `git swarm sync`");
    }
    if mismatches.iter().any(|m| m.field == "contract") {
        err = err.hint(format!(
            "the plan's contract changed after the packet was written: read the plan (`git swarm plan show {}`), then ask {} for a new handoff against it",
            packet.plan, packet.author
        ));
    }
    if !packet.pushed
        && mismatches
            .iter()
            .any(|m| m.field == "branch" || m.field == "head")
    {
        err = err.hint(format!("the packet says its head was not pushed: {} must push it before anyone elsewhere can take it over", packet.author));
    }
    err.with_detail(serde_json::json!({ "packet": packet.id, "mismatches": mismatches }))
}

/// `git swarm accept <packet-id>`
pub fn accept(ctx: &Ctx, arg: &str) -> Result<Output> {
    let store = &ctx.store;
    let actor = ctx.actor()?;
    fetch(
        ctx,
        &[
            PREFIX,
            "refs/swarm/lead/",
            "refs/swarm/plans/",
            "refs/swarm/lanes/",
        ],
    )?;
    let refname = locate(ctx, arg)?;
    let tip = sync::tip(store, ctx.remote(), &refname)?;
    let base = tip.base.expect("a located packet has a version");
    let rec = store.read_commit(base)?;
    let (packet, accepted) = parse_version(&rec, &refname)?;

    if let Some(acc) = accepted {
        if acc.accepted_by == actor {
            // Ours: complete whatever an interrupted run left undone.
            let mut completed = false;
            if tip.local != Some(base) {
                sync::adopt(store, &refname, base, &actor, "accept: catch up")?;
                completed = true;
            }
            completed |= plan::journal(
                ctx,
                &packet.plan,
                &accept_event(&acc),
                None,
                Some(("Swarm-Packet", &packet.id)),
            )?
            .is_some();
            let head_id = ObjectId::from_hex(packet.head.as_bytes())
                .map_err(|e| Error::gix("bad head commit id", e))?;
            let line = acceptance_note(&acc, base);
            let note = serde_json::to_string(&line).expect("JSON");
            if !store.note_lines(head_id)?.contains(&note) {
                store.note_append(head_id, &line, &accept_event(&acc))?;
                completed = true;
            }
            if let Some(branch) = &packet.branch {
                // The lane record may have gone out with the acceptance: take
                // it first, so the handover here is not written twice.
                completed |= catch_up_lane(ctx, &packet, &actor)?;
                completed |= crate::lane::hand_over(
                    store,
                    branch,
                    &actor,
                    &packet.id,
                    &store.workdir_or_err()?,
                )?;
            }
            if completed {
                return Ok(accepted_output(ctx, &refname, &packet, &acc, true));
            }
        }
        return Err(Error::race(
            "PACKET_ALREADY_ACCEPTED",
            format!(
                "packet {} was already accepted by {} at {}",
                packet.id, acc.accepted_by, acc.accepted_at
            ),
        )
        .hint(format!(
            "a packet is accepted once; see it with `git swarm packet show {}`",
            packet.id
        ))
        .with_detail(serde_json::json!({ "acceptance": acc })));
    }

    if let Some(w) = parse_withdrawal(&rec, &refname)? {
        return Err(withdrawn_error(&packet, &w));
    }
    // Accepting your own packet is allowed (an address may stand for an
    // account whose next session resumes), but it locks out any other successor.
    let own_packet = packet.author == actor;
    let mismatches = rederive(ctx, &packet)?;
    if !mismatches.is_empty() {
        return Err(mismatch_error(&packet, &mismatches));
    }
    let leader = lead::known(store, ctx.remote(), &packet.plan)?;
    let workdir = store.workdir_or_err()?;
    let lane_move = lane_move(ctx, &packet, &actor, &workdir)?;
    let acc = Acceptance {
        schema: ACCEPTANCE_SCHEMA.into(),
        packet: packet.id.clone(),
        plan: packet.plan.clone(),
        contract: packet.contract.clone(),
        accepted_by: actor.clone(),
        accepted_at: rfc3339(store.clock.now()),
        checkout: std::fs::canonicalize(&workdir)
            .unwrap_or_else(|_| workdir.clone())
            .display()
            .to_string(),
        branch: packet.branch.clone(),
        head: packet.head.clone(),
        uncommitted: packet.uncommitted.clone(),
        leader: leader
            .as_ref()
            .and_then(|l| l.current_leader())
            .map(str::to_string),
        epoch: leader.as_ref().map(|l| l.epoch),
        must_rerun: packet.unverified.clone(),
        next: packet.next.clone(),
        extra: Extra::new(),
    };
    let mut files = rec.files.clone();
    files.insert(ACCEPTANCE_FILE.to_string(), record::to_yaml(&acc)?);
    let tree = store.write_tree(&files)?;
    let event = accept_event(&acc);
    let commit = store.commit(tree, &[base], &event)?;
    failpoint::point("accept:objects");
    let record = sync::Publish {
        refname: &refname,
        tip: &tip,
        new: commit,
        actor: &actor,
        reason: &event.summary,
        point: "accept",
    };
    if let Published::Rejected(lines) =
        sync::publish_records(store, ctx.remote(), &record, &lane_move, &[])?
    {
        fetch(ctx, &[&refname])?;
        let after = sync::tip(store, ctx.remote(), &refname)?;
        if let Some(b) = after.base {
            if let (_, Some(won)) = read_version(store, b, &refname)? {
                return Err(Error::race(
                    "PACKET_ALREADY_ACCEPTED",
                    format!(
                        "packet {} was accepted by {} at {} while you were accepting it",
                        packet.id, won.accepted_by, won.accepted_at
                    ),
                )
                .hint("nothing of yours was recorded; the first published acceptance wins"));
            }
        }
        return Err(Error::race(
            "PUSH_REJECTED",
            format!(
                "the remote refused the acceptance of packet {}: {}",
                packet.id,
                lines.join("; ")
            ),
        )
        .hint("run the command again"));
    }
    failpoint::point("accept:ref");
    plan::journal(
        ctx,
        &packet.plan,
        &event,
        None,
        Some(("Swarm-Packet", &packet.id)),
    )?;
    failpoint::point("accept:journal");
    let head_id = ObjectId::from_hex(packet.head.as_bytes())
        .map_err(|e| Error::gix("bad head commit id", e))?;
    store.note_append(head_id, &acceptance_note(&acc, commit), &event)?;
    if let (None, Some(branch)) = (ctx.remote(), &packet.branch) {
        // Offline the local lane record is the one to move (with a remote,
        // it travelled with the acceptance).
        crate::lane::hand_over(store, branch, &actor, &packet.id, &workdir)?;
    }
    let out = accepted_output(ctx, &refname, &packet, &acc, false);
    Ok(if own_packet {
        out.warn(format!(
            "you accepted a packet you wrote yourself ({}): no other successor can accept it now",
            packet.author
        ))
    } else {
        out
    })
}

/// `git swarm packet withdraw <id> --reason R`: the author takes a packet
/// back before anyone accepted it (e.g. written to the wrong plan). A new
/// version of the packet ref with `withdrawal.yaml`, published by
/// compare-and-swap like an acceptance, so a withdrawal and an acceptance
/// racing each other cannot both win; the packet is never deleted.
pub fn withdraw(ctx: &Ctx, arg: &str, reason: &str) -> Result<Output> {
    let store = &ctx.store;
    scan(&serde_json::json!({ "reason": reason }))?;
    if reason.trim().is_empty() {
        return Err(Error::usage(
            "USAGE",
            "--reason must say why the packet is withdrawn",
        ));
    }
    let actor = ctx.actor()?;
    fetch(ctx, &[PREFIX])?;
    let refname = locate(ctx, arg)?;
    let tip = sync::tip(store, ctx.remote(), &refname)?;
    let base = tip.base.expect("a located packet has a version");
    let rec = store.read_commit(base)?;
    let (packet, accepted) = parse_version(&rec, &refname)?;
    if let Some(acc) = accepted {
        return Err(Error::race(
            "PACKET_ALREADY_ACCEPTED",
            format!(
                "packet {} was accepted by {} at {}: it can no longer be withdrawn",
                packet.id, acc.accepted_by, acc.accepted_at
            ),
        )
        .hint(format!(
            "talk to {}: the work is theirs now",
            acc.accepted_by
        )));
    }
    if packet.author != actor {
        return Err(Error::check(
            "PACKET_NOT_AUTHOR",
            format!(
                "packet {} was written by {}, not by you ({actor}): only its author withdraws it",
                packet.id, packet.author
            ),
        )
        .hint(format!(
            "ask {} to run `git swarm packet withdraw {}`",
            packet.author, packet.id
        )));
    }
    if let Some(w) = parse_withdrawal(&rec, &refname)? {
        let json = serde_json::json!({ "packet": packet.id, "ref": refname, "withdrawal": w, "changed": false });
        return Ok(Output::new(
            json,
            format!("packet {} is already withdrawn ({})\n", packet.id, w.reason),
        ));
    }
    let w = Withdrawal {
        schema: WITHDRAWAL_SCHEMA.into(),
        packet: packet.id.clone(),
        plan: packet.plan.clone(),
        withdrawn_by: actor.clone(),
        withdrawn_at: rfc3339(store.clock.now()),
        reason: reason.to_string(),
        extra: Extra::new(),
    };
    let mut files = rec.files.clone();
    files.insert(WITHDRAWAL_FILE.to_string(), record::to_yaml(&w)?);
    let tree = store.write_tree(&files)?;
    let event = Event::new(
        "handoff-withdrawn",
        &actor,
        format!("handoff {}: withdrawn by {actor} ({reason})", packet.id),
    )
    .trailer("Swarm-Packet", packet.id.clone());
    let commit = store.commit(tree, &[base], &event)?;
    if let Published::Rejected(lines) = sync::publish_record(
        store,
        ctx.remote(),
        &refname,
        &tip,
        commit,
        &[],
        &actor,
        &event.summary,
        "withdraw",
    )? {
        return Err(Error::race(
            "PUSH_REJECTED",
            format!(
                "packet {} changed at the remote while you withdrew it (accepted?): {}",
                packet.id,
                lines.join("; ")
            ),
        )
        .hint(format!("see it with `git swarm packet show {}`", packet.id)));
    }
    // The plan's journal says so too; a missing plan (archived) is no reason to fail.
    match plan::journal(
        ctx,
        &packet.plan,
        &event,
        None,
        Some(("Swarm-Packet", &packet.id)),
    ) {
        Err(e) if e.code == "NOT_FOUND" => {}
        other => {
            other?;
        }
    }
    let json = serde_json::json!({ "packet": packet.id, "ref": refname, "withdrawal": w, "changed": true, "commit": commit.to_string() });
    Ok(Output::new(
        json,
        format!(
            "withdrew packet {} ({refname}); it stays readable and can no longer be accepted\n",
            packet.id
        ),
    ))
}

/// The lane the packet hands over, as the next version of its record, to
/// publish in the same atomic push as the acceptance: so `accept` either
/// moves the lane or records nothing. A packet that names a lane whose
/// record has not reached this clone is refused (`PACKET_LANE_MISSING`)
/// rather than accepted with the lane left behind. Offline, the lane is
/// moved locally after the acceptance (see `lane::hand_over`).
fn lane_move(ctx: &Ctx, packet: &Packet, actor: &str, checkout: &Path) -> Result<Vec<PushUpdate>> {
    let Some(branch) = packet.branch.as_deref() else {
        return Ok(Vec::new());
    };
    let feature = packet
        .lane
        .clone()
        .or_else(|| branch.strip_prefix("feat/").map(str::to_string))
        .filter(|f| names::is_valid_name(f));
    let Some(feature) = feature else {
        return Ok(Vec::new());
    };
    let refname = crate::lane::lane_ref(&feature);
    let tip = sync::tip(&ctx.store, ctx.remote(), &refname)?;
    let Some(base) = tip.base else {
        if packet.lane.is_some() {
            return Err(lane_missing(packet, &feature));
        }
        return Ok(Vec::new());
    };
    if ctx.remote().is_none() || tip.archived {
        return Ok(Vec::new());
    }
    let new = crate::lane::handover_commit(
        &ctx.store, &feature, base, branch, actor, &packet.id, checkout,
    )?;
    Ok(new
        .map(|id| PushUpdate {
            refname,
            new: Some(id.to_string()),
            expected: tip.remote.map(|r| r.to_string()),
        })
        .into_iter()
        .collect())
}

/// Move the local lane ref up to the published one when it is missing or
/// behind (a run interrupted between its push and its local update).
fn catch_up_lane(ctx: &Ctx, packet: &Packet, actor: &str) -> Result<bool> {
    let (Some(remote), Some(feature)) = (ctx.remote(), packet.lane.as_deref()) else {
        return Ok(false);
    };
    let refname = crate::lane::lane_ref(feature);
    let tip = sync::tip(&ctx.store, Some(remote), &refname)?;
    match (tip.remote, tip.local_behind(&ctx.store)?) {
        (Some(published), true) => {
            sync::adopt(&ctx.store, &refname, published, actor, "accept: catch up")?;
            Ok(true)
        }
        _ => Ok(false),
    }
}

fn lane_missing(packet: &Packet, feature: &str) -> Error {
    Error::check(
        "PACKET_LANE_MISSING",
        format!(
            "packet {} hands over lane {feature}, whose record has not reached this clone; nothing was recorded",
            packet.id
        ),
    )
    .hint(format!(
        "ask {} to run `git swarm sync` (it publishes the lane record), then accept again",
        packet.author
    ))
    .hint("offline: `git swarm sync` first, to fetch it")
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

fn accepted_output(
    ctx: &Ctx,
    refname: &str,
    packet: &Packet,
    acc: &Acceptance,
    resumed: bool,
) -> Output {
    let mut text = format!(
        "accepted packet {} (plan {}, from {}: {}){}\n",
        packet.id,
        packet.plan,
        packet.author,
        packet.reason,
        if resumed {
            " — completed an interrupted acceptance"
        } else {
            ""
        }
    );
    if let Some(t) = &packet.task {
        text.push_str(&format!("task: {t}\n"));
    }
    if let Some(s) = &packet.step {
        text.push_str(&format!("step: {s}\n"));
    }
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
    let json = serde_json::json!({
        "packet": packet.id,
        "plan": packet.plan,
        "ref": refname,
        "accepted_by": acc.accepted_by,
        "accepted_at": acc.accepted_at,
        "next": packet.next,
        "must_rerun": packet.unverified,
        "task": packet.task,
        "step": packet.step,
        "resumed": resumed,
        "published": ctx.remote().is_some(),
        "acceptance": acc,
    });
    Output::new(json, text)
}

#[derive(Debug, Clone, Serialize)]
struct Row {
    id: String,
    plan: String,
    author: String,
    reason: String,
    created_at: String,
    branch: Option<String>,
    head: String,
    pushed: bool,
    accepted_by: Option<String>,
    accepted_at: Option<String>,
    withdrawn_by: Option<String>,
    withdrawn_reason: Option<String>,
    r#ref: String,
    published: bool,
}

/// `git swarm packets [--plan P] [--open]`
/// A packet nobody has accepted yet, as `status` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct OpenPacket {
    pub id: String,
    pub plan: String,
    pub author: String,
    pub reason: String,
    pub created_at: String,
    pub branch: Option<String>,
}

/// Every open (neither accepted nor withdrawn) live packet known here —
/// local refs and the mirror as last fetched, without fetching (`status`
/// only reads) — oldest first, and the packets that could not be read.
pub fn open_packets(ctx: &Ctx) -> Result<(Vec<OpenPacket>, Vec<record::Unreadable>)> {
    let remote = ctx.settings.remote.as_deref();
    let mut out = Vec::new();
    let mut unreadable = Vec::new();
    for refname in known_refs(ctx, remote, PREFIX, false)? {
        let tip = sync::tip(&ctx.store, remote, &refname)?;
        let Some(base) = tip.base else { continue };
        // Most live packets are accepted: tell by the tree, not by parsing.
        let closed = ctx
            .store
            .tree_has(base, ACCEPTANCE_FILE)
            .and_then(|a| Ok(a || ctx.store.tree_has(base, WITHDRAWAL_FILE)?));
        let read = closed.and_then(|closed| {
            if closed {
                Ok(None)
            } else {
                read_version(&ctx.store, base, &refname).map(Some)
            }
        });
        let (p, acc) = match read {
            Ok(Some(v)) => v,
            Ok(None) => continue,
            Err(e) => {
                let name = refname.trim_start_matches(PREFIX);
                unreadable.push(record::Unreadable::new("packet", name, &refname, &e));
                continue;
            }
        };
        if acc.is_none() {
            out.push(OpenPacket {
                id: p.id,
                plan: p.plan,
                author: p.author,
                reason: p.reason,
                created_at: p.created_at,
                branch: p.branch,
            });
        }
    }
    out.sort_by(|a, b| (&a.created_at, &a.id).cmp(&(&b.created_at, &b.id)));
    Ok((out, unreadable))
}

pub fn list(ctx: &Ctx, plan_filter: Option<&str>, open: bool) -> Result<Output> {
    let prefix = match plan_filter {
        Some(p) => {
            names::validate_name("plan", p)?;
            format!("{PREFIX}{p}/")
        }
        None => PREFIX.to_string(),
    };
    fetch(ctx, &[&prefix])?;
    // Read-only: the mirror as last fetched counts, `--offline` or not.
    let remote = ctx.settings.remote.as_deref();
    let mut rows = Vec::new();
    let mut unreadable = Vec::new();
    for refname in known_refs(ctx, remote, &prefix, false)? {
        let tip = sync::tip(&ctx.store, remote, &refname)?;
        let Some(base) = tip.base else { continue };
        let read = ctx.store.read_commit(base).and_then(|rec| {
            let (p, acc) = parse_version(&rec, &refname)?;
            Ok((p, acc, parse_withdrawal(&rec, &refname)?))
        });
        let (p, acc, withdrawn) = match read {
            Ok(v) => v,
            Err(e) => {
                let name = refname.trim_start_matches(PREFIX);
                unreadable.push(record::Unreadable::new("packet", name, &refname, &e));
                continue;
            }
        };
        if open && (acc.is_some() || withdrawn.is_some()) {
            continue;
        }
        rows.push(Row {
            id: p.id,
            plan: p.plan,
            author: p.author,
            reason: p.reason,
            created_at: p.created_at,
            branch: p.branch,
            head: p.head,
            pushed: p.pushed,
            accepted_by: acc.as_ref().map(|a| a.accepted_by.clone()),
            accepted_at: acc.map(|a| a.accepted_at),
            withdrawn_by: withdrawn.as_ref().map(|w| w.withdrawn_by.clone()),
            withdrawn_reason: withdrawn.map(|w| w.reason),
            r#ref: refname,
            published: tip.online && tip.remote == Some(base),
        });
    }
    rows.sort_by(|a, b| (&a.created_at, &a.id).cmp(&(&b.created_at, &b.id)));
    let mut text = String::new();
    if rows.is_empty() && unreadable.is_empty() {
        text.push_str(if open {
            "no open packets\n"
        } else {
            "no packets\n"
        });
    }
    for r in &rows {
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
    let mirror = remote
        .map(|r| sync::MirrorView::read(&ctx.store, r, &[prefix.as_str()]))
        .transpose()?;
    if let Some(m) = &mirror {
        text.push_str(&m.text(ctx.store.clock.now()));
    }
    Ok(record::report_unreadable(
        Output::new(
            serde_json::json!({ "packets": rows, "mirror": mirror }),
            text,
        ),
        &unreadable,
    ))
}

/// `git swarm packet show <id>`
pub fn show(ctx: &Ctx, arg: &str) -> Result<Output> {
    fetch(ctx, &[PREFIX])?;
    let remote = ctx.settings.remote.as_deref();
    let refname = locate_in(ctx, remote, arg)?;
    let tip = sync::tip(&ctx.store, remote, &refname)?;
    let base = tip.base.expect("a located packet has a version");
    let rec = ctx.store.read_commit(base)?;
    let (packet, acc) = parse_version(&rec, &refname)?;
    let mut text = format!("# {refname} ({})\n", short(base));
    text.push_str(&String::from_utf8_lossy(
        rec.file(PACKET_FILE).unwrap_or_default(),
    ));
    let withdrawn = parse_withdrawal(&rec, &refname)?;
    match (rec.file(ACCEPTANCE_FILE), rec.file(WITHDRAWAL_FILE)) {
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
            packet.id
        )),
    }
    let json = serde_json::json!({
        "ref": refname,
        "commit": base.to_string(),
        "published": tip.online && tip.remote == Some(base),
        "packet": packet,
        "acceptance": acc,
        "withdrawal": withdrawn,
    });
    Ok(Output::new(json, text))
}

#[cfg(test)]
mod tests {
    use super::clean_url;

    #[test]
    fn remote_urls_lose_their_credentials() {
        assert_eq!(
            clean_url("https://x-access-token:ghs_abc@github.com/o/r.git"),
            "https://github.com/o/r.git"
        );
        assert_eq!(
            clean_url("https://ghp_token@github.com/o/r"),
            "https://github.com/o/r"
        );
        assert_eq!(
            clean_url("ssh://git:secret@example.com/r.git"),
            "ssh://git@example.com/r.git"
        );
        assert_eq!(
            clean_url("ssh://git@example.com/r.git"),
            "ssh://git@example.com/r.git"
        );
        assert_eq!(
            clean_url("git@github.com:o/r.git"),
            "git@github.com:o/r.git"
        );
        assert_eq!(clean_url("/srv/remote.git"), "/srv/remote.git");
        // A user and a token (or password) in any http(s) URL: both go.
        assert_eq!(
            clean_url("https://user:token@host.example/o/r.git"),
            "https://host.example/o/r.git"
        );
        assert_eq!(
            clean_url("HTTP://user:token@host.example:8080"),
            "HTTP://host.example:8080"
        );
        // ssh: the user is part of the address and stays; the password goes.
        assert_eq!(
            clean_url("ssh://user:pw@host.example:2222/srv/r.git"),
            "ssh://user@host.example:2222/srv/r.git"
        );
        // An '@' in the path is not user info.
        assert_eq!(
            clean_url("https://host.example/o/r@v2.git"),
            "https://host.example/o/r@v2.git"
        );
    }
}

/// A packet's key: its plan and its id (`refs/swarm/packets/<plan>/<id>`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct PacketKey {
    pub plan: String,
    pub id: String,
}

impl std::fmt::Display for PacketKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.plan, self.id)
    }
}

impl crate::store::kind::RecordKey for PacketKey {
    fn to_path(&self) -> String {
        self.to_string()
    }
    fn from_path(path: &str) -> Option<Self> {
        let (plan, id) = path.split_once('/')?;
        (!plan.is_empty() && !id.is_empty() && !id.contains('/')).then(|| PacketKey {
            plan: plan.to_string(),
            id: id.to_string(),
        })
    }
}

/// One version of a packet record: the packet, and its acceptance or
/// withdrawal once there is one.
#[derive(Debug, Clone)]
pub struct PacketVersion {
    pub packet: Packet,
    pub acceptance: Option<Acceptance>,
    pub withdrawal: Option<Withdrawal>,
}

impl crate::store::kind::Record for PacketVersion {
    const NAMESPACE: &'static str = "packets";
    const KIND: &'static str = "packet";
    const DIVERGED: crate::store::kind::Diverged =
        crate::store::kind::Diverged::PublishedWinsIfRelated;
    type Key = PacketKey;

    fn to_files(&self) -> Result<crate::store::kind::Files> {
        let mut files = crate::store::kind::Files::new();
        files.insert(PACKET_FILE.to_string(), record::to_yaml(&self.packet)?);
        if let Some(acc) = &self.acceptance {
            files.insert(ACCEPTANCE_FILE.to_string(), record::to_yaml(acc)?);
        }
        if let Some(w) = &self.withdrawal {
            files.insert(WITHDRAWAL_FILE.to_string(), record::to_yaml(w)?);
        }
        Ok(files)
    }
    fn from_files(files: &crate::store::kind::Files, key: &PacketKey, _what: &str) -> Result<Self> {
        let rec = Record {
            commit: ObjectId::null(gix::hash::Kind::Sha1),
            files: files.clone(),
        };
        let what = packet_ref(&key.plan, &key.id);
        let (packet, acceptance) = parse_version(&rec, &what)?;
        let withdrawal = parse_withdrawal(&rec, &what)?;
        Ok(PacketVersion {
            packet,
            acceptance,
            withdrawal,
        })
    }
    /// An accepted packet.
    fn is_finished(&self, _: &PacketKey, _: &dyn Fn(&str, &str) -> bool) -> bool {
        self.acceptance.is_some()
    }
}
