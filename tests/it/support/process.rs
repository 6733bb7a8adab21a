//! Driving git-swarm as separate processes: spawn, pause at a failpoint
//! and release, kill at random moments, and check what a crash left behind.
//! Shared by the lead, packet, lane, crash and soak tests.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::support::harness::{Run, TestEnv};

/// The value of one ref in a repository (bare or not).
pub(crate) fn ref_of(env: &TestEnv, dir: &Path, name: &str) -> Option<String> {
    env.refs(dir, name).get(name).cloned()
}

/// `git fsck` finds nothing broken (dangling objects are fine: a killed
/// process may leave an unreferenced commit behind, never a broken one).
#[track_caller]
pub(crate) fn assert_fsck_clean(env: &TestEnv, dir: &Path) {
    let run = env.git_run(dir, &["fsck", "--no-dangling", "--no-progress"]);
    assert_eq!(
        run.code,
        0,
        "git fsck failed in {}: {run:#?}",
        dir.display()
    );
    let all = format!("{}{}", run.stdout, run.stderr);
    for bad in ["error", "missing", "broken", "corrupt", "bad "] {
        assert!(!all.contains(bad), "git fsck in {}: {all}", dir.display());
    }
}

/// Rounds for soak tests: `GIT_SWARM_SOAK_ROUNDS`, else `default`.
pub(crate) fn soak_rounds(default: usize) -> usize {
    std::env::var("GIT_SWARM_SOAK_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A small deterministic generator; the seed is printed so a failure can be
/// replayed with `GIT_SWARM_SOAK_SEED`.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(what: &str) -> Rng {
        let seed = std::env::var("GIT_SWARM_SOAK_SEED")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(42)
            });
        eprintln!("{what}: GIT_SWARM_SOAK_SEED={seed}");
        Rng(seed | 1)
    }
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n.max(1)
    }
}

/// Spawn `git-swarm <args>` in `dir` with extra environment. The binary is
/// run directly, not through `git swarm`: git runs it as a child process, so
/// killing `git` would leave git-swarm running to completion.
pub(crate) fn spawn(env: &TestEnv, dir: &Path, vars: &[(&str, &str)], args: &[&str]) -> Child {
    let mut cmd = env.command("git-swarm", dir);
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.spawn().expect("spawn git swarm")
}

pub(crate) fn finish(child: Child, shown: &str) -> Run {
    let out = child.wait_with_output().expect("wait for git swarm");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        shown: shown.to_string(),
    }
}

/// The failpoint every command passes once it has begun writing: a record
/// commit is written and no ref has moved yet (`Store::commit`).
pub(crate) const WRITING: &str = "store:commit";

/// When a crash test kills a run that has reached its writing point.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kill {
    /// Right there, while it waits at the point: certain to land mid-write.
    AtPoint,
    /// Let it go on, and kill it this many milliseconds later if it is
    /// still running (a later moment of the write, or none if it finished).
    After(u64),
}

impl Kill {
    /// Round 0 always kills at the point, so every command is killed
    /// mid-write at least once however fast the machine; later rounds
    /// spread the kills over the rest of the write.
    pub(crate) fn draw(rng: &mut Rng, round: usize, max_ms: u64) -> Kill {
        if round == 0 || rng.below(4) == 0 {
            Kill::AtPoint
        } else {
            Kill::After(rng.below(max_ms))
        }
    }
}

/// What `run_and_kill` did to a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Killed {
    /// It finished without reaching its writing point (it had nothing to write).
    NeverWrote,
    /// It reached its writing point and then finished before the kill.
    Finished,
    /// SIGKILLed while still running, after it had begun writing.
    MidWrite,
}

/// Spawn git-swarm in a process group of its own, stopped at `point` (where
/// it has begun writing); once it is there, SIGKILL it (only it) as `kill`
/// says. Then wait until the git processes it had started — orphans now, as
/// after a real crash — have finished too, so the state we inspect is the
/// one the crash leaves. Only a kill of a run that had begun writing and
/// was still running counts as `MidWrite`: nothing here depends on how fast
/// the machine is.
pub(crate) fn run_and_kill(
    env: &TestEnv,
    dir: &Path,
    point: &str,
    args: &[&str],
    kill: Kill,
) -> Killed {
    use std::os::unix::process::CommandExt;
    let gate = new_gate(env, point);
    let mut cmd = env.command("git-swarm", dir);
    cmd.args(args)
        .env("GIT_SWARM_PAUSE", format!("{point}={}", gate.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    let mut child = cmd.spawn().expect("spawn git-swarm");
    let group = child.id();
    // Wait until it is at its writing point, or finished without reaching it.
    let start = Instant::now();
    let outcome = loop {
        if arrivals(&gate) > 0 {
            break None;
        }
        if let Ok(Some(_)) = child.try_wait() {
            // It may have arrived just before exiting (a point right at the end).
            break Some(if arrivals(&gate) > 0 {
                Killed::Finished
            } else {
                Killed::NeverWrote
            });
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "git-swarm {args:?} neither reached {point} nor finished"
        );
        std::thread::sleep(Duration::from_millis(2));
    };
    let killed = match outcome {
        Some(done) => done,
        None => {
            if let Kill::After(ms) = kill {
                std::fs::write(gate.join("go"), "").expect("open the gate");
                std::thread::sleep(Duration::from_millis(ms));
            }
            // Still running (for AtPoint: waiting at the gate, certainly) means
            // the kill lands in the middle of the write.
            if matches!(child.try_wait(), Ok(None)) && child.kill().is_ok() {
                Killed::MidWrite
            } else {
                Killed::Finished
            }
        }
    };
    let _ = child.wait();
    let start = Instant::now();
    while group_running(group) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the orphans of a killed git-swarm did not finish"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    killed
}

/// A failpoint (`GIT_SWARM_FAILPOINT`) aborts the process; run through
/// `git swarm`, git reports the signal and exits 128 + SIGABRT (6).
#[track_caller]
pub(crate) fn assert_aborted(run: &Run, point: &str) {
    assert_eq!(run.code, 134, "{point}: the failpoint must abort\n{run:#?}");
    assert!(
        run.stderr.contains("git-swarm died of signal 6"),
        "{point}: {run:#?}"
    );
}

/// Whether a process of group `group` is still running (zombies, which the
/// container's init may reap late, are finished).
fn group_running(group: u32) -> bool {
    i32::try_from(group).is_ok_and(|g| !group_members(g).is_empty())
}

/// The live processes of group `group` (zombies, which the container's
/// init may reap late, are finished): (pid, parent, command line).
pub(crate) fn group_members(group: i32) -> Vec<(i32, i32, String)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| {
            let pid = e.file_name().to_string_lossy().parse::<i32>().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            // `pid (comm) state ppid pgrp …`; comm may contain spaces.
            let (_, rest) = stat.rsplit_once(')')?;
            let f: Vec<&str> = rest.split_whitespace().collect();
            if f.len() < 3 || matches!(f[0], "Z" | "X") || f[2].parse::<i32>().ok()? != group {
                return None;
            }
            let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            Some((pid, f[1].parse().ok()?, cmd))
        })
        .collect()
}

/// How many processes have reached the pause point of `gate`.
fn arrivals(gate: &Path) -> usize {
    std::fs::read_dir(gate)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with("arrived-"))
                .count()
        })
        .unwrap_or(0)
}

/// A fresh gate directory for `point`, unique in this test.
pub(crate) fn new_gate(env: &TestEnv, point: &str) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    env.root()
        .join(format!("gate-{}-{n}", point.replace(':', "-")))
}

/// Wait until `n` processes have reached a pause point in `dir`.
pub(crate) fn wait_arrivals(dir: &Path, n: usize) {
    let start = Instant::now();
    loop {
        let arrived = arrivals(dir);
        if arrived >= n {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "only {arrived} of {n} processes reached the pause point"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A git-swarm process stopped at a named failpoint (`GIT_SWARM_PAUSE`),
/// so a test can act while it waits there, then let it go on.
pub(crate) struct Paused {
    child: Child,
    gate: PathBuf,
    shown: String,
}

impl Paused {
    /// Start `git-swarm <args>` in `dir`; return once it waits at `point`.
    pub(crate) fn at(
        env: &TestEnv,
        dir: &Path,
        point: &str,
        vars: &[(&str, &str)],
        args: &[&str],
    ) -> Paused {
        // Each its own gate: several may wait at one point, released one by one.
        let gate = new_gate(env, point);
        let spec = format!("{point}={}", gate.display());
        let mut all: Vec<(&str, &str)> = vec![("GIT_SWARM_PAUSE", &spec)];
        all.extend_from_slice(vars);
        let child = spawn(env, dir, &all, args);
        wait_arrivals(&gate, 1);
        Paused {
            child,
            gate,
            shown: format!("git-swarm {} (paused at {point})", args.join(" ")),
        }
    }

    /// Let it go on, and wait for its result.
    pub(crate) fn release(self) -> Run {
        std::fs::write(self.gate.join("go"), "").expect("open the gate");
        finish(self.child, &self.shown)
    }
}

impl Paused {
    /// SIGKILL it where it waits, and wait until it is gone.
    pub(crate) fn kill(mut self) {
        self.child.kill().expect("SIGKILL the paused git-swarm");
        let _ = self.child.wait();
    }
}

/// One process of [`race_to`]: its directory, extra environment, arguments.
pub(crate) type Start<'a> = (&'a Path, &'a [(&'a str, &'a str)], &'a [&'a str]);

/// Start git-swarm processes (dir, extra environment, arguments) that may
/// stop at `point`, each with a gate of its own, and wait until every one
/// has either stopped there or finished without reaching it: those stopped
/// (to release or kill), and the runs of the others.
pub(crate) fn race_to(env: &TestEnv, point: &str, starts: &[Start]) -> (Vec<Paused>, Vec<Run>) {
    let mut pending: Vec<(Child, PathBuf, String)> = starts
        .iter()
        .map(|(dir, vars, args)| {
            let gate = new_gate(env, point);
            let spec = format!("{point}={}", gate.display());
            let mut all: Vec<(&str, &str)> = vec![("GIT_SWARM_PAUSE", &spec)];
            all.extend_from_slice(vars);
            let child = spawn(env, dir, &all, args);
            let shown = format!("git-swarm {} (racing to {point})", args.join(" "));
            (child, gate, shown)
        })
        .collect();
    let (mut paused, mut runs) = (Vec::new(), Vec::new());
    let start = Instant::now();
    while !pending.is_empty() {
        let mut i = 0;
        while i < pending.len() {
            let (child, gate, _) = &mut pending[i];
            let arrived = arrivals(gate) > 0;
            let exited = !arrived && matches!(child.try_wait(), Ok(Some(_)));
            if arrived || exited {
                let (child, gate, shown) = pending.swap_remove(i);
                if arrived {
                    paused.push(Paused { child, gate, shown });
                } else {
                    runs.push(finish(child, &shown));
                }
            } else {
                i += 1;
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{} processes neither reached {point} nor finished",
            pending.len()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    (paused, runs)
}
