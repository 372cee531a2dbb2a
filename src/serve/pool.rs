//! The threads executions run on. An engine's futures are not `Send`, so each thread runs a
//! single-threaded runtime with a [`tokio::task::LocalSet`] and hosts many executions at once.
//! No OS thread per execution.
//!
//! A thread can be held: an execution evaluating a long expression does not yield until the
//! evaluation ends (JSONata stops one after 10 s), and everything else on that thread waits.
//! So a new execution never goes to a thread in turn. Each thread's [`Load`] says how many
//! executions it hosts and whether one of them is inside a long poll now, or was a moment ago;
//! a new execution goes to the least loaded thread that is free, and when every thread is
//! held, to a new thread (up to [`MAX_THREADS_PER_START`] times the starting count). So
//! StartExecution, which waits for its execution's row to be committed on that thread, never
//! waits behind another execution's evaluation.

use futures_util::future::LocalBoxFuture;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, RwLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Work for an execution thread: called on it, it returns the execution's future, which the
/// thread runs (measured) in its `LocalSet`.
pub type Job = Box<dyn FnOnce() -> LocalBoxFuture<'static, ()> + Send>;

/// A poll longer than this holds its thread: new executions go elsewhere.
const LONG_POLL: Duration = Duration::from_millis(10);

/// How long after a long poll ended its thread still counts as held: an execution that
/// evaluates in a loop yields only for a moment between evaluations.
const HELD_AFTER: Duration = Duration::from_millis(500);

/// The most threads a pool grows to, as a multiple of the threads it started with.
pub const MAX_THREADS_PER_START: usize = 8;

/// One execution thread as the dispatcher sees it.
#[derive(Default)]
struct Load {
    /// Executions hosted (started and not yet ended).
    executions: AtomicUsize,
    /// When the poll running now started (microseconds since [`epoch`]), 0 when none runs.
    polling_since: AtomicU64,
    /// Until when the thread counts as held after a long poll (microseconds since [`epoch`]).
    held_until: AtomicU64,
}

impl Load {
    /// Whether a new execution sent here now would wait behind another one's long poll.
    fn is_held(&self, now: u64) -> bool {
        let since = self.polling_since.load(Ordering::Relaxed);
        let polling_long = since != 0 && now.saturating_sub(since) >= micros(LONG_POLL);
        polling_long || self.held_until.load(Ordering::Relaxed) > now
    }
}

/// One thread: where to send its jobs, and its load.
struct Slot {
    jobs: mpsc::UnboundedSender<Job>,
    load: Arc<Load>,
}

/// The execution threads (see the module's overview).
pub struct ExecutionPool {
    slots: RwLock<Vec<Slot>>,
    max_threads: usize,
}

impl ExecutionPool {
    /// Starts `threads` execution threads (at least one); the pool may grow to
    /// [`MAX_THREADS_PER_START`] times as many.
    pub fn start(threads: usize) -> std::io::Result<ExecutionPool> {
        let threads = threads.max(1);
        let pool = ExecutionPool {
            slots: RwLock::new(Vec::new()),
            max_threads: threads * MAX_THREADS_PER_START,
        };
        for _ in 0..threads {
            pool.add_thread()?;
        }
        Ok(pool)
    }

    /// How many execution threads run.
    pub fn len(&self) -> usize {
        self.slots.read().map_or(0, |s| s.len())
    }

    /// Always false: a pool has at least one thread.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Hands an execution to the least loaded free thread (a new one if every thread is
    /// held and the pool may grow). `false` if the threads are gone.
    pub fn spawn(&self, job: Job) -> bool {
        let now = micros(epoch().elapsed());
        let choice = {
            let Ok(slots) = self.slots.read() else {
                return false;
            };
            let free = slots
                .iter()
                .enumerate()
                .filter(|(_, s)| !s.load.is_held(now))
                .min_by_key(|(_, s)| s.load.executions.load(Ordering::Relaxed))
                .map(|(i, _)| i);
            match free {
                Some(i) => Some(i),
                None if slots.len() >= self.max_threads => {
                    // Every thread held and no room to grow: the one held the shortest.
                    slots
                        .iter()
                        .enumerate()
                        .min_by_key(|(_, s)| s.load.executions.load(Ordering::Relaxed))
                        .map(|(i, _)| i)
                }
                None => None,
            }
        };
        let index = match choice {
            Some(i) => i,
            // A thread that cannot start (out of threads): the first one, as before.
            None => self.add_thread().unwrap_or_default(),
        };
        let Ok(slots) = self.slots.read() else {
            return false;
        };
        let Some(slot) = slots.get(index) else {
            return false;
        };
        slot.load.executions.fetch_add(1, Ordering::Relaxed);
        slot.jobs.send(job).is_ok()
    }

    /// Starts one more thread; its index.
    fn add_thread(&self) -> std::io::Result<usize> {
        let mut slots = self
            .slots
            .write()
            .map_err(|_| std::io::Error::other("the execution pool is poisoned"))?;
        let index = slots.len();
        let (send, mut jobs) = mpsc::unbounded_channel::<Job>();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let load = Arc::new(Load::default());
        let thread_load = load.clone();
        std::thread::Builder::new()
            .name(format!("sfn-local-exec-{index}"))
            .stack_size(crate::depth::THREAD_STACK_BYTES)
            .spawn(move || {
                let local = tokio::task::LocalSet::new();
                local.block_on(&runtime, async move {
                    while let Some(job) = jobs.recv().await {
                        let execution = job();
                        tokio::task::spawn_local(Measured {
                            inner: execution,
                            load: thread_load.clone(),
                        });
                    }
                    // The server is stopping: keep the executions as they are (dropping an
                    // engine would record it aborted); the process ends shortly.
                    std::future::pending::<()>().await;
                });
            })?;
        slots.push(Slot { jobs: send, load });
        Ok(index)
    }
}

/// An execution's future, telling its thread's [`Load`] how long each poll takes.
struct Measured {
    inner: LocalBoxFuture<'static, ()>,
    load: Arc<Load>,
}

impl Future for Measured {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let started = micros(epoch().elapsed()).max(1);
        self.load.polling_since.store(started, Ordering::Relaxed);
        let polled = self.inner.as_mut().poll(cx);
        let ended = micros(epoch().elapsed());
        self.load.polling_since.store(0, Ordering::Relaxed);
        if ended.saturating_sub(started) >= micros(LONG_POLL) {
            self.load
                .held_until
                .store(ended + micros(HELD_AFTER), Ordering::Relaxed);
        }
        polled
    }
}

impl Drop for Measured {
    fn drop(&mut self) {
        self.load.executions.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The instant the pool's times count from.
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn micros(d: Duration) -> u64 {
    d.as_micros() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Holds one thread of `pool` (a long synchronous evaluation) until the sender is dropped
    /// or sent to, and waits until it has been held long enough to count.
    fn hold_a_thread(pool: &ExecutionPool) -> std::sync::mpsc::Sender<()> {
        let (held, is_held) = std::sync::mpsc::channel();
        let (release, released) = std::sync::mpsc::channel::<()>();
        assert!(pool.spawn(Box::new(move || {
            Box::pin(async move {
                held.send(()).unwrap();
                let _ = released.recv();
            })
        })));
        is_held.recv().unwrap();
        std::thread::sleep(LONG_POLL * 2);
        release
    }

    /// Whether a new execution on `pool` starts within two seconds.
    fn starts_at_once(pool: &ExecutionPool) -> bool {
        let (started, is_started) = std::sync::mpsc::channel();
        assert!(pool.spawn(Box::new(move || {
            Box::pin(async move { started.send(()).unwrap() })
        })));
        is_started.recv_timeout(Duration::from_secs(2)).is_ok()
    }

    /// Regression (#38): an execution spinning on its thread made every other start sent to
    /// that thread wait for it.
    #[test]
    fn a_held_thread_gets_no_new_execution() {
        let pool = ExecutionPool::start(2).unwrap();
        let _release = hold_a_thread(&pool);
        for _ in 0..10 {
            assert!(
                starts_at_once(&pool),
                "a start waited behind the held thread"
            );
        }
    }

    /// When every thread is held, the pool grows instead of queueing behind one.
    #[test]
    fn every_thread_held_starts_another() {
        let pool = ExecutionPool::start(1).unwrap();
        let _release = hold_a_thread(&pool);
        assert!(
            starts_at_once(&pool),
            "the start waited behind the only thread"
        );
        assert_eq!(pool.len(), 2);
    }
}
