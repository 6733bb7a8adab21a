//! A local stand-in for the GitHub REST API on 127.0.0.1, in the manner of
//! gh's HTTP stubs: each test registers the exact paths it expects; a
//! registered stub that is never called, or a request nobody registered,
//! fails the test when the server is dropped. Every request is recorded
//! (path, headers, status, time) so tests assert exactly what was asked.
//!
//! Like GitHub it answers `If-None-Match` with `304 Not Modified` when the
//! reply's ETag matches, and keeps a rate-limit budget that only non-304
//! answers spend (`x-ratelimit-remaining`).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    pub etag: Option<String>,
    pub delay: Option<Duration>,
}

impl Reply {
    pub fn json(value: &serde_json::Value) -> Reply {
        Reply {
            status: 200,
            headers: Vec::new(),
            body: value.to_string(),
            etag: None,
            delay: None,
        }
    }
    pub fn status(status: u16, body: &str) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            body: body.to_string(),
            etag: None,
            delay: None,
        }
    }
    pub fn etag(mut self, etag: &str) -> Reply {
        self.etag = Some(etag.to_string());
        self
    }
    /// `{base}` in a value becomes the server's URL (for Link headers).
    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers
            .push((name.to_ascii_lowercase(), value.to_string()));
        self
    }
    pub fn delay(mut self, delay: Duration) -> Reply {
        self.delay = Some(delay);
        self
    }
    /// Never answer while the server runs (a client timeout is then certain).
    pub fn hang(self) -> Reply {
        self.delay(Duration::MAX)
    }
}

#[derive(Debug, Clone)]
pub struct Recorded {
    /// Path and query, exactly as requested.
    pub path: String,
    /// Header names lowercased.
    pub headers: BTreeMap<String, String>,
    pub status: u16,
    pub at: Instant,
    /// The request's body (a PUT's JSON).
    pub body: String,
}

struct Stub {
    path: String,
    replies: Vec<Reply>,
    calls: usize,
    /// May go uncalled (a default every test gets, e.g. branch protection).
    optional: bool,
}

struct State {
    stubs: Vec<Stub>,
    requests: Vec<Recorded>,
    unexpected: Vec<String>,
    remaining: u64,
}

pub const RATE_LIMIT: u64 = 5000;

pub struct GitHubServer {
    pub url: String,
    server: Arc<tiny_http::Server>,
    state: Arc<Mutex<State>>,
    thread: Option<JoinHandle<()>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl GitHubServer {
    pub fn start() -> GitHubServer {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind 127.0.0.1"));
        let port = server.server_addr().to_ip().expect("an IP listener").port();
        let url = format!("http://127.0.0.1:{port}");
        let state = Arc::new(Mutex::new(State {
            stubs: Vec::new(),
            requests: Vec::new(),
            unexpected: Vec::new(),
            remaining: RATE_LIMIT,
        }));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let thread = {
            let (server, state, stop, url) =
                (server.clone(), state.clone(), stop.clone(), url.clone());
            std::thread::spawn(move || loop {
                match server.recv() {
                    Ok(req) => {
                        let (state, url, stop) = (state.clone(), url.clone(), stop.clone());
                        // One thread per request: a delayed answer must not hold up the next.
                        std::thread::spawn(move || handle(req, &state, &url, &stop));
                    }
                    Err(_) if stop.load(std::sync::atomic::Ordering::SeqCst) => break,
                    Err(_) => continue,
                }
            })
        };
        GitHubServer {
            url,
            server,
            state,
            thread: Some(thread),
            stop,
        }
    }

    /// Answer `path` (path and query, exact) with `reply`, every time.
    pub fn stub(&self, path: &str, reply: Reply) {
        self.stub_seq(path, vec![reply]);
    }

    /// Answer `path` with each reply in turn; the last one repeats.
    pub fn stub_seq(&self, path: &str, replies: Vec<Reply>) {
        self.add_stub(path, replies, false);
    }

    /// Answer `path` with `reply` if asked; not asking is no failure.
    pub fn stub_optional(&self, path: &str, reply: Reply) {
        self.add_stub(path, vec![reply], true);
    }

    fn add_stub(&self, path: &str, replies: Vec<Reply>, optional: bool) {
        assert!(!replies.is_empty());
        let mut st = self.state.lock().unwrap();
        st.stubs.retain(|s| s.path != path);
        st.stubs.push(Stub {
            path: path.to_string(),
            replies,
            calls: 0,
            optional,
        });
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state.lock().unwrap().requests.clone()
    }

    pub fn paths(&self) -> Vec<String> {
        self.requests().into_iter().map(|r| r.path).collect()
    }

    /// The simulated rate-limit budget left.
    pub fn remaining(&self) -> u64 {
        self.state.lock().unwrap().remaining
    }

    pub fn calls(&self, path: &str) -> usize {
        self.requests().iter().filter(|r| r.path == path).count()
    }
}

fn handle(
    mut req: tiny_http::Request,
    state: &Arc<Mutex<State>>,
    base: &str,
    stop: &std::sync::atomic::AtomicBool,
) {
    let path = req.url().to_string();
    let headers: BTreeMap<String, String> = req
        .headers()
        .iter()
        .map(|h| {
            (
                h.field.as_str().as_str().to_ascii_lowercase(),
                h.value.as_str().to_string(),
            )
        })
        .collect();
    let mut body = String::new();
    let _ = std::io::Read::read_to_string(req.as_reader(), &mut body);
    let method = req.method().as_str().to_string();
    let reply = {
        let mut st = state.lock().unwrap();
        // A GET matches a stub of its path; another method a stub named
        // `<METHOD> <path>` (e.g. `PUT /repos/o/r/pulls/7/merge`).
        let key = if method == "GET" {
            path.clone()
        } else {
            format!("{method} {path}")
        };
        let found = if method == "GET" || key.contains(' ') {
            st.stubs.iter_mut().find(|s| s.path == key).map(|s| {
                let r = s.replies[s.calls.min(s.replies.len() - 1)].clone();
                s.calls += 1;
                r
            })
        } else {
            None
        };
        let reply = match found {
            Some(r) => r,
            None => {
                st.unexpected.push(format!("{method} {path}"));
                Reply::status(
                    404,
                    r#"{"message":"Not Found (no stub)","documentation_url":"https://docs.github.com/rest"}"#,
                )
            }
        };
        let not_modified =
            reply.etag.is_some() && headers.get("if-none-match") == reply.etag.as_ref();
        let status = if not_modified { 304 } else { reply.status };
        if status != 304 && st.remaining > 0 {
            st.remaining -= 1;
        }
        let remaining = st.remaining;
        st.requests.push(Recorded {
            path: path.clone(),
            headers: headers.clone(),
            status,
            at: Instant::now(),
            body: body.clone(),
        });
        (reply, status, remaining)
    };
    let (reply, status, remaining) = reply;
    if let Some(d) = reply.delay {
        // Delayed, or (`hang`) held until the server stops.
        let start = Instant::now();
        while start.elapsed() < d && !stop.load(std::sync::atomic::Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let reset = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 3600;
    let mut all: Vec<(String, String)> = vec![
        (
            "content-type".into(),
            "application/json; charset=utf-8".into(),
        ),
        ("x-ratelimit-limit".into(), RATE_LIMIT.to_string()),
        ("x-ratelimit-remaining".into(), remaining.to_string()),
        ("x-ratelimit-reset".into(), reset.to_string()),
        ("x-ratelimit-resource".into(), "core".into()),
    ];
    if let Some(etag) = &reply.etag {
        all.push(("etag".into(), etag.clone()));
    }
    for (k, v) in &reply.headers {
        all.retain(|(name, _)| name != k);
        all.push((k.clone(), v.replace("{base}", base)));
    }
    // `{authorization}` in a body becomes the request's Authorization
    // header: a server (or proxy) that echoes the credential back.
    let body = if status == 304 {
        String::new()
    } else {
        reply.body.replace(
            "{authorization}",
            headers.get("authorization").map_or("", String::as_str),
        )
    };
    let mut resp = tiny_http::Response::from_string(body).with_status_code(status);
    for (k, v) in all {
        if let Ok(h) = tiny_http::Header::from_bytes(k.as_bytes(), v.as_bytes()) {
            resp.add_header(h);
        }
    }
    // The client may have given up (timeout tests): a failed write is fine.
    let _ = req.respond(resp);
}

impl Drop for GitHubServer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        if std::thread::panicking() {
            return;
        }
        let st = self.state.lock().unwrap();
        let uncalled: Vec<&str> = st
            .stubs
            .iter()
            .filter(|s| s.calls == 0 && !s.optional)
            .map(|s| s.path.as_str())
            .collect();
        let seen: Vec<String> = st
            .requests
            .iter()
            .map(|r| format!("{} -> {}", r.path, r.status))
            .collect();
        assert!(
            uncalled.is_empty(),
            "registered GitHub stubs were never called: {uncalled:#?}\nrequests seen: {seen:#?}"
        );
        assert!(
            st.unexpected.is_empty(),
            "requests that no stub expected: {:#?}",
            st.unexpected
        );
    }
}
