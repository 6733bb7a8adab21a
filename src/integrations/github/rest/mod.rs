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

mod auth;
mod endpoints;
mod etag_cache;
mod redact;
mod transport;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use octocrab::service::middleware::retry::RetryConfig;
use octocrab::Octocrab;
use serde::de::DeserializeOwned;

use crate::error::{Code, Error, Result};
use crate::integrations::github::client::Stats;
use etag_cache::Cached;
use redact::Redactor;

pub use auth::{is_dotcom, token_for, token_from_env, Endpoint, Token, TokenSource};
pub use etag_cache::DiskCache;
pub use transport::next_link_value;

pub const DEFAULT_API_URL: &str = "https://api.github.com";

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
    waits: crate::integrations::github::wait::Waits,
    authenticated: bool,
}

/// The token's secret, once it is known to the redactor (as is and as
/// quoted with `escape_debug`) and known to be sendable: octocrab turns it
/// into a header value and panics on bytes a header cannot carry, so those
/// are refused here, without echoing.
fn checked_token(token: Token, redactor: &mut Redactor) -> Result<String> {
    redactor.known.push(token.secret.clone());
    let escaped = token.secret.escape_debug().to_string();
    if escaped != token.secret {
        redactor.known.push(escaped);
    }
    if !token.secret.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(Error::new(
            Code::GithubAuth,
            format!(
                "the token from {} contains characters that cannot be sent to GitHub",
                token.source.describe()
            ),
        )
        .hint("check the variable's value (a stray newline or quote?)"));
    }
    Ok(token.secret)
}

impl RestClient {
    /// `api_url` as from `GITHUB_API_URL`; `timeout` bounds each request
    /// (connect, send, read the whole body).
    pub fn new(api_url: &str, token: Option<Token>, timeout: Duration) -> Result<RestClient> {
        let base = api_url.trim_end_matches('/').to_string();
        let bad_url = || {
            Error::new(
                Code::Usage,
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
                Error::new(
                    Code::IoFailed,
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
            builder = builder.personal_token(checked_token(token, &mut redactor)?);
        }
        let octo = {
            let _guard = rt.enter();
            builder.build().map_err(|e| {
                Error::new(
                    Code::GithubUnreachable,
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
            waits: Default::default(),
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

    fn bad_response(&self, path: &str, what: &str) -> Error {
        Error::new(
            Code::GithubBadResponse,
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
        crate::integrations::github::model::parse_value(value)
            .map_err(|e| self.bad_response(path, &format!("unexpected JSON ({e})")))
    }

    /// The boundary: whatever a trait method returns has been through here,
    /// so no error of ours quotes GitHub unredacted (answers are redacted
    /// by [`Self::parse`]).
    fn shield<T>(&self, result: Result<T>) -> Result<T> {
        result.map_err(|e| self.redactor.error(e))
    }
}
