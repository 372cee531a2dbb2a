//! Reading a definition file the way every command does: JSON or YAML, with `${Name}`
//! placeholders filled from `--sub` and `--definition-substitutions`, or found in a SAM or
//! CloudFormation template (`--template T --state-machine ID`).

use crate::asl::{
    self, LoadOptions, LoadedDefinition, MachineType, SourceFormat, Substitutions, Unresolved,
};
use std::path::{Path, PathBuf};

pub use crate::cli::flags::SubstitutionArgs;

/// Reads a definition file (or a template holding definitions) within AWS's limits, before
/// anything parses it: at most [`crate::limits::DEFINITION_FILE_BYTES`] bytes of UTF-8, and a
/// definition (a file that is not a template) at most 1,048,576 characters, refused with AWS's
/// wording.
pub fn read_definition_text(path: &Path) -> Result<String, String> {
    use crate::limits::{read_text_capped, too_long_message, DEFINITION_CHARS};
    // The AWS limit is only worth saying when the file is too large, not when it is missing.
    let text =
        read_text_capped(path, crate::limits::DEFINITION_FILE_BYTES).map_err(|e| match e {
            crate::limits::ReadError::TooLarge { .. } => {
                format!("{e} (AWS: a definition is at most {DEFINITION_CHARS} characters)")
            }
            crate::limits::ReadError::Unreadable { .. } => e.to_string(),
        })?;
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

/// One definition read for a report: the file that holds it, the text diagnostics point
/// into, the template's logical ID when it is a template's state machine, and what loading
/// found.
#[derive(Debug)]
pub struct LoadedFile {
    /// The file that holds the definition (the file itself, the template, or the file a
    /// template's `DefinitionUri` names), as a path the user can open from where they ran the
    /// command.
    pub path: String,
    /// The logical ID, for a template's state machine.
    pub logical_id: Option<String>,
    /// The template, when the definition is in a file of its own (`DefinitionUri`).
    pub template: Option<String>,
    /// The name the template deploys it under (`Name`, `StateMachineName`), when it says.
    pub deployed_name: Option<String>,
    /// The type it was checked as (a template's `Type`, else the command's).
    pub machine_type: MachineType,
    /// The definition's text as the template builds it (a `DefinitionString` that is an
    /// `Fn::Join`, its intrinsics as `${X}` placeholders), when it is not `text` itself.
    pub built_text: Option<String>,
    /// The text of `path`.
    pub text: String,
    /// The definition, its diagnostics pointing into `text`.
    pub definition: LoadedDefinition,
    /// The Lambda functions of its template, which its Tasks may call and sfn-local runs.
    pub functions: Option<std::sync::Arc<crate::tasks::local_lambda::LocalFunctions>>,
}

impl LoadedFile {
    /// A definition file of its own (or a definition named otherwise, by an ARN).
    pub fn new(path: String, text: String, definition: LoadedDefinition) -> Self {
        LoadedFile {
            path,
            logical_id: None,
            template: None,
            deployed_name: None,
            machine_type: MachineType::Standard,
            built_text: None,
            text,
            definition,
            functions: None,
        }
    }

    /// How people are shown it: `path`, or `path (LogicalId)` for a template's state machine.
    pub fn label(&self) -> String {
        match &self.logical_id {
            Some(id) => format!("{} ({id})", self.path),
            None => self.path.clone(),
        }
    }

    /// Its report for `validate` and the other commands that show diagnostics.
    pub fn report(&self) -> crate::cli::report::FileReport<'_> {
        crate::cli::report::FileReport {
            path: &self.path,
            logical_id: self.logical_id.as_deref(),
            template: self.template.as_deref(),
            text: &self.text,
            diagnostics: &self.definition.diagnostics,
        }
    }
}

/// Reads a file that is a definition or a SAM/CloudFormation template: one [`LoadedFile`] per
/// definition (a template gives one per state machine, an ERROR for one whose definition
/// cannot be read). `cli` values win over a template's `DefinitionSubstitutions`.
pub fn load_any(
    path: &Path,
    machine_type: MachineType,
    cli: &Substitutions,
    unresolved: Unresolved,
) -> Result<Vec<LoadedFile>, String> {
    let (text, loaded) = load_file(path, machine_type, cli, unresolved)?;
    if let Some(template) = template_value(&text, &path.to_string_lossy()) {
        return Ok(load_template_machines(
            path,
            &text,
            &template,
            machine_type,
            cli,
            unresolved,
            None,
        ));
    }
    Ok(vec![LoadedFile::new(
        path.display().to_string(),
        text,
        loaded,
    )])
}

/// The Lambda functions of the template at `path`, which sfn-local runs itself; `None` when it
/// is not a template with a state machine or declares no function.
pub fn template_functions(
    path: &Path,
) -> Option<std::sync::Arc<crate::tasks::local_lambda::LocalFunctions>> {
    let text = read_definition_text(path).ok()?;
    let template = template_value(&text, &path.to_string_lossy())?;
    crate::tasks::local_lambda::LocalFunctions::from_template(path, &template)
}

/// Whether the file at `path` is a SAM or CloudFormation template with a state machine.
pub fn is_template(path: &Path) -> bool {
    read_definition_text(path)
        .ok()
        .and_then(|text| template_value(&text, &path.to_string_lossy()))
        .is_some()
}

/// The parsed file, when it is a template with state machines.
fn template_value(text: &str, name: &str) -> Option<serde_json::Value> {
    let value = match SourceFormat::detect(Some(name), text) {
        SourceFormat::Yaml => asl::yaml::parse(text).ok()?.value,
        SourceFormat::Json => serde_json::from_str(text.trim_start_matches('\u{feff}')).ok()?,
    };
    asl::cfn::is_template_with_machines(&value).then_some(value)
}

/// Every state machine of a template, loaded, or the one with logical ID `only` when given.
fn load_template_machines(
    path: &Path,
    text: &str,
    template: &serde_json::Value,
    machine_type: MachineType,
    cli: &Substitutions,
    unresolved: Unresolved,
    only: Option<&str>,
) -> Vec<LoadedFile> {
    let functions = crate::tasks::local_lambda::LocalFunctions::from_template(path, template);
    asl::cfn::state_machines(template)
        .into_iter()
        .filter(|m| only.is_none_or(|id| id == m.logical_id))
        .map(|machine| {
            let mut subs = machine.substitutions.clone();
            subs.extend(cli);
            let machine_type = match machine.machine_type.as_deref() {
                Some("EXPRESS") => MachineType::Express,
                Some("STANDARD") => MachineType::Standard,
                _ => machine_type,
            };
            let options = LoadOptions {
                machine_type,
                substitutions: &subs,
                unresolved,
            };
            let mut file = load_template_machine(path, text, machine.source.clone(), options);
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
/// placeholder uses (WARNING). Both point into the template when the report is the
/// template's, else they name the template's field in the message.
fn template_checks(machine: &asl::cfn::TemplateMachine, file: &mut LoadedFile) {
    use asl::diagnostic::{Diagnostic, Location};
    let in_template = file.template.is_none();
    // A synthesized template's line means little to a CDK user: name the construct too.
    if let (true, Some(construct)) = (in_template, &machine.cdk_path) {
        for d in &mut file.definition.diagnostics.0 {
            d.message = format!("{} (construct {construct})", d.message);
        }
    }
    let placed = |mut d: Diagnostic| {
        if !in_template {
            d.message = format!(
                "the template's {}: {}",
                d.location_text().unwrap_or_default(),
                d.message
            );
            d.location = Location::None;
        }
        d
    };
    for r in &machine.unresolved {
        let d = Diagnostic::error(
            asl::Code::UnresolvedReference,
            &r.pointer,
            r.message.clone(),
        );
        file.definition.diagnostics.push(placed(d));
    }
    let definition_text = file.built_text.as_deref().unwrap_or(&file.text);
    let used: std::collections::BTreeSet<String> = match &machine.source {
        asl::cfn::DefinitionSource::Inline { value, .. } => {
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
    for name in declared.filter(|n| !used.contains(*n)) {
        let message = format!("DefinitionSubstitutions gives {name}, but no ${{{name}}} placeholder of the definition uses it");
        let d = Diagnostic::warning(asl::Code::UnusedSubstitution, &at.key(name), message);
        file.definition.diagnostics.push(placed(d));
    }
}

/// One state machine of a template, from wherever its definition is.
fn load_template_machine(
    path: &Path,
    text: &str,
    source: asl::cfn::DefinitionSource,
    options: LoadOptions<'_>,
) -> LoadedFile {
    use asl::cfn::DefinitionSource;
    let in_template =
        |definition| LoadedFile::new(path.display().to_string(), text.to_owned(), definition);
    match source {
        DefinitionSource::Inline { mut value, pointer } => {
            let mut diags = asl::Diagnostics::default();
            asl::substitution::apply(
                &mut value,
                options.substitutions,
                options.unresolved,
                &mut diags,
            );
            let mut definition = asl::load_value(value, options.machine_type, diags);
            for d in &mut definition.diagnostics.0 {
                rebase(d, &pointer);
            }
            in_template(definition)
        }
        DefinitionSource::Text {
            text: definition_text,
            pointer,
        } => {
            let mut definition = asl::load_text(&definition_text, SourceFormat::Json, options);
            // Places inside the string are named in the message; the location is the
            // DefinitionString field of the template.
            for d in &mut definition.diagnostics.0 {
                let inner = d.location_text().unwrap_or_else(|| "/".to_owned());
                d.message = format!("in DefinitionString at {inner}: {}", d.message);
                d.location = asl::diagnostic::Location::Pointer(pointer.clone());
                d.related.clear();
            }
            LoadedFile {
                built_text: Some(definition_text),
                ..in_template(definition)
            }
        }
        DefinitionSource::File { uri, pointer } => {
            let file = beside(path.parent().unwrap_or(Path::new("")), &uri);
            load_beside(path, &file, options).unwrap_or_else(|e| {
                in_template(unreadable(&pointer, format!("DefinitionUri {uri}: {e}")))
            })
        }
        DefinitionSource::Unreadable { why, pointer } => in_template(unreadable(&pointer, why)),
        DefinitionSource::InS3 { what, key, pointer } => {
            // CDK's `DefinitionBody.fromFile`: the object is an asset of the stack, in cdk.out.
            match key.and_then(|k| cdk_asset(path, &k)) {
                Some(asset) => load_beside(path, &asset, options).unwrap_or_else(|e| {
                    let why = format!("the CDK asset {}: {e}", asset.display());
                    in_template(unreadable(&pointer, why))
                }),
                None => in_template(in_s3(&pointer, &what, options.unresolved)),
            }
        }
    }
}

/// A definition in a file of its own that the template at `template` names, its diagnostics
/// pointing into that file.
fn load_beside(
    template: &Path,
    file: &Path,
    options: LoadOptions<'_>,
) -> Result<LoadedFile, String> {
    let (file_text, definition) = load_file(
        file,
        options.machine_type,
        options.substitutions,
        options.unresolved,
    )?;
    Ok(LoadedFile {
        template: Some(template.display().to_string()),
        ..LoadedFile::new(file.display().to_string(), file_text, definition)
    })
}

/// The file of a CDK file asset whose S3 object key is `key`, as the stack's
/// `*.assets.json` beside the template (in `cdk.out`) lists it.
fn cdk_asset(template: &Path, key: &str) -> Option<PathBuf> {
    let folder = template.parent().unwrap_or(Path::new(""));
    let listing = if folder.as_os_str().is_empty() {
        Path::new(".")
    } else {
        folder
    };
    let manifests = std::fs::read_dir(listing)
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".assets.json"));
    for manifest in manifests {
        let Ok(text) =
            crate::limits::read_text_capped(&manifest.path(), crate::limits::MOCK_FILE_BYTES)
        else {
            continue;
        };
        let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        let files = value.get("files").and_then(|f| f.as_object());
        for asset in files.into_iter().flat_map(|f| f.values()) {
            let destinations = asset.get("destinations").and_then(|d| d.as_object());
            let same_key = destinations
                .into_iter()
                .flat_map(|d| d.values())
                .any(|d| d["objectKey"] == key);
            if let (true, Some(source)) = (
                same_key,
                asset.pointer("/source/path").and_then(|p| p.as_str()),
            ) {
                return Some(folder.join(source));
            }
        }
    }
    None
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
fn beside(folder: &Path, uri: &str) -> PathBuf {
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
    let join = |p: &asl::JsonPointer| {
        let mut out = base.clone();
        for token in p.tokens() {
            out = out.key(&token);
        }
        out
    };
    match &mut d.location {
        asl::diagnostic::Location::Pointer(p)
        | asl::diagnostic::Location::InString { pointer: p, .. }
        | asl::diagnostic::Location::Field { pointer: p, .. } => *p = join(p),
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
    load_for_run_as(definition, template, state_machine, cli, Unresolved::Refuse)
}

/// [`load_for_run`], placeholders without a value handled as `unresolved` says.
pub fn load_for_run_as(
    definition: Option<&Path>,
    template: Option<&Path>,
    state_machine: Option<&str>,
    cli: &Substitutions,
    unresolved: Unresolved,
) -> Result<(LoadedFile, String), String> {
    if let Some(path) = template {
        let text = read_definition_text(path)?;
        let loaded = load_template_for(path, &text, state_machine, cli, unresolved)?;
        warn_unused(cli, std::slice::from_ref(&loaded.0));
        return Ok(loaded);
    }
    let Some(path) = definition else {
        return Err("give a definition file, or --template T --state-machine ID".to_owned());
    };
    load_definition_or_template(path, cli, unresolved)
}

/// The state a diagnostic is in, by its place (`/States/Charge/Parameters/...`, at any depth;
/// a `DefinitionString`'s place is named in its message).
pub fn state_of(d: &asl::Diagnostic) -> Option<String> {
    let inner = d
        .message
        .strip_prefix("in DefinitionString at ")
        .and_then(|rest| rest.split(':').next())
        .map(str::to_owned);
    let place = inner.or_else(|| d.pointer().map(|p| p.to_string()))?;
    let tokens: Vec<&str> = place.split('/').collect();
    let at = tokens.iter().rposition(|t| *t == "States")?;
    tokens
        .get(at + 1)
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
}

/// A definition argument as every command takes one: a definition file, or a SAM/CloudFormation
/// template (`template.yaml`, or `template.yaml#LogicalId` when it has several state machines).
/// Returns the loaded file and the machine's default name (the deployed name, the logical ID,
/// or the file's stem).
pub fn load_definition_or_template(
    arg: &Path,
    cli: &Substitutions,
    unresolved: Unresolved,
) -> Result<(LoadedFile, String), String> {
    let (path, id) = split_logical_id(arg);
    let text = read_definition_text(&path)?;
    if id.is_some() || template_value(&text, &path.to_string_lossy()).is_some() {
        let loaded = load_template_for(&path, &text, id.as_deref(), cli, unresolved)?;
        warn_unused(cli, std::slice::from_ref(&loaded.0));
        return Ok(loaded);
    }
    let format = SourceFormat::detect(Some(&path.to_string_lossy()), &text);
    let options = LoadOptions {
        machine_type: MachineType::Standard,
        substitutions: cli,
        unresolved,
    };
    let definition = asl::load_text(&text, format, options);
    let name = machine_name(&path);
    let file = LoadedFile::new(path.display().to_string(), text, definition);
    warn_unused(cli, std::slice::from_ref(&file));
    Ok((file, name))
}

/// A warning for each `--sub` value no `${NAME}` placeholder of the definitions' files uses
/// (a typo'd name would otherwise leave a stand-in or a refusal with no hint why).
pub(crate) fn warn_unused(cli: &Substitutions, files: &[LoadedFile]) {
    for name in cli.names() {
        let placeholder = format!("${{{name}}}");
        let uses = |f: &LoadedFile| {
            f.text.contains(&placeholder)
                || f.built_text
                    .as_ref()
                    .is_some_and(|t| t.contains(&placeholder))
        };
        if files.iter().any(uses) {
            continue;
        }
        let labels: Vec<String> = files.iter().map(LoadedFile::label).collect();
        let holder = match labels.as_slice() {
            [one] => one.clone(),
            all => format!("none of {}", all.join(", ")),
        };
        warnln!("warning: the substitution {name} is not used: {holder} has no {placeholder} placeholder");
    }
}

/// Every state machine of the SAM or CloudFormation template at `path` (an error when the file
/// cannot be read or is not such a template). `cli` values win over the template's
/// `DefinitionSubstitutions`.
pub fn load_template(
    path: &Path,
    cli: &Substitutions,
    unresolved: Unresolved,
) -> Result<Vec<LoadedFile>, String> {
    let text = read_definition_text(path)?;
    let name = path.to_string_lossy();
    let Some(template) = template_value(&text, &name) else {
        let why = match SourceFormat::detect(Some(&name), &text) {
            SourceFormat::Yaml => asl::yaml::parse(&text)
                .err()
                .map(|e| format!("not valid YAML: {e}")),
            SourceFormat::Json => {
                serde_json::from_str::<serde_json::Value>(text.trim_start_matches('\u{feff}'))
                    .err()
                    .map(|e| format!("not valid JSON: {e}"))
            }
        };
        return Err(format!(
            "{} is {}",
            path.display(),
            why.unwrap_or_else(
                || "not a SAM or CloudFormation template with a state machine".into()
            )
        ));
    };
    let machines = load_template_machines(
        path,
        &text,
        &template,
        MachineType::Standard,
        cli,
        unresolved,
        None,
    );
    Ok(machines)
}

/// `template.yaml#LogicalId` split in two, when the path without `#...` is a file and the
/// whole is not.
pub(crate) fn split_logical_id(arg: &Path) -> (PathBuf, Option<String>) {
    let whole = arg.to_string_lossy();
    if let Some((file, id)) = whole.rsplit_once('#') {
        if !arg.exists() && Path::new(file).is_file() && !id.is_empty() {
            return (PathBuf::from(file), Some(id.to_owned()));
        }
    }
    (arg.to_path_buf(), None)
}

/// The state machine `state_machine` of the template at `path` (or its only one).
fn load_template_for(
    path: &Path,
    text: &str,
    state_machine: Option<&str>,
    cli: &Substitutions,
    unresolved: Unresolved,
) -> Result<(LoadedFile, String), String> {
    let value = template_value(text, &path.to_string_lossy()).ok_or_else(|| {
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
                "{}{}: choose one with --state-machine (or {}#LogicalId): {}",
                path.display(),
                want.map(|w| format!(" has no state machine '{w}'"))
                    .unwrap_or_else(|| " has several state machines".to_owned()),
                path.display(),
                ids.join(", ")
            ))
        }
    };
    let mut found = load_template_machines(
        path,
        text,
        &value,
        MachineType::Standard,
        cli,
        unresolved,
        Some(&id),
    );
    let file = found
        .pop()
        .ok_or_else(|| format!("{}: no state machine {id}", path.display()))?;
    let name = file.deployed_name.clone().unwrap_or(id);
    Ok((file, name))
}

impl LoadedFile {
    /// The definition text to store with an execution: the file as written when it is plain
    /// JSON without placeholders, else the JSON the definition became.
    pub fn stored_definition(&self) -> Option<String> {
        let plain = self.logical_id.is_none()
            && SourceFormat::detect(Some(&self.path), &self.text) == SourceFormat::Json
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
