//! What a command produces: a JSON document (stable field names) and the
//! human text, plus the exit code when the command ran but its verdict does
//! not hold (exit 1 without an error, e.g. `lead check`, `verify`).

use serde::Serialize;

#[derive(Debug, Clone)]
pub struct Output {
    pub json: serde_json::Value,
    pub text: String,
    pub exit: u8,
}

impl Output {
    pub fn new(json: impl Serialize, text: impl Into<String>) -> Self {
        Output {
            json: serde_json::to_value(json).expect("output structs always serialise"),
            text: text.into(),
            exit: 0,
        }
    }
    pub fn with_exit(mut self, exit: u8) -> Self {
        self.exit = exit;
        self
    }
}
