//! Where the database is: `--db`, else `SFN_LOCAL_DB`, else the user's XDG state directory.

use crate::store::{Durability, Store, StoreOptions};
use std::path::PathBuf;
use std::sync::Arc;

/// The database path to use.
pub fn resolve(flag: Option<PathBuf>) -> PathBuf {
    if let Some(p) = flag {
        return p;
    }
    if let Some(p) = std::env::var_os("SFN_LOCAL_DB").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    let state_home = std::env::var_os("XDG_STATE_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))
        .unwrap_or_else(|| PathBuf::from("."));
    state_home.join("sfn-local").join("sfn-local.db")
}

/// `--durability`: how hard each commit tries to survive a crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum DurabilityArg {
    /// SQLite `synchronous=NORMAL` (WAL): survives the process being killed at any moment;
    /// a power loss or OS crash may lose the last commits (never corrupts the database).
    #[default]
    Normal,
    /// SQLite `synchronous=FULL`: every commit also survives power loss, at one fsync per
    /// commit (about 4 ms on this project's CI disks).
    Full,
}

/// Opens the database with the default durability, or says why not.
pub fn open(flag: Option<PathBuf>) -> Result<Arc<Store>, String> {
    open_with(flag, DurabilityArg::default())
}

/// Opens the database, or says why not.
pub fn open_with(flag: Option<PathBuf>, durability: DurabilityArg) -> Result<Arc<Store>, String> {
    let path = resolve(flag);
    let options = StoreOptions {
        durability: match durability {
            DurabilityArg::Normal => Durability::Normal,
            DurabilityArg::Full => Durability::Full,
        },
        ..StoreOptions::default()
    };
    Store::open(&path, options)
        .map(Arc::new)
        .map_err(|e| format!("error: {e}"))
}
