//! The README documents every error code and every config key, generated
//! from the same lists the code uses, so the two cannot drift.

#[test]
fn readme_lists_every_error_code_and_config_key() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    for (code, class, meaning) in git_swarm::error::CODES {
        let row = format!("| `{code}` | {} | {meaning} |", class.exit_code());
        assert!(readme.contains(&row), "README lacks the row:\n{row}");
    }
    for (key, default, meaning) in git_swarm::config::KEYS {
        let row = format!("| `{key}` | {default} | {meaning} |");
        assert!(readme.contains(&row), "README lacks the row:\n{row}");
    }
}
