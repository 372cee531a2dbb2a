//! Why an execution failed, read from its history: the failure that started it (a Task's
//! error, a Fail state, an expression that failed), the state where it happened (inside any
//! Parallel or Map it came up through), the catcher that turned it into something else, and
//! for a timeout which clock ran out. `run`, `describe-execution --format text` and
//! `get-execution-history --format table` show it; the final error alone often hides it (a
//! Catch routing a Task's error to a Fail state replaces it with the Fail state's own). It
//! reads the history as the one [`Tree`] of visits every report shares.

use crate::engine::visits::{Ending, Tree, VisitId};
use crate::store::EventRecord;
use serde_json::Value;

/// Which of a Task's clocks ran out, and after how long (as declared, in seconds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TimeoutClock {
    /// `HeartbeatSeconds`: no heartbeat came in time.
    Heartbeat(f64),
    /// `TimeoutSeconds`: the attempt took too long.
    Timeout(f64),
}

/// The failure an execution's history records first-hand.
#[derive(Debug, Clone, PartialEq)]
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
    /// For a Task's `States.Timeout`, the clock that ran out.
    pub clock: Option<TimeoutClock>,
}

/// The `--time-scale` an execution ran with (1 when not recorded): history timestamps are
/// scaled time, so a timeout's clock is told against scaled seconds.
pub fn recorded_time_scale(store: &crate::store::Store, execution_arn: &str) -> f64 {
    store
        .run_config(execution_arn)
        .ok()
        .flatten()
        .and_then(|c| serde_json::from_str::<Value>(&c).ok())
        .and_then(|c| c.get("time_scale").and_then(Value::as_f64))
        .unwrap_or(1.0)
}

/// The details object of an event, parsed.
pub fn details(e: &EventRecord) -> Value {
    e.details
        .as_deref()
        .and_then(|d| serde_json::from_str(d).ok())
        .unwrap_or(Value::Null)
}

/// The failure that ended the execution (an uncaught one, or a Fail state and the caught
/// failure that led to it), else the last failure a Catch took; `None` when no state failed.
/// `time_scale` is the `--time-scale` the execution ran with (to tell a heartbeat's timeout).
pub fn root_failure(events: &[EventRecord], time_scale: f64) -> Option<RootFailure> {
    root_failure_in(&Tree::from_records(events), time_scale)
}

/// [`root_failure`] of a history already read.
pub fn root_failure_in(tree: &Tree, time_scale: f64) -> Option<RootFailure> {
    let &last = tree.top().last()?;
    let top = &tree.visits[last];
    if top.failure.is_some() && top.ending != Ending::Exited {
        return explain(tree, last, time_scale);
    }
    // Caught somewhere: the latest failure a Catch took.
    let (caught, _) = tree
        .visits
        .iter()
        .enumerate()
        .filter(|(_, v)| v.caught())
        .max_by_key(|(_, v)| v.failure.as_ref().map(|f| f.event))?;
    let mut failure = explain(tree, caught, time_scale)?;
    failure.caught_to = tree.next(caught).map(|v| v.state.clone());
    Some(failure)
}

/// The failure of `visit` where it started: inside its Parallel or Map, and behind a Fail
/// state a Catch led to.
fn explain(tree: &Tree, visit: VisitId, time_scale: f64) -> Option<RootFailure> {
    let origin = tree.origin(visit);
    let at = &tree.visits[origin];
    if at.ending == Ending::Fail {
        let catcher = tree.previous(origin).filter(|&p| tree.visits[p].caught());
        if let Some(catcher) = catcher {
            let mut failure = explain(tree, catcher, time_scale)?;
            failure.caught_to = Some(at.state.clone());
            return Some(failure);
        }
    }
    let failure = at.failure.as_ref()?;
    let clock = failure
        .event_type
        .ends_with("TimedOut")
        .then(|| {
            at.attempts
                .iter()
                .find(|a| a.failure.as_ref() == Some(failure))
        })
        .flatten()
        .and_then(|attempt| {
            let heartbeat = attempt.heartbeat_ran_out(failure.at_ms, &mut || time_scale);
            match (heartbeat, attempt.heartbeat_s, attempt.timeout_s) {
                (true, Some(h), _) => Some(TimeoutClock::Heartbeat(h)),
                (false, _, Some(t)) => Some(TimeoutClock::Timeout(t)),
                _ => None,
            }
        });
    Some(RootFailure {
        state: at.state.clone(),
        event_type: failure.event_type.clone(),
        error: failure.error.clone(),
        cause: failure.cause.clone(),
        caught_to: None,
        clock,
    })
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
        let f = root_failure(&events, 1.0).unwrap();
        assert_eq!(f.state, "Charge");
        assert_eq!(f.error.as_deref(), Some("CardDeclined"));
        assert_eq!(f.cause.as_deref(), Some("no funds"));
        assert_eq!(f.caught_to.as_deref(), Some("PaymentFailed"));
        assert!(root_failure(&events[..2], 1.0).is_none());
    }
}
