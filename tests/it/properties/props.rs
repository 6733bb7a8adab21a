//! Property tests for the parsers and validators of the foundation: names,
//! commit-message trailers, record YAML round-trips, and hook-block merging.
//! Case counts scale with `PROPTEST_CASES` (CI runs the default 256).

use git_swarm::names::{is_valid_address, is_valid_name};
use git_swarm::records::plan::PlanRecord;
use git_swarm::store::yaml;
use git_swarm::store::{parse_journal_entry, Event};
use git_swarm::text::first_forbidden;
use git_swarm::worktree::setup::merge_hook;
use proptest::prelude::*;

/// The naming rule written independently as a regex, to cross-check the hand-written validator.
fn name_by_regex(s: &str) -> bool {
    let re = regex::Regex::new(r"^[a-z0-9][a-z0-9._-]{0,62}$").unwrap();
    re.is_match(s) && !s.contains("..") && !s.ends_with(".lock") && !s.ends_with('.')
}

/// A name that is valid so far: `[a-z0-9]` then `len - 1` of `[a-z0-9._-]`.
fn plausible(len: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = String> {
    len.prop_flat_map(|n| {
        let re = format!("[a-z0-9][a-z0-9._-]{{{}}}", n.max(1) - 1);
        proptest::string::string_regex(&re).expect("a valid regex")
    })
}

/// Names on purpose at every edge of the rule, not only random strings
/// (which almost never hold `..`, end in `.lock` or reach 63 characters).
fn edge_names() -> impl Strategy<Value = String> {
    prop_oneof![
        // Anything from a wider alphabet.
        2 => "[a-zA-Z0-9._/ @-]{0,70}",
        // Plausible names of any length, and (often) right at the 63/64 limit.
        2 => plausible(1..=63),
        6 => plausible(62..=65),
        // `..` somewhere, also at the very start or end.
        1 => (plausible(1..=30), "[a-z0-9._-]{0,30}").prop_map(|(a, b)| format!("{a}..{b}")),
        1 => plausible(1..=61).prop_map(|a| format!("{a}..")),
        // `.lock` at the end (invalid), or almost (`.lock` inside, `.locks`, `lock`).
        1 => plausible(1..=58).prop_map(|a| format!("{a}.lock")),
        1 => (plausible(1..=20), "[a-z0-9_-]{1,10}").prop_map(|(a, b)| format!("{a}.lock{b}")),
        1 => plausible(1..=58).prop_map(|a| format!("{a}lock")),
        1 => plausible(1..=58).prop_map(|a| format!("{a}.loc")),
        1 => plausible(1..=58).prop_map(|a| format!("{a}.LOCK")),
        // Ending in `.`, or starting with what may only follow.
        1 => plausible(1..=62).prop_map(|a| format!("{a}.")),
        1 => ("[._-]", plausible(1..=62)).prop_map(|(c, a)| format!("{c}{a}")),
        // One character git or the file system would mind.
        1 => (
            plausible(1..=30),
            "[A-Z/ :~^?*\\[@{}é]",
            "[a-z0-9._-]{0,30}"
        )
            .prop_map(|(a, c, b)| format!("{a}{c}{b}")),
        1 => Just(String::new()),
    ]
}

/// Addresses at the edges of `[A-Za-z0-9][A-Za-z0-9._@-]{0,63}`.
fn edge_addresses() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => "[a-zA-Z0-9._@/: -]{0,70}",
        4 => "[A-Za-z0-9][A-Za-z0-9._@-]{62,64}",
        1 => "[._@-][A-Za-z0-9._@-]{0,10}",
        1 => (
            "[A-Za-z0-9][A-Za-z0-9._@-]{0,20}",
            "[/: ~é]",
            "[A-Za-z0-9]{0,5}"
        )
            .prop_map(|(a, c, b)| format!("{a}{c}{b}")),
        1 => Just(String::new()),
        // The ref-name edges: `..`, a `.lock` or `.` ending (issue 17).
        1 => (
            "[A-Za-z0-9][A-Za-z0-9._@-]{0,20}",
            prop_oneof![Just(".."), Just(".lock"), Just(".LOCK"), Just(".")],
            "[A-Za-z0-9]{0,2}"
        )
            .prop_map(|(a, c, b)| format!("{a}{c}{b}")),
    ]
}

/// The address rule written independently: the regex, plus git's ref rules
/// (an address ends every packet id, which is a ref name).
fn address_by_regex(s: &str) -> bool {
    let re = regex::Regex::new(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$").unwrap();
    re.is_match(s)
        && !s.contains("..")
        && !s.to_ascii_lowercase().ends_with(".lock")
        && !s.ends_with('.')
}

proptest! {
    #[test]
    fn name_validator_agrees_with_the_spec_regex(s in edge_names()) {
        prop_assert_eq!(is_valid_name(&s), name_by_regex(&s), "{:?}", s);
    }

    #[test]
    fn valid_names_are_valid_git_ref_components(s in edge_names()) {
        if is_valid_name(&s) {
            let refname = format!("refs/swarm/plans/{s}");
            prop_assert!(gix::refs::FullName::try_from(refname.as_str()).is_ok(), "{}", refname);
        }
    }

    #[test]
    fn address_validator_agrees_with_the_spec_regex(s in edge_addresses()) {
        prop_assert_eq!(is_valid_address(&s), address_by_regex(&s), "{:?}", s);
    }

    #[test]
    fn valid_addresses_make_valid_packet_refs(s in edge_addresses()) {
        if is_valid_address(&s) {
            for suffix in ["", "-2"] {
                let refname = format!("refs/swarm/packets/auth/20260101T000000Z-{s}{suffix}");
                prop_assert!(gix::refs::FullName::try_from(refname.as_str()).is_ok(), "{}", refname);
            }
        }
    }

    #[test]
    fn trailers_round_trip_through_commit_messages(
        kind in "[a-z][a-z-]{0,20}",
        actor in "[A-Za-z0-9][A-Za-z0-9._@-]{0,30}",
        epoch in proptest::option::of(0u64..1_000_000),
        summary in "[^\n\r]{0,80}",
        extra in proptest::collection::vec(("[A-Z][A-Za-z-]{0,15}", "[!-~][ -~]{0,30}"), 0..4),
    ) {
        let mut event = Event::new(&kind, &actor, summary.clone());
        if let Some(e) = epoch { event = event.epoch(e); }
        let extra: Vec<(String, String)> = extra
            .into_iter()
            .filter(|(k, _)| !k.starts_with("Swarm-"))
            .map(|(k, v)| (format!("X-{k}"), v.trim().to_string()))
            .collect();
        for (k, v) in &extra { event = event.trailer(k, v.clone()); }
        let entry = parse_journal_entry("0".repeat(40), 0, &event.message(), 1);
        prop_assert_eq!(&entry.event, &kind);
        prop_assert_eq!(&entry.actor, &actor);
        prop_assert_eq!(entry.epoch, epoch);
        prop_assert_eq!(entry.summary.as_str(), summary.trim());
        for (k, v) in &extra {
            // The last value of a repeated key wins, as in the parser's map.
            let last = extra.iter().rev().find(|(k2, _)| k2 == k).map(|(_, v2)| v2).unwrap();
            prop_assert_eq!(entry.trailers.get(k), Some(last), "{} {}", k, v);
        }
    }

    #[test]
    fn plan_records_round_trip_and_keep_unknown_fields(
        title in any::<String>().prop_filter("printable", |s| first_forbidden(s, false).is_none()),
        parent in proptest::option::of("[a-z][a-z0-9-]{0,20}"),
        contract in any::<String>().prop_filter("printable", |s| first_forbidden(s, true).is_none()),
        extra_key in "x_[a-z]{1,10}",
        extra_val in any::<String>().prop_filter("printable", |s| first_forbidden(s, false).is_none()),
    ) {
        // A record as an older or newer git-swarm might have written it: one unknown field.
        let base = format!("schema: swarm-plan/v1\nplan: p\n{extra_key}: placeholder\n");
        let mut rec: PlanRecord = yaml::parse(base.as_bytes(), "swarm-plan", "test").unwrap();
        rec.title = title.clone();
        rec.parent = parent.clone();
        rec.contract = contract.clone();
        rec.extra.insert(extra_key.clone(), serde_yaml_ng::Value::String(extra_val.clone()));
        let yaml = yaml::to_yaml(&rec).unwrap();
        let again: PlanRecord = yaml::parse(&yaml, "swarm-plan", "test").unwrap();
        prop_assert_eq!(&again.title, &title);
        prop_assert_eq!(&again.parent, &parent);
        prop_assert_eq!(&again.contract, &contract);
        prop_assert_eq!(again.extra.get(&extra_key).and_then(|v| v.as_str()), Some(extra_val.as_str()));
    }

    #[test]
    fn garbage_never_panics_the_record_parser(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = yaml::parse::<PlanRecord>(&bytes, "swarm-plan", "fuzz");
    }

    #[test]
    fn schema_majors_above_one_are_refused(major in 2u32..1000) {
        let yaml = format!("schema: swarm-plan/v{major}\nplan: p\n");
        let err = yaml::parse::<PlanRecord>(yaml.as_bytes(), "swarm-plan", "t").unwrap_err();
        prop_assert_eq!(err.code.as_str(), "SCHEMA_UNSUPPORTED");
    }

    #[test]
    fn hook_merge_is_idempotent_and_keeps_every_user_line(
        lines in proptest::collection::vec("[ -~]{0,40}", 0..8),
        shebang in proptest::bool::ANY,
        hook in prop_oneof![Just("pre-commit"), Just("commit-msg"), Just("pre-push")],
    ) {
        let mut user = String::new();
        if shebang { user.push_str("#!/bin/bash\n"); }
        for l in &lines {
            if !l.contains("git-swarm") { user.push_str(l); user.push('\n'); }
        }
        let once = merge_hook(Some(&user), hook);
        prop_assert_eq!(merge_hook(Some(&once), hook), once.clone());
        let mut rest = once.as_str();
        for l in user.lines().filter(|l| !l.starts_with("#!")) {
            let at = rest.find(l);
            prop_assert!(at.is_some(), "lost user line {:?}", l);
            rest = &rest[at.unwrap() + l.len()..];
        }
        prop_assert_eq!(once.matches("# >>> git-swarm >>>").count(), 1);
    }
}

/// The edge strategies do what they are for: over a fixed run they produce
/// valid and invalid names, names of exactly 63 and 64 characters, and names
/// with `..`, a `.lock` or `.` ending, so the property above meets them.
#[test]
fn the_name_strategies_reach_every_edge() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, TestRunner};
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        proptest::test_runner::TestRng::deterministic_rng(
            proptest::test_runner::RngAlgorithm::ChaCha,
        ),
    );
    let strategy = edge_names();
    let names: Vec<String> = (0..2000)
        .map(|_| strategy.new_tree(&mut runner).unwrap().current())
        .collect();
    let seen = |what: &str, f: &dyn Fn(&String) -> bool| {
        assert!(names.iter().any(f), "no name {what} in 2000");
    };
    seen("valid", &|n| is_valid_name(n));
    seen("valid at 63", &|n| n.len() == 63 && is_valid_name(n));
    seen("at 64", &|n| n.len() == 64 && name_by_regex(&n[..63]));
    seen("with ..", &|n| n.contains("..") && n.len() > 2);
    seen("ending .lock", &|n| n.ends_with(".lock"));
    seen("with .lock inside", &|n| {
        n.contains(".lock") && !n.ends_with(".lock")
    });
    seen("ending .", &|n| n.ends_with('.') && !n.ends_with(".."));
    seen("starting with . _ or -", &|n| {
        n.starts_with(['.', '_', '-'])
    });
    seen("non-ASCII", &|n| !n.is_ascii());
    seen("empty", &|n| n.is_empty());
}

/// Real credential formats, as the hosts issue them, each with the kind it
/// must be reported as. (Regexes, not literals: nothing here looks like a
/// leaked key to a push-protection scanner.)
fn credential() -> impl Strategy<Value = (&'static str, String)> {
    let k = |kind: &'static str, re: &'static str| re.prop_map(move |s: String| (kind, s));
    prop_oneof![
        k("github-pat", "ghp_[A-Za-z0-9]{36}"),
        k("github-oauth-token", "gho_[A-Za-z0-9]{36}"),
        k("github-app-token", "gh[su]_[A-Za-z0-9]{36}"),
        k("github-refresh-token", "ghr_[A-Za-z0-9]{36}"),
        k("github-fine-grained-pat", "github_pat_[A-Za-z0-9_]{82}"),
        k("gitlab-pat", "glpat-[A-Za-z0-9_-]{20}"),
        k(
            "slack-token",
            "xox[abpors]-[0-9]{10,12}-[0-9]{10,12}-[A-Za-z0-9]{24}"
        ),
        k("aws-access-key", "(AKIA|ASIA)[A-Z0-9]{16}"),
        k(
            "private-key",
            "-----BEGIN (RSA |EC |OPENSSH |)PRIVATE KEY-----"
        ),
        k(
            "jwt",
            "eyJ[A-Za-z0-9_-]{10,30}\\.eyJ[A-Za-z0-9_-]{10,40}\\.[A-Za-z0-9_-]{20,43}"
        ),
        k(
            "url-password",
            "https://[a-z]{3,8}:[A-Za-z0-9]{8,20}@github\\.com/[a-z]{2,8}/[a-z]{2,8}"
        ),
        k(
            "url-password",
            "redis://:[A-Za-z0-9]{8,20}@[a-z]{3,8}(:6379)?"
        ),
        k(
            "secret-assignment",
            "(password|api_key|secret|token)=[A-Za-z0-9!#%]{8,20}"
        ),
        k("secret-assignment", "password=[A-Za-z]=[A-Za-z0-9]{4,12}"),
        k("stripe-live-key", "[sr]k_live_[A-Za-z0-9]{24,99}"),
        k("stripe-test-key", "[sr]k_test_[A-Za-z0-9]{24,99}"),
        k("gcp-api-key", "AIza[A-Za-z0-9_-]{35}"),
        k(
            "openai-api-key",
            "sk-proj-[A-Za-z0-9_-]{74}T3BlbkFJ[A-Za-z0-9_-]{74}"
        ),
        k("anthropic-api-key", "sk-ant-api03-[A-Za-z0-9_-]{93}AA"),
        k("npm-token", "npm_[A-Za-z0-9]{36}"),
        k("pypi-token", "pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,120}"),
        k("twilio-api-key", "SK[0-9a-f]{32}"),
        k(
            "sendgrid-api-key",
            "SG\\.[A-Za-z0-9_-]{22}\\.[A-Za-z0-9_-]{43}"
        ),
        k("mailgun-api-key", "key-[0-9a-f]{32}"),
        k(
            "azure-storage-connection-string",
            "AccountName=[a-z]{3,10};AccountKey=[A-Za-z0-9+/]{86}=="
        ),
        k("digitalocean-token", "do[op]_v1_[a-f0-9]{64}"),
        k("huggingface-token", "hf_[a-z]{10}[A-Z]{10}[a-z]{14}"),
        k("databricks-token", "dapi[a-f0-9]{32}"),
        k("shopify-token", "shp(at|ss|ca|pa)_[a-f0-9]{32}"),
        k("telegram-bot-token", "[0-9]{8,10}:AA[A-Za-z0-9_-]{33}"),
        k("vault-token", "hvs\\.[A-Za-z0-9_-]{90,120}"),
        k("doppler-token", "dp\\.pt\\.[A-Za-z0-9]{43}"),
        k("linear-api-key", "lin_api_[A-Za-z0-9]{40}"),
        k("postman-api-key", "PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
        k("grafana-token", "glc_[A-Za-z0-9+/]{32,80}"),
        k("supabase-token", "sbp_[a-f0-9]{40}"),
        k(
            "tailscale-key",
            "tskey-auth-[A-Za-z0-9]{6,12}-[A-Za-z0-9]{20,32}"
        ),
        k("newrelic-key", "NRAK-[A-Z0-9]{27}"),
        k("pulumi-token", "pul-[a-f0-9]{40}"),
        k(
            "mapbox-secret-token",
            "sk\\.eyJ[A-Za-z0-9_-]{60}\\.[A-Za-z0-9_-]{22}"
        ),
        k(
            "authorization-header",
            "Authorization: (Bearer|Basic|token) [A-Za-z]{4,10}[0-9]{2,4}[A-Za-z0-9]{10,30}"
        ),
    ]
}

/// A word of prose or a code identifier.
fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(vec![
            // Not "aws"/"secret" next to a 40-character blob, nor "Authorization:
            // token" or "bearer" before an identifier: those are the shapes of a
            // key, and are meant to be found.
            "lorem",
            "ipsum",
            "dolor",
            "sit",
            "amet",
            "token",
            "password",
            "key",
            "rotate",
            "the",
            "credentials",
            "authorization",
            "api",
            "stripe",
            "deploy",
            "base64",
            "hash",
            "commit",
            "sk",
            "hf",
            "npm",
            "pypi",
            "vault",
            "expired",
            "Rotated.",
            "GitHub",
            "JavaScript",
            "PostgreSQL",
            "short-lived",
            "feat/login",
        ])
        .prop_map(str::to_string),
        "[a-z_][a-z0-9_]{0,30}",
        "[A-Z][a-z]{1,8}([A-Z][a-z]{1,8}){0,3}",
        "[a-z]{1,10}(-[a-z]{1,10}){0,3}",
    ]
}

/// Text that is no credential: commit ids, UUIDs, base64 blobs of every
/// length, file paths, URLs without a password, prose and identifiers.
fn benign() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9a-f]{40}",
        "[0-9a-f]{64}",
        "[0-9A-F]{40}",
        "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        "[A-Za-z0-9+/]{4,300}={0,2}",
        "[A-Za-z0-9_-]{4,300}",
        "(/[a-z0-9_.-]{1,12}){1,6}",
        "(\\./)?([a-z0-9_-]{1,10}/){0,4}[a-z0-9_-]{1,10}\\.(rs|md|yaml|toml|txt)",
        "https://[a-z]{3,10}\\.(com|org|dev)(/[a-z0-9_-]{1,10}){0,4}(\\?(page|q|ref|tab)=[a-z0-9]{1,10})?",
        "ssh://git@[a-z]{3,10}\\.com(:[0-9]{2,4})?/[a-z]{2,8}/[a-z]{2,8}\\.git",
        "git@[a-z]{3,10}\\.com:[a-z]{2,8}/[a-z]{2,8}\\.git",
        proptest::collection::vec(word(), 1..12).prop_map(|w| w.join(" ")),
    ]
}

proptest! {
    #[test]
    fn every_credential_format_is_found_wherever_it_stands(
        before in "[a-z ]{0,30}",
        (kind, secret) in credential(),
        after in "[a-z ]{0,30}",
    ) {
        let text = format!("{before} {secret} {after}");
        prop_assert_eq!(git_swarm::secret::classify(&text), Some(kind), "{:?}", secret);
        // Redacted, nothing of it is left and nothing is found any more.
        let redacted = git_swarm::secret::redact(&text, &[]);
        prop_assert!(!redacted.contains(&secret), "{}", redacted);
        prop_assert_eq!(git_swarm::secret::classify(&redacted), None, "{}", redacted);
    }

    #[test]
    fn commit_ids_and_uuids_are_not_credentials(
        sha in "[0-9a-f]{40}",
        uuid in "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        prose in "[a-z ]{0,40}",
    ) {
        for text in [sha.clone(), uuid.clone(), format!("{prose} {sha} {uuid} {prose}"), format!("head: {sha}"), format!("run id: {uuid}")] {
            prop_assert_eq!(git_swarm::secret::classify(&text), None, "{}", text);
        }
    }

    #[test]
    fn a_benign_corpus_has_no_finding(parts in proptest::collection::vec(benign(), 1..6)) {
        let text = parts.join(" ");
        prop_assert_eq!(git_swarm::secret::classify(&text), None, "{}", text);
        // Redaction leaves what is not a credential alone.
        prop_assert_eq!(git_swarm::secret::redact(&text, &[]), text);
    }

    #[test]
    fn remote_urls_of_every_form_name_the_same_repository(
        owner in "[A-Za-z0-9][A-Za-z0-9-]{0,20}",
        name in "[A-Za-z0-9_.-]{1,30}",
        git_suffix in proptest::bool::ANY,
        host in prop_oneof![Just("github.com"), Just("ghe.example.com")],
    ) {
        // `.git` is a suffix, not the name, and "." / ".." are no repository.
        prop_assume!(name != "." && name != ".." && !name.ends_with(".git"));
        let suffix = if git_suffix { ".git" } else { "" };
        for url in [
            format!("https://{host}/{owner}/{name}{suffix}"),
            format!("https://x-access-token:abc@{host}/{owner}/{name}{suffix}"),
            format!("git@{host}:{owner}/{name}{suffix}"),
            format!("ssh://git@{host}/{owner}/{name}{suffix}"),
            format!("ssh://git@{host}:22/{owner}/{name}{suffix}"),
        ] {
            let repo = git_swarm::integrations::github::client::RepoId::from_remote_url(&url);
            prop_assert_eq!(
                repo.as_ref().map(|r| (r.owner.as_str(), r.name.as_str())),
                Some((owner.as_str(), name.as_str())),
                "{}", url
            );
        }
        let parsed = git_swarm::integrations::github::client::RepoId::parse(&format!("{owner}/{name}")).unwrap();
        prop_assert_eq!((parsed.owner, parsed.name), (owner, name));
    }
}

/// The project's own prose and code, line by line, is no credential: the
/// README and the docs/ pages (docs/security.md names every kind and prefix)
/// and every source file but the detector's own (whose tests build fakes on
/// purpose).
#[test]
fn the_readme_and_the_sources_have_no_finding() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<_> = crate::support::harness::project_docs()
        .into_iter()
        .map(|(path, _)| path)
        .collect();
    assert!(files.len() > 10, "README and the docs/ pages: {files:?}");
    files.push(root.join("templates/PLAN.md"));
    let mut stack = vec![root.join("src")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") && !p.ends_with("secret.rs") {
                files.push(p);
            }
        }
    }
    let mut lines = 0;
    let mut found = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        // Unit tests at the end of a source file may hold fakes on purpose
        // (a URL with a password, to test that it is stripped).
        let text = text.split("#[cfg(test)]").next().unwrap();
        for (i, line) in text.lines().enumerate() {
            lines += 1;
            if let Some(kind) = git_swarm::secret::classify(line) {
                found.push(format!("{}:{}: {kind}: {line}", f.display(), i + 1));
            }
        }
    }
    assert!(lines > 10_000, "the corpus is too small: {lines} lines");
    assert!(found.is_empty(), "false positives:\n{}", found.join("\n"));
}

/// A model's or assistant's name as a co-author would write it: any case,
/// maybe a version or a model word after it.
fn model_name() -> impl Strategy<Value = String> {
    let base = prop_oneof![
        Just("Claude"),
        Just("Sonnet"),
        Just("Opus"),
        Just("Haiku"),
        Just("GPT"),
        Just("GPT-4o"),
        Just("Codex"),
        Just("Gemini"),
        Just("Copilot"),
        Just("Cursor"),
        Just("Devin"),
        Just("Aider"),
    ];
    let tail = prop_oneof![
        Just(""),
        Just(" 4"),
        Just(" 4.5"),
        Just(" Sonnet 4"),
        Just(" Opus"),
        Just(" CLI"),
        Just(" Agent"),
    ];
    (base, tail, any::<u32>()).prop_map(|(b, t, case)| {
        let name = format!("{b}{t}");
        match case % 3 {
            0 => name,
            1 => name.to_lowercase(),
            _ => name.to_uppercase(),
        }
    })
}

proptest! {
    #[test]
    fn a_co_author_named_as_a_model_or_at_a_bot_address_is_refused(
        name in model_name(),
        human in "[A-Z][a-z]{2,8}( [A-Z][a-z]{2,10})?",
        mail in "[a-z]{2,8}@[a-z]{3,8}\\.(com|org|dev)",
        id in 1u32..99_999_999,
        bot in prop_oneof![Just("bot".to_string()), "[a-z]{2,10}\\[bot\\]", "[a-z]{2,10}-bot"],
        login in "[a-z][a-z0-9]{2,12}",
    ) {
        use git_swarm::guards::attribution::classify;
        // A random first name may be an assistant's own ("Devin").
        let first = human.split(' ').next().unwrap_or("").to_lowercase();
        prop_assume!(!["claude", "sonnet", "opus", "haiku", "gpt", "codex", "gemini", "copilot", "cursor", "devin", "aider", "grok", "jules", "openai", "chatgpt", "codeium", "windsurf", "tabnine", "anthropic"].contains(&first.as_str()));
        prop_assume!(!["copilot", "claude"].contains(&login.as_str()));
        let by_name = format!("Co-authored-by: {name} <{mail}>");
        prop_assert!(classify(&by_name).is_some(), "{}", by_name);
        let plain_bot = format!("Co-authored-by: {human} <{bot}@users.noreply.github.com>");
        prop_assert!(classify(&plain_bot).is_some(), "{}", plain_bot);
        let id_bot = format!("Co-authored-by: {human} <{id}+{bot}@users.noreply.github.com>");
        prop_assert!(classify(&id_bot).is_some(), "{}", id_bot);
        // A person, at their own address or their GitHub noreply one, passes
        // (unless the login happens to end like a bot's).
        let person = format!("Co-authored-by: {human} <{mail}>");
        prop_assert!(classify(&person).is_none(), "{}", person);
        let noreply = format!("Co-authored-by: {human} <{id}+{login}@users.noreply.github.com>");
        prop_assert!(classify(&noreply).is_none(), "{}", noreply);
    }
}
