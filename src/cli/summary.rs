//! Readable views of an execution for people: the summary `describe-execution --format text`
//! prints, the history table of `get-execution-history --format table`, and the "failed at
//! state X" line `run` adds to a failure. The analysis is the engine's
//! ([`crate::engine::diagnosis`]); this module only lays it out.

use crate::clock::iso8601;
use crate::engine::diagnosis::{
    details, recorded_time_scale, root_failure, RootFailure, TimeoutClock,
};
use crate::engine::visits::Tree;
use crate::store::{EventRecord, ExecutionRecord, Store};
use serde_json::Value;

/// The failure line of a stored execution (see [`failure_line`]).
pub fn stored_failure_line(store: &Store, execution_arn: &str) -> Option<String> {
    let events = store.history(execution_arn, false).ok()?;
    failure_line(&events, recorded_time_scale(store, execution_arn))
}

/// `failed at state 'Charge': CardDeclined: no funds (caught; went on to 'PaymentFailed')`;
/// a timeout names its clock: `States.Timeout: HeartbeatSeconds of 'Work' ran out after 5 s`.
pub fn failure_line(events: &[EventRecord], time_scale: f64) -> Option<String> {
    root_failure(events, time_scale).map(|f| line_of(&f))
}

/// The failure line of a root failure (see [`failure_line`]).
fn line_of(f: &RootFailure) -> String {
    let mut line = format!("failed at state '{}'", f.state);
    let clock = f.clock.map(|clock| match clock {
        TimeoutClock::Heartbeat(s) => {
            format!("HeartbeatSeconds of '{}' ran out after {s} s", f.state)
        }
        TimeoutClock::Timeout(s) => format!("TimeoutSeconds of '{}' ran out after {s} s", f.state),
    });
    match (&f.error, &f.cause, clock) {
        (Some(e), _, Some(clock)) => line.push_str(&format!(": {e}: {clock}")),
        (Some(e), Some(c), None) if !c.is_empty() => {
            line.push_str(&format!(": {}", one_line_cause(e, c)))
        }
        (Some(e), _, None) => line.push_str(&format!(": {e}")),
        _ => line.push_str(" (a Fail state)"),
    }
    if let Some(to) = &f.caught_to {
        line.push_str(&format!(" (caught; went on to '{to}')"));
    }
    line
}

/// The Lambda handler's error in a failure's `cause`, when the cause is Lambda's error payload:
/// `errorType: errorMessage`, then each line of Python's `stackTrace` or Node.js's `trace`
/// (file and line of each frame). Empty for any other cause.
pub fn handler_error(cause: &str) -> Vec<String> {
    let Ok(Value::Object(payload)) = serde_json::from_str::<Value>(cause) else {
        return Vec::new();
    };
    let Some(error_type) = payload.get("errorType").and_then(Value::as_str) else {
        return Vec::new();
    };
    let message = payload.get("errorMessage").and_then(Value::as_str);
    let mut lines = vec![format!("{error_type}: {}", message.unwrap_or_default())];
    let frames = payload.get("stackTrace").or_else(|| payload.get("trace"));
    for frame in frames.and_then(Value::as_array).into_iter().flatten() {
        let frame = frame
            .as_str()
            .map_or_else(|| frame.to_string(), str::to_owned);
        lines.extend(frame.trim_end_matches('\n').lines().map(str::to_owned));
    }
    lines
}

/// A Lambda error's cause is its whole payload (`errorType`, `errorMessage`, `stackTrace`):
/// the one line says `errorType: errorMessage` (the error alone when it is the type), and
/// [`handler_error`] the rest, below it. Any other cause is kept, on one line.
fn one_line_cause(error: &str, cause: &str) -> String {
    let Some((kind, message)) = lambda_error(cause) else {
        return format!("{error}: {}", shorten(cause, 300));
    };
    match kind == error {
        true => format!("{error}: {}", shorten(&message, 300)),
        false => format!("{error}: {kind}: {}", shorten(&message, 300)),
    }
}

/// `errorType` and `errorMessage` of a Lambda error payload.
fn lambda_error(cause: &str) -> Option<(String, String)> {
    let payload: Value = serde_json::from_str(cause).ok()?;
    let kind = payload.get("errorType")?.as_str()?.to_owned();
    let message = payload
        .get("errorMessage")
        .and_then(Value::as_str)
        .unwrap_or_default();
    Some((kind, message.to_owned()))
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
pub fn describe_text(record: &ExecutionRecord, events: &[EventRecord], time_scale: f64) -> String {
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
    if let Some(failure) = root_failure(events, time_scale) {
        line(format!("why        {}", line_of(&failure)));
        // Lambda code's own error under it, frame by frame: what a test report needs.
        let handler = failure
            .cause
            .as_deref()
            .map(handler_error)
            .unwrap_or_default();
        for (i, said) in handler.iter().enumerate() {
            let label = if i == 0 { "handler" } else { "" };
            line(format!("{label:<11}{said}"));
        }
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

/// The history as a table: one line per event with its id, time, the state it belongs to (read
/// from the events' links, so interleaved branches and iterations are each named right), type,
/// and its error, what it runs, or a short input/output.
pub fn history_table(events: &[EventRecord]) -> String {
    let tree = Tree::from_records(events);
    let mut rows = vec![[
        "ID".to_owned(),
        "TIME".to_owned(),
        "STATE".to_owned(),
        "TYPE".to_owned(),
        "DETAIL".to_owned(),
    ]];
    for (i, e) in events.iter().enumerate() {
        let time = iso8601(e.timestamp_ms);
        let time = time.split('T').nth(1).unwrap_or(&time).to_owned();
        let state = tree.owner(i).map(|v| v.state.clone()).unwrap_or_default();
        rows.push([
            e.id.to_string(),
            time,
            state,
            e.event_type.clone(),
            event_detail(e),
        ]);
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

/// An event's DETAIL cell: its error and cause, what a scheduled task runs
/// (`lambda:invoke arn:...`, with its timeouts), or its output or input, shortened.
pub fn event_detail(e: &EventRecord) -> String {
    let d = details(e);
    if let Some(err) = d.get("error") {
        let cause = d.get("cause").and_then(Value::as_str).unwrap_or("");
        return format!("{}: {}", err.as_str().unwrap_or(""), shorten(cause, 80));
    }
    if let (Some(kind), Some(resource)) = (d["resourceType"].as_str(), d["resource"].as_str()) {
        let mut text = format!("{kind}:{resource}");
        for (key, what) in [
            ("timeoutInSeconds", "timeout"),
            ("heartbeatInSeconds", "heartbeat"),
        ] {
            if let Some(s) = d[key].as_i64() {
                text.push_str(&format!(", {what} {s} s"));
            }
        }
        return text;
    }
    ["output", "input"]
        .iter()
        .find_map(|k| d.get(*k))
        .map(|v| shorten(v.as_str().unwrap_or(&v.to_string()), 60))
        .unwrap_or_default()
}
