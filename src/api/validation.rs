//! ValidateStateMachineDefinition's response shape, shared by `sfn-local validate --format
//! json` and serve's `ValidateStateMachineDefinition`: `{"result", "diagnostics", "truncated"}`
//! with each diagnostic keyed `severity, code, message, location` (AWS's documented order;
//! `location` left out when there is none).

use crate::asl::diagnostic::{Diagnostic, Diagnostics, Location};
use crate::asl::source::split_aws_location;
use serde_json::{json, Map, Value};

/// `result`: `FAIL` exactly when there is an ERROR, else `OK`.
pub fn result(diagnostics: &Diagnostics) -> &'static str {
    if diagnostics.has_errors() {
        "FAIL"
    } else {
        "OK"
    }
}

/// One diagnostic in AWS's shape. Messages are AWS's, verbatim, Jackson location included.
pub fn diagnostic_json(diagnostic: &Diagnostic) -> Value {
    let mut object = Map::new();
    object.insert("severity".to_owned(), json!(diagnostic.severity));
    object.insert("code".to_owned(), json!(diagnostic.code.as_str()));
    object.insert("message".to_owned(), json!(diagnostic.message));
    if let Some(location) = aws_location(diagnostic) {
        object.insert("location".to_owned(), json!(location));
    }
    Value::Object(object)
}

/// AWS's `location`: the pointer (`/` for the root), or for a text that is not JSON, Jackson's
/// `[Source: …; line: L, column: C]`, which AWS repeats at the end of the message.
fn aws_location(diagnostic: &Diagnostic) -> Option<String> {
    match &diagnostic.location {
        Location::Text { .. } => match split_aws_location(&diagnostic.message).1 {
            Some(jackson) => Some(jackson.to_owned()),
            None => diagnostic.location_text(),
        },
        _ => diagnostic.location_text(),
    }
}
