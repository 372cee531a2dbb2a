//! Payload templates (Parameters, ItemSelector, ResultSelector, JSONPath Assign), compiled once.
//! STUB: API contract.

use crate::asl::diagnostic::{Diagnostics, JsonPointer};
use crate::asl::error::StatesError;
use crate::asl::eval::Env;
use serde_json::Value;

/// A compiled payload template.
#[derive(Debug, Clone)]
pub struct Template {
    raw: Value,
}

impl Template {
    /// Compiles a template, reporting bad `.$` values and duplicate keys at their pointers.
    pub fn compile(value: &Value, at: &JsonPointer, diags: &mut Diagnostics) -> Template {
        let _ = (at, diags);
        Template { raw: value.clone() }
    }

    /// The template as written.
    pub fn raw(&self) -> &Value {
        &self.raw
    }

    /// Whether any `.$` in it reads `$$.Task.Token`.
    pub fn references_task_token(&self) -> bool {
        todo!()
    }

    /// Builds the payload. `field` names the template's field (`Parameters`, ...) for causes.
    pub fn evaluate(&self, env: &Env<'_>, field: &str) -> Result<Value, StatesError> {
        let _ = (env, field);
        todo!()
    }
}
