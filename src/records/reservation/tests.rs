use super::*;

fn p(s: &str) -> Pattern {
    normalise(s, "").unwrap()
}

fn t(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn req(holder: &str, paths: &[&str], shared: bool) -> Request {
    Request {
        holder: holder.into(),
        paths: paths.iter().map(|s| p(s)).collect(),
        shared,
        task: Some("T1".into()),
        reason: None,
        lease: SignedDuration::from_hours(1),
    }
}

const NOW: &str = "2026-01-01T00:00:00Z";

#[test]
fn paths_are_normalised_relative_to_the_root() {
    assert_eq!(normalise("./src//a.rs", "").unwrap().0, "src/a.rs");
    assert_eq!(normalise("a.rs", "src/lib").unwrap().0, "src/lib/a.rs");
    assert_eq!(normalise("docs/", "").unwrap().0, "docs/");
    assert_eq!(normalise("src/*.rs", "").unwrap().shape(), Shape::Glob);
    assert_eq!(normalise("src/", "").unwrap().shape(), Shape::Dir);
    assert_eq!(normalise("src", "").unwrap().shape(), Shape::File);
}

#[test]
fn hostile_paths_are_refused() {
    for bad in [
        "",
        " ",
        "/etc/passwd",
        "../x",
        "a/../../b",
        "a/..",
        "~/x",
        "C:/x",
        "a\\b",
        "a\u{1b}[31m",
        "a\nb",
        ".git/config",
        "x/.GIT/hooks",
        ".",
        "./",
        "a\tb",
        "[",
        "src/[ab",
    ] {
        let e = normalise(bad, "").unwrap_err();
        assert_eq!(e.code, Code::ReservationPathInvalid, "{bad:?}");
        assert!(e.message.contains("nothing was written"), "{}", e.message);
        assert!(!e.message.contains('\u{1b}'));
    }
    // '..' from a subdirectory is refused too, not resolved.
    assert!(normalise("../b", "src").is_err());
}

#[test]
fn files_dirs_and_globs_overlap_as_documented() {
    let o = |a: &str, b: &str| overlap(&p(a), &p(b), false) && overlap(&p(b), &p(a), false);
    let n = |a: &str, b: &str| !overlap(&p(a), &p(b), false) && !overlap(&p(b), &p(a), false);
    assert!(o("src/a.rs", "src/a.rs"));
    assert!(n("src/a.rs", "src/b.rs"));
    assert!(o("src/", "src/a.rs"));
    assert!(o("src/", "src/deep/a.rs"));
    assert!(n("src/", "srcx/a.rs"));
    assert!(o("src/", "src/deep/"));
    assert!(n("src/", "docs/"));
    assert!(o("src/*.rs", "src/a.rs"));
    assert!(n("src/*.rs", "src/deep/a.rs"));
    assert!(o("src/**/*.rs", "src/deep/a.rs"));
    assert!(o("src/**", "src/a/b/c"));
    assert!(n("src/*.rs", "src/a.md"));
    assert!(o("src/*.rs", "src/"));
    assert!(
        o("src/*.rs", "src/deep/"),
        "conservative: a glob under a directory overlaps it"
    );
    assert!(
        o("*.rs", "src/"),
        "conservative: a glob whose literal prefix is a prefix of the directory"
    );
    assert!(n("src/*.rs", "docs/"));
    assert!(o("src/*.rs", "src/a*.rs"));
    assert!(o("src/*.rs", "**/*.rs"));
    assert!(n("src/*.rs", "src/*.md"));
    assert!(n("src/*", "docs/*"));
    assert!(o("src/[ab].rs", "src/a.rs"));
    assert!(n("src/[ab].rs", "src/c.rs"));
    assert!(o("src/[!c].rs", "src/a.rs"));
    assert!(o("src/?.rs", "src/a.rs"));
    assert!(n("src/?.rs", "src/ab.rs"));
}

#[test]
fn case_is_folded_only_when_asked() {
    assert!(!overlap(&p("SRC/A.rs"), &p("src/a.rs"), false));
    assert!(overlap(&p("SRC/A.rs"), &p("src/a.rs"), true));
    assert!(overlap(&p("Src/"), &p("src/*.RS"), true));
    assert!(covers(&p("Docs/"), "docs/x.md", true));
    assert!(!covers(&p("Docs/"), "docs/x.md", false));
}

#[test]
fn exclusive_conflicts_shared_only_with_exclusive() {
    let now = t(NOW);
    let mut l = Ledger::default();
    let a = reserve(&mut l, &req("alice", &["src/"], false), now, false).unwrap();
    assert_eq!(a.id, "r1");
    let e = reserve(&mut l, &req("bob", &["src/a.rs"], false), now, false).unwrap_err();
    assert_eq!(e.code, Code::ReservationConflict);
    assert_eq!(e.code.exit_code(), 3);
    assert!(e.message.contains("held by alice"), "{}", e.message);
    assert!(e.message.contains("task T1"), "{}", e.message);
    assert!(reserve(&mut l, &req("bob", &["src/a.rs"], true), now, false).is_err());
    // Non-overlapping: fine.
    assert_eq!(
        reserve(&mut l, &req("bob", &["docs/"], true), now, false)
            .unwrap()
            .id,
        "r2"
    );
    // Shared with shared: fine; exclusive against shared: conflict.
    assert_eq!(
        reserve(&mut l, &req("carol", &["docs/x.md"], true), now, false)
            .unwrap()
            .id,
        "r3"
    );
    let e = reserve(&mut l, &req("dave", &["docs/*.md"], false), now, false).unwrap_err();
    assert!(
        e.message.contains("bob") && e.message.contains("carol"),
        "{}",
        e.message
    );
    // One's own reservations never conflict with oneself.
    assert_eq!(
        reserve(&mut l, &req("alice", &["src/b.rs"], false), now, false)
            .unwrap()
            .id,
        "r4"
    );
}

#[test]
fn the_same_paths_again_renew_the_entry() {
    let now = t(NOW);
    let mut l = Ledger::default();
    let a = reserve(&mut l, &req("alice", &["src/", "docs/"], false), now, false).unwrap();
    let later = t("2026-01-01T00:30:00Z");
    let b = reserve(
        &mut l,
        &req("alice", &["docs/", "src/"], false),
        later,
        false,
    )
    .unwrap();
    assert_eq!(a.id, b.id);
    assert_eq!(b.lease_until, "2026-01-01T01:30:00Z");
    assert_eq!(l.entries.len(), 1);
    assert_eq!(l.next, 2);
}

#[test]
fn leases_end_and_expired_entries_block_nobody() {
    let mut l = Ledger::default();
    reserve(&mut l, &req("alice", &["src/"], false), t(NOW), false).unwrap();
    let after = t("2026-01-01T01:00:00Z");
    assert!(l.entries[0].expired(after));
    assert!(!l.entries[0].live(after));
    assert_eq!(
        judge(&l, "bob", "src/a.rs", t(NOW), false),
        Verdict::Blocked(&l.entries[0])
    );
    assert_eq!(
        judge(&l, "bob", "src/a.rs", after, false),
        Verdict::Expired(&l.entries[0])
    );
    assert_eq!(judge(&l, "alice", "src/a.rs", t(NOW), false), Verdict::Free);
    assert_eq!(judge(&l, "bob", "docs/a.md", t(NOW), false), Verdict::Free);
    let l2 = l.clone();
    let mut l = l;
    let e = reserve(&mut l, &req("bob", &["src/x"], false), after, false).unwrap();
    assert_eq!(e.id, "r2");
    // Shared entries never block a commit.
    let mut s = Ledger::default();
    reserve(&mut s, &req("alice", &["src/"], true), t(NOW), false).unwrap();
    assert_eq!(judge(&s, "bob", "src/a.rs", t(NOW), false), Verdict::Free);
    // Pruning keeps an expired entry for a week, then drops it.
    let mut pruned = l2.clone();
    prune(&mut pruned, t("2026-01-05T00:00:00Z"));
    assert_eq!(pruned.entries.len(), 1);
    prune(&mut pruned, t("2026-01-09T00:00:00Z"));
    assert!(pruned.entries.is_empty());
}

#[test]
fn release_by_id_or_path_only_by_the_holder() {
    let now = t(NOW);
    let mut l = Ledger::default();
    reserve(&mut l, &req("alice", &["src/"], false), now, false).unwrap();
    reserve(&mut l, &req("alice", &["docs/x.md"], false), now, false).unwrap();
    let e = release(&mut l, "bob", &[("r1".into(), None)], now, false).unwrap_err();
    assert_eq!(e.code, Code::ReservationNotHolder);
    let e = release(&mut l, "alice", &[("r9".into(), None)], now, false).unwrap_err();
    assert_eq!(e.code, Code::ReservationNotFound);
    let ids = release(
        &mut l,
        "alice",
        &[("docs/x.md".into(), Some(p("docs/x.md")))],
        now,
        false,
    )
    .unwrap();
    assert_eq!(ids, ["r2"]);
    assert_eq!(l.entries.len(), 1, "released entries leave the live ledger");
    assert_eq!(
        release(&mut l, "alice", &[("r1".into(), None)], now, false).unwrap(),
        ["r1"]
    );
    assert!(l.entries.is_empty());
    assert_eq!(l.next, 3, "ids are never reused");
}

#[test]
fn recover_takes_only_an_expired_entry_and_records_why() {
    let mut l = Ledger::default();
    reserve(&mut l, &req("alice", &["src/"], false), t(NOW), false).unwrap();
    let lease = SignedDuration::from_hours(1);
    let e = recover(&mut l, "bob", "r1", "alice is away", lease, t(NOW), false).unwrap_err();
    assert_eq!(e.code, Code::ReservationNotExpired);
    assert_eq!(l.entries.len(), 1);
    let e = recover(&mut l, "bob", "r7", "x", lease, t(NOW), false).unwrap_err();
    assert_eq!(e.code, Code::ReservationNotFound);
    let after = t("2026-01-01T02:00:00Z");
    let new = recover(&mut l, "bob", "r1", "alice is away", lease, after, false).unwrap();
    assert_eq!(new.holder, "bob");
    assert_eq!(new.id, "r2");
    let from = new.recovered_from.unwrap();
    assert_eq!(from.previous_holder, "alice");
    assert_eq!(from.expired_at, "2026-01-01T01:00:00Z");
    assert_eq!(from.reason, "alice is away");
    assert_eq!(
        judge(&l, "alice", "src/a.rs", after, false),
        Verdict::Blocked(&l.entries[0])
    );
}

#[test]
fn the_ledger_round_trips_and_a_forged_one_is_refused() {
    let mut l = Ledger::default();
    reserve(&mut l, &req("alice", &["src/*.rs"], false), t(NOW), false).unwrap();
    let files = l.to_files().unwrap();
    let back = Ledger::from_files(&files, &LEDGER.to_string(), "x").unwrap();
    assert_eq!(back, l);
    let forged = String::from_utf8(files[RECORD_FILE].clone())
        .unwrap()
        .replace("holder: alice", "holder: \"al\\u001bice\"");
    assert!(parse_ledger(forged.as_bytes(), "forged").is_err());
}

#[test]
fn the_setting_defaults_to_enforce() {
    assert_eq!(Enforce::parse(None), Enforce::Enforce);
    assert_eq!(Enforce::parse(Some("warn")), Enforce::Warn);
    assert_eq!(Enforce::parse(Some("off")), Enforce::Off);
    assert_eq!(Enforce::parse(Some("enforec")), Enforce::Enforce);
}

#[test]
fn a_name_reserved_as_a_file_also_covers_a_directory_of_that_name() {
    // One path cannot be a file and a directory: reserving `dir4` holds
    // what `dir4/` would hold, and overlaps it.
    assert!(covers(&p("dir8"), "dir8/z", false));
    assert!(covers(&p("dir8"), "dir8", false));
    assert!(!covers(&p("dir8"), "dir80/z", false));
    assert!(!covers(&p("dir8"), "dir", false));
    assert!(overlap(&p("dir4"), &p("dir4/"), false));
    assert!(overlap(&p("dir4/"), &p("dir4"), false));
    assert!(overlap(&p("a"), &p("a/b/"), false));
    assert!(overlap(&p("a"), &p("a/b.rs"), false));
    assert!(overlap(&p("a/b.rs"), &p("a"), false));
    assert!(overlap(&p("a"), &p("a/*.rs"), false));
    assert!(overlap(&p("a/**"), &p("a"), false));
    assert!(!overlap(&p("a"), &p("ab/"), false));
    assert!(!overlap(&p("a"), &p("ab"), false));
    assert!(!overlap(&p("a"), &p("b/*.rs"), false));
    assert!(overlap(&p("src"), &p("src*/y"), false));
    assert!(overlap(&p("src"), &p("s*/x"), false));
    assert!(overlap(&p("src/a"), &p("**/b"), false));
    assert!(!overlap(&p("docs"), &p("*.md"), false));
    assert!(overlap(&p("docs"), &p("d*s/x"), false));
    assert!(!overlap(&p("docs"), &p("e*/x"), false));
}

#[test]
fn a_handover_moves_the_predecessors_entries_and_names_the_rest() {
    let now = t(NOW);
    let mut l = Ledger::default();
    reserve(&mut l, &req("ann", &["src/"], false), now, false).unwrap();
    reserve(&mut l, &req("ann", &["docs/"], false), now, false).unwrap();
    reserve(&mut l, &req("cy", &["lib/"], false), now, false).unwrap();
    let ids: Vec<String> = ["r1", "r3", "r9"].iter().map(|s| s.to_string()).collect();
    let later = "2026-01-01T05:00:00Z";
    let (moved, not_moved) = hand_over(&mut l, &ids, "ann", "bob", later);
    assert_eq!(moved, ["r1"]);
    assert_eq!(not_moved.len(), 2, "{not_moved:?}");
    assert!(not_moved[0].contains("held by cy"), "{not_moved:?}");
    assert!(not_moved[1].contains("r9"), "{not_moved:?}");
    let r1 = l.entries.iter().find(|e| e.id == "r1").unwrap();
    assert_eq!(
        (r1.holder.as_str(), r1.lease_until.as_str()),
        ("bob", later)
    );
    assert_eq!(l.entries[1].holder, "ann", "r2 was not handed over");
    // Again: already bob's, nothing changes.
    let before = l.clone();
    let (moved, _) = hand_over(&mut l, &ids[..1], "ann", "bob", later);
    assert_eq!(moved, ["r1"]);
    assert_eq!(l, before);
}

#[test]
fn a_done_task_releases_its_holders_entries_for_it_only() {
    let now = t(NOW);
    let mut l = Ledger::default();
    let mut take = |holder: &str, path: &str, task: Option<&str>, lease_h: i64| {
        let mut r = req(holder, &[path], false);
        r.task = task.map(String::from);
        r.lease = SignedDuration::from_hours(lease_h);
        reserve(&mut l, &r, now, false).unwrap().id
    };
    let bare = take("ann", "a/", Some("t1"), 4);
    let full = take("ann", "b/", Some("p/t1"), 4);
    let other_task = take("ann", "c/", Some("t2"), 4);
    let other_plan = take("ann", "d/", Some("q/t1"), 4);
    let untied = take("ann", "e/", None, 4);
    let others = take("bob", "f/", Some("p/t1"), 4);
    // A lapsed entry would linger in the live ledger: released too.
    let lapsed = take("ann", "g/", Some("p/t1"), 1);
    let later = now + SignedDuration::from_mins(90);
    let ids = release_task(&mut l, "ann", "p", "t1", later);
    assert_eq!(ids, vec![bare, full, lapsed]);
    let left: Vec<&str> = l.entries.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(left, vec![&other_task[..], &other_plan, &untied, &others]);
    // Nothing more to release: nothing changes.
    let before = l.clone();
    assert!(release_task(&mut l, "ann", "p", "t1", later).is_empty());
    assert_eq!(l, before);
}
