//! A plan's task dependency graph as SVG, laid out here (no graph library
//! in the page): each task in the column of its longest dependency chain
//! (layer 0: no dependency), tasks in a layer ordered by where their
//! dependencies sit (barycentre), edges as curves from a dependency to
//! the task that waits on it. A dependency outside the plan's known tasks
//! is left out; a cycle (forged records) is cut, never looped on.

use std::collections::BTreeMap;

use maud::{html, Markup};

use super::text::{anchor, plain};
use git_swarm::views::dashboard::TaskView;

const W: i64 = 128;
const H: i64 = 30;
const GAP_X: i64 = 56;
const GAP_Y: i64 = 14;
const PAD: i64 = 8;

/// Node positions: task index -> (layer, row).
pub fn layout(tasks: &[&TaskView]) -> Vec<(usize, usize)> {
    let index: BTreeMap<&str, usize> = tasks
        .iter()
        .enumerate()
        .map(|(i, t)| (t.id.as_str(), i))
        .collect();
    let deps: Vec<Vec<usize>> = tasks
        .iter()
        .map(|t| {
            t.depends_on
                .iter()
                .filter_map(|d| index.get(d.as_str()).copied())
                .collect()
        })
        .collect();
    // Longest chain by relaxation, at most n rounds: a cycle stops there.
    let n = tasks.len();
    let mut layer = vec![0usize; n];
    for _ in 0..n {
        let mut moved = false;
        for i in 0..n {
            for &d in &deps[i] {
                if layer[d] + 1 > layer[i] && layer[d] < n {
                    layer[i] = layer[d] + 1;
                    moved = true;
                }
            }
        }
        if !moved {
            break;
        }
    }
    let layers = layer.iter().max().map_or(0, |m| m + 1);
    let mut row = vec![0usize; n];
    for l in 0..layers {
        let mut members: Vec<usize> = (0..n).filter(|&i| layer[i] == l).collect();
        let key = |i: usize| -> f64 {
            let before: Vec<f64> = deps[i]
                .iter()
                .filter(|&&d| layer[d] < l)
                .map(|&d| row[d] as f64)
                .collect();
            if before.is_empty() {
                i as f64
            } else {
                before.iter().sum::<f64>() / before.len() as f64
            }
        };
        members.sort_by(|&a, &b| key(a).total_cmp(&key(b)).then(a.cmp(&b)));
        for (r, i) in members.into_iter().enumerate() {
            row[i] = r;
        }
    }
    layer.into_iter().zip(row).collect()
}

/// The SVG of one plan's tasks.
pub fn svg(plan: &str, tasks: &[&TaskView]) -> Markup {
    let pos = layout(tasks);
    let cols = pos.iter().map(|p| p.0 + 1).max().unwrap_or(1) as i64;
    let rows = pos.iter().map(|p| p.1 + 1).max().unwrap_or(1) as i64;
    let width = PAD * 2 + cols * W + (cols - 1) * GAP_X;
    let height = PAD * 2 + rows * H + (rows - 1) * GAP_Y;
    let at = |i: usize| {
        let (l, r) = pos[i];
        (PAD + l as i64 * (W + GAP_X), PAD + r as i64 * (H + GAP_Y))
    };
    let index: BTreeMap<&str, usize> = tasks
        .iter()
        .enumerate()
        .map(|(i, t)| (t.id.as_str(), i))
        .collect();
    let mut edges = Vec::new();
    for (i, t) in tasks.iter().enumerate() {
        for d in &t.depends_on {
            if let Some(&j) = index.get(d.as_str()) {
                let (x1, y1) = at(j);
                let (x2, y2) = at(i);
                let (sx, sy, ex, ey) = (x1 + W, y1 + H / 2, x2, y2 + H / 2);
                let mid = (sx + ex) / 2;
                edges.push(format!("M{sx},{sy} C{mid},{sy} {mid},{ey} {ex},{ey}"));
            }
        }
    }
    let label = |id: &str| {
        let id = plain(id);
        if id.chars().count() > 16 {
            format!("{}…", id.chars().take(15).collect::<String>())
        } else {
            id.into_owned()
        }
    };
    html! {
        svg.graph xmlns="http://www.w3.org/2000/svg" role="img"
            data-plan=(plan) data-nodes=(tasks.len()) data-edges=(edges.len())
            width=(width) height=(height) viewBox=(format!("0 0 {width} {height}")) {
            title { "Dependencies of the tasks of plan " (plain(plan)) }
            defs {
                marker id=(anchor("arrow", plan)) viewBox="0 0 8 8" refX="8" refY="4"
                    markerWidth="7" markerHeight="7" orient="auto-start-reverse" {
                    path d="M0,0 L8,4 L0,8 z" class="arrowhead" {}
                }
            }
            @for d in &edges {
                path.edge d=(d) marker-end=(format!("url(#{})", anchor("arrow", plan))) {}
            }
            @for (i, t) in tasks.iter().enumerate() {
                @let (x, y) = at(i);
                g class=(format!("node {}", t.column.as_str())) data-task=(plain(&t.id)) {
                    title { (plain(&t.id)) ": " (plain(&t.title)) " (" (t.column.as_str()) ")" }
                    rect x=(x) y=(y) width=(W) height=(H) rx="5" {}
                    text x=(x + 8) y=(y + H / 2 + 4) { (label(&t.id)) }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use git_swarm::views::dashboard::Column;

    fn t(id: &str, deps: &[&str]) -> TaskView {
        TaskView {
            plan: "p".into(),
            id: id.into(),
            title: id.into(),
            column: Column::Ready,
            holder: None,
            lease: None,
            blocked_reason: None,
            depends_on: deps.iter().map(|d| d.to_string()).collect(),
        }
    }

    #[test]
    fn layers_follow_the_longest_chain() {
        let tasks = [
            t("a", &[]),
            t("b", &["a"]),
            t("c", &["a", "b"]),
            t("d", &[]),
        ];
        let refs: Vec<&TaskView> = tasks.iter().collect();
        let pos = layout(&refs);
        assert_eq!(pos.iter().map(|p| p.0).collect::<Vec<_>>(), [0, 1, 2, 0]);
        assert_eq!(pos[0].1, 0);
        assert_eq!(pos[3].1, 1);
    }

    #[test]
    fn a_cycle_and_unknown_dependencies_end() {
        let tasks = [t("a", &["b"]), t("b", &["a"]), t("c", &["gone"])];
        let refs: Vec<&TaskView> = tasks.iter().collect();
        let pos = layout(&refs);
        assert_eq!(pos.len(), 3);
        assert_eq!(pos[2], (0, pos[2].1));
        let svg = svg("p", &refs).into_string();
        assert_eq!(svg.matches("<g class=\"node").count(), 3);
    }
}
