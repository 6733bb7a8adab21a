//! `git swarm verify`: the real binary against a local GitHub stand-in
//! (`github_server`) serving responses in GitHub's real shapes
//! (`fixtures/github/`), with real git behind them: a bare remote whose
//! `main` really contains (or not) the merge commit the API names.

pub(crate) mod openapi;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::support::fixture::Swarm;
use crate::support::github_server::{GitHubServer, Reply, RATE_LIMIT};
use crate::support::harness::{Run, TestEnv};

const TOKEN: &str = "ghp_VerifyTestTokenZq81xWq9Lm2Pp0DISTINCT";

fn fixture(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/github")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// Replace a placeholder everywhere in a JSON document.
fn subst(v: Value, from: &str, to: &str) -> Value {
    serde_json::from_str(&v.to_string().replace(from, to)).unwrap()
}

fn patch(mut v: Value, fields: Value) -> Value {
    for (k, val) in fields.as_object().unwrap() {
        v[k] = val.clone();
    }
    v
}

fn pr_path(n: u64) -> String {
    format!("/repos/acme/widgets/pulls/{n}")
}
fn status_path(sha: &str) -> String {
    format!("/repos/acme/widgets/commits/{sha}/status")
}
fn runs_path(sha: &str) -> String {
    format!("/repos/acme/widgets/commits/{sha}/check-runs?per_page=100")
}
fn reviews_path(n: u64) -> String {
    format!("/repos/acme/widgets/pulls/{n}/reviews?per_page=100")
}
fn comments_path(n: u64) -> String {
    format!("/repos/acme/widgets/issues/{n}/comments?per_page=100")
}
fn protection_path(branch: &str) -> String {
    format!("/repos/acme/widgets/branches/{branch}/protection/required_status_checks")
}
fn rules_path(branch: &str) -> String {
    format!("/repos/acme/widgets/rules/branches/{branch}?per_page=100")
}

fn check_run(
    id: u64,
    name: &str,
    sha: &str,
    status: &str,
    conclusion: Value,
    started: &str,
) -> Value {
    let run = fixture("check-runs.json")["check_runs"][0].clone();
    patch(
        subst(run, "HEAD_SHA", sha),
        json!({"id": id, "name": name, "status": status, "conclusion": conclusion,
               "started_at": started, "completed_at": if status == "completed" { json!(started) } else { Value::Null }}),
    )
}

fn runs(list: Vec<Value>) -> Value {
    json!({"total_count": list.len(), "check_runs": list})
}

fn green_runs(sha: &str) -> Value {
    runs(vec![check_run(
        41,
        "test",
        sha,
        "completed",
        json!("success"),
        "2026-01-01T00:10:00Z",
    )])
}

fn status_ok(sha: &str) -> Value {
    subst(fixture("status.json"), "HEAD_SHA", sha)
}

fn approved(sha: &str) -> Value {
    subst(fixture("reviews.json"), "HEAD_SHA", sha)
}

/// A branch protection's required status checks, as GitHub answers them.
fn required_checks(names: &[&str]) -> Value {
    let base =
        "https://api.github.com/repos/acme/widgets/branches/main/protection/required_status_checks";
    json!({
        "url": base,
        "strict": false,
        "contexts": names,
        "checks": names.iter().map(|n| json!({"context": n, "app_id": null})).collect::<Vec<_>>(),
        "contexts_url": format!("{base}/contexts"),
    })
}

fn comment(id: u64, who: &str, body: &str, at: &str) -> Value {
    let c = fixture("comments.json")[0].clone();
    let mut c = patch(
        c,
        json!({"id": id, "body": body, "created_at": at, "updated_at": at}),
    );
    c["user"]["login"] = json!(who);
    c
}

/// A bare remote with main, a clone `alice` that pushed `feat/login` (the
/// PR's head), a clone `maint` that merges on the remote, and the GitHub
/// stand-in, with the environment pointing at it.
struct World {
    env: TestEnv,
    remote: PathBuf,
    alice: PathBuf,
    maint: PathBuf,
    head: String,
    gh: GitHubServer,
}

impl World {
    fn new() -> World {
        let gh = GitHubServer::start();
        let (mut env, remote, clones) = Swarm::new(&["alice", "maint"]).parts();
        env.set_env("GITHUB_API_URL", &gh.url);
        env.set_env("GITHUB_TOKEN", TOKEN);
        // Every wait (backoff, polls, rate limits) on a virtual clock: the
        // real delays, taken at once; tests check them in the verdict's
        // `waits` and by the requests' order, never by the wall clock.
        env.set_env("GIT_SWARM_VIRTUAL_WAITS", "1");
        // Generous: the stand-in answers at once, however loaded the machine.
        env.set_env("GIT_SWARM_HTTP_TIMEOUT_MS", "60000");
        let w = World {
            env,
            remote,
            alice: clones[0].clone(),
            maint: clones[1].clone(),
            head: String::new(),
            gh,
        };
        // main is unprotected and has no rulesets unless a test says otherwise.
        w.gh.stub_optional(
            &protection_path("main"),
            Reply::status(404, r#"{"message":"Branch not protected","status":"404"}"#),
        );
        w.gh.stub_optional(&rules_path("main"), Reply::json(&json!([])));
        w.g(&w.alice, &["checkout", "-q", "-b", "feat/login"]);
        w.env.write(&w.alice.join("login.txt"), "login form\n");
        w.g(&w.alice, &["add", "login.txt"]);
        w.g(&w.alice, &["commit", "-q", "-m", "Add login"]);
        w.g(&w.alice, &["push", "-q", "-u", "origin", "feat/login"]);
        let head = w.g(&w.alice, &["rev-parse", "HEAD"]);
        World { head, ..w }
    }

    /// git without hooks: the scenario's setup is not what is under test.
    fn g(&self, dir: &Path, args: &[&str]) -> String {
        let mut all = vec!["-c", "core.hooksPath=/dev/null"];
        all.extend_from_slice(args);
        self.env.git(dir, &all)
    }

    fn verify(&self, args: &[&str]) -> Run {
        let mut all = vec!["verify"];
        all.extend_from_slice(args);
        self.env.swarm(&self.alice, &all)
    }

    /// `git swarm verify pr 7 --repo acme/widgets <args>`: the PR every test stubs.
    fn verify_pr(&self, args: &[&str]) -> Run {
        let mut all = vec!["pr", "7", "--repo", "acme/widgets"];
        all.extend_from_slice(args);
        self.verify(&all)
    }

    fn pull(&self, fields: Value) -> Value {
        let base = self.g(&self.maint, &["rev-parse", "origin/main"]);
        let pr = subst(fixture("pull.json"), "HEAD_SHA", &self.head);
        patch(subst(pr, "BASE_SHA", &base), fields)
    }

    fn merged_pull(&self, merge_commit: &str) -> Value {
        self.pull(json!({"state": "closed", "merged": true, "mergeable": null,
            "mergeable_state": "unknown", "merge_commit_sha": merge_commit,
            "merged_at": "2026-01-01T01:00:00Z", "closed_at": "2026-01-01T01:00:00Z"}))
    }

    /// Stub all five endpoints of an open PR #7: green unless overridden.
    fn stub_open(&self, pr_fields: Value) {
        self.gh
            .stub(&pr_path(7), Reply::json(&self.pull(pr_fields)));
        self.gh.stub(
            &status_path(&self.head),
            Reply::json(&status_ok(&self.head)),
        );
        self.gh
            .stub(&runs_path(&self.head), Reply::json(&green_runs(&self.head)));
        self.gh
            .stub(&reviews_path(7), Reply::json(&approved(&self.head)));
        self.gh
            .stub(&comments_path(7), Reply::json(&fixture("comments.json")));
    }

    fn open_paths(&self) -> Vec<String> {
        vec![
            pr_path(7),
            status_path(&self.head),
            runs_path(&self.head),
            reviews_path(7),
            comments_path(7),
            protection_path("main"),
            rules_path("main"),
        ]
    }

    /// The verdict lines of the note on `commit`.
    fn notes(&self, commit: &str) -> Vec<Value> {
        let run = self
            .env
            .git_run(&self.alice, &["notes", "--ref=swarm", "show", commit]);
        if run.code != 0 {
            return Vec::new();
        }
        run.stdout
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// maint merges feat/login into main on the remote, the way GitHub's
    /// button would; returns the merge commit GitHub would report.
    fn merge_on_remote(&self, how: &str) -> String {
        let m = &self.maint;
        self.g(m, &["fetch", "-q", "origin"]);
        // main moves on first, so that rebase and squash make new commits.
        self.env.write(&m.join("NEWS.md"), "news\n");
        self.g(m, &["add", "NEWS.md"]);
        self.g(m, &["commit", "-q", "-m", "News"]);
        match how {
            "merge" => {
                self.g(
                    m,
                    &[
                        "merge",
                        "-q",
                        "--no-ff",
                        "origin/feat/login",
                        "-m",
                        "Merge pull request #7 from acme/feat/login",
                    ],
                );
            }
            "squash" => {
                self.g(m, &["merge", "-q", "--squash", "origin/feat/login"]);
                self.g(m, &["commit", "-q", "-m", "Add login (#7)"]);
            }
            "rebase" => {
                self.g(m, &["checkout", "-q", "-b", "rebased", "origin/feat/login"]);
                self.g(m, &["rebase", "-q", "main"]);
                self.g(m, &["checkout", "-q", "main"]);
                self.g(m, &["merge", "-q", "--ff-only", "rebased"]);
            }
            _ => unreachable!(),
        }
        self.g(m, &["push", "-q", "origin", "main"]);
        self.g(m, &["rev-parse", "HEAD"])
    }
}

fn merged_case(how: &str) {
    let w = World::new();
    let merge_commit = w.merge_on_remote(how);
    w.gh.stub(&pr_path(7), Reply::json(&w.merged_pull(&merge_commit)));
    let run = w.verify_pr(&["--require", "merged", "--json"]).ok();
    let v = run.json();
    assert_eq!(v["state"], "merged", "{v:#}");
    assert_eq!(v["confirmed_on_base"], true);
    assert_eq!(v["merge_commit"], merge_commit);
    assert_eq!(v["head_sha"], w.head);
    assert_eq!(v["base"], "main");
    assert_eq!(v["requests"], 1);
    assert_eq!(v["checks"], Value::Null);
    assert_eq!(w.gh.paths(), vec![pr_path(7)]);
    // verify fetched the remote's main: that is where it found the merge.
    assert_eq!(
        w.g(&w.alice, &["rev-parse", "refs/remotes/origin/main"]),
        merge_commit
    );
    let note = w.notes(&w.head);
    assert_eq!(note.len(), 1, "{note:#?}");
    assert_eq!(
        note[0],
        json!({"kind": "verdict", "state": "merged", "repo": "acme/widgets", "number": 7,
               "head_sha": w.head, "merge_commit": merge_commit, "confirmed_on_base": true,
               "at": note[0]["at"].clone()})
    );
    assert!(note[0]["at"].as_str().unwrap().ends_with('Z'));
}

#[test]
fn merged_by_a_merge_commit_is_confirmed_on_base() {
    merged_case("merge");
}

#[test]
fn merged_by_squash_is_confirmed_on_base_though_the_head_is_no_ancestor() {
    merged_case("squash");
}

#[test]
fn merged_by_rebase_is_confirmed_on_base_though_the_head_is_no_ancestor() {
    merged_case("rebase");
}

#[test]
fn squash_and_rebase_merges_leave_the_head_outside_main() {
    // The point of the two tests above: ancestry of the head would say "not merged".
    for how in ["squash", "rebase"] {
        let w = World::new();
        w.merge_on_remote(how);
        w.g(&w.alice, &["fetch", "-q", "origin"]);
        let r = w.env.git_run(
            &w.alice,
            &["merge-base", "--is-ancestor", &w.head, "origin/main"],
        );
        assert_eq!(
            r.code, 1,
            "{how}: the head should not be an ancestor of main"
        );
    }
}

#[test]
fn api_merged_but_merge_commit_not_on_the_remote_base_is_unconfirmed() {
    let mut w = World::new();
    // One fixed second for every run, so "the same second" below is certain.
    w.env.set_env("GIT_SWARM_NOW", "2026-01-02T00:00:00Z");
    // alice has the merge commit locally, but it never reached the remote's main.
    w.g(&w.alice, &["checkout", "-q", "-b", "local-merge", "main"]);
    w.g(
        &w.alice,
        &["merge", "-q", "--no-ff", "feat/login", "-m", "local merge"],
    );
    let local_merge = w.g(&w.alice, &["rev-parse", "HEAD"]);
    w.gh.stub(&pr_path(7), Reply::json(&w.merged_pull(&local_merge)));

    let run = w.verify_pr(&["--require", "merged", "--json"]).code(1);
    let v = run.json();
    assert_eq!(v["state"], "merged-unconfirmed");
    assert_eq!(v["confirmed_on_base"], false);
    assert_eq!(v["reasons"], json!(["not-on-base"]));
    assert_eq!(v["satisfied"], false);
    assert_eq!(v["requests"], 1);
    assert!(run.stderr.is_empty(), "{}", run.stderr);

    // A merge commit the remote has never heard of: the same verdict.
    w.gh.stub(
        &pr_path(7),
        Reply::json(&w.merged_pull("1111111111111111111111111111111111111111")),
    );
    let v = w
        .verify_pr(&["--require", "merged", "--json"])
        .code(1)
        .json();
    assert_eq!(v["state"], "merged-unconfirmed");

    // Without --require the verdict is reported and the exit is 0.
    let run = w.verify_pr(&[]).ok();
    assert!(
        run.stdout
            .starts_with("acme/widgets#7: merged-unconfirmed (not-on-base)"),
        "{}",
        run.stdout
    );
    // Each verdict is noted on the head; the third run's line is identical
    // to the second's in the same second, so it is not repeated: two lines.
    let notes = w.notes(&w.head);
    assert!(notes
        .iter()
        .all(|n| n["state"] == "merged-unconfirmed" && n["confirmed_on_base"] == false));
    let commits: Vec<&str> = notes
        .iter()
        .map(|n| n["merge_commit"].as_str().unwrap())
        .collect();
    assert_eq!(
        commits,
        vec![
            local_merge.as_str(),
            "1111111111111111111111111111111111111111"
        ],
        "{notes:#?}"
    );
    assert!(notes.iter().all(|n| n["at"] == "2026-01-02T00:00:00Z"));
}

#[test]
fn open_clean_approved_and_green_on_the_head_is_ready() {
    let w = World::new();
    // main moves on at the remote: a base fetch would move alice's origin/main.
    let m = &w.maint;
    w.env.write(&m.join("NEWS.md"), "news\n");
    w.g(m, &["add", "NEWS.md"]);
    w.g(m, &["commit", "-q", "-m", "News"]);
    w.g(m, &["push", "-q", "origin", "main"]);
    let tracking_before = w.env.refs(&w.alice, "refs/remotes");
    w.stub_open(json!({}));
    let v = w.verify_pr(&["--require", "ready", "--json"]).ok().json();
    assert_eq!(v["state"], "ready", "{v:#}");
    assert_eq!(v["reasons"], json!([]));
    assert_eq!(v["mergeable"], true);
    assert_eq!(v["review_decision"], "APPROVED");
    assert_eq!(v["checks"]["passed"], 2);
    assert_eq!(v["checks"]["failed"], 0);
    assert_eq!(v["checks"]["pending"], 0);
    assert_eq!(v["holds"], json!([]));
    assert_eq!(v["requests"], 7);
    assert_eq!(v["noted"], true);
    assert_eq!(w.gh.paths(), w.open_paths());
    for r in w.gh.requests() {
        assert_eq!(
            r.headers.get("authorization").map(String::as_str),
            Some(format!("Bearer {TOKEN}").as_str())
        );
        assert_eq!(
            r.headers.get("accept").map(String::as_str),
            Some("application/vnd.github+json")
        );
    }
    assert_eq!(w.notes(&w.head)[0]["state"], "ready");
    // A ready verdict needs no base fetch: the remote-tracking refs are untouched.
    assert_eq!(w.env.refs(&w.alice, "refs/remotes"), tracking_before);

    let run = w.verify_pr(&[]).ok();
    assert!(
        run.stdout.starts_with("acme/widgets#7: ready\n"),
        "{}",
        run.stdout
    );
    run.expect_stdout("checks: 2 passed, 0 failed, 0 pending");
}

#[test]
fn a_failed_check_superseded_by_a_green_rerun_on_the_next_page_passes() {
    let w = World::new();
    w.stub_open(json!({}));
    let page2 = format!("{}&page=2", runs_path(&w.head));
    w.gh.stub(
        &runs_path(&w.head),
        Reply::json(&runs(vec![check_run(
            1,
            "test",
            &w.head,
            "completed",
            json!("failure"),
            "2026-01-01T00:10:00Z",
        )]))
        .header(
            "link",
            &format!("<{{base}}{page2}>; rel=\"next\", <{{base}}{page2}>; rel=\"last\""),
        ),
    );
    w.gh.stub(
        &page2,
        Reply::json(&runs(vec![
            check_run(
                2,
                "test",
                &w.head,
                "completed",
                json!("success"),
                "2026-01-01T00:20:00Z",
            ),
            check_run(
                3,
                "docs",
                &w.head,
                "completed",
                json!("skipped"),
                "2026-01-01T00:20:00Z",
            ),
            check_run(
                4,
                "bench",
                &w.head,
                "completed",
                json!("neutral"),
                "2026-01-01T00:20:00Z",
            ),
        ]))
        .header(
            "link",
            &format!("<{{base}}{}>; rel=\"first\"", runs_path(&w.head)),
        ),
    );
    let v = w.verify_pr(&["--require", "ready", "--json"]).ok().json();
    assert_eq!(v["state"], "ready", "{v:#}");
    assert_eq!(v["checks"]["passed"], 4);
    assert_eq!(v["checks"]["failed"], 0);
    assert_eq!(v["requests"], 8);
    assert_eq!(w.gh.calls(&page2), 1);
}

#[test]
fn a_failed_check_without_a_rerun_blocks() {
    let w = World::new();
    w.stub_open(json!({}));
    w.gh.stub(
        &runs_path(&w.head),
        Reply::json(&runs(vec![
            check_run(
                1,
                "test",
                &w.head,
                "completed",
                json!("failure"),
                "2026-01-01T00:10:00Z",
            ),
            check_run(
                2,
                "lint",
                &w.head,
                "in_progress",
                Value::Null,
                "2026-01-01T00:11:00Z",
            ),
        ])),
    );
    let run = w.verify_pr(&["--require", "ready"]).code(1);
    assert!(
        run.stdout
            .starts_with("acme/widgets#7: blocked (checks-failed, checks-pending)"),
        "{}",
        run.stdout
    );
    run.expect_stdout("failed test (failure)");
    run.expect_stdout("pending lint (in_progress)");
    run.expect_stdout("required ready: does not hold");
}

#[test]
fn a_green_check_on_an_older_sha_does_not_count() {
    let w = World::new();
    let old = w.head.clone();
    w.env.write(&w.alice.join("login.txt"), "login form v2\n");
    w.g(&w.alice, &["commit", "-q", "-am", "Login v2"]);
    w.g(&w.alice, &["push", "-q", "origin", "feat/login"]);
    let new = w.g(&w.alice, &["rev-parse", "HEAD"]);
    let w = World {
        head: new.clone(),
        ..w
    };
    w.stub_open(json!({}));
    // The head's listing carries only the old commit's green run; nothing
    // has reported on the new head yet.
    w.gh.stub(&runs_path(&new), Reply::json(&green_runs(&old)));
    w.gh.stub(
        &status_path(&new),
        Reply::json(&json!({"state": "pending", "statuses": [], "sha": new, "total_count": 0})),
    );
    let v = w
        .verify_pr(&["--require", "ready", "--json"])
        .code(1)
        .json();
    assert_eq!(v["state"], "pending", "{v:#}");
    assert_eq!(v["reasons"], json!(["no-checks"]));
    assert_eq!(v["checks"]["passed"], 0);
    assert_eq!(v["head_sha"], new);
    // Only the exact head SHA was asked about.
    assert!(
        w.gh.paths().iter().all(|p| !p.contains(&old)),
        "{:#?}",
        w.gh.paths()
    );
}

#[test]
fn mergeable_null_is_retried_until_github_has_computed_it() {
    let w = World::new();
    w.stub_open(json!({}));
    w.gh.stub_seq(
        &pr_path(7),
        vec![
            Reply::json(&w.pull(json!({"mergeable": null, "mergeable_state": "unknown"})))
                .etag("\"pr-1\""),
            Reply::json(&w.pull(json!({}))).etag("\"pr-2\""),
        ],
    );
    let v = w.verify_pr(&["--require", "ready", "--json"]).ok().json();
    assert_eq!(v["state"], "ready", "{v:#}");
    assert_eq!(v["requests"], 8);
    assert_eq!(
        v["waits"],
        json!([{"why": "mergeable-unknown", "ms": 1000}]),
        "one backoff of the default 1 s before asking again"
    );
    let pulls: Vec<_> =
        w.gh.requests()
            .into_iter()
            .filter(|r| r.path == pr_path(7))
            .collect();
    assert_eq!(pulls.len(), 2);
    assert_eq!(pulls[0].headers.get("if-none-match"), None);
    assert_eq!(
        pulls[1].headers.get("if-none-match").map(String::as_str),
        Some("\"pr-1\"")
    );
}

#[test]
fn mergeable_never_computed_ends_pending_after_bounded_retries() {
    let w = World::new();
    w.stub_open(json!({"mergeable": null, "mergeable_state": "unknown"}));
    let v = w
        .verify_pr(&["--require", "ready", "--json"])
        .code(1)
        .json();
    assert_eq!(v["state"], "pending");
    assert_eq!(v["reasons"], json!(["mergeable-unknown"]));
    assert_eq!(v["mergeable"], Value::Null);
    assert_eq!(w.gh.calls(&pr_path(7)), 5, "one request and four retries");
    assert_eq!(v["requests"], 11);
    // Bounded exponential backoff: 1, 2, 4, 8 s, then the verdict.
    let waits: Vec<(String, u64)> = v["waits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["why"].as_str().unwrap().to_string(),
                w["ms"].as_u64().unwrap(),
            )
        })
        .collect();
    let want: Vec<(String, u64)> = [1000, 2000, 4000, 8000]
        .into_iter()
        .map(|ms| ("mergeable-unknown".to_string(), ms))
        .collect();
    assert_eq!(waits, want);
}

#[test]
fn dirty_with_a_clean_local_merge_is_pending_conflict_unconfirmed() {
    let w = World::new();
    w.stub_open(json!({"mergeable": false, "mergeable_state": "dirty"}));
    let before = w.g(&w.alice, &["status", "--porcelain"]);
    let v = w.verify_pr(&["--json"]).ok().json();
    assert_eq!(v["state"], "pending", "{v:#}");
    assert_eq!(v["reasons"], json!(["conflict-unconfirmed"]));
    assert_eq!(v["conflicts"], json!([]));
    assert_eq!(w.g(&w.alice, &["status", "--porcelain"]), before);
}

#[test]
fn dirty_with_a_real_conflict_is_conflicting_and_names_the_paths() {
    let w = World::new();
    // main gets its own login.txt: a real add/add conflict with the lane.
    let m = &w.maint;
    w.env.write(&m.join("login.txt"), "a different login\n");
    w.env
        .write(&m.join("README.md"), "hello, changed on main\n");
    w.g(m, &["add", "login.txt", "README.md"]);
    w.g(m, &["commit", "-q", "-m", "Login on main"]);
    w.g(m, &["push", "-q", "origin", "main"]);
    w.stub_open(json!({"mergeable": false, "mergeable_state": "dirty"}));
    let branch_before = w.g(&w.alice, &["rev-parse", "HEAD"]);
    let run = w.verify_pr(&["--require", "ready", "--json"]).code(1);
    let v = run.json();
    assert_eq!(v["state"], "conflicting", "{v:#}");
    assert_eq!(v["conflicts"], json!(["login.txt"]));
    assert_eq!(v["reasons"], json!(["conflict"]));
    // The merge happened in memory only.
    assert_eq!(w.g(&w.alice, &["rev-parse", "HEAD"]), branch_before);
    assert_eq!(w.g(&w.alice, &["status", "--porcelain"]), "");
    let text = w.verify_pr(&[]).ok().stdout;
    assert!(text.contains("conflicts: login.txt"), "{text}");
}

#[test]
fn a_maintainer_hold_newer_than_the_head_blocks_an_approved_green_pr() {
    let w = World::new();
    w.stub_open(json!({}));
    // The head commit is from 2026-01-01T00:00:00Z (the harness pins dates).
    w.gh.stub(
        &comments_path(7),
        Reply::json(&json!([
            comment(
                1,
                "lead",
                "Auto-merge withheld: an old hold, lifted by the last push",
                "2025-12-31T12:00:00Z"
            ),
            comment(2, "bob", "Looks good to me.", "2026-01-01T00:16:00Z"),
            comment(
                3,
                "lead",
                "Heads up.\nAuto-merge withheld until the release is cut.",
                "2026-01-02T09:00:00Z"
            ),
        ])),
    );
    let run = w.verify_pr(&["--require", "ready", "--json"]).code(1);
    let v = run.json();
    assert_eq!(v["state"], "blocked", "{v:#}");
    assert_eq!(v["reasons"], json!(["held"]));
    assert_eq!(v["review_decision"], "APPROVED");
    assert_eq!(v["checks"]["failed"], 0);
    assert_eq!(v["holds"].as_array().unwrap().len(), 1);
    assert_eq!(v["holds"][0]["id"], 3);
    assert_eq!(v["holds"][0]["author"], "lead");
    assert_eq!(
        v["holds"][0]["excerpt"],
        "Auto-merge withheld until the release is cut."
    );
}

#[test]
fn an_old_hold_is_lifted_and_the_hold_pattern_is_configurable() {
    let w = World::new();
    w.stub_open(json!({}));
    w.gh.stub(
        &comments_path(7),
        Reply::json(&json!([
            comment(1, "lead", "Auto-merge withheld", "2025-12-31T12:00:00Z"),
            comment(2, "lead", "DO NOT MERGE yet", "2026-01-03T00:00:00Z"),
        ])),
    );
    let v = w.verify_pr(&["--json"]).ok().json();
    assert_eq!(v["state"], "ready", "{v:#}");
    w.g(
        &w.alice,
        &["config", "swarm.holdPattern", "(?i)do not merge"],
    );
    let v = w.verify_pr(&["--json"]).ok().json();
    assert_eq!(v["state"], "blocked");
    assert_eq!(v["holds"][0]["id"], 2);
    w.g(&w.alice, &["config", "swarm.holdPattern", "(unclosed"]);
    w.verify_pr(&[]).err(2, "USAGE");
}

#[test]
fn changes_requested_on_a_later_review_page_blocks() {
    let w = World::new();
    w.stub_open(json!({}));
    let page2 = format!("{}&page=2", reviews_path(7));
    w.gh.stub(
        &reviews_path(7),
        Reply::json(&approved(&w.head)).header("link", &format!("<{{base}}{page2}>; rel=\"next\"")),
    );
    let mut later = approved(&w.head)[0].clone();
    later["id"] = json!(2500000002u64);
    later["user"]["login"] = json!("carol");
    later["state"] = json!("CHANGES_REQUESTED");
    later["submitted_at"] = json!("2026-01-01T00:30:00Z");
    w.gh.stub(&page2, Reply::json(&json!([later])));
    let v = w.verify_pr(&["--json"]).ok().json();
    assert_eq!(v["state"], "blocked");
    assert_eq!(v["review_decision"], "CHANGES_REQUESTED");
    assert_eq!(v["reasons"], json!(["changes-requested"]));
    assert_eq!(v["requests"], 8);
}

#[test]
fn closed_without_merge_is_closed() {
    let w = World::new();
    w.gh.stub(
        &pr_path(7),
        Reply::json(&w.pull(json!({"state": "closed", "closed_at": "2026-01-01T02:00:00Z"}))),
    );
    let v = w
        .verify_pr(&["--require", "merged", "--json"])
        .code(1)
        .json();
    assert_eq!(v["state"], "closed");
    assert_eq!(v["reasons"], json!(["closed-unmerged"]));
    assert_eq!(v["requests"], 1);
    assert_eq!(w.notes(&w.head)[0]["state"], "closed");
}

#[test]
fn a_draft_is_not_ready() {
    let w = World::new();
    w.stub_open(json!({"draft": true, "mergeable_state": "draft"}));
    let v = w
        .verify_pr(&["--require", "ready", "--json"])
        .code(1)
        .json();
    assert_eq!(v["state"], "blocked");
    assert_eq!(v["draft"], true);
    assert_eq!(v["reasons"], json!(["draft"]));
}

#[test]
fn an_unknown_mergeable_state_and_unknown_enum_values_are_never_ready() {
    let w = World::new();
    w.stub_open(json!({"mergeable_state": "shiny_new_state"}));
    let v = w
        .verify_pr(&["--require", "ready", "--json"])
        .code(1)
        .json();
    assert_eq!(v["state"], "pending");
    assert_eq!(v["mergeable_state"], "shiny_new_state");
    assert_eq!(v["reasons"], json!(["unknown-mergeable-state"]));

    // Unknown check conclusions and review states: parsed, counted as not ready.
    let w = World::new();
    w.stub_open(json!({}));
    w.gh.stub(
        &runs_path(&w.head),
        Reply::json(&runs(vec![check_run(
            1,
            "test",
            &w.head,
            "completed",
            json!("vaporized"),
            "2026-01-01T00:10:00Z",
        )])),
    );
    let mut review = approved(&w.head)[0].clone();
    review["state"] = json!("SUPER_APPROVED");
    w.gh.stub(&reviews_path(7), Reply::json(&json!([review])));
    let v = w
        .verify_pr(&["--require", "ready", "--json"])
        .code(1)
        .json();
    assert_eq!(v["state"], "blocked", "{v:#}");
    assert_eq!(
        v["reasons"],
        json!(["checks-failed", "unknown-review-state"])
    );
    assert_eq!(v["checks"]["details"][0]["state"], "vaporized");
}

#[test]
fn behind_branch_protection_and_unstable_are_named_as_reasons() {
    let w = World::new();
    for (mergeable_state, state, reason) in [
        ("behind", "blocked", "behind"),
        ("blocked", "blocked", "branch-protection"),
        ("unstable", "pending", "unstable"),
    ] {
        w.stub_open(json!({"mergeable_state": mergeable_state}));
        let v = w
            .verify_pr(&["--require", "ready", "--json"])
            .code(1)
            .json();
        assert_eq!(v["state"], state, "{mergeable_state}: {v:#}");
        assert_eq!(v["reasons"], json!([reason]), "{mergeable_state}");
        assert_eq!(v["mergeable_state"], mergeable_state);
        // The checks are green and approved: the mergeable state alone decides.
        assert_eq!(v["checks"]["failed"], 0);
    }
}

#[test]
fn a_pr_state_we_do_not_know_is_pending_with_unknown_pr_state() {
    let w = World::new();
    for pr_state in [json!("locked"), Value::Null] {
        w.gh.stub(
            &pr_path(7),
            Reply::json(&w.pull(json!({"state": pr_state}))),
        );
        let v = w
            .verify_pr(&["--require", "ready", "--json"])
            .code(1)
            .json();
        assert_eq!(v["state"], "pending", "{pr_state}: {v:#}");
        assert_eq!(v["reasons"], json!(["unknown-pr-state"]), "{pr_state}");
        // Neither open nor closed: nothing else is asked.
        assert_eq!(v["requests"], 1);
    }
}

#[test]
fn merged_without_a_usable_merge_commit_is_unconfirmed_with_no_merge_commit() {
    let w = World::new();
    for sha in [Value::Null, json!("not-a-sha")] {
        let mut pr = w.merged_pull("0000000000000000000000000000000000000000");
        pr["merge_commit_sha"] = sha.clone();
        w.gh.stub(&pr_path(7), Reply::json(&pr));
        let v = w
            .verify_pr(&["--require", "merged", "--json"])
            .code(1)
            .json();
        assert_eq!(v["state"], "merged-unconfirmed", "{sha}: {v:#}");
        assert_eq!(v["reasons"], json!(["no-merge-commit"]), "{sha}");
        assert_eq!(v["confirmed_on_base"], false);
    }
}

#[test]
fn merged_with_no_base_branch_to_check_is_unconfirmed_with_base_unavailable() {
    let w = World::new();
    let merge_commit = w.merge_on_remote("merge");
    // Offline, a base branch this clone has never fetched cannot be checked.
    let mut pr = w.merged_pull(&merge_commit);
    pr["base"]["ref"] = json!("release-9");
    w.gh.stub(&pr_path(7), Reply::json(&pr));
    let v = w
        .verify_pr(&["--offline", "--require", "merged", "--json"])
        .code(1)
        .json();
    assert_eq!(v["state"], "merged-unconfirmed", "{v:#}");
    assert_eq!(v["reasons"], json!(["base-unavailable"]));
    // A base name that is no safe branch name is never fetched either.
    pr["base"]["ref"] = json!("--upload-pack=evil");
    w.gh.stub(&pr_path(7), Reply::json(&pr));
    let v = w
        .verify_pr(&["--require", "merged", "--json"])
        .code(1)
        .json();
    assert_eq!(v["state"], "merged-unconfirmed", "{v:#}");
    assert_eq!(v["reasons"], json!(["base-unavailable"]));
    // The same PR with its real base is confirmed: the reason was the base.
    pr["base"]["ref"] = json!("main");
    w.gh.stub(&pr_path(7), Reply::json(&pr));
    let v = w.verify_pr(&["--require", "merged", "--json"]).ok().json();
    assert_eq!(v["state"], "merged", "{v:#}");
}

/// `checks-unknown` cannot come from the binary (it asks for the checks of
/// every open PR, and a failed request fails closed), so the rule itself is
/// checked: an open PR judged without its checks is never ready.
#[test]
fn an_open_pr_judged_without_its_checks_is_pending_with_checks_unknown() {
    use git_swarm::integrations::github::verdict::{Judge, LocalFacts, PrFacts};
    let pr = subst(fixture("pull.json"), "HEAD_SHA", &"a".repeat(40));
    let snap = PrFacts {
        pr: serde_json::from_value(subst(pr, "BASE_SHA", &"b".repeat(40))).unwrap(),
        open: None,
    };
    let hold = regex::Regex::new("Auto-merge withheld").unwrap();
    let judge = Judge {
        repo: "acme/widgets",
        number: 7,
        hold_pattern: &hold,
    };
    let v = serde_json::to_value(judge.verdict(&snap, &LocalFacts::default())).unwrap();
    assert_eq!(v["state"], "pending", "{v:#}");
    assert_eq!(v["reasons"], json!(["checks-unknown"]));
}

/// Run verify expecting an environment failure: exit 4, the code on stderr
/// and in the JSON error, no verdict, no note.
fn fails_closed(w: &World, code: &str) -> Value {
    let run = w.verify_pr(&["--require", "merged", "--json"]).err(4, code);
    let v = run.json();
    assert_eq!(v["error"]["code"], code);
    assert!(v.get("state").is_none(), "{v:#}");
    assert!(
        w.env.refs(&w.alice, "refs/notes").is_empty(),
        "no note may be written"
    );
    v
}

#[test]
fn http_500_fails_closed() {
    let w = World::new();
    w.gh.stub(
        &pr_path(7),
        Reply::status(500, r#"{"message":"Server Error"}"#),
    );
    let v = fails_closed(&w, "GITHUB_API");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("HTTP 500"),
        "{v:#}"
    );
    assert_eq!(v["error"]["detail"]["requests"], 1, "no silent retries");

    // A failure after a good PR answer is no better, and nothing is asked after it.
    let w = World::new();
    w.gh.stub(&pr_path(7), Reply::json(&w.pull(json!({}))));
    w.gh.stub(&status_path(&w.head), Reply::json(&status_ok(&w.head)));
    w.gh.stub(
        &runs_path(&w.head),
        Reply::status(502, "<html>Bad gateway</html>"),
    );
    let run = w.verify_pr(&[]).err(4, "GITHUB_API");
    assert!(
        run.stdout.is_empty(),
        "no verdict on stdout: {}",
        run.stdout
    );
    assert_eq!(w.gh.paths(), w.open_paths()[..3].to_vec());
}

#[test]
fn rate_limit_403_fails_closed_with_the_reset_time() {
    let w = World::new();
    let reset = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 1800;
    w.gh.stub(
        &pr_path(7),
        Reply::status(403, r#"{"message":"API rate limit exceeded for user ID 1.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"}"#)
            .header("x-ratelimit-remaining", "0")
            .header("x-ratelimit-reset", &reset.to_string()),
    );
    let v = fails_closed(&w, "GITHUB_RATE_LIMITED");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains("resets at"), "{msg}");
    assert_eq!(w.gh.calls(&pr_path(7)), 1);
    // A token is set: the hint must not tell the user to set one.
    let hints = v["error"]["hints"].to_string();
    assert!(!hints.contains("set GITHUB_TOKEN"), "{hints}");
    assert!(hints.contains("your token's budget is spent"), "{hints}");

    // Without a token, setting one is the advice.
    let mut w = World::new();
    w.env.set_env("GITHUB_TOKEN", "");
    w.gh.stub(
        &pr_path(7),
        Reply::status(
            403,
            r#"{"message":"API rate limit exceeded for 127.0.0.1."}"#,
        )
        .header("x-ratelimit-remaining", "0")
        .header("x-ratelimit-reset", &reset.to_string()),
    );
    let run = w
        .verify_pr(&["--require", "merged"])
        .err(4, "GITHUB_RATE_LIMITED");
    run.expect_stderr("hint: set GITHUB_TOKEN");
    run.expect_stderr("warning: no GitHub token");
    assert!(run.stdout.is_empty(), "{}", run.stdout);
}

#[test]
fn a_request_that_times_out_fails_closed() {
    let mut w = World::new();
    w.env.set_env("GIT_SWARM_HTTP_TIMEOUT_MS", "300");
    // The server never answers (until the test ends): the client must give up.
    w.gh.stub(&pr_path(7), Reply::json(&w.pull(json!({}))).hang());
    let v = fails_closed(&w, "GITHUB_UNREACHABLE");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("within 300 ms"),
        "{v:#}"
    );
}

#[test]
fn malformed_json_fails_closed() {
    let w = World::new();
    w.gh.stub(
        &pr_path(7),
        Reply::status(200, r#"{"number": 7, "state": "open", "head": {"#),
    );
    let v = fails_closed(&w, "GITHUB_BAD_RESPONSE");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("malformed JSON"),
        "{v:#}"
    );
}

#[test]
fn an_unreachable_api_and_a_refused_token_fail_closed() {
    let mut w = World::new();
    w.gh.stub(
        &pr_path(7),
        Reply::status(401, r#"{"message":"Bad credentials"}"#),
    );
    fails_closed(&w, "GITHUB_AUTH");
    // Nothing listens on port 9 of localhost (discard): connection refused.
    w.env.set_env("GITHUB_API_URL", "http://127.0.0.1:9");
    fails_closed(&w, "GITHUB_UNREACHABLE");
}

#[test]
fn a_missing_pr_is_a_clear_error() {
    let w = World::new();
    w.gh.stub(
        &pr_path(8),
        Reply::status(404, r#"{"message":"Not Found"}"#),
    );
    let run = w
        .verify(&["pr", "8", "--repo", "acme/widgets"])
        .err(2, "PR_NOT_FOUND");
    run.expect_stderr("acme/widgets has no pull request #8");
}

#[test]
fn wait_polls_with_etags_so_304s_spend_no_rate_limit_and_ends_when_checks_pass() {
    let w = World::new();
    let pending = runs(vec![check_run(
        1,
        "test",
        &w.head,
        "in_progress",
        Value::Null,
        "2026-01-01T00:10:00Z",
    )]);
    w.gh.stub(&pr_path(7), Reply::json(&w.pull(json!({}))).etag("\"pr\""));
    w.gh.stub(
        &status_path(&w.head),
        Reply::json(&status_ok(&w.head)).etag("\"st\""),
    );
    w.gh.stub_seq(
        &runs_path(&w.head),
        vec![
            Reply::json(&pending).etag("\"runs-1\""),
            Reply::json(&pending).etag("\"runs-1\""),
            Reply::json(&green_runs(&w.head)).etag("\"runs-2\""),
        ],
    );
    w.gh.stub(
        &reviews_path(7),
        Reply::json(&approved(&w.head)).etag("\"rv\""),
    );
    w.gh.stub(
        &comments_path(7),
        Reply::json(&fixture("comments.json")).etag("\"cm\""),
    );
    w.gh.stub(
        &protection_path("main"),
        Reply::json(&required_checks(&["test"])).etag("\"prot\""),
    );
    w.gh.stub(
        &rules_path("main"),
        Reply::json(&json!([])).etag("\"rules\""),
    );

    let v = w
        .verify_pr(&["--require", "ready", "--wait", "--timeout", "5m", "--json"])
        .ok()
        .json();
    assert_eq!(v["state"], "ready", "{v:#}");
    assert_eq!(v["polls"], 3);
    assert_eq!(
        v["waits"],
        json!([{"why": "poll", "ms": 30000}, {"why": "poll", "ms": 30000}]),
        "the default 30 s between polls"
    );
    assert_eq!(v["requests"], 21);
    assert_eq!(v["not_modified"], 13);
    // Only the eight 200 answers spent rate limit, as the server counted.
    assert_eq!(w.gh.remaining(), RATE_LIMIT - 8);
    assert_eq!(v["rate_limit_remaining"], RATE_LIMIT - 8);
    let reqs = w.gh.requests();
    let statuses: Vec<u16> = reqs.iter().map(|r| r.status).collect();
    assert_eq!(
        statuses,
        [
            vec![200; 7],
            vec![304; 7],
            vec![304, 304, 200, 304, 304, 304, 304]
        ]
        .concat()
    );
    // Every repeat request was conditional on the ETag of the previous answer.
    for r in &reqs[7..] {
        assert!(
            r.headers.contains_key("if-none-match"),
            "{} lacks If-None-Match",
            r.path
        );
    }
    assert_eq!(reqs[16].headers["if-none-match"], "\"runs-1\"");
    // No progress chatter when stderr is not a terminal.
    let run = w.verify_pr(&["--require", "ready", "--wait"]).ok();
    assert!(!run.stderr.contains("checking again"), "{}", run.stderr);
}

#[test]
fn wait_honours_x_poll_interval() {
    let w = World::new();
    w.stub_open(json!({}));
    // The server asks for 90 s between polls, longer than our 30 s.
    w.gh.stub_seq(
        &pr_path(7),
        vec![
            Reply::json(&w.pull(json!({"mergeable_state": "behind"})))
                .header("x-poll-interval", "90"),
            Reply::json(&w.pull(json!({}))),
        ],
    );
    let v = w
        .verify_pr(&["--require", "ready", "--wait", "--json"])
        .ok()
        .json();
    assert_eq!(v["state"], "ready");
    assert_eq!(v["polls"], 2);
    assert_eq!(v["waits"], json!([{"why": "x-poll-interval", "ms": 90000}]));
    // The one wait came between the two rounds of requests.
    let paths = w.gh.paths();
    assert_eq!(paths, [w.open_paths(), w.open_paths()].concat());
}

#[test]
fn wait_gives_up_at_the_timeout_with_exit_1() {
    let w = World::new();
    w.stub_open(json!({}));
    // The check never finishes: every poll is answered "queued".
    w.gh.stub(
        &runs_path(&w.head),
        Reply::json(&runs(vec![check_run(
            1,
            "test",
            &w.head,
            "queued",
            Value::Null,
            "2026-01-01T00:10:00Z",
        )])),
    );
    let run = w
        .verify_pr(&["--require", "ready", "--wait", "--timeout", "75s", "--json"])
        .code(1);
    let v = run.json();
    assert_eq!(v["state"], "pending");
    assert_eq!(v["timed_out"], true);
    assert_eq!(v["reasons"], json!(["checks-pending", "timeout"]));
    // Polls at 0, 30 and 60 s; the last wait is cut to the 75 s timeout,
    // and one more poll at the timeout ends it.
    assert_eq!(v["polls"], 4, "{v:#}");
    assert_eq!(
        v["waits"],
        json!([
            {"why": "poll", "ms": 30000},
            {"why": "poll", "ms": 30000},
            {"why": "timeout", "ms": 15000}
        ])
    );
    assert_eq!(v["requests"], 28);
    assert_eq!(w.gh.paths(), vec![w.open_paths(); 4].concat());
}

#[test]
fn wait_stops_at_a_terminal_verdict() {
    let w = World::new();
    w.gh.stub(
        &pr_path(7),
        Reply::json(&w.pull(json!({"state": "closed"}))),
    );
    let v = w
        .verify_pr(&["--require", "merged", "--wait", "--timeout", "1m", "--json"])
        .code(1)
        .json();
    assert_eq!(v["state"], "closed");
    assert_eq!(v["polls"], 1);
    assert_eq!(v["timed_out"], false);
    assert_eq!(v["waits"], json!([]));
}

#[test]
fn wait_waits_out_a_rate_limit_with_retry_after_then_succeeds() {
    let w = World::new();
    let merge_commit = w.merge_on_remote("merge");
    w.gh.stub_seq(
        &pr_path(7),
        vec![
            Reply::status(
                403,
                r#"{"message":"You have exceeded a secondary rate limit."}"#,
            )
            .header("retry-after", "1"),
            Reply::json(&w.merged_pull(&merge_commit)),
        ],
    );
    let v = w
        .verify_pr(&["--require", "merged", "--wait", "--timeout", "1m", "--json"])
        .ok()
        .json();
    assert_eq!(v["state"], "merged");
    assert_eq!(v["requests"], 2);
    // The 403 was waited out for the 1 s it asked, then asked again.
    assert_eq!(v["waits"], json!([{"why": "retry-after", "ms": 1000}]));
    let statuses: Vec<u16> = w.gh.requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses, [403, 200]);
    assert_eq!(w.gh.paths(), [pr_path(7), pr_path(7)]);
}

#[test]
fn wait_and_timeout_need_what_they_apply_to() {
    let w = World::new();
    w.verify_pr(&["--wait"]).err(2, "USAGE");
    w.verify_pr(&["--timeout", "1m"]).err(2, "USAGE");
    w.verify_pr(&["--require", "done"]).err(2, "USAGE");
    w.verify_pr(&["--require", "ready", "--wait", "--timeout", "soon"])
        .err(2, "USAGE");
    w.verify(&["pr", "seven", "--repo", "acme/widgets"])
        .err(2, "USAGE");
    w.verify(&["pr", "7", "--repo", "acme"]).err(2, "USAGE");
    assert!(w.gh.requests().is_empty(), "bad usage asks GitHub nothing");
}

#[test]
fn the_token_appears_in_no_output_note_or_object() {
    let mut w = World::new();
    w.stub_open(json!({}));
    let mut outputs = Vec::new();
    for args in [vec!["--json"], vec![]] {
        let mut all = vec!["pr", "7", "--repo", "acme/widgets"];
        all.extend(args);
        let run = w.verify(&all).ok();
        outputs.push(run.stdout + &run.stderr);
    }
    w.gh.stub(
        &pr_path(9),
        Reply::status(401, r#"{"message":"Bad credentials"}"#),
    );
    for args in [vec!["--json"], vec![]] {
        let mut all = vec!["pr", "9", "--repo", "acme/widgets"];
        all.extend(args);
        let run = w.verify(&all).code(4);
        outputs.push(run.stdout + &run.stderr);
    }
    for out in &outputs {
        assert!(!out.contains(TOKEN), "token leaked: {out}");
        assert!(
            !out.contains("VerifyTestToken"),
            "part of the token leaked: {out}"
        );
    }
    // It was sent, as a bearer token, to the API only.
    assert!(w
        .gh
        .requests()
        .iter()
        .all(|r| r.headers["authorization"] == format!("Bearer {TOKEN}")));
    // Nothing stored: not in any object (notes included), ref or config file.
    let objects = w
        .env
        .git_run(&w.alice, &["cat-file", "--batch-all-objects", "--batch"]);
    assert!(!objects.stdout.contains(TOKEN));
    assert!(!w.notes(&w.head).is_empty());
    let mut stack = vec![w.alice.join(".git")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let bytes = std::fs::read(&p).unwrap();
                assert!(
                    !bytes
                        .windows(TOKEN.len())
                        .any(|win| win == TOKEN.as_bytes()),
                    "token in {}",
                    p.display()
                );
            }
        }
    }

    // GH_TOKEN is the fallback; with neither, a warning and no Authorization.
    w.env.set_env("GITHUB_TOKEN", "");
    w.env.set_env("GH_TOKEN", "gho_fallbackTokenForVerify");
    let before = w.gh.requests().len();
    let run = w.verify_pr(&[]).ok();
    assert!(!run.stdout.contains("fallbackToken") && !run.stderr.contains("fallbackToken"));
    assert!(w.gh.requests()[before..]
        .iter()
        .all(|r| r.headers["authorization"] == "Bearer gho_fallbackTokenForVerify"));
    w.env.set_env("GH_TOKEN", "");
    // Then `gh auth token` (a stand-in gh first on PATH).
    let gh = w.env.bin.join("gh");
    std::fs::write(
        &gh,
        "#!/bin/sh\n[ \"$1 $2\" = \"auth token\" ] && echo gho_fromGhCliForVerify\n",
    )
    .unwrap();
    std::fs::set_permissions(&gh, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let before = w.gh.requests().len();
    let run = w.verify_pr(&[]).ok();
    assert!(!run.stdout.contains("fromGhCli") && !run.stderr.contains("fromGhCli"));
    assert!(w.gh.requests()[before..]
        .iter()
        .all(|r| r.headers["authorization"] == "Bearer gho_fromGhCliForVerify"));
    std::fs::remove_file(&gh).unwrap();
    let before = w.gh.requests().len();
    let run = w.verify_pr(&[]).ok();
    run.expect_stderr("warning: no GitHub token");
    assert!(w.gh.requests()[before..]
        .iter()
        .all(|r| !r.headers.contains_key("authorization")));
}

#[test]
fn verify_lane_finds_the_newest_pr_of_the_lane_branch() {
    let w = World::new();
    let list_path = "/repos/acme/widgets/pulls?head=acme:feat/login&state=all";
    let mut older =
        w.pull(json!({"number": 5, "state": "closed", "created_at": "2025-12-01T00:00:00Z"}));
    let newer = w.pull(json!({"created_at": "2026-01-01T00:05:00Z"}));
    // List items carry no merge fields.
    for k in [
        "merged",
        "mergeable",
        "mergeable_state",
        "rebaseable",
        "merged_by",
        "comments",
    ] {
        older.as_object_mut().unwrap().remove(k);
    }
    w.gh.stub(list_path, Reply::json(&json!([older, newer])));
    w.stub_open(json!({}));
    let v = w
        .verify(&[
            "lane",
            "login",
            "--repo",
            "acme/widgets",
            "--require",
            "ready",
            "--json",
        ])
        .ok()
        .json();
    assert_eq!(v["number"], 7);
    assert_eq!(v["state"], "ready");
    assert_eq!(v["requests"], 8);
    let mut expected = vec![list_path.to_string()];
    expected.extend(w.open_paths());
    assert_eq!(w.gh.paths(), expected);
    assert_eq!(w.notes(&w.head)[0]["number"], 7);
}

#[test]
fn verify_lane_without_a_pr_or_with_a_bad_name_is_a_clear_error() {
    let w = World::new();
    // An unknown lane (no record, no branch feat/nothing anywhere) is bad
    // input, found before GitHub is asked anything.
    let run = w
        .verify(&["lane", "nothing", "--repo", "acme/widgets", "--json"])
        .code(2);
    assert_eq!(run.json()["error"]["code"], "NOT_FOUND");
    run.expect_stderr("error[NOT_FOUND]: there is no lane 'nothing' here");
    run.expect_stderr("hint: ");
    assert!(
        w.gh.paths().is_empty(),
        "GitHub was asked: {:?}",
        w.gh.paths()
    );
    assert!(w.env.refs(&w.alice, "refs/notes").is_empty());
    // A lane that is known (here: its branch) but has no PR is PR_NOT_FOUND.
    w.g(&w.alice, &["branch", "feat/nothing", "main"]);
    w.gh.stub(
        "/repos/acme/widgets/pulls?head=acme:feat/nothing&state=all",
        Reply::json(&json!([])),
    );
    let run = w
        .verify(&["lane", "nothing", "--repo", "acme/widgets", "--json"])
        .code(2);
    assert_eq!(run.json()["error"]["code"], "PR_NOT_FOUND");
    run.expect_stderr("acme:feat/nothing");
    w.verify(&["lane", "Bad..Name", "--repo", "acme/widgets"])
        .err(2, "NAME_INVALID");
}

#[test]
fn the_repository_is_inferred_from_the_remote_url_or_the_pr_url() {
    let w = World::new();
    let merge_commit = w.merge_on_remote("merge");
    w.gh.stub(&pr_path(7), Reply::json(&w.merged_pull(&merge_commit)));
    let remote = w.remote.to_str().unwrap().to_string();
    for url in [
        "https://github.com/acme/widgets.git",
        "git@github.com:acme/widgets.git",
        "ssh://git@github.com/acme/widgets",
    ] {
        // origin names GitHub; insteadOf sends git itself to the local bare remote.
        w.g(&w.alice, &["config", "remote.origin.url", url]);
        w.g(
            &w.alice,
            &["config", &format!("url.{remote}.insteadOf"), url],
        );
        let v = w
            .verify(&["pr", "7", "--require", "merged", "--json"])
            .ok()
            .json();
        assert_eq!(v["repo"], "acme/widgets", "{url}");
        assert_eq!(v["state"], "merged", "{url}");
        w.g(
            &w.alice,
            &["config", "--unset-all", &format!("url.{remote}.insteadOf")],
        );
    }
    w.g(&w.alice, &["config", "remote.origin.url", &remote]);
    let v = w
        .verify(&[
            "pr",
            "https://github.com/acme/widgets/pull/7",
            "--require",
            "merged",
            "--json",
        ])
        .ok()
        .json();
    assert_eq!(v["state"], "merged");
    // A local path names no GitHub repository.
    let run = w.verify(&["pr", "7"]).err(2, "REPO_UNKNOWN");
    run.expect_stderr("--repo");
    w.verify(&[
        "pr",
        "https://github.com/other/thing/pull/7",
        "--repo",
        "acme/widgets",
    ])
    .err(2, "USAGE");
    assert!(w.gh.paths().iter().all(|p| p == &pr_path(7)));
}

#[test]
fn a_note_from_verify_sits_beside_other_note_lines() {
    let w = World::new();
    let merge_commit = w.merge_on_remote("merge");
    w.gh.stub(&pr_path(7), Reply::json(&w.merged_pull(&merge_commit)));
    w.g(
        &w.alice,
        &[
            "notes",
            "--ref=swarm",
            "add",
            "-m",
            "{\"kind\":\"handoff\",\"packet\":\"p1\"}",
            &w.head,
        ],
    );
    w.verify_pr(&[]).ok();
    let lines = w.notes(&w.head);
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["kind"], "handoff");
    assert_eq!(lines[1]["kind"], "verdict");
    assert_eq!(lines[1]["state"], "merged");
    let log = w.g(&w.alice, &["log", "-1", "--format=%B", "refs/notes/swarm"]);
    assert!(log.contains("Swarm-Event: verdict"), "{log}");
    assert!(log.contains("Swarm-Actor: alice"), "{log}");
}

/// Every real recorded GitHub response (`fixtures/github-replay`, part of
/// the repository, so this never skips) parses with our models.
#[test]
fn every_recorded_github_response_parses_with_our_models() {
    use git_swarm::integrations::github::model::{
        CheckRunsPage, CombinedStatus, IssueComment, PullRequest, Review,
    };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/github-replay");
    let entries = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("the recordings in {} are missing: {e}", dir.display()));
    let mut parsed = 0;
    for entry in entries {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let req = doc["request"]["path"].as_str().unwrap();
        let body = doc["response"]["body"].clone();
        let ok = |r: Result<(), serde_json::Error>| {
            r.unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        };
        if doc["response"]["status"].as_u64().unwrap() >= 400 {
            assert!(body["message"].is_string(), "{}", path.display());
        } else if req.ends_with("/check-runs") {
            ok(serde_json::from_value::<CheckRunsPage>(body)
                .map(|p| assert!(!p.check_runs.is_empty())));
        } else if req.ends_with("/status") {
            ok(serde_json::from_value::<CombinedStatus>(body).map(|s| assert!(s.state.is_some())));
        } else if req.ends_with("/reviews") {
            ok(serde_json::from_value::<Vec<Review>>(body)
                .map(|r| assert!(r.iter().all(|r| r.state.is_some()))));
        } else if req.ends_with("/comments") {
            ok(serde_json::from_value::<Vec<IssueComment>>(body)
                .map(|c| assert!(c.iter().all(|c| c.body.is_some()))));
        } else if req.contains("/pulls/") {
            ok(serde_json::from_value::<PullRequest>(body)
                .map(|p| assert!(p.state.is_some() && p.head.is_some())));
        } else {
            panic!("{}: no model for {req}", path.display());
        }
        parsed += 1;
    }
    assert_eq!(parsed, 11, "recorded responses parsed in {}", dir.display());
}

/// The composite action: valid YAML, installs from its own path, runs the
/// guards on the range, and its verify step really runs `verify` (here
/// against the stand-in, as the runner would against GitHub).
#[test]
fn the_composite_action_runs_check_and_verify() {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("action.yml")).unwrap();
    let action: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).unwrap();
    assert_eq!(action["runs"]["using"].as_str(), Some("composite"));
    let steps = action["runs"]["steps"].as_sequence().unwrap();
    let script = |name: &str| -> String {
        steps
            .iter()
            .find(|s| s["name"].as_str() == Some(name))
            .and_then(|s| s["run"].as_str())
            .unwrap_or_else(|| panic!("no step {name}"))
            .to_string()
    };
    assert!(script("Install git-swarm")
        .contains(r#"cargo install --locked --path "$GITHUB_ACTION_PATH""#));
    assert!(script("Guards on the PR's commits")
        .contains(r#"git swarm check --range "$SWARM_BASE..$SWARM_HEAD""#));
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/verify.md"))
            .unwrap();
    for input in [
        "base",
        "head",
        "check",
        "verify-pr",
        "require",
        "wait",
        "timeout",
        "github-token",
    ] {
        assert!(
            action["inputs"][input].is_mapping(),
            "action.yml lacks input {input}"
        );
        assert!(
            readme.contains(&format!("`{input}`")),
            "docs/verify.md does not document input {input}"
        );
    }

    let w = World::new();
    let merge_commit = w.merge_on_remote("merge");
    w.gh.stub(&pr_path(7), Reply::json(&w.merged_pull(&merge_commit)));
    w.g(
        &w.alice,
        &[
            "remote",
            "set-url",
            "origin",
            "https://github.com/acme/widgets.git",
        ],
    );
    let remote = w.remote.to_str().unwrap().to_string();
    w.g(
        &w.alice,
        &[
            "config",
            &format!("url.{remote}.insteadOf"),
            "https://github.com/acme/widgets.git",
        ],
    );
    let verify_step = script("Verify the PR");
    for wait in ["false", "true"] {
        let out = w
            .env
            .command("bash", &w.alice)
            .args(["-euc", &verify_step])
            .env("SWARM_PR", "7")
            .env("SWARM_REQUIRE", "merged")
            .env("SWARM_WAIT", wait)
            .env("SWARM_TIMEOUT", "1m")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "wait={wait}: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.starts_with("acme/widgets#7: merged"), "{stdout}");
    }
    assert_eq!(w.gh.calls(&pr_path(7)), 2);
}

#[test]
fn a_head_missing_locally_is_fetched_so_the_verdict_can_be_noted() {
    let w = World::new();
    w.stub_open(json!({}));
    // maint cloned before the lane pushed: it has never seen the head.
    assert!(
        w.env
            .git_run(
                &w.maint,
                &["cat-file", "-e", &format!("{}^{{commit}}", w.head)]
            )
            .code
            != 0
    );
    let v = w
        .env
        .swarm(
            &w.maint,
            &["verify", "pr", "7", "--repo", "acme/widgets", "--json"],
        )
        .ok()
        .json();
    assert_eq!(v["noted"], true);
    assert_eq!(
        w.g(&w.maint, &["rev-parse", "refs/remotes/origin/feat/login"]),
        w.head
    );
    let note = w.g(&w.maint, &["notes", "--ref=swarm", "show", &w.head]);
    assert!(note.contains("\"state\":\"ready\""), "{note}");

    // A PR from a fork: its branch is not on our remote, GitHub's refs/pull/<n>/head is.
    let fork = World::new();
    let mut pr = fork.pull(json!({}));
    pr["head"]["repo"]["full_name"] = json!("alice/widgets");
    pr["head"]["ref"] = json!("login");
    fork.gh.stub(&pr_path(7), Reply::json(&pr));
    fork.gh.stub(
        &status_path(&fork.head),
        Reply::json(&status_ok(&fork.head)),
    );
    fork.gh
        .stub(&runs_path(&fork.head), Reply::json(&green_runs(&fork.head)));
    fork.gh
        .stub(&reviews_path(7), Reply::json(&approved(&fork.head)));
    fork.gh
        .stub(&comments_path(7), Reply::json(&fixture("comments.json")));
    fork.g(
        &fork.remote,
        &["update-ref", "refs/pull/7/head", &fork.head],
    );
    fork.g(&fork.remote, &["update-ref", "-d", "refs/heads/feat/login"]);
    let v = fork
        .env
        .swarm(
            &fork.maint,
            &["verify", "pr", "7", "--repo", "acme/widgets", "--json"],
        )
        .ok()
        .json();
    assert_eq!(v["state"], "ready");
    assert_eq!(v["noted"], true);
    let note = fork.g(&fork.maint, &["notes", "--ref=swarm", "show", &fork.head]);
    assert!(note.contains("\"kind\":\"verdict\""), "{note}");

    // Nowhere to fetch it from: the verdict stands, unnoted, with a warning.
    fork.g(&fork.remote, &["update-ref", "-d", "refs/pull/7/head"]);
    // (file:// so that git does not copy the remote's unreachable objects too)
    let url = format!("file://{}", fork.remote.display());
    fork.g(fork.env.root(), &["clone", "-q", &url, "carol"]);
    let carol = fork.env.root().join("carol");
    let run = fork
        .env
        .swarm(
            &carol,
            &["verify", "pr", "7", "--repo", "acme/widgets", "--json"],
        )
        .ok();
    assert_eq!(run.json()["state"], "ready");
    assert_eq!(run.json()["noted"], false);
    run.expect_stderr("was not recorded as a note");
    assert!(fork.env.refs(&carol, "refs/notes").is_empty());
}

#[test]
fn a_required_check_not_yet_reported_keeps_the_pr_pending() {
    let w = World::new();
    w.stub_open(json!({}));
    // Protection requires `test` (green) and `deploy`; a ruleset requires
    // `security`. Neither of the last two has reported on the head SHA.
    w.gh.stub(
        &protection_path("main"),
        Reply::json(&required_checks(&["test", "deploy"])),
    );
    w.gh.stub(
        &rules_path("main"),
        Reply::json(&json!([
            {"type": "required_status_checks", "ruleset_source_type": "Repository",
             "ruleset_source": "acme/widgets", "ruleset_id": 4,
             "parameters": {"strict_required_status_checks_policy": false,
                "required_status_checks": [{"context": "security", "integration_id": 5}]}},
            {"type": "deletion", "ruleset_source_type": "Repository",
             "ruleset_source": "acme/widgets", "ruleset_id": 4}
        ])),
    );
    let v = w
        .verify_pr(&["--require", "ready", "--json"])
        .code(1)
        .json();
    assert_eq!(v["state"], "pending", "{v:#}");
    assert_eq!(v["reasons"], json!(["checks-pending"]));
    assert_eq!(v["checks"]["pending"], 2);
    let expected: Vec<&Value> = v["checks"]["details"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["kind"] == "required")
        .collect();
    assert_eq!(
        expected,
        vec![
            &json!({"name": "deploy", "kind": "required", "result": "pending", "state": "expected"}),
            &json!({"name": "security", "kind": "required", "result": "pending", "state": "expected"}),
        ]
    );
    let mut paths = w.open_paths();
    paths.sort();
    let mut seen = w.gh.paths();
    seen.sort();
    assert_eq!(seen, paths);
}

#[test]
fn required_checks_the_token_cannot_read_leave_mergeable_state_to_decide() {
    let w = World::new();
    w.stub_open(json!({}));
    w.gh.stub(
        &protection_path("main"),
        Reply::status(
            403,
            r#"{"message":"Must have admin rights to Repository."}"#,
        ),
    );
    w.gh.stub(
        &rules_path("main"),
        Reply::status(404, r#"{"message":"Not Found"}"#),
    );
    let v = w.verify_pr(&["--require", "ready", "--json"]).ok().json();
    assert_eq!(v["state"], "ready", "{v:#}");
    assert_eq!(v["reasons"], json!(["required-checks-unreadable"]));
    // GitHub's own word that a required check is missing still blocks.
    w.stub_open(json!({"mergeable_state": "blocked"}));
    let v = w.verify_pr(&["--json"]).ok().json();
    assert_eq!(v["state"], "blocked", "{v:#}");
    assert_eq!(
        v["reasons"],
        json!(["branch-protection", "required-checks-unreadable"])
    );
}

/// Every endpoint of open PR #7 with an ETag, so a repeat can be a 304.
fn stub_open_with_etags(w: &World) {
    w.gh.stub(&pr_path(7), Reply::json(&w.pull(json!({}))).etag("\"pr\""));
    w.gh.stub(
        &status_path(&w.head),
        Reply::json(&status_ok(&w.head)).etag("\"st\""),
    );
    w.gh.stub(
        &runs_path(&w.head),
        Reply::json(&green_runs(&w.head)).etag("\"runs\""),
    );
    w.gh.stub(
        &reviews_path(7),
        Reply::json(&approved(&w.head)).etag("\"rv\""),
    );
    w.gh.stub(
        &comments_path(7),
        Reply::json(&fixture("comments.json")).etag("\"cm\""),
    );
    w.gh.stub(
        &protection_path("main"),
        Reply::json(&required_checks(&["test"])).etag("\"prot\""),
    );
    w.gh.stub(
        &rules_path("main"),
        Reply::json(&json!([])).etag("\"rules\""),
    );
}

#[test]
fn a_second_run_of_an_unchanged_pr_makes_only_conditional_requests_answered_304() {
    let w = World::new();
    stub_open_with_etags(&w);
    let first = w.verify_pr(&["--require", "ready", "--json"]).ok().json();
    assert_eq!(first["state"], "ready", "{first:#}");
    assert_eq!(
        (first["requests"].clone(), first["not_modified"].clone()),
        (json!(7), json!(0))
    );

    // A separate process, as a separate CI step would be.
    let second = w.verify_pr(&["--require", "ready", "--json"]).ok().json();
    assert_eq!(second["state"], "ready");
    assert_eq!(
        (second["requests"].clone(), second["not_modified"].clone()),
        (json!(7), json!(7))
    );
    let reqs = w.gh.requests();
    assert_eq!(reqs.len(), 14);
    for r in &reqs[7..] {
        assert!(
            r.headers.contains_key("if-none-match"),
            "{} not conditional",
            r.path
        );
        assert_eq!(r.status, 304, "{}", r.path);
    }
    assert_eq!(w.gh.remaining(), RATE_LIMIT - 7, "the 304s cost nothing");
    for key in ["checks", "review_decision", "reasons", "head_sha"] {
        assert_eq!(first[key], second[key], "{key}");
    }

    // The cache lives under the git dir, one file per URL, without the token.
    let dir = w.alice.join(".git/swarm/cache/github");
    let files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 7, "{files:?}");
    let format = git_swarm::integrations::github::rest::DiskCache::FORMAT;
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(TOKEN), "{} holds the token", f.display());
        let entry: Value = serde_json::from_slice(format.body(&bytes).unwrap()).unwrap();
        assert!(entry["url"].as_str().unwrap().starts_with(&w.gh.url));
    }

    // Torn or foreign entries (whole files, for another URL) are misses,
    // never errors or wrong answers.
    let whole = std::fs::read(&files[0]).unwrap();
    std::fs::write(&files[0], &whole[..whole.len() / 2]).unwrap();
    let foreign = serde_json::json!({"url": "http://elsewhere/x", "etag": "\"pr\"", "body": "{}", "next": null});
    for f in &files[1..] {
        let sealed = format.seal(foreign.to_string().as_bytes());
        std::fs::write(f, sealed.as_bytes()).unwrap();
    }
    let third = w.verify_pr(&["--require", "ready", "--json"]).ok().json();
    assert_eq!(
        (third["requests"].clone(), third["not_modified"].clone()),
        (json!(7), json!(0))
    );
    assert_eq!(third["checks"], first["checks"]);
}

#[test]
fn an_enterprise_remote_url_selects_its_api_host_and_its_token() {
    let mut w = World::new();
    // origin names an Enterprise host (the stand-in's address); insteadOf
    // sends git itself to the local bare remote.
    let host = w.gh.url.trim_start_matches("http://").to_string();
    let url = format!("https://{host}/acme/widgets.git");
    let remote = w.remote.to_str().unwrap().to_string();
    w.g(&w.alice, &["config", "remote.origin.url", &url]);
    w.g(
        &w.alice,
        &["config", &format!("url.{remote}.insteadOf"), &url],
    );
    w.env.set_env("GITHUB_API_URL", "");
    // Test-only: the stand-in speaks plain http.
    w.env.set_env("GIT_SWARM_TEST_API_SCHEME", "http");
    const ENTERPRISE: &str = "ghe_EnterpriseTokenQ7kWz93DISTINCT";
    w.env.set_env("GH_ENTERPRISE_TOKEN", ENTERPRISE);
    let api = |p: String| format!("/api/v3{p}");
    w.gh.stub(&api(pr_path(7)), Reply::json(&w.pull(json!({}))));
    w.gh.stub(&api(status_path(&w.head)), Reply::json(&status_ok(&w.head)));
    w.gh.stub(&api(runs_path(&w.head)), Reply::json(&green_runs(&w.head)));
    w.gh.stub(&api(reviews_path(7)), Reply::json(&approved(&w.head)));
    w.gh.stub(
        &api(comments_path(7)),
        Reply::json(&fixture("comments.json")),
    );
    w.gh.stub(
        &api(protection_path("main")),
        Reply::json(&required_checks(&["test"])),
    );
    w.gh.stub(&api(rules_path("main")), Reply::json(&json!([])));
    let v = w
        .verify(&["pr", "7", "--require", "ready", "--json"])
        .ok()
        .json();
    assert_eq!(v["api"], format!("{}/api/v3", w.gh.url));
    assert_eq!(v["repo"], "acme/widgets");
    assert_eq!(v["state"], "ready", "{v:#}");
    let reqs = w.gh.requests();
    assert_eq!(reqs.len(), 7);
    for r in &reqs {
        assert_eq!(
            r.headers.get("authorization").map(String::as_str),
            Some(format!("Bearer {ENTERPRISE}").as_str()),
            "{}",
            r.path
        );
    }

    // Without an Enterprise token, GITHUB_TOKEN (a github.com token) is not
    // sent to the Enterprise host: the request goes unauthenticated.
    w.env.set_env("GH_ENTERPRISE_TOKEN", "");
    w.env.set_env("GITHUB_ENTERPRISE_TOKEN", "");
    let run = w.verify(&["pr", "7", "--json"]).ok();
    run.expect_stderr("no GitHub token");
    for r in &w.gh.requests()[7..] {
        assert!(!r.headers.contains_key("authorization"), "{}", r.path);
    }
}

/// A server (or a proxy in front of it) that echoes the Authorization header
/// back, in error messages and in PR fields: the token never reaches stdout,
/// stderr, `--json` or the note; neither does anything shaped like a secret.
#[test]
fn a_token_echoed_back_by_the_server_is_redacted_everywhere() {
    let w = World::new();
    // Built from parts: no literal that looks like a leaked key.
    let stripe = format!("{}_live_{}", "sk", "Zq81xWq9Lm2Pp0aB3dE5gH7j");
    let mut pr = w.pull(json!({"title": "Fix login for {authorization}"}));
    pr["head"]["label"] = json!("acme:{authorization}");
    w.gh.stub(&pr_path(7), Reply::json(&pr));
    let mut status = status_ok(&w.head);
    status["statuses"][0]["description"] = json!("proxy saw {authorization}");
    w.gh.stub(&status_path(&w.head), Reply::json(&status));
    w.gh.stub(
        &runs_path(&w.head),
        Reply::json(&runs(vec![check_run(
            41,
            "test {authorization}",
            &w.head,
            "completed",
            json!("success"),
            "2026-01-01T00:10:00Z",
        )])),
    );
    w.gh.stub(&reviews_path(7), Reply::json(&approved(&w.head)));
    w.gh.stub(
        &comments_path(7),
        Reply::json(&json!([comment(
            3,
            "lead",
            &format!("Auto-merge withheld: {{authorization}} and {stripe}"),
            "2026-01-02T09:00:00Z"
        )])),
    );
    // Errors that quote the request, as a misconfigured proxy would.
    w.gh.stub(
        &pr_path(8),
        Reply::status(
            500,
            r#"{"message":"upstream failed for Authorization: {authorization}"}"#,
        ),
    );
    w.gh.stub(
        &pr_path(9),
        Reply::status(401, r#"{"message":"Bad credentials: {authorization}"}"#),
    );
    let mut outputs = Vec::new();
    for json in [true, false] {
        let mut args = vec!["pr", "7", "--repo", "acme/widgets"];
        if json {
            args.push("--json");
        }
        let run = w.verify(&args).ok();
        if json {
            let v = run.json();
            assert_eq!(v["state"], "blocked", "{v:#}");
            let names: Vec<&str> = v["checks"]["details"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|d| d["name"].as_str())
                .collect();
            assert!(
                names
                    .iter()
                    .any(|n| n.starts_with("test Bearer [REDACTED:")),
                "{names:?}"
            );
            let excerpt = v["holds"][0]["excerpt"].as_str().unwrap();
            assert!(
                excerpt.contains("[REDACTED:stripe-live-key]"),
                "the kind is named: {excerpt}"
            );
        }
        outputs.push(run.stdout + &run.stderr);
        for (n, code) in [("8", "GITHUB_API"), ("9", "GITHUB_AUTH")] {
            let mut args = vec!["pr", n, "--repo", "acme/widgets"];
            if json {
                args.push("--json");
            }
            let run = w.verify(&args).code(4);
            if json {
                assert_eq!(run.json()["error"]["code"], code);
                let message = run.json()["error"]["message"].as_str().unwrap().to_string();
                assert!(message.contains("[REDACTED:"), "{message}");
            } else {
                run.expect_stderr(&format!("error[{code}]"));
            }
            outputs.push(run.stdout + &run.stderr);
        }
    }
    let notes = w
        .env
        .git_run(&w.alice, &["notes", "--ref=swarm", "show", &w.head]);
    assert_eq!(notes.code, 0, "a verdict was noted");
    outputs.push(notes.stdout);
    let objects = w
        .env
        .git_run(&w.alice, &["cat-file", "--batch-all-objects", "--batch"]);
    outputs.push(objects.stdout);
    for out in &outputs {
        assert!(!out.contains(TOKEN), "token leaked: {out}");
        assert!(
            !out.contains("VerifyTestToken"),
            "part of the token leaked: {out}"
        );
        assert!(
            !out.contains(&stripe),
            "a secret from the API leaked: {out}"
        );
    }
    // The echo really happened: the server saw and sent back the token.
    assert!(w
        .gh
        .requests()
        .iter()
        .all(|r| r.headers["authorization"] == format!("Bearer {TOKEN}")));
}

/// A token that looks like nothing in particular is still redacted by its
/// exact value.
#[test]
fn a_token_of_any_shape_is_redacted_by_its_exact_value() {
    let mut w = World::new();
    let token = "plain-test-credential-0042";
    w.env.set_env("GITHUB_TOKEN", token);
    w.gh.stub(
        &pr_path(9),
        Reply::status(
            403,
            r#"{"message":"forbidden: you sent {authorization}","documentation_url":"https://docs.github.com/rest"}"#,
        ),
    );
    for args in [vec!["--json"], vec![]] {
        let mut all = vec!["pr", "9", "--repo", "acme/widgets"];
        all.extend(args);
        let run = w.verify(&all).code(4);
        let out = run.stdout.clone() + &run.stderr;
        assert!(!out.contains(token), "token leaked: {out}");
        assert!(out.contains("you sent Bearer [REDACTED:token]"), "{out}");
    }
}

/// With the records on a coordination remote of their own, `verify` still
/// judges on the code remote: the merge commit is looked for on origin's
/// main (fetched from origin), and the verdict note goes to the
/// coordination remote with the records.
#[test]
fn merged_is_confirmed_on_the_code_remote_when_records_live_elsewhere() {
    let w = World::new();
    w.env
        .git(w.env.root(), &["init", "--quiet", "--bare", "coord.git"]);
    let coord = w.env.root().join("coord.git");
    w.env
        .swarm(
            &w.alice,
            &["init", "--coordination-remote", coord.to_str().unwrap()],
        )
        .ok();
    let merge_commit = w.merge_on_remote("merge");
    w.gh.stub(&pr_path(7), Reply::json(&w.merged_pull(&merge_commit)));
    let v = w.verify_pr(&["--require", "merged", "--json"]).ok().json();
    assert_eq!(v["state"], "merged", "{v:#}");
    assert_eq!(v["confirmed_on_base"], true, "{v:#}");
    assert_eq!(
        w.g(&w.alice, &["rev-parse", "refs/remotes/origin/main"]),
        merge_commit
    );
    assert_eq!(w.notes(&w.head).len(), 1);
    w.env.swarm(&w.alice, &["sync"]).ok();
    let on = |remote: &Path| w.env.refs(remote, "refs/notes/");
    assert!(
        on(&coord).contains_key("refs/notes/swarm"),
        "{:?}",
        on(&coord)
    );
    assert!(on(&w.remote).is_empty(), "{:?}", on(&w.remote));
}
