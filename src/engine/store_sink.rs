//! The history sink that writes to the store: each batch is one append, committed by the
//! store's writer thread; the last batch carries the execution's end, so the terminal event and
//! the final status are committed in one transaction.

use crate::engine::execution::{Outcome, Status};
use crate::engine::history::{HistoryEvent, HistorySink};
use crate::store::Commit;
use crate::store::{Append, ExecutionStatus, Finish, NewEvent, Store, KEY_SEPARATOR};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// How many batches may wait for the writer before the engine waits for the oldest.
const MAX_BATCHES_IN_FLIGHT: usize = 4;

/// Writes an execution's events to the store.
pub struct StoreSink {
    store: Arc<Store>,
    execution_arn: String,
    /// Batches submitted and not yet checked; the next flush awaits them all.
    pending: Vec<Commit>,
    /// The first failure seen while waiting for an old batch.
    failed: Option<String>,
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
            failed: None,
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
        let events = events
            .into_iter()
            .map(|e| NewEvent {
                id: e.id,
                previous_event_id: e.previous_event_id,
                timestamp_ms: e.timestamp,
                event_type: match e.replay_key {
                    Some(key) => format!("{}{KEY_SEPARATOR}{key}", e.event_type.as_str()),
                    None => e.event_type.as_str().to_owned(),
                },
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
                self.failed.get_or_insert(e.to_string());
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
                output: outcome.output.as_ref().map(|v| v.to_string()),
                error,
                cause,
                stop_date_ms: outcome.stop_time,
            }),
        );
    }

    fn flush(&mut self) -> Pin<Box<dyn Future<Output = Result<(), String>>>> {
        let pending = std::mem::take(&mut self.pending);
        let failed = self.failed.take();
        Box::pin(async move {
            if let Some(e) = failed {
                return Err(e);
            }
            for commit in pending {
                commit.wait().await.map_err(|e| e.to_string())?;
            }
            Ok(())
        })
    }
}
