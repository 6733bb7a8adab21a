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
//! look machine-made. `tests/it/properties/props.rs` holds that line on a benign corpus.

mod assignment;
mod rules;

use std::ops::Range;

use serde_yaml_ng::Value;

use crate::error::{Code, Error};
use assignment::{ASSIGNMENT_KIND, ASSIGNMENT_WHAT};
use rules::rules;

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
    assignment::hits(text, &lower, &mut out);
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
pub fn refusal(code: Code, subject: &str, findings: &[Finding]) -> Error {
    let fields: Vec<String> = findings
        .iter()
        .map(|f| format!("`{}` ({}: {})", f.field, f.kind, f.description))
        .collect();
    Error::new(
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
        Err(refusal(Code::SecretInText, subject, &findings))
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
