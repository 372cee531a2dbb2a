//! `--sub NAME=VALUE` and `--definition-substitutions FILE`: values for a definition's `${NAME}`
//! placeholders (SAM's and CloudFormation's `DefinitionSubstitutions`), on every command that
//! reads a definition.

use crate::asl::Substitutions;
use clap::Args;
use std::path::PathBuf;

/// The substitution options every command that reads a definition takes.
#[derive(Debug, Clone, Default, Args)]
pub struct SubstitutionArgs {
    /// A value for a `${NAME}` placeholder (SAM/CloudFormation DefinitionSubstitutions).
    /// Repeatable; wins over --definition-substitutions.
    #[arg(long = "sub", value_name = "NAME=VALUE")]
    pub subs: Vec<String>,
    /// A JSON or YAML file mapping placeholder names to values.
    #[arg(long = "definition-substitutions", value_name = "FILE")]
    pub definition_substitutions: Option<PathBuf>,
}

impl SubstitutionArgs {
    /// The values given, file first, then each `--sub`.
    pub fn substitutions(&self) -> Result<Substitutions, String> {
        let mut subs = match &self.definition_substitutions {
            Some(path) => {
                let text =
                    crate::limits::read_text_capped(path, crate::limits::DEFINITION_FILE_BYTES)
                        .map_err(|e| e.to_string())?;
                Substitutions::from_text(&text).map_err(|e| format!("{}: {e}", path.display()))?
            }
            None => Substitutions::new(),
        };
        for s in &self.subs {
            let (name, value) = Substitutions::parse_assignment(s)?;
            subs.insert(name, value);
        }
        Ok(subs)
    }
}
