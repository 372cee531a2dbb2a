//! Redrive: a FAILED, TIMED_OUT or ABORTED execution goes back to RUNNING under the same ARN,
//! with `ExecutionRedriven` appended to its history, in one transaction (AWS's conditions are
//! checked in the same transaction, so two racing redrives have one winner).

use super::cached::CachedSql;
use super::events::{self, NewEvent};
use super::executions;
use rusqlite::{params, OptionalExtension, Transaction};

/// How long after it stopped an execution can be redriven (AWS: 14 days).
pub const REDRIVABLE_PERIOD_MS: i64 = 14 * 24 * 3600 * 1000;

/// Why an execution cannot be redriven, with AWS's `redriveStatusReason` wording.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NotRedrivable {
    /// Still running.
    #[error("Execution is RUNNING and cannot be redriven")]
    Running,
    /// Ended well: nothing to redrive.
    #[error("Execution is SUCCEEDED and cannot be redriven")]
    Succeeded,
    /// A redrive needs room for at least `ExecutionRedriven` and one more event.
    #[error("Execution history event limit exceeded.")]
    HistoryLimit,
    /// Stopped more than 14 days ago.
    #[error("Execution redrivable period exceeded.")]
    PeriodExceeded,
    /// An EXPRESS execution (AWS redrives only STANDARD ones).
    #[error("Execution is of type EXPRESS and cannot be redriven")]
    Express,
}

/// A redrive that took place (or, for a repeated client token, had taken place).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redriven {
    /// The execution.
    pub execution_arn: String,
    /// Its `redriveCount` now.
    pub redrive_count: i64,
    /// `redriveDate`, ms since the Unix epoch.
    pub redrive_date_ms: i64,
    /// The same client token redrove it already: nothing was written now.
    pub repeated: bool,
}

/// Whether an execution in `status` with `last_event_id` events, stopped at `stop_date_ms`,
/// could be redriven at `now` (DescribeExecution's `redriveStatus`).
pub fn redrivable(
    status: executions::ExecutionStatus,
    last_event_id: i64,
    stop_date_ms: Option<i64>,
    now: i64,
    max_events: i64,
) -> Result<(), NotRedrivable> {
    use executions::ExecutionStatus as S;
    match status {
        S::Running => return Err(NotRedrivable::Running),
        S::Succeeded => return Err(NotRedrivable::Succeeded),
        S::Failed | S::TimedOut | S::Aborted => {}
    }
    // A cap of 0 is no cap (`run --max-history-events 0`).
    if max_events > 0 && last_event_id >= max_events - 1 {
        return Err(NotRedrivable::HistoryLimit);
    }
    if stop_date_ms.is_some_and(|stop| now > stop + REDRIVABLE_PERIOD_MS) {
        return Err(NotRedrivable::PeriodExceeded);
    }
    Ok(())
}

/// Redrives `execution_arn` at `now`. `None`: no such execution.
pub(crate) fn redrive(
    tx: &Transaction<'_>,
    execution_arn: &str,
    client_token: Option<&str>,
    now: i64,
    max_events: i64,
) -> rusqlite::Result<Option<Result<Redriven, NotRedrivable>>> {
    let row = tx
        .prepare_cached(
            "SELECT id, status, last_event_id, stop_date, redrive_count, redrive_date, \
             redrive_client_token FROM executions WHERE execution_arn = ?1",
        )?
        .query_row([execution_arn], |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, i64>(2)?,
                row.get::<_, Option<i64>>(3)?,
                row.get::<_, i64>(4)?,
                row.get::<_, Option<i64>>(5)?,
                row.get::<_, Option<String>>(6)?,
            ))
        })
        .optional()?;
    let Some((id, status, last_event_id, stop_date, count, date, token)) = row else {
        return Ok(None);
    };
    if let (Some(given), Some(stored), Some(date)) = (client_token, token.as_deref(), date) {
        if given == stored {
            return Ok(Some(Ok(Redriven {
                execution_arn: execution_arn.to_owned(),
                redrive_count: count,
                redrive_date_ms: date,
                repeated: true,
            })));
        }
    }
    let status: executions::ExecutionStatus = status.parse().map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(1, rusqlite::types::Type::Text, Box::new(e))
    })?;
    if let Err(why) = redrivable(status, last_event_id, stop_date, now, max_events) {
        return Ok(Some(Err(why)));
    }
    let count = count + 1;
    let event = NewEvent {
        id: last_event_id + 1,
        previous_event_id: last_event_id,
        timestamp_ms: now,
        event_type: "ExecutionRedriven".into(),
        replay_key: None,
        details: Some(serde_json::json!({ "redriveCount": count }).to_string()),
    };
    events::insert_all(tx, &[(id, &event)])?;
    // Back to RUNNING with no runner: whoever drives it next (the redrive command, a resume)
    // takes the lease. The stop request of the attempt before is spent.
    tx.execute_cached(
        "UPDATE executions SET status = 'RUNNING', output = NULL, error = NULL, cause = NULL, \
         stop_date = NULL, stop_requested_at = NULL, stop_error = NULL, stop_cause = NULL, \
         owner = NULL, lease_expires_at = NULL, last_event_id = ?2, redrive_count = ?3, \
         redrive_date = ?4, redrive_client_token = ?5 WHERE id = ?1",
        params![id, event.id, count, now, client_token],
    )?;
    Ok(Some(Ok(Redriven {
        execution_arn: execution_arn.to_owned(),
        redrive_count: count,
        redrive_date_ms: now,
        repeated: false,
    })))
}
