//! Credentials in free text: every field git-swarm publishes (plan text and
//! record, journal messages, reports, reasons, refspecs, packets) refuses a
//! credential of each kind, naming the field and the kind, never the value,
//! and writes nothing; and ordinary text (this project's own docs as a
//! plan) passes. Fakes are built from parts at run time.

use std::path::Path;

use serde_json::Value;

use crate::support::fixture::Swarm;
use crate::support::harness::TestEnv;

/// `n` characters of a mixed base62 alphabet.
fn b62(n: usize) -> String {
    "aB3dE5gH7jK9mN2pQ4sT6vW8yZ0cF1"
        .chars()
        .cycle()
        .take(n)
        .collect()
}

fn hex(n: usize) -> String {
    "0a1b2c3d4e5f6789".chars().cycle().take(n).collect()
}

/// One credential of each of several kinds the issue named, with its kind.
fn samples() -> Vec<(&'static str, String)> {
    vec![
        ("stripe-live-key", format!("{}_live_{}", "sk", b62(24))),
        ("gcp-api-key", format!("{}{}", "AIza", b62(35))),
        (
            "anthropic-api-key",
            format!("{}-ant-api03-{}", "sk", b62(93)),
        ),
        ("npm-token", format!("{}_{}", "npm", b62(36))),
        ("shopify-token", format!("{}_{}", "shpat", hex(32))),
        (
            "url-password",
            format!("redis://:{}@cache.internal:6379", b62(16)),
        ),
        (
            "authorization-header",
            format!("Authorization: Bearer {}", b62(40)),
        ),
        ("aws-secret-key", format!("the aws secret is {}", b62(40))),
        ("secret-assignment", format!("password=X={}", b62(10))),
    ]
}

/// What a refusal must look like: exit 2, the code, the field and kind in
/// `--json`, the value nowhere, and (checked by the caller) no ref moved.
fn refused(
    env: &TestEnv,
    dir: &Path,
    args: &[&str],
    code: &str,
    field: &str,
    kind: &str,
    value: &str,
) {
    let mut with_json = args.to_vec();
    with_json.push("--json");
    let run = env.swarm(dir, &with_json).code(2);
    let v: Value = run.json();
    assert_eq!(v["error"]["code"], code, "{args:?}: {v:#}");
    let findings = v["error"]["detail"]["findings"].as_array().unwrap();
    assert!(
        findings
            .iter()
            .any(|f| f["field"] == field && f["kind"] == kind),
        "{args:?}: expected {field} as {kind}, got {findings:#?}"
    );
    let text = env.swarm(dir, args).err(2, code);
    text.expect_stderr(&format!("`{field}` ({kind}:"));
    text.expect_stderr("nothing was written");
    for out in [&run.stdout, &run.stderr, &text.stdout, &text.stderr] {
        assert!(
            !out.contains(value),
            "{args:?}: the value was echoed: {out}"
        );
    }
}

#[test]
fn every_free_text_field_refuses_each_kind_and_writes_nothing() {
    let (env, remote, clones) = Swarm::new(&["alice"])
        .plan(0, "auth")
        .run(0, &["plan", "checkout", "auth"])
        .lane(0, "login")
        .leader(0, "alice,bob")
        .sync(0)
        .parts();
    let a = &clones[0];
    let local = env.all_refs(a);
    let published = env.all_refs(&remote);
    let plan_md = a.join("PLAN.md");
    let saved = env.read(&plan_md);

    for (kind, s) in samples() {
        // The plan: its title, its text (by line), a --from YAML field, -m.
        refused(
            &env,
            a,
            &["plan", "new", "p2", "--title", &s],
            "PLAN_SECRET",
            "title",
            kind,
            &s,
        );
        env.write(&a.join("notes.md"), &format!("# Notes\n{s}\n"));
        refused(
            &env,
            a,
            &["plan", "new", "p3", "--from", "notes.md"],
            "PLAN_SECRET",
            "notes.md line 2",
            kind,
            &s,
        );
        env.write(
            &a.join("p.yaml"),
            &format!("schema: swarm-plan/v1\ntitle: ok\nvault_note: '{s}'\n"),
        );
        refused(
            &env,
            a,
            &["plan", "new", "p4", "--from", "p.yaml"],
            "PLAN_SECRET",
            "vault_note",
            kind,
            &s,
        );
        env.write(&plan_md, &format!("{saved}\nsteps\n{s}\n"));
        let line = format!("PLAN.md line {}", saved.lines().count() + 3);
        refused(
            &env,
            a,
            &["plan", "save", "auth"],
            "PLAN_SECRET",
            &line,
            kind,
            &s,
        );
        env.write(&plan_md, &format!("{saved}\nmore steps\n"));
        refused(
            &env,
            a,
            &["plan", "save", "auth", "-m", &s],
            "PLAN_SECRET",
            "-m",
            kind,
            &s,
        );
        env.write(&plan_md, &saved);

        // Reports, reasons, refspecs, a lane's base.
        refused(
            &env,
            a,
            &["report", "blocked", "creds", &s, "--lane", "login"],
            "SECRET_IN_TEXT",
            "report",
            kind,
            &s,
        );
        let capacity = format!("ok {s}");
        refused(
            &env,
            a,
            &[
                "report",
                "plan-ready",
                "--capacity",
                &capacity,
                "--lane",
                "login",
            ],
            "SECRET_IN_TEXT",
            "--capacity",
            kind,
            &s,
        );
        refused(
            &env,
            a,
            &[
                "lead", "takeover", "--plan", "auth", "--force", "--as", "bob", "--reason", &s,
            ],
            "SECRET_IN_TEXT",
            "--reason",
            kind,
            &s,
        );
        refused(
            &env,
            a,
            &["lane", "new", "other", "--base", &s],
            "SECRET_IN_TEXT",
            "--base",
            kind,
            &s,
        );

        // A packet: a whole `--verified`, and any field.
        let verified = format!("db={s}");
        refused(
            &env,
            a,
            &[
                "handoff",
                "--reason",
                "usage_limit",
                "--verified",
                &verified,
            ],
            "PACKET_SECRET",
            "verified[0].evidence",
            kind,
            &s,
        );
        refused(
            &env,
            a,
            &["handoff", "--reason", "usage_limit", "--next", &s],
            "PACKET_SECRET",
            "next[0]",
            kind,
            &s,
        );

        // Withdrawing a packet: the reason travels with the packet.
        refused(
            &env,
            a,
            &["packet", "withdraw", "no-such-packet", "--reason", &s],
            "PACKET_SECRET",
            "reason",
            kind,
            &s,
        );

        assert_eq!(env.all_refs(a), local, "{kind}: a ref was written");
        assert_eq!(
            env.all_refs(&remote),
            published,
            "{kind}: a ref was published"
        );
    }
    // A pull-request URL with a password, and a refspec shaped like a key.
    let url = format!("https://bob:{}@github.com/o/r/pull/7", b62(12));
    refused(
        &env,
        a,
        &["report", "pr-open", &url, "--lane", "login"],
        "SECRET_IN_TEXT",
        "report",
        "url-password",
        &b62(12),
    );
    let spec = format!("HEAD:refs/heads/{}_{}", "ghp", b62(36));
    refused(
        &env,
        a,
        &["lead", "push", "--plan", "auth", &spec],
        "SECRET_IN_TEXT",
        "refspec[0]",
        "github-pat",
        &b62(36),
    );
    // The password-assignment split: `--verified "password=X=…"` whole.
    let verified = format!("password=X={}", b62(10));
    refused(
        &env,
        a,
        &[
            "handoff",
            "--reason",
            "usage_limit",
            "--verified",
            &verified,
        ],
        "PACKET_SECRET",
        "verified[0]",
        "secret-assignment",
        &b62(10),
    );
    assert_eq!(env.all_refs(a), local);
    assert_eq!(env.all_refs(&remote), published);
}

/// Ordinary documents and messages pass: this project's README and docs/
/// pages saved as a plan (docs/security.md names every kind, prefix and
/// placeholder), commit ids and UUIDs in reasons and reports.
#[test]
fn ordinary_text_is_published_without_a_finding() {
    let env = TestEnv::new();
    let repo = env.repo("alice");
    let docs = crate::support::harness::project_docs();
    assert!(docs.len() > 10, "README and the docs/ pages");
    let text: String = docs.iter().map(|(_, text)| text.as_str()).collect();
    assert!(text.contains("<!-- secret-kinds -->"));
    let readme = env.root().join("docs-all.md");
    env.write(&readme, &text);
    env.swarm(
        &repo,
        &["plan", "new", "docs", "--from", readme.to_str().unwrap()],
    )
    .ok();
    env.swarm(&repo, &["plan", "checkout", "docs"]).ok();
    // The verify module (once src/github/verify.rs), without its tests.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/integrations/verify");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let src: String = files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            text.split("#[cfg(test)]").next().unwrap().to_string()
        })
        .collect();
    env.write(&repo.join("PLAN.md"), &src);
    env.swarm(
        &repo,
        &[
            "plan",
            "save",
            "docs",
            "-m",
            "the verify module, for reference",
        ],
    )
    .ok();
    env.swarm(&repo, &["lane", "new", "login", "--plan", "docs"])
        .ok();
    let sha = env.git(&repo, &["rev-parse", "HEAD"]);
    let what = format!("review of {sha} and run 123e4567-e89b-12d3-a456-426614174000; the token: rotated, see the vault");
    env.swarm(
        &repo,
        &[
            "report",
            "blocked",
            "review",
            &what,
            "--lane",
            "login",
            "--capacity",
            "ok 64% @work1",
        ],
    )
    .ok();
    env.swarm(
        &repo,
        &[
            "lead",
            "claim",
            "--plan",
            "docs",
            "--succession",
            "alice,bob",
        ],
    )
    .ok();
    env.swarm(
        &repo,
        &[
            "lead",
            "takeover",
            "--plan",
            "docs",
            "--force",
            "--as",
            "bob",
            "--reason",
            &format!("alice is away; last seen at {sha}"),
        ],
    )
    .ok();
}
