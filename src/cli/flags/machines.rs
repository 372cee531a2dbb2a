//! `--machine NAME=FILE` and `--machines DIR` on `run`, `resume` and `test`: the state machines
//! a `states:startExecution*` Task may start as a child execution.

use crate::asl::{self, MachineType};
use crate::engine::children::{KnownMachine, KnownMachines};
use clap::Args;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The known-machine options.
#[derive(Debug, Args, Default, Clone)]
pub struct MachineArgs {
    /// A state machine that `states:startExecution` tasks may start: NAME=FILE (repeatable).
    /// `StateMachineArn` names it by its last part (`arn:…:stateMachine:NAME`).
    #[arg(long = "machine", value_name = "NAME=FILE")]
    pub machine: Vec<String>,
    /// A folder of definitions (`*.asl.json`, `*.json`), each known by its file name as `run`
    /// derives it (`child.asl.json` is `child`).
    #[arg(long = "machines", value_name = "DIR")]
    pub machines: Vec<PathBuf>,
}

fn compile(name: &str, path: &Path) -> Result<KnownMachine, String> {
    let text = crate::loader::read_definition_text(path)
        .map_err(|e| format!("the machine {name}: {e}"))?;
    let (machine, diags) = asl::compile_text(&text, MachineType::Standard);
    match machine {
        Some(m) => Ok(KnownMachine {
            definition: text,
            machine: Arc::new(m),
            bindings: None,
        }),
        None => Err(format!(
            "the machine {name} at {} is not a valid state machine ({}); check it with sfn-local validate",
            path.display(),
            diags
                .0
                .first()
                .map(|d| d.message.clone())
                .unwrap_or_else(|| "invalid".into())
        )),
    }
}

impl MachineArgs {
    /// Reads and compiles the machines named; files relative to `base` (the spec's folder for
    /// `test`, the working directory otherwise).
    pub fn load(&self, base: Option<&Path>) -> Result<KnownMachines, String> {
        let at = |p: &Path| match base {
            Some(b) if p.is_relative() => b.join(p),
            _ => p.to_path_buf(),
        };
        let mut known = KnownMachines::new();
        for dir in &self.machines {
            let dir = at(dir);
            let entries = std::fs::read_dir(&dir)
                .map_err(|e| format!("--machines {}: {e}", dir.display()))?;
            let mut files: Vec<PathBuf> =
                entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
            files.sort();
            for file in files {
                let name = file
                    .file_name()
                    .map(|f| f.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let skipped = name.ends_with(crate::cli::test::SPEC_SUFFIX)
                    || name.ends_with(crate::cli::test::MOCKS_SUFFIX)
                    || !name.ends_with(".json")
                    || !file.is_file();
                if skipped {
                    continue;
                }
                let machine_name = crate::loader::machine_name(&file);
                known.insert(machine_name.clone(), compile(&machine_name, &file)?);
            }
        }
        for binding in &self.machine {
            let (name, file) = binding
                .split_once('=')
                .filter(|(n, f)| !n.is_empty() && !f.is_empty())
                .ok_or_else(|| format!("--machine expects NAME=FILE, got '{binding}'"))?;
            crate::engine::runner::check_name("state machine name", name)
                .map_err(|e| format!("--machine {binding}: {e}"))?;
            known.insert(name.to_owned(), compile(name, &at(Path::new(file)))?);
        }
        Ok(known)
    }
}
