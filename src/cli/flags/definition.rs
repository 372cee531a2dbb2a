//! The definition a command runs: a file (JSON or YAML, `file://PATH` as the AWS CLI spells
//! it), a state machine of a SAM or CloudFormation template (`--template T --state-machine ID`),
//! a CDK cloud assembly's (`cdk.out#LogicalId`), or one the database knows (`--state-machine-arn
//! ARN`), with `${NAME}` placeholders filled (`--sub`, `--definition-substitutions`). Files are
//! named as [`crate::loader::Reference`] says on every door; `ARN#CASE` also chooses a mock test
//! case, as Step Functions Local takes it (a file's mock case is `--test-case`).

use super::{Account, Database, FlagError, SubstitutionArgs};
use crate::asl::{self, Substitutions};
use crate::cli::db::OpenExistingError;
use crate::cli::tasks::exit;
use crate::loader::{self, LoadedFile, Reference};
use clap::Args;
use std::path::PathBuf;

/// Where the definition comes from.
#[derive(Debug, Clone, Args)]
pub struct DefinitionArgs {
    /// The state machine: a definition file (JSON or YAML), TEMPLATE, TEMPLATE#LogicalId,
    /// cdk.out, cdk.out#LogicalId or cdk.out#Stack/LogicalId.
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
        let reference = Reference::with_machine(path, self.state_machine.as_deref());
        Ok(Some(load_reference(
            &reference,
            subs,
            asl::Unresolved::Refuse,
        )?))
    }
}

/// The one state machine `reference` names, loaded; a `--sub` no placeholder uses is a warning.
pub fn load_reference(
    reference: &Reference,
    subs: &Substitutions,
    unresolved: asl::Unresolved,
) -> Result<(LoadedFile, String), FlagError> {
    let (file, name, warnings) = load_reference_warnings(reference, subs, unresolved)?;
    for warning in warnings {
        warnln!("warning: {warning}");
    }
    Ok((file, name))
}

/// [`load_reference`] with its warnings returned instead of told, for a command that tells
/// them later.
pub fn load_reference_warnings(
    reference: &Reference,
    subs: &Substitutions,
    unresolved: asl::Unresolved,
) -> Result<(LoadedFile, String, Vec<String>), FlagError> {
    let (file, name) = loader::load_one(reference, loader::Options::new(subs, unresolved))
        .map_err(|e| e.to_string())?;
    let warnings = loader::unused_substitutions(subs, std::slice::from_ref(&file));
    Ok((file, name, warnings))
}

/// Where a definition comes from, the AWS CLI's spellings undone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DefinitionSource {
    /// A definition file, or a state machine of a template or cloud assembly.
    Reference(Reference),
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
    /// The mock test case `ARN#CASE` chose.
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
    /// Undoes `file://`, `FILE#LogicalId` and `ARN#CASE`, and reads the substitutions.
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
            let id = self.template.state_machine.as_deref();
            DefinitionSource::Reference(Reference::with_machine(path, id))
        } else {
            let given = self.definition.clone().unwrap_or_default();
            DefinitionSource::Reference(Reference::parse(&given))
        };
        Ok(Definition {
            source,
            substitutions: self.substitutions.substitutions()?,
            test_case,
        })
    }
}

impl Definition {
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
                        && loader::state_of(d).is_some_and(|s| covered(&s))
                })
        };
        let DefinitionSource::Reference(reference) = &self.source else {
            return Ok(loaded);
        };
        if !only_covered_holes(&loaded.file) {
            return Ok(loaded);
        }
        let (mut file, default_name) =
            load_reference(reference, &self.substitutions, asl::Unresolved::StandIn)?;
        // The bound states' stand-ins are no news: their binding runs them.
        file.definition.diagnostics.0.retain(|d| {
            d.code != asl::Code::UnresolvedSubstitution
                || !loader::state_of(d).is_some_and(|s| covered(&s))
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
            DefinitionSource::Reference(reference) => {
                load_reference(reference, &self.substitutions, asl::Unresolved::Refuse)?
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
