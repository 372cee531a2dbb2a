//! The intrinsic functions (`States.Format(...)` and the other 17). STUB: API contract.

use crate::asl::error::StatesError;
use crate::asl::eval::Env;
use serde_json::Value;

/// Why an intrinsic call did not parse or is malformed (unknown name, wrong arity).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct IntrinsicError {
    /// What is wrong, for a person.
    pub message: String,
}

/// A parsed intrinsic function call.
#[derive(Debug, Clone)]
pub struct Call {
    text: String,
}

impl Call {
    /// Whether a string looks like an intrinsic call (`States.Name(`...).
    pub fn looks_like(text: &str) -> bool {
        text.trim_start().starts_with("States.")
    }

    /// Parses a call and checks names and arities.
    pub fn parse(text: &str) -> Result<Call, IntrinsicError> {
        let _ = text;
        todo!()
    }

    /// The source text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Evaluates the call.
    pub fn evaluate(&self, env: &Env<'_>) -> Result<Value, StatesError> {
        let _ = env;
        todo!()
    }
}
