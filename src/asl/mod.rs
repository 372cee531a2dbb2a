//! The Amazon States Language: parse JSON text once into a typed, compiled [`StateMachine`],
//! validate it the way AWS does, and evaluate its paths, templates, intrinsics and Choice rules.
//!
//! No I/O and no async here: the engine drives evaluation, the CLI reports diagnostics.

pub mod choice;
#[cfg(test)]
mod corpus_tests;
pub mod diagnostic;
pub mod error;
pub mod eval;
pub mod intrinsics;
pub mod jsonata;
pub mod model;
pub mod parse;
pub mod path;
pub mod resource;
pub mod template;
pub mod variables;

pub use diagnostic::{Code, Diagnostic, Diagnostics, JsonPointer, Severity};
pub use error::StatesError;
pub use model::{MachineType, QueryLanguage, StateMachine};

/// Validates a definition given as text: JSON syntax, then every rule. Never panics.
pub fn validate_text(text: &str, machine_type: MachineType) -> Diagnostics {
    compile_text(text, machine_type).1
}

/// Parses and validates a definition given as text. The machine is only returned when there is
/// no ERROR (warnings are allowed), so whatever runs has passed every rule.
pub fn compile_text(text: &str, machine_type: MachineType) -> (Option<StateMachine>, Diagnostics) {
    let mut diags = Diagnostics::default();
    if text.trim().is_empty() {
        diags.push(Diagnostic {
            location: diagnostic::Location::None,
            ..Diagnostic::error(
                Code::SchemaValidationFailed,
                &JsonPointer::root(),
                "Definition must be a valid JSON object",
            )
        });
        return (None, diags);
    }
    let value: serde_json::Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            diags.push(Diagnostic {
                location: diagnostic::Location::Text {
                    line: e.line(),
                    column: e.column(),
                },
                ..Diagnostic::error(
                    Code::InvalidJsonDescription,
                    &JsonPointer::root(),
                    e.to_string(),
                )
            });
            return (None, diags);
        }
    };
    let machine = parse::parse_machine(&value, machine_type, &mut diags);
    (machine, diags)
}
