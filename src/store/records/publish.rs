//! [`Records::publish`] (one record) and [`Records::publish_each`] (several
//! of one kind in one atomic push): the store's one publish operation,
//! [`Publish`], for one kind.
//!
//! One round: fetch the records' refs into the mirror; read each where it
//! stands now (the published version, or the local one when it descends
//! from it: unpublished local changes are kept and travel along); let the
//! caller decide the next version from it; write it; publish every version
//! of the round in ONE atomic push whose leases are the values just
//! fetched, then move the local refs. A lease that no longer holds (another
//! clone won the race) starts the next round from a fresh fetch, so the
//! caller decides again on what the winner wrote. Without a remote (none,
//! or `--offline`), or when it cannot be reached, the local
//! compare-and-swap arbitrates and the result says why it is not published
//! ([`Publication::Kept`], worded by [`not_published`]); the next command
//! that reaches the remote publishes it (`remote::publish_pending`).

use gix::ObjectId;

use super::{Publication, Publish, Record, RecordKey, Records, Update, Versioned};
use crate::error::{Code, Error, Result};
use crate::store::remote::{self, Tip};
use crate::store::yaml::Unreadable;

/// What [`Records::publish`] wrote.
#[derive(Debug, Clone)]
pub struct Written {
    /// The new version of each record written, by ref name (empty: the
    /// caller kept every record as it was).
    pub commits: Vec<(String, ObjectId)>,
    /// Where they went (for nothing written: where it would have gone).
    pub publication: Publication,
}

impl Written {
    /// The one new commit of [`Records::publish`], if it wrote.
    pub fn commit(&self) -> Option<ObjectId> {
        self.commits.first().map(|(_, c)| *c)
    }
}

/// One record as this clone knows it ([`Records::known_under`]): its
/// newest version and where its local and published refs stand.
#[derive(Clone)]
pub struct Known<R: Record> {
    pub version: Versioned<R>,
    pub tip: Tip,
}

impl<R: Record> Records<'_, R> {
    /// Every record of the kind known here — local, or in `remote`'s
    /// mirror as last fetched — each at the newer of its two versions (the
    /// local one when it descends from the published one, else the
    /// published one), sorted by key; those that cannot be read are listed,
    /// never hidden. The one read every view of several records uses, so
    /// that two commands of one clone never show two owners of one lane.
    pub fn known(&self, remote: Option<&str>) -> Result<(Vec<Versioned<R>>, Vec<Unreadable>)> {
        let (known, bad) = self.known_under(remote, "")?;
        let mut good: Vec<Versioned<R>> = known.into_iter().map(|k| k.version).collect();
        good.sort_by(|a, b| a.key.cmp(&b.key));
        Ok((good, bad))
    }

    /// [`Records::known`] of the records whose ref path starts with
    /// `under` (e.g. `<plan>/`: one plan's tasks), in ref order, each with
    /// its [`Tip`].
    pub fn known_under(
        &self,
        remote: Option<&str>,
        under: &str,
    ) -> Result<(Vec<Known<R>>, Vec<Unreadable>)> {
        let listed = self.listed(remote, under)?;
        // Read together (the cache's misses parsed side by side), then
        // handed out in the order `assemble` asks for them.
        let versions: Vec<(R::Key, ObjectId)> = listed
            .iter()
            .filter_map(|(below, tip)| {
                Some((R::Key::from_path(&format!("{under}{below}"))?, tip.base?))
            })
            .collect();
        let mut read = self.at_many(&versions).into_iter();
        self.assemble(under, listed, |_, _| {
            read.next().expect("one version read per record").map(Some)
        })
    }

    /// [`Records::known_under`], each record read by `read` from its key
    /// and its newest version's commit: None skips it unparsed (a listing
    /// that wants few of many records tells them by what the record cache
    /// keeps, e.g. a packet's tags), an error lists it as unreadable.
    pub fn known_with(
        &self,
        remote: Option<&str>,
        under: &str,
        read: impl FnMut(&R::Key, ObjectId) -> Result<Option<Versioned<R>>>,
    ) -> Result<(Vec<Known<R>>, Vec<Unreadable>)> {
        let listed = self.listed(remote, under)?;
        self.assemble(under, listed, read)
    }

    /// The refs of the kind whose path starts with `under`, each with its
    /// tip (the path below `under`).
    fn listed(&self, remote: Option<&str>, under: &str) -> Result<Vec<(String, Tip)>> {
        let prefix = format!("refs/swarm/{}/{under}", R::NAMESPACE);
        remote::tips_under(self.store, remote, &prefix)
    }

    /// The records of `listed`, each read by `read` (called once for every
    /// ref with a newest version and a valid key, in order).
    fn assemble(
        &self,
        under: &str,
        listed: Vec<(String, Tip)>,
        mut read: impl FnMut(&R::Key, ObjectId) -> Result<Option<Versioned<R>>>,
    ) -> Result<(Vec<Known<R>>, Vec<Unreadable>)> {
        let ns = format!("refs/swarm/{}/", R::NAMESPACE);
        let mut good = Vec::new();
        let mut bad = Vec::new();
        for (below, tip) in listed {
            let Some(base) = tip.base else { continue };
            let path = format!("{under}{below}");
            let refname = format!("{ns}{path}");
            let read = R::Key::from_path(&path)
                .ok_or_else(|| {
                    Error::new(
                        Code::RecordInvalid,
                        format!("{refname} is not a valid {} ref name", R::KIND),
                    )
                })
                .and_then(|key| read(&key, base));
            // A version passed over as untrusted is still said, until a
            // trusted write replaces it.
            if let Some(skipped) = tip.skipped {
                if let Err(e) = self.store.trusted(R::NAMESPACE, R::KIND, &path, skipped) {
                    bad.push(Unreadable::new(R::KIND, &path, &refname, &e));
                }
            }
            match read {
                Ok(Some(version)) => good.push(Known { version, tip }),
                Ok(None) => {}
                Err(e) => bad.push(Unreadable::new(R::KIND, &path, &refname, &e)),
            }
        }
        self.store.cache.flush();
        Ok((good, bad))
    }

    /// One record as this clone knows it (the newer of the local ref and
    /// `remote`'s mirror, without fetching); None when it is absent or
    /// archived. One that cannot be read is its error.
    pub fn known_one(&self, remote: Option<&str>, key: &R::Key) -> Result<Option<Known<R>>> {
        let tip = remote::tip(self.store, remote, &R::refname(key))?;
        match tip.base.filter(|_| !tip.archived) {
            None => Ok(None),
            Some(base) => Ok(Some(Known {
                version: self.at(key, base)?,
                tip,
            })),
        }
    }

    /// Fetch the record, let `decide` see its freshest version (None:
    /// absent), write what it decides and publish it with the lease,
    /// retried from a fresh fetch on a lost race (see the module docs).
    /// `remote` None: offline, the local CAS arbitrates.
    pub fn publish(
        &self,
        remote: Option<&str>,
        key: &R::Key,
        mut decide: impl FnMut(Option<&Versioned<R>>) -> Result<Update<R>>,
    ) -> Result<Written> {
        self.publish_each(remote, std::slice::from_ref(key), |_, current| {
            decide(current)
        })
    }

    /// [`Records::publish`] for several records of the kind, decided one by
    /// one in each round and published together in one atomic push: the
    /// remote takes all of them or none.
    pub fn publish_each(
        &self,
        remote: Option<&str>,
        keys: &[R::Key],
        mut decide: impl FnMut(&R::Key, Option<&Versioned<R>>) -> Result<Update<R>>,
    ) -> Result<Written> {
        let done = Publish::new(self.store, remote)
            .fetch(keys.iter().map(R::refname))
            .run(|txn| {
                for key in keys {
                    let current = txn.current_caught_up::<R>(key)?;
                    if let Update::Write(value, event) = decide(key, current.as_ref())? {
                        txn.write(key, &value, &event)?;
                    }
                }
                Ok(())
            })?;
        Ok(Written {
            commits: done.commits,
            publication: done.publication,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::records::testkit::{self, N};
    use crate::store::records::OFFLINE;
    use crate::store::{Event, Store};

    type Counter = N<0>;

    fn bump(by: &str) -> impl FnMut(Option<&Versioned<Counter>>) -> Result<Update<Counter>> + '_ {
        move |current| {
            let n = current.map_or(0, |c| c.value.0) + 1;
            Ok(Update::Write(
                N(n),
                Event::new("count", by, format!("count {n}")),
            ))
        }
    }

    #[test]
    fn publish_decides_on_the_fresh_version_retries_a_lost_race_and_batches_keys() {
        let (_tmp, stores) = testkit::clones(2);
        let mut stores = stores.into_iter();
        let (a, b) = (stores.next().unwrap(), stores.next().unwrap());
        let key = "c".to_string();
        let remote_value = |store: &Store| {
            crate::store::mirror::fetch(store, "origin").unwrap();
            let r = store
                .ref_target(&crate::store::mirror::mirror_ref(
                    "origin",
                    &Counter::refname(&key),
                ))
                .unwrap()
                .unwrap();
            Records::<Counter>::new(store).at(&key, r).unwrap().value.0
        };

        // a publishes 1; b, which never fetched, decides on it: 2.
        let w = Records::<Counter>::new(&a)
            .publish(Some("origin"), &key, bump("a"))
            .unwrap();
        assert!(w.publication.is_published());
        Records::<Counter>::new(&b)
            .publish(Some("origin"), &key, bump("b"))
            .unwrap();
        assert_eq!(remote_value(&a), 2);

        // A lost race: while b decides, a publishes 3; b's push is refused,
        // b fetches again and decides on 3.
        let mut rounds = 0;
        let w = Records::<Counter>::new(&b)
            .publish(Some("origin"), &key, |current| {
                rounds += 1;
                if rounds == 1 {
                    Records::<Counter>::new(&a)
                        .publish(Some("origin"), &key, bump("a"))
                        .unwrap();
                }
                bump("b")(current)
            })
            .unwrap();
        assert_eq!(rounds, 2);
        assert!(w.publication.is_published());
        assert_eq!(remote_value(&a), 4);

        // Several records in one push.
        let keys = ["x".to_string(), "y".to_string()];
        let w = Records::<Counter>::new(&a)
            .publish_each(Some("origin"), &keys, |_, current| bump("a")(current))
            .unwrap();
        assert_eq!(w.commits.len(), 2);

        // Offline: written here, said why.
        let w = Records::<Counter>::new(&a)
            .publish(None, &key, bump("a"))
            .unwrap();
        assert_eq!(
            w.publication.warning().unwrap(),
            format!("not published: {OFFLINE}; `git swarm sync` publishes it")
        );
        // a's local ref was at 3 (b published 4 since): both moved, a
        // local change only `sync` can join.
        let pending = crate::store::remote::pending(&a, "origin").unwrap();
        assert_eq!(pending.count(), 1);
        assert_eq!(pending.diverged, [Counter::refname(&key)]);
    }
}
