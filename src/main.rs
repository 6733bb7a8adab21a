//! `git-swarm`: parse, run, render, map the error to an exit code.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let wants_json = std::env::args().any(|a| a == "--json");
    let parsed = match cli::Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                let _ = e.print();
                let code = if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                    2
                } else {
                    0
                };
                return ExitCode::from(code);
            }
            let rendered = e.to_string();
            let message = rendered.trim_start_matches("error: ").trim_end();
            let err = git_swarm::error::Error::usage("USAGE", message.to_string());
            report_error(&err, wants_json);
            return ExitCode::from(2);
        }
    };
    let json = parsed.json;
    match cli::run(parsed) {
        Ok(out) => {
            let mut stdout = std::io::stdout().lock();
            if json {
                let text = serde_json::to_string_pretty(&out.json).expect("JSON values serialise");
                cli::emit(&mut stdout, &format!("{text}\n"));
            } else {
                cli::emit(&mut stdout, &out.text);
            }
            ExitCode::from(out.exit)
        }
        Err(err) => {
            report_error(&err, json);
            ExitCode::from(err.exit_code())
        }
    }
}

fn report_error(err: &git_swarm::error::Error, json: bool) {
    if json {
        let text = serde_json::to_string_pretty(&err.to_json()).expect("JSON values serialise");
        cli::emit(&mut std::io::stdout().lock(), &format!("{text}\n"));
    }
    eprintln!("{err}");
}
