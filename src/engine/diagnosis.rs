//! Why an execution failed, read from its history: the failure that started it (a Task's
//! error, a Fail state, an expression that failed), the state where it happened, and the
//! catcher that turned it into something else. `run`, `describe-execution --format text` and
//! `get-execution-history --format table` show it; the final error alone often hides it (a
//! Catch routing a Task's error to a Fail state replaces it with the Fail state's own).

use crate::store::EventRecord;
use serde_json::Value;

/// The failure an execution's history records first-hand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootFailure {
    /// The state it happened in.
    pub state: String,
    /// The event type that recorded it (`TaskFailed`, `FailStateEntered`, ...).
    pub event_type: String,
    /// Its error name.
    pub error: Option<String>,
    /// Its cause.
    pub cause: Option<String>,
    /// The state a Catch sent the execution on to, when the failure was caught.
    pub caught_to: Option<String>,
}

/// The details object of an event, parsed.
pub fn details(e: &EventRecord) -> Value {
    e.details
        .as_deref()
        .and_then(|d| serde_json::from_str(d).ok())
        .unwrap_or(Value::Null)
}

/// Whether an event type records an error of a state (not of the execution as a whole).
fn is_state_failure(event_type: &str) -> bool {
    !event_type.starts_with("Execution")
        && !event_type.starts_with("MapIteration")
        && !event_type.starts_with("MapRun")
        && (event_type.ends_with("Failed")
            || event_type.ends_with("TimedOut")
            || event_type == "EvaluationFailed")
}

/// The last failure a state recorded in `events` (in order), with the state it happened in and
/// where a Catch sent the execution afterwards. `None` when no state failed.
pub fn root_failure(events: &[EventRecord]) -> Option<RootFailure> {
    let mut current_state: Option<String> = None;
    let mut found: Option<(usize, RootFailure)> = None;
    for (i, e) in events.iter().enumerate() {
        let d = details(e);
        if e.event_type.ends_with("StateEntered") {
            current_state = d["name"].as_str().map(str::to_owned);
            if e.event_type == "FailStateEntered" {
                // The Fail state's own error is in ExecutionFailed; keep the state.
                found = Some((
                    i,
                    RootFailure {
                        state: current_state.clone().unwrap_or_default(),
                        event_type: e.event_type.clone(),
                        error: None,
                        cause: None,
                        caught_to: None,
                    },
                ));
            }
            continue;
        }
        if is_state_failure(&e.event_type) && d.get("error").is_some() {
            let state = d["state"]
                .as_str()
                .map(str::to_owned)
                .or_else(|| current_state.clone())
                .unwrap_or_default();
            found = Some((
                i,
                RootFailure {
                    state,
                    event_type: e.event_type.clone(),
                    error: d["error"].as_str().map(str::to_owned),
                    cause: d["cause"].as_str().map(str::to_owned),
                    caught_to: None,
                },
            ));
        }
    }
    let (at, mut failure) = found?;
    if failure.event_type == "FailStateEntered" {
        // A Fail state reached through a Catch: the Task error before it is the real cause.
        if let Some((_, earlier)) = events[..at]
            .iter()
            .enumerate()
            .rev()
            .find(|(_, e)| is_state_failure(&e.event_type) && details(e).get("error").is_some())
        {
            let d = details(earlier);
            let state = events[..at]
                .iter()
                .rev()
                .skip_while(|e| e.id != earlier.id)
                .find(|e| e.event_type.ends_with("StateEntered"))
                .and_then(|e| details(e)["name"].as_str().map(str::to_owned))
                .unwrap_or_default();
            return Some(RootFailure {
                state,
                event_type: earlier.event_type.clone(),
                error: d["error"].as_str().map(str::to_owned),
                cause: d["cause"].as_str().map(str::to_owned),
                caught_to: Some(failure.state),
            });
        }
        return Some(failure);
    }
    // Caught: the execution went on to another state after the failing one exited.
    let mut exited = false;
    for e in &events[at + 1..] {
        let d = details(e);
        let name = d["name"].as_str().unwrap_or_default();
        if e.event_type.ends_with("StateExited") && name == failure.state {
            exited = true;
        } else if exited && e.event_type.ends_with("StateEntered") {
            failure.caught_to = Some(name.to_owned());
            break;
        }
    }
    Some(failure)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(id: i64, t: &str, d: Value) -> EventRecord {
        EventRecord {
            id,
            previous_event_id: id - 1,
            timestamp_ms: 0,
            event_type: t.into(),
            details: Some(d.to_string()),
            replay_key: None,
        }
    }

    #[test]
    fn a_caught_task_error_is_found_behind_the_fail_state() {
        let events = [
            ev(1, "ExecutionStarted", serde_json::json!({})),
            ev(2, "TaskStateEntered", serde_json::json!({"name": "Charge"})),
            ev(
                3,
                "TaskFailed",
                serde_json::json!({"error": "CardDeclined", "cause": "no funds"}),
            ),
            ev(4, "TaskStateExited", serde_json::json!({"name": "Charge"})),
            ev(
                5,
                "FailStateEntered",
                serde_json::json!({"name": "PaymentFailed"}),
            ),
            ev(
                6,
                "ExecutionFailed",
                serde_json::json!({"error": "PaymentFailed"}),
            ),
        ];
        let f = root_failure(&events).unwrap();
        assert_eq!(f.state, "Charge");
        assert_eq!(f.error.as_deref(), Some("CardDeclined"));
        assert_eq!(f.cause.as_deref(), Some("no funds"));
        assert_eq!(f.caught_to.as_deref(), Some("PaymentFailed"));
        assert!(root_failure(&events[..2]).is_none());
    }
}
