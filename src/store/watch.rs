//! One watcher per store: how thousands of waiting executions learn, at no cost while nothing
//! happens, that another process answered their task token or asked them to stop.
//!
//! A waiter registers what it waits on ([`Store::watch_token`](super::Store::watch_token),
//! [`Store::watch_execution`](super::Store::watch_execution)) and gets a [`Waiter`] whose
//! [`Waiter::notified`] resolves when something about it changed; then it reads its own row
//! again. Registrations live in one map of keys to [`tokio::sync::Notify`]s.
//!
//! One thread per store, started at the first registration and parked while nobody waits,
//! checks `PRAGMA data_version` every [`LOOK_EVERY`] after a change that woke someone, backing
//! off to every [`LOOK_IDLE`] while nothing does (no disk I/O: it compares a counter in the WAL
//! index; a look costs some 0.1 ms of CPU, so 200 looks a second were 2% of a core at rest).
//! Only when that counter moved does it read the `wakeups` rows written since its last
//! look (V8's triggers write one per token status change and per stop request, whichever
//! process commits) and wake exactly the waiters they name. Its cost does not grow with the
//! number of waiters; a commit costs one indexed read. Answers given through this process
//! (serve's `SendTaskSuccess`, the same process's `stop-execution`) wake their waiter at once,
//! without waiting for the look.
//!
//! A watcher that finds a gap after the last row it saw (the log keeps 4,096 rows) wakes
//! every waiter it holds: each reads its own row again, so nothing is ever missed.

use super::cached::CachedSql;
use rusqlite::Connection;
use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::Notify;

/// How often the watcher compares `PRAGMA data_version` just after a change woke a waiter
/// (answers tend to come in bursts).
pub const LOOK_EVERY: Duration = Duration::from_millis(5);

/// The longest gap between two looks, reached by doubling [`LOOK_EVERY`] while looks find
/// nothing to wake: the most an answer from another process waits before its execution wakes
/// (plus one read).
pub const LOOK_IDLE: Duration = Duration::from_millis(20);

/// What a waiter waits on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    /// A task token's status (answered, timed out, closed, taken by an activity worker).
    Token(String),
    /// An execution's stop request.
    Execution(String),
}

/// The registrations, shared by the store, its waiters and the watcher thread.
#[derive(Default)]
struct Shared {
    registry: Mutex<Registry>,
    /// Wakes the watcher: a first waiter arrived, or the store is closing.
    changed: Condvar,
}

/// Called on the thread that wakes a key (the watcher, or the one asking for a stop), for
/// what cannot wait for its own thread to be free: stopping a running evaluation.
pub type Hook = Arc<dyn Fn() + Send + Sync>;

#[derive(Default)]
struct Registry {
    /// Each key's notifier and how many waiters hold it.
    waiters: HashMap<Key, (Arc<Notify>, usize)>,
    /// Hooks by key, each with the id its waiter removes it by.
    hooks: HashMap<Key, Vec<(u64, Hook)>>,
    next_hook: u64,
    started: bool,
    closing: bool,
}

/// The store's watcher (see the module's overview).
#[derive(Default)]
pub(crate) struct Watch {
    shared: Arc<Shared>,
}

/// A registration with the watcher; dropping it unregisters.
pub struct Waiter {
    shared: Arc<Shared>,
    key: Key,
    notify: Arc<Notify>,
    /// The id of this waiter's hook, if it has one.
    hook: Option<u64>,
}

impl std::fmt::Debug for Waiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waiter").field("key", &self.key).finish()
    }
}

impl Waiter {
    /// Resolves at the next change to what this waiter watches. Create it (and
    /// [`enable`](tokio::sync::futures::Notified::enable) it) *before* reading the row it
    /// guards, so a change committed in between still wakes it.
    pub fn notified(&self) -> tokio::sync::futures::Notified<'_> {
        self.notify.notified()
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        let mut registry = lock(&self.shared.registry);
        if let (Some(id), Some(hooks)) = (self.hook, registry.hooks.get_mut(&self.key)) {
            hooks.retain(|(h, _)| *h != id);
            if hooks.is_empty() {
                registry.hooks.remove(&self.key);
            }
        }
        if let Some((_, holders)) = registry.waiters.get_mut(&self.key) {
            *holders -= 1;
            if *holders == 0 {
                registry.waiters.remove(&self.key);
            }
        }
    }
}

impl Watch {
    /// Registers a waiter on a token's status.
    pub(crate) fn token(
        &self,
        token: &str,
        open: impl FnOnce() -> super::Result<(Opener, LogPosition)>,
    ) -> super::Result<Waiter> {
        self.register(Key::Token(token.to_owned()), open)
    }

    /// Registers a waiter on an execution's stop request.
    pub(crate) fn execution(
        &self,
        execution_arn: &str,
        open: impl FnOnce() -> super::Result<(Opener, LogPosition)>,
    ) -> super::Result<Waiter> {
        self.register(Key::Execution(execution_arn.to_owned()), open)
    }

    /// Registers a waiter on an execution's stop request that also calls `hook` on the
    /// waking thread each time the request may have changed.
    pub(crate) fn execution_hooked(
        &self,
        execution_arn: &str,
        hook: Hook,
        open: impl FnOnce() -> super::Result<(Opener, LogPosition)>,
    ) -> super::Result<Waiter> {
        let key = Key::Execution(execution_arn.to_owned());
        let mut waiter = self.register(key.clone(), open)?;
        let mut registry = lock(&self.shared.registry);
        let id = registry.next_hook;
        registry.next_hook += 1;
        registry.hooks.entry(key).or_default().push((id, hook));
        waiter.hook = Some(id);
        Ok(waiter)
    }

    /// Wakes the waiters of a token now (an answer given through this process).
    pub(crate) fn wake_token(&self, token: &str) {
        self.wake(&[Key::Token(token.to_owned())]);
    }

    /// Wakes the waiters of an execution now (a stop asked through this process).
    pub(crate) fn wake_execution(&self, execution_arn: &str) {
        self.wake(&[Key::Execution(execution_arn.to_owned())]);
    }

    /// `open` gives the watcher how to get its own read connection and the log position it
    /// starts from, the first time only: the watcher starts here, on the caller's thread, so
    /// that position is fixed before the caller reads its row (a change committed in between
    /// is after it).
    fn register(
        &self,
        key: Key,
        open: impl FnOnce() -> super::Result<(Opener, LogPosition)>,
    ) -> super::Result<Waiter> {
        let mut registry = lock(&self.shared.registry);
        if !registry.started {
            let (opener, start) = open()?;
            let shared = self.shared.clone();
            std::thread::Builder::new()
                .name("sfn-local-watch".into())
                .spawn(move || watch(shared, opener, start))
                .map_err(|_| super::StoreError::WriterStopped)?;
            registry.started = true;
        }
        let first = registry.waiters.is_empty();
        let entry = registry
            .waiters
            .entry(key.clone())
            .or_insert_with(|| (Arc::new(Notify::new()), 0));
        entry.1 += 1;
        let notify = entry.0.clone();
        drop(registry);
        if first {
            self.shared.changed.notify_all();
        }
        Ok(Waiter {
            shared: self.shared.clone(),
            key,
            notify,
            hook: None,
        })
    }

    fn wake(&self, keys: &[Key]) {
        wake_keys(&self.shared, Wake::Some(keys.to_vec()));
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        lock(&self.shared.registry).closing = true;
        self.shared.changed.notify_all();
    }
}

/// Gives the watcher its read connection, on its own thread (`None`: not now; it asks again
/// at its next look).
pub(crate) type Opener = Box<dyn FnMut() -> Option<Connection> + Send>;

/// Where the watcher is: the commit counter it last saw and the last log row it read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LogPosition {
    data_version: i64,
    seq: i64,
}

impl LogPosition {
    /// The log's end now, as `conn` sees it.
    pub(crate) fn read(conn: &Connection) -> rusqlite::Result<LogPosition> {
        let data_version = conn.pragma_query_value(None, "data_version", |row| row.get(0))?;
        let seq = last_logged(conn)?;
        Ok(LogPosition { data_version, seq })
    }

    /// The log read up to `seq` (read earlier, on any connection), and no commit counter
    /// seen yet: the first look reads every row after `seq`, whatever the counter says.
    pub(crate) fn unread(seq: i64) -> LogPosition {
        LogPosition {
            data_version: NOT_SEEN,
            seq,
        }
    }
}

/// A commit counter no connection reports (SQLite's start at 1 and grow).
const NOT_SEEN: i64 = i64::MIN;

/// The change log's last row.
pub(crate) fn last_logged(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row_cached("SELECT coalesce(max(seq), 0) FROM wakeups", [], |row| {
        row.get(0)
    })
}

/// The watcher thread: parks while nobody waits, else looks every [`LOOK_EVERY`] to
/// [`LOOK_IDLE`].
fn watch(shared: Arc<Shared>, mut open: Opener, mut at: LogPosition) {
    let mut conn = None;
    let mut every = LOOK_EVERY;
    // Told to virtual clocks, which wait for a look after work outside the process ends.
    let looking = Looking::default();
    loop {
        {
            let mut registry = lock(&shared.registry);
            while registry.waiters.is_empty() && !registry.closing {
                looking.set(false);
                registry = shared
                    .changed
                    .wait(registry)
                    .unwrap_or_else(|p| p.into_inner());
            }
            looking.set(!registry.closing);
            if registry.closing {
                return;
            }
            let (registry, _) = shared
                .changed
                .wait_timeout(registry, every)
                .unwrap_or_else(|p| p.into_inner());
            if registry.closing {
                return;
            }
        }
        if conn.is_none() {
            conn = open();
        }
        // A failed look (the file busy, a disk error, no connection yet) is tried again at
        // the next one.
        let looked = conn.as_ref().map(|conn| look(conn, &mut at));
        match looked.unwrap_or(Ok(None)) {
            Ok(Some(wake)) if !wake.is_empty() => {
                wake_keys(&shared, wake);
                every = LOOK_EVERY;
            }
            _ => every = (every * 2).min(LOOK_IDLE),
        }
        crate::clock::activity::looked();
    }
}

/// Whether this watcher counts as looking (see [`crate::clock::activity::watching`]); it stops
/// counting when it parks or ends.
#[derive(Default)]
struct Looking(std::cell::Cell<bool>);

impl Looking {
    fn set(&self, active: bool) {
        if self.0.replace(active) != active {
            crate::clock::activity::watching(active);
        }
    }
}

impl Drop for Looking {
    fn drop(&mut self) {
        self.set(false);
    }
}

/// What to wake since `at`: `None` when nothing committed; every waiter when rows were
/// missed.
enum Wake {
    Some(Vec<Key>),
    All,
}

impl Wake {
    fn is_empty(&self) -> bool {
        matches!(self, Wake::Some(keys) if keys.is_empty())
    }
}

fn look(conn: &Connection, at: &mut LogPosition) -> rusqlite::Result<Option<Wake>> {
    // Cached: parsing the pragma again at every look was a good part of its cost.
    let version: i64 = conn
        .prepare_cached("PRAGMA data_version")?
        .query_row([], |row| row.get(0))?;
    if version == at.data_version {
        return Ok(None);
    }
    let mut stmt = conn.prepare_cached(
        "SELECT seq, token, execution_arn FROM wakeups WHERE seq > ?1 ORDER BY seq",
    )?;
    let rows = stmt.query_map([at.seq], |row| {
        Ok((
            row.get::<_, i64>(0)?,
            row.get::<_, Option<String>>(1)?,
            row.get::<_, Option<String>>(2)?,
        ))
    })?;
    let mut keys = Vec::new();
    let mut first = None;
    let mut last = at.seq;
    for row in rows {
        let (seq, token, execution) = row?;
        first.get_or_insert(seq);
        last = seq;
        keys.extend(token.map(Key::Token));
        keys.extend(execution.map(Key::Execution));
    }
    let missed = first.is_some_and(|seq| seq > at.seq + 1);
    *at = LogPosition {
        data_version: version,
        seq: last,
    };
    Ok(Some(if missed { Wake::All } else { Wake::Some(keys) }))
}

/// Wakes the waiters of `wake`, then calls their hooks (outside the lock: a hook reads the
/// store).
fn wake_keys(shared: &Shared, wake: Wake) {
    let registry = lock(&shared.registry);
    let mut hooks: Vec<Hook> = Vec::new();
    match wake {
        Wake::All => {
            registry
                .waiters
                .values()
                .for_each(|(notify, _)| notify.notify_waiters());
            hooks.extend(registry.hooks.values().flatten().map(|(_, h)| h.clone()));
        }
        Wake::Some(keys) => {
            for key in keys {
                if let Some((notify, _)) = registry.waiters.get(&key) {
                    notify.notify_waiters();
                }
                if let Some(found) = registry.hooks.get(&key) {
                    hooks.extend(found.iter().map(|(_, h)| h.clone()));
                }
            }
        }
    }
    drop(registry);
    for hook in hooks {
        hook();
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
