//! The one loader every door reads state machines through: `validate`, `run`, `test`, `graph`,
//! `coverage`, `serve --template`, `test-state` and the language server (and, through the
//! command line, the pytest and Jest helpers).
//!
//! A definition is named the same way everywhere ([`Reference`]):
//!
//! - `machine.asl.json` / `machine.asl.yaml`: a definition file;
//! - `template.yaml`, `template.yaml#LogicalId`: a SAM or CloudFormation template's state
//!   machine (the `#LogicalId` only needed when it holds several);
//! - `cdk.out`, `cdk.out#LogicalId`, `cdk.out#Stack/LogicalId`: a CDK cloud assembly's stacks,
//!   their `DefinitionBody.fromFile` assets read from the assembly.
//!
//! `#` always chooses a state machine; a mock test case has its own spelling at the doors that
//! take one (`--test-case`, or `ARN#CASE` as Step Functions Local takes it).
//!
//! Stages: [`Reference::parse`] undoes the spelling, [`load_all`]/[`load_one`] find what the
//! path is (definition, template, cloud assembly: [`cdk`]) and compile each state machine
//! ([`template`] for templates). Files are read through a [`Reader`], so the language server
//! checks the editor's unsaved text with the same code that `validate` checks the disk with.

pub mod cdk;
mod loaded;
mod read;
mod reference;
mod template;

pub use loaded::{machine_name, state_of, unused_substitutions, LoadedFile, TemplateProblems};
pub use read::{read_definition_text, Disk, Reader};
pub use reference::{MachineName, Reference, FORMS};
pub use template::{template_functions, template_machines, template_value};

use crate::asl::{self, LoadOptions, MachineType, SourceFormat, Substitutions, Unresolved};
use std::path::{Path, PathBuf};

/// How to load: what every door decides for itself.
#[derive(Clone, Copy)]
pub struct Options<'a> {
    /// The type a definition is checked as when its template does not say.
    pub machine_type: MachineType,
    /// The values given for `${NAME}` placeholders; they win over a template's
    /// `DefinitionSubstitutions`.
    pub substitutions: &'a Substitutions,
    /// What a placeholder without a value becomes.
    pub unresolved: Unresolved,
    /// Where file text comes from.
    pub reader: &'a dyn Reader,
}

impl<'a> Options<'a> {
    /// Options reading the disk, checking as a STANDARD machine unless a template says.
    pub fn new(substitutions: &'a Substitutions, unresolved: Unresolved) -> Self {
        Options {
            machine_type: MachineType::Standard,
            substitutions,
            unresolved,
            reader: &Disk,
        }
    }

    /// The same, checked as `machine_type`.
    pub fn typed(self, machine_type: MachineType) -> Self {
        Options {
            machine_type,
            ..self
        }
    }

    fn asl(&self) -> LoadOptions<'a> {
        LoadOptions {
            machine_type: self.machine_type,
            substitutions: self.substitutions,
            unresolved: self.unresolved,
        }
    }
}

/// Why a reference could not be loaded. What one state machine's definition gets wrong is
/// never this: it is in [`LoadedFile::definition`]'s diagnostics.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Nothing at the path.
    #[error("{shown}: no such file or folder (a state machine is given as {FORMS})")]
    Missing {
        /// The reference as given.
        shown: String,
    },
    /// The file could not be read (too large, not UTF-8, no permission).
    #[error("{0}")]
    Unreadable(String),
    /// A folder that is not a CDK cloud assembly.
    #[error("{shown} is a folder, not a CDK cloud assembly (no manifest.json or *.template.json in it): give a file, or {FORMS}")]
    NotAnAssembly {
        /// The folder as given.
        shown: String,
    },
    /// `#ID` after a file that is a definition, not a template.
    #[error("{path} is a state machine definition, not a template: it has no state machine '{id}' to choose (`#` names a template's state machine; a mock test case is chosen with --test-case {id})")]
    NotATemplate {
        /// The definition file.
        path: String,
        /// What followed `#`.
        id: String,
    },
    /// The template or assembly has no state machine by that name.
    #[error("{holder} has no state machine '{want}': it has {}", list(.ids))]
    NoSuchMachine {
        /// The template or assembly.
        holder: String,
        /// The name asked for.
        want: String,
        /// The names it has, as they would be given.
        ids: Vec<String>,
    },
    /// Several state machines where one is needed.
    #[error("{holder} has several state machines: choose one as {holder}#LogicalId (or --state-machine LogicalId): {}", list(.ids))]
    Several {
        /// The template or assembly.
        holder: String,
        /// The names it has.
        ids: Vec<String>,
    },
    /// A template or assembly without state machines.
    #[error("{holder} holds no state machine")]
    NoMachine {
        /// The template or assembly.
        holder: String,
    },
}

fn list(ids: &[String]) -> String {
    ids.join(", ")
}

/// Every state machine `reference` names: one for a definition file or `#LogicalId`, each of a
/// template's or a cloud assembly's otherwise.
pub fn load_all(reference: &Reference, options: Options<'_>) -> Result<Vec<LoadedFile>, LoadError> {
    let path = &reference.path;
    if path.is_dir() {
        let assembly = cdk::Assembly::open(path).ok_or_else(|| LoadError::NotAnAssembly {
            shown: path.display().to_string(),
        })?;
        return assembly.load(reference.machine.as_ref(), options);
    }
    if !path.exists() {
        return Err(LoadError::Missing {
            shown: reference.to_string(),
        });
    }
    let text = options.reader.read(path).map_err(LoadError::Unreadable)?;
    let name = path.to_string_lossy();
    match (template_value(&text, &name), &reference.machine) {
        (Some(value), want) => {
            let all = template_machines(path, &text, &value, options);
            let all = all.into_iter().map(|f| (None, f)).collect();
            chosen(path.display().to_string(), all, want.as_ref())
        }
        (None, Some(want)) => Err(LoadError::NotATemplate {
            path: path.display().to_string(),
            id: want.to_string(),
        }),
        (None, None) => {
            let format = SourceFormat::detect(Some(&name), &text);
            let definition = asl::load_text(&text, format, options.asl());
            let mut file = LoadedFile::new(path.display().to_string(), text, definition);
            file.machine_type = options.machine_type;
            Ok(vec![file])
        }
    }
}

/// The one state machine `reference` names (a template's or assembly's only one when it names
/// none), with its default name: the deployed name, the logical ID, or the file's stem.
pub fn load_one(
    reference: &Reference,
    options: Options<'_>,
) -> Result<(LoadedFile, String), LoadError> {
    let mut all = load_all(reference, options)?;
    if all.len() > 1 {
        return Err(LoadError::Several {
            holder: reference.path.display().to_string(),
            ids: all.iter().filter_map(|f| f.logical_id.clone()).collect(),
        });
    }
    let file = all.pop().ok_or_else(|| LoadError::NoMachine {
        holder: reference.to_string(),
    })?;
    let name = match &file.logical_id {
        Some(id) => file.deployed_name.clone().unwrap_or_else(|| id.clone()),
        None => machine_name(Path::new(&file.path)),
    };
    Ok((file, name))
}

/// The machines of `all` that `want` names (all of them without `want`), each with the stack
/// it is in when it is a cloud assembly's (`Stack/LogicalId` then chooses the stack too).
fn chosen(
    holder: String,
    all: Vec<(Option<String>, LoadedFile)>,
    want: Option<&MachineName>,
) -> Result<Vec<LoadedFile>, LoadError> {
    let Some(want) = want else {
        return match all.is_empty() {
            true => Err(LoadError::NoMachine { holder }),
            false => Ok(all.into_iter().map(|(_, f)| f).collect()),
        };
    };
    let ids = all
        .iter()
        .filter_map(|(stack, f)| {
            let id = f.logical_id.as_deref()?;
            Some(
                stack
                    .as_ref()
                    .map_or_else(|| id.to_owned(), |s| format!("{s}/{id}")),
            )
        })
        .collect();
    let found: Vec<LoadedFile> = all
        .into_iter()
        .filter(|(stack, f)| {
            f.logical_id.as_deref() == Some(&want.logical_id)
                && (stack.is_none() || want.stack.is_none() || want.stack == *stack)
        })
        .map(|(_, f)| f)
        .collect();
    match found.is_empty() {
        true => Err(LoadError::NoSuchMachine {
            holder,
            want: want.to_string(),
            ids,
        }),
        false => Ok(found),
    }
}

/// Whether text that does not parse is recognisably a template with a state machine: it has
/// `Resources` and names a Step Functions state machine type (mid-edit, or broken).
pub fn looks_like_template(text: &str) -> bool {
    text.contains("Resources")
        && asl::cfn::STATE_MACHINE_TYPES
            .iter()
            .any(|t| text.contains(t))
}

/// Whether text that does not parse is recognisably a definition: `StartAt` and `States`.
pub fn looks_like_definition(text: &str) -> bool {
    text.contains("StartAt") && text.contains("States")
}

/// Whether the file at `path` is a SAM or CloudFormation template with a state machine.
pub fn is_template(path: &Path) -> bool {
    Disk.read(path)
        .ok()
        .and_then(|text| template_value(&text, &path.to_string_lossy()))
        .is_some()
}

/// The template that names the definition file at `path` as its own (a CDK asset of the
/// assembly the file is in), when there is one: that file is checked in the template's context,
/// its substitutions and type.
pub fn owning_template(path: &Path) -> Option<PathBuf> {
    let folder = path.parent()?;
    let assembly = cdk::Assembly::open(folder)?;
    assembly.template_naming(path)
}
