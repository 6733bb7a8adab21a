//! `git swarm pool`: the accounts agents run on, published at once, never a
//! credential in them, and an account's lease arbitrated by the remote.

use crate::support::fixture::Swarm;

#[test]
fn pool_add_publishes_the_account_and_the_other_clone_lists_it() {
    let (env, remote, clones) = Swarm::new(&["ann", "bob"]).parts();
    let (a, b) = (&clones[0], &clones[1]);
    let added = env
        .swarm(
            a,
            &[
                "pool",
                "add",
                "work1",
                "--host",
                "claude",
                "--env",
                "CLAUDE_CONFIG_DIR=/home/ann/.claude-work1",
                "--note",
                "team plan",
                "--json",
            ],
        )
        .ok()
        .json();
    assert_eq!(added["published"], true, "{added}");
    assert_eq!(added["account"]["address"], "work1");
    assert!(env
        .refs(&remote, "refs/swarm/pool/")
        .contains_key("refs/swarm/pool/work1"));
    env.swarm(
        a,
        &[
            "pool",
            "add",
            "work2",
            "--host",
            "codex",
            "--address",
            "ann-codex",
        ],
    )
    .ok()
    .stdout_has("account work2 (codex, acts as ann-codex) is in the pool");
    let listed = env.swarm(b, &["pool", "list", "--json"]).ok().json();
    let names: Vec<&str> = listed["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["account"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["work1", "work2"]);
    assert_eq!(listed["accounts"][0]["state"], "free");
    assert_eq!(
        listed["accounts"][0]["env"]["CLAUDE_CONFIG_DIR"],
        "/home/ann/.claude-work1"
    );
    let text = env.swarm(b, &["pool", "list"]).ok().stdout;
    assert!(
        text.contains("work1")
            && text.contains("env CLAUDE_CONFIG_DIR")
            && text.contains("# team plan"),
        "{text}"
    );
    // The same again writes nothing.
    env.swarm(
        a,
        &[
            "pool",
            "add",
            "work2",
            "--host",
            "codex",
            "--address",
            "ann-codex",
        ],
    )
    .ok()
    .stdout_has("already so, nothing written");
}

#[test]
fn a_credential_in_the_pool_is_refused_named_never_echoed_and_nothing_is_written() {
    let (env, remote, clones) = Swarm::new(&["ann"]).parts();
    let a = &clones[0];
    let before = env.all_refs(a);
    let key = format!("sk-ant-api03-{}AA", "B".repeat(93));
    let run = env
        .swarm(
            a,
            &[
                "pool",
                "add",
                "w",
                "--host",
                "claude",
                "--env",
                &format!("EXTRA={key}"),
            ],
        )
        .err(2, "SECRET_IN_TEXT");
    assert!(
        run.stderr.contains("--env EXTRA") && !run.stderr.contains(&key),
        "{run:?}"
    );
    let run = env
        .swarm(
            a,
            &[
                "pool",
                "add",
                "w",
                "--host",
                "claude",
                "--env",
                "ANTHROPIC_API_KEY=x",
            ],
        )
        .err(2, "SECRET_IN_TEXT");
    assert!(
        run.stderr.contains("CLAUDE_CONFIG_DIR"),
        "says where a login lives: {run:?}"
    );
    env.swarm(a, &["pool", "add", "w", "--host", "cursor"])
        .code(2);
    assert_eq!(env.all_refs(a), before, "nothing written");
    assert!(env.refs(&remote, "refs/swarm/pool/").is_empty());
}

#[test]
fn pool_rm_removes_a_free_account_and_names_an_unknown_one() {
    let (env, _remote, clones) = Swarm::new(&["ann"]).parts();
    let a = &clones[0];
    env.swarm(
        a,
        &[
            "pool",
            "add",
            "w",
            "--host",
            "gemini",
            "--env",
            "GEMINI_CLI_HOME=/g",
        ],
    )
    .ok();
    env.swarm(a, &["pool", "rm", "w"])
        .ok()
        .stdout_has("removed account w");
    let listed = env.swarm(a, &["pool", "list", "--json"]).ok().json();
    assert_eq!(listed["accounts"].as_array().unwrap().len(), 0);
    let all = env
        .swarm(a, &["pool", "list", "--all", "--json"])
        .ok()
        .json();
    assert_eq!(all["accounts"][0]["state"], "removed");
    env.swarm(a, &["pool", "rm", "nope"]).err(2, "NOT_FOUND");
    // Declared again, it is offered again.
    env.swarm(a, &["pool", "add", "w", "--host", "gemini"]).ok();
    let listed = env.swarm(a, &["pool", "list", "--json"]).ok().json();
    assert_eq!(listed["accounts"][0]["state"], "free");
}

/// `run --once` with a host that dies by SIGKILL at once (a stand-in for a
/// killed agent, no model needed): each loss is recorded in the lane plan's
/// journal and a successor is launched (the only account, since no other
/// is free and no usage limit stopped it), its claim handed over by `task
/// recover`; after `MAX_LOSSES` successors the lane is reported blocked and
/// its task blocked, the account freed, and `--once` exits 0.
#[test]
fn run_replaces_a_killed_agent_until_it_gives_up_and_blocks_the_lane() {
    let (mut env, remote, clones) = Swarm::new(&["lead"]).parts();
    let a = clones[0].clone();
    env.set_env("GIT_SWARM_RUN_TICK_MS", "200");
    env.swarm(&a, &["plan", "new", "p", "--title", "P"]).ok();
    env.swarm(
        &a,
        &["task", "new", "t1", "--plan", "p", "--title", "first"],
    )
    .ok();
    env.swarm(&a, &["pool", "add", "w1", "--host", "claude"])
        .ok();
    env.git(
        &a,
        &[
            "config",
            "swarm.host.claude.command",
            "sh -c 'kill -9 $$' --",
        ],
    );
    let run = env
        .swarm(&a, &["run", "--plan", "p", "--once", "--json"])
        .ok()
        .json();
    let whats: Vec<&str> = run["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["what"].as_str().unwrap())
        .collect();
    assert_eq!(
        whats,
        [
            "launch", "lost", "launch", "lost", "launch", "lost", "launch", "lost", "blocked",
            "idle"
        ],
        "{run:#}"
    );
    assert!(
        run["steps"][1]["text"]
            .as_str()
            .unwrap()
            .contains("signal 9"),
        "{run:#}"
    );
    let pool = env.swarm(&a, &["pool", "list", "--json"]).ok().json();
    assert_eq!(pool["accounts"][0]["state"], "free");
    let journal = env.git(&remote, &["log", "--format=%B", "refs/swarm/plans/t1"]);
    assert_eq!(journal.matches("agent_lost").count(), 5, "{journal}");
    let task = env
        .swarm(&a, &["task", "show", "t1", "--plan", "p", "--json"])
        .ok()
        .json();
    assert_eq!(task["task"]["status"], "blocked", "{task:#}");
    assert!(
        task["task"]["recovery_reason"]
            .as_str()
            .unwrap()
            .contains("was lost"),
        "{task:#}"
    );
    // Blocked, nothing ready and no agent: a second run is idle at once.
    let again = env
        .swarm(&a, &["run", "--plan", "p", "--once", "--json"])
        .ok()
        .json();
    assert_eq!(again["launched"], 0);
}
