//! The common set-up, built in one chain: a bare remote, its clones (each
//! with `git swarm init`), then plans, a leader, lanes, tasks, pushed lane
//! branches and handoffs. Every step is the real `git swarm` or `git`
//! command a user would type, and must succeed; a test then takes the
//! environment, the remote and the clones:
//!
//! ```ignore
//! let (env, remote, clones) = Swarm::new(&["alice", "bob"])
//!     .plan(0, "auth")
//!     .sync(0)
//!     .lane(1, "login")
//!     .parts();
//! ```
//!
//! Steps that name a plan (`leader`, `lane`, `task`) name the last one
//! created with `plan`. `Swarm::repo` is the same for one repository
//! without a remote, taken with `repo_parts`.

use std::path::{Path, PathBuf};

use crate::support::harness::{Run, TestEnv};

pub struct Swarm {
    env: TestEnv,
    remote: PathBuf,
    clones: Vec<PathBuf>,
    plan: Option<String>,
}

impl Swarm {
    /// A bare remote with one commit on main and one clone per name, each
    /// with swarm.as = its name and `git swarm init` run.
    pub fn new(names: &[&str]) -> Swarm {
        Swarm::in_env(TestEnv::new(), names)
    }

    /// As `new`, in an environment set up beforehand (fixed clock, extra
    /// variables).
    pub fn in_env(env: TestEnv, names: &[&str]) -> Swarm {
        let (remote, clones) = env.remote_with_clones(names);
        Swarm {
            env,
            remote,
            clones,
            plan: None,
        }
    }

    /// One repository `name` with one commit on main and no remote
    /// (swarm.as = its name; `git swarm init` not run: that is `.init(0)`).
    pub fn repo(name: &str) -> Swarm {
        let env = TestEnv::new();
        let repo = env.repo(name);
        Swarm {
            env,
            remote: PathBuf::new(),
            clones: vec![repo],
            plan: None,
        }
    }

    /// `git swarm init` in clone `i`.
    pub fn init(self, i: usize) -> Self {
        self.run(i, &["init"])
    }

    /// The environment and the one repository of `Swarm::repo`.
    pub fn repo_parts(self) -> (TestEnv, PathBuf) {
        assert!(self.remote.as_os_str().is_empty(), "a swarm with a remote");
        let repo = self.clones.into_iter().next().expect("one repository");
        (self.env, repo)
    }

    /// The environment, the remote and the clones, for the test to go on.
    pub fn parts(self) -> (TestEnv, PathBuf, Vec<PathBuf>) {
        (self.env, self.remote, self.clones)
    }

    /// The plan the plan-scoped steps name.
    fn current_plan(&self) -> String {
        self.plan
            .clone()
            .expect("create a plan with .plan() before a step that names one")
    }

    /// `git swarm <args>` on clone `i`; it must succeed.
    pub fn run(self, i: usize, args: &[&str]) -> Self {
        self.env.swarm(&self.clones[i], args).ok();
        self
    }

    /// `plan new <plan>` on clone `i` (with `extra` arguments such as
    /// `--title`); later steps name this plan.
    pub fn plan_with(mut self, i: usize, plan: &str, extra: &[&str]) -> Self {
        let mut args = vec!["plan", "new", plan];
        args.extend_from_slice(extra);
        self = self.run(i, &args);
        self.plan = Some(plan.to_string());
        self
    }

    /// `plan new <plan>` on clone `i`; later steps name this plan.
    pub fn plan(self, i: usize, plan: &str) -> Self {
        self.plan_with(i, plan, &[])
    }

    /// `sync` on clone `i`.
    pub fn sync(self, i: usize) -> Self {
        self.run(i, &["sync"])
    }

    /// `lead claim --plan <plan> --succession <succession>` on clone `i`.
    pub fn leader(self, i: usize, succession: &str) -> Self {
        let plan = self.current_plan();
        self.run(
            i,
            &["lead", "claim", "--plan", &plan, "--succession", succession],
        )
    }

    /// `lane new <feature> --plan <plan>` on clone `i` (with `extra`
    /// arguments such as `--owner`).
    pub fn lane_with(self, i: usize, feature: &str, extra: &[&str]) -> Self {
        let plan = self.current_plan();
        let mut args = vec!["lane", "new", feature, "--plan", &plan];
        args.extend_from_slice(extra);
        self.run(i, &args)
    }

    /// `lane new <feature> --plan <plan>` on clone `i`.
    pub fn lane(self, i: usize, feature: &str) -> Self {
        self.lane_with(i, feature, &[])
    }

    /// `task new <id> --plan <plan> --title <title>` on clone `i`.
    pub fn task(self, i: usize, id: &str, title: &str) -> Self {
        let plan = self.current_plan();
        self.run(i, &["task", "new", id, "--plan", &plan, "--title", title])
    }

    /// In lane `feature`'s worktree on clone `i`: write `files`, commit
    /// them with message `message` and push the branch `feat/<feature>`
    /// with upstream (`--no-verify`: the guards are not what these set-ups
    /// test).
    pub fn pushed(self, i: usize, feature: &str, files: &[(&str, &str)], message: &str) -> Self {
        let wt = self.worktree(i, feature);
        for (name, text) in files {
            self.env.write(&wt.join(name), text);
        }
        let mut add = vec!["add"];
        add.extend(files.iter().map(|(name, _)| *name));
        self.env.git(&wt, &add);
        self.env.git(&wt, &["commit", "--quiet", "-m", message]);
        let branch = format!("feat/{feature}");
        self.env.git(
            &wt,
            &["push", "--quiet", "--no-verify", "-u", "origin", &branch],
        );
        self
    }

    /// Clone `i` fetches and switches to `branch` (a successor's checkout).
    pub fn switched(self, i: usize, branch: &str) -> Self {
        self.env
            .git(&self.clones[i], &["fetch", "--quiet", "origin"]);
        self.env
            .git(&self.clones[i], &["switch", "--quiet", branch]);
        self
    }

    /// Lane `feature`'s worktree in clone `i`.
    pub fn worktree(&self, i: usize, feature: &str) -> PathBuf {
        worktree(&self.clones[i], feature)
    }

    /// `handoff --reason usage_limit --json` from lane `feature`'s worktree
    /// on clone `i`: the packet id.
    pub fn handoff(&self, i: usize, feature: &str) -> String {
        handoff_id(
            &self
                .env
                .swarm(
                    &self.worktree(i, feature),
                    &["handoff", "--reason", "usage_limit", "--json"],
                )
                .ok(),
        )
    }
}

/// The packet id a `--json` handoff printed.
#[track_caller]
fn handoff_id(run: &Run) -> String {
    run.json()["id"]
        .as_str()
        .expect("a handoff prints its id")
        .to_string()
}

/// Lane `feature`'s worktree in the clone `dir`.
pub fn worktree(dir: &Path, feature: &str) -> PathBuf {
    dir.join("_swarm-worktrees").join(feature)
}

/// Write a record commit with real git plumbing and push it to the remote
/// under `refname`, as anyone with push access could.
pub(crate) fn push_raw_record(env: &TestEnv, dir: &Path, refname: &str, file: &str, content: &str) {
    let blob = {
        let mut cmd = env.command("git", dir);
        cmd.args(["hash-object", "-w", "--stdin"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(content.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    let tree = {
        let mut cmd = env.command("git", dir);
        cmd.args(["mktree"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(format!("100644 blob {blob}\t{file}\n").as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    let commit = env.git(dir, &["commit-tree", &tree, "-m", "hostile record"]);
    env.git(
        dir,
        &["push", "--quiet", "origin", &format!("{commit}:{refname}")],
    );
}
