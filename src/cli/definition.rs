//! Reading a definition file the way every command does: JSON or YAML, with `${Name}`
//! placeholders filled from `--sub` and `--definition-substitutions`, or found in a SAM or
//! CloudFormation template (`--template T --state-machine ID`).

use crate::asl::{
    self, LoadOptions, LoadedDefinition, MachineType, SourceFormat, Substitutions, Unresolved,
};
use clap::Args;
use std::path::{Path, PathBuf};

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
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
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

/// Reads and compiles a definition file (JSON or YAML by name, else by content).
pub fn load_file(
    path: &Path,
    machine_type: MachineType,
    substitutions: &Substitutions,
    unresolved: Unresolved,
) -> Result<(String, LoadedDefinition), String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let text =
        String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8 text", path.display()))?;
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
