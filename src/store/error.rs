//! [`StoreError`]: everything the store can report, typed so the CLI can say what went wrong.
//!
//! SQLite's result codes are classified once, in [`StoreError::from_sqlite`], into the cases a user
//! can act on (not a database, read-only, disk full, busy); the rest keep the SQLite error as source.
//! Errors are `Clone` (sources sit behind `Arc`) because one failed commit answers every caller
//! whose command was in that transaction.

use std::path::PathBuf;
use std::sync::Arc;

use rusqlite::ErrorCode;

/// Result alias for the store.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Why a store operation failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database's parent directory could not be created.
    #[error("cannot create directory {path} for the database: {source}")]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// The file could not be opened at all (missing with no create, permissions, a directory).
    #[error("cannot open database {path}: {source}")]
    CannotOpen {
        /// The database file.
        path: PathBuf,
        /// What SQLite said.
        #[source]
        source: Arc<rusqlite::Error>,
    },
    /// The file exists but is not an SQLite database.
    #[error("{path} is not an sfn-local database (not an SQLite file)")]
    NotADatabase {
        /// The file.
        path: PathBuf,
    },
    /// The database file is damaged.
    #[error("database {path} is corrupt")]
    Corrupt {
        /// The file.
        path: PathBuf,
    },
    /// A write was refused because the database (or its directory) is read-only.
    #[error("database {path} is read-only")]
    ReadOnly {
        /// The file.
        path: PathBuf,
    },
    /// The disk (or quota) is full; nothing from the failed transaction was kept.
    #[error("disk full while writing database {path}")]
    DiskFull {
        /// The file.
        path: PathBuf,
    },
    /// Another process held the write lock for longer than the busy timeout.
    #[error("database {path} stayed locked by another process for longer than {timeout_ms} ms")]
    Busy {
        /// The file.
        path: PathBuf,
        /// The configured busy timeout.
        timeout_ms: u128,
    },
    /// The database file was deleted, replaced or truncated by someone else while this process
    /// had it open: nothing more is written (it would go to a file nobody can read, or over
    /// another one's pages).
    #[error("database {path} was {how} while this process had it open; nothing more is written to it (restore the file, or run the execution again)")]
    FileChanged {
        /// The file.
        path: PathBuf,
        /// What happened to it: `deleted`, `replaced by another file`, `truncated`.
        how: &'static str,
    },
    /// The database was written by a newer sfn-local.
    #[error("database {path} has schema version {found}, newer than this sfn-local supports ({supported}); upgrade sfn-local")]
    SchemaTooNew {
        /// The file.
        path: PathBuf,
        /// `PRAGMA user_version` of the file.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// A read-only store was opened on a database that needs migrating first.
    #[error("database {path} has schema version {found}, older than {supported}; open it once read-write to migrate")]
    SchemaTooOld {
        /// The file.
        path: PathBuf,
        /// `PRAGMA user_version` of the file.
        found: i64,
        /// The version this build reads.
        supported: i64,
    },
    /// `create_execution` with an ARN that already exists.
    #[error("execution already exists: {execution_arn}")]
    ExecutionAlreadyExists {
        /// The ARN.
        execution_arn: String,
    },
    /// No execution has this ARN (or name).
    #[error("execution does not exist: {execution}")]
    ExecutionNotFound {
        /// The ARN or name asked for.
        execution: String,
    },
    /// A bare name matched executions of several state machines.
    #[error("execution name {name:?} is ambiguous; use one of the ARNs: {}", execution_arns.join(", "))]
    AmbiguousExecutionName {
        /// The name asked for.
        name: String,
        /// Every matching ARN, newest first.
        execution_arns: Vec<String>,
    },
    /// Events were appended to an execution that has already stopped.
    #[error("execution {execution_arn} is {status}, not RUNNING; no more events can be appended")]
    ExecutionNotRunning {
        /// The ARN.
        execution_arn: String,
        /// Its current status.
        status: String,
    },
    /// A runner appended to an execution whose lease it no longer holds (it was paused or cut
    /// off long enough for its lease to lapse, and another runner took the execution over).
    /// Nothing was written: the execution belongs to the other runner now.
    #[error("execution {execution_arn}: this runner ({owner}) lost its lease{}; nothing was written, the execution is driven by its new owner", held_by.as_deref().map(|h| format!(" to {h}")).unwrap_or_default())]
    LeaseLost {
        /// The ARN.
        execution_arn: String,
        /// The runner whose append was refused.
        owner: String,
        /// Who holds the lease now, if anyone.
        held_by: Option<String>,
    },
    /// Event ids must continue the history without gaps or reuse.
    #[error(
        "event id {found} does not continue the history of {execution_arn} (expected {expected})"
    )]
    EventIdNotContiguous {
        /// The ARN.
        execution_arn: String,
        /// The id that would continue the history.
        expected: i64,
        /// The id that was submitted.
        found: i64,
    },
    /// An event or command was malformed (for example `previousEventId` not before its event).
    #[error("invalid write for {execution_arn}: {reason}")]
    InvalidWrite {
        /// The ARN.
        execution_arn: String,
        /// What was wrong.
        reason: String,
    },
    /// A stored value could not be read back (for example an unknown status spelling).
    #[error("unexpected value in database: {0}")]
    InvalidData(String),
    /// The writer thread is gone (the store was closed, or the thread could not start).
    #[error("the store's writer has stopped")]
    WriterStopped,
    /// Any other SQLite failure.
    #[error("database {path}: {context}: {source}")]
    Sqlite {
        /// The file.
        path: PathBuf,
        /// What the store was doing.
        context: &'static str,
        /// What SQLite said.
        #[source]
        source: Arc<rusqlite::Error>,
    },
}

impl StoreError {
    /// Classifies an SQLite error raised while working on `path`.
    pub(crate) fn from_sqlite(
        path: &std::path::Path,
        context: &'static str,
        busy_timeout: std::time::Duration,
        err: rusqlite::Error,
    ) -> StoreError {
        let path = path.to_path_buf();
        match err.sqlite_error_code() {
            Some(ErrorCode::NotADatabase) => StoreError::NotADatabase { path },
            Some(ErrorCode::DatabaseCorrupt) => StoreError::Corrupt { path },
            Some(ErrorCode::ReadOnly) => StoreError::ReadOnly { path },
            Some(ErrorCode::DiskFull) => StoreError::DiskFull { path },
            Some(ErrorCode::DatabaseBusy) | Some(ErrorCode::DatabaseLocked) => StoreError::Busy {
                path,
                timeout_ms: busy_timeout.as_millis(),
            },
            Some(ErrorCode::CannotOpen) | Some(ErrorCode::PermissionDenied) => {
                StoreError::CannotOpen {
                    path,
                    source: Arc::new(err),
                }
            }
            _ => StoreError::Sqlite {
                path,
                context,
                source: Arc::new(err),
            },
        }
    }
}
