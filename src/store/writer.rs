//! The writer thread: the only owner of the write connection.
//!
//! Callers send [`Command`]s over a channel and get a [`Commit`] back at once. The thread takes
//! whatever is queued (up to [`MAX_BATCH`] commands) and applies it in ONE `BEGIN IMMEDIATE`
//! transaction, then answers every caller. So many small transitions cost one commit (one fsync at
//! most), and commits apply in submission order because there is one queue and one thread.
//!
//! A command that breaks a rule (unknown execution, non-contiguous ids, appending after the end,
//! an owner that no longer holds the lease) is
//! refused *before* it writes anything, so it fails alone and the rest of the batch commits. If
//! SQLite itself fails mid-batch (disk full, I/O), the whole transaction rolls back and the commands
//! are retried one transaction each, so every caller gets its own precise answer.
//!
//! Writes that keep a distributed Map run's journal (its rows, its children's rows and
//! histories, [`Command::MapRun`] and [`Command::MapRunChild`]) are background work: a run of a
//! million children writes millions of them. The writer takes everything else first, and at
//! most [`BACKGROUND_PER_BATCH`] of them per transaction, so another client's StartExecution
//! waits behind a short transaction, not a long one. Background writes keep their order among
//! themselves, and a [`Command::Barrier`] queues behind them, so it still answers once
//! everything submitted before it has committed.
//!
//! Checkpoints (copying the WAL into the database, with fsyncs) would stall every caller for as
//! long as they take, half a second for a large WAL; they run on a [`Checkpointer`] thread of
//! their own instead, once the WAL holds [`CHECKPOINT_PAGES`], without blocking the writer
//! (SQLite's PASSIVE mode). The writer checkpoints itself only as a backstop, at
//! [`WAL_BACKSTOP_PAGES`]. The WAL's size comes from SQLite's WAL hook after each commit, so a
//! server answering small requests checkpoints once per 64 MiB written, not every few commits.
//!
//! Inside a batch the writer keeps each touched execution's head (id, status, last event id,
//! newest position) in memory and writes the row once at the end: an IMMEDIATE transaction holds
//! the write lock, so nobody else can change the row meanwhile.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, JoinHandle, Thread};
use std::time::Duration;

use rusqlite::Connection;
use tokio::sync::oneshot;

use super::error::{Result, StoreError};
use super::events::{self, NewEvent, Violation};
use super::executions::{self, ExecutionStatus, Finish, NewExecution};
use super::lock;
use super::map_runs::{self, MapRunChange, MapRunChild};

/// Most commands applied in one transaction; bounds the latency of the first caller in a burst.
pub(crate) const MAX_BATCH: usize = 8192;

/// Most background commands (a Map run's journal) applied in one transaction.
pub(crate) const BACKGROUND_PER_BATCH: usize = 64;

/// Events (and possibly a new position, possibly the end) for one running execution.
#[derive(Debug, Clone, PartialEq)]
pub struct Append {
    /// The execution's ARN.
    pub execution_arn: String,
    /// Events continuing the history: the first id is the stored last id + 1, then contiguous.
    pub events: Vec<NewEvent>,
    /// The engine's new position; `None` keeps the stored one.
    pub position: Option<String>,
    /// Set when these events end the execution (`ExecutionSucceeded`, `ExecutionFailed`...).
    pub finish: Option<Finish>,
    /// The runner writing, for fencing: when set, the append is refused with
    /// [`StoreError::LeaseLost`] unless this owner still holds the execution's lease (another
    /// runner took it over while this one was paused or cut off). `None` skips the check.
    pub owner: Option<String>,
}

/// What the writer thread is asked to do.
pub(crate) enum Command {
    Create(Box<NewExecution>, Reply),
    Append(Append, Reply),
    MapRunChild(MapRunChild, Reply),
    MapRun(Box<MapRunChange>, Reply),
    /// Answered once everything submitted before it has committed.
    Barrier(Reply),
}

/// Where a command's outcome goes. It counts as work in flight for a virtual clock until it
/// is answered (or dropped), so time never jumps between a write and its commit.
pub(crate) struct Reply {
    sender: oneshot::Sender<Result<()>>,
    _busy: crate::clock::Busy,
}

impl Reply {
    fn new(sender: oneshot::Sender<Result<()>>) -> Reply {
        Reply {
            sender,
            _busy: crate::clock::Busy::internal(),
        }
    }

    /// Answers the caller (who may have dropped its [`Commit`]), then stops counting.
    fn send(self, outcome: Result<()>) {
        let _ = self.sender.send(outcome);
    }
}

/// The answer to a submitted write: resolves once its transaction has committed (or failed).
///
/// Dropping it does not cancel the write; it only discards the answer.
#[must_use = "a Commit reports whether the write reached the database; drop it only if that does not matter"]
#[derive(Debug)]
pub struct Commit(oneshot::Receiver<Result<()>>);

impl Commit {
    /// A commit that has already failed.
    pub(crate) fn failed(err: StoreError) -> Commit {
        let (tx, rx) = oneshot::channel();
        // The receiver is alive in this scope, so the send cannot fail.
        let _ = tx.send(Err(err));
        Commit(rx)
    }

    /// Waits until the write is durable (per the store's [`Durability`](super::Durability)).
    pub async fn wait(self) -> Result<()> {
        self.0.await.unwrap_or(Err(StoreError::WriterStopped))
    }

    /// Blocks the current thread until the write is durable. Safe to call from any thread
    /// (unlike `blocking_recv`, it does not refuse to run inside a tokio runtime), but it does block it.
    pub fn wait_blocking(self) -> Result<()> {
        struct Unpark(Thread);
        impl Wake for Unpark {
            fn wake(self: Arc<Self>) {
                self.0.unpark();
            }
        }
        let waker = Waker::from(Arc::new(Unpark(thread::current())));
        let mut cx = Context::from_waker(&waker);
        let mut rx = self.0;
        loop {
            match std::pin::Pin::new(&mut rx).poll(&mut cx) {
                Poll::Ready(answer) => return answer.unwrap_or(Err(StoreError::WriterStopped)),
                Poll::Pending => thread::park(),
            }
        }
    }
}

/// Handle to the writer thread. Dropping it flushes the queue and joins the thread.
///
/// The thread starts with the first command the caller does not wait for. Until then the write
/// connection stays here, idle, and the store's own short writes use it ([`Writer::idle`]): a
/// `run` registers its state machine before it creates its execution, and a second connection
/// for that one write cost the file's schema parsed again, a tenth of a one-state run. So do
/// the commands whose caller waits for their commit anyway, a new execution and the append that
/// ends one ([`Writer::submit`]): a short run then starts no thread, and hands nothing over.
pub(crate) struct Writer {
    idle: Mutex<Option<Idle>>,
    sender: OnceLock<mpsc::Sender<Command>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// The write connection before the thread takes it.
pub(crate) struct Idle {
    /// The open, migrated, configured write connection.
    pub conn: Connection,
    site: WriterSite,
    /// The file's largest size seen (see [`WriterSite::file_changed`]).
    largest: u64,
}

/// What the writer needs to classify errors.
#[derive(Debug, Clone)]
pub(crate) struct WriterSite {
    pub path: PathBuf,
    pub busy_timeout: Duration,
    /// The file as opened (device, inode, size): the same file must be at `path` at every
    /// commit. `None` when it cannot be known (an in-memory database).
    pub opened: Option<(u64, u64, u64)>,
    /// Held by whoever writes in this process, the writer or the store's side connection:
    /// they queue here rather than meet SQLite's lock, whose loser sleeps 0.5 to 8 ms before it
    /// tries again (serve paid that on most executions: each takes and releases its lease on
    /// the side connection).
    pub gate: std::sync::Arc<std::sync::Mutex<()>>,
}

/// The device, inode and size of the file at `path`, if any.
pub(crate) fn file_identity(path: &std::path::Path) -> Option<(u64, u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path)
        .ok()
        .map(|m| (m.dev(), m.ino(), m.len()))
}

impl WriterSite {
    /// Whether the file at `path` is still the one opened, and not shorter than it has been
    /// (SQLite never shrinks it: no VACUUM, no auto-vacuum). A deleted file keeps taking
    /// writes through the open handle, where nobody will ever read them; a replaced one
    /// is not ours; a truncated one lost its pages. One `stat` per batch.
    fn file_changed(&self, largest: &mut u64) -> Option<StoreError> {
        let (dev, ino, _) = self.opened?;
        let how = match file_identity(&self.path) {
            None => "deleted",
            Some((d, i, _)) if (d, i) != (dev, ino) => "replaced by another file",
            Some((_, _, size)) if size < *largest => "truncated",
            Some((_, _, size)) => {
                *largest = size;
                return None;
            }
        };
        Some(StoreError::FileChanged {
            path: self.path.clone(),
            how,
        })
    }

    fn sqlite(&self, context: &'static str, err: rusqlite::Error) -> StoreError {
        StoreError::from_sqlite(&self.path, context, self.busy_timeout, err)
    }
}

impl Writer {
    /// Holds an open, migrated connection for the thread the first command starts.
    pub(crate) fn new(conn: Connection, site: WriterSite) -> Writer {
        let largest = site.opened.map_or(0, |(_, _, size)| size);
        Writer {
            idle: Mutex::new(Some(Idle {
                conn,
                site,
                largest,
            })),
            sender: OnceLock::new(),
            thread: Mutex::new(None),
        }
    }

    /// The write connection while no command has started the thread (`None` inside once one
    /// has). Holding the guard keeps the thread from starting.
    pub(crate) fn idle(&self) -> std::sync::MutexGuard<'_, Option<Idle>> {
        super::lock(&self.idle)
    }

    /// Queues a command; the returned commit resolves when it is applied.
    pub(crate) fn submit(&self, make: impl FnOnce(Reply) -> Command) -> Commit {
        let (tx, rx) = oneshot::channel();
        let command = make(Reply::new(tx));
        let queued = match self.sender.get() {
            Some(sender) => Some((sender, command)),
            None => self
                .apply_idle(command)
                .and_then(|command| Some((self.start()?, command))),
        };
        // If the thread is gone (or could not start) the command and its reply sender are
        // dropped, so the receiver resolves to WriterStopped.
        if let Some((sender, command)) = queued {
            let _ = sender.send(command);
        }
        Commit(rx)
    }

    /// Applies `command` on the caller's thread while the thread has not started, if the caller
    /// waits for its commit anyway (see [`Writer`]); gives it back otherwise.
    fn apply_idle(&self, command: Command) -> Option<Command> {
        let waited_for = match &command {
            Command::Create(..) => true,
            Command::Append(append, _) => append.finish.is_some(),
            _ => false,
        };
        if !waited_for {
            return Some(command);
        }
        let mut idle = self.idle();
        let Some(Idle {
            conn,
            site,
            largest,
        }) = idle.as_mut()
        else {
            return Some(command);
        };
        commit_checked(conn, site, largest, &mut vec![command]);
        None
    }

    /// Starts the thread on the idle connection, unless another caller just did.
    fn start(&self) -> Option<&mpsc::Sender<Command>> {
        let mut idle = self.idle();
        if let Some(Idle {
            conn,
            site,
            largest,
        }) = idle.take()
        {
            let (sender, receiver) = mpsc::channel();
            let thread = thread::Builder::new()
                .name("sfn-local-store-writer".into())
                .spawn(move || run(conn, receiver, site, largest))
                .ok()?;
            *super::lock(&self.thread) = Some(thread);
            let _ = self.sender.set(sender);
        }
        drop(idle);
        self.sender.get()
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Closing the channel ends the thread's loop after it has applied everything queued.
        self.sender.take();
        if let Some(thread) = super::lock(&self.thread).take() {
            let _ = thread.join();
        }
    }
}

/// The WAL's size, in 4 KiB pages (64 MiB), from which the writer asks for a checkpoint after
/// a commit. A `run` of tens of thousands of events, or a server answering small requests,
/// then checkpoints rarely or never (each checkpoint costs fsyncs and copies every page again),
/// and a long Map run's WAL starts over at about this size.
const CHECKPOINT_PAGES: i32 = 16_384;

/// The WAL's size, in 4 KiB pages (1 GiB), past which the writer checkpoints it itself. While
/// writes keep coming (a Map run of a million children), the WAL grows to this and starts over;
/// once they stop, the checkpointer's next copy is whole and the WAL starts over at once.
const WAL_BACKSTOP_PAGES: i32 = 262_144;

/// A thread that checkpoints the WAL when the writer asks (see the module's overview).
struct Checkpointer {
    ask: mpsc::SyncSender<()>,
}

impl Checkpointer {
    /// Starts on its own connection to the file at `path`; `None` for a database that is not
    /// a file, or if the thread cannot start (the writer's own checkpoints then do it).
    fn start(site: &WriterSite) -> Option<Checkpointer> {
        site.opened?;
        let conn = Connection::open(&site.path).ok()?;
        conn.busy_timeout(site.busy_timeout).ok()?;
        super::no_checkpoint_on_close(&conn).ok()?;
        let (ask, asked) = mpsc::sync_channel::<()>(1);
        thread::Builder::new()
            .name("sfn-local-store-checkpoint".into())
            .spawn(move || {
                while asked.recv().is_ok() {
                    // One that cannot copy (busy) is tried again next time.
                    checkpoint_here(&conn);
                }
            })
            .ok()?;
        Some(Checkpointer { ask })
    }

    /// Asks for a checkpoint, unless one is already asked for.
    fn ask(&self) {
        let _ = self.ask.try_send(());
    }
}

/// The commands taken off the channel and not yet applied (see the module's overview).
#[derive(Default)]
struct Queued {
    foreground: VecDeque<Command>,
    background: VecDeque<Command>,
}

impl Queued {
    fn push(&mut self, command: Command) {
        match command {
            Command::MapRun(..) | Command::MapRunChild(..) | Command::Barrier(..) => {
                self.background.push_back(command)
            }
            Command::Create(..) | Command::Append(..) => self.foreground.push_back(command),
        }
    }

    fn is_empty(&self) -> bool {
        self.foreground.is_empty() && self.background.is_empty()
    }

    /// The next transaction's commands: the foreground first, then some background.
    fn next_batch(&mut self, batch: &mut Vec<Command>) {
        let foreground = self.foreground.len().min(MAX_BATCH);
        batch.extend(self.foreground.drain(..foreground));
        let background = self.background.len().min(BACKGROUND_PER_BATCH);
        batch.extend(self.background.drain(..background));
    }
}

/// Takes what the channel holds (up to a batch of foreground), waiting only if nothing is
/// queued; `false` once the channel is closed.
fn take(receiver: &mpsc::Receiver<Command>, queued: &mut Queued) -> bool {
    if queued.is_empty() {
        match receiver.recv() {
            Ok(command) => queued.push(command),
            Err(_) => return false,
        }
    }
    while queued.foreground.len() < MAX_BATCH {
        match receiver.try_recv() {
            Ok(command) => queued.push(command),
            Err(mpsc::TryRecvError::Empty) => break,
            Err(mpsc::TryRecvError::Disconnected) => return false,
        }
    }
    true
}

fn run(
    mut conn: Connection,
    receiver: mpsc::Receiver<Command>,
    site: WriterSite,
    mut largest: u64,
) {
    let mut batch = Vec::new();
    let mut queued = Queued::default();
    let mut checkpointer = None;
    // The hook replaces SQLite's automatic checkpoints: `checkpoint_if_due` does them.
    conn.wal_hook(Some(note_wal_pages));
    let mut open = true;
    // Once the channel is closed, what is queued is still applied.
    while open || !queued.is_empty() {
        open = open && take(&receiver, &mut queued);
        queued.next_batch(&mut batch);
        if batch.is_empty() {
            continue;
        }
        commit_checked(&mut conn, &site, &mut largest, &mut batch);
        checkpoint_if_due(&conn, &site, &mut checkpointer);
    }
}

thread_local! {
    /// The WAL's size in pages after the writer's latest commit (set by [`note_wal_pages`]).
    static WAL_PAGES: std::cell::Cell<i32> = const { std::cell::Cell::new(0) };
}

/// SQLite's WAL hook: runs on the writer's thread inside each commit.
fn note_wal_pages(_: &rusqlite::hooks::Wal, pages: std::ffi::c_int) -> rusqlite::Result<()> {
    WAL_PAGES.with(|p| p.set(pages));
    Ok(())
}

/// After a commit: asks the checkpointer to copy a WAL of [`CHECKPOINT_PAGES`] or more, and
/// copies it on the writer's own thread past [`WAL_BACKSTOP_PAGES`] (or with no checkpointer,
/// from [`CHECKPOINT_PAGES`], as SQLite's automatic checkpoint would). The checkpointer's copies
/// never wholly catch up with a writer that keeps writing, and only a wholly copied WAL starts
/// over; the writer's own copy does catch up, stalling every caller for a moment.
///
/// The checkpointer starts at the first WAL that large (`checkpointer` is `None` until then):
/// most processes, a short `run`, never need its thread and connection.
fn checkpoint_if_due(
    conn: &Connection,
    site: &WriterSite,
    checkpointer: &mut Option<Option<Checkpointer>>,
) {
    let pages = WAL_PAGES.with(|p| p.replace(0));
    if pages < CHECKPOINT_PAGES {
        return;
    }
    match checkpointer.get_or_insert_with(|| Checkpointer::start(site)) {
        Some(_) if pages >= WAL_BACKSTOP_PAGES => checkpoint_here(conn),
        Some(c) => c.ask(),
        None => checkpoint_here(conn),
    }
}

/// A PASSIVE checkpoint on `conn` (what SQLite's automatic one runs): it copies what it can
/// without blocking anyone.
fn checkpoint_here(conn: &Connection) {
    let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
}

/// [`commit_batch`], unless the file at the path is no longer the one opened: then every
/// command of `batch` gets that error (see [`WriterSite::file_changed`]).
fn commit_checked(
    conn: &mut Connection,
    site: &WriterSite,
    largest: &mut u64,
    batch: &mut Vec<Command>,
) {
    match site.file_changed(largest) {
        Some(err) => {
            let outcomes = vec![Err(err); batch.len()];
            answer(batch.drain(..), outcomes);
        }
        None => commit_batch(conn, site, batch),
    }
}

/// Applies and answers every command in `batch`, leaving it empty.
fn commit_batch(conn: &mut Connection, site: &WriterSite, batch: &mut Vec<Command>) {
    match apply(conn, site, batch) {
        Ok(outcomes) => answer(batch.drain(..), outcomes),
        // Nothing a retry would change (the lock stayed busy for the whole timeout, the file is
        // unwritable or damaged): every caller gets the same answer, without waiting again.
        Err(err) if batch.len() == 1 || !worth_retrying_alone(&err) => {
            let outcomes = vec![Err(err); batch.len()];
            answer(batch.drain(..), outcomes);
        }
        Err(_) => {
            // Find out which command the failure belongs to: one transaction each.
            for command in batch.drain(..) {
                let single = [command];
                let outcome = match apply(conn, site, &single) {
                    Ok(mut outcomes) => outcomes.pop().unwrap_or(Ok(())),
                    Err(err) => Err(err),
                };
                answer(single, vec![outcome]);
            }
        }
    }
}

/// Whether a failed batch may still succeed command by command (e.g. a disk that fills up only for
/// the biggest command, or an SQLite error caused by one command's data).
fn worth_retrying_alone(err: &StoreError) -> bool {
    !matches!(
        err,
        StoreError::Busy { .. }
            | StoreError::ReadOnly { .. }
            | StoreError::Corrupt { .. }
            | StoreError::NotADatabase { .. }
            | StoreError::CannotOpen { .. }
            | StoreError::FileChanged { .. }
            | StoreError::SchemaTooNew { .. }
    )
}

fn answer(commands: impl IntoIterator<Item = Command>, outcomes: Vec<Result<()>>) {
    for (command, outcome) in commands.into_iter().zip(outcomes) {
        let reply = match command {
            Command::Create(_, reply)
            | Command::Append(_, reply)
            | Command::MapRunChild(_, reply)
            | Command::MapRun(_, reply)
            | Command::Barrier(reply) => reply,
        };
        reply.send(outcome);
    }
}

/// An execution touched in this batch.
struct Head<'a> {
    id: i64,
    status: String,
    /// The lease holder when the batch read the row (it cannot change during the batch: the
    /// IMMEDIATE transaction holds the write lock).
    owner: Option<String>,
    last_event_id: i64,
    /// Needs `last_event_id`/`position` written back at the end of the batch.
    dirty: bool,
    position: Option<&'a str>,
}

/// Applies `commands` in one transaction. `Ok` holds each command's own outcome (refused commands
/// wrote nothing); `Err` means the transaction failed and nothing was kept.
fn apply(
    conn: &mut Connection,
    site: &WriterSite,
    commands: &[Command],
) -> Result<Vec<Result<()>>> {
    let _gate = super::lock(&site.gate);
    let tx = lock::begin_immediate(conn, site.busy_timeout)
        .map_err(|e| site.sqlite("begin write transaction", e))?;
    // A newer sfn-local may have migrated the file since it was opened: its schema is not
    // this build's to write (reading the header costs no I/O inside the transaction).
    let version: i64 = tx
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(|e| site.sqlite("read schema version", e))?;
    if version > super::migrations::SCHEMA_VERSION {
        return Err(StoreError::SchemaTooNew {
            path: site.path.clone(),
            found: version,
            supported: super::migrations::SCHEMA_VERSION,
        });
    }
    let mut heads: HashMap<&str, Head<'_>> = HashMap::new();
    // Events of accepted commands, inserted together at the end (multi-row statements).
    let mut rows: Vec<(i64, &NewEvent)> = Vec::new();
    let mut outcomes = Vec::with_capacity(commands.len());
    for command in commands {
        let outcome = match command {
            Command::Create(new, _) => create(&tx, site, &mut heads, &mut rows, new)?,
            Command::Append(append, _) => append_to(&tx, site, &mut heads, &mut rows, append)?,
            Command::MapRunChild(child, _) => {
                match map_runs::insert(&tx, child)
                    .map_err(|e| site.sqlite("record map run child", e))?
                {
                    true => Ok(()),
                    false => Err(StoreError::ExecutionNotFound {
                        execution: child.execution_arn.clone(),
                    }),
                }
            }
            Command::MapRun(change, _) => {
                map_runs::apply_change(&tx, change)
                    .map_err(|e| site.sqlite("record map run", e))?;
                Ok(())
            }
            Command::Barrier(_) => Ok(()),
        };
        outcomes.push(outcome);
    }
    events::insert_all(&tx, &rows).map_err(|e| site.sqlite("insert events", e))?;
    for head in heads.values().filter(|h| h.dirty) {
        executions::update_head(&tx, head.id, head.last_event_id, head.position)
            .map_err(|e| site.sqlite("update execution", e))?;
    }
    tx.commit().map_err(|e| site.sqlite("commit", e))?;
    Ok(outcomes)
}

/// Outer `Err`: the transaction failed. Inner `Err`: this command is refused, nothing written.
type Step = Result<Result<()>>;

fn create<'a>(
    tx: &Connection,
    site: &WriterSite,
    heads: &mut HashMap<&'a str, Head<'a>>,
    rows: &mut Vec<(i64, &'a NewEvent)>,
    new: &'a NewExecution,
) -> Step {
    let arn = new.execution_arn.as_str();
    if let Err(violation) = events::check_contiguous(0, &new.events) {
        return Ok(Err(refusal(arn, violation)));
    }
    let last_event_id = new.events.last().map_or(0, |e| e.id);
    let Some(id) = executions::insert(tx, new, last_event_id)
        .map_err(|e| site.sqlite("insert execution", e))?
    else {
        return Ok(Err(StoreError::ExecutionAlreadyExists {
            execution_arn: arn.to_owned(),
        }));
    };
    rows.extend(new.events.iter().map(|e| (id, e)));
    heads.insert(
        arn,
        Head {
            id,
            status: ExecutionStatus::Running.as_str().to_owned(),
            owner: new.owner.clone(),
            last_event_id,
            dirty: false,
            position: None,
        },
    );
    Ok(Ok(()))
}

fn append_to<'a>(
    tx: &Connection,
    site: &WriterSite,
    heads: &mut HashMap<&'a str, Head<'a>>,
    rows: &mut Vec<(i64, &'a NewEvent)>,
    append: &'a Append,
) -> Step {
    let arn = append.execution_arn.as_str();
    let head = match heads.entry(arn) {
        std::collections::hash_map::Entry::Occupied(entry) => entry.into_mut(),
        std::collections::hash_map::Entry::Vacant(entry) => {
            match executions::write_head(tx, arn).map_err(|e| site.sqlite("read execution", e))? {
                Some(stored) => entry.insert(Head {
                    id: stored.id,
                    status: stored.status,
                    owner: stored.owner,
                    last_event_id: stored.last_event_id,
                    dirty: false,
                    position: None,
                }),
                None => {
                    return Ok(Err(StoreError::ExecutionNotFound {
                        execution: arn.to_owned(),
                    }))
                }
            }
        }
    };
    // Fencing first: a runner that lost its lease is told so, whatever the new owner did.
    if let Some(writer) = &append.owner {
        if head.owner.as_deref() != Some(writer.as_str()) {
            return Ok(Err(StoreError::LeaseLost {
                execution_arn: arn.to_owned(),
                owner: writer.clone(),
                held_by: head.owner.clone(),
            }));
        }
    }
    if head.status != ExecutionStatus::Running.as_str() {
        return Ok(Err(StoreError::ExecutionNotRunning {
            execution_arn: arn.to_owned(),
            status: head.status.clone(),
        }));
    }
    if let Err(violation) = events::check_contiguous(head.last_event_id, &append.events) {
        return Ok(Err(refusal(arn, violation)));
    }
    if let Some(finish) = &append.finish {
        if !finish.status.is_terminal() {
            return Ok(Err(StoreError::InvalidWrite {
                execution_arn: arn.to_owned(),
                reason: "an execution cannot finish as RUNNING".into(),
            }));
        }
    }
    rows.extend(append.events.iter().map(|e| (head.id, e)));
    if let Some(last) = append.events.last() {
        head.last_event_id = last.id;
        head.dirty = true;
    }
    if let Some(position) = &append.position {
        head.position = Some(position);
        head.dirty = true;
    }
    if let Some(finish) = &append.finish {
        executions::finish(tx, head.id, finish).map_err(|e| site.sqlite("finish execution", e))?;
        head.status = finish.status.as_str().to_owned();
    }
    Ok(Ok(()))
}

fn refusal(arn: &str, violation: Violation) -> StoreError {
    match violation {
        Violation::NotContiguous { expected, found } => StoreError::EventIdNotContiguous {
            execution_arn: arn.to_owned(),
            expected,
            found,
        },
        Violation::Invalid(reason) => StoreError::InvalidWrite {
            execution_arn: arn.to_owned(),
            reason,
        },
    }
}
