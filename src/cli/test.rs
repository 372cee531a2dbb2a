//! `sfn-local test SPEC...`: run suites of test cases against mocked Tasks and report like a
//! test runner.
//!
//! A spec is a JSON file (`*.sfntest.json`; folders are searched for that suffix):
//!
//! ```json
//! { "definition": "orders.asl.json",            // relative to the spec, or
//!   "template": "template.yaml",                // a SAM/CloudFormation template's machine:
//!   "stateMachine": "OrderStateMachine",        //   its logical ID (optional when it has one)
//!   "substitutions": {"FnArn": "arn:..."},      // optional: `${NAME}` values (--sub wins)
//!   "stateMachineName": "orders",               // optional: the file name without .asl.json
//!   "mockConfig": "orders.mocks.json",          // optional: a MockConfigFile
//!   "timeScale": 0,                             // optional (default 0: the virtual clock)
//!   "cases": [
//!     { "name": "paid order ships",
//!       "input": {"id": 1},
//!       "testCase": "HappyPath",                // optional: a test case of mockConfig
//!       "mocks": {"Charge": {"0": {"Return": {"ok": true}}}},   // optional, inline; wins per state
//!       "historySnapshot": "snapshots/paid.json",  // optional: the golden history (--update-snapshots)
//!       "expect": { "status": "SUCCEEDED",
//!                   "output": {...},            // exact, or
//!                   "outputContains": {...},    // a JSON subset
//!                   "error": "...", "cause": "...", "causeContains": "...",
//!                   "states": ["Validate", "Charge", "Ship"] } },
//!     { "name": "charge result is trimmed",   // one state, as AWS's TestState runs it
//!       "state": "Charge",
//!       "input": {"id": 1},
//!       "mock": {"result": {"ok": true}},     // TestState's mock: result or errorOutput
//!       "context": {...}, "variables": {...}, "stateConfiguration": {...},  // optional
//!       "expect": { "status": "SUCCEEDED",    // or FAILED, RETRIABLE, CAUGHT_ERROR
//!                   "output": {...}, "outputContains": {...},
//!                   "nextState": "Ship",
//!                   "inspectionData": {"afterResultSelector": {...}},  // a subset, as values
//!                   "error": "...", "cause": "...", "causeContains": "..." } } ] }
//! ```
//!
//! A `"state"` case runs [`crate::engine::test_state::test_state`] at the DEBUG level (or the
//! case's `inspectionLevel`); a mock's `result` may be the JSON value itself or its text.
//!
//! Each case runs in memory (no database) on its own thread, as many at once as there are
//! CPUs, on a virtual clock of its own (unless `--clock real` or a `timeScale` above 0): time
//! jumps to the next deadline whenever the case waits, every deadline in AWS's order. A failing case prints one line and an indented JSON diff; the run ends with
//! `N passed, M failed` and exits 1 when anything failed. `--junit FILE` writes JUnit XML.

use crate::asl::{self, StateMachine};
use crate::cli::EXIT_USAGE;
use crate::clock::{SystemClock, Timekeeping};
use crate::engine::context::ExecutionInfo;
use crate::engine::history::HistoryEvent;
use crate::engine::test_state::{
    test_state_blocking, InspectionLevel, TestStateRequest, TestStateResponse,
};
use crate::engine::{run_in_memory, EngineOptions, Outcome};
use crate::loader::Reference;
use crate::tasks::mock::{MockConfig, Mocks};
use crate::tasks::LocalTasks;
use clap::Args;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The suffix of test specs.
pub const SPEC_SUFFIX: &str = ".sfntest.json";
/// The suffix of mock config files kept beside definitions.
pub const MOCKS_SUFFIX: &str = ".mocks.json";

/// Arguments of `test`.
#[derive(Debug, Args)]
pub struct TestArgs {
    /// Test specs (`*.sfntest.json`), folders to search for them, or a SAM/CloudFormation
    /// template (the specs in its folder that name it).
    #[arg(required = true)]
    pub specs: Vec<PathBuf>,
    /// Also write the results as JUnit XML to FILE.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// How many cases run at once (default: the number of CPUs).
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Write the history of every case that names a `"historySnapshot"` to that file instead
    /// of comparing it.
    #[arg(long)]
    pub update_snapshots: bool,
    /// `--clock`, `--clock-start`, `--time-scale`, `--seed`: every case runs on its own
    /// virtual clock unless `--clock real` (or a spec's "timeScale" above 0) says otherwise.
    #[command(flatten)]
    pub clock: crate::cli::flags::ClockArgs,
    /// A case still running after this many seconds fails (a mock that never answers a Task
    /// without TimeoutSeconds waits forever).
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub case_timeout: u64,
    /// Values for `${NAME}` placeholders, winning over a spec's "substitutions".
    #[command(flatten)]
    pub substitutions: crate::cli::flags::SubstitutionArgs,
    /// `--s3-dir`.
    #[command(flatten)]
    pub s3: crate::cli::flags::S3Args,
    /// State machines that `states:startExecution*` tasks start as child executions (in
    /// memory, like the case itself).
    #[command(flatten)]
    pub machines: crate::cli::flags::MachineArgs,
    /// Report which states, branches and error paths the cases took (see `sfn-local coverage`).
    #[arg(long)]
    pub coverage: bool,
    /// text, json or lcov (with --coverage).
    #[arg(long, value_enum, default_value_t, requires = "coverage")]
    pub coverage_format: crate::cli::coverage::CoverageFormat,
    /// Write the coverage report to FILE instead of stdout (with --coverage).
    #[arg(long, value_name = "FILE", requires = "coverage")]
    pub coverage_output: Option<PathBuf>,
    /// Exit 1 when states (and branches) are covered below these percentages (with --coverage).
    #[arg(long, value_name = "STATES[,BRANCHES]", requires = "coverage",
          value_parser = crate::cli::coverage::parse_fail_under)]
    pub coverage_fail_under: Option<crate::cli::coverage::FailUnder>,
}

/// One case, ready to run.
struct Job {
    suite: String,
    name: String,
    /// The case's place in its spec (0 for the first): its execution's name, whatever other
    /// specs run beside it.
    number: usize,
    prepared: Result<Prepared, String>,
}

struct Prepared {
    machine: Arc<StateMachine>,
    machine_name: String,
    input: Value,
    mocks: Mocks,
    expect: Value,
    /// The real clock's scale, or 0 for a virtual clock of the case's own.
    time_scale: f64,
    /// Where a virtual clock starts (`--clock-start`; default: now).
    clock_start: Option<crate::clock::Millis>,
    s3_dir: Option<PathBuf>,
    /// A `"state"` case: the TestState request it makes.
    test_state: Option<TestStateRequest>,
    /// The definition file, and the machine's logical ID in it for a template, for
    /// `--coverage`.
    definition: MachineSource,
    machines: crate::engine::children::KnownMachines,
    /// `"historySnapshot"`: the golden history file (see [`crate::cli::history_snapshot`]).
    snapshot: Option<PathBuf>,
    /// The template's Lambda functions, run here when a case does not mock their state.
    functions: Option<Arc<crate::tasks::local_lambda::LocalFunctions>>,
}

/// Where a spec's machine is written: the definition file (or template) and, for a template's
/// machine, its logical ID.
type MachineSource = (PathBuf, Option<String>);

/// How one case went.
struct CaseResult {
    suite: String,
    name: String,
    seconds: f64,
    /// Empty when it passed.
    failures: Vec<String>,
    /// With `--coverage`: the definition file and logical ID, the time scale and the
    /// execution's history.
    history: Option<(MachineSource, f64, Vec<HistoryEvent>)>,
}

/// The specs the arguments name: files as given (a missing one fails as a broken spec),
/// folders walked for `*.sfntest.json`, and for a template, the specs in its folder (and below)
/// whose `"template"` is that file.
fn find_specs(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let is_spec = |p: &Path| p.to_string_lossy().ends_with(SPEC_SUFFIX);
    let mut specs = Vec::new();
    for path in paths {
        if path.is_file() && !is_spec(path) && crate::loader::is_template(path) {
            specs.extend(specs_beside(path)?);
        } else {
            specs.extend(crate::cli::files_under(
                std::slice::from_ref(path),
                &is_spec,
            )?);
        }
    }
    Ok(specs)
}

/// The specs under a template's folder that name it as their `"template"`.
fn specs_beside(template: &Path) -> Result<Vec<PathBuf>, String> {
    let folder = match template.parent() {
        Some(f) if !f.as_os_str().is_empty() => f.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let wanted = std::fs::canonicalize(template).map_err(|e| e.to_string())?;
    let candidates =
        crate::cli::files_under(&[folder], &|p| p.to_string_lossy().ends_with(SPEC_SUFFIX))?;
    let names_it = |spec: &Path| {
        let text = crate::limits::read_text_capped(spec, crate::limits::MOCK_FILE_BYTES).ok()?;
        let value: Value = serde_json::from_str(&text).ok()?;
        let named = spec.parent()?.join(value["template"].as_str()?);
        Some(std::fs::canonicalize(named).ok()? == wanted)
    };
    let found: Vec<PathBuf> = candidates
        .into_iter()
        .filter(|spec| names_it(spec) == Some(true))
        .collect();
    if found.is_empty() {
        let name = template.file_name().unwrap_or_default().to_string_lossy();
        return Err(format!(
            "no *{SPEC_SUFFIX} spec beside {} names it: write one with \"template\": \"{name}\" (and \"stateMachine\": the logical ID)",
            template.display()
        ));
    }
    Ok(found)
}

/// A spec read: its machine, mocks and time scale, shared by its cases.
struct Suite {
    spec: Value,
    machine: Arc<StateMachine>,
    /// The definition as AWS holds it (JSON, placeholders filled), for "state" cases.
    text: String,
    machine_name: String,
    config: MockConfig,
    scale: f64,
    /// The definition file and, for a template's machine, its logical ID, for `--coverage`.
    definition: MachineSource,
    /// The spec's folder: its relative paths start there.
    dir: PathBuf,
    /// The template's Lambda functions.
    functions: Option<Arc<crate::tasks::local_lambda::LocalFunctions>>,
}

/// Reads a spec into its jobs; a broken spec is one failing job that says why.
fn load_spec(path: &Path, time_scale: Option<f64>, cli: &asl::Substitutions) -> Vec<Job> {
    let suite = path.display().to_string();
    let broken = |why: String| {
        vec![Job {
            suite: suite.clone(),
            name: "(spec)".into(),
            number: 0,
            prepared: Err(why),
        }]
    };
    let read = match read_suite(path, &suite, time_scale, cli) {
        Ok(s) => s,
        Err(e) => return broken(e),
    };
    let Some(cases) = read.spec["cases"].as_array() else {
        return broken(format!("{suite}: \"cases\" (an array) is required"));
    };
    if cases.is_empty() {
        return broken(format!(
            "{suite}: \"cases\" is empty, so the spec tests nothing"
        ));
    }
    cases
        .iter()
        .enumerate()
        .map(|(i, case)| Job {
            suite: suite.clone(),
            number: i,
            name: case["name"]
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| format!("case {}", i + 1)),
            prepared: prepare_case(&read, case),
        })
        .collect()
}

/// Reads a spec (`suite` is its path as shown), its definition and its mock config; `cli`
/// holds `--sub` and `--definition-substitutions`.
fn read_suite(
    path: &Path,
    suite: &str,
    time_scale: Option<f64>,
    cli: &asl::Substitutions,
) -> Result<Suite, String> {
    let spec: Value = crate::limits::read_text_capped(path, crate::limits::MOCK_FILE_BYTES)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(&t).map_err(|e| format!("{suite} is not JSON: {e}")))?;
    check_spec(&spec).map_err(|e| format!("{suite}: {e}"))?;
    let base = path.parent().unwrap_or(Path::new("."));
    let (def_path, file, default_name) = spec_machine(&spec, base, suite, cli)?;
    let functions = file.functions.clone();
    let logical_id = file.logical_id.clone();
    let loaded = file.definition;
    let Some(machine) = loaded.machine else {
        let first = loaded
            .diagnostics
            .iter()
            .find(|d| d.severity == asl::Severity::Error)
            .map(|d| d.message.clone())
            .unwrap_or_default();
        let label = match &file.logical_id {
            Some(id) => format!("{} ({id})", file.path),
            None => file.path.clone(),
        };
        return Err(format!("{label} is not a valid state machine: {first}"));
    };
    let machine_name = spec["stateMachineName"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or(default_name);
    let config = match spec["mockConfig"].as_str() {
        None => MockConfig::default(),
        Some(rel) => {
            let p = base.join(rel);
            crate::limits::read_text_capped(&p, crate::limits::MOCK_FILE_BYTES)
                .map_err(|e| e.to_string())
                .and_then(|t| MockConfig::parse(&t).map_err(|e| format!("{}: {e}", p.display())))?
        }
    };
    let scale = time_scale
        .or_else(|| spec["timeScale"].as_f64())
        .unwrap_or(0.0);
    Ok(Suite {
        spec,
        machine: Arc::new(machine),
        text: loaded.json.unwrap_or_default(),
        machine_name,
        config,
        scale,
        definition: (def_path, logical_id),
        dir: base.to_owned(),
        functions,
    })
}

/// The spec's machine: its `"definition"` file, or the state machine `"stateMachine"` of its
/// `"template"` (the only one when it names none). Placeholders take the template's
/// `DefinitionSubstitutions`, then the spec's `"substitutions"`, then `cli`, each winning over
/// the one before; one left without a value is refused, as by `run`. Returns the file coverage
/// reads, the loaded definition and the machine's default name.
fn spec_machine(
    spec: &Value,
    base: &Path,
    suite: &str,
    cli: &asl::Substitutions,
) -> Result<(PathBuf, crate::loader::LoadedFile, String), String> {
    let mut subs = asl::Substitutions::new();
    if let Some(Value::Object(values)) = spec.get("substitutions") {
        for (name, value) in values {
            let value = match value {
                Value::String(s) => s.clone(),
                Value::Number(_) | Value::Bool(_) => value.to_string(),
                _ => {
                    return Err(format!(
                        "{suite}: \"substitutions\".{name} must be a string, number or boolean"
                    ))
                }
            };
            subs.insert(name, value);
        }
    }
    subs.extend(cli);
    let reference = match (spec["definition"].as_str(), spec["template"].as_str()) {
        (Some(_), Some(_)) => {
            return Err(format!(
                "{suite}: give \"definition\" or \"template\", not both"
            ))
        }
        (None, None) => {
            return Err(format!(
                "{suite}: \"definition\" (a path) or \"template\" (a SAM/CloudFormation template, with \"stateMachine\" its logical ID) is required"
            ))
        }
        (Some(rel), None) => Reference::parse(&base.join(rel)),
        (None, Some(rel)) => Reference::with_machine(&base.join(rel), spec["stateMachine"].as_str()),
    };
    let (file, name) =
        crate::cli::flags::load_reference(&reference, &subs, asl::Unresolved::Refuse)
            .map_err(|e| format!("{suite}: {e}"))?;
    Ok((PathBuf::from(&file.path), file, name))
}

/// Checks one case of a suite and readies it to run: its mocks (a test case of the spec's
/// mock config and inline ones) or, for a `"state"` case, its TestState request.
fn prepare_case(suite: &Suite, case: &Value) -> Result<Prepared, String> {
    check_case(case)?;
    let mut mocks =
        match case["testCase"].as_str() {
            Some(_) if suite.spec.get("mockConfig").is_none() => return Err(
                "\"testCase\" names a test case of the spec's \"mockConfig\", which the spec lacks"
                    .into(),
            ),
            Some(tc) => suite.config.test_case(&suite.machine_name, tc)?,
            None => Mocks::default(),
        };
    if !case["mocks"].is_null() {
        mocks = mocks.merged(suite.config.inline(&case["mocks"])?);
    }
    let test_state = match case.get("state") {
        None => None,
        Some(state) => Some(state_request(&suite.text, state, case)?),
    };
    if test_state.is_none() {
        mocks.check_against(&suite.machine)?;
    }
    Ok(Prepared {
        machine: suite.machine.clone(),
        machine_name: suite.machine_name.clone(),
        input: case
            .get("input")
            .cloned()
            .unwrap_or_else(|| serde_json::json!({})),
        mocks,
        expect: case["expect"].clone(),
        time_scale: suite.scale,
        clock_start: None,
        s3_dir: None,
        test_state,
        machines: Default::default(),
        definition: suite.definition.clone(),
        snapshot: snapshot_path(suite, case)?,
        functions: suite.functions.clone(),
    })
}

/// A case's `"historySnapshot"`, relative to its spec; only a case on a virtual clock has a
/// history that repeats.
fn snapshot_path(suite: &Suite, case: &Value) -> Result<Option<PathBuf>, String> {
    let Some(rel) = case.get("historySnapshot") else {
        return Ok(None);
    };
    let rel = rel
        .as_str()
        .ok_or("\"historySnapshot\" must be a file name (relative to the spec)")?;
    if suite.scale != 0.0 {
        return Err(
            "\"historySnapshot\" needs the virtual clock (\"timeScale\": 0, the default): a real clock's timestamps never repeat"
                .into(),
        );
    }
    Ok(Some(suite.dir.join(rel)))
}

/// The TestState request of a `"state"` case.
fn state_request(
    definition: &str,
    state: &Value,
    case: &Value,
) -> Result<TestStateRequest, String> {
    let Some(state) = state.as_str() else {
        return Err("\"state\" must be the name of a state".into());
    };
    let text = |k: &str| case.get(k).map(Value::to_string);
    let mut mock = case.get("mock").cloned();
    if let Some(Value::Object(m)) = mock.as_mut() {
        // The result as the value itself is the friendlier spelling; AWS takes JSON text.
        if let Some(result) = m.get_mut("result") {
            if !result.is_string() {
                *result = Value::String(result.to_string());
            }
        }
    }
    fn parse<T: serde::de::DeserializeOwned>(
        k: &str,
        v: Option<Value>,
    ) -> Result<Option<T>, String> {
        v.map(|v| serde_json::from_value(v).map_err(|e| format!("\"{k}\": {e}")))
            .transpose()
    }
    Ok(TestStateRequest {
        definition: definition.to_owned(),
        // AWS asks for a role to run a Task without a mock; a test needs none.
        role_arn: Some(
            case["roleArn"]
                .as_str()
                .unwrap_or("arn:aws:iam::123456789012:role/sfn-local-test")
                .to_owned(),
        ),
        input: Some(text("input").unwrap_or_else(|| "{}".into())),
        inspection_level: Some(
            parse("inspectionLevel", case.get("inspectionLevel").cloned())?
                .unwrap_or(InspectionLevel::Debug),
        ),
        reveal_secrets: None,
        variables: text("variables"),
        state_name: Some(state.to_owned()),
        mock: parse("mock", mock)?,
        context: text("context"),
        state_configuration: parse(
            "stateConfiguration",
            case.get("stateConfiguration").cloned(),
        )?,
    })
}

/// Compares a `"state"` case's TestState answer with its expectations.
fn check_state(
    expect: &Value,
    answer: Result<TestStateResponse, crate::engine::test_state::TestStateError>,
) -> Vec<String> {
    let response = match answer {
        Ok(r) => r,
        Err(e) => {
            return vec![format!(
                "TestState refused the case: {} ({})",
                e.message, e.code
            )]
        }
    };
    let parsed = |t: &Option<String>| {
        t.as_deref()
            .map(|t| serde_json::from_str(t).unwrap_or_else(|_| Value::String(t.to_owned())))
    };
    let mut failures = Vec::new();
    let status = serde_json::to_value(response.status).unwrap_or_default();
    let want_status = expect.get("status").cloned().unwrap_or("SUCCEEDED".into());
    if status != want_status {
        failures.push(format!(
            "status: expected {want_status}, got {status} (error {}, cause {})",
            response.error.as_deref().unwrap_or("(none)"),
            response.cause.as_deref().unwrap_or("(none)")
        ));
    }
    let output = parsed(&response.output).unwrap_or(Value::Null);
    for (key, subset) in [("output", false), ("outputContains", true)] {
        if let Some(want) = expect.get(key) {
            let mut diff = Vec::new();
            json_diff(want, &output, "$", subset, &mut diff);
            if !diff.is_empty() {
                failures.push(format!("output differs:\n      {}", diff.join("\n      ")));
            }
        }
    }
    if let Some(want) = expect.get("inspectionData") {
        let mut data = serde_json::to_value(&response.inspection_data).unwrap_or_default();
        if let Value::Object(fields) = &mut data {
            for v in fields.values_mut() {
                if let Value::String(t) = v {
                    if let Ok(parsed) = serde_json::from_str(t) {
                        *v = parsed;
                    }
                }
            }
        }
        let mut diff = Vec::new();
        json_diff(want, &data, "$", true, &mut diff);
        if !diff.is_empty() {
            failures.push(format!(
                "inspectionData differs:\n      {}",
                diff.join("\n      ")
            ));
        }
    }
    for (key, got) in [
        ("error", &response.error),
        ("cause", &response.cause),
        ("nextState", &response.next_state),
    ] {
        if let Some(want) = expect.get(key) {
            let got_v = got.clone().map(Value::String).unwrap_or(Value::Null);
            if *want != got_v {
                failures.push(format!("{key}: expected {want}, got {got_v}"));
            }
        }
    }
    if let Some(part) = expect["causeContains"].as_str() {
        let cause = response.cause.as_deref().unwrap_or("");
        if !cause.contains(part) {
            failures.push(format!(
                "cause: expected it to contain {part:?}, got {cause:?}"
            ));
        }
    }
    failures
}

/// The keys of a spec, of a case and of a case's `expect`.
const SPEC_KEYS: &[&str] = &[
    "definition",
    "template",
    "stateMachine",
    "substitutions",
    "stateMachineName",
    "mockConfig",
    "timeScale",
    "cases",
];
const CASE_KEYS: &[&str] = &[
    "name",
    "input",
    "testCase",
    "mocks",
    "expect",
    "historySnapshot",
];
/// The keys of a case that tests one state (`"state"`), and of its `expect`.
const STATE_CASE_KEYS: &[&str] = &[
    "name",
    "state",
    "input",
    "mock",
    "context",
    "variables",
    "stateConfiguration",
    "inspectionLevel",
    "roleArn",
    "expect",
];
const STATE_EXPECT_KEYS: &[&str] = &[
    "status",
    "output",
    "outputContains",
    "error",
    "cause",
    "causeContains",
    "nextState",
    "inspectionData",
];
/// The statuses TestState answers with.
const TEST_STATE_STATUSES: &[&str] = &["SUCCEEDED", "FAILED", "RETRIABLE", "CAUGHT_ERROR"];
const EXPECT_KEYS: &[&str] = &[
    "status",
    "output",
    "outputContains",
    "error",
    "cause",
    "causeContains",
    "states",
];
/// The statuses an execution can end with.
const END_STATUSES: &[&str] = &["SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"];

/// Refuses what a spec's top level gets wrong: unknown keys (a misspelled setting must not be
/// silently ignored) and mistyped values.
fn check_spec(spec: &Value) -> Result<(), String> {
    let obj = spec
        .as_object()
        .ok_or("a test spec must be a JSON object")?;
    crate::suggest::check_keys(obj, SPEC_KEYS, "the spec")?;
    for key in [
        "definition",
        "template",
        "stateMachine",
        "stateMachineName",
        "mockConfig",
    ] {
        if obj.get(key).is_some_and(|v| !v.is_string()) {
            return Err(format!("\"{key}\" must be a string"));
        }
    }
    if obj.contains_key("stateMachine") && !obj.contains_key("template") {
        return Err("\"stateMachine\" is the logical ID of a state machine of \"template\", which the spec lacks".into());
    }
    if obj.get("substitutions").is_some_and(|v| !v.is_object()) {
        return Err("\"substitutions\" must be an object of NAME: VALUE".into());
    }
    if obj
        .get("timeScale")
        .is_some_and(|v| !v.as_f64().is_some_and(|f| f.is_finite() && f >= 0.0))
    {
        return Err("\"timeScale\" must be a non-negative number".into());
    }
    Ok(())
}

/// Refuses what a case gets wrong: unknown keys in the case or its `expect`, a `status` that is
/// not an end status, mistyped expectations, and an `expect` that expects nothing (a case that
/// cannot fail is not a test).
fn check_case(case: &Value) -> Result<(), String> {
    let obj = case
        .as_object()
        .ok_or("a case must be a JSON object with \"name\", \"input\" and \"expect\"")?;
    let (case_keys, expect_keys, statuses) = if obj.contains_key("state") {
        (STATE_CASE_KEYS, STATE_EXPECT_KEYS, TEST_STATE_STATUSES)
    } else {
        (CASE_KEYS, EXPECT_KEYS, END_STATUSES)
    };
    crate::suggest::check_keys(obj, case_keys, "the case")?;
    for key in ["name", "testCase"] {
        if obj.get(key).is_some_and(|v| !v.is_string()) {
            return Err(format!("\"{key}\" must be a string"));
        }
    }
    let expect = match obj.get("expect") {
        Some(Value::Object(e)) => e,
        _ => {
            return Err(format!(
                "\"expect\" (an object with one or more of {}) is required",
                expect_keys.join(", ")
            ))
        }
    };
    crate::suggest::check_keys(expect, expect_keys, "\"expect\"")?;
    if expect.is_empty() {
        return Err(format!(
            "\"expect\" is empty, so the case could never fail; expect one or more of {}",
            expect_keys.join(", ")
        ));
    }
    if let Some(status) = expect.get("status") {
        let ok = status.as_str().is_some_and(|s| statuses.contains(&s));
        if !ok {
            let hint = status
                .as_str()
                .map(|s| crate::suggest::did_you_mean(s, statuses.iter().copied()))
                .unwrap_or_default();
            return Err(format!(
                "\"expect\".\"status\" is {status}{hint}; it must be one of {}",
                statuses.join(", ")
            ));
        }
    }
    for key in ["error", "cause"] {
        if expect
            .get(key)
            .is_some_and(|v| !v.is_string() && !v.is_null())
        {
            return Err(format!("\"expect\".\"{key}\" must be a string or null"));
        }
    }
    if expect.get("causeContains").is_some_and(|v| !v.is_string()) {
        return Err("\"expect\".\"causeContains\" must be a string".into());
    }
    if expect
        .get("states")
        .is_some_and(|v| !v.as_array().is_some_and(|a| a.iter().all(Value::is_string)))
    {
        return Err("\"expect\".\"states\" must be an array of state names".into());
    }
    Ok(())
}

/// The case's clock: a virtual one of its own (scale 0), so cases running side by side keep
/// their own instants, or the real one scaled.
fn case_time(p: &Prepared) -> Timekeeping {
    if p.time_scale == 0.0 {
        // A snapshot's history must repeat: it starts at a fixed instant.
        let fixed = p.snapshot.as_ref().and_then(|_| {
            crate::cli::flags::clock::parse_start(crate::cli::history_snapshot::SNAPSHOT_START).ok()
        });
        let start = p
            .clock_start
            .or(fixed)
            .unwrap_or_else(crate::clock::system_now);
        Timekeeping::Virtual(crate::clock::VirtualClock::automatic(start))
    } else {
        Timekeeping::scaled(p.time_scale)
    }
}

/// Runs one case; a snapshot case draws its names and tokens from a fixed seed.
fn run_case(
    p: &Prepared,
    number: usize,
    settings: &RunSettings,
) -> Result<(Outcome, Vec<HistoryEvent>), String> {
    match &p.snapshot {
        Some(_) => {
            let seed = settings
                .seed
                .unwrap_or(crate::cli::history_snapshot::SNAPSHOT_SEED);
            crate::random::with_seed(seed, || execute(p, number, settings.limit))
        }
        None => execute(p, number, settings.limit),
    }
}

/// Runs one case to its end (or the case timeout) in this thread.
fn execute(
    p: &Prepared,
    index: usize,
    limit: Duration,
) -> Result<(Outcome, Vec<HistoryEvent>), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let time = case_time(p);
    let clock = time.clock();
    let info = ExecutionInfo::new(
        "us-east-1",
        "123456789012",
        &p.machine_name,
        &format!("test-{}", index + 1),
        None,
        time.now(),
    );
    let mut tasks = LocalTasks {
        mocks: p.mocks.clone(),
        s3_dir: p.s3_dir.clone(),
        mocks_only: true,
        functions: p.functions.clone(),
        ..LocalTasks::default()
    };
    let children =
        crate::engine::children::LocalChildren::new(crate::engine::children::ChildSetup {
            machines: p.machines.clone(),
            store: None,
            owner: "sfn-local-test".into(),
            time: time.clone(),
            tasks: LocalTasks {
                s3_dir: p.s3_dir.clone(),
                ..LocalTasks::default()
            },
            task_bindings: Vec::new(),
            options: EngineOptions::default(),
            notice: Rc::new(|_: &str| {}),
            region: "us-east-1".into(),
            account: "123456789012".into(),
        });
    if !p.machines.is_empty() {
        tasks.children = children.tasks().children;
    }
    let local = tokio::task::LocalSet::new();
    let run = run_in_memory(
        p.machine.clone(),
        info,
        p.input.clone(),
        clock,
        Rc::new(tasks),
        EngineOptions::default(),
    );
    // Tracked: the case's virtual clock jumps only while it waits.
    let run = time.track(async {
        let done = run.await;
        children.settle().await;
        done
    });
    local
        .block_on(&runtime, async { tokio::time::timeout(limit, run).await })
        .map_err(|_| {
            format!(
                "still running after {} s (a mock that never answers a Task without TimeoutSeconds? see --case-timeout)",
                limit.as_secs()
            )
        })
}

/// Compares a finished case with its expectations.
fn check(expect: &Value, outcome: &Outcome, events: &[HistoryEvent]) -> Vec<String> {
    let mut failures = Vec::new();
    let status = outcome.status.as_str();
    let want_status = expect["status"].as_str().unwrap_or("SUCCEEDED");
    if status != want_status {
        let mut line = format!("status: expected {want_status}, got {status}");
        if let Some(e) = &outcome.error {
            line.push_str(&format!(
                " (error {}, cause {})",
                e.error.as_deref().unwrap_or("(none)"),
                e.cause.as_deref().unwrap_or("(none)")
            ));
        }
        failures.push(line);
    }
    let output = outcome.output.clone().unwrap_or(Value::Null);
    if let Some(want) = expect.get("output") {
        let mut diff = Vec::new();
        json_diff(want, &output, "$", false, &mut diff);
        if !diff.is_empty() {
            failures.push(format!("output differs:\n      {}", diff.join("\n      ")));
        }
    }
    if let Some(want) = expect.get("outputContains") {
        let mut diff = Vec::new();
        json_diff(want, &output, "$", true, &mut diff);
        if !diff.is_empty() {
            failures.push(format!(
                "output does not contain the expected subset:\n      {}",
                diff.join("\n      ")
            ));
        }
    }
    let (error, cause) = outcome
        .error
        .as_ref()
        .map(|e| (e.error.clone(), e.cause.clone()))
        .unwrap_or_default();
    for (key, got) in [("error", &error), ("cause", &cause)] {
        if let Some(want) = expect.get(key) {
            let got_v = got.clone().map(Value::String).unwrap_or(Value::Null);
            if *want != got_v {
                failures.push(format!("{key}: expected {want}, got {got_v}"));
            }
        }
    }
    if let Some(part) = expect["causeContains"].as_str() {
        if !cause.as_deref().unwrap_or("").contains(part) {
            failures.push(format!(
                "cause: expected it to contain {:?}, got {:?}",
                part,
                cause.as_deref().unwrap_or("")
            ));
        }
    }
    if let Some(want) = expect.get("states") {
        let entered: Vec<Value> = events
            .iter()
            .filter(|e| e.event_type.as_str().ends_with("StateEntered"))
            .filter_map(|e| {
                let d: Value = serde_json::from_str(e.details.as_deref()?).ok()?;
                d.get("name").cloned()
            })
            .collect();
        let got = Value::Array(entered);
        if *want != got {
            failures.push(format!(
                "states entered: expected {want}\n      got      {got}"
            ));
        }
    }
    failures
}

/// A readable diff: one line per path that differs. With `subset`, keys and array items the
/// expectation leaves out are not compared (an expected array is a prefix-free subset: every
/// expected item must equal the item at the same index).
pub fn json_diff(want: &Value, got: &Value, path: &str, subset: bool, out: &mut Vec<String>) {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            for (k, wv) in w {
                let p = format!("{path}.{k}");
                match g.get(k) {
                    Some(gv) => json_diff(wv, gv, &p, subset, out),
                    None => out.push(format!("{p}: missing (expected {wv})")),
                }
            }
            if !subset {
                for (k, gv) in g {
                    if !w.contains_key(k) {
                        out.push(format!("{path}.{k}: unexpected {gv}"));
                    }
                }
            }
        }
        (Value::Array(w), Value::Array(g)) => {
            if w.len() != g.len() && !(subset && w.len() < g.len()) {
                out.push(format!(
                    "{path}: expected {} items, got {}",
                    w.len(),
                    g.len()
                ));
            }
            for (i, (wv, gv)) in w.iter().zip(g).enumerate() {
                json_diff(wv, gv, &format!("{path}[{i}]"), subset, out);
            }
        }
        (Value::Number(a), Value::Number(b)) if a.as_f64() == b.as_f64() => {}
        (w, g) if w == g => {}
        (w, g) => out.push(format!("{path}: expected {w}, got {g}")),
    }
}

fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t' | '\r') => {}
            c => out.push(c),
        }
    }
    out
}

fn junit(results: &[CaseResult]) -> String {
    let mut suites: Vec<&str> = results.iter().map(|r| r.suite.as_str()).collect();
    suites.dedup();
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let failed = results.iter().filter(|r| !r.failures.is_empty()).count();
    xml.push_str(&format!(
        "<testsuites name=\"sfn-local test\" tests=\"{}\" failures=\"{failed}\">\n",
        results.len()
    ));
    for suite in suites {
        let cases: Vec<&CaseResult> = results.iter().filter(|r| r.suite == suite).collect();
        let failed = cases.iter().filter(|r| !r.failures.is_empty()).count();
        let time: f64 = cases.iter().map(|r| r.seconds).sum();
        xml.push_str(&format!(
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failed}\" errors=\"0\" time=\"{time:.3}\">\n",
            xml_escape(suite),
            cases.len()
        ));
        for c in cases {
            xml.push_str(&format!(
                "    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3}\"",
                xml_escape(suite),
                xml_escape(&c.name),
                c.seconds
            ));
            if c.failures.is_empty() {
                xml.push_str("/>\n");
            } else {
                let first = c.failures[0].lines().next().unwrap_or_default();
                xml.push_str(&format!(
                    ">\n      <failure message=\"{}\">{}</failure>\n    </testcase>\n",
                    xml_escape(first),
                    xml_escape(&c.failures.join("\n"))
                ));
            }
        }
        xml.push_str("  </testsuite>\n");
    }
    xml.push_str("</testsuites>\n");
    xml
}

/// Runs `test`.
pub fn run(args: TestArgs) -> ExitCode {
    let jobs = match jobs(&args) {
        Ok(j) => j,
        Err(code) => return code,
    };
    let workers = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(4, |n| n.get()))
        .clamp(1, jobs.len().max(1));
    let limit = Duration::from_secs(args.case_timeout.max(1));
    let settings = RunSettings {
        limit,
        coverage: args.coverage,
        update_snapshots: args.update_snapshots,
        seed: args.clock.seed,
    };
    let results = run_jobs(&jobs, workers, &settings);
    // A JSON or LCOV coverage report on stdout is the whole of stdout, for tools to read.
    let coverage_on_stdout = args.coverage
        && args.coverage_output.is_none()
        && args.coverage_format != crate::cli::coverage::CoverageFormat::Text;
    let failed = match report(&results, args.junit.as_deref(), coverage_on_stdout) {
        Ok(failed) => failed,
        Err(code) => return code,
    };
    let covered = if args.coverage {
        report_coverage(&args, &results)
    } else {
        ExitCode::SUCCESS
    };
    if failed > 0 {
        ExitCode::from(1)
    } else {
        covered
    }
}

/// The clock flags as `test` reads them: a scale over every spec's (0: a virtual clock per
/// case), and where virtual clocks start.
fn case_clock(
    args: &crate::cli::flags::ClockArgs,
) -> Result<(Option<f64>, Option<crate::clock::Millis>), crate::cli::flags::FlagError> {
    // Lowered once for its checks and --seed; each case then gets a clock of its own.
    let time = args.lower(crate::cli::flags::ClockKind::Virtual, false)?;
    let start = args
        .clock_start
        .as_deref()
        .map(crate::cli::flags::clock::parse_start)
        .transpose()?;
    let scale = match (&time, args.clock, args.time_scale) {
        (Timekeeping::Virtual(_), Some(_), _) | (Timekeeping::Virtual(_), _, Some(_)) => Some(0.0),
        (Timekeeping::Real { scale }, _, _) => Some(*scale),
        _ => None,
    };
    Ok((scale, start))
}

/// Lowers `test`'s flags and reads every spec into its jobs (a broken spec is a failing job).
fn jobs(args: &TestArgs) -> Result<Vec<Job>, ExitCode> {
    let (scale, clock_start) = case_clock(&args.clock).map_err(|e| e.exit())?;
    let specs = match find_specs(&args.specs) {
        Ok(s) if !s.is_empty() => s,
        Ok(_) => {
            errln!("error: no *{SPEC_SUFFIX} test specs found");
            return Err(ExitCode::from(EXIT_USAGE));
        }
        Err(e) => {
            errln!("error: {e}");
            return Err(ExitCode::from(EXIT_USAGE));
        }
    };
    let subs = args
        .substitutions
        .substitutions()
        .map_err(|e| crate::cli::flags::FlagError::Usage(e).exit())?;
    let mut jobs: Vec<Job> = specs
        .iter()
        .flat_map(|s| load_spec(s, scale, &subs))
        .collect();
    for job in &mut jobs {
        if let Ok(p) = &mut job.prepared {
            p.clock_start = clock_start;
        }
    }
    let machines = match args.machines.load(None) {
        Ok(m) => m,
        Err(e) => {
            errln!("error: {e}");
            return Err(ExitCode::from(EXIT_USAGE));
        }
    };
    for job in &mut jobs {
        if let Ok(p) = &mut job.prepared {
            p.s3_dir = args.s3.lower();
            p.machines = machines.clone();
        }
    }
    Ok(jobs)
}

/// Runs the jobs on `workers` threads, each case at most `limit`; results in the jobs' order,
/// with each execution's history when `coverage` asks for it.
/// How every case of the run is run.
struct RunSettings {
    /// `--case-timeout`.
    limit: Duration,
    /// `--coverage`: keep each case's history.
    coverage: bool,
    /// `--update-snapshots`.
    update_snapshots: bool,
    /// `--seed`: a snapshot case's draws (default [`crate::cli::history_snapshot::SNAPSHOT_SEED`]).
    seed: Option<u64>,
}

fn run_jobs(jobs: &[Job], workers: usize, settings: &RunSettings) -> Vec<CaseResult> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<CaseResult>>> =
        Mutex::new((0..jobs.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(job) = jobs.get(i) else { break };
                let result = run_job(job, settings);
                let mut all = match results.lock() {
                    Ok(r) => r,
                    Err(poisoned) => poisoned.into_inner(),
                };
                if let Some(slot) = all.get_mut(i) {
                    *slot = Some(result);
                }
            });
        }
    });
    match results.into_inner() {
        Ok(r) => r,
        Err(poisoned) => poisoned.into_inner(),
    }
    .into_iter()
    .flatten()
    .collect()
}

/// Runs one job and checks it against its expectations (and its history snapshot); with
/// `--coverage`, keeps the execution's history.
fn run_job(job: &Job, settings: &RunSettings) -> CaseResult {
    let started = Instant::now();
    let mut history = None;
    let failures = match &job.prepared {
        Err(e) => vec![e.clone()],
        Ok(Prepared {
            test_state: Some(request),
            expect,
            ..
        }) => check_state(
            expect,
            test_state_blocking(
                request,
                Rc::new(LocalTasks::default()),
                Arc::new(SystemClock::new(0.0)),
            ),
        ),
        Ok(p) => match run_case(p, job.number, settings) {
            Ok((outcome, events)) => {
                let mut failures = check(&p.expect, &outcome, &events);
                if let Some(path) = &p.snapshot {
                    failures.extend(crate::cli::history_snapshot::check(
                        path,
                        &events,
                        settings.update_snapshots,
                    ));
                }
                if settings.coverage {
                    // A virtual clock's seconds are whole.
                    let scale = if p.time_scale == 0.0 {
                        1.0
                    } else {
                        p.time_scale
                    };
                    history = Some((p.definition.clone(), scale, events));
                }
                failures
            }
            Err(e) => vec![e],
        },
    };
    CaseResult {
        suite: job.suite.clone(),
        name: job.name.clone(),
        seconds: started.elapsed().as_secs_f64(),
        failures,
        history,
    }
}

/// Prints the failures (and with -v the passes) and writes the JUnit file; returns how many
/// cases failed. All of it goes to stderr when `stdout_taken` (a coverage report's there).
fn report(
    results: &[CaseResult],
    junit_file: Option<&Path>,
    stdout_taken: bool,
) -> Result<usize, ExitCode> {
    let say = |line: String| match stdout_taken {
        true => errln!("{line}"),
        false => outln!("{line}"),
    };
    let failed = results.iter().filter(|r| !r.failures.is_empty()).count();
    let passed = results.len() - failed;
    if crate::cli::ui::verbose() {
        for r in results.iter().filter(|r| r.failures.is_empty()) {
            say(format!(
                "ok   {} › {} ({:.2} s)",
                r.suite, r.name, r.seconds
            ));
        }
    }
    for r in results.iter().filter(|r| !r.failures.is_empty()) {
        say(format!(
            "FAIL {} › {}: {}",
            r.suite,
            r.name,
            r.failures.join("\n    ")
        ));
    }
    if let Some(path) = junit_file {
        if let Err(e) = std::fs::write(path, junit(results)) {
            errln!("error: cannot write {}: {e}", path.display());
            return Err(ExitCode::from(EXIT_USAGE));
        }
    }
    say(format!("{passed} passed, {failed} failed"));
    Ok(failed)
}

/// `--coverage`: what the cases' executions took in each definition the specs name.
fn report_coverage(args: &TestArgs, results: &[CaseResult]) -> ExitCode {
    // By file and logical ID: a template's machines are measured apart.
    type Histories<'r> = Vec<(f64, &'r [HistoryEvent])>;
    let mut by_machine: std::collections::BTreeMap<MachineSource, Histories<'_>> =
        Default::default();
    for ((file, id), scale, events) in results.iter().filter_map(|r| r.history.as_ref()) {
        // Named as the report names it (see `coverage::tidy`).
        let file = PathBuf::from(crate::cli::coverage::tidy(&file.to_string_lossy()));
        by_machine
            .entry((file, id.clone()))
            .or_default()
            .push((*scale, events.as_slice()));
    }
    let mut files: Vec<PathBuf> = by_machine.keys().map(|(f, _)| f.clone()).collect();
    files.dedup();
    let mut measured = Vec::new();
    for file in &files {
        // Each file's targets apart, so a template's machine is found under the template even
        // when its definition is a file of its own (DefinitionUri).
        let targets =
            match crate::cli::coverage::targets(std::slice::from_ref(file), &Default::default()) {
                Ok(t) => t,
                Err(e) => {
                    errln!("error: coverage: {e}");
                    return ExitCode::from(EXIT_USAGE);
                }
            };
        let only = targets.len() == 1;
        for target in targets {
            let id = target.logical_id.clone();
            let mut m = crate::coverage::MachineCoverage::from_target(target);
            let histories = by_machine
                .iter()
                .filter(|((f, spec_id), _)| f == file && (spec_id == &id || (only && id.is_none())))
                .flat_map(|(_, h)| h);
            for (scale, events) in histories {
                m.add(events.iter().map(Into::into), &mut || *scale);
            }
            measured.push(m);
        }
    }
    crate::cli::coverage::write_report(
        &measured,
        &crate::cli::coverage::ReportOptions {
            format: args.coverage_format,
            output: args.coverage_output.clone(),
            fail_under: args.coverage_fail_under,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn diffs_name_the_paths_that_differ() {
        let mut d = Vec::new();
        json_diff(
            &json!({"a": 1, "b": [1, 2], "c": "x"}),
            &json!({"a": 2, "b": [1], "d": true, "c": "x"}),
            "$",
            false,
            &mut d,
        );
        assert!(d.contains(&"$.a: expected 1, got 2".to_owned()), "{d:?}");
        assert!(
            d.iter().any(|l| l.starts_with("$.b: expected 2 items")),
            "{d:?}"
        );
        assert!(d.contains(&"$.d: unexpected true".to_owned()), "{d:?}");
        let mut d = Vec::new();
        json_diff(
            &json!({"a": {"b": 1}}),
            &json!({"a": {"b": 1, "c": 2}, "z": 0}),
            "$",
            true,
            &mut d,
        );
        assert!(d.is_empty(), "{d:?}");
        let mut d = Vec::new();
        json_diff(
            &json!({"a": {"q": 1}}),
            &json!({"a": {}}),
            "$",
            true,
            &mut d,
        );
        assert_eq!(d, ["$.a.q: missing (expected 1)"]);
    }

    #[test]
    fn junit_escapes_everything() {
        let xml = junit(&[CaseResult {
            suite: "s<1>".into(),
            name: "a & b".into(),
            seconds: 0.5,
            failures: vec!["status: \"x\"".into()],
            history: None,
        }]);
        assert!(xml.contains("s&lt;1&gt;") && xml.contains("a &amp; b"));
        assert!(xml.contains("failures=\"1\""));
    }
}
