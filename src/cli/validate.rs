//! `sfn-local validate FILE_OR_DIR...`: a CI gate with AWS's verdicts at line and column.

use crate::asl::{self, MachineType};
use crate::cli::report::{self, FileReport};
use crate::cli::EXIT_USAGE;
use clap::{Args, ValueEnum};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Definition files, or folders to search for `*.json` and `*.asl.json`.
    #[arg(required = true, value_name = "FILE_OR_DIR")]
    pub paths: Vec<PathBuf>,
    /// How to print the diagnostics.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// The state machine type, where the rules differ.
    #[arg(long = "type", value_enum, default_value_t = TypeArg::Standard, ignore_case = true)]
    pub machine_type: TypeArg,
}

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Reports for people: the source, underlined (`text`, as in every command; `human` too).
    #[value(name = "text", alias = "human")]
    Human,
    /// AWS's ValidateStateMachineDefinition response shape.
    Json,
    /// GitHub Actions annotations.
    Github,
}

/// `--type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TypeArg {
    /// STANDARD.
    #[value(name = "STANDARD")]
    Standard,
    /// EXPRESS.
    #[value(name = "EXPRESS")]
    Express,
}

/// Test specs (`*.sfntest.json`) and mock configs (`*.mocks.json`) kept beside definitions:
/// not definitions, so a folder walk skips them.
fn is_companion(p: &Path) -> bool {
    let name = p.to_string_lossy();
    name.ends_with(crate::cli::test::SPEC_SUFFIX) || name.ends_with(crate::cli::test::MOCKS_SUFFIX)
}

/// Finds the definition files named by the arguments: files as given, folders walked
/// recursively for `*.json` (which covers `*.asl.json`; test specs and mock configs are
/// skipped), sorted for a stable report.
pub fn collect_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    if let Some(missing) = paths.iter().find(|p| !p.exists()) {
        return Err(format!("{}: no such file or directory", missing.display()));
    }
    crate::cli::files_under(paths, &|p| {
        p.extension().is_some_and(|x| x == "json") && !is_companion(p)
    })
}

/// Runs `validate`.
pub fn run(args: ValidateArgs) -> ExitCode {
    let machine_type = match args.machine_type {
        TypeArg::Standard => MachineType::Standard,
        TypeArg::Express => MachineType::Express,
    };
    let files = match collect_files(&args.paths) {
        Ok(f) => f,
        Err(e) => {
            errln!("error: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    if files.is_empty() {
        errln!("error: no *.json definitions found");
        return ExitCode::from(EXIT_USAGE);
    }
    let mut loaded = Vec::with_capacity(files.len());
    for f in &files {
        match std::fs::read(f) {
            Ok(bytes) => match String::from_utf8(bytes) {
                Ok(text) => {
                    let diags = asl::validate_text(&text, machine_type);
                    loaded.push((f.display().to_string(), text, diags));
                }
                Err(_) => {
                    errln!("error: {}: not UTF-8 text", f.display());
                    return ExitCode::from(EXIT_USAGE);
                }
            },
            Err(e) => {
                errln!("error: cannot read {}: {e}", f.display());
                return ExitCode::from(EXIT_USAGE);
            }
        }
    }
    let reports: Vec<FileReport<'_>> = loaded
        .iter()
        .map(|(path, text, diags)| FileReport {
            path,
            text,
            diagnostics: diags,
        })
        .collect();
    let out = match args.format {
        Format::Human => {
            let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
            report::render_human(&reports, color)
        }
        Format::Json => report::render_json(&reports),
        Format::Github => report::render_github(&reports),
    };
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(out.as_bytes());
    if !out.ends_with('\n') && !out.is_empty() {
        let _ = stdout.write_all(b"\n");
    }
    if loaded.iter().any(|(_, _, d)| d.has_errors()) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
