//! The main loop: one thread reads the editor's messages in order, updates the documents, and
//! answers requests from them; diagnostics go out once the editor pauses.
//!
//! Debounce: a change only marks its document dirty. While anything is dirty the loop waits
//! at most [`DEBOUNCE`] for the next message; when none comes, every dirty document is checked
//! once and published. A burst of keystrokes is checked once, after its last one.

use crate::asl::MachineType;
use crate::lsp::documents::Documents;
use crate::lsp::{
    check, code_action, completion, definition, hover, references, rename, symbols, LspError,
};
use crossbeam_channel::RecvTimeoutError;
use lsp_server::{Connection, Message, Notification, Request, Response};
use lsp_types::notification::{self as note, Notification as _};
use lsp_types::request::{self as req, Request as _};
use lsp_types::{
    CodeActionProviderCapability, CompletionOptions, HoverProviderCapability, InitializeParams,
    OneOf, ServerCapabilities, TextDocumentSyncCapability, TextDocumentSyncKind, Uri,
};
use std::collections::BTreeSet;
use std::time::Duration;

/// How long the editor must pause before dirty documents are checked.
pub const DEBOUNCE: Duration = Duration::from_millis(15);

/// The largest document kept and checked: what `validate` reads of a definition or template
/// file. The memory a document costs (its text, source map and parse) is bounded by it.
pub const DOCUMENT_BYTES: usize = crate::limits::DEFINITION_FILE_BYTES;

/// What the editor may set in `initializationOptions`.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Options {
    /// `STANDARD` or `EXPRESS`, as `validate --type` (a template's `Type` wins).
    machine_type: Option<String>,
}

/// The server's state between two messages.
struct Server {
    connection: Connection,
    documents: Documents,
    machine_type: MachineType,
    /// Documents changed since they were last checked.
    dirty: BTreeSet<Uri>,
}

/// What the server can do, told to the editor in `initialize`'s answer.
fn capabilities() -> ServerCapabilities {
    ServerCapabilities {
        text_document_sync: Some(TextDocumentSyncCapability::Kind(TextDocumentSyncKind::FULL)),
        code_action_provider: Some(CodeActionProviderCapability::Simple(true)),
        definition_provider: Some(OneOf::Left(true)),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        references_provider: Some(OneOf::Left(true)),
        rename_provider: Some(OneOf::Left(true)),
        document_symbol_provider: Some(OneOf::Left(true)),
        completion_provider: Some(CompletionOptions {
            trigger_characters: Some(vec!["\"".to_owned(), " ".to_owned()]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Runs the protocol on `connection`: `initialize`, then the main loop until `exit`.
pub fn run(connection: Connection) -> Result<(), LspError> {
    let caps = serde_json::to_value(capabilities())?;
    let params: InitializeParams = serde_json::from_value(connection.initialize(caps)?)?;
    let options: Options = params
        .initialization_options
        .and_then(|o| serde_json::from_value(o).ok())
        .unwrap_or_default();
    let machine_type = match options.machine_type.as_deref() {
        Some(t) if t.eq_ignore_ascii_case("EXPRESS") => MachineType::Express,
        _ => MachineType::Standard,
    };
    let mut server = Server {
        connection,
        documents: Documents::default(),
        machine_type,
        dirty: BTreeSet::new(),
    };
    server.main_loop()
}

impl Server {
    fn main_loop(&mut self) -> Result<(), LspError> {
        loop {
            let message = if self.dirty.is_empty() {
                match self.connection.receiver.recv() {
                    Ok(m) => m,
                    Err(_) => return Ok(()),
                }
            } else {
                match self.connection.receiver.recv_timeout(DEBOUNCE) {
                    Ok(m) => m,
                    Err(RecvTimeoutError::Timeout) => {
                        self.publish_dirty()?;
                        continue;
                    }
                    Err(RecvTimeoutError::Disconnected) => return Ok(()),
                }
            };
            match message {
                Message::Request(r) => {
                    if self.connection.handle_shutdown(&r)? {
                        return Ok(());
                    }
                    let answer = self.answer(r);
                    self.send(Message::Response(answer))?;
                }
                Message::Notification(n) => self.notified(n)?,
                Message::Response(_) => {}
            }
        }
    }

    fn send(&self, message: Message) -> Result<(), LspError> {
        self.connection
            .sender
            .send(message)
            .map_err(|_| LspError::Disconnected)
    }

    /// Applies a notification to the documents.
    fn notified(&mut self, n: Notification) -> Result<(), LspError> {
        match n.method.as_str() {
            note::DidOpenTextDocument::METHOD => {
                if let Ok(p) = n.extract::<lsp_types::DidOpenTextDocumentParams>(
                    note::DidOpenTextDocument::METHOD,
                ) {
                    let doc = p.text_document;
                    self.keep(doc.uri, doc.text, doc.version)?;
                }
            }
            note::DidChangeTextDocument::METHOD => {
                if let Ok(p) = n.extract::<lsp_types::DidChangeTextDocumentParams>(
                    note::DidChangeTextDocument::METHOD,
                ) {
                    // Full sync: the last change holds the whole text.
                    if let Some(change) = p.content_changes.into_iter().last() {
                        let doc = p.text_document;
                        self.keep(doc.uri, change.text, doc.version)?;
                    }
                }
            }
            note::DidCloseTextDocument::METHOD => {
                if let Ok(p) = n.extract::<lsp_types::DidCloseTextDocumentParams>(
                    note::DidCloseTextDocument::METHOD,
                ) {
                    let uri = p.text_document.uri;
                    self.documents.close(&uri);
                    self.dirty.remove(&uri);
                    // What was said about a closed file goes with it.
                    self.publish(uri, Vec::new(), None)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Keeps a document's new text to be checked, unless it is over [`DOCUMENT_BYTES`]: then
    /// the server forgets it (requests about it get no answer) and says why on it, so that a
    /// 78 MB document is never parsed.
    fn keep(&mut self, uri: Uri, text: String, version: i32) -> Result<(), LspError> {
        if text.len() <= DOCUMENT_BYTES {
            self.documents.set(uri.clone(), text, version);
            self.dirty.insert(uri);
            return Ok(());
        }
        self.documents.close(&uri);
        self.dirty.remove(&uri);
        let message = format!(
            "this document is {} bytes; sfn-local checks documents of at most {DOCUMENT_BYTES} bytes (4 MiB, the most `validate` reads of a definition or template file), so it is not checked",
            text.len()
        );
        let refusal = lsp_types::Diagnostic {
            severity: Some(lsp_types::DiagnosticSeverity::ERROR),
            source: Some("sfn-local".to_owned()),
            message,
            ..Default::default()
        };
        self.publish(uri, vec![refusal], Some(version))
    }

    fn publish(
        &self,
        uri: Uri,
        diagnostics: Vec<lsp_types::Diagnostic>,
        version: Option<i32>,
    ) -> Result<(), LspError> {
        let params = lsp_types::PublishDiagnosticsParams::new(uri, diagnostics, version);
        let n = Notification::new(note::PublishDiagnostics::METHOD.to_owned(), params);
        self.send(Message::Notification(n))
    }

    /// Checks every dirty document and publishes what was found.
    fn publish_dirty(&mut self) -> Result<(), LspError> {
        for uri in std::mem::take(&mut self.dirty) {
            let Some(doc) = self.documents.get(&uri) else {
                continue;
            };
            for (target, diagnostics) in check::check(&self.documents, &uri, doc, self.machine_type)
            {
                let version = (target == uri).then_some(doc.version);
                self.publish(target, diagnostics, version)?;
            }
        }
        Ok(())
    }

    /// The answer to one request, computed from the documents as they stand.
    fn answer(&self, r: Request) -> Response {
        let id = r.id.clone();
        let result =
            match r.method.as_str() {
                req::CodeActionRequest::METHOD => extract::<req::CodeActionRequest>(r)
                    .map(|p| to_json(code_action::code_actions(p))),
                req::GotoDefinition::METHOD => extract::<req::GotoDefinition>(r)
                    .map(|p| to_json(definition::definition(&self.documents, p))),
                req::References::METHOD => extract::<req::References>(r)
                    .map(|p| to_json(references::references(&self.documents, p))),
                req::Rename::METHOD => {
                    extract::<req::Rename>(r).map(|p| to_json(rename::rename(&self.documents, p)))
                }
                req::DocumentSymbolRequest::METHOD => extract::<req::DocumentSymbolRequest>(r)
                    .map(|p| to_json(symbols::symbols(&self.documents, p))),
                req::HoverRequest::METHOD => extract::<req::HoverRequest>(r)
                    .map(|p| to_json(hover::hover(&self.documents, p))),
                req::Completion::METHOD => extract::<req::Completion>(r)
                    .map(|p| to_json(completion::completion(&self.documents, p))),
                _ => {
                    let message = format!("sfn-local lsp does not answer {}", r.method);
                    return Response::new_err(
                        id,
                        lsp_server::ErrorCode::MethodNotFound as i32,
                        message,
                    );
                }
            };
        match result {
            Ok(value) => Response {
                id,
                result: Some(value),
                error: None,
            },
            Err(message) => {
                Response::new_err(id, lsp_server::ErrorCode::InvalidParams as i32, message)
            }
        }
    }
}

/// The typed parameters of request kind `R`.
fn extract<R: req::Request>(r: Request) -> Result<R::Params, String> {
    r.extract(R::METHOD)
        .map(|(_, p)| p)
        .map_err(|e| format!("{e:?}"))
}

fn to_json(value: impl serde::Serialize) -> serde_json::Value {
    serde_json::to_value(value).unwrap_or(serde_json::Value::Null)
}
