//! A distributed Map's finished child executions, kept in the store so that a resumed Map run
//! takes their results instead of running them again.
//!
//! Replaying the parent's history cannot do this on its own: a child's events are its own
//! history, not the parent's (AWS writes only `MapRunStarted` and `MapRunSucceeded`/`Failed`
//! there). Each finished child is submitted to the store as it finishes, without waiting; a
//! record lost in a crash means that child runs again, which a Map run allows (at least once).
//!
//! The journal also keeps each Map run and its child executions as the API shows them
//! (DescribeMapRun, ListMapRuns, ListExecutions with `mapRunArn`), and reads back the settings
//! UpdateMapRun changes while the run goes, and each child's own history (GetExecutionHistory
//! of a child), through [`ChildHistorySink`].
//!
//! Nothing here waits for its write, but a run does not get ahead of the store either: the
//! journal keeps the answers of its latest writes, and [`MapRunJournal::throttle`] (awaited
//! before each child starts) waits while more than [`MAX_PENDING_WRITES`] are not committed.
//! So a run of a million children holds a bounded queue of writes, not a backlog of them, and
//! other clients' writes wait behind a few hundred of its, not hundreds of thousands.

use crate::asl::error::StatesError;
use crate::engine::history::{HistoryEvent, HistorySink};
use crate::store::Commit;
use crate::store::{
    MapRunChange, MapRunChild, MapRunExecution, MapRunSettings, NewEvent, NewMapRun, Store,
};
use crate::tasks::s3::ChildResult;
use serde_json::{json, Value};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;

/// The most writes of one execution's Map runs that may wait for the store's writer.
pub const MAX_PENDING_WRITES: usize = 256;

/// The journal of one execution's Map runs.
pub struct MapRunJournal {
    store: Arc<Store>,
    execution_arn: String,
    /// The answers of the writes not yet known to be committed, oldest first.
    pending: RefCell<VecDeque<Commit>>,
    /// Whose turn it is to wait in [`MapRunJournal::throttle`]: children wait one at a time,
    /// or each would take one answer off the queue and all would go on at once.
    turn: tokio::sync::Mutex<()>,
}

impl MapRunJournal {
    /// The journal of `execution_arn`'s Map runs in `store`.
    pub fn new(store: Arc<Store>, execution_arn: &str) -> Self {
        MapRunJournal {
            store,
            execution_arn: execution_arn.to_owned(),
            pending: RefCell::new(VecDeque::new()),
            turn: tokio::sync::Mutex::new(()),
        }
    }

    /// Waits while more than [`MAX_PENDING_WRITES`] of this journal's writes wait for the
    /// writer. The writer commits in submission order, so the oldest answer comes first.
    pub(crate) async fn throttle(&self) {
        self.wait_pending(MAX_PENDING_WRITES).await;
    }

    /// Waits until at most `keep` of this journal's writes wait for the writer.
    async fn wait_pending(&self, keep: usize) {
        let _turn = self.turn.lock().await;
        loop {
            let oldest = {
                let mut pending = self.pending.borrow_mut();
                if pending.len() <= keep {
                    return;
                }
                pending.pop_front()
            };
            if let Some(commit) = oldest {
                // A failed write only means that child runs again on resume.
                let _ = commit.wait().await;
            }
        }
    }

    /// Keeps a write's answer for [`MapRunJournal::throttle`].
    fn keep(&self, commit: Commit) {
        self.pending.borrow_mut().push_back(commit);
    }

    /// Waits until every write this journal submitted is done: the writer commits in
    /// submission order. (A write that failed shows as a record missing when it is read.)
    pub(crate) async fn settle(&self) {
        self.wait_pending(0).await;
    }

    /// The children of run `run_key` that finished in an earlier run of this execution, read
    /// as the run reaches them. A record that cannot be read is not finished: that child runs
    /// again.
    pub(crate) fn finished(self: &Rc<Self>, run_key: &str) -> IndexCursor<ChildResult> {
        let (journal, run_key) = (self.clone(), run_key.to_owned());
        IndexCursor::new(move |from| {
            let rows = journal
                .store
                .map_run_children(&journal.execution_arn, &run_key, from as i64, PAGE as i64)
                .unwrap_or_default();
            rows.into_iter()
                .filter_map(|(index, child)| {
                    let child = serde_json::from_str(&child).ok().and_then(decode);
                    Some((usize::try_from(index).ok()?, child))
                })
                .collect()
        })
    }

    /// Keeps a finished child (submitted, not waited for).
    pub(crate) fn record(&self, run_key: &str, index: usize, child: &ChildResult) {
        self.keep(self.store.record_map_run_child(MapRunChild {
            execution_arn: self.execution_arn.clone(),
            run_key: run_key.to_owned(),
            item_index: index as i64,
            child: encode(child).to_string(),
        }));
    }
}

impl MapRunJournal {
    /// Records a run starting, resuming or redriven (submitted, not waited for).
    pub(crate) fn run_started(&self, run: NewMapRun) {
        self.keep(self.store.record_map_run(MapRunChange::Started(run)));
    }

    /// Records how many items and child executions a run has.
    pub(crate) fn run_sized(&self, map_run_arn: &str, items: usize, executions: usize) {
        self.keep(self.store.record_map_run(MapRunChange::Sized {
            map_run_arn: map_run_arn.to_owned(),
            items: items as i64,
            executions: executions as i64,
        }));
    }

    /// Records a child execution starting.
    pub(crate) fn child_started(&self, child: MapRunExecution) {
        self.keep(self.store.record_map_run(MapRunChange::ChildStarted(child)));
    }

    /// Records a child execution ending with `status`.
    pub(crate) fn child_ended(&self, child: &ChildResult, status: &str) {
        let (output, error, cause) = match &child.result {
            Ok(output) => (Some(output.to_string()), None, None),
            Err(e) => (None, e.error.clone(), e.cause.clone()),
        };
        self.keep(self.store.record_map_run(MapRunChange::ChildEnded {
            execution_arn: child.execution_arn.clone(),
            status: status.to_owned(),
            stop_date_ms: child.stop,
            output,
            error,
            cause,
        }));
    }

    /// A history sink keeping child execution `execution_arn`'s events with its run, so
    /// GetExecutionHistory reads them as AWS keeps a child's history.
    pub(crate) fn child_history(self: &Rc<Self>, execution_arn: &str) -> ChildHistorySink {
        ChildHistorySink {
            journal: self.clone(),
            execution_arn: execution_arn.to_owned(),
        }
    }

    /// Records a run ending; its children still running are aborted.
    pub(crate) fn run_ended(
        &self,
        map_run_arn: &str,
        status: &str,
        stop: i64,
        written: (i64, i64),
    ) {
        self.keep(self.store.record_map_run(MapRunChange::Ended {
            map_run_arn: map_run_arn.to_owned(),
            status: status.to_owned(),
            stop_date_ms: stop,
            items_written: written.0,
            executions_written: written.1,
        }));
    }

    /// The settings in force for a run (UpdateMapRun changes them); `None` if unreadable.
    pub(crate) fn settings(&self, map_run_arn: &str) -> Option<MapRunSettings> {
        self.store.map_run_settings(map_run_arn).ok().flatten()
    }

    /// The names of a run's child executions recorded before (a resumed or redriven run), read
    /// as the run reaches them: an item run again keeps its execution.
    pub(crate) fn child_names(self: &Rc<Self>, map_run_arn: &str) -> IndexCursor<String> {
        let (journal, map_run_arn) = (self.clone(), map_run_arn.to_owned());
        IndexCursor::new(move |from| {
            let rows = journal
                .store
                .map_run_child_names(&map_run_arn, from as i64, PAGE as i64)
                .unwrap_or_default();
            rows.into_iter()
                .filter_map(|(index, name)| Some((usize::try_from(index).ok()?, Some(name))))
                .collect()
        })
    }
}

/// How many rows an [`IndexCursor`] reads at a time.
const PAGE: usize = 512;

/// A Map run's rows by item index (its finished children, its children's names), read from
/// the store a page at a time as the run reaches them: the run asks in increasing index
/// order, so a resumed run of a million children holds a page of them, not a million.
pub(crate) struct IndexCursor<T> {
    /// The rows from an index on (at most a page).
    fetch: Box<dyn FnMut(usize) -> Vec<Row<T>>>,
    page: VecDeque<Row<T>>,
    /// Where the next page starts.
    from: usize,
    exhausted: bool,
}

/// One row of an [`IndexCursor`]: its item index, and its value (`None`: it cannot be read).
type Row<T> = (usize, Option<T>);

impl<T> IndexCursor<T> {
    fn new(fetch: impl FnMut(usize) -> Vec<Row<T>> + 'static) -> Self {
        IndexCursor {
            fetch: Box::new(fetch),
            page: VecDeque::new(),
            from: 0,
            exhausted: false,
        }
    }

    /// A cursor with no rows (a run without a store, or a fresh one).
    pub(crate) fn empty() -> Self {
        IndexCursor {
            exhausted: true,
            ..IndexCursor::new(|_| Vec::new())
        }
    }

    /// The row of item `index`, if there is one; rows before it are let go.
    pub(crate) fn take(&mut self, index: usize) -> Option<T> {
        loop {
            while self.page.front().is_some_and(|(i, _)| *i < index) {
                self.page.pop_front();
            }
            match self.page.front() {
                Some((i, _)) if *i == index => return self.page.pop_front().and_then(|(_, t)| t),
                Some(_) => return None,
                None if self.exhausted => return None,
                None => {
                    let rows = (self.fetch)(self.from.max(index));
                    self.exhausted = rows.len() < PAGE;
                    if let Some((last, _)) = rows.last() {
                        self.from = last + 1;
                    }
                    self.page.extend(rows);
                }
            }
        }
    }
}

/// Writes a Map run child's events to the store (submitted, never waited for: a child whose
/// events a crash loses runs again, with a history of its own again).
pub(crate) struct ChildHistorySink {
    journal: Rc<MapRunJournal>,
    execution_arn: String,
}

impl HistorySink for ChildHistorySink {
    fn submit(&mut self, events: Vec<HistoryEvent>) {
        if events.is_empty() {
            return;
        }
        let events = events
            .into_iter()
            .map(|e| NewEvent {
                id: e.id,
                previous_event_id: e.previous_event_id,
                timestamp_ms: e.timestamp,
                // A child never resumes from its events (it runs again), so no replay keys.
                event_type: e.event_type.as_str().into(),
                replay_key: None,
                details: e.details,
            })
            .collect();
        let journal = &self.journal;
        journal.keep(journal.store.record_map_run(MapRunChange::ChildEvents {
            execution_arn: self.execution_arn.clone(),
            events,
        }));
    }

    fn flush(&mut self) -> Pin<Box<dyn Future<Output = Result<(), String>>>> {
        Box::pin(async { Ok(()) })
    }
}

fn encode(child: &ChildResult) -> Value {
    let mut v = json!({
        "executionArn": child.execution_arn,
        "name": child.name,
        "input": child.input,
        "start": child.start,
        "stop": child.stop,
    });
    match &child.result {
        Ok(output) => v["output"] = output.clone(),
        Err(e) => {
            v["error"] = json!(e.error);
            v["cause"] = json!(e.cause);
        }
    }
    v
}

fn decode(mut v: Value) -> Option<ChildResult> {
    let result = match v.get_mut("output") {
        Some(output) => Ok(output.take()),
        None => Err(StatesError {
            error: v.get("error")?.as_str().map(str::to_owned),
            cause: v.get("cause")?.as_str().map(str::to_owned),
            heartbeat: false,
        }),
    };
    Some(ChildResult {
        execution_arn: v.get("executionArn")?.as_str()?.to_owned(),
        name: v.get("name")?.as_str()?.to_owned(),
        input: v.get_mut("input")?.take(),
        result,
        start: v.get("start")?.as_i64()?,
        stop: v.get("stop")?.as_i64()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn children_round_trip_through_their_json() {
        let ok = ChildResult {
            execution_arn: "arn:aws:states:us-east-1:123456789012:execution:M/L:a".into(),
            name: "a".into(),
            input: json!({"n": 1}),
            result: Ok(json!({"out": [1, null]})),
            start: 5,
            stop: 9,
        };
        let failed = ChildResult {
            result: Err(StatesError {
                error: Some("Boom".into()),
                cause: None,
                heartbeat: false,
            }),
            ..ok.clone()
        };
        for child in [ok, failed] {
            let back = decode(encode(&child)).expect("decodes");
            assert_eq!(back.execution_arn, child.execution_arn);
            assert_eq!(back.input, child.input);
            assert_eq!(back.result, child.result);
            assert_eq!((back.start, back.stop), (child.start, child.stop));
        }
    }
}
