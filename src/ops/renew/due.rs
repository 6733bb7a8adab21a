//! What `renew --due` does, decided from what this clone knows, with no
//! network: the post-tool-use hook runs it after every tool use, and most
//! times nothing is due (no fetch, no objects, no signatures).
//!
//! Without a push budget a holding is due past half its lease: then
//! everything held is renewed in one push. Under `swarm.pushBudget` a
//! claim past half its lease is renewed in this clone and queued (its ref
//! is the holder's while the lease runs: nobody races for it), and rides
//! the clone's next push with the messages; a claim whose *published*
//! lease has less than a quarter left (its queued renewal has not gone
//! yet), or a reservation with less than a quarter left (its shard is
//! shared: never queued), is pushed at once, with everything held.

use jiff::{SignedDuration, Timestamp};

use super::Renewal;
use crate::error::Result;
use crate::records::reservation::stored;
use crate::records::task::{self, TaskRecord};
use crate::store::records::Records;

/// The decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Renew everything held, in one push.
    Push,
    /// Renew the claims in this clone, queued for the budget's next push.
    Queue,
    /// Nothing due; when the first holding comes due, if one is held.
    Nothing(Option<Timestamp>),
}

/// Whether a lease running until `until` has less than `window` left at
/// `now` (and is not over: an expired one is not the holder's to renew).
fn within(until: Timestamp, now: Timestamp, window: SignedDuration) -> bool {
    until > now && until.duration_since(now) < window
}

/// The earliest of the moments holdings come due, after `now`.
#[derive(Default)]
struct First(Option<Timestamp>);

impl First {
    fn note(&mut self, until: Timestamp, window: SignedDuration, now: Timestamp) {
        if let Ok(from) = until.checked_sub(window) {
            if from > now && self.0.is_none_or(|t| from < t) {
                self.0 = Some(from);
            }
        }
    }
}

impl Renewal<'_> {
    /// How much of a lease is left when its renewal is pushed: a half, or
    /// under a push budget a quarter (until then a claim's renewal rides
    /// the clone's next push).
    fn push_window(&self, lease: SignedDuration) -> SignedDuration {
        match self.budget_remote {
            Some(_) => lease / 4,
            None => lease / 2,
        }
    }

    /// Decide, for `renew --due`, from the claims of the one renewing
    /// (`mine`, as this clone knows them) and the reservations as it knows
    /// them.
    pub(super) fn step(&self, mine: &[&task::Known]) -> Result<Step> {
        let (ctx, now) = (self.ctx, self.now);
        let mut first = First::default();
        let mut queue = false;
        let push_window = self.push_window(self.task_lease);
        for k in mine {
            let Some(newest) = k.record.claim.as_ref().and_then(|c| c.until()) else {
                continue;
            };
            if self.budget_remote.is_none() {
                if within(newest, now, push_window) {
                    return Ok(Step::Push);
                }
                first.note(newest, push_window, now);
                continue;
            }
            // Under the budget: the lease the remote shows decides when it
            // must go alone; the newest one, whether a renewal is queued.
            let published = self.published_until(k)?.unwrap_or(newest);
            if within(published, now, push_window) {
                return Ok(Step::Push);
            }
            first.note(published, push_window, now);
            let half = self.task_lease / 2;
            if within(newest, now, half) {
                queue = true;
            } else {
                first.note(newest, half, now);
            }
        }
        let window = self.push_window(self.res_lease);
        let ledger = stored::known(&ctx.store, ctx.remote())?;
        for e in ledger
            .entries
            .iter()
            .filter(|e| e.holder == self.me && e.released_at.is_none() && e.live(now))
        {
            let Ok(until) = e.lease_until.parse::<Timestamp>() else {
                continue;
            };
            if within(until, now, window) {
                return Ok(Step::Push);
            }
            first.note(until, window, now);
        }
        Ok(if queue {
            Step::Queue
        } else {
            Step::Nothing(first.0)
        })
    }

    /// The lease of a claim as last fetched from the remote (None: the
    /// remote has no version of it, or not this holder's claim).
    fn published_until(&self, k: &task::Known) -> Result<Option<Timestamp>> {
        let Some(published) = k.published else {
            return Ok(None);
        };
        if published == k.commit {
            return Ok(k.record.claim.as_ref().and_then(|c| c.until()));
        }
        let at = Records::<TaskRecord>::new(&self.ctx.store).at(&k.key, published)?;
        Ok(at
            .value
            .claim
            .filter(|c| c.holder == self.me)
            .and_then(|c| c.until()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_is_within_its_window_until_it_is_over() {
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let at = |s: &str| s.parse::<Timestamp>().unwrap();
        let half = SignedDuration::from_mins(15);
        assert!(!within(at("2026-01-01T00:20:00Z"), now, half));
        assert!(within(at("2026-01-01T00:14:00Z"), now, half));
        assert!(!within(at("2025-12-31T23:59:00Z"), now, half));
        let mut first = First::default();
        first.note(at("2026-01-01T00:40:00Z"), half, now);
        first.note(at("2026-01-01T00:30:00Z"), half, now);
        first.note(at("2026-01-01T00:10:00Z"), half, now);
        assert_eq!(
            first.0,
            Some(at("2026-01-01T00:15:00Z")),
            "the earliest still ahead"
        );
    }
}
