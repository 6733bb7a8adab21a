//! What a command produces: a JSON document (stable field names) and the
//! human text, plus the exit code when the command ran but its verdict does
//! not hold (exit 1 without an error, e.g. `lead check`, `verify`).

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

impl Output {
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
