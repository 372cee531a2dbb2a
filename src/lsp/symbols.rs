//! `textDocument/documentSymbol`: the states as an outline, a Parallel's states nested under
//! its branches and a Map's under its processor; in a template, under each state machine.

use crate::asl::JsonPointer;
use crate::lsp::documents::Documents;
use crate::lsp::tree::Tree;
use crate::lsp::Opened;
use lsp_types::{DocumentSymbol, DocumentSymbolParams, DocumentSymbolResponse, SymbolKind};
use serde_json::Value;

/// The outline of a definition.
pub fn symbols(docs: &Documents, params: DocumentSymbolParams) -> Option<DocumentSymbolResponse> {
    let opened = Opened::new(docs, &params.text_document.uri)?;
    let roots: Vec<JsonPointer> = opened
        .tree
        .roots
        .iter()
        .map(|&i| opened.tree.scopes[i].at.clone())
        .collect();
    if roots.len() == 1 && roots[0].as_str().is_empty() {
        return Some(DocumentSymbolResponse::Nested(scope_symbols(
            &opened, &roots[0],
        )));
    }
    // A template: each inline definition under its resource's logical ID.
    let machines = roots.iter().filter_map(|at| {
        let id = at.tokens().nth(1)?;
        let mut s = symbol(&opened, &id, "state machine", at)?;
        s.kind = SymbolKind::CLASS;
        s.children = Some(scope_symbols(&opened, at));
        Some(s)
    });
    Some(DocumentSymbolResponse::Nested(machines.collect()))
}

/// The states of the scope at `at`, each with its inner scopes as children.
fn scope_symbols(opened: &Opened<'_>, at: &JsonPointer) -> Vec<DocumentSymbol> {
    let tree = &opened.tree;
    let Some(scope) = tree.scopes.iter().find(|s| &s.at == at) else {
        return Vec::new();
    };
    scope
        .states
        .iter()
        .filter_map(|state| {
            let value = tree.value.pointer(state.at.as_str())?;
            let kind = value.get("Type").and_then(Value::as_str).unwrap_or("?");
            let mut symbol = symbol(opened, &state.name, kind, &state.at)?;
            symbol.kind = symbol_kind(kind);
            symbol.children = Some(inner_scopes(opened, value, &state.at));
            Some(symbol)
        })
        .collect()
}

/// A Parallel's branches ("Branch 1", ...) or a Map's processor, holding their states.
fn inner_scopes(opened: &Opened<'_>, state: &Value, at: &JsonPointer) -> Vec<DocumentSymbol> {
    let mut out = Vec::new();
    let branches = state.get("Branches").and_then(Value::as_array);
    for i in 0..branches.map_or(0, Vec::len) {
        let branch = at.key("Branches").index(i);
        if let Some(mut s) = symbol(opened, &format!("Branch {}", i + 1), "branch", &branch) {
            s.children = Some(scope_symbols(opened, &branch));
            out.push(s);
        }
    }
    for name in ["ItemProcessor", "Iterator"] {
        let processor = at.key(name);
        if state.get(name).is_some() {
            if let Some(mut s) = symbol(opened, name, "processor", &processor) {
                s.children = Some(scope_symbols(opened, &processor));
                out.push(s);
            }
        }
    }
    out
}

/// A symbol spanning the member at `at` (its key to the end of its value).
#[allow(deprecated)] // `deprecated` is a field the type still requires.
fn symbol(
    opened: &Opened<'_>,
    name: &str,
    detail: &str,
    at: &JsonPointer,
) -> Option<DocumentSymbol> {
    let tree: &Tree<'_> = &opened.tree;
    let value = tree.value_span(at)?;
    let key = tree.key_span(at).unwrap_or(value.start..value.start);
    Some(DocumentSymbol {
        name: name.to_owned(),
        detail: Some(detail.to_owned()),
        kind: SymbolKind::NAMESPACE,
        tags: None,
        deprecated: None,
        range: opened.lines.range(key.start.min(value.start)..value.end),
        selection_range: opened.lines.range(key),
        children: None,
    })
}

fn symbol_kind(state_type: &str) -> SymbolKind {
    match state_type {
        "Task" => SymbolKind::FUNCTION,
        "Choice" => SymbolKind::ENUM,
        "Parallel" | "Map" => SymbolKind::MODULE,
        "Wait" => SymbolKind::EVENT,
        "Succeed" | "Fail" => SymbolKind::CONSTANT,
        _ => SymbolKind::OBJECT,
    }
}
