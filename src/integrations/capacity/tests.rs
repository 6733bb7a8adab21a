use serde_json::json;

use super::source::parse_kit;
use super::spend::{check, parse_budget, Budget, SessionSpend, Tokens};
use super::*;

const T: Thresholds = Thresholds {
    low: LOW,
    critical: CRITICAL,
};

fn kit(text: &str) -> Reading {
    parse_kit(text, "2026-01-01T00:00:00Z").expect("a reading")
}

#[test]
fn the_kit_json_is_read_with_its_own_and_other_field_names() {
    let r = kit(
        r#"{"state":"ok","percent_free":64,"window":"five_hour","resets_at":"2026-01-01T05:00:00Z","account":"work1"}"#,
    );
    assert_eq!(r.state, State::Ok);
    assert_eq!(r.percent_free, Some(64.0));
    assert_eq!(r.window.as_deref(), Some("five_hour"));
    assert_eq!(r.account.as_deref(), Some("@work1"));
    assert_eq!(r.line(), "ok 64% @work1");
    let r = kit(
        r#"{"self":{"status":"low","free_percent":"20%","binding_window":"7d","reset_at":1767243600,"profile":"@p"}}"#,
    );
    assert_eq!(r.state, State::Low);
    assert_eq!(r.percent_free, Some(20.0));
    assert_eq!(r.resets_at.as_deref(), Some("2026-01-01T05:00:00Z"));
    let r = kit(r#"{"percent_used": 93}"#);
    assert_eq!(settle(r, T, None).state, State::Critical);
    for none in ["", "not json", "[]", "{}", r#"{"window":"5h"}"#] {
        assert!(parse_kit(none, "x").is_none(), "{none}");
    }
}

#[test]
fn thresholds_and_the_cap_only_lower_a_reading() {
    let ok = kit(r#"{"state":"ok","percent_free":64,"account":"@work1"}"#);
    assert_eq!(settle(ok.clone(), T, None).state, State::Ok);
    let capped = settle(ok.clone(), T, Some("@work1=8"));
    assert_eq!(
        (capped.state, capped.percent_free),
        (State::Critical, Some(8.0))
    );
    // Another account's cap does nothing; a cap above the reading never raises it.
    assert_eq!(
        settle(ok.clone(), T, Some("@other=8")).percent_free,
        Some(64.0)
    );
    let low = kit(r#"{"state":"low","percent_free":20,"account":"work1"}"#);
    assert_eq!(settle(low, T, Some("@work1=90")).percent_free, Some(20.0));
    // A cap never turns unknown into a figure.
    let unknown = Reading::unknown(Some("work1"), String::new());
    assert_eq!(settle(unknown, T, Some("@work1=8")).state, State::Unknown);
    // The kit's thresholds.
    let t = Thresholds {
        low: 70.0,
        critical: 65.0,
    };
    assert_eq!(settle(ok.clone(), t, None).state, State::Critical);
    // A stated critical is kept whatever the percentage.
    let stated = kit(r#"{"state":"critical","percent_free":50}"#);
    assert_eq!(settle(stated, T, None).state, State::Critical);
}

#[test]
fn verdicts_at_a_boundary() {
    let mk = |s: State| Reading {
        state: s,
        ..Reading::unknown(None, String::new())
    };
    assert_eq!(verdict(&mk(State::Ok), None, 60.0).action, Action::Go);
    assert_eq!(verdict(&mk(State::Unknown), None, 60.0).action, Action::Go);
    assert_eq!(
        verdict(&mk(State::Low), None, 60.0).action,
        Action::FinishStep
    );
    assert_eq!(
        verdict(&mk(State::Critical), Some(99.0), 60.0).action,
        Action::HandOff("capacity_critical")
    );
    assert_eq!(
        verdict(&mk(State::Unknown), Some(65.0), 60.0).action,
        Action::HandOff("context_pressure")
    );
    assert_eq!(verdict(&mk(State::Ok), Some(59.9), 60.0).action, Action::Go);
}

#[test]
fn host_figures() {
    let sl = json!({"context_window": {"used_percentage": 65},
        "rate_limits": {"five_hour": {"used_percentage": 93, "resets_at": 1767243600},
                        "seven_day": {"used_percentage": 40, "resets_at": 1767800000}}});
    let f = Figures::from_status_line(&sl);
    let r = settle(f.reading(Some("w"), String::new()), T, None);
    assert_eq!(r.state, State::Critical);
    assert_eq!(r.percent_free, Some(7.0));
    assert_eq!(r.window.as_deref(), Some("five_hour"));
    assert_eq!(r.context_used, Some(65.0));
    // An API-key session: no rate limits, capacity unknown.
    let f = Figures::from_status_line(&json!({"context_window": {"used_percentage": 5}}));
    assert_eq!(f.reading(None, String::new()).state, State::Unknown);
    let ev = json!({"type": "rate_limit_event", "rate_limit_info": {"status": "allowed_warning", "resetsAt": 1767243600, "rateLimitType": "five_hour", "utilization": 0.8}});
    let r = settle(
        Figures::from_stream_event(&ev).reading(None, String::new()),
        T,
        None,
    );
    assert_eq!((r.state, r.percent_free), (State::Low, Some(20.0)));
    let ev = json!({"type": "rate_limit_event", "rate_limit_info": {"status": "allowed"}});
    assert_eq!(
        Figures::from_stream_event(&ev)
            .reading(None, String::new())
            .state,
        State::Unknown
    );
    let ev = json!({"type": "rate_limit_event", "rate_limit_info": {"status": "rejected", "resetsAt": 1767243600}});
    assert_eq!(
        Figures::from_stream_event(&ev)
            .reading(None, String::new())
            .state,
        State::Critical
    );
    let h = Figures::from_headers([
        ("Anthropic-Ratelimit-Unified-5h-Utilization", "0.93"),
        ("anthropic-ratelimit-unified-5h-reset", "1767243600"),
        ("anthropic-ratelimit-unified-7d-utilization", "0.1"),
    ]);
    let r = h.reading(None, String::new());
    assert_eq!(r.window.as_deref(), Some("five_hour"));
    assert!((r.percent_free.unwrap() - 7.0).abs() < 1e-9);
    assert_eq!(r.resets_at.as_deref(), Some("2026-01-01T05:00:00Z"));
}

#[test]
fn transcript_usage_counts_each_message_once() {
    let line = |id: &str, input: u64, out: u64| {
        json!({"type": "assistant", "message": {"id": id, "model": "claude-sonnet-4-5",
            "usage": {"input_tokens": input, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 10, "output_tokens": out}}})
        .to_string()
    };
    let text = [
        json!({"type": "user", "message": {"content": "hi"}}).to_string(),
        line("m1", 1000, 5),
        line("m1", 1000, 7),
        line("m2", 129_890, 3),
    ]
    .join("\n");
    let u = transcript::parse(&text);
    assert_eq!(
        u.tokens,
        Tokens {
            input: 130_890,
            cache_read: 200,
            cache_write: 20,
            output: 10
        }
    );
    assert_eq!(u.context_used(None), Some(65.0));
    assert_eq!(transcript::parse("").context_used(None), None);
}

/// A stop hook may run before the host has created or finished its
/// transcript: the settled read waits for the turn that ended it, and a
/// file with no turns in this format (another host's) is not waited for.
#[test]
fn a_settled_read_waits_for_a_transcript_written_after_the_hook_started() {
    let dir = std::env::temp_dir().join(format!("gs-transcript-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.jsonl");
    let _ = std::fs::remove_file(&path);
    let user = json!({"type": "user", "message": {"content": "hi"}}).to_string();
    let done = json!({"type": "assistant", "message": {"id": "m1", "stop_reason": "end_turn",
        "usage": {"input_tokens": 130_000, "output_tokens": 3}}})
    .to_string();
    let writer = {
        let (path, user, done) = (path.clone(), user.clone(), done.clone());
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(150));
            std::fs::write(&path, format!("{user}\n")).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(150));
            std::fs::write(&path, format!("{user}\n{done}\n")).unwrap();
        })
    };
    let u = transcript::read_settled(&path, std::time::Duration::from_secs(10)).expect("read");
    writer.join().unwrap();
    assert!(u.settled, "{u:?}");
    assert_eq!(u.context_used(None), Some(65.0));
    // Not this format: returned at once, unsettled, with nothing in it.
    let other = dir.join("other.json");
    std::fs::write(&other, "{\n  \"type\": \"user\"\n}\n").unwrap();
    let started = std::time::Instant::now();
    let u = transcript::read_settled(&other, std::time::Duration::from_secs(30)).expect("read");
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    assert_eq!((u.turns, u.settled), (0, false));
    // Never written: None once the patience is spent.
    assert!(
        transcript::read_settled(&dir.join("none"), std::time::Duration::from_millis(50)).is_none()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn budgets() {
    assert_eq!(
        parse_budget("2M tokens").unwrap(),
        Budget::Tokens(2_000_000)
    );
    assert_eq!(parse_budget("500k").unwrap(), Budget::Tokens(500_000));
    assert_eq!(parse_budget("50 USD").unwrap(), Budget::Usd(50.0));
    assert_eq!(parse_budget("$12.5").unwrap(), Budget::Usd(12.5));
    assert!(parse_budget("lots").is_err());
    let s = |plan: &str, n: u64, cost: Option<f64>| SessionSpend {
        session: format!("{plan}{n}"),
        plan: Some(plan.into()),
        tokens: Tokens {
            input: n,
            ..Tokens::default()
        },
        cost_usd: cost,
        ..SessionSpend::default()
    };
    let all = [
        s("p", 600, Some(1.0)),
        s("p", 400, None),
        s("q", 5000, Some(99.0)),
    ];
    assert!(check(Some(Budget::Tokens(1000)), "p", &all).reached());
    assert!(!check(Some(Budget::Tokens(1001)), "p", &all).reached());
    assert!(!check(Some(Budget::Usd(2.0)), "p", &all).reached());
    assert!(!check(None, "p", &all).reached());
}

#[test]
fn a_spend_entry_reads_back_as_the_session_it_was_written_from() {
    let s = SessionSpend {
        session: "sess-1".into(),
        host: "claude".into(),
        agent: "w1".into(),
        account: Some("w1".into()),
        lane: Some("t1".into()),
        task: Some("t1".into()),
        plan: Some("p".into()),
        tokens: Tokens {
            input: 1200,
            cache_read: 300,
            cache_write: 100,
            output: 400,
        },
        cost_usd: Some(0.05),
        at: "2026-01-01T00:00:00Z".into(),
    };
    let message = spend::event(&s).message();
    let entry = crate::store::parse_journal_entry("c0ffee".into(), 0, &message, 1);
    assert_eq!(entry.event, spend::EVENT, "{message}");
    assert_eq!(spend::from_entry(&entry), Some(s.clone()), "{message}");
    // Without a cost, an account, a lane or a task: none read back.
    let bare = SessionSpend {
        cost_usd: None,
        account: None,
        lane: None,
        task: None,
        ..s
    };
    let entry =
        crate::store::parse_journal_entry("c0ffee".into(), 0, &spend::event(&bare).message(), 1);
    assert_eq!(spend::from_entry(&entry), Some(bare));
    // Another kind of entry is no spend.
    let other = crate::store::Event::new("capacity", "w1", "capacity: w1 at ok").message();
    let entry = crate::store::parse_journal_entry("c0ffee".into(), 0, &other, 1);
    assert_eq!(spend::from_entry(&entry), None);
}
