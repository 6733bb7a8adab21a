//! Leadership of a plan: one leader per epoch, recorded in
//! `refs/swarm/lead/<plan>` (`lead.yaml`, `swarm-lead/v1`).
//!
//! With a remote, the remote's compare-and-swap is the arbiter between
//! machines: every command fetches the lead ref, decides on the published
//! record, writes the next version on top of it, and publishes it in one
//! atomic push whose lease is the value just fetched; only then does the
//! local ref move. A refused push means someone else moved the record first:
//! claims and takeovers report the winner (`LEAD_RACE_LOST`), leader-only
//! commands re-read and find out whether they are fenced. Offline (no remote
//! or `--offline`) the local CAS arbitrates the same way.
//!
//! Identity is the address: two machines acting under one address are one
//! leader. A leader is fenced when the record's epoch has moved past the
//! last epoch at which the record named it; one who released the plan
//! themselves is not fenced afterwards, just not the leader.

use std::collections::BTreeMap;

use gix::ObjectId;
use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};

use crate::clock::rfc3339;
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::failpoint;
use crate::names;
use crate::output::Output;
use crate::store::record::{self, Extra};
use crate::store::{short, Event, JournalEntry, Store};
use crate::sync::{self, Published, Tip};

pub const SCHEMA: &str = "swarm-lead/v1";
pub const RECORD_FILE: &str = "lead.yaml";
const DEFAULT_LEASE: &str = "30m";
/// How many times a leader-only command re-reads and retries when the record
/// moved under it without fencing it (e.g. the same leader renewing elsewhere).
const MAX_ATTEMPTS: usize = 4;

pub fn lead_ref(plan: &str) -> String {
    format!("refs/swarm/lead/{plan}")
}

/// The leader record.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LeadRecord {
    pub schema: String,
    pub plan: String,
    /// None once released.
    pub leader: Option<String>,
    pub epoch: u64,
    /// Ordered: who may take over, first reachable first.
    #[serde(default)]
    pub succession: Vec<String>,
    #[serde(default)]
    pub lanes: Vec<String>,
    #[serde(default)]
    pub lease_until: Option<String>,
    #[serde(default)]
    pub updated_at: String,
    #[serde(default)]
    pub released: bool,
    #[serde(flatten)]
    pub extra: Extra,
}

impl LeadRecord {
    /// Who leads now (None when released or never set).
    pub fn current_leader(&self) -> Option<&str> {
        if self.released {
            None
        } else {
            self.leader.as_deref()
        }
    }

    pub fn lease_until_ts(&self) -> Option<Timestamp> {
        self.lease_until.as_deref().and_then(|s| s.parse().ok())
    }

    pub fn lease_live(&self, now: Timestamp) -> bool {
        self.current_leader().is_some() && self.lease_until_ts().is_some_and(|t| now < t)
    }

    /// "bob (epoch 3)" or "nobody (released at epoch 3)".
    fn who(&self) -> String {
        match self.current_leader() {
            Some(l) => format!("{l} leads at epoch {}", self.epoch),
            None => format!("nobody leads (released at epoch {})", self.epoch),
        }
    }
}

/// Parse a record from its YAML.
pub fn parse_record(bytes: &[u8], plan: &str) -> Result<LeadRecord> {
    let what = format!("{}:{RECORD_FILE}", lead_ref(plan));
    let rec: LeadRecord = record::parse(bytes, "swarm-lead", &what)?;
    let mut addresses: Vec<(&str, &str)> = vec![("leader", rec.leader.as_deref().unwrap_or(""))];
    addresses.extend(rec.succession.iter().map(|a| ("succession", a.as_str())));
    record::check_identities(&what, &[("plan", &rec.plan)], &addresses)?;
    Ok(rec)
}

/// Read the record at commit `id`.
pub fn read_at(store: &Store, plan: &str, id: ObjectId) -> Result<LeadRecord> {
    let rec = store.read_commit(id)?;
    let bytes = rec.file(RECORD_FILE).ok_or_else(|| {
        Error::usage(
            "YAML_INVALID",
            format!("{} at {} has no {RECORD_FILE}", lead_ref(plan), short(id)),
        )
    })?;
    parse_record(bytes, plan)
}

/// The current leader and epoch of a plan as this repository knows it (the
/// newer of the local ref and the remote's mirror), for packets and status.
pub fn known(store: &Store, remote: Option<&str>, plan: &str) -> Result<Option<LeadRecord>> {
    let tip = sync::tip(store, remote, &lead_ref(plan))?;
    tip.base.map(|b| read_at(store, plan, b)).transpose()
}

/// A lease length: `30m`, `2h`, `1h30m`, `45s`, `1d`; must be positive.
pub fn parse_duration(text: &str) -> Result<SignedDuration> {
    let d = crate::clock::parse_duration(text)?;
    if d.is_zero() {
        return Err(Error::usage("USAGE", "a lease must be longer than zero")
            .hint("use a number and a unit: 45s, 30m, 2h, 1d, or combined like 1h30m"));
    }
    Ok(d)
}

fn lease_for(ctx: &Ctx, flag: Option<&str>) -> Result<SignedDuration> {
    match flag {
        Some(f) => parse_duration(f),
        None => parse_duration(
            &ctx.store
                .config("swarm.lease")
                .unwrap_or_else(|| DEFAULT_LEASE.to_string()),
        )
        .map_err(|e| e.hint("fix `git config swarm.lease`")),
    }
}

fn until(now: Timestamp, lease: SignedDuration) -> Result<String> {
    now.checked_add(lease)
        .map(rfc3339)
        .map_err(|e| Error::usage("USAGE", format!("lease too long: {e}")))
}

/// A leader command.
#[derive(Debug, Clone)]
pub enum Op {
    Claim {
        succession: Vec<String>,
        lanes: Vec<String>,
        lease: Option<String>,
    },
    Renew {
        lease: Option<String>,
        lanes: Option<Vec<String>>,
    },
    Handover {
        to: String,
        lease: Option<String>,
        /// Hand over to an address outside the succession (it is added).
        force: bool,
    },
    Takeover {
        reason: String,
        force: bool,
        lease: Option<String>,
    },
    Release,
    Push {
        refspecs: Vec<String>,
    },
    /// Replace the ordered succession (leader only; epoch unchanged).
    Succession {
        succession: Vec<String>,
    },
}

impl Op {
    fn event_kind(&self) -> &'static str {
        match self {
            Op::Claim { .. } => "lead-claimed",
            Op::Renew { .. } => "lead-renewed",
            Op::Handover { .. } => "lead-handover",
            Op::Takeover { .. } => "lead-takeover",
            Op::Release => "lead-released",
            Op::Push { .. } => "lead-act",
            Op::Succession { .. } => "lead-succession",
        }
    }
    fn name(&self) -> &'static str {
        match self {
            Op::Claim { .. } => "claim",
            Op::Renew { .. } => "renew",
            Op::Handover { .. } => "handover",
            Op::Takeover { .. } => "takeover",
            Op::Release => "release",
            Op::Push { .. } => "push",
            Op::Succession { .. } => "succession",
        }
    }
    /// Contests for leadership: a lost CAS means another contender won.
    fn contest(&self) -> bool {
        matches!(self, Op::Claim { .. } | Op::Takeover { .. })
    }
}

/// What the arbiter holds, read once per attempt.
struct State {
    plan: String,
    tip: Tip,
    record: Option<LeadRecord>,
    /// The journal entry of the record's tip commit.
    entry: Option<JournalEntry>,
    local_behind: bool,
}

impl State {
    fn load(store: &Store, plan: &str, tip: Tip) -> Result<State> {
        let (record, entry) = match tip.base {
            None => (None, None),
            Some(b) => (
                Some(read_at(store, plan, b)?),
                store.journal(b, Some(1))?.into_iter().next(),
            ),
        };
        Ok(State {
            plan: plan.to_string(),
            local_behind: tip.local_behind(store)?,
            tip,
            record,
            entry,
        })
    }

    /// The published tip is this actor's own `kind` event that the local ref
    /// has not caught up with: a previous run was interrupted after its push.
    fn unseen_own(&self, kind: &str, actor: &str) -> bool {
        self.local_behind
            && self
                .entry
                .as_ref()
                .is_some_and(|e| e.event == kind && e.actor == actor)
    }

    /// The last epoch at which the record named `actor` as leader, unless
    /// that leadership ended with the actor's own release (then None: they
    /// are simply not the leader, whatever happened to the epoch since).
    fn last_epoch_led(&self, store: &Store, actor: &str) -> Result<Option<u64>> {
        let Some(mut cur) = self.tip.base else {
            return Ok(None);
        };
        // The version after `cur` on the record's line (newer), if any.
        let mut newer: Option<LeadRecord> = None;
        // First-parent: the record's own line of versions.
        for _ in 0..100_000 {
            let rec = read_at(store, &self.plan, cur)?;
            if rec.leader.as_deref() == Some(actor) && !rec.released {
                // Only the leader releases: a release right after a version
                // that names `actor` is theirs.
                if newer.is_some_and(|n| n.released && n.epoch == rec.epoch) {
                    return Ok(None);
                }
                return Ok(Some(rec.epoch));
            }
            let commit = store
                .repo
                .find_commit(cur)
                .map_err(|e| Error::gix("could not read a lead record", e))?;
            let parent = commit.parent_ids().next().map(|p| p.detach());
            match parent {
                Some(p) => cur = p,
                None => break,
            }
            newer = Some(rec);
        }
        Ok(None)
    }
}

/// Refuse a leader-only command unless `actor` leads now.
fn require_leader<'a>(store: &Store, state: &'a State, actor: &str) -> Result<&'a LeadRecord> {
    let plan = &state.plan;
    let Some(rec) = &state.record else {
        return Err(Error::race(
            "NOT_LEADER",
            format!("nobody has claimed plan '{plan}' yet, so you do not lead it"),
        )
        .hint(format!(
            "claim it with `git swarm lead claim --plan {plan} --succession <A,B>`"
        )));
    };
    if rec.current_leader() == Some(actor) {
        return Ok(rec);
    }
    let now = rec.who();
    match state.last_epoch_led(store, actor)? {
        Some(mine) if rec.epoch > mine => Err(Error::race(
            "LEAD_FENCED",
            format!("you led plan '{plan}' at epoch {mine}, which is no longer current: {now}"),
        )
        .hint("stand down: merges, tags and publishes belong to the current leader")
        .hint(format!(
            "see the record with `git swarm lead status --plan {plan}`"
        ))
        .with_detail(record_json(rec, state.tip.base))),
        _ => Err(Error::race(
            "NOT_LEADER",
            format!("you do not lead plan '{plan}': {now}"),
        )
        .hint(match rec.current_leader() {
            Some(_) if rec.succession.iter().any(|s| s == actor) => format!(
                "as a successor you may `git swarm lead takeover --plan {plan} --reason …` once the lease expires"
            ),
            Some(_) => "ask the leader to hand over, or to add you to the succession".to_string(),
            None => format!("claim it with `git swarm lead claim --plan {plan} --succession <A,B>`"),
        })
        .with_detail(record_json(rec, state.tip.base))),
    }
}

enum Step {
    /// Nothing to write (a previous run already published this): say so.
    Done(String),
    Write {
        record: Box<LeadRecord>,
        event: Event,
        text: String,
    },
}

fn new_record(plan: &str) -> LeadRecord {
    LeadRecord {
        schema: SCHEMA.into(),
        plan: plan.into(),
        leader: None,
        epoch: 0,
        succession: Vec::new(),
        lanes: Vec::new(),
        lease_until: None,
        updated_at: String::new(),
        released: false,
        extra: Extra::new(),
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn decide(ctx: &Ctx, state: &State, actor: &str, op: &Op, now: Timestamp) -> Result<Step> {
    let store = &ctx.store;
    let plan = state.plan.as_str();
    let stamp = rfc3339(now);
    match op {
        Op::Claim {
            succession,
            lanes,
            lease,
        } => {
            let mut rec = match &state.record {
                None => new_record(plan),
                Some(r) if r.current_leader().is_none() => r.clone(),
                Some(r) => {
                    if r.current_leader() == Some(actor) && state.unseen_own("lead-claimed", actor)
                    {
                        return Ok(Step::Done(format!(
                            "you lead plan {plan} at epoch {} (your earlier claim was published; local ref updated)\n",
                            r.epoch
                        )));
                    }
                    let mut err = Error::race(
                        "LEAD_HELD",
                        format!(
                            "plan '{plan}' is held: {} (lease until {})",
                            r.who(),
                            r.lease_until.as_deref().unwrap_or("-")
                        ),
                    );
                    if r.current_leader() == Some(actor) {
                        err = err.hint(format!(
                            "you already lead it: extend the lease with `git swarm lead renew --plan {plan}`"
                        ));
                    } else if !r.lease_live(now) {
                        err = err.hint(format!(
                            "the lease has expired: a succession member ({}) can `git swarm lead takeover --plan {plan} --reason …`",
                            r.succession.join(", ")
                        ));
                    } else {
                        err = err.hint("ask the leader to hand over, or wait for a release");
                    }
                    return Err(err.with_detail(record_json(r, state.tip.base)));
                }
            };
            rec.epoch += 1;
            rec.leader = Some(actor.to_string());
            rec.released = false;
            rec.succession = succession.clone();
            rec.lanes = lanes.clone();
            rec.lease_until = Some(until(now, lease_for(ctx, lease.as_deref())?)?);
            rec.updated_at = stamp;
            let event = Event::new(
                op.event_kind(),
                actor,
                format!("lead {plan}: {actor} claimed epoch {}", rec.epoch),
            )
            .epoch(rec.epoch);
            let text = format!(
                "you lead plan {plan} at epoch {} (lease until {}; succession {})\n",
                rec.epoch,
                rec.lease_until.as_deref().unwrap_or("-"),
                if rec.succession.is_empty() {
                    "none".to_string()
                } else {
                    rec.succession.join(", ")
                }
            );
            Ok(Step::Write {
                record: Box::new(rec),
                event,
                text,
            })
        }
        Op::Renew { lease, lanes } => {
            let mut rec = require_leader(store, state, actor)?.clone();
            rec.lease_until = Some(until(now, lease_for(ctx, lease.as_deref())?)?);
            if let Some(l) = lanes {
                rec.lanes = l.clone();
            }
            rec.updated_at = stamp;
            let event = Event::new(
                op.event_kind(),
                actor,
                format!(
                    "lead {plan}: {actor} renewed until {}",
                    rec.lease_until.as_deref().unwrap_or("-")
                ),
            )
            .epoch(rec.epoch);
            let text = format!(
                "you lead plan {plan} at epoch {}; lease until {}\n",
                rec.epoch,
                rec.lease_until.as_deref().unwrap_or("-")
            );
            Ok(Step::Write {
                record: Box::new(rec),
                event,
                text,
            })
        }
        Op::Succession { succession } => {
            let mut rec = require_leader(store, state, actor)?.clone();
            if &rec.succession == succession {
                // Nothing to change; also how a re-run after an interrupted
                // publish completes (the local ref catches up).
                return Ok(Step::Done(format!(
                    "the succession of plan {plan} is already {} (epoch {}): nothing to change\n",
                    succession.join(", "),
                    rec.epoch
                )));
            }
            let before = if rec.succession.is_empty() {
                "-".to_string()
            } else {
                rec.succession.join(",")
            };
            rec.succession = succession.clone();
            rec.updated_at = stamp;
            let event = Event::new(
                op.event_kind(),
                actor,
                format!(
                    "lead {plan}: {actor} set the succession to {}",
                    succession.join(",")
                ),
            )
            .epoch(rec.epoch)
            .trailer("Swarm-Previous-Succession", before);
            let text = format!(
                "succession of plan {plan} is now {} (epoch {} unchanged)\n",
                succession.join(", "),
                rec.epoch
            );
            Ok(Step::Write {
                record: Box::new(rec),
                event,
                text,
            })
        }
        Op::Handover { to, lease, force } => {
            if let Some(r) = &state.record {
                if r.current_leader() == Some(to.as_str())
                    && state.unseen_own("lead-handover", actor)
                {
                    return Ok(Step::Done(format!(
                        "{to} leads plan {plan} at epoch {} (your earlier handover was published; local ref updated)\n",
                        r.epoch
                    )));
                }
            }
            let mut rec = require_leader(store, state, actor)?.clone();
            if to == actor {
                return Err(Error::usage(
                    "USAGE",
                    format!("you already lead plan '{plan}': nothing to hand over"),
                ));
            }
            if !rec.succession.iter().any(|s| s == to) {
                if !force {
                    return Err(Error::usage(
                        "SUCCESSOR_UNKNOWN",
                        format!(
                            "'{to}' is not in the succession of plan '{plan}' ({}); a mistyped address would take the leadership away",
                            rec.succession.join(", ")
                        ),
                    )
                    .hint(format!("hand over to someone listed, or add '{to}' on purpose with --force")));
                }
                rec.succession.push(to.clone());
            }
            rec.epoch += 1;
            rec.leader = Some(to.clone());
            rec.lease_until = Some(until(now, lease_for(ctx, lease.as_deref())?)?);
            rec.updated_at = stamp;
            let event = Event::new(
                op.event_kind(),
                actor,
                format!(
                    "lead {plan}: {actor} handed over to {to} at epoch {}",
                    rec.epoch
                ),
            )
            .epoch(rec.epoch)
            .trailer("Swarm-Leader", to.clone());
            let text = format!(
                "{to} now leads plan {plan} at epoch {}; you are fenced from now on\n",
                rec.epoch
            );
            Ok(Step::Write {
                record: Box::new(rec),
                event,
                text,
            })
        }
        Op::Takeover {
            reason,
            force,
            lease,
        } => {
            let Some(current) = &state.record else {
                return Err(Error::usage(
                    "NOT_FOUND",
                    format!(
                        "plan '{plan}' has no leader record: there is nobody to take over from"
                    ),
                )
                .hint(format!(
                    "claim it with `git swarm lead claim --plan {plan} --succession <A,B>`"
                )));
            };
            if current.current_leader() == Some(actor) && state.unseen_own("lead-takeover", actor) {
                return Ok(Step::Done(format!(
                    "you lead plan {plan} at epoch {} (your earlier takeover was published; local ref updated)\n",
                    current.epoch
                )));
            }
            if !current.succession.iter().any(|s| s == actor) {
                return Err(Error::race(
                    "NOT_IN_SUCCESSION",
                    format!(
                        "you are not in the succession of plan '{plan}' ({}): {}",
                        if current.succession.is_empty() {
                            "empty".to_string()
                        } else {
                            current.succession.join(", ")
                        },
                        current.who()
                    ),
                )
                .hint(
                    "the leader can add you with a new claim after a release, or hand over to you",
                ));
            }
            let live = current.lease_live(now);
            if live && !force && current.current_leader() == Some(actor) {
                return Err(Error::race(
                    "LEASE_LIVE",
                    format!(
                        "you already lead plan '{plan}' at epoch {}, with a lease until {}",
                        current.epoch,
                        current.lease_until.as_deref().unwrap_or("-")
                    ),
                )
                .hint(format!("extend it with `git swarm lead renew --plan {plan}`; a takeover is for a leader who is gone"))
                .with_detail(record_json(current, state.tip.base)));
            }
            if live && !force {
                return Err(Error::race(
                    "LEASE_LIVE",
                    format!(
                        "plan '{plan}': {} and the lease runs until {}",
                        current.who(),
                        current.lease_until.as_deref().unwrap_or("-")
                    ),
                )
                .hint("wait for the lease to expire, or, if the leader is really gone, pass --force with a --reason")
                .with_detail(record_json(current, state.tip.base)));
            }
            let previous = current.current_leader().unwrap_or("nobody").to_string();
            let mut rec = current.clone();
            rec.epoch += 1;
            rec.leader = Some(actor.to_string());
            rec.released = false;
            rec.lease_until = Some(until(now, lease_for(ctx, lease.as_deref())?)?);
            rec.updated_at = stamp;
            let reason = one_line(reason);
            let how = if live { "forced" } else { "lease expired" };
            let mut event = Event::new(
                op.event_kind(),
                actor,
                format!(
                    "lead {plan}: {actor} took over from {previous} at epoch {} ({how}: {reason})",
                    rec.epoch
                ),
            )
            .epoch(rec.epoch)
            .trailer("Swarm-Previous-Leader", previous.clone())
            .trailer("Swarm-Reason", reason.clone());
            if live {
                event = event.trailer("Swarm-Forced", "true");
            }
            let text = format!(
                "you lead plan {plan} at epoch {} (took over from {previous}, {how}); lease until {}\n",
                rec.epoch,
                rec.lease_until.as_deref().unwrap_or("-")
            );
            Ok(Step::Write {
                record: Box::new(rec),
                event,
                text,
            })
        }
        Op::Release => {
            if let Some(r) = &state.record {
                if r.released && state.unseen_own("lead-released", actor) {
                    return Ok(Step::Done(format!(
                        "plan {plan} is released at epoch {} (your earlier release was published; local ref updated)\n",
                        r.epoch
                    )));
                }
            }
            let mut rec = require_leader(store, state, actor)?.clone();
            rec.leader = None;
            rec.released = true;
            rec.lease_until = None;
            rec.updated_at = stamp;
            let event = Event::new(
                op.event_kind(),
                actor,
                format!("lead {plan}: {actor} released epoch {}", rec.epoch),
            )
            .epoch(rec.epoch);
            let text = format!(
                "released plan {plan} at epoch {}; nobody leads it now\n",
                rec.epoch
            );
            Ok(Step::Write {
                record: Box::new(rec),
                event,
                text,
            })
        }
        Op::Push { refspecs } => {
            let mut rec = require_leader(store, state, actor)?.clone();
            rec.updated_at = stamp;
            let mut event = Event::new(
                op.event_kind(),
                actor,
                format!(
                    "lead {plan}: {actor} published {} at epoch {}",
                    refspecs.join(" "),
                    rec.epoch
                ),
            )
            .epoch(rec.epoch);
            for spec in refspecs {
                let src = spec.trim_start_matches('+');
                let src = src.split_once(':').map_or(src, |(s, _)| s);
                let resolved = if src.is_empty() {
                    "(delete)".to_string()
                } else {
                    store
                        .git
                        .rev_parse(src)?
                        .unwrap_or_else(|| "(unresolved)".into())
                };
                event = event.trailer("Swarm-Push", format!("{spec} {resolved}"));
            }
            let text = format!(
                "published {} as leader of plan {plan} at epoch {}\n",
                refspecs.join(" "),
                rec.epoch
            );
            Ok(Step::Write {
                record: Box::new(rec),
                event,
                text,
            })
        }
    }
}

fn record_json(rec: &LeadRecord, commit: Option<ObjectId>) -> serde_json::Value {
    let mut json = serde_json::to_value(rec).expect("a lead record serialises");
    json["commit"] = serde_json::json!(commit.map(|c| c.to_string()));
    json
}

fn fetch(ctx: &Ctx, refs: &[&str]) -> Result<()> {
    if let Some(remote) = ctx.remote() {
        sync::fetch_refs(&ctx.store, remote, refs)?;
    }
    Ok(())
}

/// Run a leader command against the arbiter (the remote, else the local CAS).
pub fn run(ctx: &Ctx, plan: &str, op: Op) -> Result<Output> {
    names::validate_name("plan", plan)?;
    let actor = ctx.actor()?;
    validate(ctx, plan, &op)?;
    let store = &ctx.store;
    let refname = lead_ref(plan);
    let remote = ctx.remote();
    let now = store.clock.now();
    let mut last_rejection = Vec::new();
    for _ in 0..MAX_ATTEMPTS {
        if let Op::Claim { .. } = op {
            fetch(ctx, &[&refname, &crate::plan::plan_ref(plan)])?;
            require_plan(ctx, plan)?;
        } else {
            fetch(ctx, &[&refname])?;
        }
        let tip = sync::tip(store, remote, &refname)?;
        let state = State::load(store, plan, tip)?;
        let (record, event, text) = match decide(ctx, &state, &actor, &op, now)? {
            Step::Done(text) => return done(ctx, &refname, &state, &actor, text),
            Step::Write {
                record,
                event,
                text,
            } => (record, event, text),
        };
        let mut files = BTreeMap::new();
        files.insert(RECORD_FILE.to_string(), record::to_yaml(&record)?);
        let tree = store.write_tree(&files)?;
        let parents: Vec<ObjectId> = tip.base.into_iter().collect();
        let commit = store.commit(tree, &parents, &event)?;
        failpoint::point("lead:objects");
        let extra: Vec<String> = match &op {
            Op::Push { refspecs } => refspecs.clone(),
            _ => Vec::new(),
        };
        match sync::publish_record(
            store,
            remote,
            &refname,
            &tip,
            commit,
            &extra,
            &actor,
            &event.summary,
            "lead",
        )? {
            Published::Ok => {
                let mut json = record_json(&record, Some(commit));
                json["event"] = serde_json::json!(event.kind);
                json["published"] = serde_json::json!(remote.is_some());
                let mut out = Output::new(json, text);
                if let Some(w) = succession_warning(&op, &actor, plan) {
                    out = out.warn(w);
                }
                return Ok(out);
            }
            Published::Rejected(lines) => {
                // Who moved it? Re-read the arbiter.
                fetch(ctx, &[&refname])?;
                let after = sync::tip(store, remote, &refname)?;
                let arbiter_value = if remote.is_some() {
                    after.remote
                } else {
                    after.local
                };
                let before = if remote.is_some() {
                    tip.remote
                } else {
                    tip.local
                };
                if arbiter_value == before {
                    // The record did not move: another ref of the push was refused.
                    return Err(push_rejected(plan, &lines));
                }
                if op.contest() {
                    // Our own earlier run may be the winner: a killed process
                    // leaves its `git push` running, and it can land after
                    // this run fetched. Then the command is complete.
                    let state = State::load(store, plan, after)?;
                    if let Ok(Step::Done(text)) = decide(ctx, &state, &actor, &op, now) {
                        return done(ctx, &refname, &state, &actor, text);
                    }
                    return Err(race_lost(store, plan, &op, after.base, remote));
                }
                last_rejection = lines;
            }
        }
    }
    Err(push_rejected(plan, &last_rejection))
}

/// A claim or succession edit whose list leaves out the leader: legal (the
/// leader need not succeed themselves), but a takeover back by them would be
/// refused, which is rarely what was meant.
fn succession_warning(op: &Op, actor: &str, plan: &str) -> Option<String> {
    let list = match op {
        Op::Claim { succession, .. } | Op::Succession { succession } => succession,
        _ => return None,
    };
    (!list.iter().any(|s| s == actor)).then(|| {
        format!(
            "the succession of plan '{plan}' ({}) does not name you ({actor}): once your lease lapses you cannot take the plan back with `lead takeover`",
            list.join(", ")
        )
    })
}

/// A previous run already published what this one would: catch the local
/// ref up and report it.
fn done(ctx: &Ctx, refname: &str, state: &State, actor: &str, text: String) -> Result<Output> {
    if let Some(base) = state.tip.base {
        sync::adopt(&ctx.store, refname, base, actor, "lead: catch up")?;
    }
    let rec = state.record.as_ref().expect("done implies a record");
    let mut json = record_json(rec, state.tip.base);
    json["already"] = serde_json::json!(true);
    json["published"] = serde_json::json!(ctx.remote().is_some());
    Ok(Output::new(json, text))
}

fn push_rejected(plan: &str, lines: &[String]) -> Error {
    Error::race(
        "PUSH_REJECTED",
        format!(
            "the remote refused the push for plan '{plan}'; nothing moved{}",
            if lines.is_empty() {
                String::new()
            } else {
                format!(":\n  {}", lines.join("\n  "))
            }
        ),
    )
    .hint(
        "fetch, make your refspecs fast-forward (or re-read the record), and run the command again",
    )
}

fn race_lost(
    store: &Store,
    plan: &str,
    op: &Op,
    winner_commit: Option<ObjectId>,
    remote: Option<&str>,
) -> Error {
    let winner = winner_commit.and_then(|c| read_at(store, plan, c).ok());
    let who = winner
        .as_ref()
        .map(|w| w.who())
        .unwrap_or_else(|| "the record changed".into());
    let mut err = Error::race(
        "LEAD_RACE_LOST",
        format!(
            "lost the race to {} plan '{plan}': {who}{}",
            op.name(),
            if remote.is_some() {
                " (the remote accepted their update first)"
            } else {
                ""
            }
        ),
    )
    .hint(format!(
        "nothing of yours was recorded; see `git swarm lead status --plan {plan}`"
    ));
    if let Some(w) = &winner {
        err = err.with_detail(record_json(w, winner_commit));
    }
    err
}

fn require_plan(ctx: &Ctx, plan: &str) -> Result<()> {
    // Local, published or archived by gc: any of them is the plan.
    let tip = sync::tip(&ctx.store, ctx.remote(), &crate::plan::plan_ref(plan))?;
    if tip.base.is_none() {
        return Err(
            Error::usage("NOT_FOUND", format!("plan '{plan}' does not exist"))
                .hint("create it with `git swarm plan new <plan>` (claim first, then start lanes)"),
        );
    }
    Ok(())
}

fn validate(ctx: &Ctx, plan: &str, op: &Op) -> Result<()> {
    match op {
        Op::Claim {
            succession,
            lanes,
            lease,
        } => {
            for a in succession {
                names::validate_address(a)?;
            }
            for l in lanes {
                names::validate_name("feature", l)?;
            }
            lease_for(ctx, lease.as_deref())?;
        }
        Op::Renew { lease, lanes } => {
            for l in lanes.iter().flatten() {
                names::validate_name("feature", l)?;
            }
            lease_for(ctx, lease.as_deref())?;
        }
        Op::Handover { to, lease, .. } => {
            names::validate_address(to)?;
            lease_for(ctx, lease.as_deref())?;
        }
        Op::Takeover { reason, lease, .. } => {
            if reason.trim().is_empty() {
                return Err(Error::usage("USAGE", "a takeover needs a --reason"));
            }
            crate::secret::check_fields("the takeover", &[("--reason", reason)])?;
            lease_for(ctx, lease.as_deref())?;
        }
        Op::Release => {}
        Op::Succession { succession } => {
            if succession.is_empty() {
                return Err(
                    Error::usage("USAGE", "a succession names at least one address")
                        .hint("e.g. `git swarm lead succession --plan <P> alice,bob`"),
                );
            }
            let mut seen = std::collections::BTreeSet::new();
            for a in succession {
                names::validate_address(a)?;
                if !seen.insert(a) {
                    return Err(Error::usage(
                        "USAGE",
                        format!("'{a}' appears twice in the succession"),
                    )
                    .hint("name each address once, in the order they should take over"));
                }
            }
        }
        Op::Push { refspecs } => {
            if ctx.remote().is_none() {
                return Err(Error::usage(
                    "REMOTE_MISSING",
                    "lead push publishes to the shared remote and none is configured (or --offline was given)",
                )
                .hint("add one (`git remote add origin <url>`) or set swarm.remote"));
            }
            let named: Vec<(String, &str)> = refspecs
                .iter()
                .enumerate()
                .map(|(i, spec)| (format!("refspec[{i}]"), spec.as_str()))
                .collect();
            let named: Vec<(&str, &str)> = named.iter().map(|(f, v)| (f.as_str(), *v)).collect();
            crate::secret::check_fields("the push", &named)?;
            let own = lead_ref(plan);
            for spec in refspecs {
                let dst = spec.rsplit_once(':').map_or(spec.as_str(), |(_, d)| d);
                if spec.trim().is_empty() || dst.starts_with("refs/swarm/") || dst == own {
                    return Err(Error::usage(
                        "USAGE",
                        format!("'{spec}' is not a refspec lead push can publish"),
                    )
                    .hint("name code refs such as main, HEAD:main or refs/tags/v1; swarm records travel with `git swarm sync`"));
                }
                let src = spec.trim_start_matches('+');
                let src = src.split_once(':').map_or(src, |(s, _)| s);
                if !src.is_empty() && ctx.store.git.rev_parse(src)?.is_none() {
                    return Err(Error::usage(
                        "USAGE",
                        format!("'{src}' (in refspec '{spec}') names no commit here"),
                    )
                    .hint("push a branch, tag or commit that exists locally, e.g. HEAD:main"));
                }
            }
        }
    }
    Ok(())
}

/// `lead status`: the record (the remote's, when there is one) with its
/// fields at the top level of the JSON.
pub fn status(ctx: &Ctx, plan: &str) -> Result<Output> {
    names::validate_name("plan", plan)?;
    let refname = lead_ref(plan);
    fetch(ctx, &[&refname])?;
    // Read-only: the mirror as last fetched counts, `--offline` or not.
    let remote = ctx.settings.remote.as_deref();
    let tip = sync::tip(&ctx.store, remote, &refname)?;
    let now = ctx.store.clock.now();
    let Some(base) = tip.base else {
        fetch(ctx, &[&crate::plan::plan_ref(plan)])?;
        require_plan(ctx, plan)?;
        let mut json = record_json(&new_record(plan), None);
        json["exists"] = serde_json::json!(false);
        json["lease_live"] = serde_json::json!(false);
        let mut text = format!("plan {plan}: nobody has claimed it (no {refname})\n");
        json["mirror"] = mirror_note(ctx, remote, &refname, &mut text)?;
        return Ok(Output::new(json, text));
    };
    let rec = read_at(&ctx.store, plan, base)?;
    let mut json = record_json(&rec, Some(base));
    json["exists"] = serde_json::json!(true);
    json["lease_live"] = serde_json::json!(rec.lease_live(now));
    json["published"] = serde_json::json!(tip.online && tip.remote == Some(base));
    let mut text = format!("plan:       {plan}\n");
    text.push_str(&format!(
        "leader:     {}\nepoch:      {}\n",
        rec.current_leader().unwrap_or("(none: released)"),
        rec.epoch
    ));
    text.push_str(&format!(
        "lease:      {}\n",
        match (&rec.lease_until, rec.lease_live(now)) {
            (Some(u), true) => format!("until {u}"),
            (Some(u), false) => format!("expired at {u}"),
            (None, _) => "-".into(),
        }
    ));
    text.push_str(&format!(
        "succession: {}\nlanes:      {}\nupdated:    {}\ncommit:     {}{}\n",
        if rec.succession.is_empty() {
            "-".into()
        } else {
            rec.succession.join(", ")
        },
        if rec.lanes.is_empty() {
            "-".into()
        } else {
            rec.lanes.join(", ")
        },
        rec.updated_at,
        short(base),
        if tip.online && tip.remote != Some(base) {
            " (not published yet: `git swarm sync`)"
        } else {
            ""
        }
    ));
    json["mirror"] = mirror_note(ctx, remote, &refname, &mut text)?;
    Ok(Output::new(json, text))
}

/// `lead log`: the leader record's journal, newest first — who did what at
/// which epoch, and who led after each entry. Read from the newer of the
/// local and the published record (fetched first unless `--offline`), or
/// from the gc archive.
pub fn log(ctx: &Ctx, plan: &str) -> Result<Output> {
    names::validate_name("plan", plan)?;
    let refname = lead_ref(plan);
    fetch(ctx, &[&refname])?;
    let tip = sync::tip(&ctx.store, ctx.remote(), &refname)?;
    let Some(base) = tip.base else {
        fetch(ctx, &[&crate::plan::plan_ref(plan)])?;
        require_plan(ctx, plan)?;
        return Ok(Output::new(
            serde_json::json!({ "plan": plan, "exists": false, "entries": [] }),
            format!("plan {plan}: nobody has claimed it (no {refname})\n"),
        ));
    };
    let entries = ctx.store.journal(base, None)?;
    let mut rows = Vec::new();
    let mut text = String::new();
    for e in &entries {
        let id = ObjectId::from_hex(e.commit.as_bytes())
            .map_err(|err| Error::gix("bad commit id in the lead journal", err))?;
        let rec = read_at(&ctx.store, plan, id)?;
        let epoch = e.epoch.unwrap_or(rec.epoch);
        let leader = rec.current_leader().map(str::to_string);
        text.push_str(&format!(
            "{} {} epoch {:<3} {:<16} {:<12} leader {:<12} {}\n",
            &e.commit[..12],
            e.time,
            epoch,
            e.event,
            e.actor,
            leader.as_deref().unwrap_or("-"),
            e.summary
        ));
        let mut row = serde_json::to_value(e).expect("a journal entry serialises");
        row["epoch"] = serde_json::json!(epoch);
        row["leader"] = serde_json::json!(leader);
        row["succession"] = serde_json::json!(rec.succession);
        rows.push(row);
    }
    Ok(Output::new(
        serde_json::json!({
            "plan": plan,
            "exists": true,
            "commit": base.to_string(),
            "published": tip.online && tip.remote == Some(base),
            "entries": rows,
        }),
        text,
    ))
}

/// The read-only views' footer: how old the mirror is, and `sync` when it
/// has what the local ref lacks.
fn mirror_note(
    ctx: &Ctx,
    remote: Option<&str>,
    refname: &str,
    text: &mut String,
) -> Result<serde_json::Value> {
    let Some(r) = remote else {
        return Ok(serde_json::Value::Null);
    };
    let view = sync::MirrorView::read(&ctx.store, r, &[refname])?;
    text.push_str(&view.text(ctx.store.clock.now()));
    Ok(serde_json::to_value(&view).unwrap_or_default())
}

/// `lead check`: exit 0 iff the actor leads the plan at the arbiter.
pub fn check(ctx: &Ctx, plan: &str) -> Result<Output> {
    names::validate_name("plan", plan)?;
    let actor = ctx.actor()?;
    let refname = lead_ref(plan);
    fetch(ctx, &[&refname])?;
    let tip = sync::tip(&ctx.store, ctx.remote(), &refname)?;
    // At the remote when there is one: an unpublished local record does not count.
    let at = if tip.online { tip.remote } else { tip.local };
    let rec = at.map(|c| read_at(&ctx.store, plan, c)).transpose()?;
    let leader = rec
        .as_ref()
        .and_then(|r| r.current_leader())
        .map(str::to_string);
    let epoch = rec.as_ref().map_or(0, |r| r.epoch);
    let is_leader = leader.as_deref() == Some(actor.as_str());
    let json = serde_json::json!({
        "plan": plan,
        "actor": actor,
        "leader": leader,
        "epoch": epoch,
        "is_leader": is_leader,
        "at": if tip.online { "remote" } else { "local" },
    });
    let text = match (&leader, is_leader) {
        (_, true) => format!("you ({actor}) lead plan {plan} at epoch {epoch}\n"),
        (Some(l), false) => format!("{l} leads plan {plan} at epoch {epoch}, not you ({actor})\n"),
        (None, false) if rec.is_some() => {
            format!("nobody leads plan {plan} (released at epoch {epoch})\n")
        }
        (None, false) => format!("nobody has claimed plan {plan}\n"),
    };
    Ok(Output::new(json, text).with_exit(if is_leader { 0 } else { 1 }))
}

impl crate::store::kind::Record for LeadRecord {
    const NAMESPACE: &'static str = "lead";
    const KIND: &'static str = "lead";
    const DIVERGED: crate::store::kind::Diverged =
        crate::store::kind::Diverged::PublishedWinsFenced;
    type Key = String;

    fn to_files(&self) -> Result<crate::store::kind::Files> {
        let mut files = crate::store::kind::Files::new();
        files.insert(RECORD_FILE.to_string(), record::to_yaml(self)?);
        Ok(files)
    }
    fn from_files(files: &crate::store::kind::Files, plan: &String, _what: &str) -> Result<Self> {
        let bytes = files.get(RECORD_FILE).ok_or_else(|| {
            Error::usage(
                "YAML_INVALID",
                format!("{} has no {RECORD_FILE}", lead_ref(plan)),
            )
        })?;
        parse_record(bytes, plan)
    }
    /// A released leader record of a closed plan.
    fn is_finished(&self, plan: &String, finished_elsewhere: &dyn Fn(&str, &str) -> bool) -> bool {
        self.released && finished_elsewhere("plans", plan)
    }
}
