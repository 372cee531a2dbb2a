//! The errors a running state raises: AWS's error names (`States.*` or a worker's own) with a cause.
//!
//! One [`StatesError`] flows through evaluation and the engine. Retry and Catch match it by name;
//! a heartbeat expiry carries [`StatesError::heartbeat`] so that `States.HeartbeatTimeout` matches
//! only it, while history and output report `States.Timeout` as AWS does.

use std::fmt;

/// The predefined error names.
pub mod names {
    /// Matches any error but `States.Runtime` and terminal data-limit failures.
    pub const ALL: &str = "States.ALL";
    /// A task ran past `TimeoutSeconds` or went silent past `HeartbeatSeconds`.
    pub const TIMEOUT: &str = "States.Timeout";
    /// A heartbeat expiry (matches in Retry/Catch only; reported as `States.Timeout`).
    pub const HEARTBEAT_TIMEOUT: &str = "States.HeartbeatTimeout";
    /// Any task failure but a timeout.
    pub const TASK_FAILED: &str = "States.TaskFailed";
    /// Insufficient privileges.
    pub const PERMISSIONS: &str = "States.Permissions";
    /// ResultPath could not be applied.
    pub const RESULT_PATH_MATCH_FAILURE: &str = "States.ResultPathMatchFailure";
    /// A `.$` path in a payload template found nothing.
    pub const PARAMETER_PATH_FAILURE: &str = "States.ParameterPathFailure";
    /// A JSONata expression failed.
    pub const QUERY_EVALUATION_ERROR: &str = "States.QueryEvaluationError";
    /// A Parallel branch failed.
    pub const BRANCH_FAILED: &str = "States.BranchFailed";
    /// No Choice rule matched and there is no Default.
    pub const NO_CHOICE_MATCHED: &str = "States.NoChoiceMatched";
    /// An intrinsic function failed.
    pub const INTRINSIC_FAILURE: &str = "States.IntrinsicFailure";
    /// A Map had more failed items than tolerated.
    pub const EXCEED_TOLERATED_FAILURE_THRESHOLD: &str = "States.ExceedToleratedFailureThreshold";
    /// A Map ItemReader failed.
    pub const ITEM_READER_FAILED: &str = "States.ItemReaderFailed";
    /// A Map ResultWriter failed.
    pub const RESULT_WRITER_FAILED: &str = "States.ResultWriterFailed";
    /// A payload over 256 KiB.
    pub const DATA_LIMIT_EXCEEDED: &str = "States.DataLimitExceeded";
    /// An unprocessable failure; never retried or caught.
    pub const RUNTIME: &str = "States.Runtime";

    /// Every `States.*` name AWS defines (what `ErrorEquals` may name).
    pub const PREDEFINED: &[&str] = &[
        ALL,
        TIMEOUT,
        HEARTBEAT_TIMEOUT,
        TASK_FAILED,
        PERMISSIONS,
        RESULT_PATH_MATCH_FAILURE,
        PARAMETER_PATH_FAILURE,
        QUERY_EVALUATION_ERROR,
        BRANCH_FAILED,
        NO_CHOICE_MATCHED,
        INTRINSIC_FAILURE,
        EXCEED_TOLERATED_FAILURE_THRESHOLD,
        ITEM_READER_FAILED,
        RESULT_WRITER_FAILED,
        DATA_LIMIT_EXCEEDED,
        RUNTIME,
        "States.Http.Socket",
    ];
}

/// An error raised while a state runs: a name (`States.*` or any worker-chosen string) and a
/// cause. Both may be absent when a worker's `send-task-failure` gave neither.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatesError {
    /// The error name; `None` only when a worker sent none.
    pub error: Option<String>,
    /// The human-readable cause.
    pub cause: Option<String>,
    /// Set on a heartbeat expiry, so `States.HeartbeatTimeout` can match it.
    pub heartbeat: bool,
}

impl StatesError {
    /// An error with a name and a cause.
    pub fn new(error: impl Into<String>, cause: impl Into<String>) -> Self {
        StatesError {
            error: Some(error.into()),
            cause: Some(cause.into()),
            heartbeat: false,
        }
    }

    /// `States.Runtime` with a cause.
    pub fn runtime(cause: impl Into<String>) -> Self {
        Self::new(names::RUNTIME, cause)
    }

    /// `States.Timeout` with no cause (as AWS records task timeouts).
    pub fn timeout() -> Self {
        StatesError {
            error: Some(names::TIMEOUT.to_owned()),
            cause: None,
            heartbeat: false,
        }
    }

    /// `States.Timeout` raised by a heartbeat expiry.
    pub fn heartbeat_timeout() -> Self {
        StatesError {
            heartbeat: true,
            ..Self::timeout()
        }
    }

    /// The error name, or the empty string when there is none.
    pub fn name(&self) -> &str {
        self.error.as_deref().unwrap_or("")
    }

    /// Whether Retry and Catch may act on this error at all.
    pub fn is_catchable(&self) -> bool {
        self.name() != names::RUNTIME
    }

    /// Whether one `ErrorEquals` entry matches this error.
    ///
    /// `States.ALL` matches everything catchable; `States.TaskFailed` everything but timeouts
    /// and other `States.*` names; `States.Timeout` both kinds of expiry;
    /// `States.HeartbeatTimeout` only a heartbeat expiry.
    pub fn matches(&self, pattern: &str) -> bool {
        if !self.is_catchable() {
            return false;
        }
        let name = self.name();
        match pattern {
            names::ALL => true,
            names::HEARTBEAT_TIMEOUT => self.heartbeat || name == names::HEARTBEAT_TIMEOUT,
            names::TASK_FAILED => name == names::TASK_FAILED || !name.starts_with("States."),
            p => p == name,
        }
    }

    /// The Error Output object a Catch places at its ResultPath: `{"Error": ..., "Cause": ...}`.
    ///
    /// A timeout has no cause in history, but AWS hands a Catch `"Cause": ""` for it; a worker's
    /// `send-task-failure` without error or cause gives JSON nulls (both recorded on AWS).
    pub fn to_error_output(&self) -> serde_json::Value {
        let cause = match (&self.cause, self.name()) {
            (None, names::TIMEOUT) => Some(String::new()),
            (c, _) => c.clone(),
        };
        let mut m = serde_json::Map::new();
        m.insert("Error".into(), self.error.clone().into());
        m.insert("Cause".into(), cause.into());
        serde_json::Value::Object(m)
    }
}

impl fmt::Display for StatesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())?;
        if let Some(c) = &self.cause {
            write!(f, ": {c}")?;
        }
        Ok(())
    }
}

impl std::error::Error for StatesError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heartbeat_timeout_matches_only_heartbeat_expiry() {
        assert!(StatesError::heartbeat_timeout().matches("States.HeartbeatTimeout"));
        assert!(StatesError::heartbeat_timeout().matches("States.Timeout"));
        assert!(!StatesError::timeout().matches("States.HeartbeatTimeout"));
        assert!(StatesError::timeout().matches("States.Timeout"));
        assert_eq!(StatesError::heartbeat_timeout().name(), "States.Timeout");
    }

    #[test]
    fn task_failed_matches_custom_errors_not_timeouts() {
        assert!(StatesError::new("MyError", "x").matches("States.TaskFailed"));
        assert!(!StatesError::timeout().matches("States.TaskFailed"));
        assert!(!StatesError::runtime("x").matches("States.ALL"));
    }
}
