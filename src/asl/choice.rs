//! Choice rules (JSONPath): a boolean tree of data tests. STUB: API contract.

use crate::asl::diagnostic::{Diagnostics, JsonPointer};
use crate::asl::error::StatesError;
use crate::asl::eval::Env;
use serde_json::Value;

/// A compiled Choice rule, without its `Next` (the model keeps that).
#[derive(Debug, Clone)]
pub struct Rule {
    raw: Value,
}

impl Rule {
    /// Compiles a rule object; `top_level` rules may (must) carry `Next`, nested ones must not.
    /// `Next`, `Assign`, `Comment` and `Output` keys are left for the caller and not reported here.
    pub fn compile(value: &Value, at: &JsonPointer, diags: &mut Diagnostics) -> Rule {
        let _ = (at, diags);
        Rule { raw: value.clone() }
    }

    /// Evaluates the rule against the state's effective input.
    pub fn evaluate(&self, env: &Env<'_>) -> Result<bool, StatesError> {
        let _ = env;
        todo!()
    }
}
