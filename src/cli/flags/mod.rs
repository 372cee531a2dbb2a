//! The command line's flags, in two stages, as ripgrep's are (`crates/core/flags`).
//!
//! 1. **Low: what the user typed.** Each group of flags that several commands share is one
//!    clap struct here (`*Args`: [`DefinitionArgs`], [`DatabaseArgs`], [`BindingArgs`],
//!    [`EndpointArgs`], [`MockArgs`], [`AccountArgs`], [`RunOutputArgs`], [`MachineArgs`],
//!    [`S3Args`], [`PageArgs`], ...; the read commands' `--format`/`--output`/`--query` are
//!    [`crate::cli::output::OutputArgs`], beside the printing they choose). A command's
//!    own `*Args` struct (in `cli/COMMAND.rs`) flattens the groups it takes with
//!    `#[command(flatten)]`, so a shared flag is declared, documented and parsed once.
//! 2. **High: what the program runs on.** Each group has one `lower` that turns it into a typed,
//!    checked value ([`Definition`], [`Database`], [`Bindings`], `Endpoints`, [`MockCase`],
//!    [`Account`], [`RunFormat`], ...): the AWS CLI's `file://`, `DEFINITION#CASE` and `ARN#CASE`
//!    spellings undone, environment fallbacks (`SFN_LOCAL_DB`, `AWS_REGION`, `LAMBDA_ENDPOINT`,
//!    ...) applied, bindings checked against the machine. A command's `run` lowers its groups
//!    first, then calls the library with the values; it never looks at a raw flag again.
//!
//! A refusal while lowering is a [`FlagError`]: a usage error (exit 2), or AWS's error for the
//! operation the command stands for, printed as the AWS CLI prints it.
//!
//! ## Adding a flag that several commands share
//!
//! Add the field to the group's `*Args` struct in this folder (or a new group: a new file with
//! a `*Args` struct, flattened into each command that takes it), and turn it into a typed value
//! in that group's `lower`. Every command that flattens the group gets the flag, its help text
//! and its checks at once. A command whose wording of a shared flag must differ keeps the one
//! declaration and rewords it with `#[command(mut_args(flags::reword("flag_id", "...")))]` on
//! its own `*Args` struct (see `serve`'s `--region`; clap's `mut_arg` would move the flag to
//! the end of the shell completions). Flags only one command takes stay in that command's
//! `*Args`.

pub mod account;
pub mod bindings;
pub mod clock;
pub mod database;
pub mod definition;
pub mod endpoints;
pub mod input;
pub mod machines;
pub mod mocks;
pub mod output;
pub mod page;
pub mod s3;
pub mod substitutions;
pub mod templates;

pub use account::{Account, AccountArgs};
pub use bindings::{BindingArgs, Bindings, SupervisionArgs};
pub use clock::{ClockArgs, ClockKind};
pub use database::{Database, DatabaseArgs, DbArgs};
pub use definition::{
    load_reference, load_reference_warnings, Definition, DefinitionArgs, DefinitionSource,
    LoadedMachine, TemplateArgs,
};
pub use endpoints::EndpointArgs;
pub use input::InputArgs;
pub use machines::MachineArgs;
pub use mocks::{MockArgs, MockCase};
pub use output::{RunFormat, RunOutputArgs};
pub use page::PageArgs;
pub use s3::S3Args;
pub use substitutions::SubstitutionArgs;
pub use templates::TemplatesArgs;

use clap::Arg;
use std::process::ExitCode;

/// For `#[command(mut_args(...))]`: applies `edit` to the flag `id` only, in place (its place in
/// help and completions kept).
pub fn edit(id: &'static str, edit: impl Fn(Arg) -> Arg) -> impl FnMut(Arg) -> Arg {
    move |arg| if arg.get_id() == id { edit(arg) } else { arg }
}

/// For `#[command(mut_args(...))]`: a command's own wording of the shared flag `id` (one
/// paragraph, no final period, as clap shows a doc comment).
pub fn reword(id: &'static str, help: &'static str) -> impl FnMut(Arg) -> Arg {
    edit(id, move |arg| arg.help(help))
}

/// Why a command line could not be lowered into what a command runs on.
#[derive(Debug, thiserror::Error)]
pub enum FlagError {
    /// A flag's value is wrong, or a file it names cannot be used: `error: MESSAGE`, exit 2.
    #[error("{0}")]
    Usage(String),
    /// AWS's error for the operation the command stands for (a state machine the database does
    /// not know, ...), printed as the AWS CLI prints it, with its own exit status.
    #[error("An error occurred ({code}) when calling the {operation} operation: {message}")]
    Aws {
        /// AWS's operation (`StartExecution`, ...).
        operation: &'static str,
        /// AWS's error code (`StateMachineDoesNotExist`, ...).
        code: &'static str,
        /// The message.
        message: String,
        /// The exit status (see `cli::tasks::exit`).
        status: u8,
    },
}

impl FlagError {
    /// Prints the refusal on stderr and returns the command's exit status for it.
    pub fn exit(self) -> ExitCode {
        match self {
            FlagError::Usage(message) => {
                errln!("error: {message}");
                ExitCode::from(crate::cli::EXIT_USAGE)
            }
            FlagError::Aws {
                operation,
                code,
                message,
                status,
            } => crate::cli::tasks::refuse(operation, code, &message, status),
        }
    }
}

impl From<String> for FlagError {
    fn from(message: String) -> Self {
        FlagError::Usage(message)
    }
}

impl From<&str> for FlagError {
    fn from(message: &str) -> Self {
        FlagError::Usage(message.to_owned())
    }
}
