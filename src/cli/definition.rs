//! Reading a definition file the way every command does: JSON or YAML, with `${Name}`
//! placeholders filled from `--sub` and `--definition-substitutions`, or found in a SAM or
//! CloudFormation template (`--template T --state-machine ID`).

use crate::asl::{
    self, LoadOptions, LoadedDefinition, MachineType, SourceFormat, Substitutions, Unresolved,
};
use std::path::Path;

pub use crate::cli::flags::SubstitutionArgs;

/// Reads a definition file (or a template holding definitions) within AWS's limits, before
/// anything parses it: at most [`crate::limits::DEFINITION_FILE_BYTES`] bytes of UTF-8, and a
/// definition (a file that is not a template) at most 1,048,576 characters, refused with AWS's
/// wording.
pub fn read_definition_text(path: &Path) -> Result<String, String> {
    use crate::limits::{read_text_capped, too_long_message, DEFINITION_CHARS};
    let text = read_text_capped(path, crate::limits::DEFINITION_FILE_BYTES)
        .map_err(|e| format!("{e} (AWS: a definition is at most {DEFINITION_CHARS} characters)"))?;
    // A template holds other resources besides its definitions; its own definitions are
    // checked as they are loaded.
    if text.len() > DEFINITION_CHARS
        && !text.contains("Resources")
        && text.chars().count() > DEFINITION_CHARS
    {
        return Err(format!(
            "{}: {}",
            path.display(),
            too_long_message("definition", DEFINITION_CHARS)
        ));
    }
    Ok(text)
}

/// Reads and compiles a definition file (JSON or YAML by name, else by content).
pub fn load_file(
    path: &Path,
    machine_type: MachineType,
    substitutions: &Substitutions,
    unresolved: Unresolved,
) -> Result<(String, LoadedDefinition), String> {
    let text = read_definition_text(path)?;
    let format = SourceFormat::detect(Some(&path.to_string_lossy()), &text);
    let loaded = asl::load_text(
        &text,
        format,
        LoadOptions {
            machine_type,
            substitutions,
            unresolved,
        },
    );
    Ok((text, loaded))
}

/// One definition read for a report: the label to show, the text diagnostics point into,
/// and what loading found.
#[derive(Debug)]
pub struct LoadedFile {
    /// `file`, or `template#LogicalId` for a template's state machine.
    pub label: String,
    /// The text of the file holding the definition.
    pub text: String,
    /// The definition, its diagnostics pointing into `text`.
    pub definition: LoadedDefinition,
}

/// Reads a file that is a definition or a SAM/CloudFormation template: one [`LoadedFile`] per
/// definition (a template gives one per state machine it can read; the others are named in
/// `notes`). `cli` values win over a template's `DefinitionSubstitutions`.
pub fn load_any(
    path: &Path,
    machine_type: MachineType,
    cli: &Substitutions,
    unresolved: Unresolved,
    notes: &mut Vec<String>,
) -> Result<Vec<LoadedFile>, String> {
    let (text, loaded) = load_file(path, machine_type, cli, unresolved)?;
    let label = path.display().to_string();
    if let Some(template) = template_value(&text, &label) {
        return Ok(load_template(
            path,
            &text,
            &template,
            machine_type,
            cli,
            unresolved,
            notes,
        ));
    }
    Ok(vec![LoadedFile {
        label,
        text,
        definition: loaded,
    }])
}

/// The parsed file, when it is a template with state machines.
fn template_value(text: &str, name: &str) -> Option<serde_json::Value> {
    let value = match SourceFormat::detect(Some(name), text) {
        SourceFormat::Yaml => asl::yaml::parse(text).ok()?.value,
        SourceFormat::Json => serde_json::from_str(text.trim_start_matches('\u{feff}')).ok()?,
    };
    asl::cfn::is_template_with_machines(&value).then_some(value)
}

/// Every state machine of a template, loaded. `only` picks one by logical ID.
pub fn load_template(
    path: &Path,
    text: &str,
    template: &serde_json::Value,
    machine_type: MachineType,
    cli: &Substitutions,
    unresolved: Unresolved,
    notes: &mut Vec<String>,
) -> Vec<LoadedFile> {
    load_template_machines(
        path,
        text,
        template,
        machine_type,
        cli,
        unresolved,
        None,
        notes,
    )
}

/// [`load_template`], for the machine with logical ID `only` when given.
#[allow(clippy::too_many_arguments)]
fn load_template_machines(
    path: &Path,
    text: &str,
    template: &serde_json::Value,
    machine_type: MachineType,
    cli: &Substitutions,
    unresolved: Unresolved,
    only: Option<&str>,
    notes: &mut Vec<String>,
) -> Vec<LoadedFile> {
    use asl::cfn::DefinitionSource;
    let mut out = Vec::new();
    for machine in asl::cfn::state_machines(template) {
        if only.is_some_and(|id| id != machine.logical_id) {
            continue;
        }
        let label = format!("{}#{}", path.display(), machine.logical_id);
        let mut subs = machine.substitutions.clone();
        subs.extend(cli);
        let machine_type = match machine.machine_type.as_deref() {
            Some("EXPRESS") => MachineType::Express,
            Some("STANDARD") => MachineType::Standard,
            _ => machine_type,
        };
        match machine.source {
            DefinitionSource::Inline { value, pointer } => out.push(LoadedFile {
                label,
                text: text.to_owned(),
                definition: load_inline(value, &pointer, machine_type, &subs, unresolved),
            }),
            DefinitionSource::Text {
                text: definition_text,
                pointer,
            } => {
                let options = LoadOptions {
                    machine_type,
                    substitutions: &subs,
                    unresolved,
                };
                out.push(LoadedFile {
                    label,
                    text: text.to_owned(),
                    definition: load_string(&definition_text, &pointer, options),
                });
            }
            DefinitionSource::File(rel) => {
                let file = path.parent().unwrap_or(Path::new(".")).join(&rel);
                match load_file(&file, machine_type, &subs, unresolved) {
                    Ok((file_text, definition)) => out.push(LoadedFile {
                        label: format!("{}#{}", file.display(), machine.logical_id),
                        text: file_text,
                        definition,
                    }),
                    Err(e) => notes.push(format!("{label}: DefinitionUri {rel}: {e}")),
                }
            }
            DefinitionSource::Unreadable(why) => {
                notes.push(format!("{label}: {why}; not validated"));
            }
        }
    }
    out
}

/// A template's inline `Definition` (at `pointer`), its diagnostics at the template's places.
fn load_inline(
    mut value: serde_json::Value,
    pointer: &asl::JsonPointer,
    machine_type: MachineType,
    subs: &Substitutions,
    unresolved: Unresolved,
) -> LoadedDefinition {
    let mut diags = asl::Diagnostics::default();
    asl::substitution::apply(&mut value, subs, unresolved, &mut diags);
    let mut definition = asl::load_value(value, machine_type, diags);
    for d in &mut definition.diagnostics.0 {
        rebase(d, pointer);
    }
    definition
}

/// A template's `DefinitionString` (at `pointer`): places inside the string are named in the
/// message; the location is the DefinitionString field of the template.
fn load_string(text: &str, pointer: &asl::JsonPointer, options: LoadOptions) -> LoadedDefinition {
    let mut definition = asl::load_text(text, SourceFormat::Json, options);
    for d in &mut definition.diagnostics.0 {
        let inner = d.location_text().unwrap_or_else(|| "/".to_owned());
        d.message = format!("in DefinitionString at {inner}: {}", d.message);
        d.location = asl::diagnostic::Location::Pointer(pointer.clone());
        d.related.clear();
    }
    definition
}

/// Moves a diagnostic from the definition's own pointers to the template's.
fn rebase(d: &mut asl::Diagnostic, base: &asl::JsonPointer) {
    let join = |p: &asl::JsonPointer| {
        let mut out = base.clone();
        for token in p.tokens() {
            out = out.key(&token);
        }
        out
    };
    match &mut d.location {
        asl::diagnostic::Location::Pointer(p)
        | asl::diagnostic::Location::InString { pointer: p, .. } => *p = join(p),
        _ => {}
    }
    for (p, _) in &mut d.related {
        *p = join(p);
    }
}

/// The definition `run` runs: a file, or one state machine of a template (`--template T
/// --state-machine ID`; the ID may be left out when the template has one state machine).
/// Placeholders without a value are refused. Returns the loaded file and the machine's default
/// name (the file's stem, or the logical ID).
pub fn load_for_run(
    definition: Option<&Path>,
    template: Option<&Path>,
    state_machine: Option<&str>,
    cli: &Substitutions,
) -> Result<(LoadedFile, String), String> {
    if let Some(path) = template {
        let text = read_definition_text(path)?;
        let value = template_value(&text, &path.to_string_lossy()).ok_or_else(|| {
            format!(
                "{} is not a SAM or CloudFormation template with a state machine",
                path.display()
            )
        })?;
        let ids: Vec<String> = asl::cfn::state_machines(&value)
            .into_iter()
            .map(|m| m.logical_id)
            .collect();
        let id = match (state_machine, ids.as_slice()) {
            (Some(id), _) if ids.iter().any(|i| i == id) => id.to_owned(),
            (None, [only]) => only.clone(),
            (want, _) => {
                return Err(format!(
                    "{}{}: choose one with --state-machine: {}",
                    path.display(),
                    want.map(|w| format!(" has no state machine '{w}'"))
                        .unwrap_or_else(|| " has several state machines".to_owned()),
                    ids.join(", ")
                ))
            }
        };
        let mut notes = Vec::new();
        let mut found = load_template_machines(
            path,
            &text,
            &value,
            MachineType::Standard,
            cli,
            Unresolved::Refuse,
            Some(&id),
            &mut notes,
        );
        return match found.pop() {
            Some(file) => Ok((file, id)),
            None => Err(notes.join("; ")),
        };
    }
    let Some(path) = definition else {
        return Err("give a definition file, or --template T --state-machine ID".to_owned());
    };
    let (text, definition) = load_file(path, MachineType::Standard, cli, Unresolved::Refuse)?;
    let name = machine_name(path);
    Ok((
        LoadedFile {
            label: path.display().to_string(),
            text,
            definition,
        },
        name,
    ))
}

impl LoadedFile {
    /// The definition text to store with an execution: the file as written when it is plain
    /// JSON without placeholders, else the JSON the definition became.
    pub fn stored_definition(&self) -> Option<String> {
        let plain = !self.label.contains('#')
            && SourceFormat::detect(Some(&self.label), &self.text) == SourceFormat::Json
            && !self.text.contains("${");
        if plain {
            Some(self.text.clone())
        } else {
            self.definition.json.clone()
        }
    }
}

/// A state machine's name from its file: the file name without `.asl.json`, `.asl.yaml`,
/// `.json`, ... (as `run` names machines, and `--machines DIR` knows them).
pub(crate) fn machine_name(path: &Path) -> String {
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| "StateMachine".into());
    [
        ".asl.json",
        ".asl.yaml",
        ".asl.yml",
        ".json",
        ".yaml",
        ".yml",
    ]
    .iter()
    .find_map(|s| file.strip_suffix(s))
    .unwrap_or(&file)
    .to_owned()
}
