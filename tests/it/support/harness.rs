//! TestEnv: hermetic git (no user or system config, fixed identity), the
//! built binary first on PATH so tests run `git swarm …` exactly as a user
//! does, and helpers for a bare remote with several clones. On failure a
//! helper prints the command, cwd, status, stdout and stderr.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub struct TestEnv {
    pub tmp: tempfile::TempDir,
    pub bin: PathBuf,
    pub home: PathBuf,
    path_var: String,
    extra_env: Vec<(String, String)>,
}

#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub shown: String,
}

impl Run {
    fn describe(&self) -> String {
        format!(
            "command: {}\nexit: {}\n--- stdout\n{}\n--- stderr\n{}",
            self.shown, self.code, self.stdout, self.stderr
        )
    }
    /// Assert exit 0 and return self.
    #[track_caller]
    pub fn ok(self) -> Self {
        assert_eq!(self.code, 0, "expected success\n{}", self.describe());
        self
    }
    /// Assert a given exit code.
    #[track_caller]
    pub fn code(self, code: i32) -> Self {
        assert_eq!(self.code, code, "unexpected exit code\n{}", self.describe());
        self
    }
    /// Assert the error code printed on stderr (`error[CODE]`).
    #[track_caller]
    pub fn err(self, code: i32, error_code: &str) -> Self {
        assert_eq!(self.code, code, "unexpected exit code\n{}", self.describe());
        assert!(
            self.stderr.contains(&format!("error[{error_code}]")),
            "expected error[{error_code}]\n{}",
            self.describe()
        );
        self
    }
    /// Assert stdout contains `needle` (borrowing: for several checks in a row).
    #[track_caller]
    pub fn expect_stdout(&self, needle: &str) {
        assert!(
            self.stdout.contains(needle),
            "stdout lacks {needle:?}\n{}",
            self.describe()
        );
    }
    /// Assert stderr contains `needle` (borrowing).
    #[track_caller]
    pub fn expect_stderr(&self, needle: &str) {
        assert!(
            self.stderr.contains(needle),
            "stderr lacks {needle:?}\n{}",
            self.describe()
        );
    }
    #[track_caller]
    pub fn stdout_has(self, needle: &str) -> Self {
        assert!(
            self.stdout.contains(needle),
            "stdout lacks {needle:?}\n{}",
            self.describe()
        );
        self
    }
    #[track_caller]
    pub fn stderr_has(self, needle: &str) -> Self {
        assert!(
            self.stderr.contains(needle),
            "stderr lacks {needle:?}\n{}",
            self.describe()
        );
        self
    }
    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON: {e}\n{}", self.describe()))
    }
}

impl TestEnv {
    pub fn new() -> TestEnv {
        let tmp = tempfile::tempdir().expect("tempdir");
        let bin = tmp.path().join("bin");
        let home = tmp.path().join("home");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_git-swarm"), bin.join("git-swarm")).unwrap();
        // `GIT_SWARM_TEST_GIT=/usr/bin/git`: every test (and git-swarm
        // under test) runs that git instead of the first on PATH, e.g.
        // Debian's own 2.39 in CI's old-git pass.
        if let Some(git) = std::env::var_os("GIT_SWARM_TEST_GIT").filter(|g| !g.is_empty()) {
            std::os::unix::fs::symlink(&git, bin.join("git")).unwrap();
        }
        std::fs::write(
            home.join(".gitconfig"),
            "[user]\n\tname = Test User\n\temail = test@example.invalid\n[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n[protocol \"file\"]\n\tallow = always\n",
        )
        .unwrap();
        let path_var = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        TestEnv {
            tmp,
            bin,
            home,
            path_var,
            extra_env: Vec::new(),
        }
    }

    pub fn root(&self) -> &Path {
        self.tmp.path()
    }

    /// Set an environment variable for every command run from now on.
    pub fn set_env(&mut self, key: &str, value: &str) {
        self.extra_env.retain(|(k, _)| k != key);
        self.extra_env.push((key.into(), value.into()));
    }

    /// A command with the hermetic environment, in `dir`.
    pub fn command(&self, program: &str, dir: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(dir).env_clear();
        cmd.env("PATH", &self.path_var)
            .env("HOME", &self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", self.home.join(".gitconfig"))
            .env("GIT_AUTHOR_NAME", "Test User")
            .env("GIT_AUTHOR_EMAIL", "test@example.invalid")
            .env("GIT_COMMITTER_NAME", "Test User")
            .env("GIT_COMMITTER_EMAIL", "test@example.invalid")
            .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
            .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
            .env("LANG", "C")
            .env("TZ", "UTC");
        for (k, v) in &self.extra_env {
            cmd.env(k, v);
        }
        cmd
    }

    fn finish(shown: String, out: Output) -> Run {
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            shown,
        }
    }

    /// Run `git <args>` in `dir`, whatever its exit.
    pub fn git_run(&self, dir: &Path, args: &[&str]) -> Run {
        let out = self
            .command("git", dir)
            .args(args)
            .output()
            .expect("run git");
        Self::finish(
            format!("(in {}) git {}", dir.display(), args.join(" ")),
            out,
        )
    }

    /// Run `git <args>` in `dir`; it must succeed; returns trimmed stdout.
    #[track_caller]
    pub fn git(&self, dir: &Path, args: &[&str]) -> String {
        self.git_run(dir, args).ok().stdout.trim_end().to_string()
    }

    /// Run `git <args>` in `dir` with `input` on its stdin; it must
    /// succeed; returns trimmed stdout (`mktree`, `fast-import`).
    #[track_caller]
    pub fn git_stdin(&self, dir: &Path, args: &[&str], input: &[u8]) -> String {
        use std::io::Write;
        let mut child = self
            .command("git", dir)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run git");
        child.stdin.take().unwrap().write_all(input).unwrap();
        let out = child.wait_with_output().expect("wait for git");
        assert!(
            out.status.success(),
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim_end().to_string()
    }

    /// Run `git swarm <args>` in `dir` (through git, as a user would).
    pub fn swarm(&self, dir: &Path, args: &[&str]) -> Run {
        let out = self
            .command("git", dir)
            .arg("swarm")
            .args(args)
            .output()
            .expect("run git swarm");
        Self::finish(
            format!("(in {}) git swarm {}", dir.display(), args.join(" ")),
            out,
        )
    }

    /// Like `swarm`, with extra environment for this one call.
    pub fn swarm_env(&self, dir: &Path, env: &[(&str, &str)], args: &[&str]) -> Run {
        let mut cmd = self.command("git", dir);
        cmd.arg("swarm").args(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("run git swarm");
        Self::finish(
            format!("(in {}) git swarm {}", dir.display(), args.join(" ")),
            out,
        )
    }

    /// A fresh repository with one commit on main (no remote).
    pub fn repo(&self, name: &str) -> PathBuf {
        let dir = self.root().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        self.git(&dir, &["init", "--quiet"]);
        std::fs::write(dir.join("README.md"), "hello\n").unwrap();
        self.git(&dir, &["add", "README.md"]);
        self.git(&dir, &["commit", "--quiet", "-m", "initial"]);
        self.git(&dir, &["config", "swarm.as", name]);
        dir
    }

    /// A bare remote with one commit on main and `n` clones named `names`,
    /// each with swarm.as = its name and `git swarm init` run.
    pub fn remote_with_clones(&self, names: &[&str]) -> (PathBuf, Vec<PathBuf>) {
        let remote = self.root().join("remote.git");
        self.git(self.root(), &["init", "--quiet", "--bare", "remote.git"]);
        let seed = self.root().join("seed");
        self.git(
            self.root(),
            &["clone", "--quiet", remote.to_str().unwrap(), "seed"],
        );
        std::fs::write(seed.join("README.md"), "hello\n").unwrap();
        self.git(&seed, &["add", "README.md"]);
        self.git(&seed, &["commit", "--quiet", "-m", "initial"]);
        self.git(&seed, &["push", "--quiet", "origin", "HEAD:main"]);
        let clones = names
            .iter()
            .map(|n| self.clone_remote(&remote, n))
            .collect();
        (remote, clones)
    }

    pub fn clone_remote(&self, remote: &Path, name: &str) -> PathBuf {
        self.git(
            self.root(),
            &["clone", "--quiet", remote.to_str().unwrap(), name],
        );
        let dir = self.root().join(name);
        self.git(&dir, &["config", "swarm.as", name]);
        self.swarm(&dir, &["init"]).ok();
        dir
    }

    /// `git for-each-ref` under `prefix`: ref name -> object id.
    pub fn refs(&self, dir: &Path, prefix: &str) -> BTreeMap<String, String> {
        self.git(
            dir,
            &["for-each-ref", "--format=%(refname) %(objectname)", prefix],
        )
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
    }

    /// Every ref a command could write in a repository, for "nothing
    /// changed" assertions: all of them but HEAD and the mirror of the
    /// remote's swarm refs (`refs/swarm-remotes/`), which any fetch
    /// refreshes. `for-each-ref ""` matches no ref at all: this once compared
    /// two empty maps (see `all_refs_sees_every_ref` in tests/it/cli/mod.rs).
    pub fn all_refs(&self, dir: &Path) -> BTreeMap<String, String> {
        let mut all = self.refs(dir, "refs");
        all.retain(|name, _| !name.starts_with("refs/swarm-remotes/"));
        all
    }

    pub fn write(&self, path: &Path, text: &str) {
        if let Some(p) = path.parent() {
            std::fs::create_dir_all(p).unwrap();
        }
        std::fs::write(path, text).unwrap();
    }

    pub fn read(&self, path: &Path) -> String {
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
    }
}

/// The project's documentation: README.md, then every page under docs/ by
/// name, each with its text.
pub fn project_docs() -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    pages.insert(0, root.join("README.md"));
    pages
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect()
}
