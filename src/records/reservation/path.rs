//! Reserved paths: normalising what a user typed into a repository-relative
//! [`Pattern`] (a file, a directory `dir/`, or a glob), refusing hostile
//! input, and deciding whether two patterns — or a pattern and a file —
//! overlap. Overlap is conservative: when unsure, two patterns overlap.

use serde::{Deserialize, Serialize};

use crate::error::{Code, Error, Result};

/// One reserved path, relative to the repository root, `/`-separated.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Pattern(pub String);

/// What a pattern names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    File,
    /// `dir/`: everything under it.
    Dir,
    /// Holds `*`, `?` or `[`: `*` and `?` stay in one segment, `**` crosses them.
    Glob,
}

fn is_meta(c: char) -> bool {
    matches!(c, '*' | '?' | '[')
}

impl Pattern {
    pub fn shape(&self) -> Shape {
        if self.0.chars().any(is_meta) {
            Shape::Glob
        } else if self.0.ends_with('/') {
            Shape::Dir
        } else {
            Shape::File
        }
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Pattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn invalid(input: &str, why: &str) -> Error {
    Error::new(
        Code::ReservationPathInvalid,
        format!(
            "'{}' cannot be reserved: {why}; nothing was written",
            crate::text::clean(input)
        ),
    )
    .hint("name a file, a directory ending in '/', or a glob, inside this repository (relative to where you are)")
}

/// Normalise `input` as typed in the directory `prefix` (that directory
/// relative to the repository root, `""` at the root) into a pattern:
/// `.` and empty segments go, a trailing `/` marks a directory. Refused
/// (`RESERVATION_PATH_INVALID`): empty input, control characters, absolute
/// paths, any `..` segment, a backslash, and anything inside `.git/`.
/// (A path leaving the worktree through a symlink is the operation's check:
/// it needs the file system.)
pub fn normalise(input: &str, prefix: &str) -> Result<Pattern> {
    if input.trim().is_empty() {
        return Err(invalid(input, "the path is empty"));
    }
    if crate::text::first_forbidden(input, false).is_some() || input.contains('\t') {
        return Err(invalid(input, "it holds a control character"));
    }
    if unclosed_class(input) {
        return Err(invalid(input, "a '[' in it opens a class no ']' closes"));
    }
    if input.starts_with('/') || input.starts_with('~') || input.as_bytes().get(1) == Some(&b':') {
        return Err(invalid(input, "it is an absolute path"));
    }
    if input.contains('\\') {
        return Err(invalid(input, "it holds a backslash"));
    }
    let dir = input.ends_with('/');
    let mut segments: Vec<&str> = prefix
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect();
    for seg in input.split('/') {
        match seg {
            "" | "." => {}
            ".." => return Err(invalid(input, "it holds a '..' segment")),
            s => segments.push(s),
        }
    }
    if segments.is_empty() {
        return Err(invalid(input, "it names the whole repository"));
    }
    if segments.iter().any(|s| s.eq_ignore_ascii_case(".git")) {
        return Err(invalid(input, "it is inside .git"));
    }
    let mut path = segments.join("/");
    if dir && !path.chars().any(is_meta) {
        path.push('/');
    }
    Ok(Pattern(path))
}

/// A `[` with no `]` after it: a typo, not a class (as a glob it would
/// match any one character and, being conservative, overlap almost all).
fn unclosed_class(p: &str) -> bool {
    p.rfind('[').is_some_and(|i| !p[i..].contains(']'))
}

/// The text before the first glob character.
fn literal_prefix(p: &str) -> &str {
    p.find(is_meta).map_or(p, |i| &p[..i])
}

/// The text after the last glob character (a `]` closes a class).
fn literal_suffix(p: &str) -> &str {
    match p.rfind(|c| is_meta(c) || c == ']') {
        Some(i) => &p[i + 1..],
        None => p,
    }
}

fn comparable_prefix(a: &str, b: &str) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

fn comparable_suffix(a: &str, b: &str) -> bool {
    a.ends_with(b) || b.ends_with(a)
}

fn fold(s: &str, ignore_case: bool) -> String {
    if ignore_case {
        s.to_lowercase()
    } else {
        s.to_string()
    }
}

/// Whether some path could be covered by both patterns (conservative).
pub fn overlap(a: &Pattern, b: &Pattern, ignore_case: bool) -> bool {
    let (x, y) = (fold(&a.0, ignore_case), fold(&b.0, ignore_case));
    let (pa, pb) = (Pattern(x), Pattern(y));
    match (pa.shape(), pb.shape()) {
        (Shape::File, Shape::File) => under_file(&pa.0, &pb.0) || under_file(&pb.0, &pa.0),
        (Shape::Dir, Shape::File) => pb.0.starts_with(&pa.0) || under_file(&pb.0, &pa.0),
        (Shape::File, Shape::Dir) => pa.0.starts_with(&pb.0) || under_file(&pa.0, &pb.0),
        (Shape::Dir, Shape::Dir) => comparable_prefix(&pa.0, &pb.0),
        (Shape::Glob, Shape::File) => glob_over_file(&pa.0, &pb.0),
        (Shape::File, Shape::Glob) => glob_over_file(&pb.0, &pa.0),
        (Shape::Glob, Shape::Dir) => comparable_prefix(literal_prefix(&pa.0), &pb.0),
        (Shape::Dir, Shape::Glob) => comparable_prefix(&pa.0, literal_prefix(&pb.0)),
        (Shape::Glob, Shape::Glob) => {
            comparable_prefix(literal_prefix(&pa.0), literal_prefix(&pb.0))
                && comparable_suffix(literal_suffix(&pa.0), literal_suffix(&pb.0))
        }
    }
}

/// Whether the pattern covers the file `path` (a path a commit touches).
pub fn covers(p: &Pattern, path: &str, ignore_case: bool) -> bool {
    if ignore_case {
        let (pat, path) = (fold(&p.0, true), fold(path, true));
        return covers_exact(&Pattern(pat), &path);
    }
    covers_exact(p, path)
}

/// A glob and a file name overlap where the glob matches the file, or
/// reaches under a directory of that name (see [`under_file`]).
fn glob_over_file(glob: &str, file: &str) -> bool {
    if glob_match(glob, file) {
        return true;
    }
    // Could the glob match something under `file/`? Segment by segment:
    // each of the file's segments must be matched by the glob's segment
    // there, and the glob must reach deeper; a `**` on the way can match
    // anything (conservative).
    let (g, f): (Vec<&str>, Vec<&str>) = (glob.split('/').collect(), file.split('/').collect());
    for (i, fs) in f.iter().enumerate() {
        match g.get(i) {
            Some(&"**") => return true,
            Some(gs) if glob_match(gs, fs) => {}
            _ => return false,
        }
    }
    g.len() > f.len()
}

/// Whether `path` is the file `file` or lies under a directory of that
/// name: a name reserved as a file that is (or becomes) a directory is
/// reserved with what it holds, since one path cannot be both.
fn under_file(file: &str, path: &str) -> bool {
    path == file
        || path
            .strip_prefix(file)
            .is_some_and(|rest| rest.starts_with('/'))
}

fn covers_exact(p: &Pattern, path: &str) -> bool {
    match p.shape() {
        Shape::File => under_file(&p.0, path),
        Shape::Dir => path.starts_with(&p.0),
        Shape::Glob => glob_match(&p.0, path),
    }
}

/// Match a glob against a path: `*` and `?` within one segment, `**` any
/// number of segments, `[…]` one character of a class (`!`/`^` negates).
/// A class that does not close is matched as any one character.
pub fn glob_match(pat: &str, path: &str) -> bool {
    let p: Vec<char> = pat.chars().collect();
    let s: Vec<char> = path.chars().collect();
    matches(&p, &s)
}

fn matches(p: &[char], s: &[char]) -> bool {
    match p.first() {
        None => s.is_empty(),
        Some('*') if p.get(1) == Some(&'*') => {
            if p.len() == 2 {
                return true;
            }
            let rest = p[2..].strip_prefix(&['/']).unwrap_or(&p[2..]);
            (0..=s.len()).any(|i| (i == 0 || s[i - 1] == '/') && matches(rest, &s[i..]))
                || matches(&p[2..], s)
        }
        Some('*') => {
            for i in 0..=s.len() {
                if matches(&p[1..], &s[i..]) {
                    return true;
                }
                if i < s.len() && s[i] == '/' {
                    break;
                }
            }
            false
        }
        Some('?') => !s.is_empty() && s[0] != '/' && matches(&p[1..], &s[1..]),
        Some('[') => {
            let Some(c) = s.first().filter(|c| **c != '/') else {
                return false;
            };
            match class(&p[1..], *c) {
                Some((hit, used)) => hit && matches(&p[1 + used..], &s[1..]),
                None => matches(&p[1..], &s[1..]),
            }
        }
        Some(c) => s.first() == Some(c) && matches(&p[1..], &s[1..]),
    }
}

/// Whether `c` is in the class starting after `[`, and how many characters
/// the class used (through `]`); None when it never closes.
fn class(p: &[char], c: char) -> Option<(bool, usize)> {
    let mut i = 0;
    let negate = matches!(p.first(), Some('!' | '^'));
    if negate {
        i += 1;
    }
    let mut hit = false;
    let mut first = true;
    while i < p.len() {
        if p[i] == ']' && !first {
            return Some((hit != negate, i + 1));
        }
        first = false;
        if i + 2 < p.len() && p[i + 1] == '-' && p[i + 2] != ']' {
            hit |= p[i] <= c && c <= p[i + 2];
            i += 3;
        } else {
            hit |= p[i] == c;
            i += 1;
        }
    }
    None
}
