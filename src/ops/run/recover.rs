//! The runner's recoveries: a successor for an agent that died without a
//! packet (its claim handed over by `task recover`), and for a lane whose
//! agent is gone on another machine or with a runner that died (orphaned:
//! its task's claim lapsed and no account holds a live lease for it).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{brief, Agent, Runner};
use crate::error::Result;
use crate::records::lane::wip::wip_ref;
use crate::records::pool::{self, Account};
use crate::records::task;
use crate::store::mirror;
use crate::views::agents::Agents;
use crate::worktree::contents::Snapshot;

/// How many agents a lane may lose before it is reported blocked for a
/// person (each loss launches a successor, up to this many), unless
/// `git config swarm.runMaxLosses` says otherwise.
pub const MAX_LOSSES: usize = 3;

/// An orphaned lane a successor is leased for: its task, why it is
/// orphaned, and its worktree in this clone.
#[derive(Clone, Copy)]
struct Orphan<'a> {
    task: &'a str,
    lane: &'a str,
    gone: &'a str,
    worktree: &'a Path,
}

impl Runner<'_> {
    /// After a loss (snapshot taken, loss reported): a successor resumes
    /// from the plan and the snapshot, on another account when one is free
    /// (another host preferred), else on the same one unless a usage limit
    /// stopped it. Without any, the lane's claim lapses and it is recovered
    /// as an orphan once an account is free.
    pub(super) fn after_loss(&mut self, a: &mut Agent, why: &str) -> Result<()> {
        let (name, lane, task) = (a.account.account.clone(), a.lane.clone(), a.task.clone());
        let plan = self.opts.plan.clone();
        let n = {
            let n = self.losses.entry(lane.clone()).or_insert(0);
            *n += 1;
            *n
        };
        if n > self.max_losses() {
            self.block_lane(
                a,
                "agent_lost",
                &format!("{n} agents were lost on this lane; a person looks at it (`git swarm task recover {task} --reason …`)"),
                &format!("agent_lost: {n} agents were lost on this lane"),
                format!("lane {lane} lost {n} agents: reported blocked, not relaunched; account {name} freed"),
            );
            return Ok(());
        }
        let Some((succ, epoch)) = self.lease_after_loss(a)? else {
            self.step(
                "wait",
                Some(&lane),
                Some(&name),
                format!("account {name} freed; no free account for a successor: lane {lane} is recovered once its claim lapses and an account is free"),
            );
            return Ok(());
        };
        let reason = format!(
            "the agent on account {name} was lost ({why}); {} resumes from the plan and the snapshot",
            succ.address
        );
        if let Err(e) = self.hand_claim(&a.account.address, &task, &succ.address, &reason) {
            self.free(&succ.account, epoch);
            self.step(
                "skip",
                Some(&lane),
                Some(&succ.account),
                format!("no successor for lane {lane}: its claim did not move ({e})"),
            );
            return Ok(());
        }
        let worktree = a.worktree.clone();
        self.take_lane(&lane, &succ.address, &reason, &worktree);
        let text = brief::resume(&plan, &task, &lane, &succ.address, why);
        self.launch(succ, epoch, &task, &lane, &worktree, &text, None, None)
    }

    /// How many agents a lane may lose: `swarm.runMaxLosses`, else
    /// [`MAX_LOSSES`].
    fn max_losses(&self) -> usize {
        self.ctx
            .store
            .config("swarm.runMaxLosses")
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(MAX_LOSSES)
    }

    /// A successor's account after a loss: another one first (another host
    /// preferred), else the lost agent's own once freed unless a usage
    /// limit stopped it. The lost agent's account is freed either way.
    fn lease_after_loss(&mut self, a: &Agent) -> Result<Option<(Account, u64)>> {
        let (name, lane, task) = (a.account.account.clone(), a.lane.clone(), a.task.clone());
        let host = a.account.host.to_string();
        let mut got = self.lease(&task, &lane, Some(&host))?;
        let mut freed = false;
        if got.is_none() && !a.summary.limited() {
            self.free(&name, a.epoch);
            freed = true;
            got = self.lease(&task, &lane, Some(&host))?;
        }
        if !freed {
            self.free(&name, a.epoch);
        }
        Ok(got)
    }

    /// `task recover` under the lost agent's address: the task's claim
    /// handed to the successor `owner`, for the runner's lease.
    fn hand_claim(&self, address: &str, task: &str, owner: &str, reason: &str) -> Result<Value> {
        let plan = self.opts.plan.clone();
        let lease = format!("{}s", self.ttl.as_secs());
        self.swarm(
            &self.root.clone(),
            Some(address),
            &[
                "task", "recover", task, "--plan", &plan, "--owner", owner, "--reason", reason,
                "--lease", &lease,
            ],
        )
    }

    /// Launch a successor on every orphaned lane of the plan (its task in
    /// progress, its claim lapsed, no live lease naming it) there is room
    /// and an account for: `task recover --reason` under the successor's
    /// address (of two runners, the remote takes one), then the host in the
    /// lane's worktree (made here from its branch when it was elsewhere).
    pub(super) fn recover_orphans(&mut self) -> Result<usize> {
        let (store, remote) = (&self.ctx.store, self.ctx.remote());
        mirror::fetch_refs_from(store, remote, &[pool::PREFIX, task::PREFIX])?;
        let mut unreadable = Vec::new();
        let now = store.clock.now();
        let agents = crate::views::agents::read(store, remote, now, &mut unreadable)?;
        let mut launched = 0;
        for lane in &agents.orphaned {
            if self.agents.len() >= self.opts.max_lanes {
                break;
            }
            let Some(task) = self.orphan_task(&agents, lane) else {
                continue;
            };
            let before = agents.by_lane.get(lane);
            let gone = match before {
                Some(b) => format!(
                    "its agent {} on account {} ({}) is gone: the runner's lease lapsed at {} and the claim was not renewed",
                    b.host, b.account, b.runner, b.lease_until
                ),
                None => "its claim lapsed and no runner holds it".to_string(),
            };
            let Some(worktree) = self.worktree_for(lane) else {
                if self.blocked.insert(task.to_string()) {
                    self.step(
                        "skip",
                        Some(lane),
                        None,
                        format!("lane {lane} is orphaned ({gone}), but its branch feat/{lane} is not reachable from this clone, nor the commit it started from: recover it where it is"),
                    );
                }
                continue;
            };
            let avoid = before.map(|b| b.host.clone());
            let Some((succ, epoch)) = self.lease(task, lane, avoid.as_deref())? else {
                self.step(
                    "wait",
                    Some(lane),
                    None,
                    format!("lane {lane} is orphaned: no free account for a successor yet"),
                );
                break;
            };
            let orphan = Orphan {
                task,
                lane,
                gone: &gone,
                worktree: &worktree,
            };
            if self.take_over(&orphan, succ, epoch)? {
                launched += 1;
            }
        }
        Ok(launched)
    }

    /// The task of an orphaned lane this runner recovers: one of its plan,
    /// not blocked here, and no agent of its own on the lane or the task.
    fn orphan_task<'a>(&self, agents: &'a Agents, lane: &str) -> Option<&'a str> {
        let (p, task) = agents.lane_tasks.get(lane)?;
        if *p != self.opts.plan
            || self.blocked.contains(task)
            || self
                .agents
                .values()
                .any(|a| a.lane == *lane || a.task == *task)
        {
            return None;
        }
        Some(task)
    }

    /// The successor leased for an orphaned lane takes it over: it accepts
    /// the packet open on it, else recovers its claim; true when launched.
    fn take_over(&mut self, o: &Orphan, succ: Account, epoch: u64) -> Result<bool> {
        let Orphan {
            task,
            lane,
            gone,
            worktree,
        } = *o;
        let plan = self.opts.plan.clone();
        if let Some(packet) = self.open_packet(lane) {
            // A packet waits on the lane: the successor accepts it (the
            // claim moves with the packet); nothing is invented.
            self.step(
                "recovered",
                Some(lane),
                Some(&succ.account),
                format!(
                    "orphaned lane {lane} has packet {packet} open: {} accepts it ({gone})",
                    succ.address
                ),
            );
            let text = brief::successor(&plan, task, lane, &packet, &succ.address);
            self.launch(succ, epoch, task, lane, worktree, &text, None, None)?;
            return Ok(true);
        }
        self.recover_orphan(o, succ, epoch)
    }

    /// An orphaned lane without a packet: its claim recovered under the
    /// successor's address, the lane record moved, the loss reported in its
    /// journal, then the successor launched; false when another runner
    /// recovered it first.
    fn recover_orphan(&mut self, o: &Orphan, succ: Account, epoch: u64) -> Result<bool> {
        let Orphan {
            task,
            lane,
            gone,
            worktree,
        } = *o;
        let plan = self.opts.plan.clone();
        let reason = format!("orphaned: {gone}");
        let lease = format!("{}s", self.ttl.as_secs());
        let recovered = self.swarm(
            &self.root.clone(),
            Some(&succ.address),
            &[
                "task", "recover", task, "--plan", &plan, "--reason", &reason, "--lease", &lease,
            ],
        );
        if let Err(e) = recovered {
            // Recovered by another runner first, or renewed meanwhile.
            self.free(&succ.account, epoch);
            self.step(
                "skip",
                Some(lane),
                Some(&succ.account),
                format!("orphaned lane {lane} not recovered here: {e}"),
            );
            return Ok(false);
        }
        self.take_lane(lane, &succ.address, &reason, worktree);
        // The lane's plan and journal were written on another clone:
        // this one takes them in before reporting and resuming there.
        let _ = self.swarm(&self.root.clone(), None, &["sync"]);
        let reported = self.swarm(
            worktree,
            Some(&succ.address),
            &["report", "--lane", lane, "blocked", "agent_lost", &format!("lane {lane} was orphaned ({gone}); {} recovers it (`task recover`) and resumes from the plan and its snapshot", succ.address)],
        );
        if let Err(e) = reported {
            self.step(
                "skip",
                Some(lane),
                Some(&succ.account),
                format!("the loss of lane {lane} is not in its journal: {e}"),
            );
        }
        self.step(
            "recovered",
            Some(lane),
            Some(&succ.account),
            format!(
                "orphaned lane {lane} recovered for {}: {gone}",
                succ.address
            ),
        );
        let text = brief::resume(&plan, task, lane, &succ.address, &reason);
        self.launch(succ, epoch, task, lane, worktree, &text, None, None)?;
        Ok(true)
    }

    /// The first packet open for the lane, if any.
    fn open_packet(&self, lane: &str) -> Option<String> {
        self.swarm(
            &self.root.clone(),
            None,
            &["packets", "--plan", lane, "--open"],
        )
        .ok()?["packets"]
            .as_array()?
            .first()?["id"]
            .as_str()
            .map(String::from)
    }

    /// The lane record follows the successor (its owner, and its path when
    /// the worktree is in this clone rather than where the lane was).
    fn take_lane(&mut self, lane: &str, address: &str, why: &str, worktree: &std::path::Path) {
        let (store, remote) = (&self.ctx.store, self.ctx.remote());
        if let Err(e) = crate::records::lane::recover(store, remote, lane, address, why, worktree) {
            self.step(
                "skip",
                Some(lane),
                None,
                format!("lane {lane}'s record did not move to {address}: {e}"),
            );
        }
    }

    /// The lane's worktree in this clone: where `lane new` put it, else a
    /// new one on its branch (local, else fetched from the remote, else,
    /// never pushed, started again at the commit the lane started from);
    /// None when neither is to be had.
    fn worktree_for(&mut self, lane: &str) -> Option<PathBuf> {
        let path = crate::session::lane::lane_path(self.ctx, &self.root, lane);
        if path.exists() {
            return Some(path);
        }
        let git = &self.ctx.store.git;
        let branch = format!("feat/{lane}");
        let shown = path.to_string_lossy().into_owned();
        if git
            .rev_parse(&format!("refs/heads/{branch}"))
            .ok()
            .flatten()
            .is_some()
        {
            git.run([
                "worktree",
                "add",
                "--quiet",
                shown.as_str(),
                branch.as_str(),
            ])
            .ok()?;
            self.restore_snapshot(lane, &path);
            return Some(path);
        }
        let remote = self.ctx.code_remote()?;
        let start = if git.fetch_branch(remote, &branch).ok()? {
            format!("refs/remotes/{remote}/{branch}")
        } else {
            // Never pushed (its runner died before its agent's first push):
            // the branch starts again where the lane started. Commits only
            // in the lost clone stay there; a later push of them is refused
            // as non-fast-forward, so nothing is overwritten.
            let start = self.lane_start(lane)?;
            self.step(
                "restart",
                Some(lane),
                None,
                format!(
                    "lane {lane}'s branch {branch} was never pushed: it starts again at {} (the commit the lane started from); commits made only where it was stay there",
                    &start[..start.len().min(12)]
                ),
            );
            start
        };
        git.worktree_add(&self.ctx.store.common_dir(), &path, &branch, &start)
            .ok()?;
        self.restore_snapshot(lane, &path);
        Some(path)
    }

    /// Into a worktree just made for a lane lost elsewhere: the lane's
    /// published snapshot (the uncommitted work its lost agent's hooks or
    /// runner published, local or as fetched), when it was taken on the
    /// head the worktree starts at. The whole snapshot is verified before
    /// a file is written; one taken on another head, or refused, is left at
    /// its ref (the brief names it) and the step says why.
    fn restore_snapshot(&mut self, lane: &str, path: &Path) {
        use crate::worktree::restore::{restore, undo, verify, Expected};
        let refname = wip_ref(lane);
        let (store, remote) = (&self.ctx.store, self.ctx.remote());
        let _ = mirror::fetch_refs_from(store, remote, &[refname.as_str()]);
        let Ok(tip) = crate::store::remote::tip(store, remote, &refname) else {
            return;
        };
        let git = self.ctx.store.git.at(path);
        let Some(head) = git.rev_parse("HEAD").ok().flatten() else {
            return;
        };
        let parent_of = |c: &gix::ObjectId| store.git.rev_parse(&format!("{c}^1")).ok().flatten();
        let known: Vec<gix::ObjectId> = [tip.local, tip.remote].into_iter().flatten().collect();
        let Some(snap) = known
            .iter()
            .find(|c| parent_of(c).as_deref() == Some(head.as_str()))
        else {
            if let Some(c) = known.first() {
                self.step(
                    "restore",
                    Some(lane),
                    None,
                    format!(
                        "lane {lane}'s snapshot {} was taken on another head than the branch's: it stays at {refname}",
                        &c.to_string()[..12]
                    ),
                );
            }
            return;
        };
        let snapshot = Snapshot {
            commit: snap.to_string(),
            size: 0,
            paths: Default::default(),
        };
        let expected = Expected {
            head: &head,
            uncommitted: &[],
            content: Vec::new(),
        };
        let mut dirty = 0;
        let done = verify(store, path, &expected, &snapshot, |p| {
            dirty = p.dirty.len();
            Ok(())
        })
        .and_then(|v| {
            if dirty == 0 {
                return Ok(());
            }
            restore(&git, path, &v).inspect_err(|_| {
                let _ = undo(&git, path, &v);
            })
        });
        let text = match done {
            Ok(()) if dirty == 0 => return,
            Ok(()) => format!(
                "lane {lane}'s snapshot {} (its lost agent's uncommitted work, {dirty} path(s)) is restored in the new worktree",
                &snapshot.commit[..12]
            ),
            Err(e) => format!(
                "lane {lane}'s snapshot {} was not restored ({}): it stays at {refname}",
                &snapshot.commit[..12],
                e.message
            ),
        };
        self.step("restore", Some(lane), None, text);
    }

    /// The commit lane `lane` started from, as its record (the newer of
    /// local and mirrored) names it, fetched with its base branch when
    /// this clone lacks it.
    fn lane_start(&mut self, lane: &str) -> Option<String> {
        let (store, remote) = (&self.ctx.store, self.ctx.remote());
        let record = crate::records::lane::require_newest(store, remote, lane)
            .ok()?
            .record;
        let git = &store.git;
        let commit = record.base_commit;
        if commit.is_empty() {
            return None;
        }
        if let Some(found) = git.rev_parse(&commit).ok().flatten() {
            return Some(found);
        }
        let code = self.ctx.code_remote()?;
        let base = record
            .base
            .strip_prefix(&format!("{code}/"))
            .unwrap_or(&record.base);
        git.fetch_branch(code, base).ok()?;
        git.rev_parse(&commit).ok().flatten()
    }
}
