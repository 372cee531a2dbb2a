//! AWS API response shapes (DescribeExecution, GetExecutionHistory, ListExecutions) built from
//! stored records, so every command prints what the AWS CLI would.

use crate::engine::clock::iso8601;
use crate::store::{EventRecord, ExecutionRecord};
use serde_json::{json, Map, Value};

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
    m.insert("redriveCount".into(), 0.into());
    Value::Object(m)
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
