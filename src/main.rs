//! `git-swarm`: parse, run, render, map the error to an exit code.

mod cli;

use std::process::ExitCode;

/// The arguments as text: an argument that is not UTF-8 is read lossily
/// here (`std::env::args` would panic); clap, reading the real ones, then
/// refuses it as a usage error.
fn args_text() -> Vec<String> {
    std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

fn main() -> ExitCode {
    let args = args_text();
    if args.first().map(String::as_str) == Some("__complete") {
        let words = match args.get(1).map(String::as_str) {
            Some("--") => &args[2..],
            _ => &args[1..],
        };
        cli::emit(
            &mut std::io::stdout().lock(),
            &cli::commands::completions::complete(words),
        );
        return ExitCode::SUCCESS;
    }
    let wants_json = args.iter().any(|a| a == "--json");
    let parsed = match cli::parse_hook_pre_commit(&args)
        .or_else(|| cli::commands::agent::parse_fast(&args))
        .map_or_else(cli::parse, Ok)
    {
        Ok(c) => c,
        Err(e) => return not_parsed(&e, wants_json),
    };
    let json = parsed.cli.json;
    // The command's shared state: one per command, read here for the
    // remote operations it made.
    let run = std::sync::Arc::default();
    let outcome = cli::run(parsed, &run);
    let ops = run.net.ops();
    match outcome {
        Ok(out) => {
            for warning in &out.warnings {
                cli::error::say(&format!(
                    "warning: {}",
                    git_swarm::text::clean_block(warning)
                ));
            }
            let mut stdout = std::io::stdout().lock();
            if json {
                let doc = cli::error::with_remote_ops(out.json, ops);
                let text = serde_json::to_string_pretty(&doc).expect("JSON values serialise");
                cli::emit(&mut stdout, &format!("{text}\n"));
            } else {
                // Defence in depth: record text that reached the output
                // shows its control characters as visible escapes.
                cli::emit(&mut stdout, &git_swarm::text::clean_block(&out.text));
            }
            ExitCode::from(out.exit)
        }
        Err(err) => {
            cli::error::report(&err, json, ops);
            cli::error::exit_code(&err)
        }
    }
}

/// What clap stopped at: help or the version (printed, exit 0; the man
/// page for `--help`; `--version --json` as JSON), a bare group (its help,
/// exit 2), or a usage error (reported, exit 2).
fn not_parsed(e: &clap::Error, wants_json: bool) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        if e.kind() == ErrorKind::DisplayVersion && wants_json {
            let doc = cli::error::with_remote_ops(
                serde_json::json!({
                    "name": env!("CARGO_PKG_NAME"),
                    "version": env!("CARGO_PKG_VERSION"),
                }),
                Default::default(),
            );
            let text = serde_json::to_string_pretty(&doc).expect("JSON values serialise");
            cli::emit(&mut std::io::stdout().lock(), &format!("{text}\n"));
            return ExitCode::SUCCESS;
        }
        if e.kind() == ErrorKind::DisplayHelp && open_man_page() {
            return ExitCode::SUCCESS;
        }
        let _ = e.print();
        let code = if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
            2
        } else {
            0
        };
        return ExitCode::from(code);
    }
    let err = cli::error::from_clap(e);
    cli::error::report(&err, wants_json, Default::default());
    cli::error::exit_code(&err)
}

/// `git-swarm … --help` (not `-h`), like git's own `--help`: show the
/// command's man page when one is installed and stdout is a terminal
/// (`GIT_SWARM_HELP=man` forces the attempt, `=text` prevents it). Returns
/// false, so that the text help is printed, when no page could be shown.
/// (`git swarm --help` never gets here: git turns it into `man git-swarm`.)
fn open_man_page() -> bool {
    let args = args_text();
    let mut words = Vec::new();
    let mut long_help = false;
    let mut skip = false;
    for a in &args {
        if skip {
            skip = false;
        } else if a == "--" {
            break;
        } else if a == "--help" {
            long_help = true;
        } else if a == "--as" {
            skip = true;
        } else if !a.starts_with('-') {
            words.push(a.clone());
        }
    }
    let wanted = match std::env::var("GIT_SWARM_HELP").ok().as_deref() {
        Some("text") => false,
        Some("man") => true,
        _ => std::io::IsTerminal::is_terminal(&std::io::stdout()),
    };
    if !long_help || !wanted {
        return false;
    }
    let page = cli::commands::man::page_for(&words);
    let found = std::process::Command::new("man")
        .args(["-w", &page])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    found
        && std::process::Command::new("man")
            .arg(&page)
            .status()
            .is_ok_and(|s| s.success())
}
