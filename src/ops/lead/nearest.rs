//! The leader a plan answers to: its own, else (a child plan without a
//! leader of its own, e.g. a lane's plan under its coordinator's) its
//! nearest parent's. What `ask lead` addresses and a packet names.

use crate::error::Result;
use crate::records::lead::{known, LeadRecord};
use crate::store::{remote, Store};

/// The live leader record (a leader, not released) of `plan` or of its
/// nearest parent that has one, as the newer of the local and mirrored
/// records say; None when none of them has one.
pub fn nearest(store: &Store, remote: Option<&str>, plan: &str) -> Result<Option<LeadRecord>> {
    let mut seen = vec![plan.to_string()];
    loop {
        let at = seen.last().expect("starts with the plan");
        if let Some(rec) = known(store, remote, at)?.filter(|r| !r.released && r.leader.is_some()) {
            return Ok(Some(rec));
        }
        match parent_of(store, remote, at)? {
            Some(parent) if !seen.contains(&parent) => seen.push(parent),
            _ => return Ok(None),
        }
    }
}

/// The parent of `plan`, as the newer of the local and mirrored record names it.
fn parent_of(store: &Store, remote: Option<&str>, plan: &str) -> Result<Option<String>> {
    let refname = crate::records::plan::plan_ref(plan);
    let Some(tip) = remote::tip(store, remote, &refname)?.base else {
        return Ok(None);
    };
    // An unreadable (or, under swarm.trust=require, untrusted) plan record
    // names no parent: the leader search stops.
    if store.refused(&refname, tip)?.is_some() {
        return Ok(None);
    }
    Ok(store
        .read_commit(tip)
        .and_then(|r| crate::records::plan::from_record(plan, r))
        .ok()
        .and_then(|p| p.record.parent))
}
