//! Places: where in an execution a visit or an event happened, named the same way in every run
//! of it however its Map iterations and Parallel branches interleaved. Ids and order differ
//! between a recording and a re-run (AWS runs iterations concurrently); places do not, so
//! answers are keyed and events matched by place.
//!
//! A visit's place is the path of visits that hold it: `/Process#0[3]/Charge#1` is the second
//! visit of `Charge` in iteration 3 of the first visit of `Process`. A branch lane is named by
//! its first state (`{Left}`); a lane of a retried Map or Parallel gets `~N` for its attempt.
//! An event's place is its visit's, its type, a Map iteration's index, and `#N` for the
//! N-th such event there (a Task's attempts: `TaskScheduled#0`, `#1`, ...).

use crate::engine::visits::{iteration_index, EventList, LaneKind, Tree, VisitId};
use foldhash::fast::FixedState;
use foldhash::{HashMap, HashMapExt};
use std::fmt;
use std::hash::BuildHasher;

/// What names an event within its visit, packed to be counted: its visit plus one (0 for the
/// execution's own events), a Map iteration's index, and its type (numbered by [`TypeNumbers`])
/// with, in the low bits, whether it is a Map iteration's and has an index. A third of the
/// size of the key unpacked, whose table of 10,000 events was a megabyte to fault in.
type EventKey = (u64, u64, u32);

/// Event types numbered as they are first seen (a history has a few dozen).
#[derive(Default)]
struct TypeNumbers<'e> {
    by_text: HashMap<&'e str, u32>,
    /// The first types seen, by where their text is: both sides' types are the engine's
    /// static names (see [`super::history::RecordedEvent::read`]), so a type is mostly found
    /// here without hashing its text (which took 160 instructions an event).
    by_address: Vec<(&'e str, u32)>,
}

impl<'e> TypeNumbers<'e> {
    /// How many types are looked for by address.
    const BY_ADDRESS: usize = 16;

    /// The key of the event `name`d, in visit `owner`.
    fn key(&mut self, owner: Option<VisitId>, name: &EventName<'e>) -> EventKey {
        let owner = owner.map_or(0, |v| v as u64 + 1);
        (
            owner,
            name.at,
            self.number(name.event_type) << 2 | name.indexed as u32,
        )
    }

    fn number(&mut self, event_type: &'e str) -> u32 {
        let same = |&&(seen, _): &&(&str, u32)| std::ptr::eq(seen, event_type);
        if let Some(&(_, number)) = self.by_address.iter().find(same) {
            return number;
        }
        let next = self.by_text.len() as u32;
        let number = *self.by_text.entry(event_type).or_insert(next);
        if self.by_address.len() < Self::BY_ADDRESS {
            self.by_address.push((event_type, number));
        }
        number
    }
}

/// An event's place, as [`Places::event`] gives it: compared and hashed as it is, written
/// (`/Process#0[3]/Charge#1 TaskScheduled#0`) only when a name is needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EventPlace<'a> {
    /// Its visit's place, `execution` for the execution's own events.
    visit: &'a str,
    /// Its type.
    event_type: &'a str,
    /// A Map iteration's event: the iteration's index, if the event has one.
    index: Option<Option<u64>>,
    /// How many such events came before it there.
    occurrence: usize,
}

impl fmt::Display for EventPlace<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (visit, ty, n) = (self.visit, self.event_type, self.occurrence);
        match self.index {
            Some(Some(at)) => write!(f, "{visit} {ty}[{at}]#{n}"),
            Some(None) => write!(f, "{visit} {ty}[?]#{n}"),
            None => write!(f, "{visit} {ty}#{n}"),
        }
    }
}

/// What [`Places`] keeps of an event to give its place: its type, a Map iteration's index and
/// its occurrence (its visit is the tree's), in 32 bytes (48 unpacked: a replay keeps one per
/// event of both histories).
#[derive(Debug)]
struct EventName<'e> {
    event_type: &'e str,
    /// The index, when `indexed` is [`Indexed::At`].
    at: u64,
    occurrence: u32,
    indexed: Indexed,
}

/// Whether an event is a Map iteration's, and has an index.
#[derive(Debug, Clone, Copy)]
enum Indexed {
    /// Not a Map iteration's event.
    No,
    /// A Map iteration's event without an index.
    Unknown,
    /// A Map iteration's event with its index.
    At,
}

impl<'e> EventName<'e> {
    fn new(event_type: &'e str, index: Option<Option<u64>>, occurrence: u32) -> Self {
        let (indexed, at) = match index {
            None => (Indexed::No, 0),
            Some(None) => (Indexed::Unknown, 0),
            Some(Some(at)) => (Indexed::At, at),
        };
        EventName {
            event_type,
            at,
            occurrence,
            indexed,
        }
    }

    fn index(&self) -> Option<Option<u64>> {
        match self.indexed {
            Indexed::No => None,
            Indexed::Unknown => Some(None),
            Indexed::At => Some(Some(self.at)),
        }
    }
}

/// The places of one history's visits and events (their types borrowed from the events).
#[derive(Debug)]
pub struct Places<'e> {
    /// The visit tree they were read from.
    pub tree: Tree,
    /// Per visit (by [`crate::engine::visits::VisitId`]), its place.
    visits: VisitPlaces,
    /// Per event (by index in the events given), what names it in its visit.
    events: Vec<EventName<'e>>,
    /// Per event, its place hashed ([`PLACE_HASH`]): found with the places, on each side's
    /// own thread, so that matching the two sides hashes nothing (see
    /// [`super::compare::ByPlace`]).
    hashes: Vec<u64>,
}

/// How places are hashed: the same way on both sides of a replay (equal places, equal
/// hashes); what two hashes that collide hide is found by comparing the places.
const PLACE_HASH: FixedState = FixedState::with_seed(0x5fa1_ace5);

impl<'e> Places<'e> {
    /// Reads the places of `events` (in id order).
    pub fn of<E: EventList + ?Sized>(events: &'e E) -> Places<'e> {
        let tree = Tree::read(events);
        let visits = visit_places(&tree);
        // Counted by what names an event (its visit, type and iteration): no string is built.
        // An Entered event opens its visit: it is the first there of its kind, not counted
        // (nor room made for it: a visit per Entered event, so sized for the rest, a 1,250-item
        // Map's table is half the memory it was).
        let counted = events.count().saturating_sub(tree.visits.len());
        let mut counts: HashMap<EventKey, u32> = HashMap::with_capacity(counted);
        let mut types = TypeNumbers::default();
        let events = (0..events.count())
            .map(|i| {
                let e = events.at(i);
                if e.event_type.ends_with("StateEntered") {
                    return EventName::new(e.event_type, None, 0);
                }
                let index = e
                    .event_type
                    .starts_with("MapIteration")
                    .then(|| iteration_index(&e));
                let mut name = EventName::new(e.event_type, index, 0);
                let n = counts
                    .entry(types.key(tree.owner_id(i), &name))
                    .or_insert(0);
                name.occurrence = *n;
                *n += 1;
                name
            })
            .collect();
        let mut places = Places {
            tree,
            visits,
            events,
            hashes: Vec::new(),
        };
        places.hashes = (0..places.events.len())
            .map(|i| PLACE_HASH.hash_one(places.event(i)))
            .collect();
        places
    }

    /// The hash of the place of the event at `index`: events at equal places have equal
    /// hashes.
    pub fn hash(&self, index: usize) -> u64 {
        self.hashes[index]
    }

    /// Gives the event at `index` another hash, as a collision would.
    #[cfg(test)]
    pub(crate) fn set_hash(&mut self, index: usize, hash: u64) {
        self.hashes[index] = hash;
    }

    /// The place of the event at `index`.
    pub fn event(&self, index: usize) -> EventPlace<'_> {
        let name = &self.events[index];
        EventPlace {
            visit: self.visit_of(index).unwrap_or("execution"),
            event_type: name.event_type,
            index: name.index(),
            occurrence: name.occurrence as usize,
        }
    }

    /// The place of the visit the event at `index` belongs to, if any.
    pub fn visit_of(&self, index: usize) -> Option<&str> {
        self.tree.owner_id(index).map(|v| self.visits.get(v))
    }

    /// The states that led to the event at `index`: every visit before it in its lane, and
    /// the same for the Map or Parallel around it, outermost first.
    pub fn path_to(&self, index: usize) -> Vec<String> {
        let Some(mut visit) = self.tree.owner_id(index) else {
            return Vec::new();
        };
        let mut path = Vec::new();
        loop {
            let v = &self.tree.visits[visit];
            let lane = &self.tree.lanes[v.lane];
            let upto = lane.visits.iter().position(|&x| x == visit).unwrap_or(0);
            let mut segment: Vec<String> = lane.visits[..=upto]
                .iter()
                .map(|&x| self.tree.visits[x].state.clone())
                .collect();
            if let LaneKind::Iteration(i) = lane.kind {
                segment.insert(0, format!("[iteration {i}]"));
            }
            segment.extend(path);
            path = segment;
            match lane.parent {
                Some(p) => visit = p,
                None => return path,
            }
        }
    }
}

/// Every visit's place, joined in one text: a Map of 1,250 iterations has 3,750 visits, a
/// string each to make and as many to free.
#[derive(Debug)]
struct VisitPlaces {
    text: String,
    /// Per visit, where its place ends in `text` (it starts where the previous one ends).
    ends: Vec<usize>,
}

impl VisitPlaces {
    /// The place of `visit`.
    fn get(&self, visit: VisitId) -> &str {
        &self.text[self.range(visit)]
    }

    /// Where the place of `visit` is in the text.
    fn range(&self, visit: VisitId) -> std::ops::Range<usize> {
        let start = visit.checked_sub(1).map_or(0, |v| self.ends[v]);
        start..self.ends[visit]
    }
}

/// Each visit's place, in the tree's order ([`push_place`]).
fn visit_places(tree: &Tree) -> VisitPlaces {
    // A place is about the length of the state's name and its parent's.
    const GUESSED_BYTES: usize = 24;
    let attempts = lane_attempts(tree);
    let count = tree.visits.len();
    let mut places = VisitPlaces {
        text: String::with_capacity(count * GUESSED_BYTES),
        ends: Vec::with_capacity(count),
    };
    let mut seen: HashMap<(usize, &str), usize> = HashMap::with_capacity(count);
    for visit in &tree.visits {
        let lane = &tree.lanes[visit.lane];
        let occurrence = seen.entry((visit.lane, visit.state.as_str())).or_insert(0);
        if let Some(parent) = lane.parent {
            places.text.extend_from_within(places.range(parent));
        }
        let label = (visit.lane, attempts[visit.lane]);
        push_place(&mut places.text, tree, label, &visit.state, *occurrence);
        places.ends.push(places.text.len());
        *occurrence += 1;
    }
    places
}

/// The place of one visit, as [`Places::of`] names it, read alone (a run in progress asks
/// for one at a time).
pub fn visit_place(tree: &Tree, visit: VisitId) -> String {
    let v = &tree.visits[visit];
    let lane = &tree.lanes[v.lane];
    let occurrence = lane
        .visits
        .iter()
        .take_while(|&&x| x != visit)
        .filter(|&&x| tree.visits[x].state == v.state)
        .count();
    let mut place = lane
        .parent
        .map(|p| visit_place(tree, p))
        .unwrap_or_default();
    let label = (v.lane, lane_attempt(tree, v.lane));
    push_place(&mut place, tree, label, &v.state, occurrence);
    place
}

/// Writes a visit's place after its lane's (its parent's place, already in `out`): the
/// label of its lane (a lane and its attempt, [`push_lane_label`]), its state and how many
/// visits of that state came before it in the lane (`/Process#0[3]/Charge#1` after
/// `/Process#0`). Not `format!`: its machinery took a quarter of a replay's places (a
/// 1,250-item Map has 3,750 visits).
fn push_place(out: &mut String, tree: &Tree, label: (usize, u32), state: &str, occurrence: usize) {
    push_lane_label(out, tree, label.0, label.1);
    for part in ["/", state, "#"] {
        out.push_str(part);
    }
    out.push_str(itoa::Buffer::new().format(occurrence));
}

/// Writes a lane's label: empty for the top level, `[i]` for an iteration, `{FirstState}` for
/// a branch, with `~N` for the `attempt`-th lane so named in its Map or Parallel (its
/// attempt, when it was retried).
fn push_lane_label(out: &mut String, tree: &Tree, lane: usize, attempt: u32) {
    match tree.lanes[lane].kind {
        LaneKind::Root => {}
        LaneKind::Iteration(i) => {
            for part in ["[", itoa::Buffer::new().format(i), "]"] {
                out.push_str(part);
            }
        }
        LaneKind::Branch => {
            for part in ["{", first_state(tree, lane), "}"] {
                out.push_str(part);
            }
        }
    }
    if attempt > 0 {
        out.push('~');
        out.push_str(itoa::Buffer::new().format(attempt));
    }
}

/// The state a lane starts with ("" for an empty one).
fn first_state(tree: &Tree, lane: usize) -> &str {
    let first = tree.lanes[lane].visits.first();
    first.map_or("", |&v| tree.visits[v].state.as_str())
}

/// What a lane's label is before attempts are told apart: its kind, an iteration's index, a
/// branch's first state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum BaseLabel<'t> {
    Root,
    Iteration(u64),
    Branch(&'t str),
}

fn base_label(tree: &Tree, lane: usize) -> BaseLabel<'_> {
    match tree.lanes[lane].kind {
        LaneKind::Root => BaseLabel::Root,
        LaneKind::Iteration(i) => BaseLabel::Iteration(i),
        LaneKind::Branch => BaseLabel::Branch(first_state(tree, lane)),
    }
}

/// One lane's attempt, as [`lane_attempts`] gives it (a Map's thousands of iterations are
/// compared for each Task call, without a label written).
fn lane_attempt(tree: &Tree, lane: usize) -> u32 {
    let Some(parent) = tree.lanes[lane].parent else {
        return 0;
    };
    let base = base_label(tree, lane);
    let earlier = tree.visits[parent]
        .lanes
        .iter()
        .take_while(|&&l| l != lane)
        .filter(|&&l| base_label(tree, l) == base)
        .count();
    earlier as u32
}

/// Each lane's attempt: how many lanes of its Map or Parallel before it have its base label
/// (a retried Map's second attempt has iterations `[0]~1`, `[1]~1`, ...).
fn lane_attempts(tree: &Tree) -> Vec<u32> {
    let mut attempts = vec![0; tree.lanes.len()];
    for visit in tree.visits.iter().filter(|v| !v.lanes.is_empty()) {
        let mut seen: HashMap<BaseLabel<'_>, u32> = HashMap::with_capacity(visit.lanes.len());
        for &lane in &visit.lanes {
            let n = seen.entry(base_label(tree, lane)).or_insert(0);
            attempts[lane] = *n;
            *n += 1;
        }
    }
    attempts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::visits::EventView;

    /// A Parallel of two branches, then a Map whose first attempt fails and is retried: the
    /// lanes are told apart by first state, index and attempt, and a visit named alone
    /// ([`visit_place`], as the replay's runner does) gets the name [`Places::of`] gives.
    #[test]
    fn places_name_branches_iterations_and_attempts_alike_alone_and_in_bulk() {
        let raw: &[(i64, i64, &str, &str)] = &[
            (1, 0, "ExecutionStarted", "{}"),
            (2, 0, "ParallelStateEntered", r#"{"name":"Both"}"#),
            (3, 2, "ParallelStateStarted", "{}"),
            (4, 3, "TaskStateEntered", r#"{"name":"Left"}"#),
            (5, 3, "TaskStateEntered", r#"{"name":"Right"}"#),
            (6, 4, "TaskStateExited", r#"{"name":"Left"}"#),
            (7, 5, "TaskStateExited", r#"{"name":"Right"}"#),
            (8, 7, "ParallelStateSucceeded", "{}"),
            (9, 8, "ParallelStateExited", r#"{"name":"Both"}"#),
            (10, 9, "MapStateEntered", r#"{"name":"Each"}"#),
            (11, 10, "MapStateStarted", r#"{"length":1}"#),
            (
                12,
                11,
                "MapIterationStarted",
                r#"{"name":"Each","index":0}"#,
            ),
            (13, 12, "FailStateEntered", r#"{"name":"Work"}"#),
            (14, 13, "MapIterationFailed", r#"{"name":"Each","index":0}"#),
            // A Retry of the Map: its next attempt starts from the failure, as sfn-local and
            // AWS link it.
            (15, 13, "MapStateStarted", r#"{"length":1}"#),
            (
                16,
                15,
                "MapIterationStarted",
                r#"{"name":"Each","index":0}"#,
            ),
            (17, 16, "FailStateEntered", r#"{"name":"Work"}"#),
        ];
        let events: Vec<EventView<'_>> = raw
            .iter()
            .map(|&(id, prev, ty, d)| EventView {
                id,
                previous_event_id: prev,
                event_type: ty,
                timestamp_ms: 0,
                details: Some(d),
                replay_key: None,
            })
            .collect();
        let places = Places::of(events.as_slice());
        let named: Vec<&str> = [3, 4, 12, 16]
            .iter()
            .map(|&i| places.visit_of(i).unwrap())
            .collect();
        assert_eq!(
            named,
            [
                "/Both#0{Left}/Left#0",
                "/Both#0{Right}/Right#0",
                "/Each#0[0]/Work#0",
                "/Each#0[0]~1/Work#0"
            ]
        );
        for i in 0..events.len() {
            if let Some(v) = places.tree.owner_id(i) {
                assert_eq!(
                    places.visit_of(i),
                    Some(visit_place(&places.tree, v).as_str()),
                    "event {}",
                    i + 1
                );
            }
        }
        assert_eq!(
            places.event(11).to_string(),
            "/Each#0 MapIterationStarted[0]#0"
        );
        assert_eq!(
            places.event(15).to_string(),
            "/Each#0 MapIterationStarted[0]#1"
        );
    }
}
