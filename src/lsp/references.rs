//! `textDocument/references`: every place in a state's scope that names it (and its key, when
//! the editor asks for the declaration too). A state of the same name in another Parallel
//! branch or Map processor is another state.

use crate::lsp::documents::Documents;
use crate::lsp::Opened;
use lsp_types::{Location, ReferenceParams};

/// The places that name the state under the cursor (on its key or on a value naming it).
pub fn references(docs: &Documents, params: ReferenceParams) -> Option<Vec<Location>> {
    let at = params.text_document_position;
    let uri = at.text_document.uri;
    let opened = Opened::at(docs, &uri, at.position)?;
    let tree = &opened.tree;
    let (scope, name) = tree.state_at(&tree.spot(opened.offset(at.position)?)?)?;
    let mut spans = Vec::new();
    if params.context.include_declaration {
        spans.extend(tree.state(scope, &name).and_then(|s| tree.key_span(&s.at)));
    }
    let named = tree
        .targets
        .iter()
        .filter(|t| t.scope == scope && t.name == name);
    spans.extend(named.filter_map(|t| tree.value_span(&t.at)));
    let at = |span| Some(Location::new(uri.clone(), opened.range(span)?));
    Some(spans.into_iter().filter_map(at).collect())
}
