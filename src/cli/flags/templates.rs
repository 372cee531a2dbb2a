//! `--template TEMPLATE` on `serve` (repeatable): every state machine of SAM or CloudFormation
//! templates, its `${NAME}` placeholders filled from `--sub` and `--definition-substitutions`,
//! or given stand-ins (a server needs a machine to exist before a client can call it).

use super::{FlagError, SubstitutionArgs};
use crate::asl::Unresolved;
use crate::loader::{self, LoadedFile, Reference};
use clap::Args;
use std::path::PathBuf;

/// The templates whose state machines a server creates at start.
#[derive(Debug, Clone, Default, Args)]
pub struct TemplatesArgs {
    /// Create each state machine of this SAM or CloudFormation template at start (repeatable),
    /// named by its Name (StateMachineName) or logical ID. Placeholders without a value get
    /// stand-ins.
    #[arg(long = "template", value_name = "TEMPLATE")]
    pub templates: Vec<PathBuf>,
    /// Values for the templates' `${NAME}` placeholders.
    #[command(flatten)]
    pub substitutions: SubstitutionArgs,
}

impl TemplatesArgs {
    /// Every state machine of every template, read and checked (a machine's own diagnostics
    /// are the caller's to show); a template that cannot be read, or that holds no state
    /// machine, is refused. An unused `--sub` is a warning.
    pub fn lower(&self) -> Result<Vec<LoadedFile>, FlagError> {
        let subs = self.substitutions.substitutions()?;
        let mut files = Vec::new();
        for path in &self.templates {
            let options = loader::Options::new(&subs, Unresolved::StandIn);
            let found = loader::load_all(&Reference::parse(path), options)
                .map_err(|e| format!("--template {e}"))?;
            if found.iter().all(|f| f.logical_id.is_none()) {
                return Err(format!("--template {} is a state machine definition, not a SAM or CloudFormation template (or cdk.out): serve a definition with --machine NAME=FILE", path.display()).into());
            }
            files.extend(found);
        }
        for warning in loader::unused_substitutions(&subs, &files) {
            warnln!("warning: {warning}");
        }
        Ok(files)
    }
}
