//! sfn-local: a local runtime and validator for the Amazon States Language.
//!
//! Data flows one way through the layers (`cli` → `engine` → `tasks` → `store`, all reading
//! `asl`):
//!
//! - [`asl`]: the language. JSON text is parsed once into a typed [`asl::StateMachine`], with every
//!   path, payload template, intrinsic call, Choice rule and JSONata expression compiled; static
//!   validation reports AWS's diagnostics at JSON pointers, which [`asl::source`] maps to lines
//!   and columns only when reporting.
//! - [`engine`]: interprets one execution state by state, every timer on one injectable clock,
//!   writing AWS-shaped history events; resumes an execution by replaying its stored history.
//! - [`tasks`]: what a Task resource means locally: a bound command, a callback or activity worker
//!   answering with a task token, or a mocked response.
//! - [`clock`]: every clock the engine and the tasks read (real, scaled, manual); below both,
//!   since deadlines are shared by the engine's timers and the token broker.
//! - [`store`]: SQLite, the single source of truth: executions, history, task tokens, leases.
//! - [`api`]: AWS's response shapes (DescribeExecution, GetExecutionHistory, ...) from stored
//!   records, and ValidateStateMachineDefinition's diagnostics, shared by every face.
//! - [`coverage`]: which states, transitions and error paths stored executions took, reported
//!   as text, JSON or LCOV on the definition file's lines.
//! - [`loader`]: the one reader of state machines every face uses: definition files (JSON,
//!   YAML), SAM/CloudFormation templates and CDK's `cdk.out`, named `FILE`, `FILE#LogicalId`,
//!   `cdk.out#Stack/LogicalId` alike everywhere.
//! - [`replayer`]: a recorded history (AWS's or ours) re-run against a definition with the
//!   recording's input, Task answers and time, and compared event by event (`sfn-local replay`).
//! - [`cli`]: the commands; no logic that the library does not own.
//! - [`lsp`]: the language server (`sfn-local lsp`): `validate`'s diagnostics, navigation and
//!   edits in the editor, from the same validator and source maps.
//! - [`web`]: what the HTTP faces (`serve`, the console) share to be safe to leave running: the
//!   `Host` allow-list, timeouts and a connection cap.
//! - [`memory`]: the binary's allocator, metering what one JSONata evaluation holds.
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
pub mod clock;
pub mod console;
pub mod coverage;
pub mod depth;
pub mod engine;
pub mod graph;
pub mod limits;
pub mod loader;
pub mod lsp;
pub mod memory;
pub mod random;
pub mod replayer;
pub mod serve;
pub mod store;
pub mod suggest;
pub mod tasks;
pub mod web;
