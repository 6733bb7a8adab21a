//! The table of changeset names the cache's bitmaps index into: exact
//! spellings, in the order they were first met, with an index by name that
//! is built only on the first name not found by position.

use std::collections::HashMap;

use super::bits::FxBuild;
use crate::guards::changeset::name::is_changeset_name;

#[derive(Default)]
pub struct NameTable {
    /// Changeset names, exact spelling; bitmaps index into this table.
    pub names: Vec<String>,
    /// exact name → index; built on the first miss only.
    index: Option<HashMap<String, usize, FxBuild>>,
}

impl NameTable {
    pub fn new(names: Vec<String>) -> NameTable {
        NameTable { names, index: None }
    }

    /// The index of `name`, added to the table if new.
    pub fn add(&mut self, name: &str) -> usize {
        let names = &self.names;
        let index = self.index.get_or_insert_with(|| {
            let mut m = HashMap::with_capacity_and_hasher(names.len() * 2, FxBuild);
            m.extend(names.iter().enumerate().map(|(i, n)| (n.clone(), i)));
            m
        });
        if let Some(&i) = index.get(name) {
            return i;
        }
        let i = self.names.len();
        index.insert(name.to_string(), i);
        self.names.push(name.to_string());
        i
    }

    /// The index of a tree entry's file name if it is a changeset name.
    /// `previous` is
    /// the name indices of the last tree read, in tree order, and `cursor`
    /// the position reached in it: a name found there is not hashed.
    pub fn changeset_index(
        &mut self,
        name: &[u8],
        previous: &[usize],
        cursor: &mut usize,
    ) -> Option<usize> {
        let name = std::str::from_utf8(name).ok()?;
        if !is_changeset_name(name) {
            return None;
        }
        while *cursor < previous.len() && self.names[previous[*cursor]].as_str() < name {
            *cursor += 1;
        }
        let i = match previous.get(*cursor) {
            Some(&p) if self.names[p] == name => p,
            _ => self.add(name),
        };
        Some(i)
    }

    /// Indices of the names equal to `lower` case-insensitively (to test many trees at once).
    pub fn spellings(&self, lower: &str) -> Vec<usize> {
        self.names
            .iter()
            .enumerate()
            .filter(|(_, n)| n.len() == lower.len() && n.eq_ignore_ascii_case(lower))
            .map(|(i, _)| i)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_added_once_and_found_by_position_or_by_name() {
        let mut t = NameTable::new(vec!["a.md".into(), "c.md".into()]);
        assert_eq!(t.add("c.md"), 1);
        assert_eq!(t.add("b.md"), 2);
        assert_eq!(t.add("b.md"), 2);
        // Walking along the previous tree's order.
        let previous = [0, 2, 1];
        let mut cursor = 0;
        assert_eq!(t.changeset_index(b"a.md", &previous, &mut cursor), Some(0));
        assert_eq!(t.changeset_index(b"b.md", &previous, &mut cursor), Some(2));
        assert_eq!(cursor, 1);
        assert_eq!(t.changeset_index(b"bb.md", &previous, &mut cursor), Some(3));
        assert_eq!(
            t.changeset_index(b"README.md", &previous, &mut cursor),
            None
        );
        assert_eq!(t.changeset_index(b"x\n.md", &[], &mut 0), Some(4));
        assert_eq!(t.changeset_index(b"\xff.md", &[], &mut 0), None);
        t.add("A.MD");
        assert_eq!(t.spellings("a.md"), vec![0, 5]);
        assert!(t.spellings("z.md").is_empty());
    }
}
