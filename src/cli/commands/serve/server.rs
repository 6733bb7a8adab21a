//! The HTTP side of `git swarm serve` (axum on a current-thread tokio
//! runtime): `/` the page, `/fingerprint` a digest of the refs (what the
//! page's script polls, a few milliseconds), `/style.css` and `/live.js`.
//! Read-only: no route writes, and GET is all there is. On 127.0.0.1 a
//! request must name a loopback host (a page elsewhere cannot reach it
//! through DNS rebinding); with a token every request must carry it.
//! A watcher thread reaches the remote at most once per
//! `swarm.waitCeiling`, as `wait` does, and the page says when it last did.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use git_swarm::error::{Code, Error, Result};
use git_swarm::views::dashboard::{remote_round, RemoteWatch};

use super::page;
use crate::cli::{Access, Global};

/// Nothing inline, nothing from elsewhere: the page's own stylesheet and
/// script, fetches back to this server, no frames, no forms.
pub const CSP: &str = "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

pub struct Config {
    pub addr: std::net::SocketAddr,
    pub token: Option<String>,
    pub ceiling: Duration,
    pub open: bool,
    pub as_: Option<String>,
    pub offline: bool,
    pub no_cache: bool,
}

struct Shared {
    cfg: Config,
    /// The port actually listened on (for the Host check).
    port: u16,
    watch: Mutex<RemoteWatch>,
    /// The last page, by fingerprint and when it was made (leases age).
    page: Mutex<Option<(String, Instant, String)>>,
}

impl Shared {
    fn global(&self) -> Global {
        Global {
            json: false,
            as_: self.cfg.as_.clone(),
            offline: self.cfg.offline,
            held: false,
            no_cache: self.cfg.no_cache,
            access: Access::Read,
            // Each request is a command of its own.
            run: Default::default(),
        }
    }
}

pub fn run(cfg: Config) -> Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::new(Code::IoFailed, format!("cannot start the server: {e}")))?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(cfg.addr).await.map_err(|e| {
            Error::new(
                Code::ServeBindFailed,
                format!("cannot listen on {}: {e}", cfg.addr),
            )
            .hint("pick another --port (0: any free port)")
        })?;
        let local = listener
            .local_addr()
            .map_err(|e| Error::new(Code::ServeBindFailed, format!("cannot listen: {e}")))?;
        let url = match &cfg.token {
            Some(_) => format!("http://{local}/?token=<your token>"),
            None => format!("http://{local}/"),
        };
        crate::cli::emit(
            &mut std::io::stdout(),
            &format!("serving the swarm read-only at {url} (Ctrl-C stops)\n"),
        );
        if cfg.open {
            open_browser(&format!("http://{local}/"));
        }
        let shared = Arc::new(Shared {
            port: local.port(),
            cfg,
            watch: Mutex::new(RemoteWatch::default()),
            page: Mutex::new(None),
        });
        watcher(shared.clone());
        let app = Router::new()
            .route("/", get(index))
            .route("/fingerprint", get(fingerprint))
            .route(
                "/style.css",
                get(|| async { asset("text/css; charset=utf-8", page::STYLE) }),
            )
            .route(
                "/live.js",
                get(|| async { asset("text/javascript; charset=utf-8", page::SCRIPT) }),
            )
            .layer(middleware::from_fn_with_state(shared.clone(), guard))
            .with_state(shared);
        axum::serve(listener, app)
            .await
            .map_err(|e| Error::new(Code::IoFailed, format!("the server stopped: {e}")))
    })
}

/// Reach the remote now, then at most once per ceiling, for as long as the
/// server runs (a thread: git runs block).
fn watcher(shared: Arc<Shared>) {
    std::thread::spawn(move || loop {
        if let Ok(ctx) = shared.global().ctx() {
            let mut w = shared.watch.lock().map(|w| w.clone()).unwrap_or_default();
            remote_round(&ctx, &mut w);
            if let Ok(mut slot) = shared.watch.lock() {
                *slot = w;
            }
        }
        std::thread::sleep(shared.cfg.ceiling.max(Duration::from_millis(200)));
    });
}

fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    if let Err(e) = std::process::Command::new(opener)
        .arg(url)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        say!("warning: could not run {opener} ({e}); open {url} yourself");
    }
}

fn asset(kind: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, kind)], body).into_response()
}

fn text(status: StatusCode, body: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body,
    )
        .into_response()
}

/// Equal without an early exit on the first difference.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

fn query_token(req: &Request) -> Option<String> {
    req.uri().query()?.split('&').find_map(|kv| {
        let (key, v) = kv.split_once('=')?;
        (key == "token").then(|| {
            // A token is printable ASCII; only %XX escapes are undone.
            let mut out = Vec::new();
            let b = v.as_bytes();
            let mut i = 0;
            while i < b.len() {
                if b[i] == b'%' && i + 2 < b.len() {
                    if let Some(x) = v
                        .get(i + 1..i + 3)
                        .and_then(|h| u8::from_str_radix(h, 16).ok())
                    {
                        out.push(x);
                        i += 3;
                        continue;
                    }
                }
                out.push(b[i]);
                i += 1;
            }
            String::from_utf8_lossy(&out).into_owned()
        })
    })
}

fn cookie_token(req: &Request) -> Option<String> {
    let cookies = req.headers().get(header::COOKIE)?.to_str().ok()?;
    cookies
        .split(';')
        .find_map(|c| c.trim().strip_prefix("swarm_token=").map(str::to_string))
}

/// Every request: GET only; the token when there is one, else a loopback
/// Host; and the security headers on every answer.
async fn guard(State(s): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    let mut set_cookie = None;
    let refusal =
        if req.method() != axum::http::Method::GET && req.method() != axum::http::Method::HEAD {
            Some(text(
                StatusCode::METHOD_NOT_ALLOWED,
                "read-only: GET only\n".into(),
            ))
        } else if let Some(t) = &s.cfg.token {
            let bearer = req
                .headers()
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .map(str::to_string);
            let from_query = query_token(&req);
            let ok = [bearer, cookie_token(&req), from_query.clone()]
                .iter()
                .flatten()
                .any(|c| same(c, t));
            if ok && from_query.as_deref().is_some_and(|q| same(q, t)) {
                set_cookie = Some(format!(
                    "swarm_token={t}; HttpOnly; SameSite=Strict; Path=/"
                ));
            }
            (!ok).then(|| {
                text(
                    StatusCode::UNAUTHORIZED,
                    "this dashboard needs its token: open /?token=<token>\n".into(),
                )
            })
        } else {
            let host = req
                .headers()
                .get(header::HOST)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            let port = s.port;
            let loopback = [
                format!("127.0.0.1:{port}"),
                format!("localhost:{port}"),
                format!("[::1]:{port}"),
            ];
            (!loopback.iter().any(|h| h == host)).then(|| {
                text(
                    StatusCode::FORBIDDEN,
                    "this dashboard answers only to http://127.0.0.1 or localhost\n".into(),
                )
            })
        };
    let mut res = match refusal {
        Some(r) => r,
        None => next.run(req).await,
    };
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if let Some(c) = set_cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
        h.insert(header::SET_COOKIE, c);
    }
    res
}

fn reached(s: &Shared) -> String {
    if s.cfg.offline {
        return "never (--offline)".into();
    }
    let w = s.watch.lock().map(|w| w.clone()).unwrap_or_default();
    match (&w.reached_at, &w.error) {
        (_, Some(e)) => format!(
            "{} (now unreachable: {})",
            w.reached_at.as_deref().unwrap_or("never"),
            git_swarm::text::clean_block(e).lines().next().unwrap_or("")
        ),
        (Some(at), None) => format!(
            "{at} ({} fetches, asked every {}s at most)",
            w.fetches,
            s.cfg.ceiling.as_secs()
        ),
        (None, None) => "not yet (or no remote)".into(),
    }
}

fn current_fingerprint(s: &Shared) -> Result<String> {
    let ctx = s.global().ctx()?;
    git_swarm::store::fingerprint::fingerprint(&ctx.store)
}

async fn fingerprint(State(s): State<Arc<Shared>>) -> Response {
    let done = tokio::task::spawn_blocking(move || {
        current_fingerprint(&s).map(|fp| format!("{fp}\n{}\n", reached(&s)))
    })
    .await;
    match done {
        Ok(Ok(body)) => text(StatusCode::OK, body),
        Ok(Err(e)) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("error[{}]: {}\n", e.code.as_str(), e.message),
        ),
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, format!("error: {e}\n")),
    }
}

async fn index(State(s): State<Arc<Shared>>) -> Response {
    let done = tokio::task::spawn_blocking(move || render(&s)).await;
    match done {
        Ok(Ok(html)) => {
            ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response()
        }
        Ok(Err(e)) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("error[{}]: {}\n", e.code.as_str(), e.message),
        ),
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, format!("error: {e}\n")),
    }
}

/// The page, made again when the refs moved or it is over 10 s old.
fn render(s: &Shared) -> Result<String> {
    let ctx = s.global().ctx()?;
    let fp = git_swarm::store::fingerprint::fingerprint(&ctx.store)?;
    if let Ok(slot) = s.page.lock() {
        if let Some((seen, at, html)) = slot.as_ref() {
            if *seen == fp && at.elapsed() < Duration::from_secs(10) {
                return Ok(html.clone());
            }
        }
    }
    let (dash, f) = super::picture(&ctx)?;
    let html = page::render(&page::Page {
        dash: &dash,
        forecast: f.as_ref().map_err(Clone::clone),
        mode: page::Mode::Served {
            fingerprint: fp.clone(),
            reached: reached(s),
        },
    });
    if let Ok(mut slot) = s.page.lock() {
        *slot = Some((fp, Instant::now(), html.clone()));
    }
    Ok(html)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_whole() {
        assert!(same("abc", "abc"));
        assert!(!same("abc", "abd"));
        assert!(!same("abc", "ab"));
    }
}
