//! Redriving an execution (AWS's RedriveExecution): a FAILED, TIMED_OUT or ABORTED execution
//! continues from where it stopped, under the same ARN, with the same input and definition.
//!
//! The store checks AWS's conditions and appends `ExecutionRedriven` in one transaction, leaving
//! the execution RUNNING with no runner; from there it is driven exactly like a resume (the
//! replay cuts the closed history back to what succeeded, see `engine::replay`), so a redrive
//! killed half-way is finished by `resume`. [`start_redrive`] is the API's RedriveExecution
//! (its response shape and errors, for `serve`); [`redrive_execution`] also drives the
//! execution to its end in this thread, for the command line.

use crate::clock::{iso8601, system_now, Timekeeping};
use crate::engine::children::KnownMachines;
use crate::engine::runner::{
    resume_executions_bound, stored_time, ResumeBindings, ResumeTarget, Resumed, RunError,
};
use crate::store::{NotRedrivable, Redriven, Store, StoreError};
use crate::tasks::callback::NoticeFn;
use std::sync::Arc;

/// Why a redrive was refused, as AWS's RedriveExecution errors.
#[derive(Debug, thiserror::Error)]
pub enum RedriveError {
    /// No such execution.
    #[error("ExecutionDoesNotExist: Execution Does Not Exist: '{0}'")]
    DoesNotExist(String),
    /// AWS's conditions do not allow it.
    #[error("ExecutionNotRedrivable: {0}")]
    NotRedrivable(NotRedrivable),
    /// The request is malformed (API: a missing `executionArn`, a bad `clientToken`).
    #[error("ValidationException: {0}")]
    Validation(String),
    /// `executionArn` is not an ARN.
    #[error("InvalidArn: Invalid Arn: '{0}'")]
    InvalidArn(String),
    /// The database failed.
    #[error(transparent)]
    Store(StoreError),
}

impl RedriveError {
    /// AWS's error code (`__type`).
    pub fn code(&self) -> &'static str {
        match self {
            RedriveError::DoesNotExist(_) => "ExecutionDoesNotExist",
            RedriveError::NotRedrivable(_) => "ExecutionNotRedrivable",
            RedriveError::Validation(_) => "ValidationException",
            RedriveError::InvalidArn(_) => "InvalidArn",
            RedriveError::Store(_) => "InternalFailure",
        }
    }

    /// AWS's error message.
    pub fn message(&self) -> String {
        match self {
            RedriveError::DoesNotExist(arn) => format!("Execution Does Not Exist: '{arn}'"),
            RedriveError::NotRedrivable(why) => why.to_string(),
            RedriveError::Validation(why) => why.clone(),
            RedriveError::InvalidArn(arn) => format!("Invalid Arn: '{arn}'"),
            RedriveError::Store(e) => e.to_string(),
        }
    }
}

/// RedriveExecution: checks AWS's conditions and reopens the execution (by ARN or name) for a
/// runner to take, as [`crate::engine::runner::resume_executions`] does. Returns AWS's response
/// (`{"redriveDate": ...}`) and what was done. A repeated `client_token` is the same request:
/// nothing is redriven again.
pub fn start_redrive(
    store: &Store,
    execution: &str,
    client_token: Option<&str>,
    now: crate::clock::Millis,
) -> Result<(serde_json::Value, Redriven), RedriveError> {
    let record = match store.execution(execution) {
        Ok(Some(r)) => r,
        Ok(None) => return Err(RedriveError::DoesNotExist(execution.to_owned())),
        Err(e) => return Err(RedriveError::Store(e)),
    };
    let cap = record
        .history_cap
        .unwrap_or(crate::engine::history::MAX_HISTORY_EVENTS);
    match store.redrive_execution(&record.execution_arn, client_token, now, cap) {
        Ok(Ok(redriven)) => {
            let response = serde_json::json!({ "redriveDate": iso8601(redriven.redrive_date_ms) });
            Ok((response, redriven))
        }
        Ok(Err(why)) => Err(RedriveError::NotRedrivable(why)),
        Err(StoreError::ExecutionNotFound { execution }) => {
            Err(RedriveError::DoesNotExist(execution))
        }
        Err(e) => Err(RedriveError::Store(e)),
    }
}

/// RedriveExecution as the API takes it: AWS's request (`{"executionArn": …, "clientToken": …}`)
/// in, AWS's response (`{"redriveDate": …}`) or error out. The execution is left RUNNING for a
/// runner to take (`serve` drives it like a resumed execution).
pub fn redrive_request(
    store: &Store,
    request: &serde_json::Value,
    now: crate::clock::Millis,
) -> Result<serde_json::Value, RedriveError> {
    let arn = match request.get("executionArn") {
        Some(serde_json::Value::String(arn)) => arn,
        _ => {
            return Err(RedriveError::Validation(
                "1 validation error detected: Value null at 'executionArn' failed to satisfy constraint: Member must not be null".into(),
            ))
        }
    };
    if !arn.starts_with("arn:") {
        return Err(RedriveError::InvalidArn(arn.clone()));
    }
    let token = match request.get("clientToken") {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(t)) if (1..=64).contains(&t.chars().count()) => Some(t),
        Some(_) => {
            return Err(RedriveError::Validation(
                "1 validation error detected: Value at 'clientToken' failed to satisfy constraint: Member must have length between 1 and 64".into(),
            ))
        }
    };
    start_redrive(store, arn, token.map(String::as_str), now).map(|(response, _)| response)
}

/// Redrives an execution and drives it to its end in this thread, with the task bindings and
/// time scale it was run with. A repeated client token drives nothing (`None`).
///
/// `time` is the clock to continue on (`redrive --clock`); without it, an execution that ran
/// on a virtual clock continues on one standing where its history ended, and the redrive is
/// dated on it.
pub fn redrive_execution(
    store: Arc<Store>,
    execution: &str,
    client_token: Option<&str>,
    notice: NoticeFn,
    time: Option<Timekeeping>,
) -> Result<(Redriven, Option<Resumed>), RunError> {
    let time = match (time, store.execution(execution)?) {
        (Some(time), _) => Some(time),
        (None, Some(record)) => stored_time(&store, &record)?,
        (None, None) => None,
    };
    let now = time.as_ref().map_or_else(system_now, Timekeeping::now);
    let (_, redriven) = start_redrive(&store, execution, client_token, now)
        .map_err(|e| RunError::CannotResume(e.to_string()))?;
    if redriven.repeated {
        return Ok((redriven, None));
    }
    let bindings = ResumeBindings {
        time,
        ..ResumeBindings::default()
    };
    let mut resumed = resume_executions_bound(
        store,
        ResumeTarget::One(redriven.execution_arn.clone()),
        notice,
        &bindings,
        KnownMachines::new(),
    )?;
    Ok((redriven, resumed.pop()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Append, Finish, NewEvent, NewExecution, StoreOptions};
    use serde_json::json;

    const ARN: &str = "arn:aws:states:us-east-1:123456789012:execution:M:e";

    fn store_with(status: crate::store::ExecutionStatus) -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("t.db"), StoreOptions::default()).unwrap();
        let event = |id: i64, t: &str| NewEvent {
            id,
            previous_event_id: id - 1,
            timestamp_ms: 0,
            event_type: t.to_owned().into(),
            replay_key: None,
            details: None,
        };
        store
            .create_execution(NewExecution {
                events: vec![event(1, "ExecutionStarted")],
                ..NewExecution::bare(ARN)
            })
            .wait_blocking()
            .unwrap();
        store
            .append(Append {
                execution_arn: ARN.into(),
                events: vec![event(2, "ExecutionFailed")],
                position: None,
                finish: Some(Finish {
                    status,
                    output: None,
                    error: None,
                    cause: None,
                    stop_date_ms: crate::clock::system_now(),
                }),
                owner: None,
            })
            .wait_blocking()
            .unwrap();
        (dir, store)
    }

    #[test]
    fn the_api_request_redrives_once_per_client_token_and_answers_awss_errors() {
        use crate::store::ExecutionStatus as S;
        let (_dir, store) = store_with(S::Failed);
        let request = json!({"executionArn": ARN, "clientToken": "t1"});
        let first = redrive_request(&store, &request, 0).unwrap();
        assert!(first["redriveDate"].is_string());
        let again = redrive_request(&store, &request, 0).unwrap();
        assert_eq!(first, again, "the same token is the same request");
        let record = store.execution(ARN).unwrap().unwrap();
        assert_eq!((record.status, record.redrive_count), (S::Running, 1));
        let history = store.history(ARN, false).unwrap();
        assert_eq!(history.last().unwrap().event_type, "ExecutionRedriven");
        assert_eq!(history.len(), 3);
        // Now RUNNING: refused.
        let e = redrive_request(&store, &json!({"executionArn": ARN}), 0).unwrap_err();
        assert_eq!(e.code(), "ExecutionNotRedrivable");
        assert_eq!(e.message(), "Execution is RUNNING and cannot be redriven");
        for (request, code) in [
            (json!({}), "ValidationException"),
            (json!({"executionArn": "e"}), "InvalidArn"),
            (
                json!({"executionArn": ARN, "clientToken": ""}),
                "ValidationException",
            ),
            (
                json!({"executionArn": "arn:aws:states:us-east-1:123456789012:execution:M:none"}),
                "ExecutionDoesNotExist",
            ),
        ] {
            assert_eq!(
                redrive_request(&store, &request, 0).unwrap_err().code(),
                code,
                "{request}"
            );
        }
        let (_dir, store) = store_with(S::Succeeded);
        let e = redrive_request(&store, &json!({"executionArn": ARN}), 0).unwrap_err();
        assert_eq!(e.message(), "Execution is SUCCEEDED and cannot be redriven");
    }
}
