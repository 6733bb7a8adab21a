//! YAML records with a `schema:` field. Parsing checks the schema family and
//! refuses a newer major version; every record type keeps unknown fields in
//! an `extra` map so a rewrite by an older git-swarm loses nothing.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{Code, Error, Result};

/// Unknown fields carried through a rewrite.
pub type Extra = std::collections::BTreeMap<String, serde_yaml_ng::Value>;

/// The major version this build understands of each schema family.
pub const SUPPORTED_MAJOR: u32 = 1;

/// The fields that may hold a newline in a record read with [`parse`]: a
/// plan's `contract`, which packets and acceptances copy. A kind that names
/// its own ([`Record::MULTILINE_FIELDS`](super::records::Record::MULTILINE_FIELDS))
/// reads with [`parse_with`].
pub const SHARED_MULTILINE_FIELDS: &[&str] = &["contract"];

/// Parse a record of schema family `family` (e.g. `swarm-plan`) from YAML.
/// `what` names the record in errors (e.g. `refs/swarm/plans/x:plan.yaml`).
pub fn parse<T: DeserializeOwned + Serialize>(bytes: &[u8], family: &str, what: &str) -> Result<T> {
    parse_with(bytes, family, what, SHARED_MULTILINE_FIELDS)
}

/// [`parse`], where only the fields in `multiline` may hold a newline.
pub fn parse_with<T: DeserializeOwned + Serialize>(
    bytes: &[u8],
    family: &str,
    what: &str,
    multiline: &[&str],
) -> Result<T> {
    let record: T = parse_unchecked(bytes, family, what)?;
    // No record git-swarm writes holds a terminal control character (or a
    // newline outside the fields that may hold one): one that does was forged.
    if crate::text::yaml_may_hold_forbidden(bytes) {
        crate::text::check_record(&record, what, multiline)?;
    }
    Ok(record)
}

/// Refuse a parsed record whose name fields (`names`) or address fields
/// (`addresses`) break the rules `names` sets for them (`RECORD_INVALID`):
/// git-swarm checks both before writing, so such a record was forged.
/// Empty values are left to the record's own rules.
pub fn check_identities(
    what: &str,
    names: &[(&str, &str)],
    addresses: &[(&str, &str)],
) -> Result<()> {
    let bad_name = names
        .iter()
        .find(|(_, v)| !v.is_empty() && !crate::names::is_valid_name(v));
    let bad_addr = addresses
        .iter()
        .find(|(_, v)| !v.is_empty() && !crate::names::is_valid_address(v));
    match (bad_name, bad_addr) {
        (None, None) => Ok(()),
        (Some((field, _)), _) | (None, Some((field, _))) => Err(Error::new(
            Code::RecordInvalid,
            format!(
                "{what} field `{field}` is not a valid {}; it was not read",
                if bad_name.is_some() {
                    "name"
                } else {
                    "address"
                }
            ),
        )
        .hint(
            "git-swarm never writes such a record: find who published it with `git log` on its ref",
        )),
    }
}

fn parse_unchecked<T: DeserializeOwned>(bytes: &[u8], family: &str, what: &str) -> Result<T> {
    precheck(bytes, what)?;
    // Records we write start with their `schema:` line: check it as text and
    // deserialize once. Anything else takes the slower path through a Value,
    // which gives the precise error.
    if let Some(schema) = leading_schema(bytes) {
        if check_schema_str(schema, family, what).is_ok() {
            if let Ok(record) = serde_yaml_ng::from_slice::<T>(bytes) {
                return Ok(record);
            }
        }
    }
    let value: serde_yaml_ng::Value = serde_yaml_ng::from_slice(bytes)
        .map_err(|e| Error::new(Code::YamlInvalid, format!("{what} is not valid YAML: {e}")))?;
    check_schema(&value, family, what)?;
    serde_yaml_ng::from_value(value).map_err(|e| {
        Error::new(
            Code::YamlInvalid,
            format!("{what} does not match schema {family}/v1: {e}"),
        )
    })
}

fn leading_schema(bytes: &[u8]) -> Option<&str> {
    let first = bytes.split(|b| *b == b'\n').next()?;
    let rest = std::str::from_utf8(first.strip_prefix(b"schema: ")?).ok()?;
    let rest = rest.trim();
    rest.chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '/' | '.' | '_'))
        .then_some(rest)
}

/// Refuse a record whose schema is another family or a newer major version.
pub fn check_schema(value: &serde_yaml_ng::Value, family: &str, what: &str) -> Result<()> {
    let schema = value
        .get("schema")
        .and_then(|s| s.as_str())
        .ok_or_else(|| {
            Error::new(
                Code::YamlInvalid,
                format!("{what} has no `schema:` field (expected {family}/v1)"),
            )
        })?;
    check_schema_str(schema, family, what)
}

fn check_schema_str(schema: &str, family: &str, what: &str) -> Result<()> {
    let (fam, version) = schema.split_once("/v").ok_or_else(|| {
        Error::new(
            Code::YamlInvalid,
            format!("{what} has schema '{schema}', expected {family}/v1"),
        )
    })?;
    if fam != family {
        return Err(Error::new(
            Code::YamlInvalid,
            format!("{what} has schema '{schema}', expected {family}/v1"),
        ));
    }
    let major: u32 = version
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .ok_or_else(|| {
            Error::new(
                Code::YamlInvalid,
                format!("{what} has an unreadable schema version '{schema}'"),
            )
        })?;
    if major > SUPPORTED_MAJOR {
        return Err(Error::new(
            Code::SchemaUnsupported,
            format!("{what} uses schema {schema}, newer than this git-swarm understands ({family}/v{SUPPORTED_MAJOR})"),
        )
        .hint("upgrade git-swarm (cargo install --path . in a newer checkout) before touching this record"));
    }
    Ok(())
}

/// The files of one record commit, by name.
pub type Files = BTreeMap<String, Vec<u8>>;

/// A record a listing could not read: shown as such (name, ref, why)
/// instead of failing the whole listing, so one bad record published by
/// anyone does not stop `status` or `plan list` in every clone.
#[derive(Debug, Clone, Serialize)]
pub struct Unreadable {
    /// `plan`, `lane`, `packet`, `lead`.
    pub kind: &'static str,
    pub name: String,
    #[serde(rename = "ref")]
    pub refname: String,
    /// The error code reading it gave (`RECORD_INVALID`, `YAML_INVALID`, …).
    pub code: Code,
    pub reason: String,
}

impl Unreadable {
    pub fn new(kind: &'static str, name: &str, refname: &str, err: &Error) -> Self {
        Unreadable {
            kind,
            name: name.to_string(),
            refname: refname.to_string(),
            code: err.code,
            reason: err.message.clone(),
        }
    }
}

/// The files of a record kept as one YAML file (`name`).
pub fn yaml_file<T: Serialize>(name: &str, record: &T) -> Result<Files> {
    Ok(Files::from([(name.to_string(), to_yaml(record)?)]))
}

/// The bytes of a record's one YAML file (`name`); `YAML_INVALID` naming
/// the version (`what`) when the commit lacks it.
pub fn the_file<'f>(files: &'f Files, name: &str, what: &str) -> Result<&'f [u8]> {
    files
        .get(name)
        .map(Vec::as_slice)
        .ok_or_else(|| Error::new(Code::YamlInvalid, format!("{what} has no {name}")))
}

pub fn to_yaml<T: Serialize>(record: &T) -> Result<Vec<u8>> {
    serde_yaml_ng::to_string(record)
        .map(String::into_bytes)
        .map_err(|e| Error::new(Code::Internal, format!("could not serialise a record: {e}")))
}

/// The largest record YAML git-swarm parses. Records are a few KiB at most;
/// the limit keeps one hostile record from costing every clone time and memory.
pub const MAX_RECORD_BYTES: usize = 64 * 1024;
/// The deepest nesting (block indentation levels plus flow `[`/`{` levels)
/// git-swarm parses. Records nest three or four levels; the YAML parser's
/// time grows with the square of the flow depth, so a record nested
/// 100,000 deep would stall every command that lists it.
pub const MAX_RECORD_DEPTH: usize = 32;

/// Refuse, before any parsing, a record that is too large or too deeply
/// nested (`RECORD_INVALID`, exit 2). The depth is measured by a linear
/// scan that knows just enough YAML to skip what cannot nest (quoted
/// scalars, block scalars, comments) and errs towards counting.
pub fn precheck(bytes: &[u8], what: &str) -> Result<()> {
    if bytes.len() > MAX_RECORD_BYTES {
        return Err(Error::new(
            Code::RecordInvalid,
            format!(
                "{what} is {} bytes, more than the {MAX_RECORD_BYTES} a record may have; it was not read",
                bytes.len()
            ),
        )
        .hint("git-swarm never writes a record this large: read from a ref, find who published it with `git log` on the ref; read from a file (`--from`), shorten the file"));
    }
    let depth = nesting_depth(bytes, MAX_RECORD_DEPTH + 1);
    if depth > MAX_RECORD_DEPTH {
        return Err(Error::new(
            Code::RecordInvalid,
            format!("{what} is nested more than {MAX_RECORD_DEPTH} levels deep; it was not read"),
        )
        .hint("git-swarm never writes a record this deep: read from a ref, find who published it with `git log` on the ref; read from a file (`--from`), flatten the file"));
    }
    Ok(())
}

/// An upper estimate of a YAML document's nesting depth, computed in one
/// pass; stops counting at `stop`. Block nesting is the stack of
/// indentation levels (plus `- ` / `? ` entries opened on one line); flow
/// nesting is the `[`/`{` depth outside quoted scalars. A quoted scalar is
/// skipped only to the end of its line, and a block scalar (`|`, `>`) only
/// while its lines are indented at least as far as its first line: where
/// the scan is unsure it reads on as YAML, which can only count more.
pub fn nesting_depth(bytes: &[u8], stop: usize) -> usize {
    let n = bytes.len();
    let mut scan = Depth {
        bytes,
        stop,
        max: 0,
        flow: 0,
        indents: Vec::new(),
    };
    let mut i = 0usize;
    while i < n {
        // Start of a line.
        let line_start = i;
        while i < n && bytes[i] == b' ' {
            i += 1;
        }
        let indent = i - line_start;
        if i >= n {
            break;
        }
        if matches!(bytes[i], b'\n' | b'\r' | b'#') {
            i = next_line(bytes, i);
            continue;
        }
        let mut block = 0usize;
        if scan.flow == 0 {
            while scan.indents.last().is_some_and(|&top| top >= indent) {
                scan.indents.pop();
            }
            scan.indents.push(indent);
            block = block_indicators(bytes, i);
        }
        if scan.reached(block) {
            return scan.max;
        }
        let Some((end, block_scalar)) = scan.rest_of_line(i, line_start, block) else {
            return scan.max;
        };
        i = (end + 1).min(n);
        if block_scalar {
            i = skip_block_scalar(bytes, i, indent);
        }
    }
    scan.max
}

/// The state of [`nesting_depth`]'s scan: the deepest nesting seen, the
/// flow depth and the stack of block indentation levels.
struct Depth<'a> {
    bytes: &'a [u8],
    stop: usize,
    max: usize,
    flow: usize,
    indents: Vec<usize>,
}

impl Depth<'_> {
    /// Count the nesting now (with `block` indicators on this line); true
    /// once it reaches `stop`.
    fn reached(&mut self, block: usize) -> bool {
        self.max = self.max.max(self.indents.len() + block + self.flow);
        self.max >= self.stop
    }

    /// Scan the rest of the line from `i`: flow brackets, quoted scalars,
    /// comments, anchors and tags. Returns where the line ends and whether
    /// a block scalar (`|`, `>`) opened on it; None once `stop` is reached.
    fn rest_of_line(
        &mut self,
        mut i: usize,
        line_start: usize,
        block: usize,
    ) -> Option<(usize, bool)> {
        let bytes = self.bytes;
        let n = bytes.len();
        let mut at_start = true;
        let mut block_scalar = false;
        while i < n && bytes[i] != b'\n' {
            let c = bytes[i];
            let next = bytes.get(i + 1).copied();
            let spaced = |b: Option<u8>| matches!(b, None | Some(b' ' | b'\t' | b'\r' | b'\n'));
            match c {
                b' ' | b'\t' | b'\r' => {}
                b'#' if i == line_start || matches!(bytes[i - 1], b' ' | b'\t') => {
                    while i < n && bytes[i] != b'\n' {
                        i += 1;
                    }
                    continue;
                }
                b'"' | b'\'' if at_start => {
                    i = skip_quoted(bytes, i, c);
                    at_start = false;
                    if i >= n || bytes[i] == b'\n' {
                        continue;
                    }
                }
                b'[' | b'{' if at_start || self.flow > 0 => {
                    self.flow += 1;
                    if self.reached(block) {
                        return None;
                    }
                    at_start = true;
                }
                b']' | b'}' if self.flow > 0 => {
                    self.flow -= 1;
                    at_start = false;
                }
                b',' if self.flow > 0 => at_start = true,
                b':' if self.flow > 0 || spaced(next) => at_start = true,
                b'-' | b'?' if at_start && spaced(next) => {}
                b'|' | b'>' if at_start && self.flow == 0 => {
                    block_scalar = true;
                    at_start = false;
                }
                b'&' | b'!' if at_start => {
                    // An anchor or tag: the node proper starts after it.
                    while i < n && !matches!(bytes[i], b' ' | b'\t' | b'\n') {
                        i += 1;
                    }
                    continue;
                }
                _ => at_start = false,
            }
            i += 1;
        }
        Some((i, block_scalar))
    }
}

/// How many block indicators open the node at `i`: `- - x` and `? ? x`
/// nest without a new line.
fn block_indicators(bytes: &[u8], i: usize) -> usize {
    let n = bytes.len();
    let mut block = 0;
    let mut j = i;
    while j + 1 < n && matches!(bytes[j], b'-' | b'?') && matches!(bytes[j + 1], b' ' | b'\t') {
        block += 1;
        j += 2;
        while j < n && bytes[j] == b' ' {
            j += 1;
        }
    }
    block
}

/// From the opening quote `c` at `i`: the index of the closing quote, or of
/// the end of the line (or input) when the scalar goes on.
fn skip_quoted(bytes: &[u8], mut i: usize, c: u8) -> usize {
    let n = bytes.len();
    i += 1;
    while i < n && bytes[i] != b'\n' {
        if c == b'"' && bytes[i] == b'\\' {
            i += 2;
            continue;
        }
        if bytes[i] == c {
            if c == b'\'' && bytes.get(i + 1) == Some(&b'\'') {
                i += 2;
                continue;
            }
            break;
        }
        i += 1;
    }
    i
}

/// Skip a block scalar's lines from `i`: blank ones, and those indented at
/// least as far as its first non-blank line (and further than the line
/// that opened it, at `indent`).
fn skip_block_scalar(bytes: &[u8], mut i: usize, indent: usize) -> usize {
    let n = bytes.len();
    let mut content_indent: Option<usize> = None;
    while i < n {
        let mut j = i;
        while j < n && bytes[j] == b' ' {
            j += 1;
        }
        let blank = j >= n || matches!(bytes[j], b'\n' | b'\r');
        if !blank {
            let this = j - i;
            let need = *content_indent.get_or_insert(this);
            if this <= indent || this < need {
                break;
            }
        }
        i = next_line(bytes, j);
    }
    i
}

fn next_line(bytes: &[u8], from: usize) -> usize {
    match bytes[from..].iter().position(|b| *b == b'\n') {
        Some(p) => from + p + 1,
        None => bytes.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_of_ordinary_records_is_small() {
        let yaml = b"schema: dwp-handoff/v1\nid: x\ndone:\n- 'it''s [done'\n- \"a [b\"\nverified:\n- claim: tests [pass\n  evidence: 'x'\nlist: []\nmap: {}\ntext: |\n  [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\n  more [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\nnext: 1 # [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\n";
        let d = nesting_depth(yaml, 100);
        assert!(d <= 4, "{d}");
    }

    #[test]
    fn deep_flow_and_block_nesting_are_caught() {
        let flow = format!(
            "schema: swarm-plan/v1\nx: {}1{}\n",
            "[".repeat(1000),
            "]".repeat(1000)
        );
        assert!(nesting_depth(flow.as_bytes(), 33) > 32);
        assert!(precheck(flow.as_bytes(), "x").is_err());
        let braces = format!("x: {}", "{a: ".repeat(100));
        assert!(nesting_depth(braces.as_bytes(), 33) > 32);
        let dashes = format!("x:\n{}1\n", "- ".repeat(100));
        assert!(nesting_depth(dashes.as_bytes(), 33) > 32);
        let mut block = String::new();
        for k in 0..40 {
            block.push_str(&format!("{}k{k}:\n", " ".repeat(k)));
        }
        assert!(nesting_depth(block.as_bytes(), 33) > 32);
        // Fake closers in quotes do not cancel real openers.
        let fake = format!("x: {}\n", "[ \"]\", ".repeat(100));
        assert!(nesting_depth(fake.as_bytes(), 33) > 32);
        // A quote that does not close on its line hides nothing after it.
        let open_quote = format!("a: 'x\nb: {}\n", "[".repeat(100));
        assert!(nesting_depth(open_quote.as_bytes(), 33) > 32);
        // A block scalar ends where its indentation does.
        let after_block = format!("a: |\n    'x\n  b\nc: {}\n", "[".repeat(100));
        assert!(nesting_depth(after_block.as_bytes(), 33) > 32);
    }

    #[test]
    fn too_large_is_refused_before_parsing() {
        let big = vec![b'a'; MAX_RECORD_BYTES + 1];
        let err = precheck(&big, "refs/swarm/plans/x:plan.yaml").unwrap_err();
        assert_eq!(err.code, Code::RecordInvalid);
    }
}
