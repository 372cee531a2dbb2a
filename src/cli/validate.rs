//! `sfn-local validate FILE_OR_DIR...`: a CI gate with AWS's verdicts at line and column.

use crate::asl::{MachineType, Unresolved};
use crate::cli::flags::SubstitutionArgs;
use crate::cli::report::{self, FileReport};
use crate::cli::EXIT_USAGE;
use crate::loader::{self, LoadedFile, Reference};
use clap::{Args, ValueEnum};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Definition files (JSON or YAML), or folders to search for state machines
    /// (`*.asl.json`, `*.asl.yaml`, other JSON/YAML files with top-level States and StartAt).
    #[arg(required = true, value_name = "FILE_OR_DIR")]
    pub paths: Vec<PathBuf>,
    /// Values for `${NAME}` placeholders.
    #[command(flatten)]
    pub substitutions: SubstitutionArgs,
    /// How to print the diagnostics.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// The state machine type, where the rules differ.
    #[arg(long = "type", value_enum, default_value_t = TypeArg::Standard, ignore_case = true)]
    pub machine_type: TypeArg,
    /// Fail on warnings too: every WARNING is reported as an ERROR (exit 1).
    #[arg(long)]
    pub strict: bool,
}

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Reports for people: the source, underlined (`text`, as in every command; `human` too).
    #[value(name = "text", alias = "human")]
    Human,
    /// AWS's ValidateStateMachineDefinition response shape: one object for one file argument,
    /// an array (each with its "file") for a folder or several files.
    Json,
    /// An array of AWS's response shapes, each with its "file", even for one file.
    JsonArray,
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

/// Why a file inside a folder is not a state machine to validate, or `Ok` when it is one:
/// `*.asl.json`/`*.asl.yaml`/`*.asl.yml` always are; other JSON and YAML files are when their
/// top level has both `States` and `StartAt`.
pub fn pick_definition(p: &Path) -> Result<(), String> {
    let name = p
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .to_ascii_lowercase();
    if is_companion(p) {
        return Err("a test spec or mock config".to_owned());
    }
    if [".asl.json", ".asl.yaml", ".asl.yml"]
        .iter()
        .any(|s| name.ends_with(s))
    {
        return Ok(());
    }
    let yaml = crate::asl::yaml::is_yaml_name(&name);
    if !yaml && !name.ends_with(".json") {
        return Err("not JSON or YAML".to_owned());
    }
    let text = crate::limits::read_text_capped(p, crate::limits::DEFINITION_FILE_BYTES)
        .map_err(|e| format!("unreadable: {e}"))?;
    let value = if yaml {
        crate::asl::yaml::parse(&text)
            .map(|d| d.value)
            .map_err(|e| format!("not valid YAML ({e})"))
    } else {
        serde_json::from_str::<serde_json::Value>(text.trim_start_matches('\u{feff}'))
            .map_err(|e| format!("not valid JSON ({e}) and not named *.asl.json"))
    };
    let value = match value {
        Ok(v) => v,
        // A state machine that does not parse is a failure to report, never a skip.
        Err(_) if loader::looks_like_template(&text) || loader::looks_like_definition(&text) => {
            return Ok(())
        }
        Err(why) => return Err(why),
    };
    let machine = value.get("States").is_some() && value.get("StartAt").is_some();
    if machine || crate::asl::cfn::is_template_with_machines(&value) {
        Ok(())
    } else if value.get("Resources").is_some() {
        Err("a template with no state machine".to_owned())
    } else {
        Err("not a state machine (no top-level States and StartAt)".to_owned())
    }
}

/// Finds the definition files named by the arguments: files as given, folders walked for
/// state machines only (see [`pick_definition`]), skipping dependency, build, version-control
/// and hidden folders. Also returns what was passed over, with why.
pub(crate) fn collect_files(paths: &[PathBuf]) -> Result<crate::cli::Walk, String> {
    if let Some(missing) = paths.iter().find(|p| !p.exists()) {
        return Err(format!("{}: no such file or directory", missing.display()));
    }
    crate::cli::walk_files(paths, &pick_definition)
}

/// Runs `validate`.
pub fn run(args: ValidateArgs) -> ExitCode {
    let machine_type = match args.machine_type {
        TypeArg::Standard => MachineType::Standard,
        TypeArg::Express => MachineType::Express,
    };
    let usage = |e: String| {
        errln!("error: {e}");
        ExitCode::from(EXIT_USAGE)
    };
    let subs = match args.substitutions.substitutions() {
        Ok(s) => s,
        Err(e) => return usage(e),
    };
    let files = match files_to_check(&args.paths) {
        Ok(files) => files,
        Err(e) => return usage(e),
    };
    let options = loader::Options::new(&subs, Unresolved::StandIn).typed(machine_type);
    let mut loaded = Vec::with_capacity(files.len());
    for f in &files {
        match load_in_context(f, options) {
            Ok(found) => loaded.extend(found),
            Err(e) => return usage(e.to_string()),
        }
    }
    let mut loaded = once_per_state_machine(loaded);
    if args.strict {
        for file in &mut loaded {
            let problems = file
                .template_problems
                .iter_mut()
                .flat_map(|p| &mut p.diagnostics.0);
            for d in file.definition.diagnostics.0.iter_mut().chain(problems) {
                d.severity = crate::asl::diagnostic::Severity::Error;
            }
        }
    }
    let reports: Vec<FileReport<'_>> = loaded.iter().flat_map(LoadedFile::reports).collect();
    print_reports(&reports, &args);
    if reports.iter().any(|r| r.diagnostics.has_errors()) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// The files and references to check: `T#LogicalId` and cloud assemblies as named, other files
/// as given, folders walked for state machines (`-v` says what a walk passed over, and why).
fn files_to_check(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let named_one = |p: &PathBuf| {
        Reference::parse(p).machine.is_some()
            || (p.is_dir() && loader::cdk::Assembly::open(p).is_some())
    };
    let (named, walked): (Vec<PathBuf>, Vec<PathBuf>) = paths.iter().cloned().partition(named_one);
    let walk = collect_files(&walked)?;
    if crate::cli::ui::verbose() {
        for (p, why) in &walk.skipped {
            errln!("skipped {}: {why}", p.display());
        }
    }
    let files: Vec<PathBuf> = named.into_iter().chain(walk.files).collect();
    if files.is_empty() {
        return Err("no state machine definitions found (*.asl.json, *.asl.yaml, or JSON/YAML with States and StartAt)".to_owned());
    }
    Ok(files)
}

/// Prints the reports in the format asked for.
fn print_reports(reports: &[FileReport<'_>], args: &ValidateArgs) {
    let out = match args.format {
        Format::Human => report::render_human(
            reports,
            report::color_wanted(std::io::stdout().is_terminal()),
        ),
        Format::Json => {
            // A folder gives an array even when it holds one definition: one shape per command.
            let one_file = args.paths.len() == 1 && !args.paths[0].is_dir();
            report::render_json_as(reports, !one_file)
        }
        Format::JsonArray => report::render_json_as(reports, true),
        Format::Github => report::render_github(reports),
    };
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(out.as_bytes());
    if !out.ends_with('\n') && !out.is_empty() {
        let _ = stdout.write_all(b"\n");
    }
}

/// The state machines of one file or reference. A definition file that a template of its cloud
/// assembly reads (a CDK `fromFile` asset) is checked as that template checks it, with the
/// template's substitutions and type, as a folder walk and the language server check it.
fn load_in_context(
    given: &Path,
    options: loader::Options<'_>,
) -> Result<Vec<LoadedFile>, loader::LoadError> {
    let reference = Reference::parse(given);
    let owner = (reference.machine.is_none() && given.is_file() && !loader::is_template(given))
        .then(|| loader::owning_template(given))
        .flatten();
    let Some(template) = owner else {
        return loader::load_all(&reference, options);
    };
    let same = |p: &str| std::fs::canonicalize(p).ok() == std::fs::canonicalize(given).ok();
    let all = loader::load_all(&Reference::parse(&template), options)?;
    Ok(all.into_iter().filter(|f| same(&f.path)).collect())
}

/// Drops a definition file checked on its own when a template also names it (`DefinitionUri`):
/// it is checked once, in the template's context (its substitutions, its type), so a folder
/// walk neither counts it twice nor warns about placeholders the template fills.
fn once_per_state_machine(loaded: Vec<LoadedFile>) -> Vec<LoadedFile> {
    let same_file = |p: &str| std::fs::canonicalize(p).ok();
    let named: Vec<PathBuf> = loaded
        .iter()
        .filter(|l| l.template.is_some())
        .filter_map(|l| same_file(&l.path))
        .collect();
    loaded
        .into_iter()
        .filter(|l| {
            l.logical_id.is_some() || same_file(&l.path).is_none_or(|p| !named.contains(&p))
        })
        .collect()
}
