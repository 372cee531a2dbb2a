//! SAM and CloudFormation templates, checked by the loader `validate` uses
//! ([`crate::loader::template_machines`]), reading the editor's unsaved text of every open file:
//! an inline `Definition` or a `DefinitionString` reports in the template, at its line; a
//! `DefinitionUri` file or a CDK asset reports on that file's own URI; what the template gets
//! wrong around it, in the template.

use crate::asl::{self, MachineType, SourceFormat, Substitutions, Unresolved};
use crate::loader::{self, LoadedFile, Reader};
use crate::lsp::check::Published;
use crate::lsp::diagnostics::Placer;
use crate::lsp::documents::{self, Documents};
use crate::lsp::embedded::Embedded;
use lsp_types::Uri;
use std::path::{Path, PathBuf};

/// The loader's reader in the editor: an open document's text, else the file on disk.
struct Overlay<'d>(&'d Documents);

impl Reader for Overlay<'_> {
    fn read(&self, path: &Path) -> Result<String, String> {
        let open = documents::file_uri(path).and_then(|uri| self.0.get(&uri));
        match open {
            Some(doc) => Ok(doc.text.clone()),
            None => loader::read_definition_text(path),
        }
    }
}

/// The diagnostics of a template open at `uri`: its own, then each definition file's. A
/// template that no longer parses gets what `validate` says of it (the syntax error).
pub fn check(
    docs: &Documents,
    uri: &Uri,
    text: &str,
    format: SourceFormat,
    default_type: MachineType,
) -> Published {
    let path = local_path(uri);
    let Some(value) = loader::template_value(text, &path.to_string_lossy()) else {
        let own = crate::lsp::check::definition(uri, text, format, default_type);
        return vec![(uri.clone(), own)];
    };
    let subs = Substitutions::default();
    let options = loader::Options {
        reader: &Overlay(docs),
        ..loader::Options::new(&subs, Unresolved::StandIn).typed(default_type)
    };
    let files = loader::template_machines(&path, text, &value, options);
    let embedded = match format {
        SourceFormat::Json => Embedded::of_template(text, &value),
        SourceFormat::Yaml => Vec::new(),
    };
    let mut out: Vec<(Uri, Vec<lsp_types::Diagnostic>)> = vec![(uri.clone(), Vec::new())];
    for file in &files {
        publish(&mut out, uri, &path, file, &embedded);
    }
    out
}

/// Adds one machine's diagnostics to what is published, each on the file it points into.
fn publish(
    out: &mut Published,
    template: &Uri,
    template_path: &Path,
    file: &LoadedFile,
    embedded: &[Embedded],
) {
    // A file with nothing to say is published too: that clears what it had.
    let mut add = |at: &Uri, placed: Vec<lsp_types::Diagnostic>| match out
        .iter_mut()
        .find(|(u, _)| u == at)
    {
        Some((_, list)) => list.extend(placed),
        None => out.push((at.clone(), placed)),
    };
    let own_file = Path::new(&file.path) != template_path;
    let at = match (own_file, documents::file_uri(Path::new(&file.path))) {
        (true, Some(at)) => at,
        _ => template.clone(),
    };
    let mut own = placed(&at, &file.text, &file.definition.diagnostics);
    fixes_in_string(&mut own, file, embedded);
    add(&at, own);
    if let Some(problems) = &file.template_problems {
        add(
            template,
            placed(template, &problems.text, &problems.diagnostics),
        );
    }
}

/// Diagnostics placed on the text they point into.
fn placed(at: &Uri, text: &str, diagnostics: &asl::Diagnostics) -> Vec<lsp_types::Diagnostic> {
    let format = SourceFormat::detect(Some(at.path().as_str()), text);
    let placer = Placer::new(text, format, &diagnostics.0);
    diagnostics.iter().map(|d| placer.to_lsp(at, d)).collect()
}

/// A `DefinitionString`'s diagnostics sit on the template's field (as `validate` places them),
/// where a fix worked out on the field would replace the whole string: each gets instead the
/// fix worked out on the definition inside, mapped into the string, or none when it cannot be
/// (a YAML template, a span across an intrinsic or a `Fn::Join` delimiter).
fn fixes_in_string(placed: &mut [lsp_types::Diagnostic], file: &LoadedFile, embedded: &[Embedded]) {
    let (Some(built), Some(inner)) = (&file.built_text, &file.built_diagnostics) else {
        return;
    };
    let field = file
        .definition
        .diagnostics
        .iter()
        .find_map(|d| d.pointer().cloned());
    let mapped = embedded
        .iter()
        .find(|e| &e.text == built && Some(&e.field) == field.as_ref());
    let placer = Placer::new(built, SourceFormat::Json, &inner.0);
    let lines = crate::lsp::text::LineIndex::new(&file.text);
    // The first diagnostics are the definition's own, in order; the template's checks follow.
    for (i, d) in placed.iter_mut().enumerate().take(inner.0.len()) {
        d.data = mapped.and_then(|e| {
            crate::lsp::code_action::fix_data_in_string(&placer, &inner.0[i], e, &lines)
        });
    }
}

/// The path of a document's URI (its name alone for one that is not a local file).
fn local_path(uri: &Uri) -> PathBuf {
    documents::file_path(uri).unwrap_or_else(|| PathBuf::from(documents::file_name(uri)))
}

/// The template that reads the definition file at `uri` as its own, if any (an open
/// template's `DefinitionUri`, or the CDK stack of the cloud assembly the file is in): that
/// file is checked in the template's context (its substitutions and type). Returns the
/// template's URI and, when the editor has it open, nothing else is needed.
pub fn owner(docs: &Documents, uri: &Uri) -> Option<Uri> {
    let path = documents::file_path(uri)?;
    let subs = Substitutions::default();
    let options = loader::Options {
        reader: &Overlay(docs),
        ..loader::Options::new(&subs, Unresolved::StandIn)
    };
    let same = |f: &LoadedFile| f.template.is_some() && Path::new(&f.path) == path;
    let open = docs.iter().find_map(|(t, doc)| {
        let documents::Kind::Template(_) = documents::kind(&documents::file_name(t), &doc.text)
        else {
            return None;
        };
        let template_path = documents::file_path(t)?;
        let value = loader::template_value(&doc.text, &template_path.to_string_lossy())?;
        let files = loader::template_machines(&template_path, &doc.text, &value, options);
        files.iter().any(same).then(|| t.clone())
    });
    open.or_else(|| documents::file_uri(&loader::owning_template(&path)?))
}

/// The text of the template at `uri`: the editor's when open, else the disk's.
pub fn text_of(docs: &Documents, uri: &Uri) -> Option<String> {
    Overlay(docs).read(&documents::file_path(uri)?).ok()
}
