//! [`Records::at_many`]: many versions of one kind read at once, as a
//! listing reads them. What the record cache holds comes from it; the
//! rest is read from git on this thread (the repository handle is not
//! shared between threads) and parsed, checked and encoded for the cache
//! on as many threads as the machine has cores. A cold listing of
//! thousands of records spends most of its time parsing YAML, which is
//! pure work on bytes.

use std::sync::{mpsc, Mutex};

use gix::ObjectId;

use super::{Record, RecordKey, Records, Versioned};
use crate::error::Result;
use crate::store::yaml::Files;

/// Fewer misses than this are parsed on this thread: starting threads
/// costs more than it saves.
const PARALLEL_FROM: usize = 32;

/// The threads that parse `misses` versions (0: parse them here).
fn parsers(misses: usize) -> usize {
    if misses < PARALLEL_FROM {
        return 0;
    }
    std::thread::available_parallelism().map_or(1, |n| n.get().min(8))
}

/// What a parser thread gives back for one version: the value (or why it
/// cannot be read) and its cache entry (tags, bytes) when it has one.
type Parsed<R> = (usize, Result<R>, Option<(u8, Vec<u8>)>);

impl<R: Record> Records<'_, R> {
    /// [`Records::at`] of each of `versions`, in their order.
    pub fn at_many(&self, versions: &[(R::Key, ObjectId)]) -> Vec<Result<Versioned<R>>> {
        let mut out: Vec<Option<Result<Versioned<R>>>> = Vec::with_capacity(versions.len());
        let mut misses = Vec::new();
        for (i, (key, commit)) in versions.iter().enumerate() {
            let path = key.to_path();
            // Before the cache: a version that is not trusted is never used.
            if let Err(e) = self.store.trusted(R::NAMESPACE, R::KIND, &path, *commit) {
                out.push(Some(Err(e)));
                continue;
            }
            match self.cached(key, *commit, &path) {
                Some(v) => out.push(Some(Ok(v))),
                None => {
                    out.push(None);
                    misses.push(i);
                }
            }
        }
        match parsers(misses.len()) {
            0 => {
                for i in misses {
                    let (key, commit) = &versions[i];
                    out[i] = Some(self.read(key, *commit, &key.to_path(), &Self::what(key)));
                }
            }
            n => self.parse_apart(versions, &misses, n, &mut out),
        }
        out.into_iter()
            .map(|v| v.expect("every version is read once"))
            .collect()
    }

    /// Read each of `misses` here and parse it on one of `n` threads.
    fn parse_apart(
        &self,
        versions: &[(R::Key, ObjectId)],
        misses: &[usize],
        n: usize,
        out: &mut [Option<Result<Versioned<R>>>],
    ) {
        let cache = &self.store.cache;
        let keep = cache.enabled();
        // Bounded: the files read wait for a parser, not in memory.
        let (files_tx, files_rx) = mpsc::sync_channel::<(usize, Files)>(4 * n);
        let files_rx = Mutex::new(files_rx);
        let (parsed_tx, parsed_rx) = mpsc::channel::<Parsed<R>>();
        std::thread::scope(|s| {
            for _ in 0..n {
                let (files_rx, parsed_tx) = (&files_rx, parsed_tx.clone());
                s.spawn(move || loop {
                    let next = files_rx
                        .lock()
                        .map_err(|_| ())
                        .and_then(|rx| rx.recv().map_err(|_| ()));
                    let Ok((i, files)) = next else { break };
                    let key = &versions[i].0;
                    let value = R::from_files(&files, key, &Self::what(key));
                    let entry = match &value {
                        Ok(v) if keep => v.to_cache().map(|bytes| (v.cache_tags(), bytes)),
                        _ => None,
                    };
                    if parsed_tx.send((i, value, entry)).is_err() {
                        break;
                    }
                });
            }
            drop(parsed_tx);
            for &i in misses {
                match self.store.read_commit(versions[i].1) {
                    Ok(rec) => {
                        if files_tx.send((i, rec.files)).is_err() {
                            break;
                        }
                    }
                    Err(e) => out[i] = Some(Err(e)),
                }
            }
            drop(files_tx);
            for (i, value, entry) in parsed_rx {
                let (key, commit) = &versions[i];
                if let Some((tags, bytes)) = entry {
                    cache.insert(R::NAMESPACE, *commit, &key.to_path(), tags, bytes);
                }
                out[i] = Some(value.map(|value| Versioned {
                    key: key.clone(),
                    value,
                    commit: *commit,
                }));
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Code, Error};
    use crate::store::records::testkit::{self, N};
    use crate::store::records::Diverged;
    use crate::store::{Event, Store};

    /// A toy kind the record cache keeps, in the namespace of `N<0>`.
    #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Note {
        n: u64,
    }

    impl Record for Note {
        const NAMESPACE: &'static str = "counts";
        const KIND: &'static str = "note";
        const DIVERGED: Diverged = Diverged::MergeJournals;
        type Key = String;
        crate::store::record_cache::json_cache!();
        fn to_files(&self) -> Result<Files> {
            Ok(Files::from([(
                "note".into(),
                serde_json::to_vec(self).unwrap(),
            )]))
        }
        fn from_files(files: &Files, _key: &String, what: &str) -> Result<Self> {
            let note = files
                .get("note")
                .and_then(|b| serde_json::from_slice(b).ok());
            note.ok_or_else(|| Error::new(Code::RecordInvalid, format!("{what}: no note")))
        }
    }

    #[test]
    fn many_versions_read_cold_come_back_in_order_with_the_unreadable_one_in_place() {
        let (tmp, stores) = testkit::clones(1);
        let a = &stores[0];
        let event = Event::new("note", "t", "note");
        let keys: Vec<String> = (0..100).map(|i| format!("k{i:03}")).collect();
        for (i, key) in keys.iter().enumerate() {
            if i == 50 {
                // Another kind's files in the namespace: not a note.
                Records::<N<0>>::new(a).create(key, &N(7), &event).unwrap();
            } else {
                Records::<Note>::new(a)
                    .create(key, &Note { n: i as u64 }, &event)
                    .unwrap();
            }
        }
        let versions: Vec<(String, ObjectId)> = keys
            .iter()
            .map(|k| (k.clone(), a.ref_target(&Note::refname(k)).unwrap().unwrap()))
            .collect();
        assert!(
            parsers(versions.len()) >= 1,
            "100 misses are parsed on threads"
        );

        let read = Records::<Note>::new(a).at_many(&versions);
        assert_eq!(read.len(), 100);
        for (i, (got, (key, commit))) in read.iter().zip(&versions).enumerate() {
            match got {
                Ok(v) => {
                    assert_ne!(i, 50);
                    assert_eq!((&v.key, v.commit, v.value.n), (key, *commit, i as u64));
                }
                Err(e) => {
                    assert_eq!(i, 50, "{e:?}");
                    assert_eq!(e.code, Code::RecordInvalid);
                    assert!(
                        e.message.contains("refs/swarm/counts/k050"),
                        "{}",
                        e.message
                    );
                }
            }
        }

        // What was read cleanly is in the cache for the next process; the
        // unreadable version is not (it fails again on every read).
        a.cache.flush();
        let again = Store::open(&tmp.path().join("a")).unwrap();
        let notes = Records::<Note>::new(&again);
        assert!(notes.cached_tags(&keys[0], versions[0].1).is_some());
        assert!(notes.cached_tags(&keys[99], versions[99].1).is_some());
        assert!(notes.cached_tags(&keys[50], versions[50].1).is_none());
        let warm = notes.at_many(&versions);
        assert_eq!(warm[99].as_ref().unwrap().value, Note { n: 99 });
        assert_eq!(warm[50].as_ref().unwrap_err().code, Code::RecordInvalid);
    }
}
