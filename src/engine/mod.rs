//! The interpreter: runs one execution of a [`crate::asl::StateMachine`] state by state, with
//! AWS's input/output processing, Retry and Catch, Map and Parallel, and every timer on one
//! injectable [`crate::clock::Clock`]. Events go out through [`history::History`] to a sink (the
//! store), in AWS's shape.

pub mod children;
pub mod context;
pub mod diagnosis;
pub(crate) mod evaluation;
pub mod execution;
pub mod history;
pub mod java_json;
mod lanes;
pub mod map_journal;
pub mod owners;
pub mod redrive;
mod replay;
pub mod retry;
pub mod runner;
mod states;
pub mod stopping;
pub mod store_sink;
pub mod test_state;
pub(crate) mod variables;
pub mod visits;

pub use execution::{Engine, EngineOptions, Outcome, Status};

use crate::asl::StateMachine;
use crate::clock::Clock;
use crate::engine::context::ExecutionInfo;
use crate::engine::history::{History, HistoryEvent, MemorySink};
use crate::tasks::TaskRunner;
use std::rc::Rc;
use std::sync::Arc;

/// Runs an execution with its history kept in memory: for tests, the conformance harness and
/// anything that does not need the store. Returns how it ended and every event.
pub async fn run_in_memory(
    machine: Arc<StateMachine>,
    info: ExecutionInfo,
    input: serde_json::Value,
    clock: Arc<dyn Clock>,
    tasks: Rc<dyn TaskRunner>,
    options: EngineOptions,
) -> (Outcome, Vec<HistoryEvent>) {
    let sink = MemorySink::default();
    let outcome = run_into(&sink, machine, info, input, clock, tasks, options).await;
    let events = sink.events.take();
    (outcome, events)
}

/// [`run_in_memory`] writing to `sink`, which others may read while the run goes on (the
/// engine hands it every event before a Task's effects).
pub async fn run_into(
    sink: &MemorySink,
    machine: Arc<StateMachine>,
    info: ExecutionInfo,
    input: serde_json::Value,
    clock: Arc<dyn Clock>,
    tasks: Rc<dyn TaskRunner>,
    options: EngineOptions,
) -> Outcome {
    let history = History::new(1, Box::new(sink.clone()), options.max_history_events)
        .with_compat(options.compat);
    let engine = Engine::new(machine, info, input, history, clock, tasks);
    let outcome = engine.run().await;
    let _ = engine.committed().await;
    drop(engine);
    outcome
}
