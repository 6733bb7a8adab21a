//! Which API to ask and with which token: the endpoint (`GITHUB_API_URL`,
//! the repository's host, `GH_HOST`) and gh's rules for which token goes to
//! which host. The token is kept out of `Debug` output.

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
    pub(super) secret: String,
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
                api_url: super::DEFAULT_API_URL.to_string(),
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
pub(super) fn api_host(api_url: &str) -> Option<String> {
    let rest = api_url.split_once("://")?.1;
    let authority = rest.split('/').next()?;
    let host = authority.rsplit('@').next()?;
    Some(if host == "api.github.com" {
        "github.com".to_string()
    } else {
        host.to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_token_never_shows_in_debug_output() {
        let t = Token {
            secret: "ghp_supersecret".into(),
            source: TokenSource::GithubToken,
        };
        assert!(!format!("{t:?}").contains("supersecret"));
    }
}
