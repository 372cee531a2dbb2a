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
pub mod source;
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
    let value = match source::parse_json(text) {
        Ok(v) => v,
        Err(e) => {
            diags.push(source::syntax_diagnostic(text, &e));
            return (None, diags);
        }
    };
    duplicate_keys(text, &mut diags);
    let machine = parse::parse_machine(&value, machine_type, &mut diags);
    let machine = if diags.has_errors() { None } else { machine };
    (machine, diags)
}

/// Keys written twice in one object. serde_json (like AWS's parser) keeps the last one; a state
/// written twice in one `States` object loses the first state entirely, so that is an ERROR,
/// AWS's `DUPLICATE_STATE_NAME`; anywhere else it is a WARNING.
fn duplicate_keys(text: &str, diags: &mut Diagnostics) {
    for (pointer, _) in source::duplicate_keys(text) {
        let parent = pointer.parent();
        let key = pointer.tokens().last().unwrap_or_default();
        if parent.tokens().last().as_deref() == Some("States") {
            diags.error(
                Code::DuplicateStateName,
                &pointer,
                format!("Duplicate State name: {key} (written twice in the same States object; only the last definition would be kept)"),
            );
        } else {
            diags.warning(
                Code::DuplicateJsonKey,
                &pointer,
                format!("Duplicate key '{key}': only the last value is used"),
            );
        }
    }
}
