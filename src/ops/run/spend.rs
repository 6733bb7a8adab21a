//! What the runner's agents spend and the plan's budget (issue 37): each
//! session's tokens and cost from its host's stream, recorded with the
//! lane's records ([`crate::integrations::capacity::spend::publish`]); a
//! headless rate-limit report as the agent's capacity reading; and the
//! budget that stops new launches.

use super::{Agent, Runner};
use crate::clock::rfc3339;
use crate::integrations::capacity::spend;

impl Runner<'_> {
    /// The plan's budget (`swarm.budget`, issue 37): why no new agent may
    /// be launched now, or None. Reached, it is said once and escalated
    /// once (class `budget`, one journal entry per budget however many
    /// runs see it); raised above the spend, launches resume.
    pub(super) fn budget_refuses(&mut self) -> Option<String> {
        let plan = self.opts.plan.clone();
        let remote = self.ctx.settings.remote.as_deref();
        let check = match spend::check_budget(&self.ctx.store, remote, &plan) {
            Ok(c) => c,
            Err(e) => {
                // A budget that cannot be read stops launches: it was set.
                let why = format!("{} ({})", e.message, e.code.as_str());
                self.say_budget(&why);
                return Some(why);
            }
        };
        let spend::BudgetCheck::Reached { limit, spent } = check else {
            if self.over_budget.take().is_some() {
                self.step(
                    "budget",
                    None,
                    None,
                    format!("plan {plan}: under its budget again: launches resume"),
                );
            }
            return None;
        };
        let cost = spent
            .cost_usd
            .map(|c| format!(", {c:.2} USD"))
            .unwrap_or_default();
        let why = format!(
            "plan {plan} reached its budget ({limit}; spent {} tokens{cost}): nothing new is launched; raising `swarm.budget` resumes",
            spent.total_tokens
        );
        if self.over_budget.is_none() {
            crate::integrations::agent::capacity::escalate_budget(
                self.ctx,
                &self.actor,
                &plan,
                &limit,
                &spent,
            );
        }
        self.say_budget(&why);
        Some(why)
    }

    fn say_budget(&mut self, why: &str) {
        if self.over_budget.as_deref() != Some(why) {
            self.over_budget = Some(why.to_string());
            self.step("budget", None, None, format!("no launch: {why}"));
        }
    }

    /// A headless rate-limit report, as the agent's capacity reading (its
    /// address on its account: what its hooks read at the next task
    /// boundary). `allowed` alone says nothing; `allowed_warning` is low,
    /// `rejected` critical.
    pub(super) fn note_rate_limit(&self, a: &Agent, status: &str, resets_at: Option<i64>) {
        use crate::integrations::capacity::{self, Figures, State, Who};
        let state = match State::parse(status) {
            Some(s @ (State::Low | State::Critical)) => s,
            _ => return,
        };
        let resets_at = resets_at
            .and_then(|s| jiff::Timestamp::from_second(s).ok())
            .map(rfc3339);
        let f = Figures {
            source: "stream".into(),
            windows: Vec::new(),
            status: Some(state),
            resets_at,
            context_used: None,
        };
        capacity::note(
            &self.ctx.store,
            &Who::of(&a.account.address, Some(&a.account.account)),
            &f,
        );
    }

    /// The session's spend so far, from the host's stream, recorded with
    /// the lane's records (its plan's journal, published with the next
    /// push) and in this clone; a report that adds nothing writes nothing.
    pub(super) fn record_spend(&self, a: &Agent) {
        let u = &a.summary.usage;
        let tokens = spend::Tokens {
            input: u.input_tokens,
            cache_read: u.cache_read_tokens,
            cache_write: u.cache_write_tokens,
            output: u.output_tokens,
        };
        if tokens.total() == 0 && u.cost_usd.is_none() {
            return;
        }
        let session = a
            .summary
            .session
            .clone()
            .unwrap_or_else(|| format!("{}-{}-{}", a.host.as_str(), a.lane, a.started));
        let journal_plan = crate::records::lane::load(&self.ctx.store, &a.lane)
            .ok()
            .flatten()
            .map(|l| l.record.plan)
            .unwrap_or_else(|| self.opts.plan.clone());
        spend::publish(
            &self.ctx.store,
            Some(&journal_plan),
            &spend::SessionSpend {
                session,
                host: a.host.as_str().into(),
                agent: a.account.address.clone(),
                account: Some(a.account.account.clone()),
                lane: Some(a.lane.clone()),
                task: Some(a.task.clone()),
                plan: Some(self.opts.plan.clone()),
                tokens,
                cost_usd: u.cost_usd,
                at: String::new(),
            },
        );
    }
}
