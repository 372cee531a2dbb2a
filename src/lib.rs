//! sfn-local: a local runtime and validator for the Amazon States Language.
//!
//! Data flows one way through the layers:
//!
//! - [`asl`]: the language. JSON text is parsed once into a typed [`asl::StateMachine`], with every
//!   path, payload template, intrinsic call and Choice rule compiled; static validation reports
//!   AWS's diagnostics at JSON pointers, which [`asl::source`] maps to lines and columns.
//! - [`engine`]: interprets one execution state by state, every timer on one injectable clock,
//!   writing AWS-shaped history events.
//! - [`tasks`]: what a Task resource means locally (a bound command, later callbacks,
//!   activities and mocks).
//! - `store`: SQLite, the single source of truth.
//! - `cli`: the commands; no logic that the library does not own.
//!
//! ```
//! let text = r#"{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}"#;
//! let report = sfn_local::asl::validate_text(text, sfn_local::asl::MachineType::Standard);
//! assert!(!report.has_errors());
//! ```
#![deny(missing_docs)]

pub mod api;
pub mod asl;
pub mod cli;
pub mod engine;
pub mod store;
pub mod tasks;
