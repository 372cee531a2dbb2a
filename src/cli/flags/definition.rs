//! The definition a command runs: a file (JSON or YAML, `file://PATH` as the AWS CLI spells
//! it), a state machine of a SAM or CloudFormation template (`--template T --state-machine ID`),
//! or one the database knows (`--state-machine-arn ARN`), with `${NAME}` placeholders filled
//! (`--sub`, `--definition-substitutions`). `DEFINITION#CASE` and `ARN#CASE` also choose a mock
//! test case, as Step Functions Local takes them.

use super::{Account, Database, FlagError, SubstitutionArgs};
use crate::asl::{self, Substitutions};
use crate::cli::db::OpenExistingError;
use crate::cli::definition::LoadedFile;
use crate::cli::tasks::exit;
use clap::Args;
use std::path::{Path, PathBuf};

/// Where the definition comes from.
#[derive(Debug, Clone, Args)]
pub struct DefinitionArgs {
    /// The state machine definition (JSON or YAML).
    #[arg(required_unless_present_any = ["template", "state_machine_arn"])]
    pub definition: Option<PathBuf>,
    /// Run a state machine the database knows instead: one created through `serve`'s API (a
    /// version or alias ARN too), or one that earlier executions ran.
    #[arg(long, value_name = "ARN", conflicts_with_all = ["definition", "template"])]
    pub state_machine_arn: Option<String>,
    /// `--template`, `--state-machine`.
    #[command(flatten)]
    pub template: TemplateArgs,
    /// Values for `${NAME}` placeholders.
    #[command(flatten)]
    pub substitutions: SubstitutionArgs,
}

/// A state machine of a SAM or CloudFormation template, in place of a definition (the
/// command's `definition` argument or flag, which it conflicts with).
#[derive(Debug, Clone, Default, Args)]
pub struct TemplateArgs {
    /// Run a state machine of this SAM or CloudFormation template instead.
    #[arg(long, value_name = "TEMPLATE", conflicts_with = "definition")]
    pub template: Option<PathBuf>,
    /// The logical ID of the template's state machine to run (needed when it has several).
    #[arg(long, value_name = "LOGICAL_ID", requires = "template")]
    pub state_machine: Option<String>,
}

impl TemplateArgs {
    /// The template's state machine, read and compiled with `subs`; placeholders without a
    /// value are refused. `None` without `--template`. Returns the file and the machine's
    /// default name (its `Name`, else its logical ID).
    pub fn load(&self, subs: &Substitutions) -> Result<Option<(LoadedFile, String)>, FlagError> {
        let Some(path) = &self.template else {
            return Ok(None);
        };
        let loaded = crate::cli::definition::load_for_run(
            None,
            Some(path),
            self.state_machine.as_deref(),
            subs,
        )?;
        Ok(Some(loaded))
    }
}

/// Where a definition comes from, the AWS CLI's spellings undone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DefinitionSource {
    /// A definition file.
    File(PathBuf),
    /// One state machine of a template (the only one when `logical_id` is not given).
    Template {
        /// The template file.
        path: PathBuf,
        /// `--state-machine`.
        logical_id: Option<String>,
    },
    /// A state machine the database knows, by ARN (`#CASE` removed).
    Known(String),
}

/// The definition options, lowered.
#[derive(Debug, Clone)]
pub struct Definition {
    /// Where the definition comes from.
    pub source: DefinitionSource,
    /// The placeholder values given on the command line.
    pub substitutions: Substitutions,
    /// The mock test case `DEFINITION#CASE` or `ARN#CASE` chose.
    pub test_case: Option<String>,
}

/// A definition read and compiled, with what its source says about the machine.
#[derive(Debug)]
pub struct LoadedMachine {
    /// The file (or stored definition) and what compiling it found.
    pub file: LoadedFile,
    /// The machine's name unless `--state-machine-name` says otherwise: the file's stem, the
    /// template's logical ID, or the known machine's name.
    pub default_name: String,
    /// The role a known machine was created with.
    pub role_arn: Option<String>,
    /// The region and account of a known machine's ARN: where its executions live, as on AWS.
    pub account: Option<Account>,
    /// The version (and alias) a known machine's ARN named: the execution records them.
    pub started_through: Option<(String, Option<String>)>,
}

impl DefinitionArgs {
    /// Undoes `file://`, `DEFINITION#CASE` and `ARN#CASE`, and reads the substitutions.
    pub fn lower(&self) -> Result<Definition, FlagError> {
        let mut test_case = None;
        let source = if let Some(arn) = &self.state_machine_arn {
            // `ARN#CASE`, as serve's StartExecution (and Step Functions Local) take it.
            match arn.rsplit_once('#').filter(|(_, c)| !c.is_empty()) {
                Some((arn, case)) => {
                    test_case = Some(case.to_owned());
                    DefinitionSource::Known(arn.to_owned())
                }
                None => DefinitionSource::Known(arn.clone()),
            }
        } else if let Some(path) = &self.template.template {
            DefinitionSource::Template {
                path: path.clone(),
                logical_id: self.template.state_machine.clone(),
            }
        } else {
            let (path, case) = definition_path(self.definition.as_deref());
            test_case = case;
            DefinitionSource::File(path)
        };
        Ok(Definition {
            source,
            substitutions: self.substitutions.substitutions()?,
            test_case,
        })
    }
}

/// The definition file, `file://` removed (the AWS CLI's habit), and the case `FILE#CASE`
/// names when the file itself has no `#` in its name.
fn definition_path(given: Option<&Path>) -> (PathBuf, Option<String>) {
    let Some(given) = given else {
        return (PathBuf::new(), None);
    };
    let path = match given.to_str().and_then(|d| d.strip_prefix("file://")) {
        Some(stripped) => PathBuf::from(stripped),
        None => given.to_path_buf(),
    };
    if path.exists() {
        return (path, None);
    }
    let text = path.to_string_lossy().into_owned();
    match crate::tasks::mock::split_test_case(&text) {
        (file, Some(case)) if !text.starts_with("arn:") => {
            (PathBuf::from(file), Some(case.to_owned()))
        }
        _ => (path, None),
    }
}

impl Definition {
    /// The definition file or template, as the user named it (`DEFINITION` for a known
    /// machine), for messages that suggest a spelling.
    pub fn shown_path(&self) -> &Path {
        match &self.source {
            DefinitionSource::File(path) | DefinitionSource::Template { path, .. } => path,
            DefinitionSource::Known(_) => Path::new("DEFINITION"),
        }
    }

    /// [`Definition::load`], but a placeholder without a value is no refusal when it is in a
    /// state `covered` says something else runs (a `--task` binding): it gets a stand-in, and
    /// `--sub` is asked for only where a Task still needs it.
    pub fn load_covering(
        &self,
        db: &Database,
        covered: &dyn Fn(&str) -> bool,
    ) -> Result<LoadedMachine, FlagError> {
        let loaded = self.load(db)?;
        let only_covered_holes = |file: &LoadedFile| {
            let mut errors = file
                .definition
                .diagnostics
                .iter()
                .filter(|d| d.severity == asl::Severity::Error)
                .peekable();
            errors.peek().is_some()
                && errors.all(|d| {
                    d.code == asl::Code::UnresolvedSubstitution
                        && crate::cli::definition::state_of(d).is_some_and(|s| covered(&s))
                })
        };
        let (path, template, id) = match &self.source {
            DefinitionSource::File(path) => (Some(path), None, None),
            DefinitionSource::Template { path, logical_id } => {
                (None, Some(path), logical_id.as_deref())
            }
            DefinitionSource::Known(_) => return Ok(loaded),
        };
        if !only_covered_holes(&loaded.file) {
            return Ok(loaded);
        }
        let (mut file, default_name) = crate::cli::definition::load_for_run_as(
            path.map(PathBuf::as_path),
            template.map(PathBuf::as_path),
            id,
            &self.substitutions,
            asl::Unresolved::StandIn,
        )?;
        // The bound states' stand-ins are no news: their binding runs them.
        file.definition.diagnostics.0.retain(|d| {
            d.code != asl::Code::UnresolvedSubstitution
                || !crate::cli::definition::state_of(d).is_some_and(|s| covered(&s))
        });
        Ok(LoadedMachine {
            file,
            default_name,
            ..loaded
        })
    }

    /// Reads and compiles the definition; placeholders without a value are refused. A known
    /// machine is read from `db`; one it does not know is AWS's `StateMachineDoesNotExist`.
    pub fn load(&self, db: &Database) -> Result<LoadedMachine, FlagError> {
        let (file, default_name) = match &self.source {
            DefinitionSource::Known(arn) => return known_machine(arn, db, &self.substitutions),
            DefinitionSource::File(path) => {
                crate::cli::definition::load_for_run(Some(path), None, None, &self.substitutions)?
            }
            DefinitionSource::Template { path, logical_id } => {
                crate::cli::definition::load_for_run(
                    None,
                    Some(path),
                    logical_id.as_deref(),
                    &self.substitutions,
                )?
            }
        };
        Ok(LoadedMachine {
            file,
            default_name,
            role_arn: None,
            account: None,
            started_through: None,
        })
    }
}

/// The definition of a state machine the database knows, its name, role and home; AWS's
/// `StateMachineDoesNotExist` for one it does not.
fn known_machine(
    arn: &str,
    db: &Database,
    subs: &Substitutions,
) -> Result<LoadedMachine, FlagError> {
    let missing = |why: String| FlagError::Aws {
        operation: "StartExecution",
        code: "StateMachineDoesNotExist",
        message: format!("State Machine Does Not Exist: '{arn}' ({why})"),
        status: exit::STATE_MACHINE_DOES_NOT_EXIST,
    };
    let store = match db.open_for_reading() {
        Ok(s) => s,
        Err(OpenExistingError::Missing(path)) => {
            return Err(missing(format!("{} does not exist", path.display())))
        }
        Err(e) => return Err(FlagError::Usage(e.to_string())),
    };
    let known = match store.known_machine(arn) {
        Ok(Some(k)) => k,
        Ok(None) => {
            return Err(missing(format!(
                "{} knows no such machine; list-executions shows what ran",
                store.path().display()
            )))
        }
        Err(e) => return Err(FlagError::Usage(e.to_string())),
    };
    let definition = asl::load_text(
        &known.definition,
        asl::SourceFormat::detect(None, &known.definition),
        asl::LoadOptions {
            machine_type: asl::MachineType::Standard,
            substitutions: subs,
            unresolved: asl::Unresolved::Refuse,
        },
    );
    Ok(LoadedMachine {
        file: LoadedFile::new(arn.to_owned(), known.definition, definition),
        default_name: known.name,
        role_arn: known.role_arn,
        account: Account::of_arn(arn),
        started_through: known.started_through,
    })
}
