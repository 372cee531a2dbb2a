//! `textDocument/codeAction`: the fixes `validate` already suggests, one quick fix each.
//!
//! A fix is worked out when the diagnostic is published and carried in its `data` (the edit's
//! range and text), so answering a code action needs no document at all: the client sends the
//! diagnostics back, and each one with a fix becomes an edit.

use crate::asl::diagnostic::{Code, Diagnostic};
use crate::lsp::diagnostics::Placer;
use lsp_types::{
    CodeAction, CodeActionKind, CodeActionOrCommand, CodeActionParams, TextEdit, WorkspaceEdit,
};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// A fix, as carried in a diagnostic's `data`.
#[derive(Debug, Serialize, Deserialize)]
struct Fix {
    title: String,
    range: lsp_types::Range,
    #[serde(rename = "newText")]
    new_text: String,
}

/// The fix for a diagnostic, when `validate` suggests one: the near state name of a transition
/// that names none (`did you mean "X"?`), the near field name of a field it does not know, a
/// `HeartbeatSeconds` moved below `TimeoutSeconds`.
pub fn fix_data(placer: &Placer<'_>, d: &Diagnostic) -> Option<serde_json::Value> {
    let (title, span, new_text) = fix_of(placer, d)?;
    let range = placer.range(span);
    serde_json::to_value(Fix {
        title,
        range,
        new_text,
    })
    .ok()
}

/// [`fix_data`] for a definition written inside a template's string: the fix worked out on the
/// built text (`placer`), its span mapped into the string and its text escaped for it; none
/// when no one literal of the template holds the span.
pub fn fix_data_in_string(
    placer: &Placer<'_>,
    d: &Diagnostic,
    embedded: &crate::lsp::embedded::Embedded,
    template: &crate::lsp::text::LineIndex<'_>,
) -> Option<serde_json::Value> {
    let (title, span, new_text) = fix_of(placer, d)?;
    let range = template.range(embedded.to_template(span)?);
    let new_text = crate::lsp::embedded::Embedded::escaped(&new_text);
    serde_json::to_value(Fix {
        title,
        range,
        new_text,
    })
    .ok()
}

/// A fix's title, the byte span it replaces and the text it writes there.
fn fix_of(placer: &Placer<'_>, d: &Diagnostic) -> Option<(String, std::ops::Range<usize>, String)> {
    let pointer = d.pointer()?;
    if d.code == Code::SchemaValidationFailed && d.message.starts_with("Field '") {
        return misspelt_field(placer, d);
    }
    let value = placer.index().value_span(pointer)?;
    let raw = placer.index().text().get(value.clone())?;
    let (title, new_text) = match d.code {
        Code::MissingTransitionTarget => {
            let near = near_name(&d.message)?;
            (format!("Change to \"{near}\""), quoted_like(raw, near))
        }
        Code::SchemaValidationFailed if pointer.as_str().ends_with("/HeartbeatSeconds") => {
            let timeout = timeout_of(&d.message)?;
            let below = timeout.checked_sub(1).filter(|b| *b >= 1)?;
            (
                format!("Set HeartbeatSeconds to {below}, below TimeoutSeconds ({timeout})"),
                below.to_string(),
            )
        }
        _ => return None,
    };
    Some((title, value, new_text))
}

/// A field `validate` does not know, renamed to the field it suggests (`Nxt` → `Next`).
fn misspelt_field(
    placer: &Placer<'_>,
    d: &Diagnostic,
) -> Option<(String, std::ops::Range<usize>, String)> {
    let near = near_name(&d.message)?;
    let key = placer.index().key_span(d.pointer()?)?;
    let raw = placer.index().text().get(key.clone())?;
    let quoted = raw.len() >= 2 && raw.starts_with('"');
    let inner = if quoted {
        key.start + 1..key.end - 1
    } else {
        key
    };
    Some((format!("Rename to \"{near}\""), inner, near.to_owned()))
}

/// The name in ` (did you mean "X"?)`.
fn near_name(message: &str) -> Option<&str> {
    let rest = message.split("did you mean \"").nth(1)?;
    rest.split("\"?)").next()
}

/// `TimeoutSeconds (T)` in the heartbeat rule's message.
fn timeout_of(message: &str) -> Option<u64> {
    let rest = message.split("TimeoutSeconds (").nth(1)?;
    rest.split(')').next()?.parse().ok()
}

/// `name` written as the value it replaces was: JSON-quoted, YAML single-quoted, or plain.
fn quoted_like(raw: &str, name: &str) -> String {
    match raw.chars().next() {
        Some('\'') => format!("'{}'", name.replace('\'', "''")),
        Some('"') => serde_json::to_string(name).unwrap_or_default(),
        _ => name.to_owned(),
    }
}

/// The quick fixes for the diagnostics the client sends back.
pub fn code_actions(params: CodeActionParams) -> Vec<CodeActionOrCommand> {
    let uri = params.text_document.uri;
    let diagnostics = params.context.diagnostics;
    diagnostics
        .into_iter()
        .filter_map(|d| {
            let fix: Fix = serde_json::from_value(d.data.clone()?).ok()?;
            let edit = TextEdit::new(fix.range, fix.new_text);
            Some(CodeActionOrCommand::CodeAction(CodeAction {
                title: fix.title,
                kind: Some(CodeActionKind::QUICKFIX),
                diagnostics: Some(vec![d]),
                edit: Some(WorkspaceEdit {
                    changes: Some(HashMap::from([(uri.clone(), vec![edit])])),
                    ..Default::default()
                }),
                is_preferred: Some(true),
                ..Default::default()
            }))
        })
        .collect()
}
