//! `sfn-local lsp`: a Language Server Protocol server on stdio, the fourth face beside `cli`,
//! `serve` and `console` (it imports none of them).
//!
//! It is rust-analyzer's shape, smaller: one main loop ([`server`]) reads messages from the
//! editor, keeps the open documents ([`documents`]), and answers each request as a pure
//! function of them, one module per request kind. Everything it says comes from the same
//! validator and source maps `validate` uses, so an editor shows `validate`'s codes, messages
//! and places (no second parser):
//!
//! - [`check`] and [`diagnostics`]: diagnostics on open and change, debounced, for definitions
//!   and for SAM/CloudFormation templates ([`template`]);
//! - [`code_action`]: quick fixes for the fixes `validate` suggests;
//! - [`definition`], [`references`], [`rename`], [`symbols`], [`hover`], [`completion`]:
//!   navigation and edits over a definition's scopes ([`tree`]), fields explained by
//!   [`fields`];
//! - [`transport`]: stdio's framing, bounded: nothing a client sends ends the server or makes
//!   it hold more than [`transport::MESSAGE_BYTES`]; a document over
//!   [`crate::limits::DEFINITION_FILE_BYTES`] is not kept (see [`server`]).

use crate::asl;

pub mod check;
pub mod code_action;
pub mod completion;
pub mod definition;
pub mod diagnostics;
pub mod documents;
pub mod embedded;
pub mod fields;
pub mod hover;
pub mod references;
pub mod rename;
pub mod server;
pub mod symbols;
pub mod template;
pub mod text;
pub mod transport;
pub mod tree;

/// An open definition, indexed for a request: its scopes and source map, its lines, and for a
/// definition written inside a template's string, how its places map to the template's.
pub struct Opened<'d> {
    /// Scopes, states, targets and the source map.
    pub tree: tree::Tree<'d>,
    /// Byte offsets of the document to and from LSP positions.
    pub lines: text::LineIndex<'d>,
    /// The string-encoded definition the tree is of, when it is one.
    embedded: Option<&'d embedded::Embedded>,
}

impl<'d> Opened<'d> {
    /// The definition (or template) open at `uri`, when it is one and parses.
    pub fn new(docs: &'d documents::Documents, uri: &lsp_types::Uri) -> Option<Self> {
        let doc = docs.get(uri)?;
        let tree = match documents::kind(&documents::file_name(uri), &doc.text) {
            documents::Kind::Definition(format) => tree::Tree::new(&doc.text, format)?,
            documents::Kind::Template(format) => tree::Tree::template(&doc.text, format)?,
            documents::Kind::Other => return None,
        };
        Some(Opened {
            tree,
            lines: text::LineIndex::new(&doc.text),
            embedded: None,
        })
    }

    /// What a request at `position` runs on: the string-encoded definition of a template that
    /// the position is inside, else the document itself ([`Opened::new`]).
    pub fn at(
        docs: &'d documents::Documents,
        uri: &lsp_types::Uri,
        position: lsp_types::Position,
    ) -> Option<Self> {
        let doc = docs.get(uri)?;
        let lines = text::LineIndex::new(&doc.text);
        let offset = lines.offset(position);
        let inside = doc.embedded.iter().find(|e| e.to_built(offset).is_some());
        let Some(embedded) = inside else {
            return Self::new(docs, uri);
        };
        Some(Opened {
            tree: tree::Tree::new(&embedded.text, asl::SourceFormat::Json)?,
            lines,
            embedded: Some(embedded),
        })
    }

    /// Whether the tree is of a definition written inside a template's string.
    pub fn is_embedded(&self) -> bool {
        self.embedded.is_some()
    }

    /// The tree's byte offset at an LSP position of the document.
    pub fn offset(&self, position: lsp_types::Position) -> Option<usize> {
        let offset = self.lines.offset(position);
        match self.embedded {
            Some(e) => e.to_built(offset),
            None => Some(offset),
        }
    }

    /// The document's range of a span of the tree's text; `None` for a span no one literal of
    /// a template wrote (an edit there could not be applied as meant).
    pub fn range(&self, span: std::ops::Range<usize>) -> Option<lsp_types::Range> {
        let span = match self.embedded {
            Some(e) => e.to_template(span)?,
            None => span,
        };
        Some(self.lines.range(span))
    }

    /// `text`, to be written in place of a span of the tree's text: escaped for the JSON string
    /// it lands in when the tree is a string-encoded definition.
    pub fn written(&self, text: &str) -> String {
        match self.embedded {
            Some(_) => embedded::Embedded::escaped(text),
            None => text.to_owned(),
        }
    }
}

/// Why the server stopped other than by the editor's `shutdown` and `exit`.
#[derive(Debug, thiserror::Error)]
pub enum LspError {
    /// The editor broke the protocol (no `initialize` first; a malformed message is answered
    /// by [`transport`] instead).
    #[error("protocol: {0}")]
    Protocol(#[from] lsp_server::ProtocolError),
    /// The editor went away while the server was still writing to it.
    #[error("the editor closed the connection")]
    Disconnected,
    /// Reading or writing stdio failed.
    #[error("stdio: {0}")]
    Io(#[from] std::io::Error),
    /// The `initialize` parameters are not what the protocol says.
    #[error("initialize: {0}")]
    Initialize(#[from] serde_json::Error),
}

/// Serves one editor on stdin and stdout until it says `exit` (framed by [`transport`]).
pub fn serve_stdio() -> Result<(), LspError> {
    let (connection, io_threads) = transport::stdio()?;
    server::run(connection)?;
    io_threads.join()?;
    Ok(())
}
