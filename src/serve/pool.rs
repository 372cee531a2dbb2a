//! The threads executions run on. An engine's futures are not `Send`, so each thread runs a
//! single-threaded runtime with a [`tokio::task::LocalSet`] and hosts many executions at once;
//! new ones go to the threads in turn. No OS thread per execution.

use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::mpsc;

/// Work for an execution thread: called inside its `LocalSet`, so it may `spawn_local`.
pub type Job = Box<dyn FnOnce() + Send>;

/// A small, fixed set of execution threads.
pub struct ExecutionPool {
    threads: Vec<mpsc::UnboundedSender<Job>>,
    next: AtomicUsize,
}

impl ExecutionPool {
    /// Starts `threads` execution threads (at least one).
    pub fn start(threads: usize) -> std::io::Result<ExecutionPool> {
        let mut senders = Vec::new();
        for i in 0..threads.max(1) {
            let (send, mut jobs) = mpsc::unbounded_channel::<Job>();
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            std::thread::Builder::new()
                .name(format!("sfn-local-exec-{i}"))
                .spawn(move || {
                    let local = tokio::task::LocalSet::new();
                    local.block_on(&runtime, async move {
                        while let Some(job) = jobs.recv().await {
                            job();
                        }
                        // The server is stopping: keep the executions as they are (dropping an
                        // engine would record it aborted); the process ends shortly.
                        std::future::pending::<()>().await;
                    });
                })?;
            senders.push(send);
        }
        Ok(ExecutionPool {
            threads: senders,
            next: AtomicUsize::new(0),
        })
    }

    /// How many execution threads run.
    pub fn len(&self) -> usize {
        self.threads.len()
    }

    /// Always false: a pool has at least one thread.
    pub fn is_empty(&self) -> bool {
        self.threads.is_empty()
    }

    /// Hands a job to the next thread in turn. `false` if the threads are gone.
    pub fn spawn(&self, job: Job) -> bool {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.threads.len();
        self.threads[i].send(job).is_ok()
    }
}
