//! What a round's closure reads and writes: [`Txn`].

use gix::ObjectId;

use crate::error::{Code, Result};
use crate::git::PushUpdate;
use crate::store::mirror::fetch;
use crate::store::records::{Record, Records, Versioned};
use crate::store::remote::land::Write;
use crate::store::remote::{self, adopt, Tip};
use crate::store::{Event, Store};

use super::{Rejected, Txn};

impl<'s> Txn<'s> {
    /// The store the round works in.
    pub fn store(&self) -> &'s Store {
        self.store
    }
    /// 1 for the first round.
    pub fn attempt(&self) -> usize {
        self.attempt
    }
    /// What the previous round decided and the arbiter refused, if it
    /// lost a race: this round decides again on a fresh fetch.
    pub fn rejected(&self) -> Option<&Rejected> {
        self.rejected.as_ref()
    }
    /// Should this round lose at the remote, decide the next round at once
    /// on the view this round's fetch gave — no pause, no fetch — because
    /// it will write another ref than the one it lost (`task claim
    /// --next`: another task it saw ready). Without it a lost round is
    /// followed by a jittered pause and a fresh fetch.
    pub fn keep_view_if_lost(&mut self) {
        self.keep_view = true;
    }

    /// Whether a remote arbitrates (else the local CAS does).
    pub fn online(&self) -> bool {
        self.remote.is_some()
    }

    /// Fetch more refs into the mirror (online; offline a no-op), e.g. a
    /// prefix to look for a free name after a lost race.
    pub fn fetch(&self, refs: &[&str]) -> Result<()> {
        crate::store::mirror::fetch_refs_from(self.store, self.remote, refs)
    }

    /// Fetch the remote's whole mirror (online; offline a no-op), as
    /// `sync` does each round, stamping the time of the fetch. (A tip
    /// this round read already stays what it read.)
    pub fn fetch_mirror(&self) -> Result<()> {
        match self.remote {
            Some(r) => fetch(self.store, r),
            None => Ok(()),
        }
    }

    /// Where `refname` stands in this round (after its fetch); a write of
    /// it takes the lease read here.
    pub fn tip(&mut self, refname: &str) -> Result<Tip> {
        if let Some(tip) = self.tips.get(refname) {
            return Ok(*tip);
        }
        let tip = remote::tip(self.store, self.remote, refname)?;
        self.tips.insert(refname.to_string(), tip);
        Ok(tip)
    }

    /// The record where it stands now (None: absent, or archived by `gc`:
    /// a write then continues the archived history). One that cannot be
    /// read fails the round with its error: never taken for absent.
    pub fn current<R: Record>(&mut self, key: &R::Key) -> Result<Option<Versioned<R>>> {
        let tip = self.tip(&R::refname(key))?;
        match tip.base {
            Some(base) if !tip.archived => Records::<R>::new(self.store).at(key, base).map(Some),
            _ => Ok(None),
        }
    }

    /// [`Txn::current`], first moving a local ref that is missing or behind
    /// what the remote published forward to it (a run killed between its
    /// push and its local update), as `sync` would.
    pub fn current_caught_up<R: Record>(&mut self, key: &R::Key) -> Result<Option<Versioned<R>>> {
        self.catch_up(&R::refname(key))?;
        self.current(key)
    }

    /// Move the local `refname`, when it is missing or behind what the
    /// remote published, forward to it (reading nothing); the tip this
    /// round knows is the published one either way.
    pub fn catch_up(&mut self, refname: &str) -> Result<()> {
        let tip = self.tip(refname)?;
        if let (true, Some(published)) = (tip.local_behind(self.store)?, tip.base) {
            match adopt(
                self.store,
                refname,
                published,
                "git-swarm",
                "catch up with the remote",
            ) {
                Err(e) if e.code == Code::CasFailed => {}
                other => other?,
            }
        }
        Ok(())
    }

    /// Write `value` as the record's next version (on the one this round
    /// read): its commit now, its ref with the round's push.
    pub fn write<R: Record>(&mut self, key: &R::Key, value: &R, event: &Event) -> Result<ObjectId> {
        let refname = R::refname(key);
        let tip = self.tip(&refname)?;
        let tree = self.store.write_tree(&value.to_files()?)?;
        let parents: Vec<ObjectId> = tip.base.into_iter().collect();
        let new = self.store.commit(tree, &parents, event)?;
        self.write_commit(&refname, new, &event.actor, &event.summary)?;
        Ok(new)
    }

    /// Publish `new`, a commit the caller built on `refname`'s tip of this
    /// round (e.g. a version whose tree is not a record's files), with the
    /// round's push.
    pub fn write_commit(
        &mut self,
        refname: &str,
        new: ObjectId,
        actor: &str,
        reason: &str,
    ) -> Result<()> {
        let tip = self.tip(refname)?;
        self.write_on(refname, tip, new, actor, reason);
        Ok(())
    }

    /// [`Txn::write_commit`] with the lease the caller decided on (e.g. a
    /// head it was handed, which the ref must still hold).
    pub fn write_on(&mut self, refname: &str, tip: Tip, new: ObjectId, actor: &str, reason: &str) {
        let writes = &mut self.landing.writes;
        writes.retain(|w| w.refname != refname);
        writes.push(Write {
            refname: refname.to_string(),
            tip,
            new,
            actor: actor.to_string(),
            reason: reason.to_string(),
        });
    }

    /// A leased update that travels in the round's push only (online;
    /// offline it is dropped), its local ref moved forward after the push
    /// like the writes': e.g. a plan-wide version that makes two
    /// racing changes decided on one graph refuse each other.
    pub fn push_along(&mut self, update: PushUpdate) {
        if self.remote.is_some() {
            self.landing.along.push(update);
        }
    }

    /// Plain refspecs in the round's push (online; offline dropped), e.g.
    /// `lead push`'s branches, fenced by the record written with them.
    pub fn push_refspecs(&mut self, refspecs: &[String]) {
        if self.remote.is_some() {
            self.landing.extra.extend(refspecs.iter().cloned());
        }
    }

    /// Leased updates of independent records whose local refs are already
    /// where they should be (`sync`'s), pushed in atomic batches of at
    /// most `swarm.pushBatch` refs (online; offline there is nothing to
    /// push). A refused batch leaves the earlier ones published and starts
    /// the next round, which decides again from a fresh fetch. A round
    /// that pushes these writes nothing else.
    pub fn push_independent(&mut self, updates: Vec<PushUpdate>) {
        if self.remote.is_some() {
            self.landing.independent.extend(updates);
        }
    }
}
