//! `task new --from FILE`: many tasks in one command and one push, a bad
//! line refusing the whole file with its line number and nothing written.
//! Each test shows the exit code, the output and the task refs left at the
//! remote and in the clone.

use std::path::Path;

use crate::support::fixture::Swarm;
use crate::support::harness::TestEnv;
use crate::support::process::ref_of;

/// The task refs of `dir`, one `<ref>` a line.
fn task_refs(env: &TestEnv, dir: &Path) -> String {
    env.git(
        dir,
        &["for-each-ref", "--format=%(refname)", "refs/swarm/tasks/"],
    )
}

#[test]
fn a_file_of_tasks_one_a_line_or_yaml_is_created_in_one_command() {
    let (env, remote, clones) = Swarm::new(&["ann"]).plan(0, "p").sync(0).parts();
    let a = &clones[0];
    let lines = env.root().join("tasks.txt");
    env.write(
        &lines,
        "# the first three\nt1 add the form\n\nt2 check the input\nt3   style it\n",
    );
    let run = env
        .swarm(
            a,
            &[
                "task",
                "new",
                "--plan",
                "p",
                "--from",
                lines.to_str().unwrap(),
                "--json",
            ],
        )
        .ok();
    let json = run.json();
    assert_eq!(
        json["created"],
        serde_json::json!(["t1", "t2", "t3"]),
        "{run:#?}"
    );
    assert_eq!(json["published"], true);
    for id in ["t1", "t2", "t3"] {
        let tip = ref_of(&env, &remote, &format!("refs/swarm/tasks/p/{id}")).expect(id);
        let yaml = env.git(&remote, &["show", &format!("{tip}:task.yaml")]);
        assert!(yaml.contains("status: open"), "{yaml}");
    }
    let t3 = ref_of(&env, &remote, "refs/swarm/tasks/p/t3").unwrap();
    assert!(env
        .git(&remote, &["show", &format!("{t3}:task.yaml")])
        .contains("title: style it"));
    // The same file again: nothing new, nothing written.
    let again = env
        .swarm(
            a,
            &[
                "task",
                "new",
                "--plan",
                "p",
                "--from",
                lines.to_str().unwrap(),
                "--json",
            ],
        )
        .ok();
    assert_eq!(again.json()["created"], serde_json::json!([]));
    assert_eq!(
        again.json()["already"],
        serde_json::json!(["t1", "t2", "t3"])
    );
    assert_eq!(ref_of(&env, &remote, "refs/swarm/tasks/p/t3").unwrap(), t3);
    // YAML, with a dependency on a task of the first file.
    let yaml = env.root().join("more.yaml");
    env.write(
        &yaml,
        "- id: t4\n  title: ship it\n  depends_on: [t1, t5]\n- id: t5\n  title: test it\n  files_hint: [src/]\n",
    );
    let run = env
        .swarm(
            a,
            &[
                "task",
                "new",
                "--plan",
                "p",
                "--from",
                yaml.to_str().unwrap(),
            ],
        )
        .ok();
    run.expect_stdout("created 2 tasks in plan p");
    let t4 = ref_of(&env, &remote, "refs/swarm/tasks/p/t4").unwrap();
    let rec = env.git(&remote, &["show", &format!("{t4}:task.yaml")]);
    assert!(rec.contains("- t1") && rec.contains("- t5"), "{rec}");
}

#[test]
fn a_bad_line_refuses_the_whole_file_naming_the_line_and_writes_nothing() {
    let (env, remote, clones) = Swarm::new(&["ann"]).plan(0, "p").sync(0).parts();
    let a = &clones[0];
    let before = (task_refs(&env, &remote), task_refs(&env, a));
    let file = env.root().join("tasks.txt");
    env.write(&file, "t1 add the form\nt2 check it\nt3\nt4 style it\n");
    env.swarm(
        a,
        &[
            "task",
            "new",
            "--plan",
            "p",
            "--from",
            file.to_str().unwrap(),
        ],
    )
    .err(2, "USAGE")
    .expect_stderr("tasks.txt:3: task 't3' has no title; nothing was written");
    env.write(&file, "t1 add the form\nT2! check it\n");
    env.swarm(
        a,
        &[
            "task",
            "new",
            "--plan",
            "p",
            "--from",
            file.to_str().unwrap(),
        ],
    )
    .err(2, "NAME_INVALID")
    .expect_stderr("tasks.txt:2:");
    env.write(&file, "t1 add the form\nt1 again\n");
    env.swarm(
        a,
        &[
            "task",
            "new",
            "--plan",
            "p",
            "--from",
            file.to_str().unwrap(),
        ],
    )
    .err(2, "USAGE")
    .expect_stderr("tasks.txt:2: task 't1' is already on line 1");
    let yaml = env.root().join("tasks.yaml");
    env.write(
        &yaml,
        "- id: t1\n  title: one\n- id: t2\n  title: two\n  depends_on: [t9]\n",
    );
    env.swarm(
        a,
        &[
            "task",
            "new",
            "--plan",
            "p",
            "--from",
            yaml.to_str().unwrap(),
        ],
    )
    .err(2, "TASK_UNKNOWN_DEPENDENCY")
    .expect_stderr("tasks.yaml:3:");
    assert_eq!(
        (task_refs(&env, &remote), task_refs(&env, a)),
        before,
        "nothing written"
    );
}
