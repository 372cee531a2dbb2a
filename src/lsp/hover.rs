//! `textDocument/hover`: on a state's name, what it is (type, resource, where it goes, Retry
//! and Catch, timeouts); on a field's name, what the field means, linking AWS's guide.

use crate::lsp::documents::Documents;
use crate::lsp::fields;
use crate::lsp::tree::{Spot, Tree};
use crate::lsp::Opened;
use lsp_types::{Hover, HoverContents, HoverParams, MarkupContent, MarkupKind};
use serde_json::Value;
use std::fmt::Write as _;

/// The hover at the cursor.
pub fn hover(docs: &Documents, params: HoverParams) -> Option<Hover> {
    let at = params.text_document_position_params;
    let opened = Opened::at(docs, &at.text_document.uri, at.position)?;
    let tree = &opened.tree;
    let spot = tree.spot(opened.offset(at.position)?)?;
    let (text, span) = match &spot {
        Spot::Key(p) if is_state(tree, p) => (state_card(tree, p)?, tree.key_span(p)?),
        Spot::Value(p) if tree.targets.iter().any(|t| &t.at == p) => {
            let (scope, name) = tree.state_at(&spot)?;
            let state = tree.state(scope, &name)?;
            (state_card(tree, &state.at)?, tree.value_span(p)?)
        }
        Spot::Key(p) => {
            let field = p.tokens().last()?;
            (fields::explain(&field)?, tree.key_span(p)?)
        }
        Spot::Value(_) => return None,
    };
    Some(Hover {
        contents: HoverContents::Markup(MarkupContent {
            kind: MarkupKind::Markdown,
            value: text,
        }),
        range: opened.range(span),
    })
}

fn is_state(tree: &Tree<'_>, at: &crate::asl::JsonPointer) -> bool {
    tree.scopes
        .iter()
        .any(|s| s.states.iter().any(|st| &st.at == at))
}

/// A state described: its type, resource, transitions, error handling and timeouts.
fn state_card(tree: &Tree<'_>, at: &crate::asl::JsonPointer) -> Option<String> {
    let state = tree.value.pointer(at.as_str())?;
    let name = at.tokens().last()?;
    let ty = state.get("Type").and_then(Value::as_str).unwrap_or("?");
    let mut out = format!("**{name}**: [{ty}]({}) state", fields::type_page(ty));
    if let Some(resource) = state.get("Resource").and_then(Value::as_str) {
        let _ = write!(out, "\n\nResource: `{resource}`");
    }
    let _ = write!(out, "\n\nGoes to: {}", goes_to(state));
    for (field, what) in [("Retry", "Retries"), ("Catch", "Catches")] {
        let items = state.get(field).and_then(Value::as_array);
        for item in items.into_iter().flatten() {
            let _ = write!(out, "\n\n{what} {}", handler(item));
        }
    }
    let timeouts: Vec<String> = ["TimeoutSeconds", "HeartbeatSeconds"]
        .iter()
        .filter_map(|f| state.get(*f).map(|v| format!("{f}: {v}")))
        .collect();
    if !timeouts.is_empty() {
        let _ = write!(out, "\n\n{}", timeouts.join(" · "));
    }
    Some(out)
}

/// Where a state goes: its `Next`, the end, a Choice's rules and default.
fn goes_to(state: &Value) -> String {
    let mut to: Vec<String> = Vec::new();
    let rules = state.get("Choices").and_then(Value::as_array);
    for rule in rules.into_iter().flatten() {
        if let Some(next) = rule.get("Next").and_then(Value::as_str) {
            to.push(format!("`{next}`"));
        }
    }
    if let Some(d) = state.get("Default").and_then(Value::as_str) {
        to.push(format!("`{d}` (default)"));
    }
    if let Some(next) = state.get("Next").and_then(Value::as_str) {
        to.push(format!("`{next}`"));
    }
    let ends = state.get("End") == Some(&Value::Bool(true))
        || matches!(
            state.get("Type").and_then(Value::as_str),
            Some("Succeed" | "Fail")
        );
    if ends {
        to.push("the end of its scope".to_owned());
    }
    if to.is_empty() {
        "nowhere yet (no `Next` or `End`)".to_owned()
    } else {
        to.join(", ")
    }
}

/// A retrier or catcher in a line: the errors, then what happens.
fn handler(item: &Value) -> String {
    let errors: Vec<&str> = item
        .get("ErrorEquals")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = format!("`{}`", errors.join("`, `"));
    if let Some(next) = item.get("Next").and_then(Value::as_str) {
        let _ = write!(out, " → `{next}`");
    }
    let settings: Vec<String> = [
        "MaxAttempts",
        "IntervalSeconds",
        "BackoffRate",
        "MaxDelaySeconds",
    ]
    .iter()
    .filter_map(|f| item.get(*f).map(|v| format!("{f} {v}")))
    .collect();
    if !settings.is_empty() {
        let _ = write!(out, " ({})", settings.join(", "));
    }
    out
}
