//! Credential detection and redaction: the one place that knows what a
//! secret looks like. Every free text git-swarm publishes (packets, plan
//! text, reports, reasons, journal messages) is refused when it holds one,
//! and every text relayed from the GitHub API is redacted before it reaches
//! an output or a note. A finding names the field and the *kind* of
//! credential (a stable id such as `stripe-live-key`), never the value.
//!
//! The rules follow the formats published by secret scanners' rule sets
//! (gitleaks' `config/gitleaks.toml` is the reference): token formats
//! anchored on their vendor prefixes, a few keyword-anchored shapes (an AWS
//! secret key near "aws"/"secret", a Mattermost token after "mattermost"),
//! PEM private keys, JWTs, URLs with a password, `Authorization:` headers and
//! `password=`-style assignments. Commit ids, UUIDs, base64 blobs, prose and
//! code identifiers never match: the prefixes are specific, and the shapes
//! that are not (a 40-character key in prose, `s.` Vault tokens) must also
//! look machine-made. `tests/it/props.rs` holds that line on a benign corpus.

use std::ops::Range;
use std::sync::OnceLock;

use regex::Regex;
use serde_yaml_ng::Value;

use crate::error::Error;

/// One field that looks like it holds a credential.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Finding {
    /// Where: `task`, `next[2]`, `verified[0].evidence`, `line 12`, `--reason`, …
    pub field: String,
    /// Which rule matched: a stable id such as `stripe-live-key`.
    pub kind: &'static str,
    /// The same in words: "a Stripe live secret key".
    pub description: &'static str,
}

/// A value check on what a rule captured (the secret part of the match).
type Check = fn(&str) -> bool;

/// A rule as written in the table: kind, description, keywords, pattern, check.
type Spec = (
    &'static str,
    &'static str,
    &'static [&'static str],
    &'static str,
    Option<Check>,
);

struct Rule {
    kind: &'static str,
    what: &'static str,
    /// Lower-case words one of which any match contains (as gitleaks'
    /// keywords): a text without any is not searched with this rule, and
    /// the rule's regex is compiled only once a text has one. Most texts
    /// (ids, states, names) have none, so checking them costs little.
    keywords: &'static [&'static str],
    pattern: &'static str,
    re: OnceLock<Regex>,
    /// Capture group 1, when the pattern has one, is the secret itself
    /// (what redaction replaces); else the whole match.
    check: Option<Check>,
}

impl Rule {
    fn regex(&self) -> &Regex {
        self.re.get_or_init(|| {
            Regex::new(self.pattern).unwrap_or_else(|e| panic!("secret rule {}: {e}", self.kind))
        })
    }
}

/// The value is not a placeholder (`<token>`, `${TOKEN}`, `***`, an
/// earlier redaction) nor a word that stands for one (`password`, `token`).
fn real(v: &str) -> bool {
    const DUMMIES: &[&str] = &[
        "pass",
        "password",
        "passwd",
        "pwd",
        "pw",
        "secret",
        "token",
        "changeme",
        "changeit",
        "test",
        "example",
        "placeholder",
    ];
    !is_placeholder(v)
        && !v.starts_with('<')
        && !v.starts_with("${")
        && !v.starts_with("[REDACTED")
        && !DUMMIES.iter().any(|d| v.eq_ignore_ascii_case(d))
}

/// Upper case, lower case and a digit: what a random key has and a word, a
/// path or a (lower- or upper-case hex) commit id does not.
fn mixed3(v: &str) -> bool {
    v.chars().any(|c| c.is_ascii_uppercase())
        && v.chars().any(|c| c.is_ascii_lowercase())
        && v.chars().any(|c| c.is_ascii_digit())
}

/// Upper and lower case letters (random base62), or letters and digits.
fn machine_made(v: &str) -> bool {
    let upper = v.chars().any(|c| c.is_ascii_uppercase());
    let lower = v.chars().any(|c| c.is_ascii_lowercase());
    let digit = v.chars().any(|c| c.is_ascii_digit());
    real(v) && ((upper && lower) || (digit && (upper || lower)))
}

fn has_digit(v: &str) -> bool {
    v.chars().any(|c| c.is_ascii_digit())
}

fn mixed_case(v: &str) -> bool {
    v.chars().any(|c| c.is_ascii_uppercase()) && v.chars().any(|c| c.is_ascii_lowercase())
}

/// `user:password` with a real password.
fn user_password(v: &str) -> bool {
    real(v)
        && v.split_once(':')
            .is_some_and(|(_, pw)| pw.chars().count() >= 3 && real(pw) && !pw.starts_with('$'))
}

/// Every rule, in the order they are tried (specific before generic: the
/// first rule that matches names the kind).
fn rules() -> &'static [Rule] {
    static RULES: OnceLock<Vec<Rule>> = OnceLock::new();
    RULES.get_or_init(|| {
        let table: &[Spec] = &[
            // Source hosting
            ("github-pat", "a GitHub personal access token", &["ghp_"], r"\bghp_[A-Za-z0-9]{30,}", None),
            ("github-oauth-token", "a GitHub OAuth token", &["gho_"], r"\bgho_[A-Za-z0-9]{30,}", None),
            ("github-app-token", "a GitHub App token", &["ghu_", "ghs_"], r"\bgh[us]_[A-Za-z0-9]{30,}", None),
            ("github-refresh-token", "a GitHub refresh token", &["ghr_"], r"\bghr_[A-Za-z0-9]{30,}", None),
            ("github-fine-grained-pat", "a GitHub fine-grained token", &["github_pat_"], r"\bgithub_pat_[A-Za-z0-9_]{30,}", None),
            ("gitlab-pat", "a GitLab personal access token", &["glpat-"], r"\bglpat-[A-Za-z0-9_-]{20,}", None),
            ("gitlab-token", "a GitLab token", &["gldt-", "glrt-", "glcbt-", "glptt-", "glft-", "glimt-", "glagent-", "gloas-", "glsoat-", "glffct-"], r"\b(?:gldt|glrt|glcbt|glptt|glft|glimt|glagent|gloas|glsoat|glffct)-[A-Za-z0-9_-]{20,}", None),
            ("gitlab-runner-registration-token", "a GitLab runner registration token", &["gr1348941"], r"\bGR1348941[A-Za-z0-9_-]{20,}", None),
            ("sourcegraph-token", "a Sourcegraph access token", &["sgp_"], r"\bsgp_(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40}\b", None),
            ("atlassian-api-token", "an Atlassian API token", &["atatt3"], r"\bATATT3[A-Za-z0-9_=-]{100,}", None),
            ("postman-api-key", "a Postman API key", &["pmak-"], r"\bPMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}\b", None),
            ("linear-api-key", "a Linear API key", &["lin_api_", "lin_oauth_"], r"\blin_(?:api|oauth)_[A-Za-z0-9]{32,}", None),
            ("notion-token", "a Notion integration token", &["ntn_"], r"\bntn_[0-9]{11}[A-Za-z0-9]{35}\b", None),
            // Chat services
            ("slack-token", "a Slack token", &["xox"], r"\bxox[abposre]-[A-Za-z0-9-]{10,}", None),
            ("slack-app-token", "a Slack app-level token", &["xapp-"], r"\bxapp-\d-[A-Za-z0-9]+-\d+-[A-Za-z0-9]+", None),
            ("slack-webhook", "a Slack webhook URL", &["hooks.slack.com"], r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,}", None),
            ("discord-webhook", "a Discord webhook URL", &["discord"], r"discord(?:app)?\.com/api/webhooks/[0-9]+/[A-Za-z0-9_-]{20,}", None),
            ("discord-bot-token", "a Discord bot token", &["."], r"\b([MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40})\b", Some(mixed3)),
            ("telegram-bot-token", "a Telegram bot token", &[":aa"], r"\b[0-9]{5,16}:AA[A-Za-z0-9_-]{30,40}", None),
            ("teams-webhook", "a Microsoft Teams webhook URL", &["webhook.office.com"], r"webhook\.office\.com/webhookb2/[A-Za-z0-9@/-]{40,}", None),
            ("twilio-api-key", "a Twilio API key", &["sk"], r"\bSK[0-9a-fA-F]{32}\b", None),
            ("sendgrid-api-key", "a SendGrid API key", &["sg."], r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}", None),
            ("sendinblue-api-key", "a Sendinblue API key", &["xkeysib-"], r"\bxkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}\b", None),
            ("mailgun-api-key", "a Mailgun API key", &["key-"], r"\bkey-[0-9a-f]{32}\b", None),
            ("mailchimp-api-key", "a Mailchimp API key", &["-us"], r"\b[0-9a-f]{32}-us[0-9]{1,2}\b", None),
            // AI services
            ("anthropic-api-key", "an Anthropic API key", &["sk-ant-"], r"\bsk-ant-[A-Za-z0-9_-]{20,}", None),
            ("openai-api-key", "an OpenAI API key", &["sk-"], r"\bsk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,}", None),
            ("openai-api-key", "an OpenAI API key", &["sk-"], r"\bsk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}", None),
            ("openai-api-key", "an OpenAI-style sk- API key", &["sk-"], r"\b(sk-[A-Za-z0-9]{32,})\b", Some(machine_made)),
            ("huggingface-token", "a Hugging Face access token", &["hf_", "api_org_"], r"\b(hf_[A-Za-z0-9]{30,})\b", Some(mixed_case)),
            ("huggingface-token", "a Hugging Face organization token", &["hf_", "api_org_"], r"\b(api_org_[A-Za-z]{34})\b", Some(mixed_case)),
            ("groq-api-key", "a Groq API key", &["gsk_"], r"\bgsk_[A-Za-z0-9]{48,}\b", None),
            ("xai-api-key", "an xAI API key", &["xai-"], r"\bxai-[A-Za-z0-9]{70,}\b", None),
            ("replicate-api-token", "a Replicate API token", &["r8_"], r"\br8_[A-Za-z0-9]{37}\b", None),
            ("perplexity-api-key", "a Perplexity API key", &["pplx-"], r"\bpplx-[A-Za-z0-9]{48}\b", None),
            // Cloud
            ("aws-access-key", "an AWS access key id", &["a3t", "akia", "asia", "abia", "acca", "agpa", "aida", "aroa"], r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA)[A-Z0-9]{16}\b", None),
            ("gcp-api-key", "a Google API key", &["aiza"], r"\bAIza[A-Za-z0-9_-]{35}", None),
            ("google-oauth-client-secret", "a Google OAuth client secret", &["gocspx-"], r"\bGOCSPX-[A-Za-z0-9_-]{28}", None),
            ("azure-storage-connection-string", "an Azure connection string key", &["accountkey", "sharedaccesskey"], r"(?i)\b(?:AccountKey|SharedAccessKey)\s*=\s*([A-Za-z0-9+/]{20,}={0,2})", None),
            ("azure-sas-token", "an Azure SAS signature", &["sig="], r"[?&]sig=([A-Za-z0-9%+/]{30,}(?:%3D|=)*)", None),
            ("azure-ad-client-secret", "an Azure AD client secret", &["q~"], r#"(?:^|[\\'"`\s>=:(,)])([a-zA-Z0-9_~.]{3}[0-9]Q~[a-zA-Z0-9_~.-]{31,34})(?:$|[\\'"`\s<),])"#, None),
            ("digitalocean-token", "a DigitalOcean token", &["_v1_"], r"\bdo[opr]_v1_[a-f0-9]{64}\b", None),
            ("databricks-token", "a Databricks API token", &["dapi"], r"\bdapi[a-f0-9]{32}(?:-[0-9])?\b", None),
            ("alibaba-access-key", "an Alibaba Cloud AccessKey id", &["ltai"], r"\bLTAI[A-Za-z0-9]{20}\b", None),
            ("heroku-api-key", "a Heroku API key", &["hrku-aa"], r"\bHRKU-AA[A-Za-z0-9_-]{58}", None),
            ("flyio-token", "a Fly.io token", &["fo1_", "fm1", "fm2"], r"\b(?:fo1_[A-Za-z0-9_-]{43}|fm[12][ar]?_[A-Za-z0-9+/]{100,}={0,3})", None),
            ("vault-token", "a HashiCorp Vault token", &["hvs.", "hvb.", "s."], r"\bhv[sb]\.[A-Za-z0-9_-]{24,}", None),
            ("vault-token", "a HashiCorp Vault token", &["hvs.", "hvb.", "s."], r"\b(s\.[A-Za-z0-9]{24})\b", Some(mixed3)),
            ("terraform-cloud-token", "a Terraform Cloud token", &["atlasv1"], r"\b[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}", None),
            ("doppler-token", "a Doppler token", &["dp."], r"\bdp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}", None),
            ("pulumi-token", "a Pulumi access token", &["pul-"], r"\bpul-[a-f0-9]{40}\b", None),
            ("tailscale-key", "a Tailscale key", &["tskey-"], r"\btskey-(?:[a-z]+-)?[A-Za-z0-9]{6,}-[A-Za-z0-9]{16,}", None),
            ("supabase-token", "a Supabase token", &["sbp_", "sb_secret_"], r"\b(?:sbp_[a-f0-9]{40}\b|sb_secret_[A-Za-z0-9_-]{20,})", None),
            ("grafana-token", "a Grafana token", &["glc_", "glsa_", "eyjrijoi"], r"\b(?:glc_[A-Za-z0-9+/]{32,}={0,3}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}\b|eyJrIjoi[A-Za-z0-9]{70,}={0,3})", None),
            ("newrelic-key", "a New Relic key", &["nrak-", "nrii-", "nrjs-", "nral"], r"\b(?:NRAK-[A-Z0-9]{27}|NRII-[A-Za-z0-9_-]{32}|NRJS-[a-f0-9]{19}|[a-fA-F0-9]{36}NRAL)\b", None),
            ("sentry-token", "a Sentry token", &["sntry"], r"\bsntry[us]_[A-Za-z0-9+/=_]{40,}", None),
            ("dynatrace-token", "a Dynatrace API token", &["dt0c01."], r"\bdt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}\b", None),
            ("planetscale-token", "a PlanetScale token or password", &["pscale_"], r"\bpscale_(?:tkn|oauth|pw)_[A-Za-z0-9_=.-]{32,}", None),
            ("openshift-token", "an OpenShift user token", &["sha256~"], r"\bsha256~[A-Za-z0-9_-]{43}", None),
            ("harness-token", "a Harness access token", &["pat.", "sat."], r"\b(?:pat|sat)\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}\b", None),
            ("mapbox-secret-token", "a Mapbox secret token", &["sk.eyj"], r"\bsk\.eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}", None),
            ("onepassword-token", "a 1Password service account token", &["ops_eyj"], r"\bops_eyJ[A-Za-z0-9+/]{100,}", None),
            ("age-secret-key", "an age secret key", &["age-secret-key-1"], r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}", None),
            // Package registries
            ("npm-token", "an npm access token", &["npm_"], r"\bnpm_[A-Za-z0-9]{36}\b", None),
            ("pypi-token", "a PyPI upload token", &["pypi-age"], r"\bpypi-AgE[A-Za-z0-9_-]{50,}", None),
            ("rubygems-token", "a RubyGems API key", &["rubygems_"], r"\brubygems_[a-f0-9]{48}\b", None),
            ("artifactory-key", "an Artifactory API key", &["akcp"], r"\bAKCp[A-Za-z0-9]{69}\b", None),
            ("clojars-token", "a Clojars deploy token", &["clojars_"], r"\bCLOJARS_[A-Za-z0-9]{60}\b", None),
            ("prefect-token", "a Prefect API key", &["pnu_"], r"\bpnu_[A-Za-z0-9]{36}\b", None),
            ("readme-token", "a ReadMe API key", &["rdme_"], r"\brdme_[a-z0-9]{70}\b", None),
            ("scalingo-token", "a Scalingo API token", &["tk-us-"], r"\btk-us-[A-Za-z0-9_-]{48}", None),
            ("infracost-token", "an Infracost API key", &["ico-"], r"\bico-[A-Za-z0-9]{32}\b", None),
            ("octopus-deploy-key", "an Octopus Deploy API key", &["api-"], r"\b(API-[A-Z0-9]{26})\b", Some(has_digit)),
            // Payments and commerce
            ("stripe-live-key", "a Stripe live secret key", &["k_live_", "k_prod_"], r"\b[rs]k_(?:live|prod)_[A-Za-z0-9]{10,}", None),
            ("stripe-test-key", "a Stripe test secret key", &["k_test_"], r"\b[rs]k_test_[A-Za-z0-9]{10,}", None),
            ("stripe-webhook-secret", "a Stripe webhook signing secret", &["whsec_"], r"\bwhsec_[A-Za-z0-9]{24,}", None),
            ("square-token", "a Square access token", &["sq0atp-", "sq0csp-"], r"\bsq0(?:atp|csp)-[A-Za-z0-9_-]{22,}", None),
            ("shopify-token", "a Shopify token or shared secret", &["shpat_", "shpss_", "shpca_", "shppa_"], r"\bshp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}\b", None),
            ("shippo-token", "a Shippo API token", &["shippo_"], r"\bshippo_(?:live|test)_[a-fA-F0-9]{40}\b", None),
            ("flutterwave-key", "a Flutterwave secret key", &["flwseck"], r"\bFLWSECK(?:_TEST)?-[a-fA-F0-9]{12,}", None),
            ("easypost-key", "an EasyPost API key", &["ezak", "eztk"], r"\bEZ[AT]K[A-Za-z0-9]{54}\b", None),
            ("duffel-token", "a Duffel API token", &["duffel_"], r"\bduffel_(?:test|live)_[A-Za-z0-9_=-]{43}", None),
            ("facebook-token", "a Facebook access token", &["eaam", "eaac"], r"\bEAA[MC][A-Za-z0-9]{100,}", None),
            // Shapes that are not vendor-specific, or only by their context;
            // tried after every vendor prefix, so a vendor token is named as such.
            ("mattermost-token", "a Mattermost access token", &["mattermost"], r#"(?i)mattermost[\w.-]{0,30}["']?\s*(?:=|:|=>)\s*["']?([a-z0-9]{26})\b"#, Some(has_digit)),
            ("twilio-credentials", "a Twilio account SID with its auth token", &["ac"], r"\bAC[0-9a-f]{32}\b[\s\S]{0,80}?\b([0-9a-f]{32})\b", None),
            ("private-key", "a private key block", &["-----begin"], r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)?", None),
            ("jwt", "a JSON Web Token", &["eyj"], r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", None),
            ("url-password", "a URL with a password", &["://"], r"[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:([^/\s@]+)@", Some(real)),
            ("authorization-header", "an Authorization header", &["authorization"], r#"(?i)\b(?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:bearer|basic|token|digest)\s+([A-Za-z0-9._~+/-]{8,}=*)"#, Some(machine_made)),
            ("bearer-token", "a bearer token", &["bearer"], r"(?i)\bbearer\s+([A-Za-z0-9._~+/-]{20,}=*)", Some(machine_made)),
            ("curl-basic-auth", "credentials given to curl -u", &["curl"], r#"\bcurl\b[^\n]*?\s(?:-u|--user)[ =]+["']?([^\s"'`:]+:[^\s"'`]+)"#, Some(user_password)),
            ("aws-secret-key", "an AWS secret access key", &["aws", "secret"], r"(?i)(?:aws|secret)[\s\S]{0,60}?(?:^|[^A-Za-z0-9/+=])([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)", Some(mixed3)),
        ];
        table
            .iter()
            .map(|(kind, what, keywords, pattern, check)| Rule {
                kind,
                what,
                keywords,
                pattern,
                re: OnceLock::new(),
                check: *check,
            })
            .collect()
    })
}

const ASSIGNMENT_KIND: &str = "secret-assignment";
const ASSIGNMENT_WHAT: &str = "a password/secret/token assignment";

/// `password=…`, `api_key: …`, `"token": "…"`. The value after `=` must be
/// at least 4 characters; after `:` (prose like "token: expired" is common)
/// it must also look machine-made: a digit, a symbol other than `-._`, or
/// camel case in 12+ characters. Placeholders (`<…>`, `${…}`, `***`) are
/// not values.
fn assignment() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r#"(?i)\b(?:[a-z0-9]+[_-])*(?:password|passwd|passphrase|pwd|secret|token|api[_-]?key|apikey|private[_-]?key|access[_-]?key|client[_-]?secret|credentials?)["']?\s*([:=])\s*["']?([^\s"'`,;]+)"#,
        )
        .expect("the assignment pattern is a valid regex")
    })
}

/// `${TOKEN}`, `$TOKEN`, `{{ token }}`, `%TOKEN%`, `***`, `xxxx`,
/// `[REDACTED…]`: the whole value is a placeholder. A real password may well
/// *start* with `$`, `%` or `{`, so only a complete placeholder is excused.
fn is_placeholder(value: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^(?:<[^<>]*>|\$\{[^{}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|\{\{[^{}]*\}\}|%[A-Za-z_][A-Za-z0-9_]*%|[*xX.]+|\[REDACTED(?::[a-z0-9-]+)?\])$")
            .expect("the placeholder pattern is a valid regex")
    })
    .is_match(value)
}

/// A value that is code, not a secret: `token = token_from_env(&url)`,
/// `secret::check(…)`, `token: Option<Token>`, `key = self.key`. Plan text
/// and messages quote code all the time; a bare word (`correcthorse`) is
/// still taken for a password.
fn looks_like_code(value: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"^(?:[&*]*(?:mut\s+)?[A-Za-z_][A-Za-z0-9_]*(?:(?:::|\.)[A-Za-z_][A-Za-z0-9_]*)*(?:!?\(|<|\[)|.*::|(?:self|this|ctx|cfg|config|settings|env|process|os|args|opts|options|params|secrets|vars|req|request)\.[A-Za-z_])",
        )
        .expect("the code pattern is a valid regex")
    })
    .is_match(value)
}

/// `secret=true`, `token=null`, `max_token=4096`: a flag, a null or a
/// small number is a setting, not a credential.
fn is_plain_setting(value: &str) -> bool {
    const WORDS: &[&str] = &["true", "false", "null", "none", "nil", "yes", "no", "empty"];
    WORDS.iter().any(|w| value.eq_ignore_ascii_case(w))
        || (value.len() < 8 && value.chars().all(|c| c.is_ascii_digit()))
}

fn looks_like_assigned_secret(sep: &str, value: &str) -> bool {
    // `<from the vault>` is cut at its first space: an opening `<` is enough;
    // so is `${VAR}…`/`{{ … }}…` (a template, e.g. in a URL).
    if is_placeholder(value)
        || value.starts_with('<')
        || value.starts_with("${")
        || value.starts_with("{{")
        || value.starts_with("[REDACTED")
        || value.starts_with("$(")
        || value.starts_with('`')
        || (sep == ":" && value.starts_with(':'))
        || looks_like_code(value)
        || is_plain_setting(value)
    {
        return false;
    }
    if sep == "=" {
        return value.chars().count() >= 4;
    }
    // After `:` it is often prose ("credentials: Rotated.", "token:
    // short-lived"): the value must look machine-made, judged without the
    // sentence's trailing punctuation.
    let value = value.trim_end_matches(['.', ',', ':', ';', '!', '?', ')', ']', '}']);
    if value.chars().count() < 6 {
        return false;
    }
    let digit = value.chars().any(|c| c.is_ascii_digit());
    let symbol = value
        .chars()
        .any(|c| !c.is_alphanumeric() && !matches!(c, '-' | '.' | '_'));
    let inner_upper = value.chars().skip(1).any(|c| c.is_uppercase());
    let lower = value.chars().any(|c| c.is_lowercase());
    digit || symbol || (inner_upper && lower && value.chars().count() >= 12)
}

/// One credential found in a text: which rule, and where the secret part is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub kind: &'static str,
    pub description: &'static str,
    /// Byte range of the secret itself (what redaction replaces).
    pub range: Range<usize>,
}

/// Every credential in `text`, in rule order.
pub fn find(text: &str) -> Vec<Hit> {
    let mut out = Vec::new();
    // Nothing shorter can match (`pwd=abcd` is the shortest), and most
    // strings in an API answer are short: ids, states, logins.
    if text.len() < 8 {
        return out;
    }
    let lower = text.to_ascii_lowercase();
    for rule in rules() {
        if !rule.keywords.iter().any(|k| lower.contains(k)) {
            continue;
        }
        for caps in rule.regex().captures_iter(text) {
            let m = caps
                .get(1)
                .or_else(|| caps.get(0))
                .expect("a match has group 0");
            if rule.check.is_none_or(|check| check(m.as_str())) {
                out.push(Hit {
                    kind: rule.kind,
                    description: rule.what,
                    range: m.range(),
                });
            }
        }
    }
    const ASSIGNMENT_KEYWORDS: &[&str] = &["pass", "pwd", "secret", "token", "key", "credential"];
    if !ASSIGNMENT_KEYWORDS.iter().any(|k| lower.contains(k)) {
        return out;
    }
    for caps in assignment().captures_iter(text) {
        let sep = caps.get(1).map_or("", |m| m.as_str());
        let Some(value) = caps.get(2) else { continue };
        if looks_like_assigned_secret(sep, value.as_str()) {
            out.push(Hit {
                kind: ASSIGNMENT_KIND,
                description: ASSIGNMENT_WHAT,
                range: value.range(),
            });
        }
    }
    out
}

/// Which kind of credential `text` looks like it contains, if any (the
/// first rule that matches).
pub fn classify(text: &str) -> Option<&'static str> {
    find(text).first().map(|h| h.kind)
}

/// Every kind this module detects, with its description, in rule order.
pub fn kinds() -> Vec<(&'static str, &'static str)> {
    let mut out: Vec<(&'static str, &'static str)> = Vec::new();
    for r in rules() {
        if !out.iter().any(|(k, _)| *k == r.kind) {
            out.push((r.kind, r.what));
        }
    }
    out.push((ASSIGNMENT_KIND, ASSIGNMENT_WHAT));
    out
}

/// The description of a kind ("a Stripe live secret key").
pub fn describe(kind: &str) -> &'static str {
    kinds()
        .into_iter()
        .find(|(k, _)| *k == kind)
        .map_or("a credential", |(_, w)| w)
}

/// Shorter than this, a "token" is not redacted by its exact value: it
/// cannot be a real credential, and replacing every occurrence of two or
/// three characters would mangle ids and hashes in the text.
pub const MIN_KNOWN_SECRET: usize = 8;

/// `text` with every credential replaced by `[REDACTED:<kind>]`, and every
/// occurrence of each `known` secret (the token in use) by `[REDACTED:token]`.
/// This is what every text relayed from outside (GitHub's answers) passes
/// through before it reaches an output, an error or a note.
pub fn redact(text: &str, known: &[&str]) -> String {
    redacted(text, known).unwrap_or_else(|| text.to_string())
}

/// [`redact`], or `None` when there is nothing to redact (no copy made).
fn redacted(text: &str, known: &[&str]) -> Option<String> {
    let mut spans: Vec<(Range<usize>, &str)> = Vec::new();
    for k in known.iter().filter(|k| k.len() >= MIN_KNOWN_SECRET) {
        for (at, _) in text.match_indices(*k) {
            spans.push((at..at + k.len(), "token"));
        }
    }
    for hit in find(text) {
        spans.push((hit.range, hit.kind));
    }
    if spans.is_empty() {
        return None;
    }
    spans.sort_by_key(|(r, _)| (r.start, std::cmp::Reverse(r.end)));
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    let mut i = 0;
    while i < spans.len() {
        let (range, kind) = spans[i].clone();
        let mut end = range.end;
        i += 1;
        // Overlapping or touching findings become one redaction.
        while i < spans.len() && spans[i].0.start <= end {
            end = end.max(spans[i].0.end);
            i += 1;
        }
        if range.start < at {
            continue;
        }
        out.push_str(&text[at..range.start]);
        out.push_str(&format!("[REDACTED:{kind}]"));
        at = end;
    }
    out.push_str(&text[at..]);
    Some(out)
}

/// Redact every string value of a JSON document in place. (Keys are the
/// API's own field names, not relayed text.)
pub fn redact_json(value: &mut serde_json::Value, known: &[&str]) {
    match value {
        serde_json::Value::String(s) => {
            if let Some(r) = redacted(s, known) {
                *s = r;
            }
        }
        serde_json::Value::Array(items) => {
            for item in items {
                redact_json(item, known);
            }
        }
        serde_json::Value::Object(map) => {
            for v in map.values_mut() {
                redact_json(v, known);
            }
        }
        _ => {}
    }
}

/// Every field of a YAML document that looks like it holds a credential
/// (keys are checked too, as a key is also text that travels; and a key
/// with its scalar value, so `password: hunter2` is caught though neither
/// half alone looks like anything).
pub fn scan(value: &Value) -> Vec<Finding> {
    let mut out = Vec::new();
    walk(value, String::new(), &mut out);
    out
}

fn finding(field: String, kind: &'static str) -> Finding {
    Finding {
        field,
        kind,
        description: describe(kind),
    }
}

fn walk(value: &Value, path: String, out: &mut Vec<Finding>) {
    match value {
        Value::String(s) => {
            if let Some(kind) = classify(s) {
                out.push(finding(path, kind));
            }
        }
        Value::Sequence(items) => {
            for (i, item) in items.iter().enumerate() {
                walk(item, format!("{path}[{i}]"), out);
            }
        }
        Value::Mapping(map) => {
            for (k, v) in map {
                let key = match k {
                    Value::String(s) => s.clone(),
                    other => serde_yaml_ng::to_string(other)
                        .unwrap_or_default()
                        .trim()
                        .to_string(),
                };
                let field = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                if let Some(kind) = classify(&key) {
                    out.push(finding(field.clone(), kind));
                    continue;
                }
                let before = out.len();
                walk(v, field.clone(), out);
                if out.len() == before {
                    let scalar = match v {
                        Value::String(s) => Some(s.clone()),
                        Value::Number(n) => Some(n.to_string()),
                        _ => None,
                    };
                    if let Some(kind) = scalar.and_then(|s| classify(&format!("{key}: {s}"))) {
                        out.push(finding(field, kind));
                    }
                }
            }
        }
        Value::Tagged(t) => walk(&t.value, path, out),
        _ => {}
    }
}

/// Each line of a text document that looks like it holds a credential, as
/// `<name> line N` (1-based), one finding per line.
pub fn scan_lines(name: &str, text: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if let Some(kind) = classify(line) {
            out.push(finding(format!("{name} line {}", i + 1), kind));
        }
    }
    // A block that spans lines (a private key) is found on its first line;
    // anything only visible across lines is found on the whole text.
    if out.is_empty() {
        if let Some(kind) = classify(text) {
            out.push(finding(name.to_string(), kind));
        }
    }
    out
}

/// Each named field whose text looks like it holds a credential.
pub fn scan_fields(fields: &[(&str, &str)]) -> Vec<Finding> {
    fields
        .iter()
        .filter_map(|(field, text)| classify(text).map(|kind| finding(field.to_string(), kind)))
        .collect()
}

/// The error for `findings`: `code` (`PACKET_SECRET`, `PLAN_SECRET`,
/// `SECRET_IN_TEXT`), naming each field and kind and never the value;
/// `subject` says what was refused ("the packet", "the report").
pub fn refusal(code: &'static str, subject: &str, findings: &[Finding]) -> Error {
    let fields: Vec<String> = findings
        .iter()
        .map(|f| format!("`{}` ({}: {})", f.field, f.kind, f.description))
        .collect();
    Error::usage(
        code,
        format!(
            "{subject} was refused: {} {} like a credential; nothing was written",
            fields.join(", "),
            if findings.len() == 1 { "looks" } else { "look" }
        ),
    )
    .hint("git-swarm publishes this text to every clone and keeps it in history: remove the value and say where the credential lives instead (e.g. \"token in the CI secret store\")")
    .hint("if it is not a secret, reword it so it does not look like one")
    .with_detail(serde_json::json!({ "findings": findings }))
}

/// Refuse free text that looks like it holds a credential: the one check
/// for what a command publishes besides packets and plan text (report
/// lines, reasons, journal messages). `SECRET_IN_TEXT`, exit 2.
pub fn check_fields(subject: &str, fields: &[(&str, &str)]) -> Result<(), Error> {
    let findings = scan_fields(fields);
    if findings.is_empty() {
        crate::text::check_fields(subject, fields)
    } else {
        Err(refusal("SECRET_IN_TEXT", subject, &findings))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fake credentials are built from parts at run time, so that this file
    /// holds no string a push-protection scanner would take for a leak.
    fn rep(c: &str, n: usize) -> String {
        c.repeat(n)
    }

    /// `n` characters of a base62 alphabet, deterministic and mixed.
    fn b62(n: usize) -> String {
        let abc = "aB3dE5gH7jK9mN2pQ4sT6vW8yZ0cF1";
        abc.chars().cycle().take(n).collect()
    }

    fn hex(n: usize) -> String {
        "0a1b2c3d4e5f6789".chars().cycle().take(n).collect()
    }

    fn positives() -> Vec<(&'static str, String)> {
        vec![
            ("github-pat", format!("use {}_{} for the API", "ghp", b62(36))),
            ("github-oauth-token", format!("{}_{}", "gho", b62(36))),
            ("github-app-token", format!("{}_{}", "ghs", b62(36))),
            ("github-refresh-token", format!("{}_{}", "ghr", b62(36))),
            ("github-fine-grained-pat", format!("github_{}_{}", "pat", b62(82))),
            ("gitlab-pat", format!("{}-{}", "glpat", b62(20))),
            ("gitlab-token", format!("{}-{}", "gldt", b62(20))),
            ("gitlab-runner-registration-token", format!("GR1348941{}", b62(20))),
            ("sourcegraph-token", format!("sgp_{}", hex(40))),
            ("atlassian-api-token", format!("ATATT3{}", b62(120))),
            ("postman-api-key", format!("PMAK-{}-{}", hex(24), hex(34))),
            ("linear-api-key", format!("lin_api_{}", b62(40))),
            ("notion-token", format!("ntn_{}{}", "1".repeat(11), b62(35))),
            ("slack-token", format!("{}-1234567890-{}", "xoxb", b62(24))),
            ("slack-app-token", format!("xapp-1-A{}-1234567890-{}", "B".repeat(9), hex(64))),
            ("slack-webhook", format!("https://hooks.slack.com/services/T{}/B{}/{}", rep("A", 8), rep("B", 8), b62(24))),
            ("discord-webhook", format!("https://discord.com/api/webhooks/123456789012345678/{}", b62(68))),
            ("discord-bot-token", format!("M{}.{}.{}", b62(23), b62(6), b62(27))),
            ("telegram-bot-token", format!("bot 123456789:AA{}", b62(33))),
            ("teams-webhook", format!("https://acme.webhook.office.com/webhookb2/{}@{}/IncomingWebhook/{}", hex(36), hex(36), hex(32))),
            ("mattermost-token", format!("MATTERMOST_TOKEN={}", "k3j4h5g6f7d8s9a0q1w2e3r4t5")),
            ("twilio-api-key", format!("SK{}", hex(32))),
            ("twilio-credentials", format!("AC{} with auth {}", hex(32), hex(32))),
            ("sendgrid-api-key", format!("SG.{}.{}", b62(22), b62(43))),
            ("sendinblue-api-key", format!("xkeysib-{}-{}", hex(64), b62(16))),
            ("mailgun-api-key", format!("{}-{}", "key", hex(32))),
            ("mailchimp-api-key", format!("{}-us12", hex(32))),
            ("anthropic-api-key", format!("{}-ant-api03-{}", "sk", b62(93))),
            ("openai-api-key", format!("{}-proj-{}", "sk", b62(74))),
            ("openai-api-key", format!("{}-{}", "sk", b62(48))),
            ("huggingface-token", format!("hf_{}", b62(34))),
            ("groq-api-key", format!("gsk_{}", b62(52))),
            ("xai-api-key", format!("xai-{}", b62(80))),
            ("replicate-api-token", format!("r8_{}", b62(37))),
            ("perplexity-api-key", format!("pplx-{}", b62(48))),
            ("aws-access-key", format!("{}{}", "AKIA", "IOSFODNN7EXAMPLE")),
            ("aws-secret-key", format!("the aws secret is {} keep it", b62(40))),
            ("aws-secret-key", format!("aws_secret_access_key = {}", b62(40))),
            ("gcp-api-key", format!("{}{}", "AIza", b62(35))),
            ("google-oauth-client-secret", format!("GOCSPX-{}", b62(28))),
            ("azure-storage-connection-string", format!("DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={}==;EndpointSuffix=core.windows.net", b62(86))),
            ("azure-sas-token", format!("https://acme.blob.core.windows.net/c?sv=2022-11-02&sig={}%3D", b62(43))),
            ("azure-ad-client-secret", format!("secret {}8Q~{}", b62(3), b62(34))),
            ("digitalocean-token", format!("{}_v1_{}", "dop", hex(64))),
            ("digitalocean-token", format!("{}_v1_{}", "doo", hex(64))),
            ("databricks-token", format!("dapi{}", hex(32))),
            ("alibaba-access-key", format!("LTAI{}", b62(20))),
            ("heroku-api-key", format!("HRKU-AA{}", b62(58))),
            ("flyio-token", format!("fo1_{}", b62(43))),
            ("vault-token", format!("{}.{}", "hvs", b62(90))),
            ("vault-token", format!("{}.{}", "hvb", b62(138))),
            ("vault-token", format!("VAULT_ADDR ok, s.{}", b62(24))),
            ("terraform-cloud-token", format!("{}.atlasv1.{}", b62(14), b62(67))),
            ("doppler-token", format!("dp.pt.{}", b62(43))),
            ("pulumi-token", format!("pul-{}", hex(40))),
            ("tailscale-key", format!("tskey-auth-k{}CNTRL-{}", b62(8), b62(32))),
            ("supabase-token", format!("sbp_{}", hex(40))),
            ("grafana-token", format!("glc_{}", b62(40))),
            ("grafana-token", format!("glsa_{}_{}", b62(32), hex(8))),
            ("newrelic-key", format!("NRAK-{}", "A1B2C3D4E5".repeat(3).chars().take(27).collect::<String>())),
            ("sentry-token", format!("sntryu_{}", hex(64))),
            ("dynatrace-token", format!("dt0c01.{}.{}", b62(24), b62(64))),
            ("planetscale-token", format!("pscale_tkn_{}", b62(43))),
            ("openshift-token", format!("sha256~{}", b62(43))),
            ("harness-token", format!("pat.{}.{}.{}", b62(22), b62(24), b62(20))),
            ("mapbox-secret-token", format!("sk.eyJ{}.{}", b62(60), b62(22))),
            ("onepassword-token", format!("ops_eyJ{}", b62(250))),
            ("age-secret-key", format!("AGE-SECRET-KEY-1{}", "QPZRY9X8GF".repeat(6).chars().take(58).collect::<String>())),
            ("npm-token", format!("{}_{}", "npm", b62(36))),
            ("pypi-token", format!("{}-AgEIcHlwaS5vcmc{}", "pypi", b62(70))),
            ("rubygems-token", format!("rubygems_{}", hex(48))),
            ("artifactory-key", format!("AKCp{}", b62(69))),
            ("clojars-token", format!("CLOJARS_{}", b62(60))),
            ("prefect-token", format!("pnu_{}", b62(36))),
            ("readme-token", format!("rdme_{}", hex(70))),
            ("scalingo-token", format!("tk-us-{}", b62(48))),
            ("infracost-token", format!("ico-{}", b62(32))),
            ("octopus-deploy-key", format!("API-{}", "ABCDE12345".repeat(3).chars().take(26).collect::<String>())),
            ("stripe-live-key", format!("{}_live_{}", "sk", rep("a", 24))),
            ("stripe-live-key", format!("{}_live_{}", "rk", b62(24))),
            ("stripe-test-key", format!("{}_test_{}", "sk", b62(24))),
            ("stripe-webhook-secret", format!("whsec_{}", b62(32))),
            ("square-token", format!("sq0atp-{}", b62(22))),
            ("shopify-token", format!("{}_{}", "shpat", hex(32))),
            ("shopify-token", format!("{}_{}", "shpss", hex(32))),
            ("shopify-token", format!("{}_{}", "shpca", hex(32))),
            ("shopify-token", format!("{}_{}", "shppa", hex(32))),
            ("shippo-token", format!("shippo_live_{}", hex(40))),
            ("flutterwave-key", format!("FLWSECK_TEST-{}", hex(32))),
            ("easypost-key", format!("EZAK{}", b62(54))),
            ("duffel-token", format!("duffel_live_{}", b62(43))),
            ("facebook-token", format!("EAAC{}", b62(120))),
            ("private-key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----".to_string()),
            ("private-key", "-----BEGIN RSA PRIVATE KEY-----".to_string()),
            ("jwt", format!("eyJ{}.eyJ{}.{}", b62(20), b62(30), b62(43))),
            ("url-password", "clone https://bob:pa55word@example.com/repo.git".to_string()),
            ("url-password", "redis://:s3cretpass@cache.internal:6379/0".to_string()),
            ("authorization-header", format!("Authorization: Bearer {}", b62(40))),
            ("authorization-header", "curl -H 'Authorization: Basic dXNlcjpwYXNzd29yZA=='".to_string()),
            ("bearer-token", format!("send it as bearer {}", b62(32))),
            ("curl-basic-auth", "curl -u admin:hunter2x https://example.com".to_string()),
            ("secret-assignment", "password=hunter2".to_string()),
            ("secret-assignment", "DB_PASSWORD=correcthorse".to_string()),
            ("secret-assignment", "secret: s3cr3t-value".to_string()),
            ("secret-assignment", "token=abcd1234".to_string()),
            ("secret-assignment", "\"api_key\": \"AbCdEfGhIjKl\"".to_string()),
            ("secret-assignment", "client_secret=Zq8vLm2Xa".to_string()),
            // `password=X=…`: the value is everything after the first `=`.
            ("secret-assignment", "password=X=Tr0ub4dor".to_string()),
            // Found by the property test: a password that starts like a placeholder.
            ("secret-assignment", "password=%A%AA#aA".to_string()),
        ]
    }

    #[test]
    fn every_rule_finds_its_kind() {
        for (kind, text) in positives() {
            assert_eq!(classify(&text), Some(kind), "wrong kind for {text}");
            let redacted = redact(&text, &[]);
            assert!(
                redacted.contains(&format!("[REDACTED:{kind}]")),
                "{redacted}"
            );
            assert_eq!(
                classify(&redacted),
                None,
                "still found after redaction: {redacted}"
            );
        }
    }

    #[test]
    fn near_misses_are_not_credentials() {
        let clean = [
            // too short, wrong alphabet or missing the vendor's shape
            format!("{}_{}", "ghp", b62(10)),
            format!("{}-{}", "glpat", b62(8)),
            format!("{}_live_{}", "sk", "abc"),
            "sk_test_mode_enabled".to_string(),
            // one short of each vendor's length, or the wrong alphabet
            format!("{}_live_{}", "rk", b62(9)),
            format!("{}_v1_{}", "doo", "g".repeat(64)),
            format!("{}.{}", "hvs", b62(12)),
            format!("dp.pt.{}", b62(20)),
            format!("lin_api_{}", b62(20)),
            format!("glc_{}", b62(20)),
            format!("sbp_{}", "z".repeat(40)),
            format!("pul-{}", hex(20)),
            format!("sk.eyJ{}", b62(10)),
            format!("NRAK-{}", "abc"),
            format!("SG.{}.{}", b62(5), b62(5)),
            format!("{}-{}", "key", "z".repeat(32)),
            format!("dapi{}", "z".repeat(32)),
            format!("pypi-{}", b62(60)),
            format!("{}{}", "AIza", b62(20)),
            format!("{}-ant-{}", "sk", b62(8)),
            format!("{}-proj-{}", "sk", b62(8)),
            format!("{}-{}", "sk", "lowercaseonlyletterswithoutdigitsatall"),
            format!("SK{}", hex(31)),
            format!("AC{} and the docs", hex(32)),
            format!("{}_{}", "shpss", hex(31)),
            "123456:BB0123456789012345678901234567890123".to_string(),
            "mattermost: see the admin console".to_string(),
            format!("{}_{}", "npm", b62(12)),
            format!("{}_{}", "shpat", "not-hex-at-all-really-not-hex-xx"),
            format!("dapi{}", "xyz"),
            format!("{}_v1_{}", "dop", "short"),
            format!("hf_{}", "lowercase_identifier_name_here_long"),
            "hf_model_repository_name_lowercase_only".to_string(),
            format!("SK{}", "not-hex"),
            "SG.config.value".to_string(),
            "key-value store".to_string(),
            "pypi-package-name".to_string(),
            "sk-learn and sk-image are python packages".to_string(),
            "tskey-auth is the prefix".to_string(),
            format!("PMAK-{}", "abc"),
            "NRAK-short".to_string(),
            "pul-request".to_string(),
            "AIza is how Google keys start".to_string(),
            "lin_api_ is Linear's prefix".to_string(),
            "the aws secret is in the vault".to_string(),
            // a commit id near "secret": lower-case hex is no AWS key
            format!("secret rotated in {}", hex(40)),
            format!("aws deploy {}", hex(40).to_uppercase()),
            "Authorization: Bearer <token>".to_string(),
            "Authorization: Bearer $GITHUB_TOKEN".to_string(),
            "authorization: basic authentication is deprecated".to_string(),
            "bearer tokens expire after an hour".to_string(),
            "curl -u $USER:$PASSWORD https://example.com".to_string(),
            "https://user:<token>@github.com/o/r.git".to_string(),
            "https://x-access-token:${GITHUB_TOKEN}@github.com/o/r.git".to_string(),
            "https://user:***@github.com/o/r.git".to_string(),
            "https://example.com:8443/path@v2".to_string(),
            "ssh://git@example.com:2222/repo.git".to_string(),
            "com.example.MainActivityControllerTest.runAll.testSomethingVeryLongName".to_string(),
            "1234:AAA".to_string(),
            "AccountKey=<your key here>".to_string(),
            "API-REFERENCE-DOCUMENTATION".to_string(),
            "head 0123456789abcdef0123456789abcdef01234567".to_string(),
            "run 123e4567-e89b-12d3-a456-426614174000 failed".to_string(),
            "rotate the token: pending".to_string(),
            "password reset flow done".to_string(),
            "secret: none".to_string(),
            "token=<from the vault>".to_string(),
            "password=${DB_PASSWORD}".to_string(),
            "password=$DB_PASSWORD".to_string(),
            "api_key=%API_KEY%".to_string(),
            "token={{ secrets.TOKEN }}".to_string(),
            "token=[REDACTED:github-pat]".to_string(),
            "export GITHUB_TOKEN=$(gh auth token)".to_string(),
            "token = os.getenv('TOKEN')".to_string(),
            "let token = token_from_env(&api_url);".to_string(),
            "fn new(token: Option<Token>) -> Self".to_string(),
            "password: Optional[str] = None".to_string(),
            "secret::check_fields(\"the report\", &fields)".to_string(),
            "key = self.api_key".to_string(),
            "use_secret=true, token=null, max_token=4096".to_string(),
            "Bad credentials: Authorization: see the docs".to_string(),
            "credentials: Rotated.".to_string(),
            "token: short-lived, GitHub JavaScript".to_string(),
            "postgres://user:password@localhost/db".to_string(),
            "see https://github.com/o/r/pull/12".to_string(),
            "the key is in the CI secret store".to_string(),
            "feat/token-auth".to_string(),
        ];
        for text in clean {
            assert_eq!(classify(&text), None, "false positive: {text}");
        }
    }

    #[test]
    fn every_rule_compiles() {
        // Rules compile lazily (on a keyword): make sure none panics later.
        for rule in rules() {
            assert!(!rule.keywords.is_empty(), "{} has no keyword", rule.kind);
            assert!(rule.keywords.iter().all(|k| *k == k.to_ascii_lowercase()));
            rule.regex();
        }
    }

    #[test]
    fn yaml_key_and_value_are_judged_together() {
        let v: Value =
            serde_yaml_ng::from_str("db:\n  password: hunter2x\nnote: token expired\n").unwrap();
        let f = scan(&v);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].field, "db.password");
        assert_eq!(f[0].kind, "secret-assignment");
    }

    #[test]
    fn lines_are_numbered_from_one() {
        let text = format!("# Plan\n\nsteps\nuse {}_{}\n", "ghp", b62(36));
        let f = scan_lines("PLAN.md", &text);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].field, "PLAN.md line 4");
        assert_eq!(f[0].kind, "github-pat");
    }

    #[test]
    fn redaction_replaces_known_tokens_and_credential_shapes_only() {
        let token = format!("{}_{}", "ghp", b62(36));
        let text = format!(
            "Bad credentials: Authorization: token {token}; head {}",
            hex(40)
        );
        let r = redact(&text, &[&token]);
        assert!(!r.contains(&token), "{r}");
        assert!(r.contains(&hex(40)), "the commit id must survive: {r}");
        assert!(
            r.starts_with("Bad credentials: Authorization: token [REDACTED:"),
            "{r}"
        );
        // An odd token of our own, shaped like nothing, by its exact value.
        let odd = "plain-looking-value-42";
        assert_eq!(
            redact(&format!("echo {odd}!"), &[odd]),
            "echo [REDACTED:token]!"
        );
        // Too short to be a token: left alone rather than mangling ids.
        assert_eq!(redact("abc abc", &["abc"]), "abc abc");
        let mut json =
            serde_json::json!({"message": format!("no {token}"), "n": 7, "list": [token.clone()]});
        redact_json(&mut json, &[]);
        assert!(!json.to_string().contains(&token), "{json}");
        assert_eq!(json["n"], 7);
    }

    #[test]
    fn every_kind_is_listed_once_with_a_description() {
        let kinds = kinds();
        for (k, w) in &kinds {
            assert!(!w.is_empty());
            assert!(
                k.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                "{k}"
            );
        }
        let tested: std::collections::BTreeSet<&str> =
            positives().iter().map(|(k, _)| *k).collect();
        for (k, _) in &kinds {
            assert!(tested.contains(k), "no positive example for {k}");
        }
    }
}
