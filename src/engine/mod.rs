//! The interpreter: runs one execution of a [`crate::asl::StateMachine`] state by state, with
//! AWS's input/output processing, Retry and Catch, Map and Parallel, and every timer on one
//! injectable [`clock::Clock`]. Events go out through [`history::History`] to a sink (the
//! store), in AWS's shape.

pub mod clock;
pub mod context;
pub mod execution;
pub mod history;
pub mod retry;
mod states;

pub use execution::{Engine, EngineOptions, Outcome, Status};
