//! The store: SQLite as the single source of truth, and the only module that speaks SQL.
//!
//! - Writes go to one writer thread (`writer`) that owns the write connection and commits
//!   whatever is queued in one transaction. [`Store::create_execution`] and [`Store::append`] return
//!   a [`Commit`] at once; the engine can submit many transitions and wait only on the last one
//!   before an external effect (printing output, starting a worker).
//! - Reads ([`Store::execution`], [`Store::history`], [`Store::list_executions`]) use separate
//!   read-only connections; WAL lets them run while the writer commits.
//! - Other processes (`send-task-success` and friends) open the same file and write with short
//!   IMMEDIATE transactions; [`Store::data_version`] tells a runner that someone committed.
//! - The schema is versioned (`migrations`); a database from a newer sfn-local is refused.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use sfn_local::store::{Append, Finish, ExecutionStatus, NewEvent, NewExecution, Store, StoreOptions};
//! let dir = tempfile::tempdir()?;
//! let store = Store::open(dir.path().join("state.db"), StoreOptions::default())?;
//! let arn = "arn:aws:states:us-east-1:123456789012:execution:Hello:run-1";
//! let event = |id, event_type: &str| NewEvent {
//!     id, previous_event_id: id - 1, timestamp_ms: 0, event_type: event_type.to_owned().into(), replay_key: None, details: None,
//! };
//! let started = store.create_execution(NewExecution {
//!     execution_arn: arn.into(),
//!     name: "run-1".into(),
//!     state_machine_arn: "arn:aws:states:us-east-1:123456789012:stateMachine:Hello".into(),
//!     state_machine_name: "Hello".into(),
//!     definition: r#"{"StartAt":"A","States":{"A":{"Type":"Succeed"}}}"#.into(),
//!     input: "{}".into(),
//!     start_date_ms: 0,
//!     role_arn: None,
//!     timeout_at_ms: None,
//!     position: None,
//!     owner: None,
//!     lease_expires_at_ms: None,
//!     run_config: None,
//!     state_machine_version_arn: None,
//!     state_machine_alias_arn: None,
//!     events: vec![event(1, "ExecutionStarted")],
//! });
//! let done = store.append(Append {
//!     execution_arn: arn.into(),
//!     events: vec![event(2, "SucceedStateEntered"), event(3, "SucceedStateExited"), event(4, "ExecutionSucceeded")],
//!     position: None,
//!     finish: Some(Finish { status: ExecutionStatus::Succeeded, output: Some("{}".into()), error: None, cause: None, stop_date_ms: 1 }),
//!     owner: None,
//! });
//! started.wait_blocking()?; // not needed: commits apply in order, so waiting on the last is enough
//! done.wait_blocking()?;
//! let record = store.execution("run-1")?.expect("stored");
//! assert_eq!(record.status, ExecutionStatus::Succeeded);
//! assert_eq!(store.history(arn, false)?.len(), 4);
//! # Ok(()) }
//! ```

mod cached;
mod error;
mod events;
mod executions;
mod histories;
mod leases;
mod lock;
mod map_runs;
mod migrations;
mod redrive;
mod resources;
mod template;
mod tokens;
mod watch;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, MAIN_DB};

pub use error::{Result, StoreError};
pub use events::{details_key, EventRecord, NewEvent, ReplayKey, KEY_SEPARATOR};
pub use executions::{ExecutionRecord, ExecutionStatus, Finish, NewExecution, UnknownStatus};
pub use histories::ExecutionHead;
pub use leases::Takeover;
pub use map_runs::{
    MapRunChange, MapRunChild, MapRunCounts, MapRunExecution, MapRunRecord, MapRunSettings,
    MapRunUpdate, NewMapRun,
};
pub use migrations::SCHEMA_VERSION;
pub use redrive::{redrivable, NotRedrivable, Redriven, REDRIVABLE_PERIOD_MS};
pub use resources::{
    ActivityRecord, AliasRecord, KnownMachine, Registered, StateMachineRecord, VersionRecord,
};
pub use template::create as create_database;
pub use tokens::{
    ActivityTask, AnswerError, Expiry, NewTaskToken, StopOutcome, StopRequest, TaskAnswer,
    TokenKind, TokenRecord, TokenStatus,
};
pub use watch::{Hook, Waiter, LOOK_EVERY, LOOK_IDLE};
pub use writer::{Append, Commit};

use executions::FindError;
use migrations::SchemaCheck;
use writer::{Command, Writer, WriterSite};

/// How hard a commit tries to survive a crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// `synchronous=FULL`: a commit survives power loss (one fsync per batch).
    #[default]
    Full,
    /// `synchronous=NORMAL`: a commit survives the process crashing; the last batches may be lost
    /// on power loss. No fsync on commit in WAL mode.
    Normal,
}

impl Durability {
    /// SQLite's `synchronous` level for it.
    fn synchronous(self) -> &'static str {
        match self {
            Durability::Full => "FULL",
            Durability::Normal => "NORMAL",
        }
    }
}

/// How to open the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreOptions {
    /// fsync policy.
    pub durability: Durability,
    /// How long to wait for another process's write lock before failing with [`StoreError::Busy`].
    /// The default is long (30 s): under a burst of writer processes on a loaded machine a
    /// worker's answer should wait its turn, not be lost.
    pub busy_timeout: Duration,
    /// Caps the database at this many pages (`PRAGMA max_page_count`) on every write
    /// connection: a write that would grow it further fails as [`StoreError::DiskFull`], as on
    /// a full disk. For tests; `None` leaves SQLite's limit.
    pub max_page_count: Option<u32>,
    /// Opens the file without write access, as on a read-only mount: [`Store::open`] then fails
    /// with [`StoreError::ReadOnly`]. For tests (root writes through file permissions).
    pub read_only_file: bool,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            durability: Durability::Full,
            busy_timeout: Duration::from_secs(30),
            max_page_count: None,
            read_only_file: false,
        }
    }
}

/// Read connections kept for reuse; more are opened on demand and closed after use.
const READ_POOL_SIZE: usize = 4;

/// The execution store. `Send + Sync`: share it (e.g. in an `Arc`) between tasks and threads.
///
/// Dropping it applies everything already submitted, then closes the database.
pub struct Store {
    path: PathBuf,
    options: StoreOptions,
    /// `None` for a read-only store.
    writer: Option<Writer>,
    readers: Mutex<Vec<Connection>>,
    /// Kept open so `PRAGMA data_version` compares against this connection's last look.
    version_watch: Mutex<Option<Connection>>,
    /// For short IMMEDIATE transactions whose caller needs the answer now (tokens, stops).
    side_writer: Mutex<Option<Connection>>,
    /// Shared with the writer (see [`writer::WriterSite::gate`]).
    write_gate: Arc<Mutex<()>>,
    /// Wakes waiting executions when their token or stop request changes (see [`watch`]).
    watch: watch::Watch,
    /// The change log's last row when the store opened, read on the write connection (see
    /// [`Store::open_watcher`]); `None` for a read-only store.
    log_at_open: Option<i64>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.path)
            .field("options", &self.options)
            .field("read_only", &self.writer.is_none())
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Opens (creating the file and its parent directories if needed) and migrates the database,
    /// then starts the writer thread.
    pub fn open(path: impl AsRef<Path>, options: StoreOptions) -> Result<Store> {
        let path = path.as_ref().to_path_buf();
        create_parent(&path)?;
        // A file system without hard links (or any other failure here) leaves the file to
        // SQLite, which creates it empty; the migrations then build the schema.
        let copied = !options.read_only_file
            && template::create(&path, options.durability == Durability::Full).unwrap_or(false);
        let sqlite = |context, e| StoreError::from_sqlite(&path, context, options.busy_timeout, e);
        let flags = if options.read_only_file {
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX
        } else {
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
        };
        let conn = Connection::open_with_flags(&path, flags).map_err(|e| sqlite("open", e))?;
        conn.busy_timeout(options.busy_timeout)
            .map_err(|e| sqlite("set busy timeout", e))?;
        // Reading the header first: a foreign file fails here as "not a database", and a newer
        // schema is refused before we change anything (even the journal mode).
        let schema = lock::retry_busy(options.busy_timeout, || migrations::check(&conn))
            .map_err(|e| sqlite("read schema version", e))?;
        if let SchemaCheck::Newer(found) = schema {
            return Err(StoreError::SchemaTooNew {
                path: path.clone(),
                found,
                supported: SCHEMA_VERSION,
            });
        }
        // SQLite silently opens a file it may not write read-only; say so now, not at first commit.
        if conn.is_readonly(MAIN_DB).unwrap_or(false) {
            return Err(StoreError::ReadOnly { path });
        }
        let fresh = configure_writer(&conn, &options, &schema, copied)
            .map_err(|e| sqlite("configure connection", e))?;
        migrate_older(&conn, &schema, &path, options.busy_timeout)?;
        let site = WriterSite {
            path: path.clone(),
            busy_timeout: options.busy_timeout,
            opened: writer::file_identity(&path),
            gate: Arc::default(),
        };
        let write_gate = site.gate.clone();
        if fresh {
            start_wal_unsynced(&conn, copied, options.durability)
                .map_err(|e| sqlite("configure connection", e))?;
        }
        let log_at_open = watch::last_logged(&conn).ok();
        let writer = Writer::new(conn, site);
        Ok(Store {
            path,
            options,
            writer: Some(writer),
            readers: Mutex::new(Vec::new()),
            version_watch: Mutex::new(None),
            side_writer: Mutex::new(None),
            write_gate,
            watch: watch::Watch::default(),
            log_at_open,
        })
    }

    /// Opens an existing database for reading only (describe, history, list). Nothing is created
    /// or migrated; writes answer [`StoreError::ReadOnly`].
    pub fn open_read_only(path: impl AsRef<Path>, options: StoreOptions) -> Result<Store> {
        let store = Store {
            path: path.as_ref().to_path_buf(),
            options,
            writer: None,
            readers: Mutex::new(Vec::new()),
            version_watch: Mutex::new(None),
            side_writer: Mutex::new(None),
            write_gate: Arc::default(),
            watch: watch::Watch::default(),
            log_at_open: None,
        };
        let conn = store.open_reader()?;
        match migrations::check(&conn).map_err(|e| store.sqlite("read schema version", e))? {
            SchemaCheck::Current => {}
            SchemaCheck::Newer(found) => {
                return Err(StoreError::SchemaTooNew {
                    path: store.path.clone(),
                    found,
                    supported: SCHEMA_VERSION,
                })
            }
            SchemaCheck::Older(found) => {
                return Err(StoreError::SchemaTooOld {
                    path: store.path.clone(),
                    found,
                    supported: SCHEMA_VERSION,
                })
            }
        }
        store.give_back(conn);
        Ok(store)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    // ---- writes -------------------------------------------------------------------------------

    /// Submits a new execution (row and first events, one transaction). Refused with
    /// [`StoreError::ExecutionAlreadyExists`] if the ARN is taken.
    pub fn create_execution(&self, execution: NewExecution) -> Commit {
        self.submit(|reply| Command::Create(Box::new(execution), reply))
    }

    /// Submits events, a new position and possibly the end of a running execution (one
    /// transaction with whatever else is queued).
    pub fn append(&self, append: Append) -> Commit {
        self.submit(|reply| Command::Append(append, reply))
    }

    /// Submits a distributed Map's finished child (one transaction with whatever else is queued).
    pub fn record_map_run_child(&self, child: MapRunChild) -> Commit {
        self.submit(|reply| Command::MapRunChild(child, reply))
    }

    /// The finished children of the Map run `run_key` of `execution_arn` from item `from` on,
    /// at most `limit` of them, as `(item index, child JSON)` in index order.
    pub fn map_run_children(
        &self,
        execution_arn: &str,
        run_key: &str,
        from: i64,
        limit: i64,
    ) -> Result<Vec<(i64, String)>> {
        self.read(|conn| {
            let Some(execution) = self.find(conn, execution_arn)? else {
                return Err(StoreError::ExecutionNotFound {
                    execution: execution_arn.to_owned(),
                });
            };
            map_runs::children(conn, execution.id, run_key, from, limit)
                .map_err(|e| self.sqlite("read map run children", e))
        })
    }

    /// Submits a change to a Map run or one of its child executions (one transaction with
    /// whatever else is queued).
    pub fn record_map_run(&self, change: MapRunChange) -> Commit {
        self.submit(|reply| Command::MapRun(Box::new(change), reply))
    }

    /// One Map run with its item and execution counts.
    pub fn map_run(&self, map_run_arn: &str) -> Result<Option<MapRunRecord>> {
        self.read(|conn| {
            map_runs::run(conn, map_run_arn).map_err(|e| self.sqlite("read map run", e))
        })
    }

    /// The Map runs an execution's Map states started, newest first (their counts left at 0).
    pub fn map_runs_of(&self, execution_arn: &str) -> Result<Vec<MapRunRecord>> {
        self.read(|conn| {
            map_runs::runs_of(conn, execution_arn).map_err(|e| self.sqlite("list map runs", e))
        })
    }

    /// The settings of a Map run in force now (UpdateMapRun changes them).
    pub fn map_run_settings(&self, map_run_arn: &str) -> Result<Option<MapRunSettings>> {
        self.read(|conn| {
            map_runs::settings(conn, map_run_arn).map_err(|e| self.sqlite("read map run", e))
        })
    }

    /// UpdateMapRun, committed before this returns; `false` when no run has this ARN.
    pub fn update_map_run(&self, map_run_arn: &str, update: &MapRunUpdate) -> Result<bool> {
        self.write_now("update map run", |tx| {
            map_runs::update(tx, map_run_arn, update)
        })
    }

    /// A Map run's child executions (those with `status`, if given), newest first.
    pub fn map_run_executions(
        &self,
        map_run_arn: &str,
        status: Option<&str>,
    ) -> Result<Vec<MapRunExecution>> {
        self.read(|conn| {
            map_runs::executions(conn, map_run_arn, status)
                .map_err(|e| self.sqlite("list map run executions", e))
        })
    }

    /// The names of a Map run's child executions from item `from` on, at most `limit`, as
    /// `(item index, name)` in index order.
    pub fn map_run_child_names(
        &self,
        map_run_arn: &str,
        from: i64,
        limit: i64,
    ) -> Result<Vec<(i64, String)>> {
        self.read(|conn| {
            map_runs::child_names(conn, map_run_arn, from, limit)
                .map_err(|e| self.sqlite("list map run child names", e))
        })
    }

    /// One child execution of a Map run, by ARN.
    pub fn map_run_execution(&self, execution_arn: &str) -> Result<Option<MapRunExecution>> {
        self.read(|conn| {
            map_runs::execution(conn, execution_arn)
                .map_err(|e| self.sqlite("read map run execution", e))
        })
    }

    /// The history of a Map run's child execution, by ARN, oldest first or newest first with
    /// `reverse`; `None` when no Map run has such a child.
    pub fn map_run_history(
        &self,
        execution_arn: &str,
        reverse: bool,
    ) -> Result<Option<Vec<EventRecord>>> {
        self.read(|conn| {
            let known = map_runs::execution(conn, execution_arn)
                .map_err(|e| self.sqlite("read map run execution", e))?;
            if known.is_none() {
                return Ok(None);
            }
            events::child_history(conn, execution_arn, reverse)
                .map(Some)
                .map_err(|e| self.sqlite("read map run history", e))
        })
    }

    /// A commit that resolves once everything submitted before it has committed.
    pub fn flush(&self) -> Commit {
        self.submit(Command::Barrier)
    }

    fn submit(&self, make: impl FnOnce(writer::Reply) -> Command) -> Commit {
        match &self.writer {
            Some(writer) => writer.submit(make),
            None => Commit::failed(StoreError::ReadOnly {
                path: self.path.clone(),
            }),
        }
    }

    // ---- reads --------------------------------------------------------------------------------

    /// One execution, by ARN, or by bare name when the text does not start with `arn:`.
    ///
    /// A name used by executions of several state machines is an error
    /// ([`StoreError::AmbiguousExecutionName`], listing the ARNs), not a guess.
    pub fn execution(&self, arn_or_name: &str) -> Result<Option<ExecutionRecord>> {
        self.read(|conn| self.find(conn, arn_or_name))
    }

    /// An execution's history (by ARN or name), oldest first, or newest first with `reverse`.
    pub fn history(&self, arn_or_name: &str, reverse: bool) -> Result<Vec<EventRecord>> {
        self.read(|conn| {
            let Some(execution) = self.find(conn, arn_or_name)? else {
                return Err(StoreError::ExecutionNotFound {
                    execution: arn_or_name.to_owned(),
                });
            };
            events::history(conn, execution.id, reverse).map_err(|e| self.sqlite("read history", e))
        })
    }

    /// An execution's history (by ARN or name) streamed a stored chunk at a time, oldest first
    /// or newest first with `reverse`: `each` gets the events in order and returns whether to
    /// go on. Memory stays at one chunk however long the history.
    pub fn for_each_event(
        &self,
        arn_or_name: &str,
        reverse: bool,
        each: &mut dyn FnMut(&EventRecord) -> bool,
    ) -> Result<()> {
        self.read(|conn| {
            let Some(execution) = self.find(conn, arn_or_name)? else {
                return Err(StoreError::ExecutionNotFound {
                    execution: arn_or_name.to_owned(),
                });
            };
            events::for_each_chunk(conn, execution.id, reverse, &mut |chunk| {
                chunk.iter().all(&mut *each)
            })
            .map_err(|e| self.sqlite("read history", e))
        })
    }

    /// Each distinct definition text executions ran, with how many ran it (for coverage).
    pub fn distinct_definitions(&self) -> Result<Vec<(String, u64)>> {
        self.read(|conn| {
            histories::distinct_definitions(conn).map_err(|e| self.sqlite("list definitions", e))
        })
    }

    /// The executions that ran exactly this definition text, oldest first.
    pub fn executions_with_definition(&self, definition: &str) -> Result<Vec<ExecutionHead>> {
        self.read(|conn| {
            histories::with_definition(conn, definition)
                .map_err(|e| self.sqlite("list executions", e))
        })
    }

    /// Hands `each` the whole history of every listed execution, one execution at a time.
    pub fn for_each_history(
        &self,
        executions: &[ExecutionHead],
        each: &mut dyn FnMut(&ExecutionHead, &[EventRecord]),
    ) -> Result<()> {
        self.read(|conn| {
            histories::for_each(conn, executions, each).map_err(|e| self.sqlite("read history", e))
        })
    }

    /// All executions, or those with `status`, newest first.
    pub fn list_executions(&self, status: Option<ExecutionStatus>) -> Result<Vec<ExecutionRecord>> {
        self.read(|conn| {
            executions::list(conn, status).map_err(|e| self.sqlite("list executions", e))
        })
    }

    /// Executions still `RUNNING`, newest first: the candidates for resume.
    pub fn running_executions(&self) -> Result<Vec<ExecutionRecord>> {
        self.list_executions(Some(ExecutionStatus::Running))
    }

    /// `PRAGMA data_version` on a dedicated connection: it changes whenever a connection other than
    /// that one commits, i.e. another process or this store's own writer. Costs no disk I/O, so a
    /// runner waiting for `send-task-*` can poll it every few milliseconds.
    pub fn data_version(&self) -> Result<i64> {
        let mut watch = lock(&self.version_watch);
        let conn = match watch.take() {
            Some(conn) => conn,
            None => self.open_reader()?,
        };
        let version = conn
            .pragma_query_value(None, "data_version", |row| row.get(0))
            .map_err(|e| self.sqlite("read data_version", e));
        *watch = Some(conn);
        version
    }

    // ---- waiting (see [`watch`]) ---------------------------------------------------------------

    /// Registers a waiter on a task token: its [`Waiter::notified`] resolves when the token's
    /// status changes, whichever process changed it. Register, then read the row.
    pub fn watch_token(&self, token: &str) -> Result<Waiter> {
        self.watch.token(token, || self.open_watcher())
    }

    /// Registers a waiter on an execution's stop request (see [`Store::watch_token`]).
    pub fn watch_execution(&self, execution_arn: &str) -> Result<Waiter> {
        self.watch.execution(execution_arn, || self.open_watcher())
    }

    /// Registers a waiter on an execution's stop request whose `hook` runs on the waking
    /// thread whenever a stop may have been asked (also when it was not: the hook reads
    /// [`Store::stop_request`] to know). For what cannot wait until the execution's own thread
    /// is free; the registration lasts as long as the waiter.
    pub fn watch_execution_hooked(&self, execution_arn: &str, hook: Hook) -> Result<Waiter> {
        self.watch
            .execution_hooked(execution_arn, hook, || self.open_watcher())
    }

    /// How the watcher gets its connection, and where it starts. With the change log's
    /// position at open (a writable store), the watcher opens its connection on its own thread
    /// and reads every row after that position at its first look: rows written since then
    /// wake their waiters, who read their row again, so nothing is missed. Opening it here,
    /// and reading the log's end on it, was a connection and a parse of the schema on the
    /// run's own thread, a tenth of a one-state `run`.
    fn open_watcher(&self) -> Result<(watch::Opener, watch::LogPosition)> {
        let (at, mut opened) = match self.log_at_open {
            Some(seq) => (watch::LogPosition::unread(seq), None),
            None => {
                let conn = self.open_reader()?;
                let at = watch::LogPosition::read(&conn)
                    .map_err(|e| self.sqlite("start the watcher", e))?;
                (at, Some(conn))
            }
        };
        let (path, busy_timeout) = (self.path.clone(), self.options.busy_timeout);
        let opener: watch::Opener = Box::new(move || match opened.take() {
            Some(conn) => Some(conn),
            None => read_connection(&path, busy_timeout).ok(),
        });
        Ok((opener, at))
    }

    // ---- task tokens and stop requests (see [`tokens`]) ----------------------------------------

    /// Stores a new token, committed before this returns: only then may a worker see it.
    /// Fails with [`StoreError::ExecutionNotFound`] if its execution does not exist.
    pub fn issue_token(&self, token: &NewTaskToken) -> Result<()> {
        let inserted = self.write_now("issue task token", |tx| tokens::insert(tx, token))?;
        if inserted {
            Ok(())
        } else {
            Err(StoreError::ExecutionNotFound {
                execution: token.execution_arn.clone(),
            })
        }
    }

    /// The token of an execution's attempt by the replay key of its scheduling event.
    pub fn token_by_key(
        &self,
        execution_arn: &str,
        replay_key: &str,
    ) -> Result<Option<TokenRecord>> {
        self.read(|conn| {
            tokens::get_by_key(conn, execution_arn, replay_key)
                .map_err(|e| self.sqlite("read task token", e))
        })
    }

    // ---- leases (see [`leases`]) ----------------------------------------------------------------

    /// Takes an execution for `owner` until `expires_at` if it is running and its lease is free
    /// or lapsed at `now` (or already `owner`'s), and says how many takeovers in a row found it
    /// without progress ([`Takeover`]). `None`: another live runner holds it, or it is not
    /// running. One conditional UPDATE: two runners never both win.
    pub fn acquire_lease(
        &self,
        execution_arn: &str,
        owner: &str,
        now: i64,
        expires_at: i64,
    ) -> Result<Option<Takeover>> {
        self.write_now("take lease", |tx| {
            leases::acquire(tx, execution_arn, owner, now, expires_at)
        })
    }

    /// Records that `owner`'s takeover of `execution_arn` reached where the execution stood
    /// and waits there: the quarantine counts it as progress (see `leases::settle`).
    pub fn settle_takeover(&self, execution_arn: &str, owner: &str) -> Result<()> {
        self.write_now("record a settled takeover", |tx| {
            leases::settle(tx, execution_arn, owner)
        })
    }

    /// Extends every lease `owner` holds on running executions to `expires_at`, with one write
    /// to its runner's lease row (see `leases`).
    pub fn renew_leases(&self, owner: &str, expires_at: i64) -> Result<()> {
        self.write_now("renew leases", |tx| leases::renew(tx, owner, expires_at))
    }

    /// The runners whose lease is live at `now` (some may have died since they renewed it).
    pub fn live_runners(&self, now: i64) -> Result<Vec<String>> {
        self.read(|conn| {
            leases::live_runners(conn, now).map_err(|e| self.sqlite("read runner leases", e))
        })
    }

    /// Ends every lease of `owner`, a runner known to be dead (its process is gone): its
    /// executions can be taken over at once, as if their leases had lapsed.
    pub fn expire_runner(&self, owner: &str) -> Result<()> {
        self.write_now("expire runner", |tx| leases::expire_runner(tx, owner))
    }

    /// The running executions whose runner is gone, as the runner `me` sees them at `now`:
    /// lapsed or given-up leases, and executions with no owner since `unowned_before` (a
    /// redriven one its redriver did not take). Oldest first.
    pub fn orphans(&self, me: &str, now: i64, unowned_before: i64) -> Result<Vec<ExecutionRecord>> {
        self.read(|conn| {
            executions::orphans(conn, me, now, unowned_before)
                .map_err(|e| self.sqlite("list orphaned executions", e))
        })
    }

    /// Gives up `owner`'s lease on an execution at once (it stays RUNNING; `resume` may take it).
    pub fn release_lease(&self, execution_arn: &str, owner: &str) -> Result<()> {
        self.write_now("release lease", |tx| {
            leases::release(tx, execution_arn, owner)
        })
    }

    /// Records how an execution is run (JSON), for `resume`.
    pub fn set_run_config(&self, execution_arn: &str, config: &str) -> Result<()> {
        self.write_now("store run configuration", |tx| {
            leases::set_run_config(tx, execution_arn, config)
        })
    }

    /// How an execution was run (JSON), if recorded.
    pub fn run_config(&self, execution_arn: &str) -> Result<Option<String>> {
        self.read(|conn| {
            leases::run_config(conn, execution_arn)
                .map_err(|e| self.sqlite("read run configuration", e))
        })
    }

    /// One token, whatever its status.
    pub fn token(&self, token: &str) -> Result<Option<TokenRecord>> {
        self.read(|conn| tokens::get(conn, token).map_err(|e| self.sqlite("read task token", e)))
    }

    /// A worker's answer (success, failure or heartbeat), applied only if the token is open at
    /// `now`; a closed token is [`AnswerError::TaskTimedOut`].
    pub fn answer_token(
        &self,
        token: &str,
        answer: &TaskAnswer,
        now: i64,
    ) -> std::result::Result<(), AnswerError> {
        let answered = self.write_now("answer task token", |tx| {
            if tokens::answer(tx, token, answer, now)? {
                Ok(Ok(()))
            } else if tokens::exists(tx, token)? {
                Ok(Err(AnswerError::TaskTimedOut))
            } else {
                Ok(Err(AnswerError::TaskDoesNotExist))
            }
        })?;
        // Answered through this process: its waiter (if it runs here) wakes now, not at the
        // watcher's next look. A heartbeat too: a virtual clock's runner re-arms the deadline
        // at the instant the beat landed (a real clock's waiter just reads its row again).
        if answered.is_ok() {
            self.watch.wake_token(token);
        }
        answered
    }

    /// Decides an expiry: closes the token as timed out if it is open and a deadline has passed
    /// at `now`. `None` means a heartbeat or an answer won the race (or nothing is due yet).
    pub fn expire_token(&self, token: &str, now: i64) -> Result<Option<Expiry>> {
        self.write_now("expire task token", |tx| tokens::expire(tx, token, now))
    }

    /// Arms a virtual clock's token's heartbeat deadline at `now` (its runner's instant) after
    /// a beat cleared it; false when nothing was waiting to be re-armed.
    pub fn rearm_heartbeat(&self, token: &str, now: i64) -> Result<bool> {
        self.write_now("re-arm a heartbeat", |tx| {
            tokens::rearm_heartbeat(tx, token, now)
        })
    }

    /// `get-activity-task`: hands the oldest waiting task of an activity to a worker, if any.
    pub fn claim_activity_task(
        &self,
        activity_arn: &str,
        worker_name: Option<&str>,
        now: i64,
    ) -> Result<Option<ActivityTask>> {
        self.write_now("take activity task", |tx| {
            tokens::claim(tx, activity_arn, worker_name, now)
        })
    }

    /// Closes an execution's open tokens (or only `only`); returns how many were open.
    pub fn close_tokens(&self, execution_arn: &str, only: Option<&str>, now: i64) -> Result<usize> {
        self.write_now("close task tokens", |tx| {
            tokens::close(tx, execution_arn, only, now)
        })
    }

    /// Tokens waiting for an answer, oldest first, of one execution (by ARN) or all.
    pub fn open_tokens(&self, execution_arn: Option<&str>) -> Result<Vec<TokenRecord>> {
        self.read(|conn| {
            tokens::list_open(conn, execution_arn).map_err(|e| self.sqlite("list task tokens", e))
        })
    }

    /// `stop-execution`: records the request and closes the execution's open tokens. The
    /// execution (by ARN or name) must exist.
    pub fn request_stop(
        &self,
        arn_or_name: &str,
        error: Option<&str>,
        cause: Option<&str>,
        now: i64,
    ) -> Result<StopOutcome> {
        let Some(record) = self.execution(arn_or_name)? else {
            return Err(StoreError::ExecutionNotFound {
                execution: arn_or_name.to_owned(),
            });
        };
        let arn = record.execution_arn;
        let outcome = self
            .write_now("request stop", |tx| {
                tokens::request_stop(tx, &arn, error, cause, now)
            })?
            .ok_or(StoreError::ExecutionNotFound {
                execution: arn.clone(),
            })?;
        self.watch.wake_execution(&arn);
        Ok(outcome)
    }

    /// The stop asked for an execution, if any.
    pub fn stop_request(&self, execution_arn: &str) -> Result<Option<StopRequest>> {
        self.read(|conn| {
            tokens::stop_request(conn, execution_arn)
                .map_err(|e| self.sqlite("read stop request", e))
        })
    }

    /// Ends a running execution nobody is driving any more: appends `ExecutionAborted` (with
    /// `details` as its JSON) and marks it `ABORTED`. `false` if it had already ended.
    pub fn abort_unattended(
        &self,
        execution_arn: &str,
        details: Option<String>,
        error: Option<String>,
        cause: Option<String>,
        now: i64,
    ) -> Result<bool> {
        let end = tokens::UnattendedEnd {
            event_type: "ExecutionAborted",
            // As the engine writes it (and AWS): ExecutionAborted points at nothing.
            after_last: false,
            details,
            finish: Finish {
                status: ExecutionStatus::Aborted,
                output: None,
                error,
                cause,
                stop_date_ms: now,
            },
        };
        self.write_now("abort execution", |tx| {
            tokens::end_unattended(tx, execution_arn, &end)
        })
    }

    /// Fails a running execution here, without its runner (one that kept killing the process
    /// is quarantined so): appends `ExecutionFailed` with `error` and `cause` (`details`, as
    /// the engine writes them), pointing at the last event, and marks it `FAILED`. `false` if
    /// it had already ended.
    pub fn fail_unattended(
        &self,
        execution_arn: &str,
        details: String,
        error: &str,
        cause: &str,
        now: i64,
    ) -> Result<bool> {
        let end = tokens::UnattendedEnd {
            event_type: "ExecutionFailed",
            after_last: true,
            details: Some(details),
            finish: Finish {
                status: ExecutionStatus::Failed,
                output: None,
                error: Some(error.to_owned()),
                cause: Some(cause.to_owned()),
                stop_date_ms: now,
            },
        };
        self.write_now("fail execution", |tx| {
            tokens::end_unattended(tx, execution_arn, &end)
        })
    }

    /// `redrive-execution`: if AWS's conditions allow it (see [`redrivable`]), appends
    /// `ExecutionRedriven` and puts the execution (by ARN or name) back to RUNNING with no
    /// runner, in one transaction. A `client_token` equal to the last redrive's returns that
    /// redrive again without writing. `max_events` is the execution's history cap.
    pub fn redrive_execution(
        &self,
        arn_or_name: &str,
        client_token: Option<&str>,
        now: i64,
        max_events: i64,
    ) -> Result<std::result::Result<Redriven, NotRedrivable>> {
        let Some(record) = self.execution(arn_or_name)? else {
            return Err(StoreError::ExecutionNotFound {
                execution: arn_or_name.to_owned(),
            });
        };
        let arn = record.execution_arn;
        self.write_now("redrive execution", |tx| {
            redrive::redrive(tx, &arn, client_token, now, max_events)
        })?
        .ok_or(StoreError::ExecutionNotFound { execution: arn })
    }

    /// Runs `f` in a short IMMEDIATE transaction and commits: on the write connection while
    /// the writer's thread has not started (see [`Writer`]), else on the side connection.
    fn write_now<T>(
        &self,
        context: &'static str,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> rusqlite::Result<T>,
    ) -> Result<T> {
        let Some(writer) = &self.writer else {
            return Err(StoreError::ReadOnly {
                path: self.path.clone(),
            });
        };
        let idle = writer.idle();
        if let Some(idle) = idle.as_ref() {
            return self.commit_on(&idle.conn, context, f);
        }
        drop(idle);
        let mut slot = lock(&self.side_writer);
        let conn = match slot.take() {
            Some(conn) => conn,
            None => self.open_side_writer()?,
        };
        let result = self.commit_on(&conn, context, f);
        *slot = Some(conn);
        result
    }

    /// `f` in an IMMEDIATE transaction on `conn`, committed, behind the write gate.
    fn commit_on<T>(
        &self,
        conn: &Connection,
        context: &'static str,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> rusqlite::Result<T>,
    ) -> Result<T> {
        (|| {
            let _gate = lock(&self.write_gate);
            let tx = lock::begin_immediate(conn, self.options.busy_timeout)?;
            let value = f(&tx)?;
            tx.commit()?;
            Ok(value)
        })()
        .map_err(|e| self.sqlite(context, e))
    }

    fn open_side_writer(&self) -> Result<Connection> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn =
            Connection::open_with_flags(&self.path, flags).map_err(|e| self.sqlite("open", e))?;
        conn.busy_timeout(self.options.busy_timeout)
            .map_err(|e| self.sqlite("set busy timeout", e))?;
        // The level chosen for the store holds here too (SQLite's default, FULL, made every
        // side commit of a `--durability normal` store wait for an fsync). No automatic
        // checkpoints: SQLite's, at 1,000 pages, made the first side commit past 4 MiB of WAL
        // (a StopExecution, a task token) copy the WAL with its fsyncs before answering (200 ms
        // after 500 executions). The writer has the WAL checkpointed, off every caller's path.
        conn.execute_batch(&format!(
            "PRAGMA foreign_keys = ON; PRAGMA synchronous = {}; PRAGMA wal_autocheckpoint = 0;",
            self.options.durability.synchronous()
        ))
        .map_err(|e| self.sqlite("configure connection", e))?;
        no_checkpoint_on_close(&conn).map_err(|e| self.sqlite("configure connection", e))?;
        cap_pages(&conn, self.options.max_page_count)
            .map_err(|e| self.sqlite("configure connection", e))?;
        Ok(conn)
    }

    // ---- connections --------------------------------------------------------------------------

    fn find(&self, conn: &Connection, arn_or_name: &str) -> Result<Option<ExecutionRecord>> {
        executions::find(conn, arn_or_name).map_err(|e| match e {
            FindError::Sqlite(e) => self.sqlite("read execution", e),
            FindError::Store(e) => e,
        })
    }

    fn read<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let pooled = lock(&self.readers).pop();
        let conn = match pooled {
            Some(conn) => conn,
            None => self.open_reader()?,
        };
        let result = f(&conn);
        self.give_back(conn);
        result
    }

    fn give_back(&self, conn: Connection) {
        let mut pool = lock(&self.readers);
        if pool.len() < READ_POOL_SIZE {
            pool.push(conn);
        }
    }

    fn open_reader(&self) -> Result<Connection> {
        read_connection(&self.path, self.options.busy_timeout)
            .map_err(|(context, e)| self.sqlite(context, e))
    }

    fn sqlite(&self, context: &'static str, err: rusqlite::Error) -> StoreError {
        StoreError::from_sqlite(&self.path, context, self.options.busy_timeout, err)
    }
}

/// A read-only connection to `path`; an error says what failed (its context).
fn read_connection(
    path: &Path,
    busy_timeout: std::time::Duration,
) -> std::result::Result<Connection, (&'static str, rusqlite::Error)> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(|e| ("open", e))?;
    conn.busy_timeout(busy_timeout)
        .map_err(|e| ("set busy timeout", e))?;
    no_checkpoint_on_close(&conn).map_err(|e| ("configure connection", e))?;
    // Every read the API makes, kept compiled (see `cached`).
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
}

/// Creates the database's folder, owner-only like the file: the database holds task tokens,
/// inputs and outputs.
fn create_parent(path: &Path) -> Result<()> {
    let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) else {
        return Ok(());
    };
    let mut folders = std::fs::DirBuilder::new();
    folders.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut folders, 0o700);
    folders
        .create(parent)
        .map_err(|source| StoreError::CreateDir {
            path: parent.to_path_buf(),
            source: source.into(),
        })
}

/// Brings an older schema up to date. Only an older schema takes the write lock: most opens
/// are short commands (`send-task-heartbeat`, `list-tasks`) that must not queue for it twice.
fn migrate_older(
    conn: &Connection,
    schema: &SchemaCheck,
    path: &Path,
    busy_timeout: std::time::Duration,
) -> Result<()> {
    let SchemaCheck::Older(_) = schema else {
        return Ok(());
    };
    match migrations::migrate(conn, busy_timeout)
        .map_err(|e| StoreError::from_sqlite(path, "migrate", busy_timeout, e))?
    {
        Ok(()) => Ok(()),
        Err(found) => Err(StoreError::SchemaTooNew {
            path: path.to_path_buf(),
            found,
            supported: SCHEMA_VERSION,
        }),
    }
}

/// Sets up the writing connection: WAL, the durability level, caches, no checkpoint on close.
/// Returns whether the file is new (empty, or `copied`: a copy of the template this process
/// just made, see `template`): such a file has nothing to lose, so with `--durability normal`
/// its switch to WAL and its schema, or its WAL's first header, are written without fsyncs
/// (eight of them, a third of a short `run`'s time, when the schema was built with SQL); the
/// caller applies the chosen level after that (see [`start_wal_unsynced`]).
fn configure_writer(
    conn: &Connection,
    options: &StoreOptions,
    schema: &SchemaCheck,
    copied: bool,
) -> rusqlite::Result<bool> {
    let empty = *schema == SchemaCheck::Older(0)
        && conn
            .query_row("PRAGMA page_count", [], |r| r.get::<_, i64>(0))
            .is_ok_and(|pages| pages == 0);
    let fresh = options.durability == Durability::Normal && (copied || empty);
    let configure = format!(
        "PRAGMA synchronous = {};
         PRAGMA journal_mode = WAL;
         PRAGMA foreign_keys = ON;
         PRAGMA temp_store = MEMORY;
         PRAGMA cache_size = -16384;
         PRAGMA journal_size_limit = 67108864;
         PRAGMA wal_autocheckpoint = 0;",
        if fresh {
            "OFF"
        } else {
            options.durability.synchronous()
        }
    );
    lock::retry_busy(options.busy_timeout, || conn.execute_batch(&configure))?;
    // Checkpoints copy the WAL into the database with fsyncs; a run should not wait for
    // them. The writer has the WAL checkpointed once it reaches 64 MiB (see `writer`; its
    // WAL hook replaces SQLite's automatic checkpoints; `wal_autocheckpoint = 0` holds until
    // its thread starts, as on the side connection), and the checkpoint a closing
    // connection would do is left to later ones: a WAL left behind is replayed on open, so
    // nothing is lost.
    no_checkpoint_on_close(conn)?;
    cap_pages(conn, options.max_page_count)?;
    // Batches can hold thousands of events; keep their statements compiled.
    conn.set_prepared_statement_cache_capacity(32);
    Ok(fresh)
}

/// The first commit to a new WAL writes its header and, unless `synchronous` is OFF, syncs
/// the WAL and its folder: two fsyncs, most of a millisecond, on every new database. On a file
/// this process just made, a commit of nothing (the schema version, unchanged) under OFF writes
/// the header; the level the store runs at follows. The header's sync guards a restarted WAL
/// against frames of the one before it, and a new database has none: what a power cut can
/// cost is what `synchronous = NORMAL` may lose anyway, the last commits.
fn start_wal_unsynced(
    conn: &Connection,
    copied: bool,
    durability: Durability,
) -> rusqlite::Result<()> {
    if copied {
        conn.execute_batch(&format!(
            "PRAGMA user_version = {};",
            migrations::SCHEMA_VERSION
        ))?;
    }
    let synchronous = durability.synchronous();
    conn.execute_batch(&format!("PRAGMA synchronous = {synchronous};"))
}

/// Whichever connection closes last would checkpoint the whole WAL (with fsyncs) before the
/// process may exit; leave that to the next writer's automatic checkpoints instead.
pub(crate) fn no_checkpoint_on_close(conn: &Connection) -> rusqlite::Result<bool> {
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
        true,
    )
}

/// Applies [`StoreOptions::max_page_count`].
fn cap_pages(conn: &Connection, max_page_count: Option<u32>) -> rusqlite::Result<()> {
    if let Some(pages) = max_page_count {
        let _: i64 = conn.query_row(&format!("PRAGMA max_page_count = {pages}"), [], |row| {
            row.get(0)
        })?;
    }
    Ok(())
}

/// Locks a mutex even if a panicking thread poisoned it: the guarded values are connections,
/// which stay usable.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests;
