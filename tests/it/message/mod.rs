//! Messages, inbox, wait, decide, escalate and state, against real clones
//! of one bare remote.

pub(crate) mod announce;

use std::path::Path;

use crate::support::fixture::{worktree, Swarm};
use crate::support::harness::TestEnv;
use crate::support::process::{finish, spawn};

const MESSAGES: &str = "refs/swarm/messages/";

/// The message refs of `dir` but the leadership announcements (`lead-e…`,
/// one per claim, handover or takeover: see tests/it/message/announce.rs).
fn posted(env: &TestEnv, dir: &std::path::Path) -> std::collections::BTreeMap<String, String> {
    let mut refs = env.refs(dir, MESSAGES);
    refs.retain(|k, _| !k.contains("/lead-e"));
    refs
}

fn ids(run: &crate::support::harness::Run) -> Vec<String> {
    run.json()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect()
}

fn inbox(env: &TestEnv, dir: &Path, who: &str, extra: &[&str]) -> crate::support::harness::Run {
    let mut args = vec!["inbox", "--json", "--as", who];
    args.extend_from_slice(extra);
    env.swarm(dir, &args).ok()
}

#[test]
fn concurrent_posts_from_three_clones_all_survive_in_one_order_everywhere() {
    let names = ["ann", "bob", "cat"];
    let (env, remote, clones) = Swarm::new(&names).parts();
    // Online, all at once: each is its own ref, so nobody loses a race.
    let children: Vec<_> = clones
        .iter()
        .zip(names)
        .map(|(dir, n)| {
            spawn(
                &env,
                dir,
                &[],
                &["notify", "all", &format!("online from {n}")],
            )
        })
        .collect();
    for (child, n) in children.into_iter().zip(names) {
        let run = finish(child, &format!("{n} notify"));
        assert_eq!(run.code, 0, "{run:#?}");
        assert!(run.stdout.contains("(published)"), "{run:#?}");
    }
    // Offline, then each syncs: posted "at the same time" on disconnected clones.
    for (dir, n) in clones.iter().zip(names) {
        env.swarm(
            dir,
            &["notify", "all", "--offline", &format!("offline from {n}")],
        )
        .ok()
        .stderr_has(
            "not published: offline (--offline, or no remote); `git swarm sync` publishes it",
        );
    }
    for dir in &clones {
        env.swarm(dir, &["sync"]).ok();
    }
    for dir in &clones {
        env.swarm(dir, &["sync"]).ok();
    }
    let on_remote = env.refs(&remote, MESSAGES);
    assert_eq!(on_remote.len(), 6, "{on_remote:#?}");
    let orders: Vec<Vec<String>> = clones
        .iter()
        .map(|dir| {
            assert_eq!(
                env.refs(dir, MESSAGES),
                on_remote,
                "every clone holds the same refs"
            );
            ids(&inbox(&env, dir, "dan", &["--all", "--offline"]))
        })
        .collect();
    assert_eq!(orders[0].len(), 6, "{orders:#?}");
    let mut unique = orders[0].clone();
    unique.dedup();
    assert_eq!(unique.len(), 6, "never duplicated");
    assert!(
        orders.iter().all(|o| o == &orders[0]),
        "one order everywhere: {orders:#?}"
    );
}

#[test]
fn the_cursor_survives_a_restart_and_peek_leaves_it() {
    let (env, _, clones) = Swarm::new(&["ann", "bob"]).parts();
    let (ann, bob) = (&clones[0], &clones[1]);
    env.swarm(ann, &["notify", "bob", "first"]).ok();
    env.swarm(ann, &["ask", "bob", "--plan", "p", "second?"])
        .ok();
    env.swarm(ann, &["notify", "cat", "not for bob"]).ok();
    let peek = inbox(&env, bob, "bob", &["--peek"]);
    assert_eq!(peek.json()["new"].as_array().unwrap().len(), 2);
    assert_eq!(peek.json()["advanced"], false);
    let cursor = bob.join(".git/swarm/inbox/bob");
    assert!(!cursor.exists(), "--peek writes no cursor");
    let read = inbox(&env, bob, "bob", &[]);
    assert_eq!(ids(&read), ids(&peek));
    assert_eq!(env.read(&cursor).lines().count(), 2);
    // A new process (a restart) sees nothing new.
    let again = inbox(&env, bob, "bob", &[]);
    assert!(ids(&again).is_empty(), "{again:#?}");
    env.swarm(ann, &["notify", "bob", "third"]).ok();
    let all = inbox(&env, bob, "bob", &["--all"]);
    assert_eq!(ids(&all).len(), 3);
    assert_eq!(all.json()["new"].as_array().unwrap().len(), 1);
    // --plan filters.
    let only_p = inbox(&env, bob, "bob", &["--all", "--plan", "p", "--peek"]);
    assert_eq!(ids(&only_p).len(), 1);
    // Who wrote it does not read it.
    assert!(ids(&inbox(&env, ann, "ann", &["--all"])).is_empty());
}

#[test]
fn wait_wakes_when_another_clone_posts_and_exits_1_at_its_timeout() {
    let (env, _, clones) = Swarm::new(&["ann", "bob"]).parts();
    let (ann, bob) = (&clones[0], &clones[1]);
    let waiting = spawn(
        &env,
        bob,
        &[],
        &[
            "wait",
            "--for",
            "message",
            "--json",
            "--timeout",
            "120s",
            "--interval",
            "100ms",
            "--max-interval",
            "300ms",
        ],
    );
    env.swarm(ann, &["notify", "bob", "--plan", "p", "wake up"])
        .ok();
    let woke = finish(waiting, "bob wait");
    assert_eq!(woke.code, 0, "{woke:#?}");
    let doc = woke.json();
    assert_eq!(doc["messages"][0]["body"], "wake up");
    assert!(doc["cost"]["fetches"].as_u64().unwrap() >= 1);
    // It was marked read: the inbox has nothing new.
    assert!(ids(&inbox(&env, bob, "bob", &[])).is_empty());

    // A 10-minute wait on the virtual clock: exit 1, and what it cost.
    let before = env.all_refs(bob);
    let timed_out = env
        .swarm_env(
            bob,
            &[("GIT_SWARM_VIRTUAL_WAITS", "1")],
            &["wait", "--for", "message", "--timeout", "10m", "--json"],
        )
        .err(1, "WAIT_TIMEOUT");
    let cost = &timed_out.json()["error"]["detail"]["cost"];
    assert_eq!(cost["slept_ms"], 600_000);
    let queries = cost["remote_queries"].as_u64().unwrap();
    assert!(
        (10..=20).contains(&queries),
        "backoff to the 60s ceiling: {cost}"
    );
    assert_eq!(cost["fetches"], 0, "nothing moved, nothing fetched");
    assert_eq!(env.all_refs(bob), before);

    // Other kinds: a leader change wakes `--for lead`.
    env.swarm(ann, &["plan", "new", "p"]).ok();
    let lead_wait = spawn(
        &env,
        bob,
        &[],
        &[
            "wait",
            "--for",
            "lead",
            "--plan",
            "p",
            "--json",
            "--timeout",
            "120s",
            "--interval",
            "100ms",
            "--max-interval",
            "300ms",
        ],
    );
    env.swarm(
        ann,
        &["lead", "claim", "--plan", "p", "--succession", "bob"],
    )
    .ok();
    let woke = finish(lead_wait, "bob wait lead");
    assert_eq!(woke.code, 0, "{woke:#?}");
    assert_eq!(woke.json()["refs"][0], "refs/swarm/lead/p");
    env.swarm(bob, &["wait", "--for", "nonsense", "--timeout", "1s"])
        .err(2, "USAGE");

    // The remote unreachable: rounds without news, still exit 1 at the timeout.
    let gone = env.root().join("gone.git");
    env.git(
        bob,
        &["remote", "set-url", "origin", gone.to_str().unwrap()],
    );
    let offline = env
        .swarm_env(
            bob,
            &[("GIT_SWARM_VIRTUAL_WAITS", "1")],
            &["wait", "--timeout", "1m", "--json"],
        )
        .err(1, "WAIT_TIMEOUT");
    let cost = &offline.json()["error"]["detail"]["cost"];
    assert!(cost["remote_errors"].as_u64().unwrap() >= 2, "{cost}");
    assert_eq!(cost["remote_errors"], cost["remote_queries"]);
}

#[test]
fn an_escalation_is_recorded_once_and_goes_to_the_leader() {
    let (env, remote, clones) = Swarm::new(&["ann", "bob"])
        .plan(0, "p")
        .leader(0, "bob")
        .sync(1)
        .parts();
    let (ann, bob) = (&clones[0], &clones[1]);
    let esc = env
        .swarm(
            bob,
            &[
                "escalate", "approval", "need", "prod", "access", "--plan", "p", "--task", "t1",
                "--json",
            ],
        )
        .ok();
    assert_eq!(
        esc.json()["message"]["to"],
        "ann",
        "`lead` resolves to the leader"
    );
    let before = posted(&env, &remote);
    assert_eq!(before.len(), 1);
    env.swarm(
        bob,
        &[
            "escalate", "approval", "need", "prod", "access", "--plan", "p", "--task", "t1",
        ],
    )
    .err(1, "ESCALATION_SENT");
    // From another clone too, once it knows.
    env.swarm(
        ann,
        &[
            "escalate", "approval", "need", "prod", "access", "--plan", "p", "--task", "t1",
        ],
    )
    .err(1, "ESCALATION_SENT");
    assert_eq!(posted(&env, &remote), before);
    assert_eq!(posted(&env, bob), before);
    // A different ask is a new escalation.
    env.swarm(
        bob,
        &["escalate", "approval", "need", "staging", "--plan", "p"],
    )
    .ok();
    // No leader: `notify lead` is refused, nothing written.
    let before = env.all_refs(ann);
    env.swarm(ann, &["notify", "lead", "--plan", "q", "hello"])
        .err(1, "NO_LEADER");
    assert_eq!(env.all_refs(ann), before);
    assert_eq!(posted(&env, &remote).len(), 2);
    let inbox = inbox(&env, ann, "ann", &[]);
    assert_eq!(ids(&inbox).len(), 2);
    // From a lane worktree (no --task): the plan is the lane's, and the lane
    // is reported blocked.
    env.swarm(ann, &["sync"]).ok();
    env.swarm(ann, &["lane", "new", "login", "--plan", "p"])
        .ok();
    let wt = ann.join("_swarm-worktrees/login");
    let esc = env
        .swarm(&wt, &["escalate", "access", "need", "a", "key", "--json"])
        .ok()
        .json();
    assert_eq!(esc["blocked_lane"], "login");
    assert_eq!(esc["message"]["plan"], "p");
    let log = env.swarm(ann, &["plan", "log", "p"]).ok();
    log.expect_stdout("blocked access need a key");
    log.expect_stdout("escalation: need a key");
}

#[test]
fn secrets_and_bad_replies_are_refused_and_write_nothing() {
    let (env, _, clones) = Swarm::new(&["ann"]).parts();
    let ann = &clones[0];
    let before = env.all_refs(ann);
    let run = env
        .swarm(
            ann,
            &[
                "notify",
                "bob",
                "the token is ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            ],
        )
        .err(2, "MESSAGE_SECRET");
    assert!(!run.stderr.contains("ghp_abcdef"), "never echoed");
    env.swarm(ann, &["reply", "nope", "yes"])
        .err(2, "MESSAGE_NOT_FOUND");
    env.swarm(ann, &["notify", "bob", " "])
        .err(2, "MESSAGE_INVALID");
    env.swarm(ann, &["notify", "bad..addr", "hi"])
        .err(2, "NAME_INVALID");
    // What no reader would accept is refused at the post: a control
    // character in the body (newlines are fine there) or in a one-line field.
    env.swarm(ann, &["notify", "bob", "multi\nline\u{1b}[2Jbody"])
        .err(2, "TEXT_INVALID")
        .stderr_has("`body` (U+001B)");
    env.swarm(ann, &["ask", "bob", "a\u{9b}question"])
        .err(2, "TEXT_INVALID");
    assert_eq!(env.all_refs(ann), before);
    env.swarm(ann, &["notify", "bob", "two\nlines are fine"])
        .ok();
    // A plan nobody knows here is most likely a typo: said, not refused.
    env.swarm(ann, &["notify", "bob", "--plan", "nope", "hi"])
        .ok()
        .stderr_has("no plan 'nope' is known in this clone");
}

#[test]
fn an_unreadable_message_is_listed_as_such_in_the_inbox_not_dropped() {
    let (env, _, clones) = Swarm::new(&["ann", "bob"]).parts();
    let (ann, bob) = (&clones[0], &clones[1]);
    env.swarm(ann, &["notify", "bob", "hello"]).ok();
    // A message ref someone pushed by hand, holding YAML nobody can read.
    crate::support::fixture::push_raw_record(
        &env,
        ann,
        "refs/swarm/messages/_/20260101T000000Z-mallory-0bad",
        "message.yaml",
        "schema: swarm-message/v1\nid: [unclosed\n",
    );
    let run = inbox(&env, bob, "bob", &[]);
    assert_eq!(ids(&run).len(), 1, "{run:#?}");
    let json = run.json();
    assert_eq!(
        json["unreadable"][0]["name"], "_/20260101T000000Z-mallory-0bad",
        "{json}"
    );
    run.expect_stderr("skipped unreadable message");
    let text = env.swarm(bob, &["inbox", "--all", "--as", "bob"]).ok();
    text.expect_stdout("UNREADABLE refs/swarm");
}

#[test]
fn replies_and_relayed_answers_show_as_relayed_everywhere() {
    let (env, _, clones) = Swarm::new(&["ann", "bob"]).parts();
    let (ann, bob) = (&clones[0], &clones[1]);
    let ask = env
        .swarm(
            ann,
            &["ask", "bob", "--plan", "p", "may I deploy?", "--json"],
        )
        .ok();
    let id = ask.json()["message"]["id"].as_str().unwrap().to_string();
    env.swarm(bob, &["reply", &id, "--relayed-from", "carol", "approved"])
        .ok();
    let got = env.swarm(ann, &["inbox"]).ok();
    got.expect_stdout("(relayed from carol): approved");
    got.expect_stdout(&format!("re {id}"));
    let doc = env.swarm(ann, &["inbox", "--all", "--json"]).ok().json();
    assert_eq!(doc["messages"][0]["relayed_from"], "carol");
    assert_eq!(doc["messages"][0]["plan"], "p", "a reply keeps the plan");
    env.swarm(
        bob,
        &[
            "decide",
            "ship on friday",
            "--plan",
            "p",
            "--reason",
            "tests green",
            "--relayed-from",
            "carol",
        ],
    )
    .ok();
    env.swarm(ann, &["sync"]).ok();
    let state = env.swarm(ann, &["state", "--plan", "p"]).ok();
    state.expect_stdout("ship on friday — tests green (relayed from carol)");
    // The question was answered, so it is not open.
    assert!(
        state.stdout.contains("## Open questions\n\n(none)"),
        "{}",
        state.stdout
    );
}

#[test]
fn state_is_byte_identical_across_clones_and_runs() {
    let (env, _, clones) = Swarm::new(&["ann", "bob"])
        .plan(0, "p")
        .leader(0, "bob")
        .parts();
    let (ann, bob) = (&clones[0], &clones[1]);
    env.swarm(
        ann,
        &[
            "decide",
            "use sqlite",
            "--plan",
            "p",
            "--options",
            "sqlite,postgres",
            "--reason",
            "one node",
            "--undo",
            "swap the driver",
        ],
    )
    .ok();
    env.swarm(ann, &["lane", "new", "login", "--plan", "p"])
        .ok();
    let wt = ann.join("_swarm-worktrees/login");
    env.swarm(
        &wt,
        &["report", "--capacity", "ok 64% @work1", "plan-ready"],
    )
    .ok();
    env.swarm(ann, &["sync"]).ok();
    env.swarm(bob, &["sync"]).ok();
    env.swarm(
        bob,
        &[
            "escalate", "access", "need", "the", "prod", "db", "--plan", "p",
        ],
    )
    .ok();
    env.swarm(bob, &["ask", "lead", "--plan", "p", "which port?"])
        .ok();
    env.swarm(ann, &["sync"]).ok();
    env.swarm(bob, &["sync"]).ok();
    // Decisions and escalations are entries in the plan journal too.
    let log = env.swarm(bob, &["plan", "log", "p"]).ok();
    log.expect_stdout("decision: use sqlite");
    log.expect_stdout("escalation: need the prod db");
    let a1 = env.swarm(ann, &["state"]).ok().stdout;
    let a2 = env.swarm(ann, &["state"]).ok().stdout;
    let b1 = env.swarm(bob, &["state"]).ok().stdout;
    assert_eq!(a1, a2, "two runs");
    assert_eq!(a1, b1, "two clones");
    for needle in [
        "p (active)",
        "p: ann, epoch 1",
        "use sqlite — one node",
        "[access] -> ann: need the prod db",
        "-> ann: which port?",
        "login [p] owner ann, active, last report: ",
        "(capacity=ok 64% @work1)",
        "## Verification\n\n(none)",
    ] {
        assert!(a1.contains(needle), "{needle}:\n{a1}");
    }
    let ja = env
        .swarm(ann, &["state", "--json", "--plan", "p"])
        .ok()
        .stdout;
    let jb = env
        .swarm(bob, &["state", "--json", "--plan", "p"])
        .ok()
        .stdout;
    assert_eq!(ja, jb);
    // --write: state.md, excluded, and the same bytes.
    let w = env.swarm(bob, &["state", "--write"]).ok();
    w.expect_stdout("written to");
    assert_eq!(env.read(&bob.join("state.md")), b1);
    assert_eq!(
        env.git(bob, &["status", "--porcelain"]),
        "",
        "state.md is excluded"
    );
    env.swarm(bob, &["state", "--write"]).ok();
    assert_eq!(
        env.read(&bob.join(".git/info/exclude"))
            .matches("/state.md")
            .count(),
        1
    );
}

#[test]
fn escalate_with_a_task_blocks_it_and_state_lists_open_tasks() {
    let (env, _, clones) = Swarm::new(&["ann", "bob"]).parts();
    let (ann, bob) = (&clones[0], &clones[1]);
    let t1 = "refs/swarm/tasks/p/t1";
    let t3 = "refs/swarm/tasks/p/t3";
    env.swarm(ann, &["plan", "new", "p"]).ok();
    for (id, extra) in [("t1", None), ("t2", Some("t1"))] {
        let mut args = vec!["task", "new", id, "--plan", "p", "--title", "do it"];
        if let Some(d) = extra {
            args.extend_from_slice(&["--depends-on", d]);
        }
        env.swarm(ann, &args).ok();
    }
    env.swarm(ann, &["task", "claim", "t1", "--plan", "p"]).ok();
    let esc = env
        .swarm(
            ann,
            &[
                "escalate", "access", "need", "prod", "--plan", "p", "--task", "t1", "--json",
            ],
        )
        .ok();
    let json = esc.json();
    assert_eq!(json["task_blocked"], true, "{json}");
    assert_eq!(json["task"]["id"], "t1");
    assert_eq!(json["message"]["task"], "t1");
    let show = env
        .swarm(ann, &["task", "show", "t1", "--plan", "p", "--json"])
        .ok()
        .json();
    let task = &show["task"];
    assert_eq!(task["status"], "blocked", "{show}");
    assert_eq!(task["blocked_reason"], "escalation [access]: need prod");
    assert!(task["claim"].is_null(), "blocking ends the claim: {show}");
    let log = env.git(ann, &["log", "--format=%s", t1]);
    assert!(
        log.contains("task t1: blocked: escalation [access]: need prod"),
        "{log}"
    );
    // The same escalation again is refused, and the task is left as it was.
    let tip = env.git(ann, &["rev-parse", t1]);
    env.swarm(
        ann,
        &[
            "escalate", "access", "need", "prod", "--plan", "p", "--task", "t1",
        ],
    )
    .err(1, "ESCALATION_SENT");
    assert_eq!(env.git(ann, &["rev-parse", t1]), tip);
    // bob is not the holder of ann's claim on t2: the escalation stands, the
    // task is not blocked (only the holder may), and he is told why.
    env.swarm(ann, &["task", "new", "t3", "--plan", "p", "--title", "api"])
        .ok();
    env.swarm(ann, &["task", "claim", "t3", "--plan", "p"]).ok();
    env.swarm(ann, &["sync"]).ok();
    env.swarm(bob, &["sync"]).ok();
    let held = env.git(ann, &["rev-parse", t3]);
    let esc = env
        .swarm(
            bob,
            &[
                "escalate", "decision", "which", "api", "--plan", "p", "--task", "t3", "--json",
            ],
        )
        .ok();
    let json = esc.json();
    assert_eq!(json["task_blocked"], false, "{json}");
    assert_eq!(json["message"]["kind"], "escalation");
    esc.expect_stderr("t3 was not blocked");
    esc.expect_stderr("LEASE_NOT_HOLDER");
    env.swarm(bob, &["sync"]).ok();
    assert_eq!(env.git(bob, &["rev-parse", t3]), held);
    assert_eq!(env.git(ann, &["rev-parse", t3]), held);
    // `state` lists the open tasks, identically on both clones after sync.
    env.swarm(ann, &["sync"]).ok();
    let a = env.swarm(ann, &["state"]).ok().stdout;
    let b = env.swarm(bob, &["state"]).ok().stdout;
    assert_eq!(a, b);
    assert_eq!(a, env.swarm(ann, &["state"]).ok().stdout);
    assert!(a.contains("Open tasks"), "{a}");
    assert!(
        a.contains("p/t1 (blocked) do it: owner ann — escalation [access]: need prod"),
        "{a}"
    );
    assert!(
        a.contains("p/t2 (open) do it: owner -, depends on t1"),
        "{a}"
    );
    // A claim shows its lease end, never the time left.
    assert!(
        a.contains("p/t3 (in_progress) api: owner ann, held by ann until 20"),
        "{a}"
    );
    assert!(!a.contains(" left"), "{a}");
    let json = env
        .swarm(bob, &["state", "--json", "--plan", "p"])
        .ok()
        .json();
    let section = json["sections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["title"] == "Open tasks")
        .cloned()
        .unwrap();
    assert_eq!(section["items"][0]["status"], "blocked");
    assert_eq!(section["items"][1]["depends_on"][0], "t1");
}

#[test]
fn state_lists_live_reservations_the_same_on_every_clone() {
    let (env, _, clones) = Swarm::new(&["ann", "bob"])
        .plan(0, "p")
        .plan(0, "q")
        .run(0, &["lane", "new", "login", "--plan", "p"])
        .run(0, &["reserve", "src/db/", "--task", "t1"])
        .run(0, &["reserve", "docs/*.md", "--shared"])
        .run(0, &["reserve", "tmp.txt"])
        .run(0, &["release", "tmp.txt"])
        .sync(0)
        .sync(1)
        .parts();
    let (ann, bob) = (&clones[0], &clones[1]);
    let a = env.swarm(ann, &["state"]).ok().stdout;
    let b = env.swarm(bob, &["state"]).ok().stdout;
    assert_eq!(a, b, "two clones");
    let listed = env.swarm(ann, &["reservations", "--json"]).ok().json();
    let id = |path: &str| {
        listed["reservations"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["paths"][0] == path)
            .and_then(|e| e["id"].as_str())
            .unwrap_or_else(|| panic!("{path} in {listed}"))
            .to_string()
    };
    let (db, docs) = (id("src/db/"), id("docs/*.md"));
    assert!(a.contains("## Reservations\n\n- r"), "{a}");
    assert!(
        a.contains(&format!(
            "- {db} ann: src/db/ (exclusive, task t1), lease until "
        )),
        "{a}"
    );
    assert!(
        a.contains(&format!("- {docs} ann: docs/*.md (shared), lease until ")),
        "{a}"
    );
    assert!(
        !a.contains("tmp.txt"),
        "a released reservation is not listed:\n{a}"
    );
    // With a plan: the reservations its lanes' owners hold; q has no lane.
    let p = env
        .swarm(bob, &["state", "--plan", "p", "--json"])
        .ok()
        .json();
    let section = p["sections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["title"] == "Reservations")
        .cloned()
        .unwrap();
    assert_eq!(section["items"].as_array().unwrap().len(), 2, "{section}");
    let items = section["items"].as_array().unwrap();
    assert!(items.iter().all(|i| i["holder"] == "ann"), "{section}");
    assert!(
        items.iter().any(|i| i["paths"][0] == "src/db/"),
        "{section}"
    );
    let q = env.swarm(bob, &["state", "--plan", "q"]).ok().stdout;
    assert!(q.contains("## Reservations\n\n(none)"), "{q}");
}

#[test]
fn the_same_escalation_sent_at_once_from_two_clones_is_recorded_once() {
    let (env, remote, clones) = Swarm::new(&["ann", "bob", "cat"])
        .plan(0, "p")
        .sync(0)
        .parts();
    for c in &clones[1..] {
        env.swarm(c, &["sync"]).ok();
    }
    let esc = [
        "escalate", "ops", "the", "deploy", "key", "expired", "--plan", "p",
    ];
    // Online, lined up after the message commit is written, before any ref
    // moves: both decided it was new.
    for round in 0..3 {
        let gate = env.root().join(format!("esc-gate-{round}"));
        let pause = format!("store:commit={}", gate.display());
        let mut args = esc.to_vec();
        let what = format!("round{round}");
        args.push("--task");
        args.push(&what);
        let children: Vec<_> = clones[1..]
            .iter()
            .map(|c| spawn(&env, c, &[("GIT_SWARM_PAUSE", pause.as_str())], &args))
            .collect();
        crate::support::process::wait_arrivals(&gate, 2);
        std::fs::write(gate.join("go"), "").unwrap();
        let runs: Vec<_> = children
            .into_iter()
            .enumerate()
            .map(|(i, c)| finish(c, &format!("round {round} clone {i}")))
            .collect();
        let ok: Vec<_> = runs.iter().filter(|r| r.code == 0).collect();
        assert_eq!(ok.len(), 1, "round {round}: {runs:#?}");
        let lost = runs.iter().find(|r| r.code != 0).unwrap();
        assert_eq!(lost.code, 1, "{lost:#?}");
        assert!(lost.stderr.contains("error[ESCALATION_SENT]"), "{lost:#?}");
    }
    // Offline, both: the first sync publishes one, the second keeps the
    // published one and says its own was superseded (no conflict, no wedge).
    let mut args = vec!["--offline"];
    args.extend_from_slice(&esc);
    env.swarm(&clones[1], &args).ok();
    env.swarm(&clones[2], &args).ok();
    env.swarm(&clones[1], &["sync"]).ok();
    let second = env.swarm(&clones[2], &["sync", "--json"]).ok().json();
    assert_eq!(
        second["superseded"].as_array().map(Vec::len),
        Some(1),
        "{second}"
    );
    env.swarm(&clones[2], &["sync"]).ok();
    env.swarm(&clones[1], &["sync"]).ok();
    let on_remote = env.refs(&remote, MESSAGES);
    assert_eq!(
        on_remote.len(),
        4,
        "one message per escalation: {on_remote:?}"
    );
    for c in &clones[1..] {
        assert_eq!(env.refs(c, MESSAGES), on_remote);
    }
    let state = |c: &std::path::PathBuf| env.swarm(c, &["state", "--json"]).ok().stdout;
    assert_eq!(state(&clones[1]), state(&clones[2]));
}

/// Regression: the plan-scoped wait matched ref prefixes, so a wait for
/// plan `shop` woke on a task or leader of plan `shop-api`.
#[test]
fn a_wait_for_one_plan_does_not_wake_on_a_plan_whose_name_it_prefixes() {
    let env = TestEnv::new();
    let (_remote, clones) = env.remote_with_clones(&["ann", "bob"]);
    let (ann, bob) = (&clones[0], &clones[1]);
    env.swarm(ann, &["plan", "new", "shop"]).ok();
    env.swarm(ann, &["plan", "new", "shop-api"]).ok();
    env.swarm(ann, &["sync"]).ok();
    env.swarm(bob, &["sync"]).ok();
    // Published while bob's clone has not fetched them: a wait's first
    // question to the remote sees them.
    env.swarm(
        ann,
        &["task", "new", "t1", "--plan", "shop-api", "--title", "api"],
    )
    .ok();
    env.swarm(
        ann,
        &["lead", "claim", "--plan", "shop-api", "--succession", "bob"],
    )
    .ok();
    let virtual_waits = [("GIT_SWARM_VIRTUAL_WAITS", "1")];
    for kind in ["task", "lead", "any"] {
        let before = env.all_refs(bob);
        let waited = env
            .swarm_env(
                bob,
                &virtual_waits,
                &[
                    "wait",
                    "--for",
                    kind,
                    "--plan",
                    "shop",
                    "--timeout",
                    "1m",
                    "--json",
                ],
            )
            .err(1, "WAIT_TIMEOUT");
        let cost = &waited.json()["error"]["detail"]["cost"];
        assert_eq!(cost["fetches"], 0, "--for {kind}: {cost}");
        assert_eq!(env.all_refs(bob), before, "--for {kind}");
    }
    // The plan's own records still wake it.
    env.swarm(
        ann,
        &["task", "new", "t2", "--plan", "shop", "--title", "shop"],
    )
    .ok();
    let woke = env
        .swarm_env(
            bob,
            &virtual_waits,
            &[
                "wait",
                "--for",
                "task",
                "--plan",
                "shop",
                "--timeout",
                "1m",
                "--json",
            ],
        )
        .ok();
    assert_eq!(
        woke.json()["refs"],
        serde_json::json!(["refs/swarm/tasks/shop/t2"])
    );
}

#[test]
fn a_body_file_that_is_not_utf8_is_refused_at_its_offset() {
    let (env, _, clones) = Swarm::new(&["ann"]).parts();
    let ann = &clones[0];
    let before = env.all_refs(ann);
    let body = env.root().join("body.txt");
    std::fs::write(&body, b"abc \xff\xfe \xc3(").unwrap();
    env.swarm(
        ann,
        &["notify", "bob", "--body-file", body.to_str().unwrap()],
    )
    .err(2, "TEXT_INVALID")
    .stderr_has("offset 4 (0xff)");
    assert_eq!(env.all_refs(ann), before, "nothing written");
    std::fs::write(&body, "caf\u{e9} ok\n").unwrap();
    env.swarm(
        ann,
        &["notify", "bob", "--body-file", body.to_str().unwrap()],
    )
    .ok();
}

/// `wait --for packet` asks the remote only for the packets' refs (and
/// the plan's): the remote never lists the unrelated message refs to it,
/// so a wait's cost does not grow with them (benches/wait.sh measures it).
#[test]
fn wait_asks_the_remote_only_for_the_refs_it_watches() {
    let (env, remote, clones) = Swarm::new(&["ann"]).plan(0, "p").parts();
    let ann = &clones[0];
    env.swarm(ann, &["notify", "bob", "one message"]).ok();
    let head = env.git(&remote, &["rev-parse", "HEAD"]);
    let many: String = (0..200)
        .map(|i| format!("create refs/swarm/messages/_/unrelated-{i} {head}\n"))
        .collect();
    env.git_stdin(&remote, &["update-ref", "--stdin"], many.as_bytes());
    let trace = env.root().join("trace.txt");
    let trace_s = trace.to_str().unwrap().to_string();
    let run = env.swarm_env(
        ann,
        &[
            ("GIT_SWARM_VIRTUAL_WAITS", "1"),
            ("GIT_TRACE_PACKET", &trace_s),
        ],
        &[
            "wait",
            "--for",
            "packet",
            "--plan",
            "p",
            "--timeout",
            "30s",
            "--json",
        ],
    );
    run.err(1, "WAIT_TIMEOUT");
    let traced = std::fs::read_to_string(&trace).unwrap();
    assert!(
        !traced.contains("refs/swarm/messages/"),
        "the remote listed message refs to a wait for packets"
    );
    assert!(
        traced.contains("refs/swarm/packets/p"),
        "asked for the packets"
    );
}

/// A whole fetch (here `sync`) from a remote on this machine remembers
/// that the mirror is level with the remote (`.git/swarm/mirror-level/`):
/// a `wait` that starts while neither side moved asks the remote nothing,
/// no `ls-remote`, no git process at all; a message published meanwhile
/// moves the remote's ref files and the next wait asks, fetches and wakes.
#[test]
fn a_wait_after_a_sync_asks_a_remote_on_this_machine_nothing_until_it_moves() {
    let (env, _remote, clones) = Swarm::new(&["ann", "bob"]).plan(0, "p").parts();
    let (ann, bob) = (&clones[0], &clones[1]);
    env.swarm(ann, &["notify", "bob", "first"]).ok();
    env.swarm(bob, &["inbox"]).ok().stdout_has("first");
    // Ref directories younger than the stamp's window equal no stamp.
    let settle = || std::thread::sleep(std::time::Duration::from_millis(250));
    settle();
    env.swarm(bob, &["sync"]).ok();
    let level = bob.join(".git/swarm/mirror-level/origin");
    assert!(level.is_file(), "the sync recorded the level");
    settle();
    let trace = env.root().join("trace.txt");
    let trace_s = trace.to_str().unwrap().to_string();
    let waits = [
        ("GIT_SWARM_VIRTUAL_WAITS", "1"),
        ("GIT_TRACE", trace_s.as_str()),
    ];
    let idle = env
        .swarm_env(
            bob,
            &waits,
            &["wait", "--for", "message", "--timeout", "1m", "--json"],
        )
        .err(1, "WAIT_TIMEOUT");
    let cost = &idle.json()["error"]["detail"]["cost"];
    assert_eq!(cost["fetches"], 0, "{cost}");
    let traced = std::fs::read_to_string(&trace).unwrap_or_default();
    assert!(
        !traced.contains("ls-remote")
            && !traced.contains("upload-pack")
            && !traced.contains("fetch"),
        "an idle wait started a git process: {traced}"
    );

    env.swarm(ann, &["notify", "bob", "second"]).ok();
    let woke = env
        .swarm_env(
            bob,
            &waits,
            &["wait", "--for", "message", "--timeout", "1m", "--json"],
        )
        .ok()
        .json();
    assert_eq!(woke["messages"][0]["body"], "second", "{woke}");
    assert_eq!(woke["cost"]["fetches"], 1, "{woke}");
}

#[test]
fn ask_lead_in_a_lane_worktree_asks_the_leader_of_the_lanes_plan() {
    let (env, _, clones) = Swarm::new(&["alice", "bob"])
        .plan(0, "auth")
        .plan(0, "other")
        .run(
            0,
            &["lead", "claim", "--plan", "auth", "--succession", "alice"],
        )
        .sync(0)
        .sync(1)
        .run(1, &["lane", "new", "login", "--plan", "auth"])
        .parts();
    let (a, b) = (&clones[0], &clones[1]);
    let login = worktree(b, "login");

    let out = env
        .swarm(&login, &["ask", "lead", "which", "hash?", "--json"])
        .ok()
        .json();
    assert_eq!(out["message"]["to"], "alice");
    assert_eq!(out["message"]["plan"], "auth");
    let inbox = env.swarm(a, &["inbox", "--json"]).ok();
    inbox.expect_stdout("which hash?");

    // A lane on a child plan with no leader of its own asks the parent's.
    env.swarm(b, &["plan", "new", "signup", "--parent", "auth"])
        .ok();
    env.swarm(b, &["lane", "new", "signup", "--plan", "signup"])
        .ok();
    let out = env
        .swarm(&worktree(b, "signup"), &["ask", "lead", "ok?", "--json"])
        .ok()
        .json();
    assert_eq!(out["message"]["to"], "alice");
    assert_eq!(out["message"]["plan"], "signup");

    // Outside a lane the plan must still be named, and the hint says so.
    env.swarm(b, &["ask", "lead", "hello"])
        .err(2, "MESSAGE_INVALID")
        .stderr_has("--plan");
}

/// A task ref the remote moved by a fast-forward (a claim in another
/// clone) wakes a `wait --for task`: the dry run's porcelain line of a
/// fast-forward starts with a space for its flag, and was read as one
/// field short (so only new, forced and pruned refs woke a wait).
#[test]
fn wait_for_task_wakes_on_a_claim_published_by_another_clone() {
    let (env, _, clones) = Swarm::new(&["ann", "bob"])
        .plan(0, "p")
        .task(0, "t1", "first")
        .sync(1)
        .parts();
    let (ann, bob) = (&clones[0], &clones[1]);
    env.swarm(bob, &["task", "list", "--plan", "p"]).ok();
    env.swarm(ann, &["task", "claim", "t1", "--plan", "p"]).ok();
    let run = env
        .swarm_env(
            bob,
            &[("GIT_SWARM_VIRTUAL_WAITS", "1")],
            &[
                "wait",
                "--for",
                "task",
                "--plan",
                "p",
                "--timeout",
                "1m",
                "--json",
            ],
        )
        .ok();
    let doc = run.json();
    assert_eq!(
        doc["refs"],
        serde_json::json!(["refs/swarm/tasks/p/t1"]),
        "{doc}"
    );
    assert_eq!(doc["cost"]["fetches"], 1, "{doc}");
}
