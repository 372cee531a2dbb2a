//! State machines of a SAM or CloudFormation template, wherever their definitions are: inline
//! (`Definition`), in a string (`DefinitionString`, `Fn::Join`, `Fn::Sub`), in a file beside the
//! template (`DefinitionUri`), or in a CDK asset of the cloud assembly (`DefinitionS3Location`
//! of `DefinitionBody.fromFile`). What the template itself gets wrong (intrinsics naming what
//! it does not declare, substitutions no placeholder uses) is placed in the template.

use super::{cdk, LoadedFile, Options, Reader};
use crate::asl::diagnostic::{Diagnostic, Location};
use crate::asl::{self, LoadedDefinition, MachineType, SourceFormat, Unresolved};
use std::path::{Path, PathBuf};

/// The parsed file, when it is a template with state machines.
pub fn template_value(text: &str, name: &str) -> Option<serde_json::Value> {
    let value = match SourceFormat::detect(Some(name), text) {
        SourceFormat::Yaml => asl::yaml::parse(text).ok()?.value,
        SourceFormat::Json => serde_json::from_str(text.trim_start_matches('\u{feff}')).ok()?,
    };
    asl::cfn::is_template_with_machines(&value).then_some(value)
}

/// The Lambda functions of the template at `path`, which sfn-local runs itself; `None` when it
/// is not a template with a state machine or declares no function.
pub fn template_functions(
    path: &Path,
) -> Option<std::sync::Arc<crate::tasks::local_lambda::LocalFunctions>> {
    let text = super::Disk.read(path).ok()?;
    let template = template_value(&text, &path.to_string_lossy())?;
    crate::tasks::local_lambda::LocalFunctions::from_template(path, &template)
}

/// Every state machine of the template at `path` (its `text`, parsed as `template`), loaded.
/// Values given in `options` win over the template's `DefinitionSubstitutions`.
pub fn template_machines(
    path: &Path,
    text: &str,
    template: &serde_json::Value,
    options: Options<'_>,
) -> Vec<LoadedFile> {
    let functions = crate::tasks::local_lambda::LocalFunctions::from_template(path, template);
    asl::cfn::state_machines(template)
        .into_iter()
        .map(|machine| {
            let mut subs = machine.substitutions.clone();
            subs.extend(options.substitutions);
            let machine_type = match machine.machine_type.as_deref() {
                Some("EXPRESS") => MachineType::Express,
                Some("STANDARD") => MachineType::Standard,
                _ => options.machine_type,
            };
            let options = Options {
                machine_type,
                substitutions: &subs,
                ..options
            };
            let mut file = load_machine(path, text, machine.source.clone(), options);
            template_checks(&machine, &mut file);
            file.logical_id = Some(machine.logical_id);
            file.deployed_name = machine.name;
            file.machine_type = machine_type;
            file.functions = functions.clone();
            file
        })
        .collect()
}

/// What the template around a state machine gets wrong: intrinsics naming what it does not
/// declare (ERROR, as CloudFormation rejects them) and `DefinitionSubstitutions` no
/// placeholder uses (WARNING), at the template's lines: in the file's own diagnostics when the
/// definition is in the template, else in [`LoadedFile::template_problems`].
fn template_checks(machine: &asl::cfn::TemplateMachine, file: &mut LoadedFile) {
    // A synthesized template's line means little to a CDK user: name the construct too.
    if let (None, Some(construct)) = (&file.template, &machine.cdk_path) {
        for d in &mut file.definition.diagnostics.0 {
            d.message = format!("{} (construct {construct})", d.message);
        }
    }
    let mut found: Vec<Diagnostic> = machine
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
    found.extend(unused_in_template(machine, file));
    match &mut file.template_problems {
        Some(problems) => problems.diagnostics.0.extend(found),
        None => file.definition.diagnostics.0.extend(found),
    }
}

/// `DefinitionSubstitutions` that no placeholder of the definition uses. A definition that
/// was never read (in S3, unreadable) uses nothing anyone can tell: no warning.
fn unused_in_template(machine: &asl::cfn::TemplateMachine, file: &LoadedFile) -> Vec<Diagnostic> {
    use asl::cfn::DefinitionSource;
    let read = file.definition.json.is_some()
        || !file.definition.diagnostics.iter().any(|d| {
            matches!(
                d.code,
                asl::Code::NotChecked | asl::Code::UnreadableDefinition
            )
        });
    if !read {
        return Vec::new();
    }
    let definition_text = file.built_text.as_deref().unwrap_or(&file.text);
    let used: std::collections::BTreeSet<String> = match &machine.source {
        DefinitionSource::Inline { value, .. } => {
            asl::substitution::placeholder_names(&value.to_string())
        }
        _ => asl::substitution::placeholder_names(definition_text),
    }
    .into_iter()
    .collect();
    let at = asl::JsonPointer::root()
        .key("Resources")
        .key(&machine.logical_id)
        .key("Properties")
        .key("DefinitionSubstitutions");
    let declared = machine
        .substitutions
        .known_names()
        .filter(|n| !n.contains("::"));
    declared
        .filter(|n| !used.contains(*n))
        .map(|name| {
            let message = format!("DefinitionSubstitutions gives {name}, but no ${{{name}}} placeholder of the definition uses it");
            Diagnostic::warning(asl::Code::UnusedSubstitution, &at.key(name), message)
        })
        .collect()
}

/// One state machine of a template, from wherever its definition is.
fn load_machine(
    path: &Path,
    text: &str,
    source: asl::cfn::DefinitionSource,
    options: Options<'_>,
) -> LoadedFile {
    use asl::cfn::DefinitionSource;
    let in_template =
        |definition| LoadedFile::new(path.display().to_string(), text.to_owned(), definition);
    match source {
        DefinitionSource::Inline { value, pointer } => {
            in_template(inline(value, &pointer, options))
        }
        DefinitionSource::Text {
            text: definition_text,
            pointer,
        } => {
            let (definition, inner) = in_string(&definition_text, &pointer, options);
            LoadedFile {
                built_text: Some(definition_text),
                built_diagnostics: Some(inner),
                ..in_template(definition)
            }
        }
        DefinitionSource::File { uri, pointer } => {
            let file = beside(path.parent().unwrap_or(Path::new("")), &uri);
            load_beside(path, text, &file, options).unwrap_or_else(|e| {
                in_template(unreadable(&pointer, format!("DefinitionUri {uri}: {e}")))
            })
        }
        DefinitionSource::Unreadable { why, pointer } => in_template(unreadable(&pointer, why)),
        DefinitionSource::InS3 { what, key, pointer } => {
            // CDK's `DefinitionBody.fromFile`: the object is an asset of the stack, in cdk.out.
            match key.and_then(|k| cdk::asset_file(path, &k)) {
                Some(asset) => load_beside(path, text, &asset, options).unwrap_or_else(|e| {
                    let why = format!("the CDK asset {}: {e}", asset.display());
                    in_template(unreadable(&pointer, why))
                }),
                None => in_template(in_s3(&pointer, &what, options.unresolved)),
            }
        }
    }
}

/// An inline `Definition`, its diagnostics at the template's pointers.
fn inline(
    mut value: serde_json::Value,
    at: &asl::JsonPointer,
    options: Options<'_>,
) -> LoadedDefinition {
    let mut diags = asl::Diagnostics::default();
    asl::substitution::apply(
        &mut value,
        options.substitutions,
        options.unresolved,
        &mut diags,
    );
    let mut definition = asl::load_value(value, options.machine_type, diags);
    for d in &mut definition.diagnostics.0 {
        rebase(d, at);
    }
    definition
}

/// A `DefinitionString`: places inside the string are named in the message; the location is
/// the template's field. Also returns the diagnostics as they point into `text`.
fn in_string(
    text: &str,
    at: &asl::JsonPointer,
    options: Options<'_>,
) -> (LoadedDefinition, asl::Diagnostics) {
    let mut definition = asl::load_text(text, SourceFormat::Json, options.asl());
    let inner = definition.diagnostics.clone();
    for d in &mut definition.diagnostics.0 {
        let inner = d.location_text().unwrap_or_else(|| "/".to_owned());
        d.message = format!("in DefinitionString at {inner}: {}", d.message);
        d.location = Location::Pointer(at.clone());
        d.related.clear();
    }
    (definition, inner)
}

/// A definition in a file of its own that the template at `template` names, its diagnostics
/// pointing into that file.
fn load_beside(
    template: &Path,
    template_text: &str,
    file: &Path,
    options: Options<'_>,
) -> Result<LoadedFile, String> {
    let file_text = options.reader.read(file)?;
    let format = SourceFormat::detect(Some(&file.to_string_lossy()), &file_text);
    let definition = asl::load_text(&file_text, format, options.asl());
    Ok(LoadedFile {
        template: Some(template.display().to_string()),
        template_problems: Some(super::TemplateProblems {
            path: template.display().to_string(),
            text: template_text.to_owned(),
            diagnostics: asl::Diagnostics::default(),
        }),
        ..LoadedFile::new(file.display().to_string(), file_text, definition)
    })
}

/// A definition kept in S3: valid, so a WARNING that it is not checked; nothing runs it.
fn in_s3(at: &asl::JsonPointer, what: &str, unresolved: Unresolved) -> LoadedDefinition {
    let field = at.tokens().last().unwrap_or_default();
    let mut diagnostics = asl::Diagnostics::default();
    match unresolved {
        Unresolved::StandIn => diagnostics.warning(
            asl::Code::NotChecked,
            at,
            format!("not checked: the definition is in S3 ({field} {what}); give sfn-local the local file (DefinitionUri: path/to/machine.asl.json) to check it"),
        ),
        Unresolved::Refuse => diagnostics.error(
            asl::Code::UnreadableDefinition,
            at,
            format!("the definition is in S3 ({field} {what}), which sfn-local cannot read: point {field} at the local file"),
        ),
    }
    LoadedDefinition {
        machine: None,
        diagnostics,
        json: None,
    }
}

/// A definition that cannot be read: an ERROR at the template's field that names it.
fn unreadable(at: &asl::JsonPointer, message: String) -> LoadedDefinition {
    let mut diagnostics = asl::Diagnostics::default();
    diagnostics.error(asl::Code::UnreadableDefinition, at, message);
    LoadedDefinition {
        machine: None,
        diagnostics,
        json: None,
    }
}

/// The file a template in `folder` names as `uri`, as a repository path reads: `uri`'s `.`
/// dropped, and each of its `..` taking back a folder of `folder` (a template in `sam/`
/// naming `../statemachine/a.asl.json` gives `statemachine/a.asl.json`). `folder` is kept as
/// the user wrote it otherwise, and a symbolic link is never taken back.
pub(crate) fn beside(folder: &Path, uri: &str) -> PathBuf {
    use std::path::Component;
    let mut out = folder.to_path_buf();
    for part in Path::new(uri).components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                let real_folder =
                    matches!(out.components().next_back(), Some(Component::Normal(_)))
                        && !std::fs::symlink_metadata(&out)
                            .is_ok_and(|m| m.file_type().is_symlink());
                if real_folder {
                    out.pop();
                } else {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// Moves a diagnostic from the definition's own pointers to the template's.
fn rebase(d: &mut asl::Diagnostic, base: &asl::JsonPointer) {
    let join = |p: &asl::JsonPointer| p.tokens().fold(base.clone(), |out, t| out.key(&t));
    match &mut d.location {
        Location::Pointer(p)
        | Location::InString { pointer: p, .. }
        | Location::Field { pointer: p, .. } => *p = join(p),
        _ => {}
    }
    for (p, _) in &mut d.related {
        *p = join(p);
    }
}
