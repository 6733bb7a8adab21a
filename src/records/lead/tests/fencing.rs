//! Leadership rules: fencing: stale epochs and ties.

use super::*;

// ---- fencing: stale epochs and ties ------------------------------------------

#[test]
fn a_leader_whose_epoch_moved_on_is_fenced_from_every_leader_only_command() {
    let rec = led("bob", 3, &["alice", "bob"], LIVE);
    let mut f = facts();
    f.last_led = Some(2);
    let ops = [
        renew(None),
        handover("bob", false),
        Op::Release,
        Op::Push {
            refspecs: strings(&["HEAD:main"]),
        },
        Op::Succession {
            succession: strings(&["alice"]),
        },
    ];
    for op in &ops {
        assert!(op.needs_history(Some(&rec), "alice"));
        let e = refused(decide_with(Some(&rec), "alice", op, &f));
        assert_eq!(e.code, Code::LeadFenced, "{op:?}");
        assert_eq!(e.exit_code(), 3);
        assert_eq!(
            e.message,
            "you led plan 'p' at epoch 2, which is no longer current: bob leads at epoch 3"
        );
        assert_eq!(
            e.hints,
            [
                "stand down: merges, tags and publishes belong to the current leader",
                "see the record with `git swarm lead status --plan p`"
            ]
        );
    }
}

#[test]
fn a_fenced_leader_stays_fenced_after_the_plan_is_released() {
    let mut f = facts();
    f.last_led = Some(2);
    let e = refused(decide_with(Some(&released(3)), "alice", &renew(None), &f));
    assert_eq!(e.code, Code::LeadFenced);
    assert!(e.message.ends_with("nobody leads (released at epoch 3)"));
}

#[test]
fn an_epoch_tie_is_not_fencing() {
    // The record names someone else at the very epoch the actor last led
    // (only a release keeps the epoch): not fenced, just not the leader.
    let mut f = facts();
    f.last_led = Some(3);
    let e = refused(decide_with(Some(&released(3)), "alice", &renew(None), &f));
    assert_eq!(e.code, Code::NotLeader);
}

#[test]
fn the_current_leader_needs_no_history() {
    let rec = led("alice", 2, &["alice"], LIVE);
    assert!(!renew(None).needs_history(Some(&rec), "alice"));
    assert!(!renew(None).needs_history(None, "alice"));
    assert!(!claim(&["bob"]).needs_history(Some(&rec), "bob"));
    assert!(!takeover(false).needs_history(Some(&rec), "bob"));
}

#[test]
fn the_last_epoch_led_walks_back_to_the_actor_and_stops_there() {
    let history = vec![
        led("carol", 4, &[], LIVE),
        led("bob", 3, &[], LIVE),
        led("alice", 2, &[], LIVE),
    ];
    // Older versions are never read once the answer is known.
    let stream = history
        .into_iter()
        .map(Ok)
        .chain(std::iter::once_with(|| panic!("read too far")));
    assert_eq!(last_epoch_led(stream, "alice").unwrap(), Some(2));
    let history = vec![Ok(led("bob", 3, &[], LIVE)), Ok(led("bob", 2, &[], LIVE))];
    assert_eq!(last_epoch_led(history, "alice").unwrap(), None);
}

#[test]
fn a_leader_who_released_is_not_fenced_by_later_epochs() {
    let mut own_release = released(2);
    own_release.leader = None;
    let history = vec![
        Ok(led("bob", 3, &[], LIVE)),
        Ok(own_release),
        Ok(led("alice", 2, &[], LIVE)),
    ];
    assert_eq!(last_epoch_led(history, "alice").unwrap(), None);
    // A release at another epoch than the actor's is not theirs.
    let history = vec![Ok(released(5)), Ok(led("alice", 4, &[], LIVE))];
    assert_eq!(last_epoch_led(history, "alice").unwrap(), Some(4));
}

#[test]
fn an_unreadable_version_in_the_history_is_an_error() {
    let history = vec![
        Ok(led("bob", 3, &[], LIVE)),
        Err(Error::new(Code::YamlInvalid, "broken")),
    ];
    let e = last_epoch_led(history, "alice").unwrap_err();
    assert_eq!(e.code, Code::YamlInvalid);
}
