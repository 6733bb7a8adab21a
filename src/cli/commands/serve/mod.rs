//! `git swarm serve` and `git swarm state --html FILE`: the dashboard, one
//! read-only page of the swarm for the person in charge. The picture is
//! the dashboard's view model (`views::dashboard`) plus the forecast (over what was
//! fetched before: the page never merges against a fetch of its own
//! making), rendered by [`page`]; [`server`] serves it live.

mod forecast_view;
mod graph;
mod page;
mod server;
mod text;

use crate::cli::output::Output;
use crate::cli::spec::{Facts, Spec};
use clap::Args;
use git_swarm::error::{Code, Error, Result};
use git_swarm::integrations::forecast;
use git_swarm::session::Ctx;
use git_swarm::views::dashboard;

use crate::cli::Global;

/// What each command of this group is (see [`crate::cli::spec`]).
pub const SPECS: &[Spec] = &[Spec::new("serve", Facts::READ.and(Facts::QUIET))];

/// `git swarm serve` options.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The port to listen on (0: any free port; the URL is printed).
    #[arg(long, default_value_t = 8787)]
    pub port: u16,
    /// Open the page in the default browser (xdg-open / open).
    #[arg(long)]
    pub open: bool,
    /// Listen on this address instead of 127.0.0.1 (needs --token).
    #[arg(long, value_name = "ADDR")]
    pub bind: Option<String>,
    /// A secret every request must carry (`?token=T` once, then a cookie;
    /// or `Authorization: Bearer T`); default GIT_SWARM_SERVE_TOKEN.
    #[arg(long, value_name = "T")]
    pub token: Option<String>,
}

/// The picture: the view model and the forecast (or why there is none).
pub fn picture(
    ctx: &Ctx,
) -> Result<(
    dashboard::Dashboard,
    std::result::Result<forecast::Forecast, String>,
)> {
    let dash = dashboard::gather(ctx)?;
    // The forecast reads what was fetched before; the page's own fetches
    // are paced by the server.
    let f = forecast::forecast_fetched(ctx, None).map_err(|e| e.message);
    Ok((dash, f))
}

/// The page as one self-contained file (`state --html FILE`); `-` prints
/// it on stdout instead, as other tools read `-`.
pub fn write_html(g: &Global, file: &str) -> Result<Output> {
    let to_stdout = file == "-";
    if to_stdout && g.json {
        return Err(Error::new(
            Code::Usage,
            "`state --html -` prints the page on stdout, where --json prints its document",
        )
        .hint("with --json, name a file: `git swarm state --html FILE --json`"));
    }
    let ctx = g.ctx()?;
    let (dash, f) = picture(&ctx)?;
    let html = page::render(&page::Page {
        dash: &dash,
        forecast: f.as_ref().map_err(Clone::clone),
        mode: page::Mode::File,
    });
    if to_stdout {
        use std::io::Write;
        let mut stdout = std::io::stdout().lock();
        if let Err(e) = stdout
            .write_all(html.as_bytes())
            .and_then(|_| stdout.flush())
        {
            if e.kind() != std::io::ErrorKind::BrokenPipe {
                return Err(Error::new(
                    Code::IoFailed,
                    format!("cannot write the page on stdout: {e}"),
                ));
            }
        }
        std::mem::forget(html);
        std::mem::forget(dash);
        return Ok(Output::new(serde_json::json!({}), String::new()));
    }
    let path = std::path::Path::new(file);
    git_swarm::fsutil::replace_file(path, html.as_bytes()).map_err(|e| {
        Error::new(Code::IoFailed, format!("cannot write {file}: {e}"))
            .hint("name a file in a directory you can write")
    })?;
    let json = serde_json::json!({
        "written": file,
        "bytes": html.len(),
        "plans": dash.plans.len(),
        "tasks": dash.tasks.len(),
        "lanes": dash.lanes.len(),
        "unreadable": dash.unreadable,
    });
    // The process ends here: freeing thousands of records and a page of
    // megabytes one allocation at a time would only cost time.
    std::mem::forget(html);
    std::mem::forget(dash);
    Ok(Output::new(json, format!("dashboard written to {file}\n")))
}

/// `git swarm serve`: runs until interrupted.
pub fn serve(g: &Global, a: ServeArgs) -> Result<Output> {
    let token = a
        .token
        .clone()
        .or_else(|| std::env::var("GIT_SWARM_SERVE_TOKEN").ok())
        .filter(|t| !t.is_empty());
    let host = a.bind.clone().unwrap_or_else(|| "127.0.0.1".to_string());
    let ip: std::net::IpAddr = host.parse().map_err(|_| {
        Error::new(Code::Usage, format!("--bind '{host}' is not an IP address"))
            .hint("pass an address such as 127.0.0.1, 0.0.0.0 or ::1")
    })?;
    if a.bind.is_some() && token.is_none() && ip != std::net::IpAddr::from([127, 0, 0, 1]) {
        return Err(Error::new(
            Code::ServeTokenRequired,
            format!("serving on {ip} needs a token that every request must carry"),
        )
        .hint("add --token <secret> (or set GIT_SWARM_SERVE_TOKEN), and open the page as http://<host>:<port>/?token=<secret>"));
    }
    if token.as_deref().is_some_and(|t| t.len() < 16) {
        return Err(
            Error::new(Code::Usage, "--token must be at least 16 characters")
                .hint("make one with `openssl rand -hex 16`"),
        );
    }
    let ctx = g.ctx()?;
    let ceiling = match ctx.store.config("swarm.waitCeiling") {
        Some(c) => git_swarm::clock::parse_duration(&c)
            .map_err(|e| e.hint("fix `git config swarm.waitCeiling`"))?
            .unsigned_abs(),
        None => std::time::Duration::from_secs(60),
    };
    let cfg = server::Config {
        addr: std::net::SocketAddr::new(ip, a.port),
        token,
        ceiling,
        open: a.open,
        as_: g.as_.clone(),
        offline: g.offline,
        no_cache: g.no_cache,
    };
    drop(ctx);
    server::run(cfg)?;
    Ok(Output::new(serde_json::json!({}), String::new()))
}
