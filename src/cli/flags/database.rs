//! `--db PATH` (and `--durability` for commands that run executions): the database a command
//! works in (see [`crate::cli::db`] for where it is when `--db` is not given).

use super::FlagError;
use crate::cli::db::{self, DurabilityArg, OpenExistingError};
use crate::store::Store;
use clap::Args;
use std::path::PathBuf;
use std::sync::Arc;

/// The database of commands that run executions, and how hard its commits try.
#[derive(Debug, Clone, Args)]
pub struct DatabaseArgs {
    /// The database (default: SFN_LOCAL_DB, else the XDG state directory).
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// How hard each commit tries to survive a crash (see the README).
    #[arg(long, value_enum, default_value_t = DurabilityArg::Normal)]
    pub durability: DurabilityArg,
}

/// The database of commands that read executions or answer them (their commits have the
/// default durability).
#[derive(Debug, Clone, Args)]
pub struct DbArgs {
    /// The database (default: SFN_LOCAL_DB, else the XDG state directory).
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
}

impl DbArgs {
    /// Where the database is.
    pub fn lower(&self) -> Database {
        Database {
            flag: self.db.clone(),
            path: db::resolve(self.db.clone()),
            durability: DurabilityArg::default(),
        }
    }
}

/// The database, lowered: its path (the flag, `SFN_LOCAL_DB`, or the XDG state directory) and
/// durability. Nothing is opened or created until a command asks.
#[derive(Debug, Clone)]
pub struct Database {
    /// `--db` as given (`None`: the default location, created owner-only).
    flag: Option<PathBuf>,
    /// Where the database is.
    pub path: PathBuf,
    /// `--durability`.
    pub durability: DurabilityArg,
}

impl DatabaseArgs {
    /// Where the database is and how to open it.
    pub fn lower(&self) -> Database {
        Database {
            flag: self.db.clone(),
            path: db::resolve(self.db.clone()),
            durability: self.durability,
        }
    }
}

impl Database {
    /// `--db` as the user gave it, for the helpers of [`crate::cli::db`].
    pub fn flag(&self) -> Option<PathBuf> {
        self.flag.clone()
    }

    /// Opens the database for writing, creating it if needed.
    pub fn open(&self) -> Result<Arc<Store>, FlagError> {
        db::open_with(self.flag(), self.durability)
            .map_err(|e| FlagError::Usage(e.strip_prefix("error: ").unwrap_or(&e).to_owned()))
    }

    /// Opens the database for writing; it must exist (a token or an execution cannot be in a
    /// database that was never created).
    pub fn open_existing(&self) -> Result<Arc<Store>, OpenExistingError> {
        db::open_existing(self.flag())
    }

    /// Opens the database read-only; it must exist.
    pub fn open_for_reading(&self) -> Result<Arc<Store>, OpenExistingError> {
        db::open_for_reading(self.flag())
    }
}
