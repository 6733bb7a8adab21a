//! Pushes the server accepts: leased updates of independent records (a
//! first `sync`, what `gc` archived) go in atomic batches of at most
//! `swarm.pushBatch` refs (GitHub answers pushes of 100 refs or more with
//! HTTP 500; its own sync tool pushes 25 at a time). The batches go in an
//! order where a reader never sees a record before what it points to:
//! snapshots, work in progress and the archive first, then the records,
//! packets (which name a lane and a snapshot) after them, deletions (of
//! records an archive now holds) last. Each batch moves its mirror refs as
//! it lands, so a batch that loses a race leaves the earlier ones
//! published and the caller's next round finds them in step.

use super::publish;
use crate::error::Result;
use crate::git::{PushOutcome, PushUpdate};
use crate::store::archive::ARCHIVE_PREFIX;
use crate::store::Store;

/// `swarm.pushBatch`: the most refs one push of independent records
/// carries to `remote` (a positive number). Unset (or not a positive
/// number), 25 for a remote on GitHub, else no limit: one push carries
/// them all (a push costs the same whether it carries 25 refs or 2,000,
/// so 2,000 messages in batches of 25 took 80 pushes).
pub fn push_batch(store: &Store, remote: &str) -> usize {
    let set = store
        .config("swarm.pushBatch")
        .and_then(|v| v.trim().parse().ok())
        .filter(|n: &usize| *n > 0);
    set.unwrap_or_else(|| {
        let url = store
            .config(&format!("remote.{remote}.url"))
            .unwrap_or_default();
        if on_github(&url) {
            GITHUB_BATCH
        } else {
            usize::MAX
        }
    })
}

/// The batch GitHub takes (it has answered pushes of 100 refs or more with
/// HTTP 500; its own sync tool pushes 25 at a time).
const GITHUB_BATCH: usize = 25;

/// Whether a remote URL names github.com (`https://github.com/…`,
/// `git@github.com:…`, `ssh://git@github.com/…`).
fn on_github(url: &str) -> bool {
    let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    let host = rest.split(['/', ':']).next().unwrap_or("");
    let host = host.rsplit_once('@').map(|(_, h)| h).unwrap_or(host);
    host.eq_ignore_ascii_case("github.com") || host.to_ascii_lowercase().ends_with(".github.com")
}

/// Publish `updates` of independent records in batches of at most
/// `swarm.pushBatch` refs, each one atomic push with leases; the first
/// refused batch ends it (Rejected), the earlier ones stay published.
pub fn publish_batched(store: &Store, remote: &str, updates: &[PushUpdate]) -> Result<PushOutcome> {
    for batch in batches(updates, push_batch(store, remote)) {
        match publish(store, remote, &batch, &[])? {
            PushOutcome::Ok => {}
            rejected => return Ok(rejected),
        }
    }
    Ok(PushOutcome::Ok)
}

/// Where a ref goes in the order of the batches (see the module docs).
fn rank(u: &PushUpdate) -> u8 {
    let under = |ns: &str| {
        u.refname
            .strip_prefix("refs/swarm/")
            .is_some_and(|rest| rest.starts_with(ns) && rest[ns.len()..].starts_with('/'))
    };
    if u.new.is_none() {
        3
    } else if u.refname.starts_with(ARCHIVE_PREFIX) || under("snapshots") || under("wip") {
        0
    } else if under("packets") {
        2
    } else {
        1
    }
}

/// `updates` in the batches' order, cut every `size` refs.
fn batches(updates: &[PushUpdate], size: usize) -> Vec<Vec<PushUpdate>> {
    let mut ordered: Vec<&PushUpdate> = updates.iter().collect();
    ordered.sort_by(|a, b| {
        rank(a)
            .cmp(&rank(b))
            .then_with(|| a.refname.cmp(&b.refname))
    });
    ordered
        .chunks(size.max(1))
        .map(|c| c.iter().map(|u| (*u).clone()).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_github_remotes_are_cut_into_batches_by_default() {
        for url in [
            "https://github.com/o/r.git",
            "git@github.com:o/r.git",
            "ssh://git@github.com/o/r",
            "https://user@GitHub.com/o/r",
        ] {
            assert!(on_github(url), "{url}");
        }
        for url in [
            "/srv/git/r.git",
            "file:///srv/r.git",
            "https://gitlab.com/o/r",
            "https://github.com.evil.example/o/r",
            "git@example.org:github.com/r",
        ] {
            assert!(!on_github(url), "{url}");
        }
    }

    fn up(refname: &str, new: bool) -> PushUpdate {
        PushUpdate {
            refname: refname.into(),
            new: new.then(|| "1".repeat(40)),
            expected: None,
        }
    }

    #[test]
    fn batches_are_cut_at_the_size_with_what_is_pointed_to_first_and_deletions_last() {
        let updates = vec![
            up("refs/swarm/tasks/p/gone", false),
            up("refs/swarm/packets/p/1", true),
            up("refs/swarm/lanes/p/a", true),
            up("refs/swarm/snapshots/p/1", true),
            up("refs/swarm/archive/tasks", true),
            up("refs/notes/swarm", true),
        ];
        let cut = batches(&updates, 2);
        let names: Vec<Vec<&str>> = cut
            .iter()
            .map(|b| b.iter().map(|u| u.refname.as_str()).collect())
            .collect();
        assert_eq!(
            names,
            vec![
                vec!["refs/swarm/archive/tasks", "refs/swarm/snapshots/p/1"],
                vec!["refs/notes/swarm", "refs/swarm/lanes/p/a"],
                vec!["refs/swarm/packets/p/1", "refs/swarm/tasks/p/gone"],
            ]
        );
        assert_eq!(batches(&updates, 25).len(), 1);
        assert_eq!(batches(&updates, usize::MAX).len(), 1);
        assert!(batches(&[], 25).is_empty());
    }
}
