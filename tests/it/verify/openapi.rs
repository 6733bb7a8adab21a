//! `verify` against GitHub's own description of its REST API: `prism mock`
//! (npm `@stoplight/prism-cli`) serving `generated/api.github.com.json` of
//! npm `@octokit/openapi`, trimmed to the operations verify uses
//! (`tests/openapi/setup.sh` installs both at pinned versions; `.ci/run`
//! runs it and sets `GIT_SWARM_PRISM` and `GIT_SWARM_OPENAPI`).
//!
//! - Static mode: prism answers with the description's examples and checks
//!   every request against the description; a violation comes back in the
//!   `sl-violations` header. None may concern the request.
//! - Dynamic mode (`-d`): random schema-valid answers. Each run
//!   ends in a verdict consistent with the answer, or fails closed (exit 4)
//!   naming the field; never a panic, never `merged` without
//!   `confirmed_on_base`, never `ready` for a closed, draft or merged PR.
//!
//! Between verify and prism sits a small proxy thread (127.0.0.1): prism
//! negotiates only `application/json` and answers GitHub's
//! `application/vnd.github+json` with 406, so the proxy rewrites `Accept`;
//! it also drops the `Link` header (the description's example and random
//! links point at other hosts, which verify rightly refuses; pagination is
//! tested against the local stand-in), and records every exchange.
//!
//! Without `GIT_SWARM_PRISM` the tests skip with a note, unless
//! `GIT_SWARM_REQUIRE_OPENAPI=1` (CI), where they fail instead.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::harness::TestEnv;

/// Random answers tried in dynamic mode, as prism made them and then with
/// the PR's `head.sha` replaced by a commit SHA.
const DYNAMIC_RUNS: usize = 30;
/// How long prism may take to start (it parses the description first).
const PRISM_START: Duration = Duration::from_secs(120);

fn prism_paths() -> Option<(PathBuf, PathBuf)> {
    let get = |var: &str| {
        std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    match (get("GIT_SWARM_PRISM"), get("GIT_SWARM_OPENAPI")) {
        (Some(prism), Some(spec)) => {
            assert!(
                prism.exists(),
                "GIT_SWARM_PRISM {} is missing",
                prism.display()
            );
            assert!(
                spec.exists(),
                "GIT_SWARM_OPENAPI {} is missing",
                spec.display()
            );
            Some((prism, spec))
        }
        _ if std::env::var("GIT_SWARM_REQUIRE_OPENAPI").as_deref() == Ok("1") => panic!(
            "GIT_SWARM_REQUIRE_OPENAPI=1 but GIT_SWARM_PRISM / GIT_SWARM_OPENAPI are not set: \
             run `eval \"$(bash tests/openapi/setup.sh)\"` first"
        ),
        _ => {
            eprintln!(
                "note: skipping the OpenAPI test: GIT_SWARM_PRISM / GIT_SWARM_OPENAPI not set \
                 (eval \"$(bash tests/openapi/setup.sh)\" to run it)"
            );
            None
        }
    }
}

/// Printed even when the test harness captures output (CI logs show it).
fn say(message: &str) {
    let _ = writeln!(std::io::stderr(), "{message}");
}

struct Prism {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Prism {
    fn start(prism: &Path, spec: &Path, dynamic: bool, dir: &Path) -> Prism {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log = dir.join(if dynamic { "prism-d.log" } else { "prism.log" });
        let out = std::fs::File::create(&log).unwrap();
        let mut cmd = Command::new(prism);
        cmd.args(["mock", "-h", "127.0.0.1", "-p", &port.to_string()]);
        if dynamic {
            cmd.arg("-d");
        }
        cmd.arg(spec)
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out);
        let started = Instant::now();
        let mut p = Prism {
            child: cmd.spawn().expect("start prism"),
            port,
            log,
        };
        loop {
            let text = std::fs::read_to_string(&p.log).unwrap_or_default();
            if text.contains("Prism is listening") {
                break;
            }
            if let Ok(Some(status)) = p.child.try_wait() {
                panic!("prism exited ({status}) before listening:\n{text}");
            }
            assert!(
                started.elapsed() < PRISM_START,
                "prism did not start within {PRISM_START:?}:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        say(&format!(
            "openapi: prism{} listening after {:.1} s",
            if dynamic { " -d" } else { "" },
            started.elapsed().as_secs_f64()
        ));
        p
    }
}

impl Drop for Prism {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One request verify made and prism's answer, as the proxy saw them.
#[derive(Debug, Clone)]
struct Exchange {
    path: String,
    request_headers: Vec<(String, String)>,
    status: u16,
    violations: Option<String>,
    body: String,
}

/// The header-rewriting proxy between verify and prism.
struct Proxy {
    url: String,
    /// Replace a PR answer's `head.sha` (a random string in dynamic mode)
    /// with a 40-hex SHA, so that open PRs get past verify's SHA check and
    /// the rest of their answers are exercised.
    fix_sha: Arc<std::sync::atomic::AtomicBool>,
    server: Arc<tiny_http::Server>,
    seen: Arc<Mutex<Vec<Exchange>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Proxy {
    fn start(prism_port: u16) -> Proxy {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").unwrap());
        let port = server.server_addr().to_ip().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let fix_sha = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let thread = {
            let (server, seen, fix) = (server.clone(), seen.clone(), fix_sha.clone());
            std::thread::spawn(move || {
                while let Ok(req) = server.recv() {
                    let fix = fix.load(std::sync::atomic::Ordering::SeqCst);
                    forward(req, prism_port, &seen, fix);
                }
            })
        };
        Proxy {
            url: format!("http://127.0.0.1:{port}"),
            fix_sha,
            server,
            seen,
            thread: Some(thread),
        }
    }

    fn take(&self) -> Vec<Exchange> {
        std::mem::take(&mut *self.seen.lock().unwrap())
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn forward(req: tiny_http::Request, prism_port: u16, seen: &Mutex<Vec<Exchange>>, fix_sha: bool) {
    let path = req.url().to_string();
    let request_headers: Vec<(String, String)> = req
        .headers()
        .iter()
        .map(|h| {
            (
                h.field.as_str().as_str().to_ascii_lowercase(),
                h.value.as_str().to_string(),
            )
        })
        .collect();
    let mut head = format!(
        "{} {path} HTTP/1.1\r\nHost: 127.0.0.1:{prism_port}\r\nAccept: application/json\r\nConnection: close\r\n",
        req.method().as_str()
    );
    for (k, v) in &request_headers {
        if !matches!(
            k.as_str(),
            "host" | "accept" | "connection" | "accept-encoding"
        ) {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
    }
    head.push_str("\r\n");
    let mut raw = Vec::new();
    let mut stream = TcpStream::connect(("127.0.0.1", prism_port)).expect("connect to prism");
    stream.write_all(head.as_bytes()).unwrap();
    stream.read_to_end(&mut raw).unwrap();
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("an HTTP answer from prism");
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let mut body = raw[split + 4..].to_vec();
    let mut lines = head.lines();
    let status: u16 = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let get = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    if get("transfer-encoding").is_some_and(|t| t.eq_ignore_ascii_case("chunked")) {
        body = dechunk(&body);
    }
    let mut body = String::from_utf8_lossy(&body).to_string();
    if fix_sha && status == 200 && operation(&path) == "pull" {
        if let Ok(mut pr) = serde_json::from_str::<Value>(&body) {
            if pr["head"].is_object() {
                pr["head"]["sha"] = "0123456789abcdef0123456789abcdef01234567".into();
                body = pr.to_string();
            }
        }
    }
    seen.lock().unwrap().push(Exchange {
        path,
        request_headers,
        status,
        violations: get("sl-violations"),
        body: body.clone(),
    });
    let mut resp = tiny_http::Response::from_string(body).with_status_code(status);
    for (k, v) in &headers {
        if matches!(
            k.as_str(),
            "link" | "content-length" | "transfer-encoding" | "connection" | "keep-alive"
        ) {
            continue;
        }
        if let Ok(h) = tiny_http::Header::from_bytes(k.as_bytes(), v.as_bytes()) {
            resp.add_header(h);
        }
    }
    let _ = req.respond(resp);
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = data.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size = usize::from_str_radix(
            String::from_utf8_lossy(&data[..eol])
                .split(';')
                .next()
                .unwrap()
                .trim(),
            16,
        )
        .unwrap_or(0);
        if size == 0 {
            return out;
        }
        let start = eol + 2;
        out.extend_from_slice(&data[start..(start + size).min(data.len())]);
        data = &data[(start + size + 2).min(data.len())..];
    }
}

/// Request violations in one `sl-violations` header (response violations
/// are prism's examples disagreeing with their own schema: not ours).
fn request_violations(header: &str) -> Vec<Value> {
    let all: Vec<Value> = serde_json::from_str(header)
        .unwrap_or_else(|_| vec![serde_json::json!({"location": ["request"], "message": header})]);
    all.into_iter()
        .filter(|v| v["location"][0] != "response")
        .collect()
}

/// The operation (path template) a request path is for.
fn operation(path: &str) -> &'static str {
    let p = path.split('?').next().unwrap();
    let parts: Vec<&str> = p.split('/').collect();
    match parts.as_slice() {
        ["", "repos", _, _, "pulls"] => "pulls?head",
        ["", "repos", _, _, "pulls", _] => "pull",
        ["", "repos", _, _, "commits", _, "status"] => "status",
        ["", "repos", _, _, "commits", _, "check-runs"] => "check-runs",
        ["", "repos", _, _, "pulls", _, "reviews"] => "reviews",
        ["", "repos", _, _, "issues", _, "comments"] => "comments",
        ["", "repos", _, _, "branches", .., "protection", "required_status_checks"] => {
            "required_status_checks"
        }
        ["", "repos", _, _, "rules", "branches", ..] => "rules",
        _ => "other",
    }
}

struct Setup {
    env: TestEnv,
    dir: PathBuf,
}

fn setup(proxy: &Proxy, with_remote: bool) -> Setup {
    let mut env = TestEnv::new();
    env.set_env("GITHUB_API_URL", &proxy.url);
    env.set_env("GITHUB_TOKEN", "ghp_OpenApiTestTokenDISTINCT");
    env.set_env("GIT_SWARM_VERIFY_BACKOFF_MS", "1");
    env.set_env("GIT_SWARM_VIRTUAL_WAITS", "1");
    env.set_env("GIT_SWARM_HTTP_TIMEOUT_MS", "60000");
    let dir = if with_remote {
        let (_, clones) = env.remote_with_clones(&["alice"]);
        clones[0].clone()
    } else {
        env.repo("alice")
    };
    Setup { env, dir }
}

#[test]
fn openapi_static_every_request_verify_makes_is_valid() {
    let Some((prism_bin, spec)) = prism_paths() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let prism = Prism::start(&prism_bin, &spec, false, tmp.path());
    let proxy = Proxy::start(prism.port);
    let s = setup(&proxy, true);

    // The description's example PR is open: every endpoint of an open PR.
    let run = s.env.swarm(
        &s.dir,
        &[
            "verify",
            "pr",
            "1347",
            "--repo",
            "octocat/Hello-World",
            "--json",
        ],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let v = run.json();
    assert!(v["state"].is_string(), "{v:#}");
    let mut exchanges = proxy.take();
    // The lane lookup: `pulls?head=…&state=all` (verify asks GitHub only
    // about a lane it knows: the branch feat/login). The example's head is
    // not feat/login, so no PR is found (exit 2) after a valid request.
    s.env.git(&s.dir, &["branch", "feat/login"]);
    let run = s.env.swarm(
        &s.dir,
        &[
            "verify",
            "lane",
            "login",
            "--repo",
            "octocat/Hello-World",
            "--json",
        ],
    );
    assert!(
        (0..=2).contains(&run.code),
        "{}\n{}",
        run.stdout,
        run.stderr
    );
    exchanges.extend(proxy.take());

    let mut ops: Vec<&str> = exchanges.iter().map(|e| operation(&e.path)).collect();
    ops.sort();
    ops.dedup();
    assert_eq!(
        ops,
        [
            "check-runs",
            "comments",
            "pull",
            "pulls?head",
            "required_status_checks",
            "reviews",
            "rules",
            "status"
        ],
        "every operation verify uses was exercised: {exchanges:#?}"
    );
    let mut bad = Vec::new();
    for e in &exchanges {
        assert!(
            e.request_headers.iter().any(|(k, _)| k == "authorization"),
            "{}",
            e.path
        );
        if let Some(h) = &e.violations {
            let v = request_violations(h);
            if !v.is_empty() {
                bad.push(format!("GET {} -> {}: {v:?}", e.path, e.status));
            }
        }
        // Prism refuses a request it cannot validate (e.g. a bad query
        // parameter) with 422, not always with a violation header.
        if e.status == 422 || e.status == 400 {
            bad.push(format!("GET {} -> {}: {}", e.path, e.status, e.body));
        }
    }
    // Prism logs each one as `Violation: request.<where> <message>`.
    let log = std::fs::read_to_string(&prism.log).unwrap_or_default();
    for line in log.lines() {
        if line.to_ascii_lowercase().contains("violation: request") {
            bad.push(line.to_string());
        }
    }
    assert!(
        bad.is_empty(),
        "requests that violate GitHub's description:\n{}",
        bad.join("\n")
    );
    say(&format!(
        "openapi static: {} requests of verify, 0 request violations",
        exchanges.len()
    ));
}

/// What the proxy saw prism answer for the PR itself, last in this run.
fn pr_answer(exchanges: &[Exchange]) -> Option<Value> {
    exchanges
        .iter()
        .rev()
        .find(|e| operation(&e.path) == "pull" && e.status == 200)
        .and_then(|e| serde_json::from_str(&e.body).ok())
}

#[test]
fn openapi_dynamic_random_answers_never_yield_a_false_verdict() {
    let Some((prism_bin, spec)) = prism_paths() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let prism = Prism::start(&prism_bin, &spec, true, tmp.path());
    let proxy = Proxy::start(prism.port);
    // Offline, with no remote: git cannot confirm a merge, so a random
    // `merged: true` must come out `merged-unconfirmed`.
    let s = setup(&proxy, false);
    for fix_sha in [false, true] {
        proxy
            .fix_sha
            .store(fix_sha, std::sync::atomic::Ordering::SeqCst);
        dynamic_runs(&s, &proxy, fix_sha);
    }
}

fn dynamic_runs(s: &Setup, proxy: &Proxy, fix_sha: bool) {
    let mut verdicts = 0usize;
    let mut states = std::collections::BTreeMap::<String, usize>::new();
    let mut refusals = std::collections::BTreeMap::<String, usize>::new();
    for i in 0..DYNAMIC_RUNS {
        let run = s.env.swarm(
            &s.dir,
            &[
                "verify",
                "pr",
                "1",
                "--repo",
                "octocat/Hello-World",
                "--json",
            ],
        );
        let exchanges = proxy.take();
        let shown = format!(
            "run {i}: exit {}\nstdout: {}\nstderr: {}\nanswers: {:#?}",
            run.code, run.stdout, run.stderr, exchanges
        );
        assert!(!run.stderr.contains("panicked"), "{shown}");
        for e in &exchanges {
            if let Some(h) = &e.violations {
                assert!(request_violations(h).is_empty(), "{shown}");
            }
            assert!(e.status != 422 && e.status != 400, "{shown}");
        }
        match run.code {
            0 => {
                verdicts += 1;
                let v = run.json();
                let state = v["state"].as_str().expect("a state").to_string();
                let pr = pr_answer(&exchanges).expect("the PR was asked");
                let merged = pr["merged"] == true;
                let open = pr["state"] == "open";
                if state == "merged" {
                    assert_eq!(v["confirmed_on_base"], true, "{shown}");
                }
                if state == "ready" {
                    assert!(open && !merged && pr["draft"] != true, "{shown}");
                }
                if merged {
                    assert!(
                        state == "merged-unconfirmed" || state == "merged",
                        "{shown}"
                    );
                } else if !open {
                    assert!(state == "closed" || state == "pending", "{shown}");
                }
                *states.entry(state).or_default() += 1;
            }
            4 => {
                let err = run.json();
                let message = err["error"]["message"].as_str().unwrap_or("").to_string();
                assert!(
                    message.contains("field `"),
                    "a fail-closed error names the field: {shown}"
                );
                let field = message
                    .split("field `")
                    .nth(1)
                    .and_then(|m| m.split('`').next())
                    .unwrap_or("?")
                    .to_string();
                *refusals.entry(field).or_default() += 1;
            }
            _ => panic!("neither a verdict nor a fail-closed error: {shown}"),
        }
    }
    let share = 100.0 * verdicts as f64 / DYNAMIC_RUNS as f64;
    let how = if fix_sha {
        "with head.sha made a SHA"
    } else {
        "as generated"
    };
    say(&format!(
        "openapi dynamic ({how}): {verdicts}/{DYNAMIC_RUNS} random schema-valid answers yielded a verdict ({share:.0}%); states {states:?}; refused (exit 4) by field {refusals:?}"
    ));
}
