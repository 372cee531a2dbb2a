//! `coverage`: which states, branches and error paths the executions in a database took, for
//! definition files, a template's state machines, or every machine in the database; as a text
//! table, JSON or LCOV, with `--fail-under` for CI.

use crate::asl::{self, JsonPointer, SourceFormat, Unresolved};
use crate::cli::flags::SubstitutionArgs;
use crate::cli::EXIT_USAGE;
use crate::coverage::{self, report, Category, MachineCoverage, Placement, Target};
use crate::loader::{self, LoadedFile, Reference};
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The report's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum CoverageFormat {
    /// A table per machine, then what was not covered with file:line.
    #[default]
    Text,
    /// Every item with its hits.
    Json,
    /// LCOV tracefile: the definition file's lines and branches (genhtml, Codecov, Coveralls).
    Lcov,
}

/// Arguments of `coverage`.
#[derive(Debug, Args)]
pub struct CoverageArgs {
    /// Definition files or SAM/CloudFormation templates (all their state machines, or one as
    /// `template.yaml#LogicalId`) to measure; none: every machine with executions in the
    /// database.
    pub definitions: Vec<PathBuf>,
    /// Measure the state machine of this name or ARN as its executions in the database ran it
    /// (repeatable; every version of it, the older ones labelled so).
    #[arg(long, value_name = "NAME_OR_ARN", conflicts_with = "definitions")]
    pub state_machine: Vec<String>,
    /// `--db`.
    #[command(flatten)]
    pub database: crate::cli::flags::DbArgs,
    /// text, json or lcov.
    #[arg(long, value_enum, default_value_t)]
    pub format: CoverageFormat,
    /// Write the report to FILE instead of stdout.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Exit 1 when states (and branches, if given) are covered below these percentages.
    #[arg(long, value_name = "STATES[,BRANCHES]", value_parser = parse_fail_under)]
    pub fail_under: Option<FailUnder>,
    /// `${Name}` values, as the executions were started with.
    #[command(flatten)]
    pub substitutions: SubstitutionArgs,
}

/// How a coverage report is written and judged (`coverage`, `test --coverage`).
#[derive(Debug, Clone, Default)]
pub struct ReportOptions {
    /// Its format.
    pub format: CoverageFormat,
    /// A file to write it to, else stdout.
    pub output: Option<PathBuf>,
    /// `--fail-under`.
    pub fail_under: Option<FailUnder>,
}

/// `--fail-under STATES[,BRANCHES]`, in percent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FailUnder {
    /// The least share of states covered.
    pub states: f64,
    /// The least share of branches covered.
    pub branches: Option<f64>,
}

/// Reads `--fail-under STATES[,BRANCHES]`.
pub fn parse_fail_under(text: &str) -> Result<FailUnder, String> {
    let percent = |s: &str| -> Result<f64, String> {
        let v: f64 = s
            .trim()
            .trim_end_matches('%')
            .parse()
            .map_err(|_| format!("'{s}' is not a percentage (0 to 100)"))?;
        if (0.0..=100.0).contains(&v) {
            Ok(v)
        } else {
            Err(format!("'{s}' is not a percentage (0 to 100)"))
        }
    };
    match text.split_once(',') {
        Some((s, b)) => Ok(FailUnder {
            states: percent(s)?,
            branches: Some(percent(b)?),
        }),
        None => Ok(FailUnder {
            states: percent(text)?,
            branches: None,
        }),
    }
}

/// Runs `coverage`.
pub fn run(args: CoverageArgs) -> ExitCode {
    let store = match args.database.lower().open_for_reading() {
        Ok(s) => s,
        Err(e) => {
            errln!("error: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let measured = if !args.state_machine.is_empty() {
        match named_machines(&store, &args.state_machine) {
            Ok(m) => Ok(m),
            Err(e) => {
                errln!("error: {e}");
                return ExitCode::from(EXIT_USAGE);
            }
        }
    } else if args.definitions.is_empty() {
        coverage::every_machine(&store)
    } else {
        let targets = match targets(&args.definitions, &args.substitutions) {
            Ok(t) => t,
            Err(e) => {
                errln!("error: {e}");
                return ExitCode::from(EXIT_USAGE);
            }
        };
        coverage::measure(&store, targets)
    };
    match measured {
        Ok(measured) => write_report(
            &measured,
            &ReportOptions {
                format: args.format,
                output: args.output,
                fail_under: args.fail_under,
            },
        ),
        Err(e) => {
            errln!("error: {e}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// The machines of these names (or ARNs) as their executions ran them.
fn named_machines(
    store: &crate::store::Store,
    wanted: &[String],
) -> Result<Vec<MachineCoverage>, String> {
    let all = coverage::every_machine(store).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for given in wanted {
        // arn:aws:states:REGION:ACCOUNT:stateMachine:NAME[:VERSION or ALIAS]
        let name = match given.starts_with("arn:") {
            true => given.split(':').nth(6).unwrap_or(given),
            false => given.as_str(),
        };
        let found: Vec<&MachineCoverage> = all
            .iter()
            .filter(|m| m.machine_names.iter().any(|n| n == name))
            .collect();
        if found.is_empty() {
            return Err(format!(
                "no execution of state machine '{name}' in the database (`sfn-local coverage` with no arguments lists every machine that has some)"
            ));
        }
        out.extend(found.into_iter().cloned());
    }
    Ok(out)
}

/// The definitions the files hold (a template gives each of its state machines).
pub fn targets(paths: &[PathBuf], subs: &SubstitutionArgs) -> Result<Vec<Target>, String> {
    let subs = subs.substitutions()?;
    let mut out = Vec::new();
    for given in paths {
        let reference = Reference::parse(given);
        let options = loader::Options::new(&subs, Unresolved::StandIn);
        let files = loader::load_all(&reference, options).map_err(|e| e.to_string())?;
        for file in files {
            out.push(target(&reference.path, file)?);
        }
    }
    Ok(out)
}

/// One loaded definition as a [`Target`], placed in its file.
fn target(path: &Path, file: LoadedFile) -> Result<Target, String> {
    let shown = tidy(&file.path);
    // Coverage names a template's machine `FILE#LogicalId`, one token per machine.
    let label = match &file.logical_id {
        Some(id) => format!("{shown}#{id}"),
        None => shown.clone(),
    };
    let (Some(machine), Some(json)) = (file.definition.machine, file.definition.json) else {
        return Err(format!(
            "{label} is not a valid state machine (see `sfn-local validate {}`)",
            path.display()
        ));
    };
    let definition: serde_json::Value =
        serde_json::from_str(&json).map_err(|e| format!("{label}: {e}"))?;
    let on_disk = PathBuf::from(&shown);
    // As `run` and `serve` name it: the file's name, or the template machine's own.
    let machine_names = match &file.logical_id {
        Some(id) => vec![file.deployed_name.clone().unwrap_or_else(|| id.clone())],
        None => vec![loader::machine_name(Path::new(&file.path))],
    };
    let logical_id = file.logical_id.clone();
    // Inline in the template unless a DefinitionUri names a file of its own.
    let inline = file.template.is_none();
    let id = logical_id.clone();
    let yaml =
        SourceFormat::detect(Some(&on_disk.to_string_lossy()), &file.text) == SourceFormat::Yaml;
    let placement = match logical_id {
        Some(id) if inline => template_placement(&file.text, yaml, &id),
        _ => Some(Placement::Text {
            text: file.text,
            yaml,
            base: JsonPointer::root(),
        }),
    };
    Ok(Target {
        label,
        file: Some(on_disk),
        logical_id: id,
        machine_names,
        machine,
        definition,
        placement,
    })
}

/// A path as a report shows it (and LCOV's `SF:`): without `.` parts, and with `dir/..`
/// folded (`tests/../statemachine/a.asl.json` is `statemachine/a.asl.json`), as the
/// definition's own path would read from where the command runs.
pub fn tidy(path: &str) -> String {
    use std::path::Component;
    let mut parts: Vec<Component<'_>> = Vec::new();
    for part in Path::new(path).components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir if matches!(parts.last(), Some(Component::Normal(_))) => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    match parts.is_empty() {
        true => ".".to_owned(),
        false => parts.iter().collect::<PathBuf>().display().to_string(),
    }
}

/// Where a template's state machine `id` is written in the template.
fn template_placement(text: &str, yaml: bool, id: &str) -> Option<Placement> {
    let value = if yaml {
        asl::yaml::parse(text).ok()?.value
    } else {
        serde_json::from_str(text.trim_start_matches('\u{feff}')).ok()?
    };
    let machine = asl::cfn::state_machines(&value)
        .into_iter()
        .find(|m| m.logical_id == id)?;
    match machine.source {
        asl::cfn::DefinitionSource::Inline { pointer, .. } => Some(Placement::Text {
            text: text.to_owned(),
            yaml,
            base: pointer,
        }),
        asl::cfn::DefinitionSource::Text { pointer, .. } => Some(Placement::Field {
            text: text.to_owned(),
            yaml,
            pointer,
        }),
        _ => None,
    }
}

/// Prints (or writes) the report; exit 1 when `--fail-under` is not met.
pub fn write_report(measured: &[MachineCoverage], args: &ReportOptions) -> ExitCode {
    let text = match args.format {
        CoverageFormat::Text => report::text(measured),
        CoverageFormat::Json => {
            let mut t = serde_json::to_string_pretty(&report::json(measured)).unwrap_or_default();
            t.push('\n');
            t
        }
        CoverageFormat::Lcov => {
            let placed = match formatted_copies(measured, args.output.as_deref()) {
                Ok(placed) => placed,
                Err(e) => {
                    errln!("error: {e}");
                    return ExitCode::from(EXIT_USAGE);
                }
            };
            match report::lcov(&placed) {
                Some(t) => t,
                None => {
                    errln!("error: LCOV needs definition files: name them (or the template) as arguments");
                    return ExitCode::from(EXIT_USAGE);
                }
            }
        }
    };
    // Executions that were not counted are said on stderr too, whatever the format.
    for m in measured {
        for u in &m.unmatched {
            warnln!("coverage: {}: {}", m.label, u.describe());
        }
    }
    match &args.output {
        Some(file) => {
            if let Err(e) = std::fs::write(file, &text) {
                errln!("error: cannot write {}: {e}", file.display());
                return ExitCode::from(EXIT_USAGE);
            }
        }
        None => {
            use std::io::Write as _;
            let _ = std::io::stdout().lock().write_all(text.as_bytes());
        }
    }
    judge(measured, args.fail_under)
}

/// The folder formatted copies of one-line definitions are written to, beside the report.
pub const COPIES_FOLDER: &str = "sfn-local-definitions";

/// The machines as LCOV places them: one whose states share one line of its file (a
/// template's `DefinitionString`) is placed on a formatted copy of its definition, written to
/// [`COPIES_FOLDER`] beside the report (`--output`'s folder, else the current one) and named in
/// `SF:`, one state per line.
fn formatted_copies(
    measured: &[MachineCoverage],
    output: Option<&Path>,
) -> Result<Vec<MachineCoverage>, String> {
    let beside = output.and_then(Path::parent).unwrap_or(Path::new(""));
    let folder = beside.join(COPIES_FOLDER);
    let mut out = Vec::with_capacity(measured.len());
    for m in measured {
        let Some(text) = &m.formatted else {
            out.push(m.clone());
            continue;
        };
        let name: String = (m.label.rsplit('/').next().unwrap_or(&m.label).chars())
            .map(|c| {
                if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                    c
                } else {
                    '.'
                }
            })
            .collect();
        let copy = folder.join(format!("{name}.asl.json"));
        std::fs::create_dir_all(&folder)
            .and_then(|()| std::fs::write(&copy, text))
            .map_err(|e| format!("cannot write {}: {e}", copy.display()))?;
        out.push(m.on_formatted_copy(copy));
    }
    Ok(out)
}

/// `--fail-under`: exit 1, saying why, when a share is below its floor.
fn judge(measured: &[MachineCoverage], floor: Option<FailUnder>) -> ExitCode {
    let Some(floor) = floor else {
        return ExitCode::SUCCESS;
    };
    let mut failed = false;
    let checks = [
        ("states", Category::State, Some(floor.states)),
        ("branches", Category::Branch, floor.branches),
    ];
    for (what, category, least) in checks {
        let Some(least) = least else { continue };
        let got = report::total(measured, category);
        if got.percent() < least {
            errln!(
                "coverage: {what} {:.1}% ({}/{}) is below --fail-under {least}%",
                got.percent(),
                got.covered,
                got.total
            );
            failed = true;
        }
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn paths_are_shown_tidy() {
        for (given, shown) in [
            (
                "tests/../statemachine/order.asl.json",
                "statemachine/order.asl.json",
            ),
            ("./template.json", "template.json"),
            ("../up/a.json", "../up/a.json"),
            ("/abs/./x/../a.json", "/abs/a.json"),
            ("a.json", "a.json"),
        ] {
            assert_eq!(super::tidy(given), shown);
        }
    }
}
