//! One GET and its consequences: the conditional request (`If-None-Match`
//! from the ETag cache), the rate-limit waits, the mapping of HTTP failures
//! to our errors, the headers we keep (`x-poll-interval`, the rate limit)
//! and pagination along `Link: rel="next"`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::header::HeaderMap;

use super::etag_cache::Cached;
use super::RestClient;
use crate::error::{Code, Error, Result};

/// Pages followed at most per listing (100 items each): a server whose
/// `next` links never end must not keep us forever.
const MAX_PAGES: usize = 100;
/// Rate-limit waits at most per request before giving up.
const MAX_RATE_WAITS: usize = 5;

pub(super) struct Answer {
    pub(super) body: String,
    pub(super) next: Option<String>,
}

impl RestClient {
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
            Err(_) => Err(Error::new(
                Code::GithubUnreachable,
                format!(
                    "GitHub did not answer GET {path} within {} ms",
                    timeout.as_millis()
                ),
            )
            .hint(format!("check your network and {}", self.base))),
            Ok(Err(e)) => Err(Error::new(
                Code::GithubUnreachable,
                format!("could not reach GitHub at {} (GET {path}): {e}", self.base),
            )
            .hint("check your network, or GITHUB_API_URL for GitHub Enterprise")),
            Ok(Ok(answer)) => Ok(answer),
        }
    }

    /// One HTTP PUT of `body` to `path`: its status and body, uncached and
    /// never retried (a merge is not repeated behind the caller's back).
    pub(super) fn put(&mut self, path: &str, body: &serde_json::Value) -> Result<(u16, String)> {
        self.stats.requests += 1;
        let octo = &self.octo;
        let timeout = self.timeout;
        let uri = path.to_string();
        let result = self.rt.block_on(async move {
            tokio::time::timeout(timeout, async move {
                let resp = octo._put(uri, Some(body)).await?;
                let status = resp.status().as_u16();
                let headers = resp.headers().clone();
                let body = octo.body_to_string(resp).await?;
                Ok::<_, octocrab::Error>((status, headers, body))
            })
            .await
        });
        match result {
            Err(_) => Err(Error::new(
                Code::GithubUnreachable,
                format!(
                    "GitHub did not answer PUT {path} within {} ms",
                    timeout.as_millis()
                ),
            )),
            Ok(Err(e)) => Err(Error::new(
                Code::GithubUnreachable,
                format!("could not reach GitHub at {} (PUT {path}): {e}", self.base),
            )),
            Ok(Ok((status, headers, body))) => {
                self.note_headers(&headers);
                Ok((status, body))
            }
        }
    }

    /// GET with caching, rate-limit handling and error mapping; one page.
    pub(super) fn get(&mut self, path: &str) -> Result<Answer> {
        let mut waits = 0;
        loop {
            let (status, headers, body) = self.send(path)?;
            self.note_headers(&headers);
            if status == 304 {
                return self.not_modified(path);
            }
            if (200..300).contains(&status) {
                return self.fresh(path, &headers, body);
            }
            if let Some((wait, why)) = rate_limited(status, &headers) {
                let fits = self.deadline.is_some_and(|d| self.waits.now() + wait <= d);
                if fits && waits < MAX_RATE_WAITS {
                    waits += 1;
                    self.waits.sleep(wait, why);
                    continue;
                }
                return Err(self.rate_limit_error(status, path, wait));
            }
            return Err(self.http_error(status, path, &body));
        }
    }

    /// A `304 Not Modified`: the cached answer.
    fn not_modified(&mut self, path: &str) -> Result<Answer> {
        self.stats.not_modified += 1;
        let Some(cached) = self.cache.get(path) else {
            return Err(self.bad_response(path, "304 Not Modified to a request we never made"));
        };
        Ok(Answer {
            body: cached.body.clone(),
            next: cached.next.clone(),
        })
    }

    /// A 2xx answer: its next page, and into the cache when it has an ETag.
    fn fresh(&mut self, path: &str, headers: &HeaderMap, body: String) -> Result<Answer> {
        let next = next_link(headers)
            .map(|link| self.relative(&link, path))
            .transpose()?;
        if let Some(etag) = header(headers, "etag").filter(|e| !e.is_empty()) {
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
        Ok(Answer { body, next })
    }

    /// A rate limit that cannot be waited out (no deadline, or past it).
    fn rate_limit_error(&self, status: u16, path: &str, wait: Duration) -> Error {
        let until = SystemTime::now() + wait;
        let reset = jiff::Timestamp::from_second(
            until
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs() as i64)
                .unwrap_or(0),
        )
        .map(crate::clock::rfc3339)
        .unwrap_or_else(|_| "an unknown time".into());
        Error::new(
            Code::GithubRateLimited,
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
        .with_detail(serde_json::json!({"status": status, "reset": reset, "requests": self.stats.requests}))
    }

    /// Any other failed answer, quoting GitHub's `message` if it has one.
    fn http_error(&self, status: u16, path: &str, body: &str) -> Error {
        let message = serde_json::from_str::<serde_json::Value>(body)
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
            Error::new(
                Code::GithubAuth,
                format!("GitHub refused the credentials (HTTP 401 for GET {path}){shown}"),
            )
            .hint("check GITHUB_TOKEN / GH_TOKEN, or run `gh auth login`")
        } else {
            Error::new(
                Code::GithubApi,
                format!("GitHub answered HTTP {status} for GET {path}{shown}"),
            )
            .hint("nothing was concluded; run verify again once GitHub answers")
        };
        err.with_detail(
            serde_json::json!({"status": status, "path": path, "requests": self.stats.requests}),
        )
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
    pub(super) fn all_pages<T>(
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
}
