//! Each class of [`super::NetFailure`] met for real: the git binary
//! against a path that is not a repository, a closed port, a listener that
//! hangs up, a ref the remote has locked, a pre-receive hook that refuses,
//! and a lease that no longer holds.

use std::path::Path;
use std::process::Command;

use crate::error::Code;
use crate::git::{Git, PushOutcome, PushUpdate};

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A bare remote with `main` at one commit, and a clone of it.
fn remote_and_clone() -> (
    tempfile::TempDir,
    std::path::PathBuf,
    std::path::PathBuf,
    String,
) {
    let tmp = tempfile::tempdir().unwrap();
    let remote = tmp.path().join("remote.git");
    let clone = tmp.path().join("clone");
    git(
        tmp.path(),
        &["init", "--quiet", "--bare", remote.to_str().unwrap()],
    );
    git(
        tmp.path(),
        &["init", "--quiet", "-b", "main", clone.to_str().unwrap()],
    );
    git(&clone, &["commit", "--quiet", "--allow-empty", "-m", "one"]);
    let head = git(&clone, &["rev-parse", "HEAD"]);
    git(
        &clone,
        &["push", "--quiet", remote.to_str().unwrap(), "main"],
    );
    (tmp, remote, clone, head)
}

const SPEC: &str = "+refs/heads/*:refs/remotes/r/*";

fn fetch_code(clone: &Path, url: &str) -> crate::error::Error {
    Git::new(clone).fetch(url, &[SPEC.to_string()]).unwrap_err()
}

#[test]
fn a_path_that_is_not_a_repository_is_unreachable_and_the_message_has_no_refspec() {
    let (tmp, _remote, clone, _) = remote_and_clone();
    let nope = tmp.path().join("nope.git");
    let e = fetch_code(&clone, nope.to_str().unwrap());
    assert_eq!(e.code, Code::RemoteUnreachable, "{e}");
    assert!(e.message.contains("could not be reached"), "{e}");
    assert!(!e.message.contains("refs/"), "no refspec: {e}");
    assert!(!e.message.contains("--prune"), "no command line: {e}");
    assert_eq!(e.detail.as_ref().unwrap()["failure"], "unreachable");
}

#[test]
fn a_closed_port_is_unreachable() {
    let (_tmp, _remote, clone, _) = remote_and_clone();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let e = fetch_code(&clone, &format!("git://127.0.0.1:{port}/r.git"));
    assert_eq!(e.code, Code::RemoteUnreachable, "{e}");
    assert!(e.message.contains("refused"), "{e}");
}

#[test]
fn a_server_that_answers_503_is_busy_not_unreachable() {
    // A server that is there but failing: try again later. (A git:// server
    // that hangs up is not a test of this: git then says only that it could
    // not read from the remote, which the table reads as unreachable.)
    let (_tmp, _remote, clone, _) = remote_and_clone();
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut conn in l.incoming().flatten() {
            let mut request = [0u8; 4096];
            let _ = std::io::Read::read(&mut conn, &mut request);
            let _ = std::io::Write::write_all(
                &mut conn,
                b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    std::env::set_var("GIT_SWARM_JITTER_SEED", "1");
    let e = fetch_code(&clone, &format!("http://127.0.0.1:{port}/r.git"));
    assert_eq!(e.code, Code::RemoteBusy, "{e}");
    assert!(e.message.contains("HTTP 5xx"), "{e}");
}

/// A listener that answers every request with a 503 and counts them.
fn always_503() -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let seen = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    std::thread::spawn(move || {
        for mut conn in l.incoming().flatten() {
            counter.fetch_add(1, Ordering::SeqCst);
            let mut request = [0u8; 4096];
            let _ = std::io::Read::read(&mut conn, &mut request);
            let _ = std::io::Write::write_all(
                &mut conn,
                b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    (port, seen)
}

#[test]
fn a_ref_query_the_server_fails_is_retried_and_then_busy_not_a_git_failure() {
    // `ls-remote` (the question a refused push retry asks whether an
    // earlier attempt landed) is retried like a push or fetch, and its
    // last failure is classified: REMOTE_BUSY, not GIT_FAILED.
    let (_tmp, _remote, clone, _) = remote_and_clone();
    let (port, seen) = always_503();
    std::env::set_var("GIT_SWARM_JITTER_SEED", "1");
    let tally = std::sync::Arc::new(crate::git::NetTally::default());
    let e = Git::counted(&clone, tally.clone())
        .ls_remote(&format!("http://127.0.0.1:{port}/r.git"), &["refs/heads/"])
        .unwrap_err();
    assert_eq!(e.code, Code::RemoteBusy, "{e}");
    let ops = tally.ops();
    assert_eq!((ops.queries, ops.retries), (5, 4), "{ops:?}");
    assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 5);
}

#[test]
fn a_ref_the_remote_has_locked_is_busy() {
    let (_tmp, remote, clone, head) = remote_and_clone();
    std::fs::write(remote.join("refs/heads/next.lock"), "").unwrap();
    std::env::set_var("GIT_SWARM_JITTER_SEED", "1");
    let update = PushUpdate {
        refname: "refs/heads/next".into(),
        new: Some(head),
        expected: None,
    };
    let e = Git::new(&clone)
        .push_atomic(remote.to_str().unwrap(), &[update], &[])
        .unwrap_err();
    assert_eq!(e.code, Code::RemoteBusy, "{e}");
    assert!(e.message.contains("could not lock a ref"), "{e}");
}

#[test]
fn a_pre_receive_refusal_is_the_remotes_policy() {
    let (_tmp, remote, clone, head) = remote_and_clone();
    let hook = remote.join("hooks/pre-receive");
    std::fs::write(
        &hook,
        "#!/bin/sh\necho 'protected: ask the admin' >&2\nexit 1\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let update = PushUpdate {
        refname: "refs/heads/next".into(),
        new: Some(head),
        expected: None,
    };
    let e = Git::new(&clone)
        .push_atomic(remote.to_str().unwrap(), &[update], &[])
        .unwrap_err();
    assert_eq!(e.code, Code::PushDenied, "{e}");
    assert!(
        e.hints
            .iter()
            .any(|h| h.contains("protected: ask the admin")),
        "{e}"
    );
}

#[test]
fn a_lease_that_no_longer_holds_is_a_lost_race() {
    let (_tmp, remote, clone, head) = remote_and_clone();
    git(&clone, &["commit", "--quiet", "--allow-empty", "-m", "two"]);
    let two = git(&clone, &["rev-parse", "HEAD"]);
    // The remote's main is at `head`; the lease expects `two`.
    let update = PushUpdate {
        refname: "refs/heads/main".into(),
        new: Some(two.clone()),
        expected: Some(two),
    };
    let out = Git::new(&clone)
        .push_atomic(remote.to_str().unwrap(), &[update], &[])
        .unwrap();
    assert!(matches!(out, PushOutcome::Rejected(_)), "{out:?}");
    assert_eq!(git(&remote, &["rev-parse", "main"]), head, "nothing moved");
}

#[test]
fn an_older_git_reads_what_a_fetch_would_move_from_its_dry_run() {
    let (_tmp, remote, clone, head) = remote_and_clone();
    let g = Git::new(&clone);
    let url = remote.to_str().unwrap();
    let specs = vec!["+refs/heads/*:refs/theirs/r/*".to_string()];
    // Nothing fetched yet: main would be created.
    assert_eq!(
        g.dry_run_would_move(url, &specs).unwrap(),
        vec!["refs/theirs/r/main"]
    );
    g.fetch(url, &specs).unwrap();
    assert!(g.dry_run_would_move(url, &specs).unwrap().is_empty());
    // A branch new there, one moved there, one gone there (a fetch would
    // prune it): the same as the porcelain says.
    git(&clone, &["commit", "--quiet", "--allow-empty", "-m", "two"]);
    let two = git(&clone, &["rev-parse", "HEAD"]);
    git(&clone, &["push", "--quiet", url, "HEAD:refs/heads/main"]);
    git(&remote, &["update-ref", "refs/heads/new", &head]);
    git(&clone, &["update-ref", "refs/theirs/r/old", &two]);
    let moved = vec![
        "refs/theirs/r/main",
        "refs/theirs/r/new",
        "refs/theirs/r/old",
    ];
    assert_eq!(g.dry_run_would_move(url, &specs).unwrap(), moved);
    if crate::git::version::has(crate::git::version::Need::FetchPorcelain) {
        let mut porcelain = g.fetch_would_move(url, &specs).unwrap();
        porcelain.sort();
        assert_eq!(porcelain, moved);
    }
}
