//! The forecast as a matrix: live lanes × live lanes, and each lane ×
//! its base, one cell per merge forecast; a conflicting or same-files cell
//! links to the list below it with the paths and first hunks of each side.

use std::collections::BTreeMap;

use maud::{html, Markup};

use super::text::{anchor, plain, shown};
use git_swarm::integrations::forecast::{ConflictPath, Forecast, Verdict};

fn class(v: Verdict) -> &'static str {
    match v {
        Verdict::Conflict => "conflict",
        Verdict::SameFiles => "same-files",
        Verdict::Clean => "clean",
    }
}

fn mark(v: Verdict) -> &'static str {
    match v {
        Verdict::Conflict => "✕",
        Verdict::SameFiles => "≈",
        Verdict::Clean => "·",
    }
}

fn pair_id(a: &str, b: &str) -> String {
    anchor("pair", &format!("{a}/{b}"))
}

/// The lanes × lanes and × base matrix: a cell per pair, linked to its
/// paths when it is not clean.
fn matrix(
    lanes: &[&str],
    cells: &BTreeMap<(&str, &str), (Verdict, usize)>,
    bases: &BTreeMap<&str, (Verdict, usize, &str)>,
) -> Markup {
    html! {
    div.scroll { table.matrix {
        tr {
            th {}
            @for (i, _) in lanes.iter().enumerate() { th title=(plain(lanes[i])) { (i + 1) } }
            th { "base" }
        }
        @for (i, a) in lanes.iter().enumerate() {
            tr {
                th.row { (i + 1) ". " (shown(a)) }
                @for b in lanes {
                    @if a == b { td.self {} } @else {
                        @match cells.get(&(*a, *b)) {
                            Some((v, n)) => {
                                @let (x, y) = if a < b { (*a, *b) } else { (*b, *a) };
                                td class=(class(*v)) title=(format!("{} × {}: {}", plain(a), plain(b), class(*v))) {
                                    @if *v == Verdict::Clean { (mark(*v)) }
                                    @else { a href=(format!("#{}", pair_id(x, y))) { (mark(*v)) " " (n) } }
                                }
                            }
                            None => td { "?" },
                        }
                    }
                }
                @match bases.get(a) {
                    Some((v, n, base)) => {
                        td class=(class(*v)) title=(format!("{} × {}: {}", plain(a), plain(base), class(*v))) {
                            @if *v == Verdict::Clean { (mark(*v)) }
                            @else { a href=(format!("#{}", anchor("base", a))) { (mark(*v)) " " (n) } }
                        }
                    }
                    None => td { "?" },
                }
            }
        }
    } }
    }
}

pub fn section(f: &Result<&Forecast, String>) -> Markup {
    let f = match f {
        Ok(f) => *f,
        Err(why) => {
            return html! {
                section.wide #forecast data-count="0" {
                    h2 { "Forecast" }
                    p.empty { "no forecast: " (shown(why)) }
                }
            }
        }
    };
    let lanes: Vec<&str> = f.lanes.iter().map(|l| l.feature.as_str()).collect();
    let mut cells: BTreeMap<(&str, &str), (Verdict, usize)> = BTreeMap::new();
    for p in &f.pairs {
        let n = p.conflicts.len().max(p.same_files.len());
        cells.insert((p.a.as_str(), p.b.as_str()), (p.verdict, n));
        cells.insert((p.b.as_str(), p.a.as_str()), (p.verdict, n));
    }
    let bases: BTreeMap<&str, (Verdict, usize, &str)> = f
        .bases
        .iter()
        .map(|b| {
            (
                b.lane.as_str(),
                (
                    b.verdict,
                    b.conflicts.len().max(b.same_files.len()),
                    b.base.as_str(),
                ),
            )
        })
        .collect();
    let conflicts = f
        .pairs
        .iter()
        .filter(|p| p.verdict == Verdict::Conflict)
        .count();
    let base_conflicts = f
        .bases
        .iter()
        .filter(|b| b.verdict == Verdict::Conflict)
        .count();
    html! {
        section.wide #forecast data-count=(lanes.len()) data-conflicts=(conflicts) data-base-conflicts=(base_conflicts) {
            h2 { "Forecast: lanes × lanes and × base" span.n { " (" (lanes.len()) " lanes, " (conflicts + base_conflicts) " conflicting)" } }
            @if lanes.is_empty() { p.empty { "no live lane with a branch to merge" } } @else {
                (matrix(&lanes, &cells, &bases))
                @for p in f.pairs.iter().filter(|p| p.verdict != Verdict::Clean) {
                    @let (x, y) = if p.a < p.b { (&p.a, &p.b) } else { (&p.b, &p.a) };
                    details.hunks id=(pair_id(x, y)) data-verdict=(class(p.verdict)) {
                        summary { (shown(&p.a)) " × " (shown(&p.b)) ": " (class(p.verdict)) }
                        (paths(&p.conflicts, &p.same_files, &p.a, &p.b))
                    }
                }
                @for b in f.bases.iter().filter(|b| b.verdict != Verdict::Clean) {
                    details.hunks id=(anchor("base", &b.lane)) data-verdict=(class(b.verdict)) {
                        summary { (shown(&b.lane)) " × base " (shown(&b.base)) ": " (class(b.verdict)) }
                        (paths(&b.conflicts, &b.same_files, &b.base, &b.lane))
                    }
                }
            }
            @if !f.skipped.is_empty() {
                p.n { "not in the matrix (nothing to merge): "
                    @for (i, s) in f.skipped.iter().enumerate() { @if i > 0 { ", " } (shown(&s.feature)) } }
            }
        }
    }
}

fn paths(conflicts: &[ConflictPath], same: &[String], ours: &str, theirs: &str) -> Markup {
    html! {
        @for c in conflicts {
            div.conflict-path {
                code { (shown(&c.path)) } " " span.tag.bad { (plain(&c.kinds.join(", "))) }
                @if !c.ours.is_empty() || !c.theirs.is_empty() {
                    div.n { (shown(ours)) }
                    pre { (lines(&c.ours)) }
                    div.n { (shown(theirs)) }
                    pre { (lines(&c.theirs)) }
                }
            }
        }
        @if !same.is_empty() {
            p { "same files, merged cleanly: " @for (i, s) in same.iter().enumerate() { @if i > 0 { ", " } code { (shown(s)) } } }
        }
    }
}

fn lines(ls: &[String]) -> Markup {
    html! { @for (i, l) in ls.iter().enumerate() { @if i > 0 { "\n" } (plain(l)) } }
}
