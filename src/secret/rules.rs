//! The rule table: which credential formats `secret` knows, as data. Each
//! row is a kind (a stable id), its description, the keywords that gate
//! it, the pattern and an optional check on what the pattern captured.
//! Rows are tried in order (specific before generic: the first rule that
//! matches names the kind). The value checks the rows use live here too.

use std::sync::OnceLock;

use regex::Regex;

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

pub(super) struct Rule {
    pub(super) kind: &'static str,
    pub(super) what: &'static str,
    /// Lower-case words one of which any match contains (as gitleaks'
    /// keywords): a text without any is not searched with this rule, and
    /// the rule's regex is compiled only once a text has one. Most texts
    /// (ids, states, names) have none, so checking them costs little.
    pub(super) keywords: &'static [&'static str],
    pub(super) pattern: &'static str,
    pub(super) re: OnceLock<Regex>,
    /// Capture group 1, when the pattern has one, is the secret itself
    /// (what redaction replaces); else the whole match.
    pub(super) check: Option<Check>,
}

impl Rule {
    pub(super) fn regex(&self) -> &Regex {
        self.re.get_or_init(|| {
            Regex::new(self.pattern).unwrap_or_else(|e| panic!("secret rule {}: {e}", self.kind))
        })
    }
}

/// Words that stand for a value rather than being one.
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

/// The value is not a placeholder (`<token>`, `${TOKEN}`, `***`, an
/// earlier redaction) nor a word that stands for one (`password`, `token`).
fn real(v: &str) -> bool {
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

/// `${TOKEN}`, `$TOKEN`, `{{ token }}`, `%TOKEN%`, `***`, `xxxx`,
/// `[REDACTED…]`: the whole value is a placeholder. A real password may well
/// *start* with `$`, `%` or `{`, so only a complete placeholder is excused.
pub(super) fn is_placeholder(value: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^(?:<[^<>]*>|\$\{[^{}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|\{\{[^{}]*\}\}|%[A-Za-z_][A-Za-z0-9_]*%|[*xX.]+|\[REDACTED(?::[a-z0-9-]+)?\])$")
            .expect("the placeholder pattern is a valid regex")
    })
    .is_match(value)
}

/// The table, in the order the rules are tried.
#[rustfmt::skip]
const TABLE: &[Spec] = &[
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

/// Every rule, in the order they are tried (specific before generic: the
/// first rule that matches names the kind).
pub(super) fn rules() -> &'static [Rule] {
    static RULES: OnceLock<Vec<Rule>> = OnceLock::new();
    RULES.get_or_init(|| {
        TABLE
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
