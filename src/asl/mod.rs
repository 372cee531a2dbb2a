//! The Amazon States Language: parse JSON text once into a typed, compiled [`StateMachine`],
//! validate it the way AWS does, and evaluate its paths, templates, intrinsics and Choice rules.
//!
//! No I/O and no async here: the engine drives evaluation, the CLI reports diagnostics.

pub mod cfn;
pub mod choice;
#[cfg(test)]
mod corpus_tests;
pub mod diagnostic;
pub mod error;
pub mod eval;
pub mod intrinsics;
pub mod java_hashmap;
pub mod jsonata;
pub mod model;
pub mod parse;
pub mod path;
pub mod path_filter;
pub mod resource;
pub mod source;
pub mod substitution;
pub mod template;
pub mod variables;
pub mod yaml;

pub use diagnostic::{Code, Diagnostic, Diagnostics, JsonPointer, Severity};
pub use error::StatesError;
pub use model::{MachineType, QueryLanguage, StateMachine};
pub use substitution::{Substitutions, Unresolved};

/// Whose behaviour to reproduce where AWS Step Functions and AWS's Step Functions Local
/// differ. AWS's is the default; `StepFunctionsLocal` is for suites written against the old
/// emulator that assert its differences (`serve --compat stepfunctions-local`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Compat {
    /// AWS Step Functions.
    #[default]
    Aws,
    /// AWS Step Functions Local (issue #50): a retrier's `IntervalSeconds` may be 0;
    /// `aws-sdk` tasks' events name the resource `aws-sdk` / `SERVICE:ACTION`; the history's
    /// numbers are written as Java writes doubles (`engine::java_json`); `Parameters` and
    /// `ResultSelector` put their `.$` members last (`Template::in_step_functions_local_order`);
    /// `TaskSucceeded.output` is the result after `ResultSelector` and `ResultPath`; a Parallel
    /// links and names its events as the emulator does (`engine::states::parallel`).
    StepFunctionsLocal,
}

/// How a definition's text is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceFormat {
    /// JSON, as AWS takes it.
    Json,
    /// YAML (`*.asl.yaml`, the AWS Toolkit's other format).
    Yaml,
}

impl SourceFormat {
    /// The format of a file: by its name (`.yaml`/`.yml`), else by its content.
    pub fn detect(name: Option<&str>, text: &str) -> SourceFormat {
        match name {
            Some(n) if yaml::is_yaml_name(n) => SourceFormat::Yaml,
            Some(n) if n.to_ascii_lowercase().ends_with(".json") => SourceFormat::Json,
            _ if yaml::looks_like_yaml(text) => SourceFormat::Yaml,
            _ => SourceFormat::Json,
        }
    }
}

/// How to read a definition: its type, and values for its `${Name}` placeholders.
#[derive(Debug, Clone, Copy)]
pub struct LoadOptions<'a> {
    /// STANDARD or EXPRESS.
    pub machine_type: MachineType,
    /// Values for `${Name}` placeholders.
    pub substitutions: &'a Substitutions,
    /// What a placeholder without a value does.
    pub unresolved: Unresolved,
}

/// A definition read from a file: what every command that takes a definition file needs.
#[derive(Debug)]
pub struct LoadedDefinition {
    /// The compiled machine, when there is no ERROR.
    pub machine: Option<StateMachine>,
    /// Everything found, with pointers into the definition as written.
    pub diagnostics: Diagnostics,
    /// The definition as the JSON text AWS would hold (placeholders replaced), when it parsed:
    /// what `run` stores and what a YAML definition becomes.
    pub json: Option<String>,
}

/// Reads a definition written in JSON or YAML, fills in its `${Name}` placeholders, then
/// validates and compiles it. Never panics. The one entry point for `validate`, `run`, `test`,
/// `graph` and `serve` when they read a definition from a file.
pub fn load_text(text: &str, format: SourceFormat, options: LoadOptions<'_>) -> LoadedDefinition {
    let mut diags = Diagnostics::default();
    let parsed = match format {
        SourceFormat::Json => {
            source::parse_json(text).map_err(|e| source::syntax_diagnostic(text, &e))
        }
        SourceFormat::Yaml => yaml_definition(text),
    };
    let mut value = match parsed {
        Ok(v) => v,
        Err(d) => {
            diags.push(d);
            return LoadedDefinition {
                machine: None,
                diagnostics: diags,
                json: None,
            };
        }
    };
    if format == SourceFormat::Json {
        duplicate_keys(text, &mut diags);
    }
    substitution::apply(
        &mut value,
        options.substitutions,
        options.unresolved,
        &mut diags,
    );
    load_value(value, options.machine_type, diags)
}

/// Validates and compiles a definition already read into a value (a template's inline
/// `Definition`, a substituted `DefinitionString`), adding to `diags`.
pub fn load_value(
    value: serde_json::Value,
    machine_type: MachineType,
    mut diags: Diagnostics,
) -> LoadedDefinition {
    // JSON text cannot nest deeper (serde_json refuses it), but YAML and templates can; what is
    // stored must read back (crate::depth).
    if crate::depth::check(&value).is_err() {
        diags.push(Diagnostic {
            severity: Severity::Error,
            code: Code::TooDeeplyNested,
            message: format!(
                "The definition is too deeply nested: objects and arrays nest more than {} levels deep",
                crate::depth::VALUE_DEPTH
            ),
            location: diagnostic::Location::None,
            related: Vec::new(),
        });
        crate::depth::drop_flat(value);
        return LoadedDefinition {
            machine: None,
            diagnostics: diags,
            json: None,
        };
    }
    let json = serde_json::to_string_pretty(&value).ok();
    let machine = parse::parse_machine(&value, machine_type, &mut diags);
    let machine = if diags.has_errors() { None } else { machine };
    LoadedDefinition {
        machine,
        diagnostics: diags,
        json,
    }
}

/// A YAML definition as a JSON object, or the diagnostic saying why it is not one.
fn yaml_definition(text: &str) -> Result<serde_json::Value, Diagnostic> {
    match yaml::parse(text) {
        Ok(doc) if doc.value.is_object() => Ok(doc.value),
        Ok(_) => Err(Diagnostic {
            severity: Severity::Error,
            code: Code::SchemaValidationFailed,
            message: source::NOT_AN_OBJECT_MESSAGE.to_owned(),
            location: diagnostic::Location::Text { line: 1, column: 1 },
            related: Vec::new(),
        }),
        Err(e) => Err(Diagnostic {
            severity: Severity::Error,
            code: Code::InvalidJsonDescription,
            message: format!("not valid YAML: {}", e.message),
            location: diagnostic::Location::Text {
                line: e.line,
                column: e.column,
            },
            related: Vec::new(),
        }),
    }
}

/// Validates a definition given as text: JSON syntax, then every rule. Never panics.
pub fn validate_text(text: &str, machine_type: MachineType) -> Diagnostics {
    compile_text(text, machine_type).1
}

/// [`validate_text`] with the rules of `compat`.
pub fn validate_text_as(text: &str, machine_type: MachineType, compat: Compat) -> Diagnostics {
    compile_text_as(text, machine_type, compat).1
}

/// Parses and validates a definition given as text. The machine is only returned when there is
/// no ERROR (warnings are allowed), so whatever runs has passed every rule.
pub fn compile_text(text: &str, machine_type: MachineType) -> (Option<StateMachine>, Diagnostics) {
    compile_text_as(text, machine_type, Compat::Aws)
}

/// [`compile_text`] with the rules of `compat` (Step Functions Local accepts what AWS refuses).
pub fn compile_text_as(
    text: &str,
    machine_type: MachineType,
    compat: Compat,
) -> (Option<StateMachine>, Diagnostics) {
    let mut diags = Diagnostics::default();
    let value = match source::parse_json(text) {
        Ok(v) => v,
        Err(e) => {
            diags.push(source::syntax_diagnostic(text, &e));
            return (None, diags);
        }
    };
    duplicate_keys(text, &mut diags);
    let machine = parse::parse_machine_as(&value, machine_type, compat, &mut diags);
    let machine = if diags.has_errors() { None } else { machine };
    (machine, diags)
}

/// Keys written twice in one object. serde_json (like AWS's parser) keeps the last one; a state
/// written twice in one `States` object loses the first state entirely, so that is an ERROR,
/// AWS's `DUPLICATE_STATE_NAME`; anywhere else it is a WARNING.
fn duplicate_keys(text: &str, diags: &mut Diagnostics) {
    for (pointer, _) in source::duplicate_keys(text) {
        let parent = pointer.parent();
        let key = pointer.tokens().last().unwrap_or_default();
        if parent.tokens().last().as_deref() == Some("States") {
            diags.error(
                Code::DuplicateStateName,
                &pointer,
                format!("Duplicate State name: {key} (written twice in the same States object; only the last definition would be kept)"),
            );
        } else {
            diags.warning(
                Code::DuplicateJsonKey,
                &pointer,
                format!("Duplicate key '{key}': only the last value is used"),
            );
        }
    }
}
