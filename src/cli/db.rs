//! Where the database is: `--db`, else `SFN_LOCAL_DB`, else the user's XDG state directory.

use crate::store::{Durability, Store, StoreError, StoreOptions};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

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

/// Why a database that must exist could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenExistingError {
    /// There is no file at the path: nothing has run against this database.
    #[error("there is no database at {} (nothing has run with this --db or SFN_LOCAL_DB)", .0.display())]
    Missing(PathBuf),
    /// The file is there but could not be opened.
    #[error("{0}")]
    Failed(String),
}

/// Opens the database for commands that only read (describe, history, list): read-only, never
/// creating a file or folder (a mistyped `--db` is an error naming the path, not a fresh empty
/// database), and readable when the file cannot be written or another process holds its write
/// lock. Only a database of an older schema is opened for writing, to migrate it.
pub fn open_for_reading(flag: Option<PathBuf>) -> Result<Arc<Store>, OpenExistingError> {
    let path = resolve(flag);
    if !path.is_file() {
        return Err(OpenExistingError::Missing(path));
    }
    let options = options(DurabilityArg::default());
    match Store::open_read_only(&path, options) {
        Ok(store) => Ok(Arc::new(store)),
        Err(StoreError::SchemaTooOld { .. }) => Store::open(&path, options)
            .map(Arc::new)
            .map_err(|e| OpenExistingError::Failed(e.to_string())),
        Err(e) => Err(OpenExistingError::Failed(e.to_string())),
    }
}

/// Opens a database that must already exist for writing (answers to task tokens, stops): a
/// token or an execution cannot be in a database that was never created.
pub fn open_existing(flag: Option<PathBuf>) -> Result<Arc<Store>, OpenExistingError> {
    let path = resolve(flag);
    if !path.is_file() {
        return Err(OpenExistingError::Missing(path));
    }
    Store::open(&path, options(DurabilityArg::default()))
        .map(Arc::new)
        .map_err(|e| OpenExistingError::Failed(e.to_string()))
}

/// A database path that is a symbolic link to a file not there yet: creates that file (an
/// empty database at the current schema, [`crate::store::create_database`]) and its missing
/// folders, owner-only like every new database and its folders (it holds task tokens, inputs
/// and outputs; SQLite gives its `-wal` and `-shm` files the same mode). [`Store::open`]
/// creates any other new file itself, the same way; a link's end it leaves to SQLite, which
/// follows the link and used to create the file with the default mode, 0644. A folder that
/// exists is left as it is. Failures are left to the open, which names the path.
fn create_link_target(path: &std::path::Path, durable: bool) {
    use std::os::unix::fs::DirBuilderExt;
    if path.exists() {
        return;
    }
    let Some(target) = link_target(path) else {
        return;
    };
    if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
        if !parent.exists() {
            let _ = std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent);
        }
    }
    let _ = crate::store::create_database(&target, durable);
}

/// Where a chain of symbolic links ends (relative links read from their own folder); `None`
/// when `path` is no link.
fn link_target(path: &std::path::Path) -> Option<PathBuf> {
    let mut at = path.to_path_buf();
    // The kernel's own limit on a chain of links.
    for _ in 0..40 {
        // The end of the chain: a file, or nothing yet.
        let link = std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink());
        if !link {
            return (at != path).then_some(at);
        }
        let next = std::fs::read_link(&at).ok()?;
        at = match at.parent() {
            Some(dir) if next.is_relative() => dir.join(next),
            _ => next,
        };
    }
    None
}

/// Opens the database, or says why not.
pub fn open_with(flag: Option<PathBuf>, durability: DurabilityArg) -> Result<Arc<Store>, String> {
    let path = resolve(flag);
    let options = options(durability);
    create_link_target(&path, options.durability == crate::store::Durability::Full);
    Store::open(&path, options)
        .map(Arc::new)
        .map_err(|e| format!("error: {e}"))
}

/// The store options: `durability`, and the environment's overrides:
/// - `SFN_LOCAL_BUSY_TIMEOUT_MS`: how long to wait for another process's write lock before
///   failing with "stayed locked by another process" (default 30000);
/// - `SFN_LOCAL_READ_ONLY=1`: open the file without write access, as on a read-only mount
///   (for tests: root writes through file permissions);
/// - `SFN_LOCAL_MAX_PAGE_COUNT`: cap the database's size in pages (`PRAGMA max_page_count`),
///   so a test can fill the "disk".
fn options(durability: DurabilityArg) -> StoreOptions {
    let env_u64 = |name: &str| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    let defaults = StoreOptions::default();
    StoreOptions {
        durability: match durability {
            DurabilityArg::Normal => Durability::Normal,
            DurabilityArg::Full => Durability::Full,
        },
        busy_timeout: env_u64("SFN_LOCAL_BUSY_TIMEOUT_MS")
            .map(Duration::from_millis)
            .unwrap_or(defaults.busy_timeout),
        max_page_count: env_u64("SFN_LOCAL_MAX_PAGE_COUNT")
            .and_then(|p| u32::try_from(p).ok())
            .filter(|p| *p > 0),
        read_only_file: std::env::var_os("SFN_LOCAL_READ_ONLY")
            .is_some_and(|v| !v.is_empty() && v != "0"),
    }
}
