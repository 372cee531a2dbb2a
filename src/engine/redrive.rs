//! Redriving an execution (AWS's RedriveExecution): a FAILED, TIMED_OUT or ABORTED execution
//! continues from where it stopped, under the same ARN, with the same input and definition.
//!
//! The store checks AWS's conditions and appends `ExecutionRedriven` in one transaction, leaving
//! the execution RUNNING with no runner; from there it is driven exactly like a resume (the
//! replay cuts the closed history back to what succeeded, see `engine::replay`), so a redrive
//! killed half-way is finished by `resume`. [`start_redrive`] is the API's RedriveExecution
//! (its response shape and errors, for `serve`); [`redrive_execution`] also drives the
//! execution to its end in this thread, for the command line.

use crate::clock::{iso8601, system_now};
use crate::engine::runner::{resume_executions, ResumeTarget, Resumed, RunError};
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
            RedriveError::Store(_) => "InternalFailure",
        }
    }

    /// AWS's error message.
    pub fn message(&self) -> String {
        match self {
            RedriveError::DoesNotExist(arn) => format!("Execution Does Not Exist: '{arn}'"),
            RedriveError::NotRedrivable(why) => why.to_string(),
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
) -> Result<(serde_json::Value, Redriven), RedriveError> {
    let record = match store.execution(execution) {
        Ok(Some(r)) => r,
        Ok(None) => return Err(RedriveError::DoesNotExist(execution.to_owned())),
        Err(e) => return Err(RedriveError::Store(e)),
    };
    let cap = record
        .history_cap
        .unwrap_or(crate::engine::history::MAX_HISTORY_EVENTS);
    match store.redrive_execution(&record.execution_arn, client_token, system_now(), cap) {
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

/// Redrives an execution and drives it to its end in this thread, with the task bindings and
/// time scale it was run with. A repeated client token drives nothing (`None`).
pub fn redrive_execution(
    store: Arc<Store>,
    execution: &str,
    client_token: Option<&str>,
    notice: NoticeFn,
) -> Result<(Redriven, Option<Resumed>), RunError> {
    let (_, redriven) = start_redrive(&store, execution, client_token)
        .map_err(|e| RunError::CannotResume(e.to_string()))?;
    if redriven.repeated {
        return Ok((redriven, None));
    }
    let mut resumed = resume_executions(
        store,
        ResumeTarget::One(redriven.execution_arn.clone()),
        notice,
    )?;
    Ok((redriven, resumed.pop()))
}
