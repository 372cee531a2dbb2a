//! SAM and CloudFormation templates: every state machine inside is checked as `validate`
//! checks the template. An inline `Definition` or a `DefinitionString` reports in the
//! template, at its line; a `DefinitionUri` file reports on that file's own URI, at its line,
//! with the template's substitutions and type (the editor's unsaved text of the file when it
//! is open).

use crate::asl::cfn::{self, DefinitionSource, TemplateMachine};
use crate::asl::diagnostic::{Diagnostic, Location};
use crate::asl::{self, JsonPointer, LoadOptions, MachineType, SourceFormat, Unresolved};
use crate::lsp::check::Published;
use crate::lsp::diagnostics::Placer;
use crate::lsp::documents::{self, Documents};
use lsp_types::Uri;
use std::path::{Component, Path, PathBuf};

/// The diagnostics of a template open at `uri`: its own, then each definition file's.
pub fn check(
    docs: &Documents,
    uri: &Uri,
    text: &str,
    format: SourceFormat,
    default_type: MachineType,
) -> Published {
    let value = match format {
        SourceFormat::Yaml => asl::yaml::parse(text).ok().map(|d| d.value),
        SourceFormat::Json => asl::source::parse_json(text).ok(),
    };
    let Some(value) = value else {
        return vec![(uri.clone(), Vec::new())];
    };
    // Template diagnostics are all at pointers (a DefinitionString's are moved to its field).
    let placer = Placer::new(text, format, &[]);
    let mut own = Vec::new();
    let mut files = Vec::new();
    for machine in cfn::state_machines(&value) {
        let machine_type = match machine.machine_type.as_deref() {
            Some("EXPRESS") => MachineType::Express,
            Some("STANDARD") => MachineType::Standard,
            _ => default_type,
        };
        let (mut in_template, file) = machine_diagnostics(docs, uri, &machine, machine_type);
        // A synthesized template's line means little to a CDK user: name the construct too.
        if let Some(construct) = &machine.cdk_path {
            for d in &mut in_template {
                d.message = format!("{} (construct {construct})", d.message);
            }
        }
        own.extend(in_template.iter().map(|d| placer.to_lsp(uri, d)));
        own.extend(
            template_checks(&machine)
                .iter()
                .map(|d| placer.to_lsp(uri, d)),
        );
        files.extend(file);
    }
    let mut out = vec![(uri.clone(), own)];
    out.extend(files);
    out
}

/// The open template that names the definition file at `uri` in a `DefinitionUri`, if any:
/// that file is checked in the template's context (its substitutions and type).
pub fn owner<'d>(docs: &'d Documents, uri: &Uri) -> Option<(&'d Uri, SourceFormat)> {
    docs.iter().find_map(|(t, doc)| {
        let documents::Kind::Template(format) =
            documents::kind(&documents::file_name(t), &doc.text)
        else {
            return None;
        };
        let folder = documents::file_path(t)?.parent()?.to_path_buf();
        let value = match format {
            SourceFormat::Yaml => asl::yaml::parse(&doc.text).ok()?.value,
            SourceFormat::Json => asl::source::parse_json(&doc.text).ok()?,
        };
        let names = cfn::state_machines(&value)
            .into_iter()
            .any(|m| match m.source {
                DefinitionSource::File { uri: name, .. } => {
                    documents::file_uri(&beside(&folder, &name)).as_ref() == Some(uri)
                }
                _ => false,
            });
        names.then_some((t, format))
    })
}

/// What one state machine's definition says: diagnostics at the template's pointers, and
/// the published diagnostics of its `DefinitionUri` file when it has one.
fn machine_diagnostics(
    docs: &Documents,
    template: &Uri,
    machine: &TemplateMachine,
    machine_type: MachineType,
) -> (Vec<Diagnostic>, Option<(Uri, Vec<lsp_types::Diagnostic>)>) {
    let options = LoadOptions {
        machine_type,
        substitutions: &machine.substitutions,
        unresolved: Unresolved::StandIn,
    };
    match machine.source.clone() {
        DefinitionSource::Inline { value, pointer } => (inline(value, &pointer, options), None),
        DefinitionSource::Text { text, pointer } => (in_string(&text, &pointer, options), None),
        DefinitionSource::File { uri, pointer } => {
            match definition_file(docs, template, &uri, options) {
                Ok(published) => (Vec::new(), Some(published)),
                Err(e) => (
                    vec![unreadable(&pointer, format!("DefinitionUri {uri}: {e}"))],
                    None,
                ),
            }
        }
        DefinitionSource::Unreadable { why, pointer } => (vec![unreadable(&pointer, why)], None),
        DefinitionSource::InS3 { what, pointer, .. } => {
            let field = pointer.tokens().last().unwrap_or_default();
            let message = format!("not checked: the definition is in S3 ({field} {what}); give sfn-local the local file (DefinitionUri: path/to/machine.asl.json) to check it");
            (
                vec![Diagnostic::warning(
                    asl::Code::NotChecked,
                    &pointer,
                    message,
                )],
                None,
            )
        }
    }
}

/// An inline `Definition`'s diagnostics, at the template's pointers.
fn inline(
    mut value: serde_json::Value,
    at: &JsonPointer,
    options: LoadOptions<'_>,
) -> Vec<Diagnostic> {
    let mut diags = asl::Diagnostics::default();
    asl::substitution::apply(
        &mut value,
        options.substitutions,
        options.unresolved,
        &mut diags,
    );
    let loaded = asl::load_value(value, options.machine_type, diags);
    loaded
        .diagnostics
        .0
        .into_iter()
        .map(|d| rebase(d, at))
        .collect()
}

/// A `DefinitionString`'s diagnostics, at its field, the place inside named in the message.
fn in_string(text: &str, at: &JsonPointer, options: LoadOptions<'_>) -> Vec<Diagnostic> {
    let loaded = asl::load_text(text, SourceFormat::Json, options);
    let moved = |mut d: Diagnostic| {
        let inner = d.location_text().unwrap_or_else(|| "/".to_owned());
        d.message = format!("in DefinitionString at {inner}: {}", d.message);
        d.location = Location::Pointer(at.clone());
        d.related.clear();
        d
    };
    loaded.diagnostics.0.into_iter().map(moved).collect()
}

/// A `DefinitionUri` file's diagnostics, on its own URI: the editor's text of it when open,
/// else the file on disk.
fn definition_file(
    docs: &Documents,
    template: &Uri,
    name: &str,
    options: LoadOptions<'_>,
) -> Result<(Uri, Vec<lsp_types::Diagnostic>), String> {
    let template_path = documents::file_path(template).ok_or("the template is not a local file")?;
    let path = beside(template_path.parent().unwrap_or(Path::new("/")), name);
    let uri = documents::file_uri(&path).ok_or("not a path a URI can name")?;
    let text = match docs.get(&uri) {
        Some(doc) => doc.text.clone(),
        None => crate::limits::read_text_capped(&path, crate::limits::DEFINITION_FILE_BYTES)
            .map_err(|e| e.to_string())?,
    };
    let format = SourceFormat::detect(Some(&path.to_string_lossy()), &text);
    let loaded = asl::load_text(&text, format, options);
    let placer = Placer::new(&text, format, &loaded.diagnostics.0);
    let diagnostics = loaded
        .diagnostics
        .iter()
        .map(|d| placer.to_lsp(&uri, d))
        .collect();
    Ok((uri, diagnostics))
}

/// `name` in the template's folder, `.` and `..` taken lexically (as the editor's URIs are).
fn beside(folder: &Path, name: &str) -> PathBuf {
    let mut out = folder.to_path_buf();
    for part in Path::new(name).components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// What the template around a machine gets wrong, as `validate` reports it in the template:
/// intrinsics naming what it does not declare, substitutions no placeholder uses.
fn template_checks(machine: &TemplateMachine) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = machine
        .unresolved
        .iter()
        .map(|r| {
            Diagnostic::error(
                asl::Code::UnresolvedReference,
                &r.pointer,
                r.message.clone(),
            )
        })
        .collect();
    let used: std::collections::BTreeSet<String> = match &machine.source {
        DefinitionSource::Inline { value, .. } => {
            asl::substitution::placeholder_names(&value.to_string())
        }
        DefinitionSource::Text { text, .. } => asl::substitution::placeholder_names(text),
        // A file's placeholders are in the file; `validate` reads them there.
        _ => return out,
    }
    .into_iter()
    .collect();
    let at = JsonPointer::root()
        .key("Resources")
        .key(&machine.logical_id)
        .key("Properties")
        .key("DefinitionSubstitutions");
    let declared = machine
        .substitutions
        .known_names()
        .filter(|n| !n.contains("::"));
    for name in declared.filter(|n| !used.contains(*n)) {
        let message = format!("DefinitionSubstitutions gives {name}, but no ${{{name}}} placeholder of the definition uses it");
        out.push(Diagnostic::warning(
            asl::Code::UnusedSubstitution,
            &at.key(name),
            message,
        ));
    }
    out
}

/// An ERROR at the template's field that names a definition that cannot be read.
fn unreadable(at: &JsonPointer, message: String) -> Diagnostic {
    Diagnostic::error(asl::Code::UnreadableDefinition, at, message)
}

/// A diagnostic of an inline definition, moved to the template's pointers.
fn rebase(mut d: Diagnostic, base: &JsonPointer) -> Diagnostic {
    let join = |p: &JsonPointer| p.tokens().fold(base.clone(), |out, t| out.key(&t));
    match &mut d.location {
        Location::Pointer(p)
        | Location::InString { pointer: p, .. }
        | Location::Field { pointer: p, .. } => *p = join(p),
        _ => {}
    }
    for (p, _) in &mut d.related {
        *p = join(p);
    }
    d
}
