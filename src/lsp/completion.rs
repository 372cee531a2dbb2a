//! `textDocument/completion`: what may be written where the cursor is. Where a state is
//! named (`StartAt`, `Next`, `Default`, a Choice rule's or a Catch's `Next`), exactly the
//! states of that scope: a Parallel branch or Map processor names only its own states.

use crate::lsp::documents::Documents;
use crate::lsp::tree::{Spot, Tree};
use crate::lsp::Opened;
use lsp_types::{
    CompletionItem, CompletionItemKind, CompletionParams, CompletionResponse, CompletionTextEdit,
    TextEdit,
};

/// The completions at the cursor.
pub fn completion(docs: &Documents, params: CompletionParams) -> Option<CompletionResponse> {
    let at = params.text_document_position;
    let opened = Opened::new(docs, &at.text_document.uri)?;
    let tree = &opened.tree;
    let Spot::Value(pointer) = tree.spot(opened.lines.offset(at.position))? else {
        return None;
    };
    let field = pointer.tokens().last().unwrap_or_default();
    if !["Next", "Default", "StartAt"].contains(&field.as_str()) {
        return None;
    }
    let scope = tree.scope_of_target(&pointer)?;
    let replace = opened.lines.range(tree.inner(tree.value_span(&pointer)?));
    let items = state_names(tree, scope)
        .into_iter()
        .map(|(name, detail)| CompletionItem {
            label: name.clone(),
            kind: Some(CompletionItemKind::REFERENCE),
            detail: Some(detail),
            text_edit: Some(CompletionTextEdit::Edit(TextEdit::new(replace, name))),
            ..Default::default()
        })
        .collect();
    Some(CompletionResponse::Array(items))
}

/// The states of scope `scope`, each with its type.
fn state_names(tree: &Tree<'_>, scope: usize) -> Vec<(String, String)> {
    tree.scopes[scope]
        .states
        .iter()
        .map(|s| {
            let ty = tree
                .value
                .pointer(s.at.as_str())
                .and_then(|v| v.get("Type"))
                .and_then(|t| t.as_str())
                .unwrap_or("state");
            (s.name.clone(), format!("{ty} state"))
        })
        .collect()
}
