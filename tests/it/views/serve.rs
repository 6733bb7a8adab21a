//! `git swarm serve` and `git swarm state --html`: the dashboard. Record
//! text stays inert (escaped, bidi controls shown), the server is
//! read-only, local and token-guarded, and a real headless Chromium
//! renders the page of a swarm made here and follows a change pushed from
//! another clone without a reload (driven over the DevTools protocol).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::support::fixture::Swarm;
use crate::support::harness::TestEnv;

/// A running `git swarm serve`, stopped (its process group) on drop.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start(env: &TestEnv, dir: &Path, args: &[&str]) -> Server {
        let mut cmd = env.command("git", dir);
        cmd.args(["swarm", "serve", "--port", "0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let mut child = cmd.spawn().expect("start git swarm serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .map(|u| u.trim_end_matches("?token=<your").to_string())
            .unwrap_or_else(|| {
                let _ = child.kill();
                let mut err = String::new();
                child
                    .stderr
                    .take()
                    .unwrap()
                    .read_to_string(&mut err)
                    .unwrap();
                panic!("serve printed no URL: {line:?}\n{err}");
            });
        Server { child, url }
    }
    fn addr(&self) -> String {
        self.url
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_string()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        kill_group(self.child.id());
        let _ = self.child.wait();
    }
}

fn kill_group(pid: u32) {
    let _ = std::process::Command::new("kill")
        .args(["-TERM", "--", &format!("-{pid}")])
        .status();
}

/// One HTTP/1.1 request: (status, headers lower-cased, body).
fn http(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, Vec<(String, String)>, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    // Until the server closes, or the body named by Content-Length is in
    // (the DevTools endpoint keeps the connection open).
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let n = s.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&buf[..n]);
        if let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
            let len = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok());
            if len.is_some_and(|len| raw.len() >= end + 4 + len) {
                break;
            }
        }
    }
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let hs = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect::<Vec<_>>();
    let chunked = hs
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_string()
    };
    (status, hs, body)
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n.min(rest.len())]);
        s = rest.get(n + 2..).unwrap_or("");
    }
    out
}

fn header<'a>(hs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    hs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// Every `href="…"` value of a page.
fn hrefs(html: &str) -> Vec<String> {
    let re = regex::Regex::new(r#"(?i)\shref\s*=\s*"([^"]*)""#).unwrap();
    re.captures_iter(html).map(|c| c[1].to_string()).collect()
}

/// The `data-count` of section `id`.
fn count(html: &str, id: &str, attr: &str) -> usize {
    let re = regex::Regex::new(&format!(r#"<section[^>]* id="{id}"[^>]*>"#)).unwrap();
    let tag = re
        .find(html)
        .unwrap_or_else(|| panic!("no section #{id}"))
        .as_str();
    let re = regex::Regex::new(&format!(r#"{attr}="(\d+)""#)).unwrap();
    re.captures(tag)
        .unwrap_or_else(|| panic!("section #{id} has no {attr}: {tag}"))[1]
        .parse()
        .unwrap()
}

const EVIL: &str = r#"<script>alert(1)</script> <a href="javascript:alert(2)">click</a> javascript:alert(3) <img src=x onerror=alert(4)>"#;

/// A message record written with plumbing, as anyone with push rights
/// could: its body and its ref name hold a right-to-left override.
fn forge_message(env: &TestEnv, dir: &Path) {
    let yaml = "schema: swarm-message/v1\nid: evil\u{202e}gnp\nfrom: mallory\nto: all\nkind: notify\nplan: p\nat: 2026-01-01T00:00:00Z\nbody: \"abc\u{202e}exe.txt <script>alert(5)</script>\"\n";
    let blob = env.git_stdin(dir, &["hash-object", "-w", "--stdin"], yaml.as_bytes());
    let tree = env.git_stdin(
        dir,
        &["mktree"],
        format!("100644 blob {blob}\tmessage.yaml\n").as_bytes(),
    );
    let commit = env.git(dir, &["commit-tree", &tree, "-m", "forged"]);
    env.git(
        dir,
        &[
            "update-ref",
            "refs/swarm/messages/p/evil\u{202e}gnp",
            &commit,
        ],
    );
}

#[test]
fn record_text_on_the_dashboard_stays_inert_text() {
    let (env, repo) = Swarm::repo("r").init(0).repo_parts();
    env.swarm(&repo, &["plan", "new", "p", "--title", EVIL])
        .ok();
    env.swarm(
        &repo,
        &["task", "new", "t1", "--plan", "p", "--title", EVIL],
    )
    .ok();
    env.swarm(&repo, &["notify", "all", "--plan", "p", EVIL])
        .ok();
    env.swarm(&repo, &["lane", "new", "l", "--plan", "p", "--no-task"])
        .ok();
    let wt = repo.join("_swarm-worktrees").join("l");
    env.swarm(&wt, &["report", "blocked", "approval", EVIL])
        .ok();
    forge_message(&env, &repo);
    let before = env.all_refs(&repo);

    let file = env.root().join("page.html");
    let out = env
        .swarm(
            &repo,
            &["state", "--html", file.to_str().unwrap(), "--json"],
        )
        .ok();
    assert_eq!(out.json()["tasks"], 1);
    let html = env.read(&file);
    let server = Server::start(&env, &repo, &[]);
    let (status, _, served) = http(&server.addr(), "GET", "/", &[]);
    assert_eq!(status, 200);

    for (what, page, scripts) in [("file", &html, 0), ("served", &served, 1)] {
        assert!(
            !page.contains("<script>alert"),
            "{what}: a record's <script> is markup:\n{page}"
        );
        assert!(
            !page.contains("<img src=x"),
            "{what}: a record's <img> is markup"
        );
        assert!(
            page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{what}: the title is not shown as text"
        );
        assert_eq!(
            page.matches("<script").count(),
            scripts,
            "{what}: script elements"
        );
        for h in hrefs(page) {
            assert!(
                h.starts_with('#') || h == "style.css",
                "{what}: a link leaves the page: {h}"
            );
        }
        assert!(
            !page.to_lowercase().contains("href=\"javascript:"),
            "{what}"
        );
        assert!(
            !page.contains('\u{202e}'),
            "{what}: a raw bidi override reached the page"
        );
        assert!(
            page.contains("[U+202E]"),
            "{what}: the bidi override is not shown"
        );
        // The forged record is named as unreadable, not dropped silently.
        assert!(page.contains("id=\"unreadable\""), "{what}");
        // The title, the message body and the lane report are each shown.
        assert!(
            page.matches("&lt;script&gt;alert(1)").count() >= 4,
            "{what}"
        );
    }
    assert!(
        html.contains("Content-Security-Policy"),
        "the file carries its own CSP"
    );
    assert_eq!(env.all_refs(&repo), before, "the dashboard wrote a ref");
}

#[test]
fn serve_is_read_only_local_and_fenced_by_its_token() {
    let (env, repo) = Swarm::repo("r").plan(0, "p").repo_parts();
    let before = env.all_refs(&repo);
    let server = Server::start(&env, &repo, &[]);
    let addr = server.addr();

    let (status, hs, body) = http(&addr, "GET", "/", &[]);
    assert_eq!(status, 200, "{body}");
    let csp = header(&hs, "content-security-policy").expect("a CSP header");
    assert!(
        csp.contains("default-src 'none'") && csp.contains("script-src 'self'"),
        "{csp}"
    );
    assert!(!csp.contains("unsafe"), "{csp}");
    assert_eq!(header(&hs, "x-content-type-options"), Some("nosniff"));
    assert!(body.contains("id=\"plans\""));
    let (_, hs, _) = http(&addr, "GET", "/style.css", &[]);
    assert!(header(&hs, "content-type").unwrap().starts_with("text/css"));

    let fp = |a: &str| {
        http(a, "GET", "/fingerprint", &[])
            .2
            .lines()
            .next()
            .unwrap()
            .to_string()
    };
    let first = fp(&addr);
    assert_eq!(fp(&addr), first, "nothing moved, the fingerprint stays");
    assert_eq!(env.all_refs(&repo), before, "serving wrote a ref");
    env.swarm(&repo, &["task", "new", "t1", "--plan", "p", "--title", "x"])
        .ok();
    assert_ne!(fp(&addr), first, "a new record moves the fingerprint");
    let after_task = env.all_refs(&repo);
    assert!(http(&addr, "GET", "/", &[]).2.contains("data-task=\"t1\""));

    let (status, _, _) = http(&addr, "POST", "/", &[]);
    assert_eq!(status, 405, "read-only");
    let (status, _, _) = http(&addr, "GET", "/", &[("Host", "evil.example")]);
    assert_eq!(status, 403, "a foreign Host (DNS rebinding) is refused");
    assert_eq!(env.all_refs(&repo), after_task);
    drop(server);

    // Another address needs a token.
    env.swarm(&repo, &["serve", "--port", "0", "--bind", "0.0.0.0"])
        .err(2, "SERVE_TOKEN_REQUIRED")
        .stderr_has("--token");
    let token = "0123456789abcdef0123";
    let server = Server::start(&env, &repo, &["--bind", "127.0.0.1", "--token", token]);
    let addr = server.addr();
    let (status, _, _) = http(&addr, "GET", "/", &[]);
    assert_eq!(status, 401);
    let (status, _, _) = http(&addr, "GET", "/fingerprint?token=wrong-wrong-wrong", &[]);
    assert_eq!(status, 401);
    let (status, hs, _) = http(&addr, "GET", &format!("/?token={token}"), &[]);
    assert_eq!(status, 200);
    let cookie = header(&hs, "set-cookie").expect("the token becomes a cookie");
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let jar = format!("swarm_token={token}");
    assert_eq!(
        http(&addr, "GET", "/fingerprint", &[("Cookie", &jar)]).0,
        200
    );
    let bearer = format!("Bearer {token}");
    assert_eq!(
        http(&addr, "GET", "/live.js", &[("Authorization", &bearer)]).0,
        200
    );
    assert_eq!(env.all_refs(&repo), after_task);
}

// -- the real browser ---------------------------------------------------------

/// Debian's chromium, or None (then the test is skipped, unless CI asks
/// for it with GIT_SWARM_REQUIRE_CHROMIUM=1).
fn chromium() -> Option<PathBuf> {
    let found = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists());
    if found.is_none() {
        assert!(
            std::env::var("GIT_SWARM_REQUIRE_CHROMIUM").as_deref() != Ok("1"),
            "GIT_SWARM_REQUIRE_CHROMIUM=1 but no chromium is installed (apt-get install -y chromium)"
        );
        eprintln!("skipped: no chromium (apt-get install -y chromium)");
    }
    found
}

fn chromium_cmd(bin: &Path, profile: &Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(bin);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .stdin(Stdio::null());
    cmd
}

/// A swarm on two machines: a root plan with 6 child plans, each with a
/// lane (two of which edit the same line: one forecast conflict), 30 tasks
/// with dependencies in the root plan (2 claimed, 1 blocked, 1 done
/// unverified), 2 reservations and 3 messages.
fn swarm_fixture(env: &TestEnv) -> (PathBuf, PathBuf) {
    let (_remote, m1, m2) = crate::lane::forecast::two_machines(env);
    env.swarm(&m1, &["plan", "new", "shop", "--title", "Online shop"])
        .ok();
    env.swarm(
        &m1,
        &["lead", "claim", "--plan", "shop", "--succession", "m1,m2"],
    )
    .ok();
    for (i, (machine, line)) in [(&m1, 2), (&m2, 2), (&m1, 4), (&m2, 6), (&m1, 8), (&m2, 10)]
        .into_iter()
        .enumerate()
    {
        let lane = format!("l{}", i + 1);
        env.swarm(machine, &["sync"]).ok();
        env.swarm(
            machine,
            &[
                "plan",
                "new",
                &lane,
                "--parent",
                "shop",
                "--title",
                &format!("part {}", i + 1),
            ],
        )
        .ok();
        env.swarm(machine, &["lane", "new", &lane, "--plan", &lane])
            .ok();
        let wt = machine.join("_swarm-worktrees").join(&lane);
        if i < 2 {
            crate::lane::forecast::edit(env, &wt, line, &format!("line {line} from {lane}"));
        } else {
            env.write(&wt.join(format!("g{i}")), "new file\n");
            env.git(&wt, &["add", "."]);
            env.git(&wt, &["commit", "--quiet", "-m", "add a file"]);
            env.git(
                &wt,
                &[
                    "push",
                    "--quiet",
                    "--no-verify",
                    "origin",
                    &format!("feat/{lane}"),
                ],
            );
        }
        env.swarm(
            machine,
            &[
                "report",
                "plan-ready",
                "--lane",
                &lane,
                "--capacity",
                "ok 60% @w1",
            ],
        )
        .ok();
        env.swarm(machine, &["sync"]).ok();
    }
    for i in 1..=30 {
        let id = format!("t{i:02}");
        let mut deps = Vec::new();
        if i % 5 != 1 {
            deps.push(format!("t{:02}", i - 1));
        }
        if i == 11 || i == 21 {
            deps.push(format!("t{:02}", i - 6));
        }
        let title = format!("task number {i}");
        let mut args = vec![
            "task",
            "new",
            &id,
            "--plan",
            "shop",
            "--title",
            &title,
            "--offline",
        ];
        let joined = deps.join(",");
        if !deps.is_empty() {
            args.extend(["--depends-on", &joined]);
        }
        if i == 6 {
            // Bound to a branch that is not merged: done is then unverified.
            args.extend(["--lane", "l1"]);
        }
        env.swarm(&m1, &args).ok();
    }
    env.swarm(&m1, &["sync"]).ok();
    env.swarm(&m2, &["sync"]).ok();
    env.swarm(&m1, &["task", "claim", "t01", "--plan", "shop"])
        .ok();
    env.swarm(&m2, &["task", "claim", "t26", "--plan", "shop"])
        .ok();
    env.swarm(
        &m1,
        &[
            "task",
            "block",
            "t16",
            "--plan",
            "shop",
            "--reason",
            "waits for a key",
        ],
    )
    .ok();
    env.swarm(&m2, &["task", "claim", "t06", "--plan", "shop"])
        .ok();
    env.swarm(
        &m2,
        &[
            "task",
            "done",
            "t06",
            "--plan",
            "shop",
            "--unverified",
            "--reason",
            "merged by hand",
        ],
    )
    .ok();
    env.swarm(&m1, &["reserve", "src/api/"]).ok();
    env.swarm(&m2, &["reserve", "docs/"]).ok();
    env.swarm(&m1, &["notify", "all", "--plan", "shop", "kick-off at ten"])
        .ok();
    env.swarm(
        &m2,
        &["ask", "m1", "--plan", "shop", "which base for the API?"],
    )
    .ok();
    env.swarm(
        &m2,
        &[
            "escalate",
            "approval",
            "--plan",
            "shop",
            "need a deploy key",
        ],
    )
    .ok();
    env.swarm(&m1, &["sync"]).ok();
    env.swarm(&m1, &["forecast"]).ok();
    env.git(&m1, &["config", "swarm.waitCeiling", "1s"]);
    (m1, m2)
}

/// A minimal DevTools-protocol client over one websocket (text frames).
struct Cdp {
    s: TcpStream,
    next: u64,
}

impl Cdp {
    fn connect(ws_url: &str) -> Cdp {
        let rest = ws_url.trim_start_matches("ws://");
        let (addr, path) = rest.split_at(rest.find('/').unwrap());
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        .unwrap();
        let mut head = Vec::new();
        let mut b = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            s.read_exact(&mut b).unwrap();
            head.push(b[0]);
        }
        let head = String::from_utf8_lossy(&head);
        assert!(
            head.starts_with("HTTP/1.1 101"),
            "websocket refused: {head}"
        );
        Cdp { s, next: 0 }
    }

    fn send(&mut self, text: &str) {
        let data = text.as_bytes();
        let mut frame = vec![0x81u8];
        match data.len() {
            n if n < 126 => frame.push(0x80 | n as u8),
            n if n < 65536 => {
                frame.push(0x80 | 126);
                frame.extend((n as u16).to_be_bytes());
            }
            n => {
                frame.push(0x80 | 127);
                frame.extend((n as u64).to_be_bytes());
            }
        }
        let mask = [7u8, 13, 42, 99];
        frame.extend(mask);
        frame.extend(data.iter().enumerate().map(|(i, c)| c ^ mask[i % 4]));
        self.s.write_all(&frame).unwrap();
    }

    fn recv(&mut self) -> String {
        let mut msg = Vec::new();
        loop {
            let mut h = [0u8; 2];
            self.s.read_exact(&mut h).unwrap();
            let (fin, opcode) = (h[0] & 0x80 != 0, h[0] & 0x0f);
            let mut len = u64::from(h[1] & 0x7f);
            if len == 126 {
                let mut l = [0u8; 2];
                self.s.read_exact(&mut l).unwrap();
                len = u64::from(u16::from_be_bytes(l));
            } else if len == 127 {
                let mut l = [0u8; 8];
                self.s.read_exact(&mut l).unwrap();
                len = u64::from_be_bytes(l);
            }
            let mut payload = vec![0u8; len as usize];
            self.s.read_exact(&mut payload).unwrap();
            if opcode >= 8 {
                continue; // ping, pong, close: nothing for us
            }
            msg.extend(payload);
            if fin {
                return String::from_utf8_lossy(&msg).into_owned();
            }
        }
    }

    fn call(&mut self, method: &str, params: serde_json::Value) -> serde_json::Value {
        self.next += 1;
        let id = self.next;
        self.send(&serde_json::json!({ "id": id, "method": method, "params": params }).to_string());
        loop {
            let v: serde_json::Value = serde_json::from_str(&self.recv()).unwrap();
            if v["id"] == id {
                assert!(v.get("error").is_none(), "{method}: {v}");
                return v["result"].clone();
            }
        }
    }

    fn eval(&mut self, expr: &str) -> serde_json::Value {
        let r = self.call(
            "Runtime.evaluate",
            serde_json::json!({ "expression": expr, "returnByValue": true }),
        );
        r["result"]["value"].clone()
    }
}

/// Poll `expr` until it is true (bounded: a browser that never gets there fails).
fn until(cdp: &mut Cdp, expr: &str, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(90);
    while cdp.eval(expr) != serde_json::json!(true) {
        assert!(Instant::now() < deadline, "the page never showed {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn chromium_renders_the_dashboard_and_follows_another_clone_without_a_reload() {
    let Some(bin) = chromium() else {
        return;
    };
    let env = TestEnv::new();
    let (m1, m2) = swarm_fixture(&env);
    let before = env.all_refs(&m1);
    let server = Server::start(&env, &m1, &[]);

    // The DOM as Chromium built it.
    let profile = env.root().join("chromium-dump");
    let out = chromium_cmd(&bin, &profile)
        .args(["--dump-dom", &server.url])
        .output()
        .expect("run chromium");
    let dom = String::from_utf8_lossy(&out.stdout).into_owned();
    let artifacts = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/ci-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    std::fs::write(artifacts.join("serve-dom.html"), &dom).unwrap();
    assert!(
        dom.contains("id=\"forecast\""),
        "no page in the DOM:\n{dom}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        count(&dom, "plans", "data-count"),
        7,
        "shop and its 6 child plans"
    );
    assert_eq!(count(&dom, "tasks", "data-count"), 30);
    assert_eq!(count(&dom, "tasks", "data-edges"), 26);
    assert_eq!(
        dom.matches("<g class=\"node").count(),
        30,
        "one graph node per task"
    );
    assert_eq!(
        dom.matches("class=\"edge\"").count(),
        26,
        "one graph edge per dependency"
    );
    let col = |c: &str| {
        let re = regex::Regex::new(&format!(r#"data-column="{c}" data-count="(\d+)""#)).unwrap();
        re.captures(&dom)
            .map_or(0, |m| m[1].parse::<usize>().unwrap())
    };
    assert_eq!(col("in-progress"), 2, "t01 and t26 are claimed");
    assert_eq!(col("blocked"), 1);
    assert_eq!(col("done-unverified"), 1);
    assert_eq!(col("ready"), 1, "t07, after t06 (done unverified)");
    assert_eq!(count(&dom, "lanes", "data-count"), 6);
    assert_eq!(count(&dom, "reservations", "data-count"), 2);
    assert!(
        dom.matches("<meter").count() >= 4,
        "lease bars for claims and reservations"
    );
    assert_eq!(
        count(&dom, "forecast", "data-count"),
        6,
        "six lanes in the matrix"
    );
    assert_eq!(
        count(&dom, "forecast", "data-conflicts"),
        1,
        "l1 and l2 edit the same line"
    );
    assert_eq!(
        dom.matches("<td class=\"conflict\"").count(),
        2,
        "the pair, both sides of the diagonal"
    );
    assert!(
        dom.contains("href=\"#pair-l1_2f_l2\""),
        "the cell links to its hunks"
    );
    assert!(dom.contains("id=\"pair-l1_2f_l2\""));
    assert!(
        dom.contains("line 2 from l1") && dom.contains("line 2 from l2"),
        "the hunks are shown"
    );
    // (The fourth: the leadership claim's announcement.)
    assert_eq!(count(&dom, "messages", "data-count"), 4);
    assert_eq!(
        count(&dom, "messages", "data-open"),
        2,
        "the question and the escalation"
    );

    // Screenshots for the CI artifacts: desktop and phone width.
    for (name, size) in [
        ("serve.png", "1280,800"),
        ("serve-phone.png", "390,844"),
        ("serve-full.png", "1280,1350"),
    ] {
        let shot = artifacts.join(name);
        let _ = std::fs::remove_file(&shot);
        let profile = env.root().join(format!("chromium-{name}"));
        let status = chromium_cmd(&bin, &profile)
            .args([
                "--hide-scrollbars",
                &format!("--window-size={size}"),
                &format!("--screenshot={}", shot.display()),
                &server.url,
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success() && shot.exists(), "no screenshot {name}");
    }

    // The open page follows a message posted from the other clone.
    let profile = env.root().join("chromium-live");
    let mut browser = chromium_cmd(&bin, &profile);
    browser
        .args(["--remote-debugging-port=0", "about:blank"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    std::os::unix::process::CommandExt::process_group(&mut browser, 0);
    let mut child = browser.spawn().unwrap();
    struct Stop(u32);
    impl Drop for Stop {
        fn drop(&mut self) {
            kill_group(self.0);
        }
    }
    let _stop = Stop(child.id());
    let port_file = profile.join("DevToolsActivePort");
    let deadline = Instant::now() + Duration::from_secs(60);
    let port = loop {
        if let Some(p) = std::fs::read_to_string(&port_file)
            .ok()
            .and_then(|t| t.lines().next().map(str::to_string))
            .filter(|p| !p.is_empty())
        {
            break p;
        }
        assert!(
            Instant::now() < deadline,
            "chromium did not open its DevTools port"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let (_, _, list) = http(&format!("127.0.0.1:{port}"), "GET", "/json/list", &[]);
    let targets: serde_json::Value = serde_json::from_str(&list).unwrap();
    let ws = targets
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["type"] == "page")
        .and_then(|t| t["webSocketDebuggerUrl"].as_str())
        .expect("a page target")
        .to_string();
    let mut cdp = Cdp::connect(&ws);
    cdp.call("Page.navigate", serde_json::json!({ "url": server.url }));
    until(
        &mut cdp,
        "document.readyState === 'complete' && !!document.querySelector('#messages')",
        "the dashboard",
    );
    cdp.eval("window.__noReload = 'still here'; true");
    assert_eq!(
        cdp.eval("document.querySelector('#messages').dataset.count"),
        "4"
    );

    env.swarm(
        &m2,
        &[
            "notify",
            "all",
            "--plan",
            "shop",
            "posted from m2 while you watch",
        ],
    )
    .ok();
    until(
        &mut cdp,
        "document.querySelector('#messages').dataset.count === '5'",
        "the message from m2",
    );
    assert_eq!(
        cdp.eval("window.__noReload"),
        "still here",
        "the page was reloaded"
    );
    assert_eq!(
        cdp.eval("document.querySelector('#messages').textContent.includes('posted from m2 while you watch')"),
        true
    );
    assert_eq!(
        cdp.eval("document.documentElement.dataset.updates >= '1'"),
        true
    );

    // Light or dark by prefers-color-scheme.
    let scheme = |cdp: &mut Cdp, value: &str| {
        cdp.call(
            "Emulation.setEmulatedMedia",
            serde_json::json!({ "features": [{ "name": "prefers-color-scheme", "value": value }] }),
        );
        cdp.eval("getComputedStyle(document.body).backgroundColor")
    };
    assert_eq!(scheme(&mut cdp, "light"), "rgb(251, 251, 250)");
    assert_eq!(scheme(&mut cdp, "dark"), "rgb(20, 21, 23)", "dark mode");

    // Sections side by side at 1280x800; one column on a phone, where
    // nothing makes the page scroll sideways (wide tables and graphs
    // scroll in their own box).
    let lefts = "new Set([...document.querySelectorAll('main > section')].map(s => Math.round(s.getBoundingClientRect().left))).size";
    for (width, height, mobile, columns) in [(1280, 800, false, 2), (390, 844, true, 1)] {
        cdp.call(
            "Emulation.setDeviceMetricsOverride",
            serde_json::json!({ "width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile }),
        );
        assert_eq!(cdp.eval(lefts), columns, "columns at {width}px");
        assert_eq!(
            cdp.eval(&format!("document.documentElement.scrollWidth <= {width}")),
            true,
            "the page is wider than {width}px: {}",
            cdp.eval("document.documentElement.scrollWidth")
        );
    }
    drop(cdp);
    drop(_stop);
    let _ = child.wait();

    // Serving fetched into the mirror; it wrote no record ref of its own.
    let after = env.all_refs(&m1);
    let moved: Vec<&String> = after
        .keys()
        .chain(before.keys())
        .filter(|r| after.get(*r) != before.get(*r))
        .filter(|r| !r.starts_with("refs/swarm-remotes/") && !r.starts_with("refs/remotes/"))
        .collect();
    assert!(moved.is_empty(), "serve moved refs: {moved:?}");
}

/// The text of the element with `id` (its first `>` to the next `<`).
fn text_of<'a>(html: &'a str, id: &str) -> &'a str {
    let at = html
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id}"));
    let rest = &html[at..];
    let start = rest.find('>').unwrap() + 1;
    let end = rest[start..].find('<').unwrap() + start;
    &rest[start..end]
}

#[test]
fn the_page_shows_the_newest_verdict_per_pull_request_what_is_not_published_and_when_the_remote_answered(
) {
    let env = TestEnv::new();
    let (_remote, clones) = env.remote_with_clones(&["alice"]);
    let a = &clones[0];
    env.swarm(a, &["plan", "new", "p"]).ok();
    env.swarm(
        a,
        &[
            "task",
            "new",
            "t1",
            "--plan",
            "p",
            "--title",
            "x",
            "--offline",
        ],
    )
    .ok();
    // Verdict notes as `verify` writes them: o/r#7 was open, then merged
    // (a later verdict on the next head); o/r#8 is ready.
    env.write(&a.join("f"), "x\n");
    env.git(a, &["add", "f"]);
    env.git(a, &["commit", "--quiet", "-m", "second"]);
    for (rev, line) in [
        (
            "HEAD~1",
            r#"{"kind":"verdict","state":"open","repo":"o/r","number":7,"head_sha":"aaaaaaaaaaaaaaaa","confirmed_on_base":false,"at":"2026-01-01T00:00:00Z"}"#,
        ),
        (
            "HEAD",
            r#"{"kind":"verdict","state":"merged","repo":"o/r","number":7,"head_sha":"bbbbbbbbbbbbbbbb","confirmed_on_base":true,"at":"2026-01-02T00:00:00Z"}"#,
        ),
        (
            "HEAD",
            r#"{"kind":"verdict","state":"ready","repo":"o/r","number":8,"head_sha":"cccccccccccccccc","confirmed_on_base":false,"at":"2026-01-01T12:00:00Z"}"#,
        ),
    ] {
        env.git(
            a,
            &[
                "notes",
                "--ref",
                "refs/notes/swarm",
                "append",
                "-m",
                line,
                rev,
            ],
        );
    }
    env.git(a, &["config", "swarm.waitCeiling", "1s"]);

    let file = env.root().join("page.html");
    env.swarm(a, &["state", "--html", file.to_str().unwrap(), "--offline"])
        .ok();
    let html = env.read(&file);
    assert_eq!(count(&html, "verdicts", "data-count"), 2, "one row per PR");
    assert!(html.contains("o/r</bdi>#7") && html.contains("o/r</bdi>#8"));
    let row7 = &html[html.find("o/r</bdi>#7").unwrap()..];
    let row7 = &row7[..row7.find("</tr>").unwrap()];
    assert!(
        row7.contains(">merged<") && row7.contains("confirmed on base") && !row7.contains(">open<"),
        "the newest verdict of #7: {row7}"
    );
    assert_eq!(count(&html, "unpublished", "data-count"), 1);
    assert!(html.contains("refs/swarm/tasks/p/t1"), "the offline task");

    // Served, the header says when the remote last answered (the server
    // asks it at once, then at most once per swarm.waitCeiling).
    let before = env.all_refs(a);
    let server = Server::start(&env, a, &[]);
    let deadline = Instant::now() + Duration::from_secs(90);
    let reached = loop {
        let (_, _, body) = http(&server.addr(), "GET", "/fingerprint", &[]);
        let line = body.lines().nth(1).unwrap_or("").to_string();
        if line.starts_with("20") {
            break line;
        }
        assert!(
            Instant::now() < deadline,
            "the remote was never reached: {body}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(reached.contains("asked every 1s at most"), "{reached}");
    let (_, _, page) = http(&server.addr(), "GET", "/", &[]);
    assert!(
        text_of(&page, "reached").starts_with("20"),
        "the page shows when: {}",
        text_of(&page, "reached")
    );
    assert_eq!(count(&page, "unpublished", "data-count"), 1);
    assert_eq!(count(&page, "verdicts", "data-count"), 2);
    drop(server);
    assert_eq!(env.all_refs(a), before, "serving published nothing");
}

#[test]
fn serve_open_hands_the_url_to_the_browser_opener() {
    let env = TestEnv::new();
    let repo = env.repo("r");
    env.swarm(&repo, &["plan", "new", "p"]).ok();
    // A stand-in for xdg-open, first on PATH: it writes down what it got.
    let got = env.root().join("opened");
    let opener = env.bin.join("xdg-open");
    env.write(
        &opener,
        &format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > {}.tmp && mv {0}.tmp {0}\n",
            got.display()
        ),
    );
    std::fs::set_permissions(&opener, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let server = Server::start(&env, &repo, &["--open"]);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !got.exists() {
        assert!(Instant::now() < deadline, "--open ran no opener");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(env.read(&got).trim(), server.url);
    let (status, _, _) = http(&server.addr(), "GET", "/", &[]);
    assert_eq!(status, 200);
}

#[test]
fn state_html_reads_a_bare_repository_and_state_write_still_refuses_it() {
    let env = TestEnv::new();
    let (remote, clones) = env.remote_with_clones(&["alice"]);
    let a = &clones[0];
    env.swarm(a, &["plan", "new", "p", "--title", "Payments"])
        .ok();
    env.swarm(a, &["task", "new", "t1", "--plan", "p", "--title", "x"])
        .ok();
    env.swarm(a, &["notify", "all", "--plan", "p", "hello from alice"])
        .ok();
    env.swarm(a, &["sync"]).ok();
    // The shared remote itself, and a bare mirror of it (as a CI job or a
    // wiki host keeps one).
    env.git(
        env.root(),
        &[
            "clone",
            "--quiet",
            "--mirror",
            remote.to_str().unwrap(),
            "mirror.git",
        ],
    );
    for bare in [remote.clone(), env.root().join("mirror.git")] {
        let before = env.all_refs(&bare);
        let file = env.root().join("bare.html");
        let out = env
            .swarm(
                &bare,
                &["state", "--html", file.to_str().unwrap(), "--json"],
            )
            .ok()
            .json();
        assert_eq!(out["plans"], 1, "{}", bare.display());
        assert_eq!(out["tasks"], 1);
        let html = env.read(&file);
        assert!(html.contains("Payments") && html.contains("hello from alice"));
        assert_eq!(count(&html, "messages", "data-count"), 1);
        env.swarm(&bare, &["state"]).ok().stdout_has("p");
        env.swarm(&bare, &["state", "--write"])
            .err(4, "BARE_REPO")
            .stderr_has("hint: run it in a clone");
        assert_eq!(
            env.all_refs(&bare),
            before,
            "{}: a ref moved",
            bare.display()
        );
    }
}

#[test]
fn state_html_dash_prints_the_page_on_stdout_and_writes_no_file_named_dash() {
    let env = TestEnv::new();
    let (_remote, clones) = env.remote_with_clones(&["alice"]);
    let a = &clones[0];
    env.swarm(a, &["plan", "new", "p", "--title", "Payments"])
        .ok();
    let before = env.all_refs(a);
    let out = env.swarm(a, &["state", "--html", "-"]).ok();
    assert!(
        out.stdout.starts_with("<!DOCTYPE html>") && out.stdout.contains("Payments"),
        "the page, on stdout: {}",
        &out.stdout[..out.stdout.len().min(300)]
    );
    assert!(
        !out.stdout.contains("dashboard written to"),
        "nothing but the page on stdout"
    );
    assert!(!a.join("-").exists(), "no file named '-' was written");
    // --json prints its document on stdout too: the two cannot share it.
    env.swarm(a, &["state", "--html", "-", "--json"])
        .err(2, "USAGE")
        .stderr_has("--html FILE");
    assert!(!a.join("-").exists());
    assert_eq!(env.all_refs(a), before, "a ref moved");
}
