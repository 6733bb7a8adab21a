//! The one publish rule, at the edge: after a command that writes records
//! succeeded, what this clone has not published yet (what the command kept
//! locally, and what earlier commands kept while the remote could not be
//! reached or with `--offline`) goes out in one atomic push with leases
//! (`store::remote::publish_pending`). A write that stays local is said in
//! one wording everywhere (`store::remote::not_published`).

use crate::cli::output::Output;
use git_swarm::store::mirror::{gone, is_unreachable};
use git_swarm::store::remote::{not_published, pending, Flushed};

use super::Global;

/// Whether the command already said that something is not published.
fn said(out: &Output) -> bool {
    out.warnings.iter().any(|w| w.contains("not published")) || out.text.contains("not published")
}

/// Publish what is pending after a command that wrote; say it once.
pub fn publish_after(g: &Global, out: Output) -> Output {
    let Ok(ctx) = g.ctx() else {
        return out;
    };
    // No remote at all: a clone of nothing has nothing to publish to.
    let Some(remote) = ctx.settings.remote.clone() else {
        return out;
    };
    // `--offline`, or this command found the remote unreachable (it kept
    // its write as offline): nothing is tried again.
    if ctx.offline() || gone(&ctx.store, &remote) {
        return match pending(&ctx.store, &remote) {
            Ok(p) if p.count() > 0 => keep(out, &ctx.store.run.reach.kept_why()),
            _ => out,
        };
    }
    // Under the clone's flush lock, as a push budget's flush: another
    // process of this clone carrying or flushing the same refs publishes
    // them (two pushes of them: one would be refused).
    match git_swarm::store::remote::budget::flush(&ctx.store, &remote, None) {
        Ok(None | Some(Flushed::Nothing)) => out,
        Ok(Some(Flushed::Published(refs))) => published(out, &remote, refs),
        Ok(Some(Flushed::Refused(_))) => keep(
            out,
            &format!("remote '{remote}' moved meanwhile and refused the push"),
        ),
        Err(e) if is_unreachable(&e) => {
            keep(out, &format!("remote '{remote}' could not be reached"))
        }
        Err(e) => keep(out, &e.message),
    }
}

/// The one wording of what stays in this clone, on the command's output.
pub fn keep(out: Output, why: &str) -> Output {
    let mut out = if said(&out) {
        out
    } else {
        out.warn(not_published(why))
    };
    if let Some(doc) = out.json.as_object_mut() {
        doc.insert("not_published".into(), serde_json::json!(why));
    }
    out
}

pub fn published(mut out: Output, remote: &str, refs: Vec<String>) -> Output {
    out.text
        .push_str(&format!("published to {remote}: {}\n", refs.join(", ")));
    if let Some(doc) = out.json.as_object_mut() {
        doc.insert("published_pending".into(), serde_json::json!(refs));
    }
    out
}
