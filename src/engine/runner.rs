//! Starting an execution for real: the store row, the engine, the local task bindings and the
//! clock, on a single-threaded runtime. The CLI's `run` is a thin layer over [`run_execution`].

use crate::asl::StateMachine;
use crate::engine::clock::{Clock, SystemClock};
use crate::engine::context::ExecutionInfo;
use crate::engine::execution::{Engine, Outcome};
use crate::engine::history::History;
use crate::engine::store_sink::StoreSink;
use crate::engine::EngineOptions;
use crate::store::{NewExecution, Store, StoreError};
use crate::tasks::callback::{NoticeFn, TokenBroker};
use crate::tasks::LocalTasks;
use serde_json::Value;
use std::rc::Rc;
use std::sync::Arc;

/// Everything needed to start one execution.
pub struct RunRequest {
    /// The definition as written (stored with the execution).
    pub definition: String,
    /// The compiled machine.
    pub machine: Arc<StateMachine>,
    /// The execution's input.
    pub input: Value,
    /// Names and ARNs.
    pub info: ExecutionInfo,
    /// `--time-scale`.
    pub time_scale: f64,
    /// `--task` bindings.
    pub tasks: LocalTasks,
    /// Engine options (history cap).
    pub options: EngineOptions,
    /// Where to report task tokens issued, workers' stderr and exits (`run` prints to stderr).
    pub notice: NoticeFn,
}

/// Why an execution could not run to its end.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// An execution with this ARN exists already (AWS: ExecutionAlreadyExists).
    #[error("ExecutionAlreadyExists: an execution named '{0}' already exists for this state machine; choose another --name")]
    AlreadyExists(String),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The history could not be committed.
    #[error("the execution's history could not be written: {0}")]
    History(String),
    /// The runtime could not start.
    #[error("cannot start the runtime: {0}")]
    Runtime(#[from] std::io::Error),
}

/// The characters AWS forbids in state machine and execution names.
const FORBIDDEN_NAME_CHARS: &str = "<>{}[]?*\"#%\\^|~`$&,;:/";

/// Checks a state machine or execution name as AWS does: 1 to 80 characters, no whitespace,
/// no control characters, none of `< > { } [ ] ? * " # % \ ^ | ~ ` $ & , ; : /`.
pub fn check_name(what: &str, name: &str) -> Result<(), String> {
    let len = name.chars().count();
    if len == 0 || len > 80 {
        return Err(format!("{what} '{name}' must be 1 to 80 characters long"));
    }
    if let Some(c) = name
        .chars()
        .find(|c| c.is_whitespace() || c.is_control() || FORBIDDEN_NAME_CHARS.contains(*c))
    {
        return Err(format!(
            "{what} '{name}' contains the character {c:?}, which AWS does not allow in names"
        ));
    }
    Ok(())
}

/// Creates the execution in the store and runs it to its end in this thread.
pub fn run_execution(store: Arc<Store>, request: RunRequest) -> Result<Outcome, RunError> {
    if store.execution(&request.info.execution_arn)?.is_some() {
        return Err(RunError::AlreadyExists(request.info.name.clone()));
    }
    let timeout_at = request
        .machine
        .timeout_seconds
        .map(|t| request.info.start_time + (t as i64) * 1000);
    store
        .create_execution(NewExecution {
            execution_arn: request.info.execution_arn.clone(),
            name: request.info.name.clone(),
            state_machine_arn: request.info.state_machine_arn.clone(),
            state_machine_name: request.info.state_machine_name.clone(),
            definition: request.definition,
            input: request.input.to_string(),
            start_date_ms: request.info.start_time,
            role_arn: Some(request.info.role_arn.clone()),
            timeout_at_ms: timeout_at,
            position: None,
            owner: None,
            lease_expires_at_ms: None,
            events: Vec::new(),
        })
        .wait_blocking()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock::new(request.time_scale));
    let sink = StoreSink::new(store.clone(), &request.info.execution_arn);
    let history = History::new(1, Box::new(sink), request.options.max_history_events);
    let broker = TokenBroker::new(
        store.clone(),
        &request.info.execution_arn,
        request.tasks.commands.clone(),
        request.notice,
    );
    let engine = Engine::new(
        request.machine,
        request.info,
        request.input,
        history,
        clock,
        Rc::new(request.tasks),
    )
    .with_tokens(Rc::new(broker));
    let local = tokio::task::LocalSet::new();
    let outcome = local.block_on(&runtime, engine.run());
    let committed = engine.committed();
    local
        .block_on(&runtime, committed)
        .map_err(RunError::History)?;
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_aws_rules() {
        assert!(check_name("execution name", "run-1_a.b").is_ok());
        assert!(check_name("execution name", "").is_err());
        assert!(check_name("execution name", "has space").is_err());
        assert!(check_name("execution name", "a:b").is_err());
        assert!(check_name("execution name", &"x".repeat(81)).is_err());
    }
}
