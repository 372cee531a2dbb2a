//! Resuming an execution by deterministic replay of its stored history.
//!
//! Every event the engine writes carries a *replay key*: the name of the lane that wrote it and
//! its sequence number in that lane (`r:4`, `r:3/2:0`). A lane is one sequential flow: the top
//! level, one Parallel branch, one Map iteration. States in a lane run one after the other, so a
//! lane's events come in the same order however the lanes around it were scheduled; a child
//! lane's name is built from the event that opened it (the `MapStateStarted` or
//! `ParallelStateStarted` of its attempt) and its index, so it is unique and the same in every
//! run.
//!
//! On resume the engine runs the machine again from the start with the recorded events at hand:
//!
//! - a state whose `*StateExited` is recorded is not run: its recorded output and assigned
//!   variables are taken, and its lane moves past its events;
//! - any other event the engine would write is first looked up by its key: if it is recorded,
//!   its id (and timestamp) is used and nothing is written; otherwise it is written for real,
//!   after the last recorded event, so ids stay contiguous and no event is written twice;
//! - waits and deadlines count from the recorded timestamps, so a resumed Wait ends when it would
//!   have ended (or at once); task tokens are found again by the key of their `TaskScheduled`
//!   event, so answers given while no runner was alive are honoured.

use crate::clock::Millis;
use crate::engine::history::{EventId, EventType};
use crate::store::EventRecord;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

/// One sequential flow of events (the top level, a branch, an iteration).
#[derive(Debug)]
pub(crate) struct Lane {
    key: String,
    seq: Cell<u64>,
}

impl Lane {
    /// The top level.
    pub(crate) fn root() -> Rc<Lane> {
        Rc::new(Lane {
            key: "r".into(),
            seq: Cell::new(0),
        })
    }

    /// The top level of a distributed Map's child execution: its own name, so the keys of the
    /// child's task tokens (stored under the parent execution) are unique and the same in
    /// every run of that child.
    pub(crate) fn named(key: String) -> Rc<Lane> {
        Rc::new(Lane {
            key,
            seq: Cell::new(0),
        })
    }

    /// A child lane opened by the event with key `anchor` (its `index`-th branch or iteration).
    pub(crate) fn child(anchor: &str, index: usize) -> Rc<Lane> {
        Rc::new(Lane {
            key: format!("{anchor}/{index}"),
            seq: Cell::new(0),
        })
    }

    /// The lane's name.
    pub(crate) fn key(&self) -> &str {
        &self.key
    }

    /// The key the next event of this lane gets.
    pub(crate) fn peek(&self) -> String {
        format!("{}:{}", self.key, self.seq.get())
    }

    /// The key of the next event, consumed.
    pub(crate) fn take(&self) -> String {
        let k = self.peek();
        self.seq.set(self.seq.get() + 1);
        k
    }

    /// The key `n` events ahead.
    fn ahead(&self, n: u64) -> String {
        format!("{}:{}", self.key, self.seq.get() + n)
    }

    fn skip(&self, n: u64) {
        self.seq.set(self.seq.get() + n);
    }
}

/// A recorded event, as replay needs it.
#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    pub id: EventId,
    pub timestamp: Millis,
    pub event_type: String,
    pub details: Option<serde_json::Value>,
}

/// A state whose end is recorded: what the state loop needs to move past it.
pub(crate) struct RecordedState {
    pub entered: Recorded,
    pub exited: Recorded,
    /// The state entered next in the same lane, if recorded.
    pub next_state: Option<String>,
}

/// The recorded history of the execution being resumed, by replay key.
#[derive(Debug, Default)]
pub(crate) struct Replay {
    by_key: HashMap<String, Recorded>,
    claimed: RefCell<usize>,
}

impl Replay {
    /// Indexes the stored events (those without a key — ExecutionStarted — are skipped).
    pub(crate) fn new(events: Vec<EventRecord>) -> Replay {
        let mut by_key = HashMap::with_capacity(events.len());
        for e in events {
            if let Some(key) = e.replay_key {
                let details = e
                    .details
                    .as_deref()
                    .and_then(|d| serde_json::from_str(d).ok());
                by_key.insert(
                    key,
                    Recorded {
                        id: e.id,
                        timestamp: e.timestamp_ms,
                        event_type: e.event_type,
                        details,
                    },
                );
            }
        }
        Replay {
            by_key,
            claimed: RefCell::new(0),
        }
    }

    /// The recorded event with this key, if any.
    pub(crate) fn get(&self, key: &str) -> Option<&Recorded> {
        self.by_key.get(key)
    }

    /// Claims a recorded event for a push of `event_type` under `key`. `Err` if the key is
    /// recorded with another type: the machine no longer does what it did (never expected, since
    /// the stored definition is replayed).
    pub(crate) fn claim(
        &self,
        key: &str,
        event_type: EventType,
    ) -> Result<Option<&Recorded>, String> {
        match self.by_key.get(key) {
            None => Ok(None),
            Some(r) if r.event_type == event_type.as_str() => {
                *self.claimed.borrow_mut() += 1;
                Ok(Some(r))
            }
            Some(r) => Err(format!(
                "resume diverged from the recorded history: event {} is {} but the engine now writes {} there",
                r.id,
                r.event_type,
                event_type.as_str()
            )),
        }
    }

    /// If the state about to be entered in `lane` has its end recorded, consumes its events and
    /// returns them; the lane then stands after its `*StateExited`.
    pub(crate) fn recorded_state(
        &self,
        lane: &Lane,
        entered_type: EventType,
        exited_type: EventType,
    ) -> Option<RecordedState> {
        let entered = self.by_key.get(&lane.peek())?;
        if entered.event_type != entered_type.as_str() {
            return None;
        }
        let mut n = 1;
        loop {
            let e = self.by_key.get(&lane.ahead(n))?;
            if e.event_type.ends_with("StateEntered") {
                return None;
            }
            if e.event_type == exited_type.as_str() {
                let next_state = self.by_key.get(&lane.ahead(n + 1)).and_then(|next| {
                    next.event_type
                        .ends_with("StateEntered")
                        .then(|| next.details.as_ref()?["name"].as_str().map(str::to_owned))
                        .flatten()
                });
                let state = RecordedState {
                    entered: entered.clone(),
                    exited: e.clone(),
                    next_state,
                };
                lane.skip(n + 1);
                return Some(state);
            }
            n += 1;
        }
    }

    /// How many recorded events the replay has claimed so far.
    pub(crate) fn claimed(&self) -> usize {
        *self.claimed.borrow()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: i64, key: &str, t: &str, details: &str) -> EventRecord {
        EventRecord {
            id,
            previous_event_id: id - 1,
            timestamp_ms: id * 10,
            event_type: t.into(),
            details: Some(details.into()),
            replay_key: Some(key.into()),
        }
    }

    #[test]
    fn a_recorded_state_is_skipped_with_its_output_and_successor() {
        let replay = Replay::new(vec![
            rec(2, "r:0", "PassStateEntered", r#"{"name":"A"}"#),
            rec(3, "r:1", "PassStateExited", r#"{"name":"A","output":"1"}"#),
            rec(4, "r:2", "WaitStateEntered", r#"{"name":"W"}"#),
        ]);
        let lane = Lane::root();
        let s = replay
            .recorded_state(
                &lane,
                EventType::PassStateEntered,
                EventType::PassStateExited,
            )
            .expect("recorded");
        assert_eq!((s.entered.id, s.exited.id), (2, 3));
        assert_eq!(s.next_state.as_deref(), Some("W"));
        assert_eq!(lane.peek(), "r:2");
        // The Wait has no end recorded: it runs again, its entry is claimed by key.
        assert!(replay
            .recorded_state(
                &lane,
                EventType::WaitStateEntered,
                EventType::WaitStateExited
            )
            .is_none());
        let key = lane.take();
        assert_eq!(
            replay
                .claim(&key, EventType::WaitStateEntered)
                .expect("same type")
                .map(|r| r.id),
            Some(4)
        );
        assert!(replay.claim(&key, EventType::PassStateEntered).is_err());
        assert_eq!(Lane::child("r:3", 2).peek(), "r:3/2:0");
    }
}
