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
    let opened = Opened::at(docs, &uri, at.position)?;
    let tree = &opened.tree;
    let (scope, name) = tree.state_at(&tree.spot(opened.offset(at.position)?)?)?;
    let state = tree.state(scope, &name)?;
    let mut spans = vec![tree.key_span(&state.at)?];
    let named = tree
        .targets
        .iter()
        .filter(|t| t.scope == scope && t.name == name);
    spans.extend(named.filter_map(|t| tree.value_span(&t.at)));
    let text = tree.index.text();
    // Every place or none: a rename that leaves one place behind breaks the machine.
    let edits = spans
        .into_iter()
        .map(|span| {
            // Inside JSON quotes the name is written with JSON's escapes (and again for the
            // template's string, when the definition is written inside one).
            let json = text.get(span.clone()).is_some_and(|t| t.starts_with('"'));
            let written = match json {
                true => json_inner(&params.new_name),
                false => params.new_name.clone(),
            };
            Some(TextEdit::new(
                opened.range(tree.inner(span))?,
                opened.written(&written),
            ))
        })
        .collect::<Option<Vec<_>>>()?;
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
