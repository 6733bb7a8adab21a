use super::*;
use crate::error::Result;
use crate::store::records::testkit::{self, git, N};
use crate::store::records::{Record, Records};
use crate::store::{Event, Store};

/// Both kinds' records bumped in one round (by `by`: two clones that
/// decide alike still write two commits).
fn bump_both(txn: &mut Txn<'_>, key: &String, by: &str) -> Result<(u64, u64)> {
    let c = txn.current::<N<0>>(key)?.map_or(0, |v| v.value.0) + 1;
    let s = txn.current::<N<1>>(key)?.map_or(0, |v| v.value.0) + 10;
    txn.write(key, &N::<0>(c), &Event::new("bump", by, "bump"))?;
    txn.write(key, &N::<1>(s), &Event::new("bump", by, "bump"))?;
    Ok((c, s))
}

#[test]
fn records_of_two_kinds_move_together_online_and_offline() {
    let (_tmp, stores) = testkit::clones(2);
    let mut stores = stores.into_iter();
    let (a, b) = (stores.next().unwrap(), stores.next().unwrap());
    let key = "k".to_string();
    let refs = [N::<0>::refname(&key), N::<1>::refname(&key)];
    let publish = |store| Publish::new(store, Some("origin")).fetch(refs.clone());

    // One push of both.
    let done = publish(&a).run(|txn| bump_both(txn, &key, "ann")).unwrap();
    assert_eq!((done.then, done.commits.len()), ((1, 10), 2));
    assert!(done.publication.is_published());

    // b loses a race on one of the two: the whole push is refused, and
    // the next round decides on what a published.
    let mut seen = Vec::new();
    let done = publish(&b)
        .run(|txn| {
            seen.push(txn.rejected().is_some());
            if txn.attempt() == 1 {
                publish(&a)
                    .run(|t| {
                        let s = t.current::<N<1>>(&key)?.unwrap().value.0 + 10;
                        t.write(&key, &N::<1>(s), &Event::new("bump", "ann", "bump"))
                    })
                    .unwrap();
            }
            bump_both(txn, &key, "bob")
        })
        .unwrap();
    assert_eq!(seen, [false, true]);
    assert_eq!(done.then, (2, 30), "decided again on the winner's score");

    // Offline: one local CAS transaction of both refs; a ref another
    // local writer moved meanwhile fails both, and the round is re-run.
    let local = |store: &Store| {
        let c = Records::<N<0>>::new(store)
            .load(&key)
            .unwrap()
            .unwrap()
            .value
            .0;
        let s = Records::<N<1>>::new(store)
            .load(&key)
            .unwrap()
            .unwrap()
            .value
            .0;
        (c, s)
    };
    let before = local(&b);
    let mut rounds = 0;
    let done = Publish::new(&b, None)
        .run(|txn| {
            rounds += 1;
            let decided = bump_both(txn, &key, "bob")?;
            if rounds == 1 {
                Records::<N<1>>::new(&b)
                    .update(&key, |_| {
                        Ok(super::super::Update::Write(
                            N(100),
                            Event::new("set", "ann", "set"),
                        ))
                    })
                    .unwrap();
                assert_eq!(local(&b), (before.0, 100), "nothing moved yet");
            }
            Ok(decided)
        })
        .unwrap();
    assert_eq!(rounds, 2);
    assert_eq!(done.then, (before.0 + 1, 110));
    assert_eq!(local(&b), (before.0 + 1, 110));
    assert!(!done.publication.is_published());
}

/// The two records of a round offline, and a local writer that moves
/// the second between the round's read and its landing: that round
/// moves neither (never the first without its companion), the next
/// decides again on what the other writer left and moves both.
#[test]
fn offline_companion_refs_move_all_or_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    git(tmp.path(), &["init", "--quiet", "a"]);
    let a = Store::open(&tmp.path().join("a")).unwrap();
    let key = "k".to_string();
    let ev = || Event::new("set", "ann", "set");
    Records::<N<0>>::new(&a).create(&key, &N(1), &ev()).unwrap();
    Records::<N<1>>::new(&a)
        .create(&key, &N(10), &ev())
        .unwrap();
    let local = |store: &Store| {
        let c = Records::<N<0>>::new(store).load(&key).unwrap().unwrap();
        let s = Records::<N<1>>::new(store).load(&key).unwrap().unwrap();
        (c.value.0, s.value.0)
    };
    let mut seen = Vec::new();
    Publish::new(&a, None)
        .run(|txn| {
            seen.push(local(&a));
            let c = txn.current::<N<0>>(&key)?.unwrap().value.0;
            let s = txn.current::<N<1>>(&key)?.unwrap().value.0;
            txn.write(&key, &N::<0>(c + 1), &ev())?;
            txn.write(&key, &N::<1>(s + 10), &ev())?;
            if txn.attempt() == 1 {
                Records::<N<1>>::new(&a)
                    .update(&key, |_| Ok(super::super::Update::Write(N(100), ev())))
                    .unwrap();
            }
            Ok(())
        })
        .unwrap();
    assert_eq!(
        seen,
        [(1, 10), (1, 100)],
        "the first ref did not move alone"
    );
    assert_eq!(local(&a), (2, 110));
}
