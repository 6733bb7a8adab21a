//! The ledger in shards: sixty-four records `refs/swarm/reservations/shard-00`
//! … `shard-3f`, so that reservations of unrelated paths do not contend for
//! one ref.
//!
//! A pattern belongs to the shard its first two path components hash to
//! (lowercased, so two spellings that overlap under `core.ignoreCase`
//! meet): `src/parser/`, `src/parser/lexer.rs` and `src/parser` share one.
//! A pattern with fewer than two components, or a glob in one of them
//! (`src/`, `README.md`, `*.md`, `docs/*.md`, `**`), belongs to all of
//! them. An entry is stored in every shard of every one of its patterns.
//! Two overlapping patterns either have the same first two components or
//! one of them belongs to every shard (a pattern overlaps another only
//! along a common literal prefix, or as a name and the directory of that
//! name), so two overlapping reservations always share a shard, and the
//! remote's compare-and-swap on that shard decides between them (see the
//! module docs above). Two components, not one: most of a repository is
//! under one top-level directory, and agents reserve below it.
//!
//! Writers read every shard, [`Shards::merged`] gives the one ledger the
//! rules decide on, and [`Shards::changed`] gives back the shards whose
//! content the decision changed, to be written in one atomic push with
//! their leases. Dropping long-expired entries (pruning) alone does not make
//! a shard changed, so a write never touches a shard it had nothing to do
//! with.
//!
//! Ids: each shard hands out its own numbers, `n ≡ shard + 1 (mod 64)`
//! (shard 0: r1, r65, …; shard 9: r10, r74, …), so two shards written at
//! once never make one id. A new entry takes its number from its first
//! shard.
//!
//! The one-ref ledger of older clones (`refs/swarm/reservations/ledger`) is
//! read beside the shards; the first write moves its entries into their
//! shards and writes it back empty, its `next` kept, so new numbers start
//! above every old id.

use jiff::Timestamp;

use super::{Entry, Ledger, Pattern, Shape, LEDGER, SCHEMA};

/// How many shards there are.
pub const SHARDS: usize = 64;

/// The set of shards a pattern or an entry belongs to, one bit each.
pub type Set = u64;

const ALL: Set = Set::MAX;

/// The record key of shard `i` (`shard-0` … `shard-f`).
pub fn key(i: usize) -> String {
    format!("shard-{i:02x}")
}

/// The refs of the reservations, all of them fetched by this one prefix.
pub const PREFIX: &str = "refs/swarm/reservations/";

/// FNV-1a, 32 bits: a fixed hash, the same in every clone and version.
fn fnv1a(bytes: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in bytes {
        h ^= u32::from(*b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// The shards a pattern belongs to: the one its first two path components
/// hash to (lowercased), or all of them when it has fewer than two or one
/// of those two is a glob (`src/`, `README.md`, `*.md`, `docs/*.md`).
pub fn of_pattern(p: &Pattern) -> Set {
    let mut comps = p.as_str().split('/');
    let (Some(first), Some(second)) = (comps.next(), comps.next()) else {
        return ALL;
    };
    let literal = |c: &str| !c.is_empty() && Pattern(c.to_string()).shape() != Shape::Glob;
    if !literal(first) || !literal(second) {
        return ALL;
    }
    let key = format!("{first}/{second}").to_lowercase();
    1 << (fnv1a(key.as_bytes()) as usize % SHARDS)
}

/// The shards an entry with these patterns is stored in (every shard for
/// an entry with no pattern, which no rule makes).
pub fn of_paths(paths: &[Pattern]) -> Set {
    match paths.iter().map(of_pattern).fold(0, |a, b| a | b) {
        0 => ALL,
        set => set,
    }
}

/// The first shard of a set: where a new entry's number comes from.
pub fn home(set: Set) -> usize {
    set.trailing_zeros() as usize % SHARDS
}

fn shards_in(set: Set) -> impl Iterator<Item = usize> {
    (0..SHARDS).filter(move |i| set & (1 << i) != 0)
}

/// The smallest number at least `at` that shard `i` may hand out.
fn number_at_least(i: usize, at: u64) -> u64 {
    let residue = ((i + 1) % SHARDS) as u64;
    let at = at.max(1);
    let off = (residue + SHARDS as u64 - at % SHARDS as u64) % SHARDS as u64;
    at + off
}

/// The number of an id (`r12`, `r12-ann`: 12; 0 for anything else).
fn number(id: &str) -> u64 {
    id.strip_prefix('r')
        .and_then(|r| r.split('-').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// What [`merge`] needs of an entry (the ledger's, or the guard's
/// cached copy of it).
pub trait Stored: Clone {
    fn id(&self) -> &str;
    fn paths(&self) -> &[Pattern];
    fn released(&self) -> bool;
}

impl Stored for Entry {
    fn id(&self) -> &str {
        &self.id
    }
    fn paths(&self) -> &[Pattern] {
        &self.paths
    }
    fn released(&self) -> bool {
        self.released_at.is_some()
    }
}

/// The entries of the one-ref ledger, then each shard's (`parts`, None:
/// absent): an entry once, as its first shard holds it. One missing from
/// a shard it belongs to has left the reservations there, by pruning or by
/// a `sync` that could not keep it, and is gone; one released in any shard
/// is released.
pub fn merge<E: Stored>(legacy: &[E], parts: &[Option<&[E]>]) -> Vec<E> {
    let mut out: Vec<E> = legacy.to_vec();
    let mut seen: std::collections::HashSet<String> =
        out.iter().map(|e| e.id().to_string()).collect();
    for part in parts.iter().flatten() {
        for e in part.iter() {
            if seen.insert(e.id().to_string()) {
                out.extend(whole(parts, e));
            }
        }
    }
    out
}

/// `e` as every shard it belongs to holds it (None: one does not).
fn whole<E: Stored>(parts: &[Option<&[E]>], e: &E) -> Option<E> {
    let mut best = e.clone();
    for i in shards_in(of_paths(e.paths())) {
        let copy = parts
            .get(i)
            .copied()
            .flatten()
            .and_then(|p| p.iter().find(|c| c.id() == e.id()))?;
        if !best.released() && copy.released() {
            best = copy.clone();
        }
    }
    Some(best)
}

/// Which record of the reservations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The one-ref ledger of older clones.
    Legacy,
    Shard(usize),
}

impl Part {
    /// The part a record key names (None: not one of the reservations').
    pub fn from_key(key: &str) -> Option<Part> {
        if key == LEDGER {
            return Some(Part::Legacy);
        }
        let digit = key.strip_prefix("shard-")?;
        let i = usize::from_str_radix(digit, 16).ok()?;
        (i < SHARDS && key == self::key(i)).then_some(Part::Shard(i))
    }
    pub fn key(self) -> String {
        match self {
            Part::Legacy => LEDGER.to_string(),
            Part::Shard(i) => key(i),
        }
    }
}

/// The reservations as read: the one-ref ledger and each shard (None:
/// absent).
#[derive(Debug, Clone)]
pub struct Shards {
    pub legacy: Option<Ledger>,
    /// One per shard.
    pub parts: Vec<Option<Ledger>>,
}

impl Default for Shards {
    fn default() -> Self {
        Shards {
            legacy: None,
            parts: vec![None; SHARDS],
        }
    }
}

impl Shards {
    /// Set the record read for `part`.
    pub fn set(&mut self, part: Part, ledger: Option<Ledger>) {
        match part {
            Part::Legacy => self.legacy = ledger,
            Part::Shard(i) => self.parts[i] = ledger,
        }
    }

    fn legacy_next(&self) -> u64 {
        self.legacy.as_ref().map_or(1, |l| l.next)
    }

    /// The next number shard `i` hands out.
    fn counter(&self, i: usize) -> u64 {
        let own = self.parts[i].as_ref().map_or(0, |l| l.next);
        number_at_least(i, own.max(self.legacy_next()))
    }

    /// The one ledger the rules decide on: every part's entries, merged
    /// by [`merge`].
    pub fn merged(&self) -> Ledger {
        let legacy = self.legacy.clone().unwrap_or_default();
        let parts: Vec<Option<&[Entry]>> = self
            .parts
            .iter()
            .map(|p| p.as_ref().map(|l| &l.entries[..]))
            .collect();
        // In the order they were made (each shard keeps its own order;
        // across shards the creation time says it, then the number).
        let mut entries = merge(&legacy.entries, &parts);
        entries.sort_by(|a, b| {
            (a.created_at.as_str(), number(&a.id)).cmp(&(b.created_at.as_str(), number(&b.id)))
        });
        Ledger {
            schema: SCHEMA.to_string(),
            entries,
            counters: Some((0..SHARDS).map(|i| self.counter(i)).collect()),
            ..legacy
        }
    }

    /// The records `after` (a [`Shards::merged`] ledger the rules changed
    /// at `now`) needs written: each shard whose entries or counter
    /// changed, other than by pruning (an entry that was prunable at `now`
    /// dropping out), and the old ledger while it still holds entries (they
    /// move to their shards).
    pub fn changed(&self, after: &Ledger, now: Timestamp) -> Vec<(Part, Ledger)> {
        let mut out = Vec::new();
        if let Some(legacy) = self.legacy.as_ref().filter(|l| !l.entries.is_empty()) {
            let emptied = Ledger {
                entries: Vec::new(),
                ..legacy.clone()
            };
            out.push((Part::Legacy, emptied));
        }
        let mut wanted: Vec<Vec<&Entry>> = vec![Vec::new(); SHARDS];
        for e in &after.entries {
            for i in shards_in(of_paths(&e.paths)) {
                wanted[i].push(e);
            }
        }
        for (i, want) in wanted.into_iter().enumerate() {
            let next = after
                .counters
                .as_ref()
                .and_then(|c| c.get(i).copied())
                .unwrap_or_else(|| self.counter(i));
            let old = self.parts[i].as_ref();
            let old_entries = old.map_or(&[][..], |l| &l.entries[..]);
            let dropped = old_entries
                .iter()
                .any(|o| !o.prunable(now) && !want.iter().any(|e| e.id == o.id));
            let moved = dropped
                || next != self.counter(i)
                || want.iter().any(|e| !old_entries.iter().any(|o| o == *e));
            if !moved {
                continue;
            }
            // The shard's own order first, then what is new to it.
            let mut entries: Vec<Entry> = old_entries
                .iter()
                .filter_map(|o| want.iter().find(|e| e.id == o.id).map(|e| (*e).clone()))
                .collect();
            for e in &want {
                if !entries.iter().any(|k| k.id == e.id) {
                    entries.push((*e).clone());
                }
            }
            let base = old.cloned().unwrap_or_default();
            out.push((
                Part::Shard(i),
                Ledger {
                    schema: SCHEMA.to_string(),
                    next,
                    entries,
                    counters: None,
                    extra: base.extra,
                },
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Pattern {
        Pattern(s.to_string())
    }

    #[test]
    fn overlapping_spellings_share_a_shard_and_globs_take_all() {
        assert_eq!(of_pattern(&p("src/a.rs")), of_pattern(&p("src/a.rs/")));
        assert_eq!(
            of_pattern(&p("SRC/Parser/x.rs")),
            of_pattern(&p("src/parser/"))
        );
        assert_eq!(of_pattern(&p("src/parser")), of_pattern(&p("src/parser/x")));
        for all in [
            "src/",
            "src",
            "README.md",
            "*.md",
            "**",
            "sr?/x",
            "docs/*.md",
            "",
        ] {
            assert_eq!(of_pattern(&p(all)), ALL, "{all}");
        }
        assert_eq!(of_pattern(&p("src/a/**/*.rs")).count_ones(), 1);
        // The files of one directory spread over the shards.
        let spread: Set = (0..40)
            .map(|i| of_pattern(&p(&format!("src/m{i}.rs"))))
            .fold(0, |a, b| a | b);
        assert!(spread.count_ones() > 20, "{spread:064b}");
    }

    /// Every two patterns that overlap (under either case rule) share a
    /// shard: the property the arbitration rests on, over every pattern
    /// of up to three components built from these.
    #[test]
    fn every_two_overlapping_patterns_share_a_shard() {
        let comps = [
            "src", "SRC", "a", "A", "b", "a.rs", "*.rs", "*", "**", "a*", "[ab]", "?",
        ];
        let mut pats: Vec<Pattern> = Vec::new();
        for x in comps {
            pats.push(p(x));
            pats.push(p(&format!("{x}/")));
            for y in comps {
                pats.push(p(&format!("{x}/{y}")));
                pats.push(p(&format!("{x}/{y}/")));
                for z in ["a", "b.rs", "*"] {
                    pats.push(p(&format!("{x}/{y}/{z}")));
                }
            }
        }
        let sets: Vec<Set> = pats.iter().map(of_pattern).collect();
        let mut overlapping = 0;
        for (i, a) in pats.iter().enumerate() {
            for (j, b) in pats.iter().enumerate().skip(i) {
                for ic in [false, true] {
                    if super::super::overlap(a, b, ic) {
                        overlapping += 1;
                        assert_ne!(sets[i] & sets[j], 0, "{a} and {b} overlap (ic {ic})");
                    }
                }
            }
        }
        assert!(overlapping > 1000, "{overlapping}");
    }

    fn req(paths: &[&str], holder: &str) -> super::super::Request {
        super::super::Request {
            holder: holder.into(),
            paths: paths.iter().map(|x| p(x)).collect(),
            shared: false,
            task: None,
            reason: None,
            lease: jiff::SignedDuration::from_hours(2),
        }
    }

    fn now() -> Timestamp {
        "2026-01-01T00:00:00Z".parse().unwrap()
    }

    /// Write what `changed` says into `shards`, as a publication would.
    fn apply(shards: &mut Shards, after: &Ledger, at: Timestamp) -> Vec<Part> {
        let changed = shards.changed(after, at);
        for (part, l) in &changed {
            shards.set(*part, Some(l.clone()));
        }
        changed.into_iter().map(|(p, _)| p).collect()
    }

    fn home_of(path: &str) -> usize {
        home(of_pattern(&p(path)))
    }

    #[test]
    fn a_reservation_writes_its_shards_only_and_a_release_all_of_them() {
        let mut shards = Shards::default();
        let mut l = shards.merged();
        let e = super::super::reserve(&mut l, &req(&["src/a.rs"], "ann"), now(), false).unwrap();
        assert_eq!(e.id, format!("r{}", home_of("src/a.rs") + 1));
        assert_eq!(
            apply(&mut shards, &l, now()),
            [Part::Shard(home_of("src/a.rs"))]
        );
        // A second, unrelated one: its own shard, its own number.
        let mut l = shards.merged();
        let f = super::super::reserve(&mut l, &req(&["docs/guide/"], "bob"), now(), false).unwrap();
        assert_ne!(
            home_of("docs/guide/"),
            home_of("src/a.rs"),
            "the test needs two shards"
        );
        assert_eq!(
            apply(&mut shards, &l, now()),
            [Part::Shard(home_of("docs/guide/"))]
        );
        assert_ne!(e.id, f.id);
        // A glob over everything is in every shard, and conflicts with both.
        let mut l = shards.merged();
        assert!(super::super::reserve(&mut l, &req(&["**"], "cat"), now(), false).is_err());
        // One entry over two shards: both written; its release writes both.
        let mut l = shards.merged();
        let g = super::super::reserve(
            &mut l,
            &req(&["src/b.rs", "docs/two/"], "ann"),
            now(),
            false,
        )
        .unwrap();
        let two = apply(&mut shards, &l, now());
        assert_eq!(two.len(), 2, "{two:?}");
        let mut l = shards.merged();
        let named = [(g.id.clone(), None)];
        super::super::release(&mut l, "ann", &named, now(), false).unwrap();
        assert_eq!(apply(&mut shards, &l, now()), two);
        let merged = shards.merged();
        let ids: Vec<&str> = merged.entries.iter().map(|e| e.id.as_str()).collect();
        let mut want = vec![e.id.as_str(), f.id.as_str()];
        want.sort();
        let mut ids = ids;
        ids.sort();
        assert_eq!(ids, want);
    }

    #[test]
    fn pruning_alone_writes_no_shard() {
        let mut shards = Shards::default();
        let mut l = shards.merged();
        super::super::reserve(&mut l, &req(&["src/x/"], "ann"), now(), false).unwrap();
        apply(&mut shards, &l, now());
        // Long expired: prunable. A write in another shard leaves src's alone.
        let later = now() + super::super::PRUNE_AFTER + jiff::SignedDuration::from_hours(3);
        let mut l = shards.merged();
        super::super::reserve(&mut l, &req(&["docs/guide/"], "bob"), later, false).unwrap();
        assert!(l.entries.iter().all(|e| e.holder != "ann"), "pruned");
        assert_eq!(
            apply(&mut shards, &l, later),
            [Part::Shard(home_of("docs/guide/"))]
        );
        // Still in its shard until that shard is written for a reason.
        let src = shards.parts[home_of("src/x/")].as_ref().unwrap();
        assert_eq!(src.entries.len(), 1);
    }

    #[test]
    fn the_one_ref_ledger_moves_into_the_shards_at_the_first_write_and_ids_start_above_it() {
        let mut old = Ledger::default();
        super::super::reserve(&mut old, &req(&["src/x/"], "ann"), now(), false).unwrap();
        super::super::reserve(&mut old, &req(&["docs/guide/"], "bob"), now(), false).unwrap();
        assert_eq!(old.next, 3);
        let mut shards = Shards {
            legacy: Some(old),
            ..Shards::default()
        };
        // Read side by side: both entries there before any write.
        assert_eq!(shards.merged().entries.len(), 2);
        let mut l = shards.merged();
        let e = super::super::reserve(&mut l, &req(&["web/app/"], "cat"), now(), false).unwrap();
        let n: u64 = e.id[1..].parse().unwrap();
        assert!(n >= 3, "above every old id: {}", e.id);
        let written = apply(&mut shards, &l, now());
        assert_eq!(written[0], Part::Legacy);
        let legacy = shards.legacy.clone().unwrap();
        assert!(legacy.entries.is_empty());
        assert_eq!(legacy.next, 3, "its next kept");
        let merged = shards.merged();
        let mut ids: Vec<&str> = merged.entries.iter().map(|e| e.id.as_str()).collect();
        ids.sort();
        let mut want = vec!["r1", "r2", e.id.as_str()];
        want.sort();
        assert_eq!(ids, want);
        // Moved, not copied: the next write touches neither the old ledger
        // nor the shards it did not change.
        let mut l = shards.merged();
        super::super::release(&mut l, "cat", &[(e.id.clone(), None)], now(), false).unwrap();
        assert_eq!(
            apply(&mut shards, &l, now()),
            [Part::Shard(home_of("web/app/"))]
        );
    }

    #[test]
    fn an_entry_missing_from_one_of_its_shards_is_gone_and_a_release_in_one_wins() {
        let mut shards = Shards::default();
        let mut l = shards.merged();
        let e = super::super::reserve(
            &mut l,
            &req(&["src/x/", "docs/guide/"], "ann"),
            now(),
            false,
        )
        .unwrap();
        apply(&mut shards, &l, now());
        let (s, d) = (home_of("src/x/"), home_of("docs/guide/"));
        let mut partial = shards.clone();
        partial.parts[d].as_mut().unwrap().entries.clear();
        assert!(partial.merged().entries.is_empty());
        let mut released = shards.clone();
        released.parts[s].as_mut().unwrap().entries[0].released_at = Some("x".into());
        assert!(released.merged().entries[0].released_at.is_some());
        assert_eq!(shards.merged().entries[0].id, e.id);
    }

    #[test]
    fn each_shard_hands_out_its_own_numbers() {
        for i in 0..SHARDS {
            for at in 0..150 {
                let n = number_at_least(i, at);
                let s = SHARDS as u64;
                assert!(n >= at.max(1) && n < at.max(1) + s);
                assert_eq!(n % s, (i as u64 + 1) % s);
            }
        }
    }
}
