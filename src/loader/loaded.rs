//! What loading gives: one [`LoadedFile`] per state machine, with the file its diagnostics
//! point into, and the small facts every door derives from it the same way.

use crate::asl::{self, LoadedDefinition, MachineType, SourceFormat, Substitutions};
use std::path::Path;

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
    /// The diagnostics of `built_text` as they point into it, before they were moved to the
    /// template's field (the language server maps their fixes into the string).
    pub built_diagnostics: Option<asl::Diagnostics>,
    /// The text of `path`.
    pub text: String,
    /// The definition, its diagnostics pointing into `text`.
    pub definition: LoadedDefinition,
    /// The Lambda functions of its template, which its Tasks may call and sfn-local runs.
    pub functions: Option<std::sync::Arc<crate::tasks::local_lambda::LocalFunctions>>,
    /// What the template gets wrong around a definition kept in a file of its own, placed in
    /// the template (a definition in the template has them among its own diagnostics).
    pub template_problems: Option<TemplateProblems>,
}

/// Diagnostics of a template, about a state machine whose definition is in another file.
#[derive(Debug, Clone)]
pub struct TemplateProblems {
    /// The template.
    pub path: String,
    /// Its text, which the diagnostics point into.
    pub text: String,
    /// What it gets wrong.
    pub diagnostics: asl::Diagnostics,
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
            built_diagnostics: None,
            text,
            definition,
            functions: None,
            template_problems: None,
        }
    }

    /// How people are shown it: `path`, or `path (LogicalId)` for a template's state machine.
    pub fn label(&self) -> String {
        match &self.logical_id {
            Some(id) => format!("{} ({id})", self.path),
            None => self.path.clone(),
        }
    }

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

/// A warning for each value given on the command line that no `${NAME}` placeholder of the
/// files uses (a typo'd name would otherwise leave a stand-in or a refusal with no hint why).
pub fn unused_substitutions(given: &Substitutions, files: &[LoadedFile]) -> Vec<String> {
    let mut out = Vec::new();
    for name in given.names() {
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
        out.push(format!(
            "the substitution {name} is not used: {holder} has no {placeholder} placeholder"
        ));
    }
    out
}

/// A state machine's name from its file: the file name without `.asl.json`, `.asl.yaml`,
/// `.json`, ... (as `run` names machines, and `--machines DIR` knows them).
pub fn machine_name(path: &Path) -> String {
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
