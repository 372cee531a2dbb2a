//! The history sink that writes to the store: each batch is one append, committed by the
//! store's writer thread; the last batch carries the execution's end, so the terminal event and
//! the final status are committed in one transaction.

use crate::engine::execution::{Outcome, Status};
use crate::engine::history::{HistoryEvent, HistorySink};
use crate::store::Commit;
use crate::store::{Append, ExecutionStatus, Finish, NewEvent, Store};
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;

/// How many batches may wait for the writer before the engine waits for the oldest.
const MAX_BATCHES_IN_FLIGHT: usize = 4;

/// Writes an execution's events to the store.
pub struct StoreSink {
    store: Arc<Store>,
    execution_arn: String,
    /// Batches submitted and not yet checked; the next flush awaits them all.
    pending: Vec<Commit>,
    /// The first failure seen, kept for good: every later batch continues a history that
    /// already has a hole, so its own refusal ("does not continue the history") would hide
    /// the cause. Shared with the futures `flush` returns, which find most failures.
    failed: Rc<RefCell<Option<String>>>,
    /// The runner writing: appends are fenced on its lease (see [`Append::owner`]).
    owner: Option<String>,
}

impl StoreSink {
    /// A sink appending to `execution_arn`'s history.
    pub fn new(store: Arc<Store>, execution_arn: &str) -> Self {
        StoreSink {
            store,
            execution_arn: execution_arn.to_owned(),
            pending: Vec::new(),
            failed: Rc::default(),
            owner: None,
        }
    }

    /// Fences every append on `owner`'s lease: once another runner has taken the execution
    /// over, this sink's appends are refused and nothing more is written.
    pub fn owned_by(mut self, owner: &str) -> Self {
        self.owner = Some(owner.to_owned());
        self
    }

    fn append(&mut self, events: Vec<HistoryEvent>, finish: Option<Finish>) {
        if self.failed.borrow().is_some() {
            // Nothing can continue a history with a hole; the failure is reported at flush.
            return;
        }
        let events = events
            .into_iter()
            .map(|e| NewEvent {
                id: e.id,
                previous_event_id: e.previous_event_id,
                timestamp_ms: e.timestamp,
                event_type: e.event_type.as_str().into(),
                replay_key: e.replay_key,
                details: e.details,
            })
            .collect();
        let commit = self.store.append(Append {
            execution_arn: self.execution_arn.clone(),
            events,
            position: None,
            finish,
            owner: self.owner.clone(),
        });
        // The engine does not wait for each batch; the writer applies them in order and the
        // next flush reports the first failure. When the writer falls behind, wait for the
        // oldest batch: memory stays bounded however fast the engine produces events.
        self.pending.push(commit);
        if self.pending.len() > MAX_BATCHES_IN_FLIGHT {
            let oldest = self.pending.remove(0);
            if let Err(e) = oldest.wait_blocking() {
                self.failed.borrow_mut().get_or_insert(e.to_string());
            }
        }
    }
}

/// The store's status for an engine outcome.
pub fn store_status(status: Status) -> ExecutionStatus {
    match status {
        Status::Succeeded => ExecutionStatus::Succeeded,
        Status::Failed => ExecutionStatus::Failed,
        Status::TimedOut => ExecutionStatus::TimedOut,
        Status::Aborted => ExecutionStatus::Aborted,
    }
}

impl HistorySink for StoreSink {
    fn submit(&mut self, events: Vec<HistoryEvent>) {
        self.append(events, None);
    }

    fn finish(&mut self, events: Vec<HistoryEvent>, outcome: &Outcome) {
        let (error, cause) = match (&outcome.error, outcome.status) {
            // AWS's DescribeExecution has no error or cause for a timed-out execution.
            (_, Status::TimedOut) => (None, None),
            (Some(e), _) => (e.error.clone(), e.cause.clone()),
            (None, _) => (None, None),
        };
        self.append(
            events,
            Some(Finish {
                status: store_status(outcome.status),
                output: outcome.output_text().map(String::from),
                error,
                cause,
                stop_date_ms: outcome.stop_time,
            }),
        );
    }

    fn flush(&mut self) -> Pin<Box<dyn Future<Output = Result<(), String>>>> {
        let pending = std::mem::take(&mut self.pending);
        let failed = self.failed.clone();
        Box::pin(async move {
            for commit in pending {
                if let Err(e) = commit.wait().await {
                    failed.borrow_mut().get_or_insert(e.to_string());
                    break;
                }
            }
            match &*failed.borrow() {
                Some(e) => Err(e.clone()),
                None => Ok(()),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::history::EventType;
    use crate::store::{NewExecution, StoreOptions};
    use std::time::Duration;

    fn event(id: i64) -> HistoryEvent {
        HistoryEvent {
            id,
            previous_event_id: id - 1,
            timestamp: 0,
            event_type: EventType::PassStateEntered,
            details: None,
            replay_key: None,
        }
    }

    // Regression (load test on CI): a batch lost to a busy lock was reported as the next
    // batch's "event id 5 does not continue the history" instead of the lock.
    #[test]
    fn the_first_failure_is_the_one_reported() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("state.db");
        let options = StoreOptions {
            busy_timeout: Duration::from_millis(50),
            ..StoreOptions::default()
        };
        let store = Arc::new(Store::open(&path, options).expect("open"));
        let arn = "arn:aws:states:us-east-1:123456789012:execution:M:e";
        store
            .create_execution(NewExecution::bare(arn))
            .wait_blocking()
            .expect("create");
        let mut sink = StoreSink::new(store.clone(), arn);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");

        let holder = rusqlite::Connection::open(&path).expect("raw");
        holder
            .execute_batch("BEGIN IMMEDIATE")
            .expect("take the lock");
        sink.submit((1..=4).map(event).collect());
        let err = runtime.block_on(sink.flush()).expect_err("locked");
        assert!(err.contains("stayed locked"), "{err}");
        holder.execute_batch("COMMIT").expect("release");

        sink.submit((5..=6).map(event).collect());
        let err = runtime.block_on(sink.flush()).expect_err("still failed");
        assert!(err.contains("stayed locked"), "{err}");
        assert!(store.history(arn, false).expect("history").is_empty());
    }
}
