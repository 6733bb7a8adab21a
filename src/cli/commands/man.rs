//! `git swarm man`: the man pages, printed or installed.

use std::path::PathBuf;

use crate::cli::output::{count, Output};
use crate::cli::spec::{Facts, Spec};
use clap::{Args, CommandFactory};
use git_swarm::error::{Code, Error, Result};

use crate::cli::{Cli, Global};

/// What each command of this group is (see [`crate::cli::spec`]).
pub const SPECS: &[Spec] = &[Spec::new(
    "man",
    Facts::READ.and(Facts::QUIET).and(Facts::NO_FLUSH),
)];

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Print the page of this command instead (e.g. `plan`, `lead claim`).
    #[arg(value_name = "COMMAND", conflicts_with = "install")]
    pub command: Vec<String>,
    /// Install every page (git-swarm.1, git-swarm-plan.1, git-swarm-plan-new.1, …)
    /// under ~/.local/share/man/man1 (or --dir) instead of printing one.
    #[arg(long)]
    pub install: bool,
    /// Directory to install into (a man1 directory).
    #[arg(long, value_name = "DIR", requires = "install")]
    pub dir: Option<PathBuf>,
}

/// The command tree as the man pages name it: `git-swarm`, with each
/// subcommand's display name `git-swarm-<sub>[-<subsub>]`.
fn man_command() -> clap::Command {
    let mut cmd = Cli::command()
        .name("git-swarm")
        .bin_name("git swarm")
        .disable_help_subcommand(true);
    cmd.build();
    cmd
}

/// One page per command and subcommand, parents first: (file name, roff).
pub fn man_pages() -> Result<Vec<(String, Vec<u8>)>> {
    fn walk(cmd: &clap::Command, out: &mut Vec<(String, Vec<u8>)>) -> Result<()> {
        let man = clap_mangen::Man::new(cmd.clone())
            .source(format!("git-swarm {}", env!("CARGO_PKG_VERSION")));
        let mut buf = Vec::new();
        man.render(&mut buf)
            .map_err(|e| Error::new(Code::IoFailed, format!("cannot render the man page: {e}")))?;
        out.push((man.get_filename(), buf));
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            walk(sub, out)?;
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(&man_command(), &mut out)?;
    Ok(out)
}

/// The page name for a command path: `[]` → git-swarm, `[lead, claim]` →
/// git-swarm-lead-claim. Words that are not subcommands end the path.
pub fn page_for(words: &[String]) -> String {
    let mut cmd = man_command();
    let mut name = "git-swarm".to_string();
    for w in words {
        let Some(sub) = cmd.find_subcommand(w).cloned() else {
            break;
        };
        name = format!("{name}-{}", sub.get_name());
        cmd = sub;
    }
    name
}

pub fn man(_g: &Global, a: ManArgs) -> Result<Output> {
    let pages = man_pages()?;
    if !a.install {
        let wanted = format!("{}.1", page_for(&a.command));
        if wanted == "git-swarm.1" && !a.command.is_empty() {
            return Err(Error::new(
                Code::Usage,
                format!("'{}' is not a git swarm command", a.command.join(" ")),
            )
            .hint("see `git swarm -h` for the commands"));
        }
        let (_, buf) = pages
            .iter()
            .find(|(name, _)| *name == wanted)
            .expect("every command path has a page");
        let text = String::from_utf8_lossy(buf).into_owned();
        return Ok(Output::new(
            serde_json::json!({ "name": wanted, "page": text }),
            text,
        ));
    }
    let dir = match a.dir {
        Some(d) => d,
        None => {
            let home = std::env::var_os("HOME").ok_or_else(|| {
                Error::new(Code::IoFailed, "HOME is not set").hint("pass --dir <man1 directory>")
            })?;
            PathBuf::from(home).join(".local/share/man/man1")
        }
    };
    std::fs::create_dir_all(&dir).map_err(|e| git_swarm::fsutil::io_error(&dir, e))?;
    let mut installed = Vec::new();
    for (name, buf) in &pages {
        let path = dir.join(name);
        std::fs::write(&path, buf).map_err(|e| git_swarm::fsutil::io_error(&path, e))?;
        installed.push(path.display().to_string());
    }
    let text = format!(
        "installed {} in {} (git-swarm.1, git-swarm-plan.1, git-swarm-lead-claim.1, …)\n`git swarm --help`, `git help swarm` and `man git-swarm-plan` now work if {} is on your MANPATH\n",
        count(installed.len(), "man page", "man pages"),
        dir.display(),
        dir.parent().unwrap_or(&dir).display()
    );
    Ok(Output::new(
        serde_json::json!({ "dir": dir.display().to_string(), "installed": installed }),
        text,
    ))
}
