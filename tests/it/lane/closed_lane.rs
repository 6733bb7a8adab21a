//! A closed lane's worktree goes by itself: the clone that has it removes
//! it at its next git-swarm command (or `lane prune`), keeping uncommitted
//! work first as the lane's snapshot, and says so.

use crate::support::fixture::{worktree, Swarm};
use crate::support::process::ref_of;

#[test]
fn a_lane_closed_on_another_clone_loses_its_worktree_here_with_its_work_snapshotted() {
    let (env, remote, clones) = Swarm::new(&["ann", "bob"])
        .plan(0, "auth")
        .run(0, &["plan", "new", "web"])
        .sync(1)
        .lane(1, "api")
        .run(1, &["lane", "new", "ui", "--plan", "web"])
        .parts();
    let (a, b) = (&clones[0], &clones[1]);
    let api = worktree(b, "api");
    let ui = worktree(b, "ui");
    env.write(&api.join("notes.txt"), "half done\n");

    // The coordinator closes both lanes from her clone.
    env.swarm(a, &["sync"]).ok();
    for f in ["api", "ui"] {
        env.swarm(a, &["lane", "rm", f, "--force"]).ok();
    }
    assert!(
        api.is_dir() && ui.is_dir(),
        "nothing moved on bob's disk yet"
    );

    // bob's next command, run inside the ui worktree: api goes (its work
    // snapshotted first), ui stays until he runs one elsewhere.
    let run = env.swarm(&ui, &["status"]).ok();
    assert!(
        run.stderr
            .contains("lane api is closed: removed its worktree")
            && run.stderr.contains(
                "its uncommitted work (1 path) is kept as the snapshot refs/swarm/wip/api"
            ),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("lane ui is closed; its worktree"),
        "{}",
        run.stderr
    );
    assert!(!api.exists(), "the api worktree is gone");
    assert!(ui.is_dir(), "the worktree the command ran in stays");
    let wip = ref_of(&env, &remote, "refs/swarm/wip/api").expect("the snapshot is published");
    assert_eq!(
        env.git(b, &["show", &format!("{wip}:notes.txt")]),
        "half done",
        "the snapshot holds the uncommitted file"
    );
    assert!(
        ref_of(&env, b, "refs/heads/feat/api").is_some(),
        "the branch stays"
    );

    // `lane prune` in the main checkout takes the other (clean: no snapshot).
    let prune = env.swarm(b, &["lane", "prune"]).ok();
    assert!(
        prune.stdout.contains("ui: removal completed")
            && !prune.stderr.contains("refs/swarm/wip/ui"),
        "{}{}",
        prune.stdout,
        prune.stderr
    );
    assert!(!ui.exists());
    assert_eq!(ref_of(&env, &remote, "refs/swarm/wip/ui"), None);
    // Nothing left to say.
    let quiet = env.swarm(b, &["status"]).ok();
    assert!(!quiet.stderr.contains("is closed"), "{}", quiet.stderr);
    assert!(!env
        .git(b, &["worktree", "list"])
        .contains("_swarm-worktrees"));
}
