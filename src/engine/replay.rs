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
//!
//! A redrive continues a closed history the same way. At each `ExecutionRedriven` the recorded
//! events are cut back, lane by lane, to the last state that ended well (its `*StateExited`, or
//! a Map iteration's `MapIterationSucceeded`): what came after it in that lane (the failed
//! state, the Map or Parallel that failed around it) runs again, writing new events after
//! `ExecutionRedriven` under the same keys, while the states and iterations that succeeded are
//! skipped as on resume. A failed Map or Parallel is entered again and opens its branches and
//! iterations under the same lane names, so only those that did not succeed run again. The
//! events cut away stay *superseded*: a distributed Map finds its earlier Map run there.

use crate::clock::Millis;
use crate::engine::history::{EventId, EventType};
use crate::store::{EventRecord, ReplayKey};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

/// One sequential flow of events (the top level, a branch, an iteration).
#[derive(Debug)]
pub(crate) struct Lane {
    key: ReplayKey,
    seq: Cell<u64>,
}

/// `head`, `separator`, `tail` as one key, without allocating when it fits inline. Every event
/// of a run gets a key built this way, and `format!`'s machinery was a tenth of a 10,000-item
/// Map's engine time.
pub(crate) fn joined(head: &str, separator: char, tail: &str) -> ReplayKey {
    // Put together on the stack and copied once when it fits inline: CompactString's own
    // `push_str` checks where its text lives at every call.
    let mut inline = [0u8; INLINE_KEY_BYTES];
    let mut sep = [0u8; 4];
    let parts: [&str; 3] = [head, separator.encode_utf8(&mut sep), tail];
    let len: usize = parts.iter().map(|p| p.len()).sum();
    if len > INLINE_KEY_BYTES {
        return ReplayKey::from(parts.concat());
    }
    let mut at = 0;
    for part in parts {
        inline[at..at + part.len()].copy_from_slice(part.as_bytes());
        at += part.len();
    }
    // SAFETY: whole UTF-8 strings put end to end are UTF-8. (Checking it again was a call to
    // `from_utf8` for every event, about 0.7% of a 10,000-item Map's engine samples.)
    unsafe { ReplayKey::from_utf8_unchecked(&inline[..len]) }
}

/// How long a [`ReplayKey`] can be and stay inline: its own size (compact_str's layout).
const INLINE_KEY_BYTES: usize = std::mem::size_of::<ReplayKey>();

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
            key: key.into(),
            seq: Cell::new(0),
        })
    }

    /// A child lane opened by the event with key `anchor` (its `index`-th branch or iteration).
    pub(crate) fn child(anchor: &str, index: usize) -> Rc<Lane> {
        Rc::new(Lane {
            key: joined(anchor, '/', itoa::Buffer::new().format(index)),
            seq: Cell::new(0),
        })
    }

    /// The lane's name.
    pub(crate) fn key(&self) -> &str {
        &self.key
    }

    /// The key the next event of this lane gets.
    pub(crate) fn peek(&self) -> ReplayKey {
        self.key_at(self.seq.get())
    }

    /// `key:seq`.
    fn key_at(&self, seq: u64) -> ReplayKey {
        joined(&self.key, ':', itoa::Buffer::new().format(seq))
    }

    /// The key of the next event, consumed.
    pub(crate) fn take(&self) -> ReplayKey {
        let k = self.peek();
        self.seq.set(self.seq.get() + 1);
        k
    }

    /// The key `n` events ahead.
    fn ahead(&self, n: u64) -> ReplayKey {
        self.key_at(self.seq.get() + n)
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
    /// Events a redrive cut away, by key, oldest first.
    superseded: HashMap<String, Vec<Recorded>>,
    claimed: RefCell<usize>,
}

/// Whether an event ends something well: a lane cut back by a redrive keeps everything up to
/// its last such event.
fn settles(event_type: &str) -> bool {
    event_type.ends_with("StateExited") || event_type == EventType::MapIterationSucceeded.as_str()
}

/// `r:6/3:2` → (`r:6/3`, 2).
fn split_key(key: &str) -> Option<(&str, u64)> {
    let (lane, seq) = key.rsplit_once(':')?;
    Some((lane, seq.parse().ok()?))
}

impl Replay {
    /// Indexes the stored events (those without a key — ExecutionStarted — are skipped).
    pub(crate) fn new(events: Vec<EventRecord>) -> Replay {
        let mut by_key = HashMap::with_capacity(events.len());
        let mut superseded = HashMap::new();
        for e in events {
            if e.event_type == EventType::ExecutionRedriven.as_str() {
                cut_back(&mut by_key, &mut superseded);
                continue;
            }
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
            superseded,
            claimed: RefCell::new(0),
        }
    }

    /// The events a redrive cut away at `key`, oldest first.
    pub(crate) fn superseded(&self, key: &str) -> &[Recorded] {
        self.superseded.get(key).map_or(&[], Vec::as_slice)
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
        let entered = self.by_key.get(lane.peek().as_str())?;
        if entered.event_type != entered_type.as_str() {
            return None;
        }
        let mut n = 1;
        loop {
            let e = self.by_key.get(lane.ahead(n).as_str())?;
            if e.event_type.ends_with("StateEntered") {
                return None;
            }
            if e.event_type == exited_type.as_str() {
                let next_state = self
                    .by_key
                    .get(lane.ahead(n + 1).as_str())
                    .and_then(|next| {
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

/// Cuts every lane back to its last event that [`settles`]; what is cut goes to `superseded`.
fn cut_back(
    by_key: &mut HashMap<String, Recorded>,
    superseded: &mut HashMap<String, Vec<Recorded>>,
) {
    let mut settled: HashMap<String, u64> = HashMap::new();
    for (key, r) in by_key.iter() {
        if let Some((lane, seq)) = split_key(key).filter(|_| settles(&r.event_type)) {
            let last = settled.entry(lane.to_owned()).or_insert(seq);
            *last = (*last).max(seq);
        }
    }
    let cut: Vec<String> = by_key
        .keys()
        .filter(|key| match split_key(key) {
            Some((lane, seq)) => settled.get(lane).is_none_or(|last| seq > *last),
            None => false,
        })
        .cloned()
        .collect();
    for key in cut {
        if let Some(r) = by_key.remove(&key) {
            superseded.entry(key).or_default().push(r);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys are the same text whether they fit inline or not (a lane nested deep).
    #[test]
    fn keys_join_the_same_inline_and_past_it() {
        assert_eq!(joined("r:1/2", ':', "7"), "r:1/2:7");
        let deep = "r:1/2:3/4:5/6:7/8:9/10:11";
        assert!(deep.len() > INLINE_KEY_BYTES);
        assert_eq!(joined(deep, '/', "12"), format!("{deep}/12"));
        let lane = Lane::child("r:1", 3);
        assert_eq!(
            (lane.take(), lane.take()),
            ("r:1/3:0".into(), "r:1/3:1".into())
        );
        assert_eq!(joined("", ':', ""), ":");
    }

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
    fn a_redrive_keeps_what_succeeded_and_runs_the_rest_again() {
        let redriven = EventRecord {
            id: 12,
            previous_event_id: 11,
            timestamp_ms: 120,
            event_type: "ExecutionRedriven".into(),
            details: None,
            replay_key: None,
        };
        let replay = Replay::new(vec![
            rec(2, "r:0", "PassStateEntered", r#"{"name":"A"}"#),
            rec(3, "r:1", "PassStateExited", r#"{"name":"A"}"#),
            rec(4, "r:2", "MapStateEntered", r#"{"name":"M"}"#),
            rec(5, "r:3", "MapStateStarted", "{}"),
            // Iteration 0 succeeded, iteration 1 failed after its first state.
            rec(6, "r:3/0:0", "MapIterationStarted", "{}"),
            rec(7, "r:3/0:1", "PassStateEntered", r#"{"name":"I"}"#),
            rec(8, "r:3/0:2", "PassStateExited", r#"{"name":"I"}"#),
            rec(9, "r:3/0:3", "MapIterationSucceeded", "{}"),
            rec(10, "r:3/1:0", "MapIterationStarted", "{}"),
            rec(11, "r:3/1:1", "FailStateEntered", r#"{"name":"F"}"#),
            rec(12, "r:3/1:2", "MapIterationFailed", "{}"),
            rec(13, "r:4", "MapStateFailed", "{}"),
            redriven,
        ]);
        assert!(replay.get("r:1").is_some());
        for cut in ["r:2", "r:3", "r:4", "r:3/1:0", "r:3/1:1", "r:3/1:2"] {
            assert!(replay.get(cut).is_none(), "{cut} runs again");
            assert_eq!(replay.superseded(cut).len(), 1);
        }
        for kept in ["r:3/0:0", "r:3/0:3"] {
            assert!(replay.get(kept).is_some(), "{kept} is kept");
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
