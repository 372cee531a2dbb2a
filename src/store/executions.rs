//! Execution rows: what the engine submits to start and stop one, what readers get back, and the SQL
//! for both.
//!
//! The writer-side functions run inside the writer's open transaction; the reader-side ones on any
//! connection. Statements go through `prepare_cached`, so each is compiled once per connection.

use std::fmt;
use std::str::FromStr;

use rusqlite::{params, Connection, OptionalExtension, Row};

use super::error::StoreError;

/// An execution's status, with AWS's spellings (`DescribeExecution.status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExecutionStatus {
    /// Still going.
    Running,
    /// Ended with `ExecutionSucceeded`.
    Succeeded,
    /// Ended with `ExecutionFailed`.
    Failed,
    /// Ended with `ExecutionTimedOut`.
    TimedOut,
    /// Ended with `ExecutionAborted` (StopExecution).
    Aborted,
}

impl ExecutionStatus {
    /// Every status, in AWS's documentation order.
    pub const ALL: [ExecutionStatus; 5] = [
        ExecutionStatus::Running,
        ExecutionStatus::Succeeded,
        ExecutionStatus::Failed,
        ExecutionStatus::TimedOut,
        ExecutionStatus::Aborted,
    ];

    /// AWS's spelling: `RUNNING`, `SUCCEEDED`, `FAILED`, `TIMED_OUT`, `ABORTED`.
    pub fn as_str(self) -> &'static str {
        match self {
            ExecutionStatus::Running => "RUNNING",
            ExecutionStatus::Succeeded => "SUCCEEDED",
            ExecutionStatus::Failed => "FAILED",
            ExecutionStatus::TimedOut => "TIMED_OUT",
            ExecutionStatus::Aborted => "ABORTED",
        }
    }

    /// Whether the execution has stopped.
    pub fn is_terminal(self) -> bool {
        self != ExecutionStatus::Running
    }
}

impl fmt::Display for ExecutionStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that is not one of AWS's execution status spellings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown execution status {0:?} (expected RUNNING, SUCCEEDED, FAILED, TIMED_OUT or ABORTED)"
)]
pub struct UnknownStatus(pub String);

impl FromStr for ExecutionStatus {
    type Err = UnknownStatus;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ExecutionStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == s)
            .ok_or_else(|| UnknownStatus(s.to_owned()))
    }
}

/// A new execution, as the engine submits it to [`Store::create_execution`](super::Store::create_execution).
#[derive(Debug, Clone, PartialEq)]
pub struct NewExecution {
    /// `arn:aws:states:REGION:ACCOUNT:execution:MACHINE:NAME`; unique.
    pub execution_arn: String,
    /// The execution's name (last part of the ARN).
    pub name: String,
    /// The state machine's ARN.
    pub state_machine_arn: String,
    /// The state machine's name.
    pub state_machine_name: String,
    /// The definition text as given, so describe and resume see exactly what ran.
    pub definition: String,
    /// The execution input, serialized JSON.
    pub input: String,
    /// `startDate`, ms since the Unix epoch.
    pub start_date_ms: i64,
    /// The role ARN, if one was given.
    pub role_arn: Option<String>,
    /// Absolute execution deadline (TimeoutSeconds), ms since the Unix epoch.
    pub timeout_at_ms: Option<i64>,
    /// The engine's initial position, if it has one yet.
    pub position: Option<String>,
    /// The runner that drives this execution.
    pub owner: Option<String>,
    /// Until when `owner` holds the execution, ms since the Unix epoch.
    pub lease_expires_at_ms: Option<i64>,
    /// How it is run (JSON: time scale, task bindings...), for `resume`.
    pub run_config: Option<String>,
    /// The version it was started through (StartExecution with a version or alias ARN).
    pub state_machine_version_arn: Option<String>,
    /// The alias it was started through.
    pub state_machine_alias_arn: Option<String>,
    /// The first events (at least `ExecutionStarted`, id 1), written in the same transaction.
    pub events: Vec<super::NewEvent>,
}

#[cfg(test)]
impl NewExecution {
    /// A running execution of machine `M` with no events, lease or position: for tests that
    /// need a row to hang tokens or events on.
    pub(crate) fn bare(execution_arn: &str) -> NewExecution {
        NewExecution {
            execution_arn: execution_arn.into(),
            name: execution_arn.rsplit(':').next().unwrap_or("e").into(),
            state_machine_arn: "arn:aws:states:us-east-1:123456789012:stateMachine:M".into(),
            state_machine_name: "M".into(),
            definition: "{}".into(),
            input: "{}".into(),
            start_date_ms: 0,
            role_arn: None,
            timeout_at_ms: None,
            position: None,
            owner: None,
            lease_expires_at_ms: None,
            run_config: None,
            state_machine_version_arn: None,
            state_machine_alias_arn: None,
            events: Vec::new(),
        }
    }
}

/// How an execution stopped; part of an [`Append`](super::Append).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finish {
    /// The terminal status (not `Running`).
    pub status: ExecutionStatus,
    /// The output (serialized JSON) for `SUCCEEDED`.
    pub output: Option<String>,
    /// The error name, for `FAILED`/`ABORTED`/`TIMED_OUT`.
    pub error: Option<String>,
    /// The cause.
    pub cause: Option<String>,
    /// `stopDate`, ms since the Unix epoch.
    pub stop_date_ms: i64,
}

/// One execution as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecutionRecord {
    /// The store's row id.
    pub id: i64,
    /// The execution ARN.
    pub execution_arn: String,
    /// The execution name.
    pub name: String,
    /// The state machine ARN.
    pub state_machine_arn: String,
    /// The state machine name.
    pub state_machine_name: String,
    /// The definition text.
    pub definition: String,
    /// Current status.
    pub status: ExecutionStatus,
    /// Input, serialized JSON.
    pub input: String,
    /// Output, serialized JSON, once succeeded.
    pub output: Option<String>,
    /// Error name, once failed, aborted or timed out.
    pub error: Option<String>,
    /// Cause.
    pub cause: Option<String>,
    /// `startDate`, ms since the Unix epoch.
    pub start_date_ms: i64,
    /// `stopDate`, ms since the Unix epoch.
    pub stop_date_ms: Option<i64>,
    /// The role ARN.
    pub role_arn: Option<String>,
    /// Absolute execution deadline, ms since the Unix epoch.
    pub timeout_at_ms: Option<i64>,
    /// The engine's position, opaque to the store.
    pub position: Option<String>,
    /// Id of the newest history event (0 before any).
    pub last_event_id: i64,
    /// The runner holding the lease.
    pub owner: Option<String>,
    /// When the lease lapses, ms since the Unix epoch.
    pub lease_expires_at_ms: Option<i64>,
    /// How many times the execution was redriven.
    pub redrive_count: i64,
    /// When it was last redriven, ms since the Unix epoch.
    pub redrive_date_ms: Option<i64>,
    /// The history cap it runs with, when its run configuration says (`maxHistoryEvents`).
    pub history_cap: Option<i64>,
    /// The version it was started through (`stateMachineVersionArn`).
    pub state_machine_version_arn: Option<String>,
    /// The alias it was started through (`stateMachineAliasArn`).
    pub state_machine_alias_arn: Option<String>,
}

/// The columns of [`record_from_row`]; the lease's expiry is the effective one (see
/// `leases::EFFECTIVE_EXPIRY`).
static RECORD_COLUMNS: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "id, execution_arn, name, state_machine_arn, state_machine_name, \
         definition, status, input, output, error, cause, start_date, stop_date, role_arn, \
         timeout_at, position, last_event_id, owner, {}, redrive_count, redrive_date, \
         json_extract(run_config, '$.maxHistoryEvents'), state_machine_version_arn, \
         state_machine_alias_arn",
        super::leases::EFFECTIVE_EXPIRY
    )
});

fn record_from_row(row: &Row<'_>) -> rusqlite::Result<ExecutionRecord> {
    let status: String = row.get(6)?;
    let status = status.parse().map_err(|e: UnknownStatus| {
        rusqlite::Error::FromSqlConversionFailure(6, rusqlite::types::Type::Text, Box::new(e))
    })?;
    Ok(ExecutionRecord {
        id: row.get(0)?,
        execution_arn: row.get(1)?,
        name: row.get(2)?,
        state_machine_arn: row.get(3)?,
        state_machine_name: row.get(4)?,
        definition: row.get(5)?,
        status,
        input: row.get(7)?,
        output: row.get(8)?,
        error: row.get(9)?,
        cause: row.get(10)?,
        start_date_ms: row.get(11)?,
        stop_date_ms: row.get(12)?,
        role_arn: row.get(13)?,
        timeout_at_ms: row.get(14)?,
        position: row.get(15)?,
        last_event_id: row.get(16)?,
        owner: row.get(17)?,
        lease_expires_at_ms: row.get(18)?,
        redrive_count: row.get(19)?,
        redrive_date_ms: row.get(20)?,
        history_cap: row.get::<_, Option<i64>>(21).ok().flatten(),
        state_machine_version_arn: row.get(22)?,
        state_machine_alias_arn: row.get(23)?,
    })
}

// ---- writer side -------------------------------------------------------------------------------

/// Inserts the row; `None` if the ARN already exists (nothing written).
pub(crate) fn insert(
    conn: &Connection,
    e: &NewExecution,
    last_event_id: i64,
) -> rusqlite::Result<Option<i64>> {
    let mut stmt = conn.prepare_cached(
        "INSERT INTO executions (execution_arn, name, state_machine_arn, state_machine_name, \
         definition, status, input, start_date, role_arn, timeout_at, position, last_event_id, \
         owner, lease_expires_at, run_config, state_machine_version_arn, \
         state_machine_alias_arn) \
         VALUES (?1, ?2, ?3, ?4, ?5, 'RUNNING', ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16) \
         ON CONFLICT (execution_arn) DO NOTHING RETURNING id",
    )?;
    stmt.query_row(
        params![
            e.execution_arn,
            e.name,
            e.state_machine_arn,
            e.state_machine_name,
            e.definition,
            e.input,
            e.start_date_ms,
            e.role_arn,
            e.timeout_at_ms,
            e.position,
            last_event_id,
            e.owner,
            e.lease_expires_at_ms,
            e.run_config,
            e.state_machine_version_arn,
            e.state_machine_alias_arn,
        ],
        |row| row.get(0),
    )
    .optional()
}

/// What the writer needs to know about an execution before appending to it.
#[derive(Debug, Clone)]
pub(crate) struct WriteHead {
    pub id: i64,
    pub status: String,
    pub last_event_id: i64,
    /// The runner holding the lease, if any.
    pub owner: Option<String>,
}

/// Reads the write head of an execution by ARN.
pub(crate) fn write_head(
    conn: &Connection,
    execution_arn: &str,
) -> rusqlite::Result<Option<WriteHead>> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, status, last_event_id, owner FROM executions WHERE execution_arn = ?1",
    )?;
    stmt.query_row([execution_arn], |row| {
        Ok(WriteHead {
            id: row.get(0)?,
            status: row.get(1)?,
            last_event_id: row.get(2)?,
            owner: row.get(3)?,
        })
    })
    .optional()
}

/// Moves the head: the newest event id and, if given, the position.
pub(crate) fn update_head(
    conn: &Connection,
    id: i64,
    last_event_id: i64,
    position: Option<&str>,
) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare_cached(
        "UPDATE executions SET last_event_id = ?2, position = coalesce(?3, position) WHERE id = ?1",
    )?;
    stmt.execute(params![id, last_event_id, position])?;
    Ok(())
}

/// Records how the execution stopped, and releases its lease.
pub(crate) fn finish(conn: &Connection, id: i64, f: &Finish) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare_cached(
        "UPDATE executions SET status = ?2, output = ?3, error = ?4, cause = ?5, stop_date = ?6, \
         owner = NULL, lease_expires_at = NULL WHERE id = ?1",
    )?;
    stmt.execute(params![
        id,
        f.status.as_str(),
        f.output,
        f.error,
        f.cause,
        f.stop_date_ms
    ])?;
    Ok(())
}

// ---- reader side -------------------------------------------------------------------------------

/// Looks an execution up by ARN, or by bare name when the text does not start with `arn:`.
///
/// Names are unique per state machine (the ARN contains both), so a name can match executions of
/// several machines; that is reported as [`StoreError::AmbiguousExecutionName`] rather than guessed.
pub(crate) fn find(
    conn: &Connection,
    arn_or_name: &str,
) -> Result<Option<ExecutionRecord>, FindError> {
    if arn_or_name.starts_with("arn:") {
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {} FROM executions WHERE execution_arn = ?1",
            *RECORD_COLUMNS
        ))?;
        return Ok(stmt.query_row([arn_or_name], record_from_row).optional()?);
    }
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {} FROM executions WHERE name = ?1 ORDER BY start_date DESC, id DESC",
        *RECORD_COLUMNS
    ))?;
    let mut found = stmt
        .query_map([arn_or_name], record_from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    match found.len() {
        0 => Ok(None),
        1 => Ok(found.pop()),
        _ => Err(FindError::Store(StoreError::AmbiguousExecutionName {
            name: arn_or_name.to_owned(),
            execution_arns: found.into_iter().map(|r| r.execution_arn).collect(),
        })),
    }
}

/// Either an SQLite error (classified by the caller, who knows the path) or a finished store error.
#[derive(Debug)]
pub(crate) enum FindError {
    Sqlite(rusqlite::Error),
    Store(StoreError),
}

impl From<rusqlite::Error> for FindError {
    fn from(e: rusqlite::Error) -> Self {
        FindError::Sqlite(e)
    }
}

/// All executions, or those with one status, newest first.
pub(crate) fn list(
    conn: &Connection,
    status: Option<ExecutionStatus>,
) -> rusqlite::Result<Vec<ExecutionRecord>> {
    match status {
        Some(status) => {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {} FROM executions WHERE status = ?1 \
                 ORDER BY start_date DESC, id DESC",
                *RECORD_COLUMNS
            ))?;
            let rows = stmt.query_map([status.as_str()], record_from_row)?;
            rows.collect()
        }
        None => {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {} FROM executions ORDER BY start_date DESC, id DESC",
                *RECORD_COLUMNS
            ))?;
            let rows = stmt.query_map([], record_from_row)?;
            rows.collect()
        }
    }
}

/// The running executions whose runner is gone, as a runner other than `me` sees them at
/// `now`: their lease lapsed or was given up, or (no owner: redriven, and not taken by the
/// process that redrove it) they have waited since `unowned_before`. Oldest first.
pub(crate) fn orphans(
    conn: &Connection,
    me: &str,
    now: i64,
    unowned_before: i64,
) -> rusqlite::Result<Vec<ExecutionRecord>> {
    // The owned ones from executions_running_by_owner alone, which the planner does not pick
    // by itself: through the status index it read every running row (10,000 rows with 6 KB
    // definitions: 50 ms a look, 3 ms through this one).
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {} FROM executions WHERE id IN ( \
             SELECT id FROM executions INDEXED BY executions_running_by_owner \
             WHERE status = 'RUNNING' AND owner IS NOT NULL \
             AND owner IS NOT ?1 AND coalesce({}, 0) <= ?2 \
             UNION ALL \
             SELECT id FROM executions WHERE status = 'RUNNING' AND owner IS NULL \
             AND coalesce(redrive_date, start_date) <= ?3) \
         ORDER BY start_date, id",
        *RECORD_COLUMNS,
        super::leases::EFFECTIVE_EXPIRY
    ))?;
    let rows = stmt.query_map(params![me, now, unowned_before], record_from_row)?;
    rows.collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_spellings_round_trip() {
        for status in ExecutionStatus::ALL {
            assert_eq!(status.as_str().parse::<ExecutionStatus>(), Ok(status));
        }
        assert_eq!("TIMED_OUT".parse(), Ok(ExecutionStatus::TimedOut));
        assert!("running".parse::<ExecutionStatus>().is_err());
        assert!(!ExecutionStatus::Running.is_terminal());
        assert!(ExecutionStatus::Aborted.is_terminal());
    }
}
