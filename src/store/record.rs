//! YAML records with a `schema:` field. Parsing checks the schema family and
//! refuses a newer major version; every record type keeps unknown fields in
//! an `extra` map so a rewrite by an older git-swarm loses nothing.

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{Error, Result};

/// Unknown fields carried through a rewrite.
pub type Extra = std::collections::BTreeMap<String, serde_yaml_ng::Value>;

/// The major version this build understands of each schema family.
pub const SUPPORTED_MAJOR: u32 = 1;

/// Parse a record of schema family `family` (e.g. `swarm-plan`) from YAML.
/// `what` names the record in errors (e.g. `refs/swarm/plans/x:plan.yaml`).
pub fn parse<T: DeserializeOwned>(bytes: &[u8], family: &str, what: &str) -> Result<T> {
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
        .map_err(|e| Error::usage("YAML_INVALID", format!("{what} is not valid YAML: {e}")))?;
    check_schema(&value, family, what)?;
    serde_yaml_ng::from_value(value).map_err(|e| {
        Error::usage(
            "YAML_INVALID",
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
            Error::usage(
                "YAML_INVALID",
                format!("{what} has no `schema:` field (expected {family}/v1)"),
            )
        })?;
    check_schema_str(schema, family, what)
}

fn check_schema_str(schema: &str, family: &str, what: &str) -> Result<()> {
    let (fam, version) = schema.split_once("/v").ok_or_else(|| {
        Error::usage(
            "YAML_INVALID",
            format!("{what} has schema '{schema}', expected {family}/v1"),
        )
    })?;
    if fam != family {
        return Err(Error::usage(
            "YAML_INVALID",
            format!("{what} has schema '{schema}', expected {family}/v1"),
        ));
    }
    let major: u32 = version
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .ok_or_else(|| {
            Error::usage(
                "YAML_INVALID",
                format!("{what} has an unreadable schema version '{schema}'"),
            )
        })?;
    if major > SUPPORTED_MAJOR {
        return Err(Error::usage(
            "SCHEMA_UNSUPPORTED",
            format!("{what} uses schema {schema}, newer than this git-swarm understands ({family}/v{SUPPORTED_MAJOR})"),
        )
        .hint("upgrade git-swarm (cargo install --path . in a newer checkout) before touching this record"));
    }
    Ok(())
}

pub fn to_yaml<T: Serialize>(record: &T) -> Result<Vec<u8>> {
    serde_yaml_ng::to_string(record)
        .map(String::into_bytes)
        .map_err(|e| Error::env("INTERNAL", format!("could not serialise a record: {e}")))
}
