//! Leadership rules: arguments, errors, record.

use super::*;

// ---- arguments, errors, record -------------------------------------------------

#[test]
fn arguments_are_checked_before_anything_is_read() {
    let e = validate(&Op::Succession { succession: vec![] }).unwrap_err();
    assert_eq!(e.message, "a succession names at least one address");
    let e = validate(&Op::Succession {
        succession: strings(&["bob", "bob"]),
    })
    .unwrap_err();
    assert_eq!(e.message, "'bob' appears twice in the succession");
    let e = validate(&Op::Takeover {
        reason: "  ".into(),
        force: false,
        lease: None,
    })
    .unwrap_err();
    assert_eq!(e.message, "a takeover needs a --reason");
    assert_eq!(
        validate(&claim(&["no spaces"])).unwrap_err().code,
        Code::NameInvalid
    );
    assert_eq!(
        validate(&handover("x/y", false)).unwrap_err().code,
        Code::NameInvalid
    );
    validate(&claim(&["alice", "bob"])).unwrap();
    validate(&Op::Release).unwrap();
}

#[test]
fn lead_push_publishes_code_refs_only() {
    for bad in ["", "HEAD:refs/swarm/plans/p", "refs/swarm/lead/p"] {
        let e = check_push_target("p", bad).unwrap_err();
        assert_eq!(e.code, Code::Usage, "{bad}");
    }
    check_push_target("p", "HEAD:main").unwrap();
    assert_eq!(refspec_source("+HEAD:main"), "HEAD");
    assert_eq!(refspec_source(":refs/tags/v1"), "");
    assert_eq!(refspec_source("main"), "main");
}

#[test]
fn the_lost_race_names_the_winner() {
    let w = led("bob", 3, &[], LIVE);
    let id = gix::ObjectId::empty_tree(gix::hash::Kind::Sha1);
    let e = race_lost("p", Verb::Takeover, Some((&w, id)), true);
    assert_eq!(e.code, Code::LeadRaceLost);
    assert_eq!(e.exit_code(), 3);
    assert_eq!(
        e.message,
        "lost the race to takeover plan 'p': bob leads at epoch 3 (the remote accepted their update first)"
    );
    assert_eq!(e.detail.unwrap()["commit"], id.to_string());
    let e = race_lost("p", Verb::Claim, None, false);
    assert_eq!(
        e.message,
        "lost the race to claim plan 'p': the record changed"
    );
    let e = push_rejected("p", &strings(&["! refs/heads/main rejected"]));
    assert_eq!(
        e.message,
        "the remote refused the push for plan 'p'; nothing moved:\n  ! refs/heads/main rejected"
    );
}

#[test]
fn a_succession_without_the_leader_is_worth_a_warning() {
    let list = strings(&["bob"]);
    assert!(succession_omits(Verb::Claim, &list, "alice"));
    assert!(succession_omits(Verb::Succession, &list, "alice"));
    assert!(!succession_omits(Verb::Claim, &list, "bob"));
    assert!(!succession_omits(Verb::Handover, &list, "alice"));
}

#[test]
fn the_record_round_trips_byte_for_byte() {
    let mut rec = led("alice", 2, &["alice", "bob"], LIVE);
    rec.extra
        .insert("future".into(), serde_yaml_ng::Value::from(7));
    let files = rec.to_files().unwrap();
    let yaml = String::from_utf8(files[RECORD_FILE].clone()).unwrap();
    assert_eq!(
        yaml,
        "schema: swarm-lead/v1\nplan: p\nleader: alice\nepoch: 2\nsuccession:\n- alice\n- bob\nlanes:\n- api\nlease_until: 2026-01-01T12:30:00Z\nupdated_at: 2026-01-01T11:00:00Z\nreleased: false\nfuture: 7\n"
    );
    let back = LeadRecord::from_files(&files, &"p".to_string(), "x").unwrap();
    assert_eq!(back, rec);
    let e =
        LeadRecord::from_files(&Files::new(), &"p".to_string(), "refs/swarm/lead/p").unwrap_err();
    assert_eq!(e.message, "refs/swarm/lead/p has no lead.yaml");
    assert!(rec.is_finished(&"p".to_string(), &|_, _| true) == rec.released);
}
