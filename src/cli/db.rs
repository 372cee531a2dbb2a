//! Where the database is: `--db`, else `SFN_LOCAL_DB`, else the user's XDG state directory.

use crate::store::{Store, StoreOptions};
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

/// Opens the database, or says why not on stderr.
pub fn open(flag: Option<PathBuf>) -> Result<Arc<Store>, String> {
    let path = resolve(flag);
    Store::open(&path, StoreOptions::default())
        .map(Arc::new)
        .map_err(|e| format!("error: {e}"))
}
