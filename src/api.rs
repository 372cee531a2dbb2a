//! AWS API response shapes (DescribeExecution, GetExecutionHistory, ListExecutions, the Map
//! run operations) built from stored records, so every command prints what the AWS CLI would.

pub mod clock;
pub mod validation;

use crate::clock::iso8601;
use crate::store::{EventRecord, ExecutionRecord, MapRunCounts, MapRunExecution, MapRunRecord};
use serde_json::{json, Map, Value};

/// TestState's request and response shapes (the engine's TestState owns them; both faces use
/// them from here).
pub use crate::engine::test_state::{
    InspectionData, InspectionErrorDetails, TestStateError, TestStateRequest, TestStateResponse,
};

/// DescribeExecution's response for a stored execution.
pub fn describe_execution(e: &ExecutionRecord) -> Value {
    let mut m = Map::new();
    m.insert("executionArn".into(), e.execution_arn.clone().into());
    m.insert("stateMachineArn".into(), e.state_machine_arn.clone().into());
    m.insert("name".into(), e.name.clone().into());
    m.insert("status".into(), e.status.as_str().into());
    m.insert("startDate".into(), iso8601(e.start_date_ms).into());
    if let Some(stop) = e.stop_date_ms {
        m.insert("stopDate".into(), iso8601(stop).into());
    }
    m.insert("input".into(), e.input.clone().into());
    m.insert("inputDetails".into(), json!({"included": true}));
    if let Some(output) = &e.output {
        m.insert("output".into(), output.clone().into());
        m.insert("outputDetails".into(), json!({"included": true}));
    }
    if let Some(error) = &e.error {
        m.insert("error".into(), error.clone().into());
    }
    if let Some(cause) = &e.cause {
        m.insert("cause".into(), cause.clone().into());
    }
    m.insert("redriveCount".into(), e.redrive_count.into());
    if let Some(date) = e.redrive_date_ms {
        m.insert("redriveDate".into(), iso8601(date).into());
    }
    started_through(e, &mut m);
    match redrive_status(e) {
        Ok(()) => {
            m.insert("redriveStatus".into(), "REDRIVABLE".into());
        }
        Err(why) => {
            m.insert("redriveStatus".into(), "NOT_REDRIVABLE".into());
            m.insert("redriveStatusReason".into(), why.to_string().into());
        }
    }
    Value::Object(m)
}

/// `stateMachineVersionArn` and `stateMachineAliasArn` of an execution started through a
/// version or an alias (DescribeExecution and ListExecutions both show them).
fn started_through(e: &ExecutionRecord, m: &mut Map<String, Value>) {
    if let Some(version) = &e.state_machine_version_arn {
        m.insert("stateMachineVersionArn".into(), version.clone().into());
    }
    if let Some(alias) = &e.state_machine_alias_arn {
        m.insert("stateMachineAliasArn".into(), alias.clone().into());
    }
}

/// Whether RedriveExecution would take the execution now (`redriveStatus`).
fn redrive_status(e: &ExecutionRecord) -> Result<(), crate::store::NotRedrivable> {
    crate::store::redrivable(
        e.status,
        e.last_event_id,
        e.stop_date_ms,
        crate::clock::system_now(),
        e.history_cap
            .unwrap_or(crate::engine::history::MAX_HISTORY_EVENTS),
    )
}

/// One history event as GetExecutionHistory prints it.
pub fn history_event(e: &EventRecord) -> Value {
    let mut m = Map::new();
    m.insert("timestamp".into(), iso8601(e.timestamp_ms).into());
    m.insert("type".into(), e.event_type.clone().into());
    m.insert("id".into(), e.id.into());
    m.insert("previousEventId".into(), e.previous_event_id.into());
    if let Some(details) = &e.details {
        let v = serde_json::from_str(details).unwrap_or(Value::Null);
        m.insert(e.details_key(), v);
    }
    Value::Object(m)
}

/// GetExecutionHistory's response.
pub fn execution_history(events: &[EventRecord]) -> Value {
    json!({ "events": events.iter().map(history_event).collect::<Vec<_>>() })
}

/// ListExecutions' response.
pub fn list_executions(executions: &[ExecutionRecord]) -> Value {
    let items: Vec<Value> = executions
        .iter()
        .map(|e| {
            let mut m = Map::new();
            m.insert("executionArn".into(), e.execution_arn.clone().into());
            m.insert("stateMachineArn".into(), e.state_machine_arn.clone().into());
            m.insert("name".into(), e.name.clone().into());
            m.insert("status".into(), e.status.as_str().into());
            m.insert("startDate".into(), iso8601(e.start_date_ms).into());
            if let Some(stop) = e.stop_date_ms {
                m.insert("stopDate".into(), iso8601(stop).into());
            }
            m.insert("redriveCount".into(), e.redrive_count.into());
            if let Some(date) = e.redrive_date_ms {
                m.insert("redriveDate".into(), iso8601(date).into());
            }
            started_through(e, &mut m);
            if let Some(owner) = &e.owner {
                m.insert("owner".into(), owner.clone().into());
            }
            if let Some(until) = e.lease_expires_at_ms.filter(|_| e.owner.is_some()) {
                m.insert("leaseExpiresAt".into(), iso8601(until).into());
            }
            Value::Object(m)
        })
        .collect();
    json!({ "executions": items })
}

/// DescribeMapRun's response.
pub fn describe_map_run(run: &MapRunRecord) -> Value {
    let mut m = Map::new();
    m.insert("mapRunArn".into(), run.map_run_arn.clone().into());
    m.insert("executionArn".into(), run.execution_arn.clone().into());
    m.insert("status".into(), run.status.clone().into());
    m.insert("startDate".into(), iso8601(run.start_date_ms).into());
    if let Some(stop) = run.stop_date_ms {
        m.insert("stopDate".into(), iso8601(stop).into());
    }
    m.insert("maxConcurrency".into(), run.settings.max_concurrency.into());
    m.insert(
        "toleratedFailurePercentage".into(),
        run.settings
            .tolerated_failure_percentage
            .unwrap_or(0.0)
            .into(),
    );
    m.insert(
        "toleratedFailureCount".into(),
        run.settings.tolerated_failure_count.unwrap_or(0).into(),
    );
    m.insert("itemCounts".into(), map_run_counts(&run.items));
    m.insert("executionCounts".into(), map_run_counts(&run.executions));
    m.insert("redriveCount".into(), run.redrive_count.into());
    if let Some(date) = run.redrive_date_ms {
        m.insert("redriveDate".into(), iso8601(date).into());
    }
    Value::Object(m)
}

fn map_run_counts(c: &MapRunCounts) -> Value {
    json!({
        "pending": c.pending,
        "running": c.running,
        "succeeded": c.succeeded,
        "failed": c.failed,
        "timedOut": c.timed_out,
        "aborted": c.aborted,
        "total": c.total,
        "resultsWritten": c.results_written,
        // Every child can be redriven with its run; none waits for a redrive now.
        "failuresNotRedrivable": 0,
        "pendingRedrive": 0,
    })
}

/// One item of ListMapRuns' response.
pub fn map_run_list_item(run: &MapRunRecord) -> Value {
    let mut m = Map::new();
    m.insert("executionArn".into(), run.execution_arn.clone().into());
    m.insert("mapRunArn".into(), run.map_run_arn.clone().into());
    m.insert(
        "stateMachineArn".into(),
        run.state_machine_arn.clone().into(),
    );
    m.insert("startDate".into(), iso8601(run.start_date_ms).into());
    if let Some(stop) = run.stop_date_ms {
        m.insert("stopDate".into(), iso8601(stop).into());
    }
    Value::Object(m)
}

/// One child execution of a Map run as ListExecutions (`mapRunArn`) lists it.
pub fn map_run_execution_list_item(e: &MapRunExecution) -> Value {
    let mut m = Map::new();
    m.insert("executionArn".into(), e.execution_arn.clone().into());
    m.insert("stateMachineArn".into(), e.state_machine_arn.clone().into());
    m.insert("name".into(), e.name.clone().into());
    m.insert("status".into(), e.status.clone().into());
    m.insert("startDate".into(), iso8601(e.start_date_ms).into());
    if let Some(stop) = e.stop_date_ms {
        m.insert("stopDate".into(), iso8601(stop).into());
    }
    m.insert("mapRunArn".into(), e.map_run_arn.clone().into());
    m.insert("itemCount".into(), e.item_count.into());
    m.insert("redriveCount".into(), 0.into());
    Value::Object(m)
}

/// DescribeExecution's response for a child execution of a Map run.
pub fn describe_map_run_execution(e: &MapRunExecution) -> Value {
    let mut m = Map::new();
    m.insert("executionArn".into(), e.execution_arn.clone().into());
    m.insert("stateMachineArn".into(), e.state_machine_arn.clone().into());
    m.insert("name".into(), e.name.clone().into());
    m.insert("status".into(), e.status.clone().into());
    m.insert("startDate".into(), iso8601(e.start_date_ms).into());
    if let Some(stop) = e.stop_date_ms {
        m.insert("stopDate".into(), iso8601(stop).into());
    }
    m.insert("input".into(), e.input.clone().into());
    m.insert("inputDetails".into(), json!({"included": true}));
    if let Some(output) = &e.output {
        m.insert("output".into(), output.clone().into());
        m.insert("outputDetails".into(), json!({"included": true}));
    }
    if let Some(error) = &e.error {
        m.insert("error".into(), error.clone().into());
    }
    if let Some(cause) = &e.cause {
        m.insert("cause".into(), cause.clone().into());
    }
    m.insert("mapRunArn".into(), e.map_run_arn.clone().into());
    m.insert("redriveCount".into(), 0.into());
    // A Map run's failed child is redriven by redriving its run (AWS's own status for it).
    let redrive = match e.status.as_str() {
        "FAILED" | "TIMED_OUT" | "ABORTED" => "REDRIVABLE_BY_MAP_RUN",
        _ => "NOT_REDRIVABLE",
    };
    m.insert("redriveStatus".into(), redrive.into());
    Value::Object(m)
}

/// The AWS CLI's pagination of a listing (`--max-items`, `--starting-token`): the CLI fetches
/// everything and prints a slice, with a `NextToken` to pass as `--starting-token` for the rest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Page {
    /// At most this many items (`--max-items`); all of them when `None`.
    pub max_items: Option<usize>,
    /// Where the previous page stopped (its `NextToken`).
    pub starting_token: Option<String>,
}

/// A `--starting-token` this build did not hand out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid --starting-token {0:?}: pass the NextToken a previous page printed")]
pub struct BadStartingToken(pub String);

impl Page {
    /// The slice of `items` this page prints, and the `NextToken` when more follow.
    pub fn slice<'a, T>(
        &self,
        items: &'a [T],
    ) -> Result<(&'a [T], Option<String>), BadStartingToken> {
        let start = match &self.starting_token {
            Some(token) => decode_token(token)
                .filter(|offset| *offset <= items.len())
                .ok_or_else(|| BadStartingToken(token.clone()))?,
            None => 0,
        };
        let rest = &items[start..];
        match self.max_items {
            Some(n) if n < rest.len() => Ok((&rest[..n], Some(encode_token(start + n)))),
            _ => Ok((rest, None)),
        }
    }
}

/// Tokens are opaque to users, like the AWS CLI's (base64 of a small JSON object).
fn encode_token(offset: usize) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json!({ "offset": offset }).to_string())
}

fn decode_token(token: &str) -> Option<usize> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token.trim())
        .ok()?;
    let v: Value = serde_json::from_slice(&bytes).ok()?;
    usize::try_from(v.get("offset")?.as_u64()?).ok()
}

/// Adds `NextToken` to a response, as the AWS CLI prints it.
pub fn with_next_token(mut response: Value, next: Option<String>) -> Value {
    if let (Some(token), Value::Object(m)) = (next, &mut response) {
        m.insert("NextToken".into(), token.into());
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_walk_the_whole_listing_once() {
        let items: Vec<u32> = (0..7).collect();
        let mut page = Page {
            max_items: Some(3),
            starting_token: None,
        };
        let mut seen = Vec::new();
        loop {
            let (slice, next) = page.slice(&items).expect("page");
            seen.extend_from_slice(slice);
            match next {
                Some(token) => page.starting_token = Some(token),
                None => break,
            }
        }
        assert_eq!(seen, items);
        let all = Page::default().slice(&items).expect("all");
        assert_eq!((all.0.len(), all.1), (7, None));
    }

    #[test]
    fn foreign_tokens_are_refused() {
        let items = [1, 2, 3];
        for token in ["nope", "", &encode_token(4)] {
            let page = Page {
                max_items: None,
                starting_token: Some(token.to_owned()),
            };
            assert!(page.slice(&items).is_err(), "{token:?}");
        }
    }
}
