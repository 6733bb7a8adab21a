//! How a signing key is named, as git names it (docs/trust.md "Signing"):
//! a literal public key (`key::ssh-ed25519 AAAA…`) signs through ssh-agent,
//! and `~/` in a key path is the home directory; with real keys made by
//! ssh-keygen and a real ssh-agent.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use crate::harness::TestEnv;
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
