//! Named points between the steps of a multi-step write (objects written,
//! remote pushed, local ref moved, journal and note written), so tests can
//! stop a process exactly there and prove that every record is either fully
//! written or absent, and that running the command again completes it.
//!
//! - `GIT_SWARM_FAILPOINT=<name>[,<name>…]`: at that point the process aborts
//!   at once (no destructors, no flushing), as a SIGKILL would leave it.
//!   `<name>#<n>` aborts at the n-th pass of the point in this process (a
//!   point a command passes several times, e.g. `store:commit#2`).
//! - `GIT_SWARM_PAUSE=<name>=<dir>`: at that point the process creates
//!   `<dir>/arrived-<pid>` and waits until `<dir>/go` exists (at most 60 s),
//!   so a test can line several processes up and release them together.
//!
//! - `GIT_SWARM_FAILPOINT_LOG=<file>`: every point passed is appended to
//!   `<file>`, one name a line, so a test can enumerate the points a
//!   command passes and kill it at each one.
//!
//! All are for tests and for reproducing a crash; unset, they cost one
//! environment lookup each per point.

use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Stop here if a test asked for it.
pub fn point(name: &str) {
    if let Some(log) = std::env::var_os("GIT_SWARM_FAILPOINT_LOG") {
        use std::io::Write;
        if let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
        {
            let _ = writeln!(file, "{name}");
        }
    }
    if let Ok(list) = std::env::var("GIT_SWARM_FAILPOINT") {
        let pass = passes(name);
        let hit = list
            .split(',')
            .map(str::trim)
            .any(|p| match p.split_once('#') {
                Some((at, n)) => at == name && n.parse() == Ok(pass),
                None => p == name,
            });
        if hit {
            std::process::abort();
        }
    }
    if let Ok(spec) = std::env::var("GIT_SWARM_PAUSE") {
        if let Some((at, dir)) = spec.split_once('=') {
            if at == name {
                pause(PathBuf::from(dir));
            }
        }
    }
}

/// How many times this process has passed `name`, this pass included.
fn passes(name: &str) -> usize {
    use std::collections::HashMap;
    use std::sync::Mutex;
    static PASSES: Mutex<Option<HashMap<String, usize>>> = Mutex::new(None);
    let mut guard = PASSES.lock().unwrap_or_else(|e| e.into_inner());
    let count = guard
        .get_or_insert_with(HashMap::new)
        .entry(name.to_string())
        .or_insert(0);
    *count += 1;
    *count
}

fn pause(dir: PathBuf) {
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(dir.join(format!("arrived-{}", std::process::id())), b"");
    let go = dir.join("go");
    let start = Instant::now();
    while !go.exists() {
        if start.elapsed() > Duration::from_secs(60) {
            // A test that never releases us must not hang forever.
            std::process::abort();
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}
