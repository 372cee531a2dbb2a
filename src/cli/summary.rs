//! Readable views of an execution for people: the summary `describe-execution --format text`
//! prints, the history table of `get-execution-history --format table`, and the "failed at
//! state X" line `run` adds to a failure. The analysis is the engine's
//! ([`crate::engine::diagnosis`]); this module only lays it out.

use crate::clock::iso8601;
use crate::engine::diagnosis::{details, root_failure};
use crate::store::{EventRecord, ExecutionRecord};
use serde_json::Value;

/// `failed at state 'Charge': CardDeclined: no funds (caught; went on to 'PaymentFailed')`.
pub fn failure_line(events: &[EventRecord]) -> Option<String> {
    let f = root_failure(events)?;
    let mut line = format!("failed at state '{}'", f.state);
    match (&f.error, &f.cause) {
        (Some(e), Some(c)) => line.push_str(&format!(": {e}: {c}")),
        (Some(e), None) => line.push_str(&format!(": {e}")),
        _ => line.push_str(" (a Fail state)"),
    }
    if let Some(to) = &f.caught_to {
        line.push_str(&format!(" (caught; went on to '{to}')"));
    }
    Some(line)
}

fn shorten(text: &str, max: usize) -> String {
    let one_line = text.replace('\n', " ");
    if one_line.chars().count() <= max {
        one_line
    } else {
        let cut: String = one_line.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

/// The summary of one execution: status, times, the root failure, the states it went through,
/// and its output or error.
pub fn describe_text(record: &ExecutionRecord, events: &[EventRecord]) -> String {
    let mut out = String::new();
    let mut line = |s: String| {
        out.push_str(&s);
        out.push('\n');
    };
    line(format!(
        "execution  {} ({})",
        record.name,
        record.status.as_str()
    ));
    line(format!("arn        {}", record.execution_arn));
    line(format!("machine    {}", record.state_machine_arn));
    line(format!("started    {}", iso8601(record.start_date_ms)));
    if let Some(stop) = record.stop_date_ms {
        line(format!(
            "stopped    {} ({:.3} s)",
            iso8601(stop),
            (stop - record.start_date_ms) as f64 / 1000.0
        ));
    }
    line(format!("input      {}", shorten(&record.input, 200)));
    if let Some(output) = &record.output {
        line(format!("output     {}", shorten(output, 200)));
    }
    if record.error.is_some() || record.cause.is_some() {
        line(format!(
            "error      {}",
            record.error.as_deref().unwrap_or("(none)")
        ));
        line(format!(
            "cause      {}",
            shorten(record.cause.as_deref().unwrap_or("(none)"), 500)
        ));
    }
    if let Some(why) = failure_line(events) {
        line(format!("why        {why}"));
    }
    let states: Vec<String> = events
        .iter()
        .filter(|e| e.event_type.ends_with("StateEntered"))
        .filter_map(|e| details(e)["name"].as_str().map(str::to_owned))
        .collect();
    if !states.is_empty() {
        line(format!("states     {}", shorten(&states.join(" → "), 400)));
    }
    line(format!("events     {}", events.len()));
    out
}

/// The history as a table: one line per event with its id, time, state, type, and its error or
/// a short input/output.
pub fn history_table(events: &[EventRecord]) -> String {
    let mut rows = vec![[
        "ID".to_owned(),
        "TIME".to_owned(),
        "STATE".to_owned(),
        "TYPE".to_owned(),
        "DETAIL".to_owned(),
    ]];
    let mut state = String::new();
    for e in events {
        let d = details(e);
        if let Some(name) = d["name"].as_str() {
            state = name.to_owned();
        }
        let detail = match (d.get("error"), d.get("cause")) {
            (Some(err), cause) => {
                let cause = cause.and_then(Value::as_str).unwrap_or("");
                format!("{}: {}", err.as_str().unwrap_or(""), shorten(cause, 80))
            }
            _ => ["output", "input"]
                .iter()
                .find_map(|k| d.get(*k))
                .map(|v| shorten(v.as_str().unwrap_or(&v.to_string()), 60))
                .unwrap_or_default(),
        };
        let time = iso8601(e.timestamp_ms);
        let time = time.split('T').nth(1).unwrap_or(&time).to_owned();
        let row_state = if e.event_type.starts_with("Execution") {
            String::new()
        } else {
            state.clone()
        };
        rows.push([
            e.id.to_string(),
            time,
            row_state,
            e.event_type.clone(),
            detail,
        ]);
        if e.event_type.ends_with("StateExited") {
            state.clear();
        }
    }
    let widths: Vec<usize> = (0..4)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in &rows {
        for (c, w) in widths.iter().enumerate() {
            out.push_str(&format!("{:<w$}  ", r[c], w = w));
        }
        out.push_str(&r[4]);
        out.push('\n');
    }
    out
}
