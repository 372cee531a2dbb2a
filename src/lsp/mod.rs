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

pub mod check;
pub mod code_action;
pub mod completion;
pub mod definition;
pub mod diagnostics;
pub mod documents;
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

/// An open definition, indexed for a request: its scopes and source map, and its lines.
pub struct Opened<'d> {
    /// Scopes, states, targets and the source map.
    pub tree: tree::Tree<'d>,
    /// Byte offsets to and from LSP positions.
    pub lines: text::LineIndex<'d>,
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
        })
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
