//! What a command produces: a JSON document (stable field names) and the
//! human text, plus the exit code when the command ran but its verdict does
//! not hold (exit 1 without an error, e.g. `lead check`, `verify`).

use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;

#[derive(Debug, Clone)]
pub struct Output {
    pub json: serde_json::Value,
    pub text: String,
    pub exit: u8,
    /// Printed on stderr as `warning: …` (in JSON mode too): things the user
    /// should know that did not stop the command.
    pub warnings: Vec<String>,
}

/// Whether this process prints the JSON document (`--json`); main clears it
/// for a text run, so that [`Output::listing`] skips building a document of
/// 10,000 rows nobody reads.
static JSON_WANTED: AtomicBool = AtomicBool::new(true);

/// This run prints text: listings need not build their JSON document.
pub fn text_only() {
    JSON_WANTED.store(false, Ordering::Relaxed);
}

impl Output {
    /// The output of a listing: as [`Output::new`], except that in a text
    /// run ([`text_only`]) the JSON document is left an empty object.
    pub fn listing(json: impl Serialize, text: impl Into<String>) -> Self {
        if JSON_WANTED.load(Ordering::Relaxed) {
            return Output::new(json, text);
        }
        Output::new(serde_json::Value::Object(Default::default()), text)
    }

    pub fn new(json: impl Serialize, text: impl Into<String>) -> Self {
        Output {
            json: serde_json::to_value(json).expect("output structs always serialise"),
            text: text.into(),
            exit: 0,
            warnings: Vec::new(),
        }
    }
    pub fn warn(mut self, warning: impl Into<String>) -> Self {
        self.warnings.push(warning.into());
        self
    }
    pub fn with_exit(mut self, exit: u8) -> Self {
        self.exit = exit;
        self
    }
}

/// "1 lane", "2 lanes", "0 lanes": a count with the noun in the right number.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_agree_in_number() {
        assert_eq!(super::count(1, "lane", "lanes"), "1 lane");
        assert_eq!(super::count(2, "lane", "lanes"), "2 lanes");
        assert_eq!(super::count(0, "ref", "refs"), "0 refs");
    }
}
