//! Who may lead a plan at which epoch: [`transition`], pure.

use gix::ObjectId;
use jiff::{SignedDuration, Timestamp};

use super::{until, LeadRecord, Op, Verb};
use crate::clock::rfc3339;
use crate::error::{Code, Error, Result};
use crate::store::Event;

/// What the operation read from the repository for one decision, besides
/// the record itself; the rule reads nothing on its own.
#[derive(Debug, Clone, Default)]
pub struct Facts<'a> {
    pub plan: &'a str,
    /// The commit holding the record (named in errors' JSON detail).
    pub commit: Option<ObjectId>,
    /// The event kind and actor of the record's newest version, when the
    /// local ref has not caught up with it (a previous run was interrupted
    /// after its push); None otherwise.
    pub unseen: Option<(&'a str, &'a str)>,
    /// The event kind and actor of the record's newest version, whether
    /// or not the local ref has caught up with it.
    pub newest: Option<(&'a str, &'a str)>,
    /// The last epoch at which the record named the actor as leader, from
    /// [`last_epoch_led`]; needed only when [`Op::needs_history`] says so.
    pub last_led: Option<u64>,
    /// For a push: what each refspec's source names here (a commit id,
    /// `(delete)` or `(unresolved)`), in the order of the refspecs.
    pub sources: &'a [String],
}

impl Facts<'_> {
    /// The published tip is this actor's own `kind` event that the local ref
    /// has not caught up with.
    fn unseen_own(&self, kind: &str, actor: &str) -> bool {
        self.unseen == Some((kind, actor))
    }

    /// Whether the record's newest version is `actor`'s own `kind` change,
    /// its local ref caught up or not: a previous run of the same command
    /// got that far (e.g. killed after its push), so a re-run finds it done.
    fn done_by(&self, kind: &str, actor: &str) -> bool {
        self.unseen_own(kind, actor) || self.newest == Some((kind, actor))
    }
}

/// What a leader command changed, for the text the CLI prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Claimed,
    Renewed,
    Succession,
    HandedOver { to: String },
    TookOver { previous: String, forced: bool },
    Released,
    Pushed { refspecs: Vec<String> },
}

/// The next version of the record.
#[derive(Debug, Clone)]
pub struct Next {
    pub record: LeadRecord,
    pub event: Event,
    pub change: Change,
}

/// The outcome of [`transition`].
#[derive(Debug, Clone)]
pub enum Transition {
    /// Nothing to write: an earlier run already published this (its push
    /// landed, the local ref did not follow), or the succession is already
    /// the one asked for.
    Already,
    Write(Box<Next>),
}

/// Decide a leader command on the record the arbiter holds (None: nobody
/// ever claimed the plan).
pub fn transition(
    record: Option<&LeadRecord>,
    actor: &str,
    op: &Op,
    now: Timestamp,
    lease: SignedDuration,
    facts: &Facts,
) -> Result<Transition> {
    let d = Decision {
        record,
        facts,
        actor,
        now,
        lease,
    };
    match op {
        Op::Claim {
            succession, lanes, ..
        } => d.claim(succession, lanes),
        Op::Renew { lanes, .. } => d.renew(lanes.as_deref()),
        Op::Succession { succession } => d.succession(succession),
        Op::Handover { to, force, .. } => d.handover(to, *force),
        Op::Takeover { reason, force, .. } => d.takeover(reason, *force),
        Op::Release => d.release(),
        Op::Push { refspecs } => d.push(refspecs),
    }
}

struct Decision<'a> {
    record: Option<&'a LeadRecord>,
    facts: &'a Facts<'a>,
    actor: &'a str,
    now: Timestamp,
    lease: SignedDuration,
}

fn write(record: LeadRecord, event: Event, change: Change) -> Result<Transition> {
    Ok(Transition::Write(Box::new(Next {
        record,
        event,
        change,
    })))
}

impl Decision<'_> {
    fn plan(&self) -> &str {
        self.facts.plan
    }

    fn event(&self, verb: Verb, summary: String, epoch: u64) -> Event {
        Event::new(verb.event_kind(), self.actor, summary).epoch(epoch)
    }

    fn claim(&self, succession: &[String], lanes: &[String]) -> Result<Transition> {
        let (plan, actor) = (self.plan(), self.actor);
        let mut rec = match self.record {
            None => LeadRecord::new(plan),
            Some(r) if r.current_leader().is_none() => r.clone(),
            Some(r) => {
                if r.current_leader() == Some(actor)
                    && r.lease_live(self.now)
                    && self.facts.done_by(Verb::Claim.event_kind(), actor)
                {
                    return Ok(Transition::Already);
                }
                return Err(self.held(r));
            }
        };
        rec.epoch += 1;
        rec.leader = Some(actor.to_string());
        rec.released = false;
        rec.succession = succession.to_vec();
        rec.lanes = lanes.to_vec();
        rec.lease_until = Some(until(self.now, self.lease)?);
        rec.updated_at = rfc3339(self.now);
        let summary = format!("lead {plan}: {actor} claimed epoch {}", rec.epoch);
        let event = self.event(Verb::Claim, summary, rec.epoch);
        write(rec, event, Change::Claimed)
    }

    /// `LEAD_HELD`: a claim while `r` names a leader.
    fn held(&self, r: &LeadRecord) -> Error {
        let plan = self.plan();
        let err = Error::new(
            Code::LeadHeld,
            format!(
                "plan '{plan}' is held: {} (lease until {})",
                r.who(),
                r.lease_until.as_deref().unwrap_or("-")
            ),
        );
        let err = if r.current_leader() == Some(self.actor) {
            err.hint(format!(
                "you already lead it: extend the lease with `git swarm lead renew --plan {plan}`"
            ))
        } else if !r.lease_live(self.now) {
            err.hint(format!(
                "the lease has expired: a succession member ({}) can `git swarm lead takeover --plan {plan} --reason …`",
                r.succession.join(", ")
            ))
        } else {
            err.hint("ask the leader to hand over, or wait for a release")
        };
        err.with_detail(r.to_json(self.facts.commit))
    }

    /// Refuse a leader-only command unless the actor leads now:
    /// `LEAD_FENCED` when the record named them at an older epoch (and they
    /// did not release it themselves), `NOT_LEADER` otherwise.
    fn require_leader(&self) -> Result<LeadRecord> {
        let plan = self.plan();
        let Some(rec) = self.record else {
            return Err(Error::new(
                Code::NotLeader,
                format!("nobody has claimed plan '{plan}' yet, so you do not lead it"),
            )
            .hint(format!(
                "claim it with `git swarm lead claim --plan {plan} --succession <A,B>`"
            )));
        };
        if rec.current_leader() == Some(self.actor) {
            return Ok(rec.clone());
        }
        let now = rec.who();
        let detail = rec.to_json(self.facts.commit);
        match self.facts.last_led {
            Some(mine) if rec.epoch > mine => Err(Error::new(
                Code::LeadFenced,
                format!("you led plan '{plan}' at epoch {mine}, which is no longer current: {now}"),
            )
            .hint("stand down: merges, tags and publishes belong to the current leader")
            .hint(format!(
                "see the record with `git swarm lead status --plan {plan}`"
            ))
            .with_detail(detail)),
            _ => Err(Error::new(
                Code::NotLeader,
                format!("you do not lead plan '{plan}': {now}"),
            )
            .hint(match rec.current_leader() {
                Some(_) if rec.succession.iter().any(|s| s == self.actor) => format!(
                    "as a successor you may `git swarm lead takeover --plan {plan} --reason …` once the lease expires"
                ),
                Some(_) => "ask the leader to hand over, or to add you to the succession".to_string(),
                None => format!("claim it with `git swarm lead claim --plan {plan} --succession <A,B>`"),
            })
            .with_detail(detail)),
        }
    }

    fn renew(&self, lanes: Option<&[String]>) -> Result<Transition> {
        let (plan, actor) = (self.plan(), self.actor);
        let mut rec = self.require_leader()?;
        rec.lease_until = Some(until(self.now, self.lease)?);
        if let Some(l) = lanes {
            rec.lanes = l.to_vec();
        }
        rec.updated_at = rfc3339(self.now);
        let summary = format!(
            "lead {plan}: {actor} renewed until {}",
            rec.lease_until.as_deref().unwrap_or("-")
        );
        let event = self.event(Verb::Renew, summary, rec.epoch);
        write(rec, event, Change::Renewed)
    }

    fn succession(&self, succession: &[String]) -> Result<Transition> {
        let (plan, actor) = (self.plan(), self.actor);
        let mut rec = self.require_leader()?;
        if rec.succession == succession {
            // Nothing to change; also how a re-run after an interrupted
            // publish completes (the local ref catches up).
            return Ok(Transition::Already);
        }
        let before = if rec.succession.is_empty() {
            "-".to_string()
        } else {
            rec.succession.join(",")
        };
        rec.succession = succession.to_vec();
        rec.updated_at = rfc3339(self.now);
        let summary = format!(
            "lead {plan}: {actor} set the succession to {}",
            succession.join(",")
        );
        let event = self
            .event(Verb::Succession, summary, rec.epoch)
            .trailer("Swarm-Previous-Succession", before);
        write(rec, event, Change::Succession)
    }

    fn handover(&self, to: &str, force: bool) -> Result<Transition> {
        let (plan, actor) = (self.plan(), self.actor);
        if let Some(r) = self.record {
            // Handed over already: by a previous run whose push landed (its
            // local ref caught up or not), e.g. one killed after its push.
            if r.current_leader() == Some(to)
                && self.facts.done_by(Verb::Handover.event_kind(), actor)
            {
                return Ok(Transition::Already);
            }
        }
        let mut rec = self.require_leader()?;
        if to == actor {
            return Err(Error::new(
                Code::Usage,
                format!("you already lead plan '{plan}': nothing to hand over"),
            ));
        }
        if !rec.succession.iter().any(|s| s == to) {
            if !force {
                return Err(Error::new(
                    Code::SuccessorUnknown,
                    format!(
                        "'{to}' is not in the succession of plan '{plan}' ({}); a mistyped address would take the leadership away",
                        rec.succession.join(", ")
                    ),
                )
                .hint(format!("hand over to someone listed, or add '{to}' on purpose with --force")));
            }
            rec.succession.push(to.to_string());
        }
        rec.epoch += 1;
        rec.leader = Some(to.to_string());
        rec.lease_until = Some(until(self.now, self.lease)?);
        rec.updated_at = rfc3339(self.now);
        let summary = format!(
            "lead {plan}: {actor} handed over to {to} at epoch {}",
            rec.epoch
        );
        let event = self
            .event(Verb::Handover, summary, rec.epoch)
            .trailer("Swarm-Leader", to);
        let to = to.to_string();
        write(rec, event, Change::HandedOver { to })
    }

    fn takeover(&self, reason: &str, force: bool) -> Result<Transition> {
        let (plan, actor) = (self.plan(), self.actor);
        let Some(current) = self.record else {
            return Err(Error::new(
                Code::NotFound,
                format!("plan '{plan}' has no leader record: there is nobody to take over from"),
            )
            .hint(format!(
                "claim it with `git swarm lead claim --plan {plan} --succession <A,B>`"
            )));
        };
        // (Its lease lapsed since, taking over again is a new takeover.)
        if current.current_leader() == Some(actor)
            && current.lease_live(self.now)
            && self.facts.done_by(Verb::Takeover.event_kind(), actor)
        {
            return Ok(Transition::Already);
        }
        let live = self.may_take_over(current, force)?;
        let previous = current.current_leader().unwrap_or("nobody").to_string();
        let mut rec = current.clone();
        rec.epoch += 1;
        rec.leader = Some(actor.to_string());
        rec.released = false;
        rec.lease_until = Some(until(self.now, self.lease)?);
        rec.updated_at = rfc3339(self.now);
        let reason = one_line(reason);
        let how = if live { "forced" } else { "lease expired" };
        let summary = format!(
            "lead {plan}: {actor} took over from {previous} at epoch {} ({how}: {reason})",
            rec.epoch
        );
        let mut event = self
            .event(Verb::Takeover, summary, rec.epoch)
            .trailer("Swarm-Previous-Leader", previous.clone())
            .trailer("Swarm-Reason", reason);
        if live {
            event = event.trailer("Swarm-Forced", "true");
        }
        let forced = live;
        write(rec, event, Change::TookOver { previous, forced })
    }

    /// Refuse a takeover by someone outside the succession, or while the
    /// lease is live without `--force`. Ok(whether the lease is live).
    fn may_take_over(&self, current: &LeadRecord, force: bool) -> Result<bool> {
        let (plan, actor) = (self.plan(), self.actor);
        if !current.succession.iter().any(|s| s == actor) {
            return Err(Error::new(
                Code::NotInSuccession,
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
            .hint(format!(
                "the leader can add you: `git swarm lead succession --plan {plan} {}`, or hand over to you",
                current
                    .succession
                    .iter()
                    .map(String::as_str)
                    .chain([actor])
                    .collect::<Vec<_>>()
                    .join(",")
            )));
        }
        let live = current.lease_live(self.now);
        let until = current.lease_until.as_deref().unwrap_or("-");
        if live && !force && current.current_leader() == Some(actor) {
            return Err(Error::new(
                Code::LeaseLive,
                format!(
                    "you already lead plan '{plan}' at epoch {}, with a lease until {until}",
                    current.epoch,
                ),
            )
            .hint(format!("extend it with `git swarm lead renew --plan {plan}`; a takeover is for a leader who is gone"))
            .with_detail(current.to_json(self.facts.commit)));
        }
        if live && !force {
            return Err(Error::new(
                Code::LeaseLive,
                format!(
                    "plan '{plan}': {} and the lease runs until {until}",
                    current.who(),
                ),
            )
            .hint("wait for the lease to expire, or, if the leader is really gone, pass --force with a --reason")
            .with_detail(current.to_json(self.facts.commit)));
        }
        Ok(live)
    }

    fn release(&self) -> Result<Transition> {
        let (plan, actor) = (self.plan(), self.actor);
        if let Some(r) = self.record {
            if r.released && self.facts.unseen_own(Verb::Release.event_kind(), actor) {
                return Ok(Transition::Already);
            }
        }
        let mut rec = self.require_leader()?;
        rec.leader = None;
        rec.released = true;
        rec.lease_until = None;
        rec.updated_at = rfc3339(self.now);
        let summary = format!("lead {plan}: {actor} released epoch {}", rec.epoch);
        let event = self.event(Verb::Release, summary, rec.epoch);
        write(rec, event, Change::Released)
    }

    fn push(&self, refspecs: &[String]) -> Result<Transition> {
        let (plan, actor) = (self.plan(), self.actor);
        let mut rec = self.require_leader()?;
        rec.updated_at = rfc3339(self.now);
        let summary = format!(
            "lead {plan}: {actor} published {} at epoch {}",
            refspecs.join(" "),
            rec.epoch
        );
        let mut event = self.event(Verb::Push, summary, rec.epoch);
        for (i, spec) in refspecs.iter().enumerate() {
            let resolved = self.facts.sources.get(i).map_or("(unresolved)", |s| s);
            event = event.trailer("Swarm-Push", format!("{spec} {resolved}"));
        }
        let refspecs = refspecs.to_vec();
        write(rec, event, Change::Pushed { refspecs })
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The last epoch at which the record named `actor` as leader, unless that
/// leadership ended with the actor's own release (then None: they are simply
/// not the leader, whatever happened to the epoch since). `history` is the
/// record's own line of versions (first parents), newest first; it is read
/// only as far as needed.
pub fn last_epoch_led(
    history: impl IntoIterator<Item = Result<LeadRecord>>,
    actor: &str,
) -> Result<Option<u64>> {
    // The version after the one being looked at (newer), if any.
    let mut newer: Option<LeadRecord> = None;
    for rec in history {
        let rec = rec?;
        if rec.leader.as_deref() == Some(actor) && !rec.released {
            // Only the leader releases: a release right after a version
            // that names `actor` is theirs.
            if newer.is_some_and(|n| n.released && n.epoch == rec.epoch) {
                return Ok(None);
            }
            return Ok(Some(rec.epoch));
        }
        newer = Some(rec);
    }
    Ok(None)
}

/// `LEAD_RACE_LOST`: a claim or takeover whose publish another contender
/// beat; `winner` is the record that won (and its commit), when readable.
pub fn race_lost(
    plan: &str,
    verb: Verb,
    winner: Option<(&LeadRecord, ObjectId)>,
    online: bool,
) -> Error {
    let who = winner
        .map(|(w, _)| w.who())
        .unwrap_or_else(|| "the record changed".into());
    let err = Error::new(
        Code::LeadRaceLost,
        format!(
            "lost the race to {} plan '{plan}': {who}{}",
            verb.name(),
            if online {
                " (the remote accepted their update first)"
            } else {
                ""
            }
        ),
    )
    .hint(format!(
        "nothing of yours was recorded; see `git swarm lead status --plan {plan}`"
    ));
    match winner {
        Some((w, commit)) => err.with_detail(w.to_json(Some(commit))),
        None => err,
    }
}

/// `PUSH_REJECTED`: the remote refused the push but the record did not move
/// (another ref of the push was refused), or it kept moving.
pub fn push_rejected(plan: &str, lines: &[String]) -> Error {
    Error::new(
        Code::PushRejected,
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
