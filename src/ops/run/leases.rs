//! The runner's side of the pool: leasing a free account for a lane (never
//! the coordinator's own, another host preferred), renewing each live
//! agent's lease and its task's claim together at half the lease, and
//! freeing an account (at once, or once a successor accepted its packet).

use std::time::{Duration, Instant};

use super::{Agent, Runner};
use crate::clock::rfc3339;
use crate::error::{Code, Result};
use crate::integrations::hosts::Host;
use crate::records::pool::{self, Account, AgentRun, Lease, Op};
use crate::store::mirror;

impl Runner<'_> {
    pub(super) fn accounts(&self) -> Result<Vec<Account>> {
        mirror::fetch_refs_from(&self.ctx.store, self.ctx.remote(), &[pool::PREFIX])?;
        Ok(pool::known(&self.ctx.store, self.ctx.remote())?.0)
    }

    /// Lease a free account for `lane`, preferring another host than
    /// `avoid` and never the coordinator's own; None when none is free.
    pub(super) fn lease(
        &mut self,
        task: &str,
        lane: &str,
        avoid: Option<&str>,
    ) -> Result<Option<(Account, u64)>> {
        let now = self.ctx.store.clock.now();
        let mut free: Vec<Account> = self
            .accounts()?
            .into_iter()
            .filter(|a| a.is_free(now))
            .filter(|a| Some(&a.account) != self.opts.account.as_ref())
            .filter(|a| Host::parse(a.host.as_str()).is_some())
            .collect();
        free.sort_by_key(|a| (avoid.is_some_and(|h| a.host == *h), a.account.clone()));
        for a in free {
            let lease = Lease {
                holder: self.holder.clone(),
                machine: self.machine.clone(),
                role: "lane".into(),
                plan: Some(self.opts.plan.clone()),
                task: Some(task.into()),
                lane: Some(lane.into()),
                ..Lease::default()
            };
            let op = Op::Lease {
                lease,
                ttl: self.ttl,
            };
            match pool::publish(
                &self.ctx.store,
                self.ctx.remote(),
                &a.account,
                &op,
                &self.actor,
            ) {
                Ok((Some(next), _)) => {
                    let epoch = next.epoch;
                    return Ok(Some((next, epoch)));
                }
                Ok((None, _)) => continue,
                // Another runner took it first: the next one.
                Err(e) if matches!(e.code, Code::LeaseHeld | Code::NotFound) => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }

    pub(super) fn free(&mut self, account: &str, epoch: u64) {
        let op = Op::Free {
            holder: self.holder.clone(),
            epoch,
        };
        let _ = pool::publish(
            &self.ctx.store,
            self.ctx.remote(),
            account,
            &op,
            &self.actor,
        );
    }

    pub(super) fn agent_run(a: &Agent) -> AgentRun {
        AgentRun {
            session: a.summary.session.clone(),
            pid: a.child.id(),
            started: a.started.clone(),
            last_event: a
                .summary
                .last_event
                .clone()
                .unwrap_or_else(|| "started".into()),
            last_event_at: String::new(),
            input_tokens: a.summary.usage.input_tokens,
            cache_read_tokens: a.summary.usage.cache_read_tokens,
            cache_write_tokens: a.summary.usage.cache_write_tokens,
            output_tokens: a.summary.usage.output_tokens,
            cost_usd: a.summary.usage.cost_usd,
        }
    }

    pub(super) fn renew_one(&mut self, id: usize) {
        let Some(a) = self.agents.get_mut(&id) else {
            return;
        };
        a.renewed = Instant::now();
        let mut run = Self::agent_run(a);
        run.last_event_at = rfc3339(self.ctx.store.clock.now());
        let op = Op::Renew {
            holder: self.holder.clone(),
            epoch: a.epoch,
            ttl: self.ttl,
            agent: Some(run),
            lane: Some(a.lane.clone()),
        };
        let name = a.account.account.clone();
        let waiting = a.packet.is_some();
        let (task, address) = (a.task.clone(), a.account.address.clone());
        let _ = pool::publish(&self.ctx.store, self.ctx.remote(), &name, &op, &self.actor);
        if !waiting {
            // The task's claim lives as long as the account's lease: once
            // this runner is gone, both lapse together and any runner may
            // recover the lane. (A successor about to accept a packet gets
            // the claim with it.)
            let (plan, lease) = (self.opts.plan.clone(), format!("{}s", self.ttl.as_secs()));
            let _ = self.swarm(
                &self.root.clone(),
                Some(&address),
                &["task", "renew", &task, "--plan", &plan, "--lease", &lease],
            );
        }
    }

    /// Renew each live agent's lease at half of it (and once its session
    /// id is known), with its progress.
    pub(super) fn renew_due(&mut self) {
        let half = Duration::from_secs_f64(self.ttl.as_secs_f64() / 2.0);
        let due: Vec<usize> = self
            .agents
            .iter()
            .filter(|(_, a)| !a.eof && a.renewed.elapsed() >= half)
            .map(|(id, _)| *id)
            .collect();
        for id in due {
            self.renew_one(id);
        }
    }

    /// A successor that accepted: its predecessor's account is freed.
    pub(super) fn free_after_accept(&mut self) {
        let pending: Vec<(usize, String, String, u64, String)> = self
            .agents
            .iter()
            .filter_map(|(id, a)| {
                a.packet
                    .as_ref()
                    .map(|(p, acc, ep)| (*id, p.clone(), acc.clone(), *ep, a.lane.clone()))
            })
            .collect();
        for (id, packet, account, epoch, lane) in pending {
            let open = self
                .swarm(
                    &self.root.clone(),
                    None,
                    &["packets", "--plan", &lane, "--open"],
                )
                .ok()
                .and_then(|v| v["packets"].as_array().cloned())
                .unwrap_or_default();
            if open.iter().any(|p| p["id"] == packet.as_str()) {
                continue;
            }
            self.free(&account, epoch);
            if let Some(a) = self.agents.get_mut(&id) {
                a.packet = None;
            }
            self.step(
                "accepted",
                Some(&lane),
                Some(&account),
                format!("packet {packet} accepted: account {account} freed"),
            );
        }
    }
}
