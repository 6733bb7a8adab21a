//! What the runner does when one of its agents' sessions ends: the
//! account freed, a successor for a packet or a loss, a lane blocked.

use super::*;

impl Runner<'_> {
    /// The task goes `blocked` (so no runner anywhere relaunches it as an
    /// orphan): under its holder's address, the claim being theirs.
    pub(super) fn block_task(&self, a: &Agent, reason: &str) {
        let plan = self.opts.plan.clone();
        let _ = self.swarm(
            &self.root.clone(),
            Some(&a.account.address),
            &[
                "task", "block", &a.task, "--plan", &plan, "--reason", reason,
            ],
        );
    }

    /// A lane the runner stops relaunching: reported `blocked` with its
    /// class under the agent's address, its task blocked, its account freed,
    /// the step said once.
    pub(super) fn block_lane(
        &mut self,
        a: &Agent,
        class: &str,
        report: &str,
        task_reason: &str,
        step: String,
    ) {
        let lane = a.lane.clone();
        let _ = self.swarm(
            &a.worktree.clone(),
            Some(&a.account.address),
            &["report", "--lane", &lane, "blocked", class, report],
        );
        self.block_task(a, task_reason);
        self.blocked.insert(a.task.clone());
        self.free(&a.account.account.clone(), a.epoch);
        self.step("blocked", Some(&lane), Some(&a.account.account), step);
    }

    /// One of its agents' sessions ended: its figures go on the record,
    /// then the task decides what follows: finished, handed off to a
    /// successor, blocked on a person, or lost.
    pub(super) fn ended(
        &mut self,
        a: &mut Agent,
        status: Option<std::process::ExitStatus>,
    ) -> Result<()> {
        self.record_spend(a);
        self.record_last_figures(a);
        let how = how_it_ended(status);
        let task_status = self.task_status(&a.task);
        if task_status == "done" || task_status == "cancelled" || task_status == "open" {
            self.finished(a, &how, &task_status);
            return Ok(());
        }
        // A packet open for the lane: a successor accepts it.
        if let Some(p) = self.packet_open_for(&a.lane) {
            return self.hand_off(a, &p, &how);
        }
        if let Some((class, what)) = a.summary.awaiting_human.clone() {
            // Never answered: the lane is blocked, escalated once.
            let lane = a.lane.clone();
            self.block_lane(
                a,
                &class,
                &format!("the agent waits for a person: {what}"),
                &format!("{class}: the agent waits for a person"),
                format!("lane {lane} is blocked ({class}): {what}; nobody answers it, the other lanes go on"),
            );
            return Ok(());
        }
        self.lost(a, &how)
    }

    /// Publishes the agent's last figures on its account's lease before the
    /// account is freed, and frees a successor's account still held for a
    /// packet not yet seen accepted.
    fn record_last_figures(&mut self, a: &mut Agent) {
        let name = a.account.account.clone();
        let mut run = Self::agent_run(a);
        run.last_event_at = rfc3339(self.ctx.store.clock.now());
        let op = Op::Renew {
            holder: self.holder.clone(),
            epoch: a.epoch,
            ttl: self.ttl,
            agent: Some(run),
            lane: None,
        };
        let _ = pool::publish(&self.ctx.store, self.ctx.remote(), &name, &op, &self.actor);
        if let Some((p, acc, ep)) = a.packet.take() {
            // The successor ended before the accept was seen: free anyway.
            let _ = p;
            self.free(&acc, ep);
        }
    }

    /// The task's status as `task show` reads it ("" when unreadable).
    fn task_status(&self, task: &str) -> String {
        let plan = self.opts.plan.clone();
        let task = self
            .swarm(
                &self.root.clone(),
                None,
                &["task", "show", task, "--plan", &plan],
            )
            .ok();
        task.as_ref()
            .and_then(|t| t["task"]["status"].as_str().map(String::from))
            .unwrap_or_default()
    }

    /// The task is done, cancelled or open again: the account is freed and
    /// the session's end said with its tokens.
    fn finished(&mut self, a: &Agent, how: &str, task_status: &str) {
        let (name, lane) = (a.account.account.clone(), a.lane.clone());
        let tokens = a.summary.usage.input_tokens + a.summary.usage.output_tokens;
        let session = a
            .summary
            .session
            .as_deref()
            .map(|s| format!("session {s}, "))
            .unwrap_or_default();
        self.free(&name, a.epoch);
        self.step(
            "finished",
            Some(&lane),
            Some(&name),
            format!(
                "{} on {name} {how}: task {} is {task_status} ({session}{tokens} tokens); account {name} freed",
                a.host.as_str(),
                a.task
            ),
        );
    }

    /// The first packet open for the lane (its id and reason), if any.
    fn packet_open_for(&self, lane: &str) -> Option<Value> {
        self.swarm(
            &self.root.clone(),
            None,
            &["packets", "--plan", lane, "--open"],
        )
        .ok()
        .and_then(|v| v["packets"].as_array().cloned())
        .unwrap_or_default()
        .into_iter()
        .next()
    }

    /// The lane handed off in packet `p`: said, then a successor leased
    /// (on another host if one is free) and launched on it, or the packet
    /// waits when the budget or the pool refuses.
    fn hand_off(&mut self, a: &Agent, p: &Value, how: &str) -> Result<()> {
        let plan = self.opts.plan.clone();
        let (name, lane) = (a.account.account.clone(), a.lane.clone());
        let packet = p["id"].as_str().unwrap_or("").to_string();
        self.step(
            "handoff",
            Some(&lane),
            Some(&name),
            format!(
                "{} on {name} {how} and handed off: packet {packet} ({})",
                a.host.as_str(),
                p["reason"].as_str().unwrap_or("")
            ),
        );
        if let Some(why) = self.budget_refuses() {
            self.free(&name, a.epoch);
            self.step(
                "wait",
                Some(&lane),
                None,
                format!("no successor launched ({why}): the packet waits"),
            );
            return Ok(());
        }
        let avoid = a.account.host.to_string();
        match self.lease(&a.task, &lane, Some(&avoid))? {
            Some((succ, epoch)) => {
                let text = brief::successor(&plan, &a.task, &lane, &packet, &succ.address);
                let resume = (succ.host == a.account.host)
                    .then(|| a.summary.session.clone())
                    .flatten();
                let _ = resume; // a successor starts a fresh session: the packet carries what it needs
                let (task, worktree) = (a.task.clone(), a.worktree.clone());
                let from = (packet, name.clone(), a.epoch);
                self.launch(
                    succ,
                    epoch,
                    &task,
                    &lane,
                    &worktree,
                    &text,
                    Some(from),
                    None,
                )?;
            }
            None => {
                self.free(&name, a.epoch);
                self.step(
                    "wait",
                    Some(&lane),
                    None,
                    "no free account for the successor: the packet waits".into(),
                );
            }
        }
        Ok(())
    }

    /// Lost without a packet: its work kept as the lane's snapshot, the
    /// loss reported and said, then what follows a loss.
    fn lost(&mut self, a: &mut Agent, how: &str) -> Result<()> {
        let (name, lane) = (a.account.account.clone(), a.lane.clone());
        let _ = self.swarm(
            &a.worktree.clone(),
            Some(&a.account.address),
            &["lane", "snapshot"],
        );
        let why = match (&a.summary.error, a.summary.limited()) {
            (_, true) => "a usage limit stopped it".to_string(),
            (Some(e), _) => format!("it failed: {}", e.lines().next().unwrap_or("")),
            _ => format!("it {how} without a packet"),
        };
        let _ = self.swarm(
            &a.worktree.clone(),
            Some(&a.account.address),
            &["report", "--lane", &lane, "blocked", "agent_lost", &format!("{} on account {name} was lost ({why}; loss {} of this lane); its uncommitted work is the lane snapshot", a.host.as_str(), self.losses.get(&lane).copied().unwrap_or(0) + 1)],
        );
        self.step(
            "lost",
            Some(&lane),
            Some(&name),
            format!("{} on {name} was lost ({why}): the lane's work is kept as its snapshot, the loss recorded", a.host.as_str()),
        );
        self.after_loss(a, &why)
    }
}

/// How a session ended, as the steps say it: "exited", "was killed
/// (signal N)", "failed (exit N)" or "ended".
fn how_it_ended(status: Option<std::process::ExitStatus>) -> String {
    match status {
        Some(s) if s.success() => "exited".to_string(),
        Some(s) => match (s.code(), std::os::unix::process::ExitStatusExt::signal(&s)) {
            (_, Some(sig)) => format!("was killed (signal {sig})"),
            (Some(c), _) => format!("failed (exit {c})"),
            _ => "ended".into(),
        },
        None => "ended".into(),
    }
}
