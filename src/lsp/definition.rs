//! `textDocument/definition`: from a `StartAt`, `Next`, `Default`, Choice rule or Catch `Next`
//! value to the key of the state it names, in its own scope.

use crate::lsp::documents::Documents;
use crate::lsp::Opened;
use lsp_types::{GotoDefinitionParams, GotoDefinitionResponse, Location};

/// Where the state named under the cursor is defined.
pub fn definition(
    docs: &Documents,
    params: GotoDefinitionParams,
) -> Option<GotoDefinitionResponse> {
    let at = params.text_document_position_params;
    let opened = Opened::at(docs, &at.text_document.uri, at.position)?;
    let tree = &opened.tree;
    let spot = tree.spot(opened.offset(at.position)?)?;
    let crate::lsp::tree::Spot::Value(pointer) = &spot else {
        return None;
    };
    let target = tree.targets.iter().find(|t| &t.at == pointer)?;
    let state = tree.state(target.scope, &target.name)?;
    let range = opened.range(tree.key_span(&state.at)?)?;
    Some(GotoDefinitionResponse::Scalar(Location::new(
        at.text_document.uri,
        range,
    )))
}
