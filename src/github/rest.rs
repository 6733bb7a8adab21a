//! The REST implementation of [`GitHub`]: octocrab on a current-thread tokio
//! runtime, with our own serde models, conditional requests and pagination.
//!
//! Why raw `_get_with_headers` rather than octocrab's typed calls: we need
//! each answer's status and headers (ETag, Link, `x-poll-interval`, the rate
//! limit), and octocrab's models are too strict for real payloads. Octocrab's
//! retry layer is off so that every HTTP request is one we count and every
//! failure is one we report (fail closed); rate limits are waited out here,
//! and only when the caller gave a deadline (`verify --wait`).
//!
//! The token goes into octocrab's secret-holding auth and nowhere else: no
//! message, log line or note of ours ever contains it. And since a server or
//! proxy may echo it back (in an error `message`, in a PR title), everything
//! GitHub says is redacted at this boundary before the rest of git-swarm
//! sees it: every string of every parsed answer and every error built from
//! an answer goes through [`crate::secret::redact`], which replaces the
//! token in use (by its exact value) and anything shaped like a credential.

use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use http::header::HeaderMap;
use octocrab::service::middleware::retry::RetryConfig;
use octocrab::Octocrab;
use serde::de::DeserializeOwned;

use super::client::{GitHub, RepoId, Stats};
use super::model::{
    BranchRule, CheckRun, CheckRunsPage, CombinedStatus, IssueComment, PullRequest, RequiredChecks,
    RequiredStatusChecks, Review,
};
use crate::error::{Error, Result};
use crate::secret;

pub const DEFAULT_API_URL: &str = "https://api.github.com";
/// Pages followed at most per listing (100 items each): a server whose
/// `next` links never end must not keep us forever.
const MAX_PAGES: usize = 100;
/// Rate-limit waits at most per request before giving up.
const MAX_RATE_WAITS: usize = 5;

/// Where the token came from (never the token itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenSource {
    GithubToken,
    GhToken,
    GhEnterpriseToken,
    GithubEnterpriseToken,
    GhCli,
}

/// A token, kept out of `Debug` output.
pub struct Token {
    secret: String,
    pub source: TokenSource,
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Token({:?}, <redacted>)", self.source)
    }
}

impl TokenSource {
    pub fn describe(self) -> &'static str {
        match self {
            TokenSource::GithubToken => "GITHUB_TOKEN",
            TokenSource::GhToken => "GH_TOKEN",
            TokenSource::GhEnterpriseToken => "GH_ENTERPRISE_TOKEN",
            TokenSource::GithubEnterpriseToken => "GITHUB_ENTERPRISE_TOKEN",
            TokenSource::GhCli => "`gh auth token`",
        }
    }
}

/// Which API to ask, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The API base URL, e.g. `https://api.github.com` or `https://HOST/api/v3`.
    pub api_url: String,
    /// The web host the tokens are for (`github.com`, or the Enterprise host).
    pub host: String,
    /// `GITHUB_API_URL` was set: the user named the API themselves.
    pub explicit: bool,
}

fn env_nonempty(var: &str) -> Option<String> {
    std::env::var(var)
        .ok()
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// Is `host` github.com itself (tokens GITHUB_TOKEN / GH_TOKEN) rather than
/// an Enterprise Server host (GH_ENTERPRISE_TOKEN / GITHUB_ENTERPRISE_TOKEN)?
pub fn is_dotcom(host: &str) -> bool {
    let host = host.split(':').next().unwrap_or(host).to_ascii_lowercase();
    host == "github.com" || host == "api.github.com" || host == "www.github.com"
}

impl Endpoint {
    /// The way `gh` users expect: `GITHUB_API_URL` if set; else the host
    /// the repository names (its PR URL or its remote's URL), else `GH_HOST`,
    /// else github.com. github.com is asked at `https://api.github.com`, any
    /// other host at `https://HOST/api/v3` (GitHub Enterprise Server).
    /// `GIT_SWARM_TEST_API_SCHEME=http` (tests only) asks an inferred
    /// Enterprise host over plain http, so a local server can stand in.
    pub fn resolve(repo_host: Option<&str>) -> Endpoint {
        if let Some(url) = env_nonempty("GITHUB_API_URL") {
            let url = url.trim_end_matches('/').to_string();
            let host = api_host(&url).unwrap_or_else(|| "github.com".into());
            return Endpoint {
                api_url: url,
                host,
                explicit: true,
            };
        }
        let host = repo_host
            .map(str::to_string)
            .or_else(|| env_nonempty("GH_HOST"))
            .unwrap_or_else(|| "github.com".to_string());
        if is_dotcom(&host) {
            return Endpoint {
                api_url: DEFAULT_API_URL.to_string(),
                host: "github.com".into(),
                explicit: false,
            };
        }
        let scheme = match env_nonempty("GIT_SWARM_TEST_API_SCHEME").as_deref() {
            Some("http") => "http",
            _ => "https",
        };
        Endpoint {
            api_url: format!("{scheme}://{host}/api/v3"),
            host,
            explicit: false,
        }
    }
}

/// The token for `endpoint`, following gh's rules so a token only ever goes
/// to the host it is for:
/// - github.com: `GITHUB_TOKEN`, else `GH_TOKEN`;
/// - an Enterprise host: `GH_ENTERPRISE_TOKEN`, else `GITHUB_ENTERPRISE_TOKEN`;
///   `GITHUB_TOKEN` / `GH_TOKEN` only when `GITHUB_API_URL` names that host
///   explicitly (as GitHub Actions on Enterprise Server sets both);
/// - else `gh auth token` for that host; else none.
pub fn token_for(endpoint: &Endpoint) -> Option<Token> {
    let dotcom = is_dotcom(&endpoint.host);
    let mut vars: Vec<(&str, TokenSource)> = Vec::new();
    if !dotcom {
        vars.push(("GH_ENTERPRISE_TOKEN", TokenSource::GhEnterpriseToken));
        vars.push((
            "GITHUB_ENTERPRISE_TOKEN",
            TokenSource::GithubEnterpriseToken,
        ));
    }
    if dotcom || endpoint.explicit {
        vars.push(("GITHUB_TOKEN", TokenSource::GithubToken));
        vars.push(("GH_TOKEN", TokenSource::GhToken));
    }
    for (var, source) in vars {
        if let Some(secret) = env_nonempty(var) {
            return Some(Token { secret, source });
        }
    }
    let mut cmd = std::process::Command::new("gh");
    cmd.args(["auth", "token"]);
    if !dotcom {
        let host = endpoint.host.split(':').next().unwrap_or(&endpoint.host);
        cmd.args(["--hostname", host]);
    }
    let out = cmd
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let secret = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!secret.is_empty()).then_some(Token {
        secret,
        source: TokenSource::GhCli,
    })
}

/// Compatibility: the token for an explicit API URL.
pub fn token_from_env(api_url: &str) -> Option<Token> {
    token_for(&Endpoint {
        api_url: api_url.to_string(),
        host: api_host(api_url).unwrap_or_else(|| "github.com".into()),
        explicit: true,
    })
}

/// The web host of an API URL (`api.github.com` → `github.com`), with its
/// port if it has one.
fn api_host(api_url: &str) -> Option<String> {
    let rest = api_url.split_once("://")?.1;
    let authority = rest.split('/').next()?;
    let host = authority.rsplit('@').next()?;
    Some(if host == "api.github.com" {
        "github.com".to_string()
    } else {
        host.to_string()
    })
}

/// One conditional-request cache entry: the answer we can reuse on a 304.
/// On disk as JSON: the full URL it answers (checked on read, so a hash
/// collision is a miss), the ETag, the next-page link and the body. Never
/// a header we sent, so never the token.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct Cached {
    url: String,
    etag: String,
    body: String,
    next: Option<String>,
}

/// Entries kept on disk at most; the least recently written go first.
const DISK_CACHE_ENTRIES: usize = 512;
/// Bodies larger than this are not written to disk.
const DISK_CACHE_MAX_BODY: usize = 4 << 20;

/// The ETag cache that outlives one run: one file per URL under `dir`
/// (`<git-common-dir>/swarm/cache/github/`), named by the SHA-256 of the
/// URL, written atomically (a temporary file renamed into place). A torn,
/// foreign or unreadable entry is a miss; failing to write is not an error.
pub struct DiskCache {
    dir: std::path::PathBuf,
}

impl DiskCache {
    pub fn new(dir: std::path::PathBuf) -> DiskCache {
        DiskCache { dir }
    }

    fn file(&self, url: &str) -> std::path::PathBuf {
        use sha2::Digest;
        let hash = sha2::Sha256::digest(url.as_bytes());
        let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!("{hex}.json"))
    }

    fn load(&self, url: &str) -> Option<Cached> {
        let text = std::fs::read_to_string(self.file(url)).ok()?;
        let entry: Cached = serde_json::from_str(&text).ok()?;
        (entry.url == url && !entry.etag.is_empty()).then_some(entry)
    }

    fn store(&self, entry: &Cached) {
        if entry.body.len() > DISK_CACHE_MAX_BODY {
            return;
        }
        let _ = self.try_store(entry);
        self.prune();
    }

    fn try_store(&self, entry: &Cached) -> std::io::Result<()> {
        use std::io::Write;
        std::fs::create_dir_all(&self.dir)?;
        let target = self.file(&entry.url);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let tmp = self
            .dir
            .join(format!(".tmp-{}-{nanos}", std::process::id()));
        let result = (|| {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(&serde_json::to_vec(entry).map_err(std::io::Error::other)?)?;
            f.sync_all()?;
            std::fs::rename(&tmp, &target)
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result
    }

    /// Keep at most [`DISK_CACHE_ENTRIES`] entries (oldest written go), and
    /// drop temporary files a crashed run left behind.
    fn prune(&self) {
        let Ok(dir) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let mut entries = Vec::new();
        for e in dir.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            let modified = e.metadata().and_then(|m| m.modified()).ok();
            if name.starts_with(".tmp-") {
                let stale = modified
                    .and_then(|m| m.elapsed().ok())
                    .is_some_and(|age| age > Duration::from_secs(3600));
                if stale {
                    let _ = std::fs::remove_file(e.path());
                }
            } else if name.ends_with(".json") {
                entries.push((modified.unwrap_or(UNIX_EPOCH), e.path()));
            }
        }
        if entries.len() > DISK_CACHE_ENTRIES {
            entries.sort();
            let excess = entries.len() - DISK_CACHE_ENTRIES;
            for (_, path) in entries.into_iter().take(excess) {
                let _ = std::fs::remove_file(path);
            }
        }
    }
}

struct Answer {
    body: String,
    next: Option<String>,
}

/// The secrets whose exact values are redacted from GitHub's answers (the
/// token in use), kept out of `Debug` output like the token itself.
#[derive(Default)]
struct Redactor {
    known: Vec<String>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Redactor({} known, <redacted>)", self.known.len())
    }
}

impl Redactor {
    fn text(&self, s: &str) -> String {
        let known: Vec<&str> = self.known.iter().map(String::as_str).collect();
        secret::redact(s, &known)
    }

    fn json(&self, v: &mut serde_json::Value) {
        let known: Vec<&str> = self.known.iter().map(String::as_str).collect();
        secret::redact_json(v, &known);
    }

    /// An error whose message, hints or detail may quote GitHub.
    fn error(&self, mut e: Error) -> Error {
        e.message = self.text(&e.message);
        e.hints = e.hints.iter().map(|h| self.text(h)).collect();
        if let Some(d) = e.detail.as_mut() {
            self.json(d);
        }
        e
    }
}

pub struct RestClient {
    rt: tokio::runtime::Runtime,
    redactor: Redactor,
    octo: Octocrab,
    /// The API base without a trailing '/', for messages and Link checks.
    base: String,
    timeout: Duration,
    cache: HashMap<String, Cached>,
    disk: Option<DiskCache>,
    stats: Stats,
    deadline: Option<Instant>,
    authenticated: bool,
}

impl RestClient {
    /// `api_url` as from `GITHUB_API_URL`; `timeout` bounds each request
    /// (connect, send, read the whole body).
    pub fn new(api_url: &str, token: Option<Token>, timeout: Duration) -> Result<RestClient> {
        let base = api_url.trim_end_matches('/').to_string();
        let bad_url = || {
            Error::usage(
                "USAGE",
                format!(
                    "GITHUB_API_URL '{}' is not an http(s) URL",
                    base.escape_debug()
                ),
            )
        };
        if !(base.starts_with("https://") || base.starts_with("http://")) {
            return Err(bad_url());
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| {
                Error::env(
                    "IO_FAILED",
                    format!("could not start the async runtime: {e}"),
                )
            })?;
        let mut builder = Octocrab::builder()
            .base_uri(base.as_str())
            .map_err(|_| bad_url())?
            .add_retry_config(RetryConfig::None)
            .set_connect_timeout(Some(timeout))
            .set_read_timeout(Some(timeout))
            .set_write_timeout(Some(timeout))
            .add_header(http::header::ACCEPT, "application/vnd.github+json".into())
            .add_header(
                http::HeaderName::from_static("x-github-api-version"),
                "2022-11-28".into(),
            );
        let authenticated = token.is_some();
        let mut redactor = Redactor::default();
        if let Some(token) = token {
            redactor.known.push(token.secret.clone());
            // Messages quote GitHub with `escape_debug`: a token with a
            // quote or a backslash in it is known in that form too.
            let escaped = token.secret.escape_debug().to_string();
            if escaped != token.secret {
                redactor.known.push(escaped);
            }
            // octocrab turns the token into a header value and panics on
            // bytes a header cannot carry: refuse those here, without echoing.
            if !token.secret.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(Error::env(
                    "GITHUB_AUTH",
                    format!(
                        "the token from {} contains characters that cannot be sent to GitHub",
                        token.source.describe()
                    ),
                )
                .hint("check the variable's value (a stray newline or quote?)"));
            }
            builder = builder.personal_token(token.secret);
        }
        let octo = {
            let _guard = rt.enter();
            builder.build().map_err(|e| {
                Error::env(
                    "GITHUB_UNREACHABLE",
                    format!("could not set up the HTTP client: {e}"),
                )
            })?
        };
        Ok(RestClient {
            rt,
            redactor,
            octo,
            base,
            timeout,
            cache: HashMap::new(),
            disk: None,
            stats: Stats::default(),
            deadline: None,
            authenticated,
        })
    }

    /// Keep ETags and bodies across runs in `cache` (see [`DiskCache`]).
    pub fn with_disk_cache(mut self, cache: DiskCache) -> RestClient {
        self.disk = Some(cache);
        self
    }

    /// The API base URL this client asks (no trailing '/').
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The cached answer for `path`: this run's, else the disk's.
    fn cached(&mut self, path: &str) -> Option<&Cached> {
        if !self.cache.contains_key(path) {
            let url = format!("{}{path}", self.base);
            let entry = self.disk.as_ref().and_then(|d| d.load(&url))?;
            self.cache.insert(path.to_string(), entry);
        }
        self.cache.get(path)
    }

    /// One HTTP GET of `path` (relative to the base), with `If-None-Match`
    /// when we hold an ETag for it. Returns status, headers and body.
    fn send(&mut self, path: &str) -> Result<(u16, HeaderMap, String)> {
        let mut headers = HeaderMap::new();
        if let Some(cached) = self.cached(path) {
            if let Ok(v) = http::HeaderValue::from_str(&cached.etag) {
                headers.insert(http::header::IF_NONE_MATCH, v);
            }
        }
        self.stats.requests += 1;
        let octo = &self.octo;
        let timeout = self.timeout;
        let uri = path.to_string();
        let result = self.rt.block_on(async move {
            tokio::time::timeout(timeout, async move {
                let resp = octo._get_with_headers(uri, Some(headers)).await?;
                let status = resp.status().as_u16();
                let headers = resp.headers().clone();
                let body = octo.body_to_string(resp).await?;
                Ok::<_, octocrab::Error>((status, headers, body))
            })
            .await
        });
        match result {
            Err(_) => Err(Error::env(
                "GITHUB_UNREACHABLE",
                format!(
                    "GitHub did not answer GET {path} within {} ms",
                    timeout.as_millis()
                ),
            )
            .hint(format!("check your network and {}", self.base))),
            Ok(Err(e)) => Err(Error::env(
                "GITHUB_UNREACHABLE",
                format!("could not reach GitHub at {} (GET {path}): {e}", self.base),
            )
            .hint("check your network, or GITHUB_API_URL for GitHub Enterprise")),
            Ok(Ok(answer)) => Ok(answer),
        }
    }

    /// GET with caching, rate-limit handling and error mapping; one page.
    fn get(&mut self, path: &str) -> Result<Answer> {
        let mut waits = 0;
        loop {
            let (status, headers, body) = self.send(path)?;
            self.note_headers(&headers);
            if status == 304 {
                self.stats.not_modified += 1;
                let Some(cached) = self.cache.get(path) else {
                    return Err(
                        self.bad_response(path, "304 Not Modified to a request we never made")
                    );
                };
                return Ok(Answer {
                    body: cached.body.clone(),
                    next: cached.next.clone(),
                });
            }
            if (200..300).contains(&status) {
                let next = next_link(&headers)
                    .map(|link| self.relative(&link, path))
                    .transpose()?;
                if let Some(etag) = header(&headers, "etag").filter(|e| !e.is_empty()) {
                    let entry = Cached {
                        url: format!("{}{path}", self.base),
                        etag,
                        body: body.clone(),
                        next: next.clone(),
                    };
                    // An answer that echoes the token never goes to disk.
                    let echoed = self
                        .redactor
                        .known
                        .iter()
                        .any(|k| body.contains(k.as_str()));
                    if let (Some(disk), false) = (&self.disk, echoed) {
                        disk.store(&entry);
                    }
                    self.cache.insert(path.to_string(), entry);
                }
                return Ok(Answer { body, next });
            }
            if let Some((wait, why)) = rate_limited(status, &headers) {
                let until = SystemTime::now() + wait;
                let fits = self
                    .deadline
                    .is_some_and(|d| super::wait::now() + wait <= d);
                if fits && waits < MAX_RATE_WAITS {
                    waits += 1;
                    super::wait::sleep(wait, why);
                    continue;
                }
                let reset = jiff::Timestamp::from_second(
                    until
                        .duration_since(UNIX_EPOCH)
                        .map(|d| d.as_secs() as i64)
                        .unwrap_or(0),
                )
                .map(crate::clock::rfc3339)
                .unwrap_or_else(|_| "an unknown time".into());
                return Err(Error::env(
                    "GITHUB_RATE_LIMITED",
                    format!(
                        "GitHub's rate limit is exhausted (HTTP {status} for GET {path}); it resets at {reset} (in {} s)",
                        wait.as_secs()
                    ),
                )
                .hint(if self.authenticated {
                    "your token's budget is spent: retry after the reset, or with --wait and a --timeout past the reset"
                } else {
                    "set GITHUB_TOKEN (authenticated requests get a larger budget), or retry with --wait and a --timeout past the reset"
                })
                .with_detail(serde_json::json!({"status": status, "reset": reset, "requests": self.stats.requests})));
            }
            let message = serde_json::from_str::<serde_json::Value>(&body)
                .ok()
                .and_then(|v| {
                    v.get("message")
                        .and_then(|m| m.as_str())
                        .map(str::to_string)
                })
                .unwrap_or_default();
            let shown = if message.is_empty() {
                String::new()
            } else {
                format!(": {}", message.escape_debug())
            };
            let err = if status == 401 {
                Error::env(
                    "GITHUB_AUTH",
                    format!("GitHub refused the credentials (HTTP 401 for GET {path}){shown}"),
                )
                .hint("check GITHUB_TOKEN / GH_TOKEN, or run `gh auth login`")
            } else {
                Error::env(
                    "GITHUB_API",
                    format!("GitHub answered HTTP {status} for GET {path}{shown}"),
                )
                .hint("nothing was concluded; run verify again once GitHub answers")
            };
            return Err(err.with_detail(
                serde_json::json!({"status": status, "path": path, "requests": self.stats.requests}),
            ));
        }
    }

    fn note_headers(&mut self, headers: &HeaderMap) {
        if let Some(secs) = header(headers, "x-poll-interval").and_then(|v| v.parse::<u64>().ok()) {
            let d = Duration::from_secs(secs);
            self.stats.poll_interval = Some(self.stats.poll_interval.map_or(d, |p| p.max(d)));
        }
        if let Some(n) = header(headers, "x-ratelimit-remaining").and_then(|v| v.parse().ok()) {
            self.stats.rate_limit_remaining = Some(n);
        }
        if let Some(n) = header(headers, "x-ratelimit-reset").and_then(|v| v.parse().ok()) {
            self.stats.rate_limit_reset = Some(n);
        }
    }

    fn bad_response(&self, path: &str, what: &str) -> Error {
        Error::env(
            "GITHUB_BAD_RESPONSE",
            format!("GitHub's answer to GET {path} is unusable: {what}"),
        )
        .hint("nothing was concluded; if this persists, GITHUB_API_URL may point at something that is not the GitHub API")
        .with_detail(serde_json::json!({"path": path, "requests": self.stats.requests}))
    }

    /// Parse an answer into our model, every string of it redacted first.
    fn parse<T: DeserializeOwned>(&self, path: &str, body: &str) -> Result<T> {
        let mut value: serde_json::Value = serde_json::from_str(body)
            .map_err(|e| self.bad_response(path, &format!("malformed JSON ({e})")))?;
        self.redactor.json(&mut value);
        super::model::parse_value(value)
            .map_err(|e| self.bad_response(path, &format!("unexpected JSON ({e})")))
    }

    /// The boundary: whatever a trait method returns has been through here,
    /// so no error of ours quotes GitHub unredacted (answers are redacted
    /// by [`Self::parse`]).
    fn shield<T>(&self, result: Result<T>) -> Result<T> {
        result.map_err(|e| self.redactor.error(e))
    }

    fn read_required_checks(&mut self, repo: &RepoId, branch: &str) -> Result<RequiredChecks> {
        let branch = encode_path_segment(branch);
        let mut out = RequiredChecks::default();
        let path = format!("/repos/{repo}/branches/{branch}/protection/required_status_checks");
        match self.get(&path) {
            Ok(a) => {
                let r: RequiredStatusChecks = self.parse(&path, &a.body)?;
                out.contexts.extend(r.contexts.unwrap_or_default());
                out.contexts.extend(
                    r.checks
                        .unwrap_or_default()
                        .into_iter()
                        .filter_map(|c| c.context),
                );
            }
            Err(e) if is_status(&e, 404) && not_protected(&e) => {}
            Err(e) if is_status(&e, 403) || is_status(&e, 404) => out.unreadable = true,
            Err(e) => return Err(e),
        }
        let path = format!("/repos/{repo}/rules/branches/{branch}?per_page=100");
        match self.all_pages(path, |c, path, body| c.parse::<Vec<BranchRule>>(path, body)) {
            Ok(rules) => out
                .contexts
                .extend(rules.iter().flat_map(BranchRule::required_contexts)),
            Err(e) if is_status(&e, 403) || is_status(&e, 404) => out.unreadable = true,
            Err(e) => return Err(e),
        }
        out.contexts.sort();
        out.contexts.dedup();
        Ok(out)
    }

    /// A `Link` URL as a path relative to our base; links elsewhere are refused.
    fn relative(&self, link: &str, from: &str) -> Result<String> {
        if link.starts_with('/') {
            return Ok(link.to_string());
        }
        match link.strip_prefix(&self.base) {
            Some(rest) if rest.starts_with('/') => Ok(rest.to_string()),
            _ => Err(self.bad_response(from, &format!("its next-page link leaves {}", self.base))),
        }
    }

    /// Every page of a listing, each page parsed by `items`.
    fn all_pages<T>(
        &mut self,
        first: String,
        items: impl Fn(&Self, &str, &str) -> Result<Vec<T>>,
    ) -> Result<Vec<T>> {
        let mut out = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut next = Some(first);
        while let Some(path) = next.take() {
            if !seen.insert(path.clone()) || seen.len() > MAX_PAGES {
                return Err(self.bad_response(&path, "its pagination does not end"));
            }
            let answer = self.get(&path)?;
            out.extend(items(self, &path, &answer.body)?);
            next = answer.next;
        }
        Ok(out)
    }
}

fn is_status(e: &Error, status: u16) -> bool {
    e.code == "GITHUB_API" && e.detail.as_ref().is_some_and(|d| d["status"] == status)
}

/// GitHub's 404s for a branch without (status-check) protection, as opposed
/// to a 404 that hides what the token may not see.
fn not_protected(e: &Error) -> bool {
    e.message.contains("Branch not protected")
        || e.message.contains("Required status checks not enabled")
}

/// A branch name as one URL path segment (its '/' kept, as GitHub takes it).
fn encode_path_segment(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_string())
}

/// `Link: <url>; rel="next", <url>; rel="last"` → the next URL.
pub fn next_link_value(link: &str) -> Option<String> {
    for part in link.split(',') {
        let mut pieces = part.split(';');
        let url = pieces.next()?.trim();
        let is_next = pieces.any(|p| {
            let p = p.trim();
            p.strip_prefix("rel=")
                .map(|v| v.trim_matches('"').split_whitespace().any(|r| r == "next"))
                .unwrap_or(false)
        });
        if is_next {
            return url
                .strip_prefix('<')
                .and_then(|u| u.strip_suffix('>'))
                .map(str::to_string);
        }
    }
    None
}

fn next_link(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(http::header::LINK)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(next_link_value)
}

/// When a 403/429 is a rate limit, how long until it lifts and what says
/// so: `retry-after` (seconds), else `x-ratelimit-reset` (epoch seconds)
/// when nothing remains, else a minute for a 429 without headers.
fn rate_limited(status: u16, headers: &HeaderMap) -> Option<(Duration, &'static str)> {
    if status != 403 && status != 429 {
        return None;
    }
    if let Some(secs) = header(headers, "retry-after").and_then(|v| v.parse::<u64>().ok()) {
        return Some((Duration::from_secs(secs), "retry-after"));
    }
    let remaining = header(headers, "x-ratelimit-remaining").and_then(|v| v.parse::<u64>().ok());
    if remaining == Some(0) {
        let wait = match header(headers, "x-ratelimit-reset").and_then(|v| v.parse::<u64>().ok()) {
            Some(reset) => (UNIX_EPOCH + Duration::from_secs(reset))
                .duration_since(SystemTime::now())
                .unwrap_or(Duration::ZERO),
            None => Duration::from_secs(60),
        };
        return Some((wait, "x-ratelimit-reset"));
    }
    (status == 429).then_some((Duration::from_secs(60), "rate-limited"))
}

impl GitHub for RestClient {
    fn pull(&mut self, repo: &RepoId, number: u64) -> Result<PullRequest> {
        let path = format!("/repos/{repo}/pulls/{number}");
        let result = match self.get(&path) {
            Ok(a) => self.parse(&path, &a.body),
            Err(e)
                if e.code == "GITHUB_API"
                    && e.detail.as_ref().is_some_and(|d| d["status"] == 404) =>
            {
                Err(Error::usage(
                    "PR_NOT_FOUND",
                    format!("{repo} has no pull request #{number} (or this token cannot see it)"),
                )
                .hint("check the number and --repo; a private repository needs GITHUB_TOKEN")
                .with_detail(serde_json::json!({"requests": self.stats.requests})))
            }
            Err(e) => Err(e),
        };
        self.shield(result)
    }

    fn pulls_with_head(&mut self, repo: &RepoId, branch: &str) -> Result<Vec<PullRequest>> {
        let path = format!("/repos/{repo}/pulls?head={}:{branch}&state=all", repo.owner);
        let result = self.get(&path).and_then(|a| self.parse(&path, &a.body));
        self.shield(result)
    }

    fn combined_status(&mut self, repo: &RepoId, sha: &str) -> Result<CombinedStatus> {
        let path = format!("/repos/{repo}/commits/{sha}/status");
        let result = self.get(&path).and_then(|a| self.parse(&path, &a.body));
        self.shield(result)
    }

    fn check_runs(&mut self, repo: &RepoId, sha: &str) -> Result<Vec<CheckRun>> {
        let result = self.all_pages(
            format!("/repos/{repo}/commits/{sha}/check-runs?per_page=100"),
            |c, path, body| Ok(c.parse::<CheckRunsPage>(path, body)?.check_runs),
        );
        self.shield(result)
    }

    fn reviews(&mut self, repo: &RepoId, number: u64) -> Result<Vec<Review>> {
        let result = self.all_pages(
            format!("/repos/{repo}/pulls/{number}/reviews?per_page=100"),
            |c, path, body| c.parse(path, body),
        );
        self.shield(result)
    }

    fn comments(&mut self, repo: &RepoId, number: u64) -> Result<Vec<IssueComment>> {
        let result = self.all_pages(
            format!("/repos/{repo}/issues/{number}/comments?per_page=100"),
            |c, path, body| c.parse(path, body),
        );
        self.shield(result)
    }

    fn required_checks(&mut self, repo: &RepoId, branch: &str) -> Result<RequiredChecks> {
        let result = self.read_required_checks(repo, branch);
        self.shield(result)
    }

    fn stats(&self) -> Stats {
        self.stats.clone()
    }

    fn set_wait_deadline(&mut self, deadline: Option<Instant>) {
        self.deadline = deadline;
    }

    fn authenticated(&self) -> bool {
        self.authenticated
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_headers_yield_the_next_page() {
        let link = r#"<https://api.github.com/repositories/1/pulls/2/reviews?page=2>; rel="next", <https://api.github.com/repositories/1/pulls/2/reviews?page=5>; rel="last""#;
        assert_eq!(
            next_link_value(link).as_deref(),
            Some("https://api.github.com/repositories/1/pulls/2/reviews?page=2")
        );
        let last_page = r#"<https://api.github.com/x?page=1>; rel="prev", <https://api.github.com/x?page=1>; rel="first""#;
        assert_eq!(next_link_value(last_page), None);
    }

    #[test]
    fn api_hosts_map_to_their_web_host_for_gh() {
        assert_eq!(
            api_host("https://api.github.com").as_deref(),
            Some("github.com")
        );
        assert_eq!(
            api_host("https://ghe.example:8443/api/v3").as_deref(),
            Some("ghe.example:8443")
        );
    }

    #[test]
    fn errors_and_answers_are_redacted_at_the_boundary() {
        let token = "opaque-credential-0042";
        let r = Redactor {
            known: vec![token.into()],
        };
        let stripe = format!("{}_live_{}", "sk", "Zq81xWq9Lm2Pp0aB3dE5gH7j");
        let e = Error::env("GITHUB_API", format!("upstream said: Bearer {token}"))
            .hint(format!("proxy log: {stripe}"))
            .with_detail(serde_json::json!({"echo": token, "status": 500}));
        let e = r.error(e);
        let all = format!("{e} {}", e.to_json());
        assert!(!all.contains(token) && !all.contains(&stripe), "{all}");
        assert!(
            e.message.ends_with("Bearer [REDACTED:token]"),
            "{}",
            e.message
        );
        assert_eq!(e.detail.as_ref().unwrap()["status"], 500);
        let mut answer = serde_json::json!({"title": format!("fix {token}"), "number": 7,
            "head": {"ref": "feat/x", "sha": "0123456789abcdef0123456789abcdef01234567"}});
        r.json(&mut answer);
        assert_eq!(answer["title"], "fix [REDACTED:token]");
        assert_eq!(
            answer["head"]["sha"],
            "0123456789abcdef0123456789abcdef01234567"
        );
        assert!(!format!("{r:?}").contains(token));
    }

    #[test]
    fn a_token_never_shows_in_debug_output() {
        let t = Token {
            secret: "ghp_supersecret".into(),
            source: TokenSource::GithubToken,
        };
        assert!(!format!("{t:?}").contains("supersecret"));
    }
}
