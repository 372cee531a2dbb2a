//! What `validate` says about one open document, ready to publish: for a definition, on the
//! document itself; for a template, on the template and on the definition files it names.

use crate::asl::{self, LoadOptions, MachineType, SourceFormat, Substitutions, Unresolved};
use crate::lsp::diagnostics::Placer;
use crate::lsp::documents::{self, Document, Documents, Kind};
use crate::lsp::template;
use lsp_types::Uri;

/// The diagnostics to publish for one document, by the URI they belong on.
pub type Published = Vec<(Uri, Vec<lsp_types::Diagnostic>)>;

/// Checks the document at `uri` as `validate --type machine_type` would check its file.
pub fn check(docs: &Documents, uri: &Uri, doc: &Document, machine_type: MachineType) -> Published {
    let kind = documents::kind(&documents::file_name(uri), &doc.text);
    if let (Kind::Definition(_), Some(template)) = (kind, template::owner(docs, uri)) {
        // A template's DefinitionUri file (or CDK asset) is checked as the template checks it.
        if let Some(text) = template::text_of(docs, &template) {
            let format = SourceFormat::detect(Some(template.path().as_str()), &text);
            return template::check(docs, &template, &text, format, machine_type);
        }
    }
    match kind {
        Kind::Definition(format) => vec![(
            uri.clone(),
            definition(uri, &doc.text, format, machine_type),
        )],
        Kind::Template(format) => template::check(docs, uri, &doc.text, format, machine_type),
        Kind::Other => vec![(uri.clone(), Vec::new())],
    }
}

/// A definition's diagnostics: `validate`'s loader (placeholders checked with a stand-in, as
/// `validate` does), placed by the definition's own source map.
pub fn definition(
    uri: &Uri,
    text: &str,
    format: SourceFormat,
    machine_type: MachineType,
) -> Vec<lsp_types::Diagnostic> {
    let subs = Substitutions::default();
    let options = LoadOptions {
        machine_type,
        substitutions: &subs,
        unresolved: Unresolved::StandIn,
    };
    let loaded = asl::load_text(text, format, options);
    if loaded.diagnostics.is_empty() {
        return Vec::new();
    }
    let placer = Placer::new(text, format, &loaded.diagnostics.0);
    loaded
        .diagnostics
        .iter()
        .map(|d| placer.to_lsp(uri, d))
        .collect()
}
