//! Named points between the steps of a multi-step write (objects written,
//! remote pushed, local ref moved, journal and note written), so tests can
//! stop a process exactly there and prove that every record is either fully
//! written or absent, and that running the command again completes it.
//!
//! - `GIT_SWARM_FAILPOINT=<name>[,<name>…]`: at that point the process aborts
//!   at once (no destructors, no flushing), as a SIGKILL would leave it.
//! - `GIT_SWARM_PAUSE=<name>=<dir>`: at that point the process creates
//!   `<dir>/arrived-<pid>` and waits until `<dir>/go` exists (at most 60 s),
//!   so a test can line several processes up and release them together.
//!
//! Both are for tests and for reproducing a crash; unset, they cost one
//! environment lookup per point.

use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Stop here if a test asked for it.
pub fn point(name: &str) {
    if let Ok(list) = std::env::var("GIT_SWARM_FAILPOINT") {
        if list.split(',').any(|p| p.trim() == name) {
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
