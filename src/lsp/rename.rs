//! `textDocument/rename`: a state's new name, on its key and on every place of its scope that
//! names it; a state of the same name in another scope keeps its name.

use crate::lsp::documents::Documents;
use crate::lsp::Opened;
use lsp_types::{RenameParams, TextEdit, WorkspaceEdit};
use std::collections::HashMap;

/// The edits that rename the state under the cursor to `params.new_name`.
pub fn rename(docs: &Documents, params: RenameParams) -> Option<WorkspaceEdit> {
    let at = params.text_document_position;
    let uri = at.text_document.uri;
    let opened = Opened::new(docs, &uri)?;
    let tree = &opened.tree;
    let (scope, name) = tree.state_at(&tree.spot(opened.lines.offset(at.position))?)?;
    let state = tree.state(scope, &name)?;
    let mut spans = vec![tree.key_span(&state.at)?];
    let named = tree
        .targets
        .iter()
        .filter(|t| t.scope == scope && t.name == name);
    spans.extend(named.filter_map(|t| tree.value_span(&t.at)));
    let text = tree.index.text();
    let edits = spans
        .into_iter()
        .map(|span| {
            // Inside JSON quotes the name is written with JSON's escapes.
            let json = text.get(span.clone()).is_some_and(|t| t.starts_with('"'));
            let written = match json {
                true => json_inner(&params.new_name),
                false => params.new_name.clone(),
            };
            TextEdit::new(opened.lines.range(tree.inner(span)), written)
        })
        .collect();
    Some(WorkspaceEdit {
        changes: Some(HashMap::from([(uri, edits)])),
        ..Default::default()
    })
}

/// `name` as written between JSON quotes.
fn json_inner(name: &str) -> String {
    let quoted = serde_json::to_string(name).unwrap_or_default();
    quoted[1..quoted.len() - 1].to_owned()
}
