//! `replay` against AWS's own recordings: every `execution_history` case of
//! `tests/corpora/conformance/cases/pure` and `aws_task` is turned back into what `aws
//! stepfunctions get-execution-history --output json` prints (its `events` with their
//! `*EventDetails`, payloads as JSON text again, `arn:<partition>:` as `arn:aws:`, a
//! timestamp each) and replayed against its own definition, which must say `identical`.
//!
//! What the recording's normalisation (`CORPUS_README.md`) lost cannot be undone: dates
//! masked as `date`, UUIDs as `<uuid:N>`, names as `<ArnPart_0idx>`; the execution's name is
//! in no history. Cases that differ for such reasons are listed with the reason in
//! `tests/known_failures/replay.txt` (`id<TAB>reason`); the test fails when an unlisted case
//! diverges (printing the divergence) and when a listed one replays identical, so the list
//! only shrinks. `SFN_REPLAY_PRINT_FAILURES=1` prints the current failures in the file's format.

mod common;

use common::conformance::{compile_case, known_failures};
use common::{conformance_cases, json_files, read_json};
use serde_json::{json, Map, Value};
use sfn_local::replayer::compare::{first_divergence, in_order, ByPlace, Side};
use sfn_local::replayer::history::{parse_history, RecordedEvent};
use sfn_local::replayer::places::Places;
use sfn_local::replayer::{replay, Verdict};
use std::collections::BTreeMap;
use std::sync::Arc;

const KNOWN: &str = "tests/known_failures/replay.txt";

/// The case's events as the AWS CLI prints them, or why it has none to replay.
fn aws_history(case: &Value) -> Result<Value, String> {
    if case["kind"] != "execution_history" {
        return Err(format!("kind {}: no history recorded", case["kind"]));
    }
    if case["parallel_branch_events_reordered"] == true {
        return Err("the recording zeroed ids inside Parallel branches".into());
    }
    let hints = &case["context_hints"];
    let machine_arn = format!(
        "arn:aws:states:<region>:111111111111:stateMachine:{}",
        hints["state_machine_name"]
            .as_str()
            .unwrap_or("<ArnPart_0idx>")
    );
    let mut events = Vec::new();
    for (i, e) in case["events"].as_array().into_iter().flatten().enumerate() {
        let mut out = Map::new();
        out.insert("timestamp".into(), json!(1_700_000_000 + i as i64));
        out.insert("type".into(), e["type"].clone());
        out.insert("id".into(), e["id"].clone());
        out.insert("previousEventId".into(), e["previousEventId"].clone());
        if let Some(key) = e["detailsKey"].as_str() {
            let mut details = as_recorded(e["details"].clone());
            if e["type"] == "ExecutionStarted" {
                details["stateMachineArn"] = json!(machine_arn);
            }
            out.insert(key.into(), details);
        }
        events.push(Value::Object(out));
    }
    Ok(json!({ "events": events }))
}

/// Details as AWS wrote them: payloads and causes the corpus parsed are JSON text again.
fn as_recorded(details: Value) -> Value {
    let Value::Object(m) = details else {
        return details;
    };
    let fields = ["input", "output", "parameters", "cause", "error"];
    Value::Object(
        m.into_iter()
            .map(|(k, v)| {
                let v = match v {
                    Value::Object(_) | Value::Array(_) if fields.contains(&k.as_str()) => {
                        json!(v.to_string())
                    }
                    other => other,
                };
                (k, v)
            })
            .collect(),
    )
}

/// Replays one case: `Ok` when identical, else what differed.
fn replay_case(case: &Value) -> Result<(), String> {
    let history = aws_history(case)?;
    let text = history.to_string().replace("arn:<partition>:", "arn:aws:");
    let recorded = parse_history(&text).map_err(|e| e.to_string())?;
    let (machine, _) = compile_case(case)?;
    let result = replay(&recorded, Arc::new(machine)).map_err(|e| e.to_string())?;
    assert_comparisons_agree(&recorded, &result.rerun, &case["id"]);
    match result.verdict {
        Verdict::Identical => Ok(()),
        Verdict::Masked(why) => Err(format!("masked: {why}")),
        Verdict::Diverged(d) => Err(format!(
            "event {} ({}): {}; recorded {}; replayed {}",
            d.event,
            d.state.unwrap_or_default(),
            d.what,
            d.recorded,
            d.replayed
        )),
    }
}

/// The comparison in order finds a re-run identical only where the comparison by place finds
/// no divergence, having skipped the same masked parts: the replay compares by place only
/// when the comparison in order fails.
fn assert_comparisons_agree(recorded: &[RecordedEvent], rerun: &[RecordedEvent], id: &Value) {
    let Some(masked) = in_order(recorded, rerun) else {
        return;
    };
    let (recorded_places, rerun_places) = (Places::of(recorded), Places::of(rerun));
    let recorded = Side {
        events: recorded,
        places: &recorded_places,
    };
    let rerun = Side {
        events: rerun,
        places: &rerun_places,
    };
    let mut by_place_masked = Vec::new();
    let found = first_divergence(
        &recorded,
        &rerun,
        &ByPlace::of(&rerun),
        &mut by_place_masked,
    );
    assert_eq!((found, by_place_masked), (None, masked), "case {id}");
}

#[test]
fn aws_recorded_histories_replay_identical_against_their_own_definition() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let known = known_failures(root, KNOWN);
    let (mut identical, mut failing) = (0, BTreeMap::new());
    for bucket in ["pure", "aws_task"] {
        for path in json_files(&conformance_cases().join(bucket)) {
            let case = read_json(&path);
            let id = case["id"].as_str().unwrap_or_default().to_owned();
            match replay_case(&case) {
                Ok(()) => identical += 1,
                Err(why) => {
                    failing.insert(id, why);
                }
            }
        }
    }
    eprintln!(
        "replay: {identical} identical, {} listed or failing",
        failing.len()
    );
    if std::env::var_os("SFN_REPLAY_PRINT_FAILURES").is_some() {
        for (id, why) in &failing {
            let why: String = why.chars().take(300).collect();
            println!("{id}\t{}", why.replace(['\n', '\t'], " "));
        }
    }
    let unlisted: Vec<_> = failing
        .iter()
        .filter(|(id, _)| !known.contains_key(*id))
        .collect();
    let fixed: Vec<_> = known
        .keys()
        .filter(|id| !failing.contains_key(*id))
        .collect();
    assert!(
        unlisted.is_empty() && fixed.is_empty(),
        "unlisted divergences:\n{unlisted:#?}\nlisted in {KNOWN} but identical now (remove them):\n{fixed:#?}"
    );
}
