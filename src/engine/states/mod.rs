//! One file per state type, each an `impl Engine` block with the state's semantics.

mod callback;
mod choice;
mod fail;
mod item_reader;
mod map;
mod mocked;
mod parallel;
mod pass;
mod task;
mod wait;

pub(crate) use map::Tolerance;
