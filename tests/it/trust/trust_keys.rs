//! How a signing key is named, as git names it (docs/trust.md "Signing"):
//! a literal public key (`key::ssh-ed25519 AAAA…`) signs through ssh-agent,
//! and `~/` in a key path is the home directory; with real keys made by
//! ssh-keygen and a real ssh-agent.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use crate::support::harness::TestEnv;
use crate::trust::{keygen, publish_trust_list};

/// An ssh-agent of this test's own, on a socket under the test's root,
/// stopped (by its id) when dropped.
struct Agent {
    child: Child,
    sock: PathBuf,
}

impl Agent {
    fn start(env: &TestEnv) -> Agent {
        let sock = env.root().join("agent.sock");
        let child = env
            .command("ssh-agent", env.root())
            .args(["-D", "-a"])
            .arg(&sock)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("run ssh-agent");
        for _ in 0..500 {
            if sock.exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(sock.exists(), "ssh-agent made no socket");
        Agent { child, sock }
    }

    /// `ssh-add <key>` into this agent.
    fn add(&self, env: &TestEnv, key: &Path) {
        let out = env
            .command("ssh-add", env.root())
            .env("SSH_AUTH_SOCK", &self.sock)
            .arg("-q")
            .arg(key)
            .output()
            .expect("run ssh-add");
        assert!(out.status.success(), "ssh-add: {out:?}");
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An ed25519 key pair made by ssh-keygen at `path`; its public line.
fn ssh_key(env: &TestEnv, path: &Path, comment: &str) -> String {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let out = env
        .command("ssh-keygen", env.root())
        .args(["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f"])
        .arg(path)
        .output()
        .expect("run ssh-keygen");
    assert!(out.status.success(), "ssh-keygen: {out:?}");
    env.read(&path.with_extension("pub")).trim().to_string()
}

/// `<address> namespaces="git" <type> <blob>`: the trust-list line of a
/// public key line.
fn signers_line(address: &str, public: &str) -> String {
    let mut words = public.split_whitespace();
    let (kind, blob) = (words.next().unwrap(), words.next().unwrap());
    format!("{address} namespaces=\"git\" {kind} {blob}")
}

#[test]
fn a_literal_ssh_key_in_user_signing_key_signs_through_ssh_agent_as_git_does() {
    let mut env = TestEnv::new();
    let (_remote, clones) = env.remote_with_clones(&["alice"]);
    let a = clones[0].clone();
    let key = env.root().join("keys/alice");
    let public = ssh_key(&env, &key, "alice@laptop");
    publish_trust_list(&env, &[signers_line("alice", &public)], &[&a]);
    let agent = Agent::start(&env);
    agent.add(&env, &key);
    // The private key is in the agent only: git's literal-key setup.
    std::fs::remove_file(&key).unwrap();
    env.set_env("SSH_AUTH_SOCK", agent.sock.to_str().unwrap());
    for (k, v) in [
        ("gpg.format", "ssh"),
        ("commit.gpgSign", "true"),
        ("user.signingKey", &format!("key::{public}")),
        ("swarm.trust", "require"),
    ] {
        env.git(&a, &["config", k, v]);
    }
    // git itself signs with it.
    env.git(&a, &["commit", "--quiet", "--allow-empty", "-m", "by git"]);

    env.swarm(&a, &["plan", "new", "lit"]).ok();
    let list = env.swarm(&a, &["plan", "list"]).ok();
    list.expect_stdout("lit");
    assert!(!list.stdout.contains("UNTRUSTED"), "{}", list.stdout);
    let signers = env.root().join("signers");
    env.write(&signers, &format!("{}\n", signers_line("alice", &public)));
    let verify = env.git_run(
        &a,
        &[
            "-c",
            &format!("gpg.ssh.allowedSignersFile={}", signers.display()),
            "verify-commit",
            "-v",
            "refs/swarm/plans/lit",
        ],
    );
    assert_eq!(verify.code, 0, "{verify:?}");
    assert!(verify.stderr.contains("Good \"git\" signature for alice"));
    // The legacy form git also reads as a literal key: `ssh-…` without `key::`.
    env.git(&a, &["config", "user.signingKey", &public]);
    env.swarm(&a, &["plan", "new", "legacy"]).ok();
    assert!(!env
        .swarm(&a, &["plan", "list"])
        .ok()
        .stdout
        .contains("UNTRUSTED"));

    // Without the agent the key cannot sign: an environment error that says
    // where the private half must be, and nothing written.
    let before = env.all_refs(&a);
    let gone = env.root().join("no-agent.sock");
    env.swarm_env(
        &a,
        &[("SSH_AUTH_SOCK", gone.to_str().unwrap())],
        &["plan", "new", "q"],
    )
    .err(4, "SIGNING_FAILED")
    .stderr_has("ssh-agent");
    assert_eq!(env.all_refs(&a), before);

    // `agent keygen` reads a literal key for the trust-list line.
    env.git(
        &a,
        &[
            "config",
            "swarm.alice.signingKey",
            &format!("key::{public}"),
        ],
    );
    let line = keygen(&env, &a, "alice");
    assert_eq!(line, signers_line("alice", &public));
    // The literal key is never written anywhere in the clone.
    assert!(!a.join(".git/swarm/keys/alice").exists());
}

#[test]
fn a_key_path_under_home_is_expanded_by_keygen_and_the_signer_as_git_does() {
    let env = TestEnv::new();
    let (_remote, clones) = env.remote_with_clones(&["bob"]);
    let b = clones[0].clone();
    let home = env.root().join("home");
    let public = ssh_key(&env, &home.join(".ssh/bob_signing"), "bob");
    env.git(
        &b,
        &["config", "swarm.bob.signingKey", "~/.ssh/bob_signing"],
    );
    let out = env
        .swarm(&b, &["agent", "keygen", "--as", "bob", "--json"])
        .ok();
    let doc = out.json();
    assert_eq!(doc["allowed_signers"], signers_line("bob", &public));
    assert_eq!(doc["created"], false);
    assert!(!b.join(".git/swarm/keys/bob").exists());

    publish_trust_list(&env, &[signers_line("bob", &public)], &[&b]);
    env.git(&b, &["config", "swarm.trust", "require"]);
    env.swarm(&b, &["plan", "new", "home"]).ok();
    let list = env.swarm(&b, &["plan", "list"]).ok();
    list.expect_stdout("home");
    assert!(!list.stdout.contains("UNTRUSTED"), "{}", list.stdout);
}

/// A stand-in for an ssh-keygen older than `-Y` (OpenSSH before 8.2):
/// what such a one says to an option it does not know.
fn old_ssh_keygen(env: &TestEnv) -> PathBuf {
    let path = env.root().join("old-ssh-keygen");
    env.write(
        &path,
        "#!/bin/sh\necho 'unknown option -- Y' >&2\necho 'usage: ssh-keygen [-q] [-b bits] [-C comment] [-f output_keyfile]' >&2\nexit 1\n",
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// The verdict lines kept on disk in `clone` (all files, all lists).
fn kept_verdicts(clone: &Path) -> String {
    let mut out = String::new();
    let dir = clone.join(".git/swarm/cache/trust");
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.to_string_lossy().ends_with(".verdicts") {
                out.push_str(&std::fs::read_to_string(&p).unwrap());
            }
        }
    }
    out
}

#[test]
fn a_check_that_cannot_run_ssh_keygen_is_an_environment_error_and_no_verdict_is_kept() {
    let env = TestEnv::new();
    let (_remote, clones) = env.remote_with_clones(&["alice"]);
    let a = clones[0].clone();
    let line = keygen(&env, &a, "alice");
    publish_trust_list(&env, &[line], &[&a]);
    env.git(&a, &["config", "swarm.trust", "require"]);
    env.swarm(&a, &["plan", "new", "p"]).ok();
    // No verdict kept yet (as for a record another clone wrote).
    std::fs::remove_dir_all(a.join(".git/swarm/cache/trust")).unwrap();
    let old = old_ssh_keygen(&env);
    let missing = env.root().join("no/ssh-keygen");

    for program in [&old, &missing] {
        let program = program.to_str().unwrap();
        env.git(&a, &["config", "gpg.ssh.program", program]);
        let list = env
            .swarm(&a, &["plan", "list"])
            .err(4, "SIGNING_TOOL_MISSING");
        assert!(!list.stdout.contains("UNTRUSTED"), "{}", list.stdout);
        list.expect_stderr(program);
        env.swarm(&a, &["plan", "show", "p"])
            .err(4, "SIGNING_TOOL_MISSING")
            .stderr_has("gpg.ssh.program");
        // Under warn the record is used, and the command says it was not
        // checked.
        env.git(&a, &["config", "swarm.trust", "warn"]);
        env.swarm(&a, &["plan", "list"])
            .ok()
            .stdout_has("p")
            .stderr_has("not checked");
        env.git(&a, &["config", "swarm.trust", "require"]);
    }
    assert_eq!(
        env.swarm(&a, &["plan", "new", "q"]).code,
        4,
        "a missing ssh-keygen cannot sign either"
    );
    let signing = env.swarm(&a, &["plan", "new", "q"]);
    assert!(
        signing.stderr.contains("SIGNING_TOOL_MISSING"),
        "{signing:?}"
    );
    assert!(kept_verdicts(&a).is_empty(), "{}", kept_verdicts(&a));

    // With ssh-keygen back, the record is trusted: nothing the tool
    // caused was kept as a verdict.
    env.git(&a, &["config", "--unset", "gpg.ssh.program"]);
    let list = env.swarm(&a, &["plan", "list"]).ok();
    list.expect_stdout("p");
    assert!(!list.stdout.contains("UNTRUSTED"), "{}", list.stdout);
    assert!(kept_verdicts(&a).contains(" T "), "{}", kept_verdicts(&a));
}

/// A trust list committed as a symlink is not followed (it is read from
/// the base branch's tree, where a symlink's blob is its target's path):
/// the reason says so instead of "no .swarm/allowed_signers".
#[test]
fn a_symlinked_trust_list_is_said_to_be_a_symlink_not_missing() {
    let env = TestEnv::new();
    let (_remote, clones) = env.remote_with_clones(&["alice"]);
    let a = clones[0].clone();
    let line = keygen(&env, &a, "alice");
    let seed = env.root().join("seed");
    env.git(&seed, &["pull", "--quiet", "--ff-only", "origin", "main"]);
    std::fs::create_dir_all(seed.join(".swarm")).unwrap();
    env.write(&seed.join("signers"), &format!("{line}\n"));
    std::os::unix::fs::symlink("../signers", seed.join(".swarm/allowed_signers")).unwrap();
    env.git(&seed, &["add", "signers", ".swarm/allowed_signers"]);
    env.git(&seed, &["commit", "--quiet", "-m", "trust list, linked"]);
    env.git(&seed, &["push", "--quiet", "origin", "HEAD:main"]);
    env.git(&a, &["fetch", "--quiet", "origin"]);
    env.git(&a, &["config", "swarm.trust", "warn"]);
    env.swarm(&a, &["plan", "new", "p"]).ok();
    let list = env.swarm(&a, &["plan", "list"]).ok();
    assert!(
        list.stderr.contains(
            ".swarm/allowed_signers on refs/remotes/origin/main is a symlink (to ../signers)"
        ),
        "{list:?}"
    );
}

/// A verify program that fails without saying why (`/bin/false`) judged
/// nothing: the record shows untrusted for that run, but no verdict is
/// kept, so the next run with ssh-keygen trusts it.
#[test]
fn a_verify_program_that_fails_without_a_reason_leaves_no_verdict_kept() {
    let env = TestEnv::new();
    let (_remote, clones) = env.remote_with_clones(&["alice"]);
    let a = clones[0].clone();
    let line = keygen(&env, &a, "alice");
    publish_trust_list(&env, &[line], &[&a]);
    env.git(&a, &["config", "swarm.trust", "warn"]);
    env.swarm(&a, &["plan", "new", "p"]).ok();
    std::fs::remove_dir_all(a.join(".git/swarm/cache/trust")).unwrap();
    env.git(&a, &["config", "gpg.ssh.program", "/bin/false"]);
    let failed = env.swarm(&a, &["plan", "list"]).ok();
    env.git(&a, &["config", "--unset", "gpg.ssh.program"]);
    assert!(failed.stderr.contains("untrusted plan 'p'"), "{failed:?}");
    assert!(!kept_verdicts(&a).contains(" U "), "{}", kept_verdicts(&a));
    let list = env.swarm(&a, &["plan", "list"]).ok();
    assert!(!list.stderr.contains("untrusted"), "{list:?}");
    assert!(kept_verdicts(&a).contains(" T "), "{}", kept_verdicts(&a));
}

#[test]
fn a_relayed_message_is_signed_by_whom_its_key_is_listed_for_at_its_time_every_principal_counted() {
    let mut env = TestEnv::new();
    let (_remote, clones) = env.remote_with_clones(&["alice", "bob"]);
    let (a, b) = (clones[0].clone(), clones[1].clone());
    let bob = keygen(&env, &b, "bob");
    let bob_key = env.git(&b, &["config", "swarm.bob.signingKey"]);
    let keys = env.root().join("keys");
    // carol's own key, retired from April on;
    let carol = ssh_key(&env, &keys.join("carol"), "carol");
    let retired = signers_line("carol", &carol).replacen(
        "namespaces=\"git\"",
        "namespaces=\"git\",valid-before=\"20260401000000Z\"",
        1,
    );
    // a key listed for dave and carol on one line;
    let shared = ssh_key(&env, &keys.join("shared"), "dave+carol");
    // a key listed for bob and carol: it verifies as bob's.
    let both = ssh_key(&env, &keys.join("both"), "bob+carol");
    publish_trust_list(
        &env,
        &[
            bob,
            retired,
            signers_line("dave,carol", &shared),
            signers_line("bob,carol", &both),
        ],
        &[&a, &b],
    );
    // Posted in March, while carol's key was valid.
    env.set_env("GIT_SWARM_NOW", "2026-03-01T00:00:00Z");
    for (body, key) in [
        ("m-bob", bob_key.clone()),
        ("m-carol", keys.join("carol").display().to_string()),
        ("m-shared", keys.join("shared").display().to_string()),
        ("m-both", keys.join("both").display().to_string()),
    ] {
        env.git(&b, &["config", "swarm.bob.signingKey", &key]);
        env.swarm(&b, &["notify", "alice", body, "--relayed-from", "carol"])
            .ok();
    }
    env.swarm(&b, &["sync"]).ok();

    env.git(&a, &["config", "swarm.trust", "warn"]);
    env.swarm(&a, &["sync"]).ok();
    let signed = |doc: &serde_json::Value| -> Vec<(String, serde_json::Value)> {
        doc["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["body"].as_str().unwrap().to_string(),
                    m["relay_signed"].clone(),
                )
            })
            .collect::<std::collections::BTreeMap<_, _>>()
            .into_iter()
            .collect()
    };
    let want = vec![
        ("m-bob".to_string(), serde_json::json!(false)),
        ("m-both".to_string(), serde_json::json!(true)),
        ("m-carol".to_string(), serde_json::json!(true)),
        ("m-shared".to_string(), serde_json::json!(true)),
    ];
    let inbox = env.swarm(&a, &["inbox", "--all", "--json"]).ok();
    assert_eq!(signed(&inbox.json()), want, "{}", inbox.stdout);
    // The same warm, from the verdicts kept.
    let again = env.swarm(&a, &["inbox", "--all", "--json"]).ok();
    assert_eq!(signed(&again.json()), want, "{}", again.stdout);
    env.swarm(&a, &["inbox", "--all"])
        .ok()
        .stdout_has("(relayed from carol, signed by carol)")
        .stdout_has("(relayed from carol; carol did not sign it)");
}

/// A trust list line with an option ssh-keygen does not know is skipped by
/// ssh-keygen, so its key signs for nobody: the command names the line.
#[test]
fn a_trust_list_option_ssh_keygen_does_not_know_is_named_with_its_line() {
    let env = TestEnv::new();
    let (_remote, clones) = env.remote_with_clones(&["alice"]);
    let a = clones[0].clone();
    let line = keygen(&env, &a, "alice");
    let odd = line.replacen("alice ", "alice frobnicate=\"1\" ", 1);
    // A good line first (another address's), then alice's odd one.
    let good = line.replacen("alice ", "bob ", 1);
    publish_trust_list(&env, &[good, odd], &[&a]);
    env.git(&a, &["config", "swarm.trust", "warn"]);
    env.swarm(&a, &["plan", "new", "p"]).ok();
    let list = env.swarm(&a, &["plan", "list"]).ok();
    assert!(
        list.stderr.contains(
            ".swarm/allowed_signers on refs/remotes/origin/main names options ssh-keygen does not know (line 2: 'frobnicate')"
        ),
        "{list:?}"
    );
    // ssh-keygen skipped the line: alice's key signs for nobody.
    assert!(list.stderr.contains("untrusted plan 'p'"), "{list:?}");
}
