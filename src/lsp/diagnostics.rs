//! `textDocument/publishDiagnostics`: what `validate` says about a document, at the same places.
//!
//! The validator names places with JSON pointers; they become ranges here through the same
//! source maps `validate`'s reports read ([`SpanIndex`], JSON or YAML), so an editor underlines
//! exactly the line and column `validate` prints. A fix `validate` suggests rides along in the
//! diagnostic's `data`, so a code action is a pure function of the diagnostic the client sends
//! back (see [`crate::lsp::code_action`]).

use crate::asl::diagnostic::{Diagnostic, Location, Severity};
use crate::asl::source::{parse_json, split_aws_location, SpanIndex, SyntaxError};
use crate::asl::SourceFormat;
use crate::lsp::text::LineIndex;
use lsp_types::{
    DiagnosticRelatedInformation, DiagnosticSeverity, Location as LspLocation, NumberOrString, Uri,
};
use std::ops::Range;

/// Where diagnostics of one text land: its source map and, for JSON that does not parse, the
/// syntax error's own span (built once per text).
pub struct Placer<'t> {
    index: SpanIndex<'t>,
    lines: LineIndex<'t>,
    syntax: Option<SyntaxError>,
}

impl<'t> Placer<'t> {
    /// Indexes `text`, written as `format`, for placing `diagnostics`.
    pub fn new(text: &'t str, format: SourceFormat, diagnostics: &[Diagnostic]) -> Self {
        // Only a text location needs the syntax error (a second parse): most checks have none.
        let needs_syntax = diagnostics
            .iter()
            .any(|d| matches!(d.location, Location::Text { .. }));
        let (index, syntax) = match format {
            SourceFormat::Yaml => (SpanIndex::new_yaml(text), None),
            SourceFormat::Json if needs_syntax => (SpanIndex::new(text), parse_json(text).err()),
            SourceFormat::Json => (SpanIndex::new(text), None),
        };
        Placer {
            index,
            lines: LineIndex::new(text),
            syntax,
        }
    }

    /// The byte span `validate` underlines for a location.
    pub fn span(&self, location: &Location) -> Range<usize> {
        let one_char = |at: usize| at..at + char_len_at(self.index.text(), at);
        match location {
            Location::Pointer(pointer) => self.index.span(pointer),
            Location::Field { pointer, key } => self.index.span(&pointer.key(key)),
            Location::InString { pointer, offset } => {
                match self.index.string_offset(pointer, *offset) {
                    Some(at) => at..at + char_len_at(self.index.text(), at).max(1),
                    None => self.index.span(pointer),
                }
            }
            Location::Text { line, column } => match &self.syntax {
                Some(e) if (e.line, e.column) == (*line, *column) => e.span.clone(),
                _ => one_char(self.index.offset(*line, *column)),
            },
            // `validate` shows a definition that is empty or not an object at its start.
            Location::None => one_char(0),
        }
    }

    /// The LSP range of a byte span.
    pub fn range(&self, span: Range<usize>) -> lsp_types::Range {
        self.lines.range(span)
    }

    /// One validator diagnostic as the protocol's, in the document at `uri`.
    pub fn to_lsp(&self, uri: &Uri, d: &Diagnostic) -> lsp_types::Diagnostic {
        let related = d
            .related
            .iter()
            .map(|(pointer, label)| DiagnosticRelatedInformation {
                location: LspLocation::new(uri.clone(), self.range(self.index.span(pointer))),
                message: label.clone(),
            })
            .collect::<Vec<_>>();
        lsp_types::Diagnostic {
            range: self.range(self.span(&d.location)),
            severity: Some(match d.severity {
                Severity::Error => DiagnosticSeverity::ERROR,
                Severity::Warning => DiagnosticSeverity::WARNING,
            }),
            code: Some(NumberOrString::String(d.code.as_str().to_owned())),
            source: Some("sfn-local".to_owned()),
            // Jackson's `[Source: …]` suffix quotes the file; the range already says where.
            message: split_aws_location(&d.message).0.to_owned(),
            related_information: (!related.is_empty()).then_some(related),
            data: crate::lsp::code_action::fix_data(self, d),
            ..Default::default()
        }
    }

    /// The source map, for fixes that edit a value rather than the place underlined.
    pub fn index(&self) -> &SpanIndex<'t> {
        &self.index
    }
}

fn char_len_at(text: &str, offset: usize) -> usize {
    text.get(offset..)
        .and_then(|rest| rest.chars().next())
        .map_or(0, char::len_utf8)
}
