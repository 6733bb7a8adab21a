//! `run --lead`: the runner keeps the plan's leadership while it runs, and
//! a runner on a member of the succession takes over when the leader's
//! lease lapses (earlier positions first: the entry at position i waits i
//! half-leases more before it takes over, so the first reachable entry
//! wins; of two at once, the remote takes one). A leader that sees a
//! higher epoch (its renew is fenced) steps down and only runs lanes.

use std::time::Instant;

use serde_json::Value;

use super::Runner;

/// The runner's part in the plan's leadership.
#[derive(Debug, Default)]
pub(super) struct Leading {
    /// This runner leads, at this epoch.
    pub epoch: Option<u64>,
    /// When it last renewed.
    pub renewed: Option<Instant>,
    /// It stepped down (a higher epoch): it does not claim again.
    pub stepped_down: bool,
}

impl Runner<'_> {
    fn lease_arg(&self) -> String {
        format!("{}s", self.ttl.as_secs())
    }

    /// At start: claim the plan when nobody leads it (else the tick
    /// follows the leader's lease).
    pub(super) fn lead_start(&mut self) {
        let plan = self.opts.plan.clone();
        let lease = self.lease_arg();
        let claimed = self.swarm(
            &self.root.clone(),
            None,
            &["lead", "claim", "--plan", &plan, "--lease", &lease],
        );
        let text = match claimed {
            Ok(v) => {
                self.leading.epoch = v["epoch"].as_u64().or(Some(0));
                self.leading.renewed = Some(Instant::now());
                format!("{} leads plan {plan}", self.actor)
            }
            Err(e) => {
                // Already this address's (a runner started again while its
                // lease lives): it leads on.
                let s = self
                    .swarm(
                        &self.root.clone(),
                        None,
                        &["lead", "status", "--plan", &plan],
                    )
                    .unwrap_or_default();
                if s["leader"].as_str() == Some(self.actor.as_str())
                    && s["lease_live"].as_bool() == Some(true)
                {
                    self.leading.epoch = s["epoch"].as_u64().or(Some(0));
                    format!("{} leads plan {plan} (epoch {})", self.actor, s["epoch"])
                } else {
                    format!("leadership of {plan} not claimed: {e}")
                }
            }
        };
        self.step("lead", None, self.opts.account.clone().as_deref(), text);
    }

    /// Each tick with `--lead`: renew at half the lease while leading; step
    /// down on a higher epoch; take over as a succession member once the
    /// leader's lease lapsed.
    pub(super) fn lead_tick(&mut self) {
        if !self.opts.lead || self.leading.stepped_down {
            return;
        }
        let plan = self.opts.plan.clone();
        let half = std::time::Duration::from_secs_f64(self.ttl.as_secs_f64() / 2.0);
        if self.leading.epoch.is_some() {
            self.renew_lead(half);
            return;
        }
        let Ok(s) = self.swarm(
            &self.root.clone(),
            None,
            &["lead", "status", "--plan", &plan],
        ) else {
            return;
        };
        if s["lease_live"].as_bool() == Some(true) {
            return;
        }
        let Some(pos) = self.takeover_turn(&s, half) else {
            return;
        };
        self.take_lead(&s, pos);
    }

    /// Leading: the lease renewed once half of it passed, or, refused (a
    /// higher epoch), the runner steps down for good.
    fn renew_lead(&mut self, half: std::time::Duration) {
        if self.leading.renewed.is_some_and(|r| r.elapsed() < half) {
            return;
        }
        let plan = self.opts.plan.clone();
        let lease = self.lease_arg();
        match self.swarm(
            &self.root.clone(),
            None,
            &["lead", "renew", "--plan", &plan, "--lease", &lease],
        ) {
            Ok(_) => self.leading.renewed = Some(Instant::now()),
            Err(e) => {
                self.leading = Leading {
                    stepped_down: true,
                    ..Leading::default()
                };
                self.step(
                    "lead",
                    None,
                    None,
                    format!("{} steps down as leader of {plan}: {e}", self.actor),
                );
            }
        }
    }

    /// This runner's position in the succession of `lead status` `s`, once
    /// its turn came (position i waits i half-leases past the lapse); None
    /// when it is not a member or its turn has not come.
    fn takeover_turn(&self, s: &Value, half: std::time::Duration) -> Option<usize> {
        let succession: Vec<String> = s["succession"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m.as_str().map(String::from))
            .collect();
        let pos = succession.iter().position(|m| *m == self.actor)?;
        // Earlier entries first: position i waits i half-leases past the lapse.
        let lapsed: Option<jiff::Timestamp> =
            s["lease_until"].as_str().and_then(|u| u.parse().ok());
        let now = self.ctx.store.clock.now();
        if let Some(u) = lapsed {
            let wait = jiff::SignedDuration::from_secs_f64(half.as_secs_f64() * pos as f64);
            if now < u + wait {
                return None;
            }
        }
        Some(pos)
    }

    /// `lead takeover` from the leader whose lease lapsed (in `lead status`
    /// `s`), said with the succession position; leading from then on.
    fn take_lead(&mut self, s: &Value, pos: usize) {
        let plan = self.opts.plan.clone();
        let lease = self.lease_arg();
        let leader = s["leader"].as_str().unwrap_or("nobody").to_string();
        let reason = format!(
            "runner {}: the lease of {leader} lapsed at {}; its intent since is missing (not invented)",
            self.holder,
            s["lease_until"].as_str().unwrap_or("-")
        );
        match self.swarm(
            &self.root.clone(),
            None,
            &[
                "lead", "takeover", "--plan", &plan, "--reason", &reason, "--lease", &lease,
            ],
        ) {
            Ok(v) => {
                self.leading.epoch = v["epoch"].as_u64().or(Some(0));
                self.leading.renewed = Some(Instant::now());
                self.step(
                    "takeover",
                    None,
                    self.opts.account.clone().as_deref(),
                    format!(
                        "{} takes over plan {plan} from {leader} (succession position {}): {reason}",
                        self.actor,
                        pos + 1
                    ),
                );
            }
            Err(e) => self.step(
                "skip",
                None,
                None,
                format!("takeover of {plan} not made: {e}"),
            ),
        }
    }
}
