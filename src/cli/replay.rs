//! `replay`: re-run a recorded execution (AWS's `get-execution-history`, or sfn-local's)
//! against a definition, with the recording's input, Task answers and time, and say whether
//! the definition does the same: `identical` (exit 0) or the first divergence (exit 1). The
//! work is [`crate::replayer`]'s; this file reads the flags and prints.

use crate::asl;
use crate::cli::report::{self, FileReport};
use crate::cli::EXIT_USAGE;
use crate::loader::Reference;
use crate::replayer::test_case::{self, DefinitionRef};
use crate::replayer::{self, history::read_history, Replay, ReplayError, Verdict};
use clap::{Args, ValueEnum};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// How `replay` prints its verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ReplayFormat {
    /// For people: `identical`, or the divergence in a few lines.
    #[default]
    Text,
    /// One JSON object: `{"identical": bool, "divergence": {...}, ...}`, for CI and helpers.
    Json,
}

/// Arguments of `replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The recorded history: `aws stepfunctions get-execution-history --output json` (several
    /// pages may be concatenated), a bare list of events, or `sfn-local get-execution-history`.
    #[arg(value_name = "HISTORY")]
    pub history: PathBuf,
    /// The definition to replay it against: a file, TEMPLATE#LogicalId or cdk.out#LogicalId.
    #[arg(long, value_name = "DEF")]
    pub definition: PathBuf,
    /// text or json.
    #[arg(long, value_enum, default_value_t)]
    pub format: ReplayFormat,
    /// Write the recording as a regression test into this folder: a MockConfigFile with the
    /// recorded Task answers and a `sfn-local test` spec (input, status, output, path).
    #[arg(long, value_name = "DIR")]
    pub write_test: Option<PathBuf>,
    /// Values for `${NAME}` placeholders.
    #[command(flatten)]
    pub substitutions: crate::cli::flags::SubstitutionArgs,
}

/// Runs `replay`.
pub fn run(args: ReplayArgs) -> ExitCode {
    match replay(&args) {
        Ok(code) => code,
        Err(message) => {
            errln!("error: {message}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

fn replay(args: &ReplayArgs) -> Result<ExitCode, String> {
    // Loaded before the history is read, so that it runs again while the file is read; what
    // loading it says is told after what reading the history says, as it always was.
    let definition = load_definition(args);
    let machine = definition
        .as_ref()
        .ok()
        .and_then(|(file, ..)| file.definition.machine.clone());
    let told = |e: ReplayError| match e {
        ReplayError::Unreadable { .. } => e.to_string(),
        e => format!("{}: {e}", args.history.display()),
    };
    let (recorded, replayed) = match machine {
        Some(machine) => {
            let (recorded, replayed) =
                replayer::replay_file(&args.history, Arc::new(machine)).map_err(told)?;
            (recorded, Some(replayed))
        }
        None => (read_history(&args.history).map_err(told)?, None),
    };
    let (file, name, warnings) = definition?;
    for warning in warnings {
        warnln!("warning: {warning}");
    }
    let Some(replayed) = replayed else {
        let shown = file.path.clone();
        let diags = &file.definition.diagnostics;
        let report = report::render_human(&[FileReport::new(&shown, &file.text, diags)], false);
        return Err(format!("the definition has errors:\n{report}"));
    };
    let result = replayed.map_err(|e| e.to_string())?;
    match args.format {
        ReplayFormat::Text => print_text(&result),
        ReplayFormat::Json => outln!(
            "{}",
            serde_json::to_string_pretty(&as_json(&result)).unwrap_or_default()
        ),
    }
    if let Some(dir) = &args.write_test {
        write_test(dir, &file, name, &recorded, &result)?;
    }
    let code = match result.verdict {
        Verdict::Identical => ExitCode::SUCCESS,
        _ => ExitCode::from(1),
    };
    // Not freed: the process ends next, and freeing both histories, made on two threads,
    // took a twentieth of a 10,000-event replay.
    std::mem::forget((recorded, result));
    Ok(code)
}

/// The definition `--definition` names, with its warnings untold.
fn load_definition(
    args: &ReplayArgs,
) -> Result<(crate::loader::LoadedFile, String, Vec<String>), String> {
    let subs = args.substitutions.substitutions()?;
    let reference = Reference::parse(&args.definition);
    crate::cli::flags::load_reference_warnings(&reference, &subs, asl::Unresolved::Refuse)
        .map_err(|e| e.to_string())
}

/// `--write-test DIR`: an identical replay is written; otherwise it says why not (the
/// verdict's exit status stands).
fn write_test(
    dir: &std::path::Path,
    file: &crate::loader::LoadedFile,
    name: String,
    recorded: &[replayer::history::RecordedEvent],
    result: &Replay,
) -> Result<(), String> {
    let definition = definition_ref(file, name)?;
    match test_case::write(dir, &definition, recorded, result) {
        Ok(spec) => errln!(
            "wrote {} (run it: sfn-local test {})",
            spec.display(),
            dir.display()
        ),
        Err(e @ test_case::WriteTestError::NotIdentical) => errln!("{e}"),
        Err(e) => return Err(e.to_string()),
    }
    Ok(())
}

/// The loaded definition as the written spec names it: absolute, so the test runs from
/// anywhere.
fn definition_ref(file: &crate::loader::LoadedFile, name: String) -> Result<DefinitionRef, String> {
    let shown = file
        .template
        .as_deref()
        .filter(|_| file.logical_id.is_some())
        .unwrap_or(&file.path);
    let path = std::fs::canonicalize(shown).map_err(|e| format!("{shown}: {e}"))?;
    Ok(DefinitionRef {
        path,
        logical_id: file.logical_id.clone(),
        machine_name: name,
    })
}

fn print_text(result: &Replay) {
    for m in &result.masked {
        warnln!("note: not compared: {m}");
    }
    match &result.verdict {
        Verdict::Identical if result.recording_complete => outln!("identical"),
        Verdict::Identical => outln!(
            "identical as far as the recording goes (it ends at event {}, before the execution ended)",
            result.recorded_events
        ),
        Verdict::Masked(why) => outln!("cannot tell: {why}"),
        Verdict::Diverged(d) => {
            let state = d
                .state
                .as_deref()
                .map(|s| format!(", state {s}"))
                .unwrap_or_default();
            outln!("diverged at event {}{state}: {}", d.event, d.what);
            outln!("  recorded: {}", d.recorded);
            outln!("  replayed: {}", d.replayed);
            if !d.path.is_empty() {
                outln!("  path:     {}", d.path.join(" > "));
            }
        }
    }
}

fn as_json(result: &Replay) -> Value {
    let (identical, divergence, masked) = match &result.verdict {
        Verdict::Identical => (true, Value::Null, Value::Null),
        Verdict::Diverged(d) => (false, json!(d), Value::Null),
        Verdict::Masked(why) => (false, Value::Null, json!(why)),
    };
    json!({
        "identical": identical,
        "divergence": divergence,
        "masked": masked,
        "notCompared": result.masked,
        "recordedEvents": result.recorded_events,
        "recordingComplete": result.recording_complete,
        "replayedEvents": result.replayed_events,
        "status": result.outcome.status.as_str(),
    })
}
