//! `task claim --next` from several clones at once through one bare
//! remote: lined up after their decision (all first take the first ready
//! task) and released together, so the remote's compare-and-swap picks
//! one; each loser passes over the task it lost for another ready one of
//! the view it already fetched. Each test shows the exit codes, the JSON
//! naming the task taken, and the task refs left at the remote.

use std::path::Path;
use std::process::Child;

use crate::support::fixture::Swarm;
use crate::support::harness::{Run, TestEnv};
use crate::support::process::{finish, new_gate, ref_of, spawn, wait_arrivals};

fn task_ref(id: &str) -> String {
    format!("refs/swarm/tasks/p/{id}")
}

/// The task as the remote holds it, and how many versions it has.
fn at_remote(env: &TestEnv, remote: &Path, id: &str) -> (serde_yaml_ng::Value, String) {
    let tip = ref_of(env, remote, &task_ref(id)).expect("the task is published");
    let yaml = env.git(remote, &["show", &format!("{tip}:task.yaml")]);
    let count = env.git(remote, &["rev-list", "--count", &tip]);
    (
        serde_yaml_ng::from_str(&yaml).expect("task.yaml is YAML"),
        count.trim().to_string(),
    )
}

/// Every clone runs `claim --next --plan p --json` at once, paused after
/// its decision until all have decided.
fn race(env: &TestEnv, clones: &[std::path::PathBuf], names: &[&str]) -> Vec<Run> {
    let gate = new_gate(env, "task:objects");
    let pause = format!("task:objects={}", gate.display());
    let args = ["task", "claim", "--next", "--plan", "p", "--json"];
    let children: Vec<Child> = clones
        .iter()
        .map(|dir| spawn(env, dir, &[("GIT_SWARM_PAUSE", &pause)], &args))
        .collect();
    wait_arrivals(&gate, clones.len());
    std::fs::write(gate.join("go"), "").unwrap();
    children
        .into_iter()
        .zip(names)
        .map(|(c, n)| finish(c, &format!("{n}: task claim --next")))
        .collect()
}

#[test]
fn three_clones_claiming_next_at_once_each_get_a_different_ready_task() {
    let names = ["ann", "bob", "cy"];
    let (env, remote, clones) = Swarm::new(&names).plan(0, "p").sync(0).parts();
    for id in ["t1", "t2", "t3", "t4"] {
        env.swarm(
            &clones[0],
            &["task", "new", id, "--plan", "p", "--title", "do it"],
        )
        .ok();
    }
    // Not ready: it waits for t1.
    env.swarm(
        &clones[0],
        &["task", "update", "t4", "--plan", "p", "--depends-on", "t1"],
    )
    .ok();
    let runs = race(&env, &clones, &names);
    let mut taken = Vec::new();
    for (run, name) in runs.iter().zip(names) {
        assert_eq!(run.code, 0, "{run:#?}");
        let json = run.json();
        assert_eq!(json["command"], "claim", "{run:#?}");
        assert_eq!(json["plan"], "p");
        assert_eq!(json["task"]["claim"]["holder"], name, "{run:#?}");
        let id = json["id"].as_str().unwrap().to_string();
        // At the remote: that task, claimed by this clone, once.
        let (rec, versions) = at_remote(&env, &remote, &id);
        assert_eq!(rec["claim"]["holder"].as_str(), Some(name), "{id}");
        assert_eq!(rec["status"].as_str(), Some("in_progress"), "{id}");
        assert_eq!(rec["epoch"].as_u64(), Some(1), "{id}: one claim");
        assert_eq!(versions, "2", "{id}: created, claimed once");
        assert_eq!(
            json["commit"].as_str(),
            ref_of(&env, &remote, &task_ref(&id)).as_deref()
        );
        taken.push((id, json["lost_to_others"].clone()));
    }
    let mut ids: Vec<&str> = taken.iter().map(|(i, _)| i.as_str()).collect();
    ids.sort();
    assert_eq!(ids, ["t1", "t2", "t3"], "one each, none doubled: {runs:#?}");
    // All three decided on t1 first: its winner lost nothing, the other two
    // lost t1 and passed it over (never trying it again).
    for (id, lost) in &taken {
        if id == "t1" {
            assert!(lost.is_null(), "{lost}");
        } else {
            let lost: Vec<&str> = lost
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect();
            assert_eq!(lost.first(), Some(&"p/t1"), "{id}: {lost:?}");
            assert!(!lost.contains(&format!("p/{id}").as_str()));
        }
    }
    // t4 (not ready) is untouched at the remote.
    let (t4, versions) = at_remote(&env, &remote, "t4");
    assert_eq!(t4["status"].as_str(), Some("open"));
    assert!(
        t4.get("claim").is_none_or(serde_yaml_ng::Value::is_null),
        "{t4:?}"
    );
    assert_eq!(versions, "2", "created, dependencies set");
}

#[test]
fn two_clones_for_one_ready_task_one_claims_it_the_other_is_told_none_is_left() {
    let names = ["ann", "bob"];
    let (env, remote, clones) = Swarm::new(&names).plan(0, "p").sync(0).parts();
    env.swarm(
        &clones[0],
        &["task", "new", "t1", "--plan", "p", "--title", "do it"],
    )
    .ok();
    let runs = race(&env, &clones, &names);
    let winners: Vec<usize> = (0..2).filter(|&i| runs[i].code == 0).collect();
    assert_eq!(winners.len(), 1, "{runs:#?}");
    let (w, l) = (winners[0], 1 - winners[0]);
    assert_eq!(runs[w].json()["id"], "t1");
    assert_eq!(runs[l].code, 1, "{:#?}", runs[l]);
    assert!(
        runs[l].stderr.contains("error[NO_READY_TASK]"),
        "{:#?}",
        runs[l]
    );
    assert!(
        runs[l].stderr.contains("claimed by others first: p/t1"),
        "{:#?}",
        runs[l]
    );
    let (rec, versions) = at_remote(&env, &remote, "t1");
    assert_eq!(rec["claim"]["holder"].as_str(), Some(names[w]));
    assert_eq!(versions, "2", "claimed once");
    // Nothing is ready now: a third try says so at once, writes nothing.
    env.swarm(&clones[l], &["task", "claim", "--next"])
        .err(1, "NO_READY_TASK");
    assert_eq!(at_remote(&env, &remote, "t1").1, "2");
}
