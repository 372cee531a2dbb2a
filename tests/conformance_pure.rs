//! The engine against AWS's own recordings: every case in `tests/corpora/conformance/cases/pure`
//! runs through the engine with the case's context hints, and the run is compared with what AWS
//! recorded. Two suites, each with its own known-failures list and report: the JSONPath cases
//! (features name neither `jsonata` nor `variables`) and the JSONata-and-variables cases.
//! Compared:
//!
//! - the status (SUCCEEDED / FAILED / ABORTED; `INCOMPLETE` recordings are compared as a prefix);
//! - the output when it succeeded, or the error and cause when it failed;
//! - for `execution_history` cases, the sequence of event types, and every event's
//!   `previousEventId` (AWS's links; a difference is a failure, see
//!   `common::conformance::chain_differences`). Cases flagged
//!   `parallel_branch_events_reordered` (LocalStack sorted the events inside Parallel branches
//!   and zeroed their ids before recording, losing some on the way: the remaining ids have
//!   gaps) are compared as multisets: every recorded event type must appear in ours, and we
//!   must write as many events as the recording's last id. The order inside the branches is
//!   lost, so it is not compared; the events that kept their ids (before and after the
//!   branches, e.g. `ParallelStateExited` linking back into them) are, links included.
//!
//! Our values are normalised as `CORPUS_README.md` says the recordings were: JSON-object strings
//! become objects, `arn:aws:` becomes `arn:<partition>:`, ISO dates and datetimes become `date`,
//! the case's `jsonpath` transformers are applied, and every `<name>` / `<name:N>` placeholder in
//! the expected data is a wildcard bound consistently within the case.
//!
//! Time is virtual: Waits and retry intervals advance a simulated clock when nothing else can
//! run, so the whole corpus runs in a few seconds and concurrent timers still fire in order.
//! Each case runs as `engine::run_in_memory` does (an `Engine` writing to a `MemorySink`),
//! built here so that the events of an execution still waiting at the virtual horizon
//! (`INCOMPLETE` recordings) can be read.
//!
//! The report (counts per feature tag, the pass rate) goes to
//! stderr (`cargo test --test conformance_pure -- --nocapture`) and to
//! `target/conformance/pure_jsonpath.txt`.
//!
//! Cases that fail are listed, with the reason, in `tests/known_failures/pure_jsonpath.txt` (and
//! `pure_jsonata_variables.txt`)
//! (`id<TAB>reason`). The test fails when an unlisted case fails (with a diff) and when a listed
//! case passes (so the list only shrinks). `SFN_CONFORMANCE_PRINT_FAILURES=1` prints the current
//! failures in the file's format; `SFN_CONFORMANCE_DETAILS=1` also compares the details of every
//! event (informational: the case's transformers are not applied to events, so masked values
//! show up there).

mod common;

use common::conformance::{check_suite, is_iso_date, match_str, Bindings, Suite};
use serde_json::Value;
use sfn_local::tasks::{LocalTasks, TaskRunner};
use std::rc::Rc;

fn no_tasks(_: &Value) -> Result<Rc<dyn TaskRunner>, String> {
    Ok(Rc::new(LocalTasks::default()))
}

const JSONPATH: Suite = Suite {
    title: "JSONPath",
    name: "pure_jsonpath",
    select: is_jsonpath_case,
    bucket: "pure",
    tasks: no_tasks,
};

const JSONATA_VARIABLES: Suite = Suite {
    title: "JSONata and variables",
    name: "pure_jsonata_variables",
    select: is_jsonata_or_variables_case,
    bucket: "pure",
    tasks: no_tasks,
};

fn is_jsonpath_case(case: &Value) -> bool {
    let features = case["features"].as_array().cloned().unwrap_or_default();
    !features.iter().any(|f| f == "jsonata" || f == "variables")
}

fn is_jsonata_or_variables_case(case: &Value) -> bool {
    !is_jsonpath_case(case)
}

#[test]
fn pure_jsonpath_cases_match_aws() {
    check_suite(&JSONPATH);
}

/// The cases tagged `jsonata` or `variables`, with `tests/known_failures/pure_jsonata_variables.txt`.
#[test]
fn pure_jsonata_and_variables_cases_match_aws() {
    check_suite(&JSONATA_VARIABLES);
}

#[test]
fn placeholders_bind_consistently() {
    let mut b = Bindings::new();
    assert!(match_str("arn:x:<A>:<B:1>", "arn:x:m:e", &mut b));
    assert!(match_str("<A>-<B:1>", "m-e", &mut b));
    assert!(!match_str("<A>", "other", &mut b));
    let mut b = Bindings::new();
    assert!(match_str(
        "cause '<json-input:1>' end",
        "cause '{\"a\":1}' end",
        &mut b
    ));
    assert!(match_str("a < b", "a < b", &mut b));
    assert!(is_iso_date("2024-01-01T10:00:00.123Z"));
    assert!(!is_iso_date("2024-01-01 10:00"));
}
