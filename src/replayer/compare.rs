//! Comparing a re-run with its recording, event by event in the recording's order, each
//! event matched by its place (see [`super::places`]): its type and state, the event it
//! follows (the chain AWS links with `previousEventId`), and the details that say what
//! happened (inputs, outputs, parameters, errors and causes, resources, timeouts). Not
//! compared: timestamps, ids themselves, task tokens, the run's ARNs, request IDs.

use super::answers::payload;
use super::history::RecordedEvent;
use super::places::{EventPlace, Places};
use crate::engine::visits::dense_index;
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use serde::Serialize;
use serde_json::Value;

/// The details fields compared, as AWS names them; payloads are compared as JSON. They hold
/// every field the places of events are read from (`state`: the state an `EvaluationFailed`
/// is about), so events alike in these have alike places ([`in_order`]).
const COMPARED: &[&str] = &[
    "name",
    "state",
    "error",
    "cause",
    "resource",
    "resourceType",
    "timeoutInSeconds",
    "heartbeatInSeconds",
    "length",
    "index",
];
/// Payload fields: JSON text inside a string, with `<field>Details.truncated`.
const PAYLOADS: &[&str] = &["input", "output", "parameters"];

/// The first place where the re-run did not do what the recording did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Divergence {
    /// The recorded event's id (for an event the recording lacks, the id it would have had
    /// after the last recorded event it follows).
    pub event: i64,
    /// The state it concerns, if any.
    pub state: Option<String>,
    /// What differs, in a sentence.
    pub what: String,
    /// What the recording holds there.
    pub recorded: String,
    /// What the definition did there.
    pub replayed: String,
    /// The states that led there, outermost first.
    pub path: Vec<String>,
}

/// One side of the comparison: events in id order and their places.
pub struct Side<'a> {
    /// The events.
    pub events: &'a [RecordedEvent],
    /// Their places.
    pub places: &'a Places<'a>,
}

impl<'a> Side<'a> {
    /// The place of the event `index` follows (`None` for none, or for an id that names no
    /// event: the reading refuses such a history, a caller's own events may hold one).
    fn previous_place(&self, index: usize) -> Option<EventPlace<'a>> {
        let previous = previous_index(&self.events[index])?;
        (previous < self.events.len()).then(|| self.places.event(previous))
    }

    fn state(&self, index: usize) -> Option<String> {
        let v = self.places.tree.owner_id(index)?;
        Some(self.places.tree.visits[v].state.clone())
    }
}

/// A side's events by place (for the re-run: built on its thread while the recording's places
/// are still being found on the other): by the hash of their place, which each side found on
/// its own thread, or by the place itself should two of the side's places hash alike.
pub enum ByPlace<'a> {
    /// By hash: an event found by the hash of a place is the event at that place only if
    /// their places are equal (a place that hashes as another is at no event of this side).
    Hashed(HashMap<u64, usize>),
    /// By place.
    Exact(HashMap<EventPlace<'a>, usize>),
}

impl<'a> ByPlace<'a> {
    /// The events of `side` by place.
    pub fn of(side: &Side<'a>) -> Self {
        let count = side.events.len();
        let mut by_hash = HashMap::with_capacity(count);
        for j in 0..count {
            if by_hash.insert(side.places.hash(j), j).is_some() {
                let mut by_place = HashMap::with_capacity(count);
                by_place.extend((0..count).map(|j| (side.places.event(j), j)));
                return ByPlace::Exact(by_place);
            }
        }
        ByPlace::Hashed(by_hash)
    }

    /// The event of `side` (the side this was made of) at the place of `other`'s event `i`.
    fn find(&self, side: &Side<'a>, other: &Side<'_>, i: usize) -> Option<usize> {
        let place = other.places.event(i);
        match self {
            ByPlace::Hashed(by_hash) => by_hash
                .get(&other.places.hash(i))
                .copied()
                .filter(|&j| side.places.event(j) == place),
            ByPlace::Exact(by_place) => by_place.get(&place).copied(),
        }
    }
}

/// Compares `rerun` (its events `by_place`) with `recorded`; `None` when they agree. `masked`
/// collects the parts the recording masked that were skipped.
pub fn first_divergence(
    recorded: &Side<'_>,
    rerun: &Side<'_>,
    by_place: &ByPlace<'_>,
    masked: &mut Vec<String>,
) -> Option<Divergence> {
    // Built only when an event is not where the recording has it.
    let mut elsewhere: Option<Elsewhere<'_>> = None;
    let mut matched = vec![false; rerun.events.len()];
    // An event the re-run never reached because a branch or iteration elsewhere ended the
    // Map or Parallel first is reported only when nothing the re-run did differently is found.
    let mut cut_short = None;
    // Per recorded event so far, the re-run's event at its place.
    let mut found_at = Vec::with_capacity(recorded.events.len());
    for i in 0..recorded.events.len() {
        let found = by_place.find(rerun, recorded, i);
        found_at.push(found);
        if let Some(j) = found.filter(|&j| same_predecessor(recorded, i, rerun, j, &found_at)) {
            matched[j] = true;
            let (r, n) = (&recorded.events[i], &rerun.events[j]);
            if let Some(what) = details_differ(r, n, masked) {
                return Some(divergence(recorded, i, what, describe(r), describe(n)));
            }
            continue;
        }
        let lookups = elsewhere.get_or_insert_with(|| Elsewhere::new(recorded, rerun));
        match (lookups.instead_of(recorded, rerun, i), found) {
            (Some(j), _) => return Some(missing(recorded, rerun, i, Some(j))),
            (None, Some(j)) => return Some(relinked(recorded, rerun, i, j)),
            (None, None) if cut_short.is_none() => {
                cut_short = Some(missing(recorded, rerun, i, None))
            }
            (None, None) => {}
        }
    }
    if cut_short.is_some() {
        return cut_short;
    }
    let last = recorded.events.last()?;
    if !ends_execution(&last.event_type) {
        // The recording stops while the execution ran on: what came after is not known.
        return None;
    }
    let extra = matched.iter().position(|&m| !m)?;
    let e = &rerun.events[extra];
    Some(Divergence {
        event: recorded.events.len() as i64 + 1,
        state: rerun.state(extra),
        what: "the definition went on after the recorded execution ended".into(),
        recorded: format!("the execution ended ({})", last.event_type),
        replayed: describe(e),
        path: rerun.places.path_to(extra),
    })
}

/// The masked parts skipped, when the re-run wrote the recording's events in the recording's
/// order, each with the same id, type and predecessor and no compared detail differing; then
/// matching them by place would find each at its own index, and [`first_divergence`] nothing
/// (it would skip the same masked parts, in the same order), so neither side's places are
/// needed. A re-run of sfn-local's own recording mostly writes its events so (the engine's
/// order depends on nothing but the answers it gets, which the re-run gets alike, and their
/// timing), as does one of AWS's where no concurrent iterations or branches interleaved.
/// `None` otherwise.
pub fn in_order(recorded: &[RecordedEvent], rerun: &[RecordedEvent]) -> Option<Vec<String>> {
    if recorded.len() != rerun.len() {
        return None;
    }
    let mut masked = Vec::new();
    for (r, n) in recorded.iter().zip(rerun) {
        let linked_alike = (r.id, r.previous_event_id) == (n.id, n.previous_event_id);
        if !linked_alike
            || r.event_type != n.event_type
            || details_differ(r, n, &mut masked).is_some()
        {
            return None;
        }
    }
    Some(masked)
}

/// What finding an event the re-run did instead needs: the re-run's events by the place of
/// the event each follows, and the recording's places.
struct Elsewhere<'a> {
    following: HashMap<Option<EventPlace<'a>>, Vec<usize>>,
    recorded_places: HashSet<EventPlace<'a>>,
}

impl<'a> Elsewhere<'a> {
    fn new(recorded: &Side<'a>, rerun: &Side<'a>) -> Self {
        let mut following: HashMap<_, Vec<usize>> = HashMap::with_capacity(rerun.events.len());
        for j in 0..rerun.events.len() {
            following
                .entry(rerun.previous_place(j))
                .or_default()
                .push(j);
        }
        let mut recorded_places = HashSet::with_capacity(recorded.events.len());
        recorded_places.extend((0..recorded.events.len()).map(|i| recorded.places.event(i)));
        Elsewhere {
            following,
            recorded_places,
        }
    }

    /// What the re-run did after the event the recorded event `i` follows, in its place: an
    /// event the recording never had.
    fn instead_of(&self, recorded: &Side<'_>, rerun: &Side<'_>, i: usize) -> Option<usize> {
        self.following
            .get(&recorded.previous_place(i))?
            .iter()
            .find(|&&j| !self.recorded_places.contains(&rerun.places.event(j)))
            .copied()
    }
}

/// Whether the recorded event `i` and the re-run's `j` follow the same event. A Map
/// iteration started when a slot freed follows whichever iteration's work ended first, which
/// is scheduling, not behaviour: its place already names its Map visit and index.
///
/// `found_at` holds, per recorded event up to `i`, the re-run's event at its place: the two
/// predecessors are at the same place exactly when the re-run's is the one found at the
/// recorded one's (places are one per event), which no place needs comparing to tell.
fn same_predecessor(
    recorded: &Side<'_>,
    i: usize,
    rerun: &Side<'_>,
    j: usize,
    found_at: &[Option<usize>],
) -> bool {
    if recorded.events[i].event_type == "MapIterationStarted" {
        return true;
    }
    let theirs = previous_index(&recorded.events[i]);
    let ours = previous_index(&rerun.events[j]);
    match (theirs.and_then(|p| found_at.get(p)), ours) {
        (Some(&found), Some(_)) => found == ours,
        _ => recorded.previous_place(i) == rerun.previous_place(j),
    }
}

/// The index of the event `event` follows, if it names one.
fn previous_index(event: &RecordedEvent) -> Option<usize> {
    dense_index(event.previous_event_id)
}

/// Whether an event type closes an execution.
pub fn ends_execution(event_type: &str) -> bool {
    matches!(
        event_type,
        "ExecutionSucceeded" | "ExecutionFailed" | "ExecutionAborted" | "ExecutionTimedOut"
    )
}

/// The recorded event `i` has no counterpart in the re-run (or one that follows something
/// else); `instead` is what the definition did after the event `i` follows, if anything.
fn missing(recorded: &Side<'_>, rerun: &Side<'_>, i: usize, instead: Option<usize>) -> Divergence {
    let r = &recorded.events[i];
    let replayed = match instead {
        Some(j) => describe(&rerun.events[j]),
        None => {
            "nothing: a branch or iteration elsewhere, or the execution, had ended first".into()
        }
    };
    let what = match r.previous_event_id {
        0 => "the execution started differently".to_owned(),
        p => format!("after event {p} the definition did something else"),
    };
    divergence(recorded, i, what, describe(r), replayed)
}

/// The recorded event `i` and the re-run's `j` are the same event in the same place, but
/// follow different events (AWS's `previousEventId` chain differs).
fn relinked(recorded: &Side<'_>, rerun: &Side<'_>, i: usize, j: usize) -> Divergence {
    let after = |side: &Side<'_>, k: usize| match side.events[k].previous_event_id {
        0 => "nothing".to_owned(),
        p => format!("{} (its event {p})", side.events[p as usize - 1].event_type),
    };
    let was = format!(
        "{} after {}",
        describe(&recorded.events[i]),
        after(recorded, i)
    );
    let did = format!("{} after {}", describe(&rerun.events[j]), after(rerun, j));
    let what = "the event follows another event than recorded".to_owned();
    divergence(recorded, i, what, was, did)
}

fn divergence(recorded: &Side<'_>, i: usize, what: String, was: String, did: String) -> Divergence {
    Divergence {
        event: recorded.events[i].id,
        state: recorded.state(i),
        what,
        recorded: was,
        replayed: did,
        path: recorded.places.path_to(i),
    }
}

/// Which compared detail differs, in a sentence; masked payloads are noted and skipped.
fn details_differ(
    r: &RecordedEvent,
    n: &RecordedEvent,
    masked: &mut Vec<String>,
) -> Option<String> {
    if r.event_type == "ExecutionStarted" || same_text(r, n) {
        return None;
    }
    let (rd, nd) = (r.details_value(), n.details_value());
    for field in COMPARED {
        if rd[field] != nd[field] && !(*field == "cause" && same_json_text(&rd[field], &nd[field]))
        {
            return Some(format!("its {field} differs"));
        }
    }
    for field in PAYLOADS {
        if rd[field] == nd[field] && rd[format!("{field}Details")]["truncated"] != true {
            continue; // the same text: nothing to parse
        }
        let theirs = match payload(rd, field) {
            Ok(v) => v,
            Err(why) => {
                masked.push(format!(
                    "the {field} of event {} ({}) {why}",
                    r.id, r.event_type
                ));
                continue;
            }
        };
        let ours = payload(nd, field).unwrap_or(Value::Null);
        if normalised(theirs) != normalised(ours) {
            return Some(match (*field, &*r.event_type) {
                ("parameters", _) => {
                    "the definition called the Task with parameters the recording never saw".into()
                }
                (f, _) => format!("its {f} differs"),
            });
        }
    }
    None
}

/// Whether both events' details are the same text with nothing masked in it: then nothing
/// compared differs, and neither side needs parsing (a re-run of a sfn-local recording writes
/// the recording's text).
fn same_text(r: &RecordedEvent, n: &RecordedEvent) -> bool {
    static TRUNCATED: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(r#""truncated":true"#));
    r.details == n.details
        && r.details
            .as_deref()
            .is_none_or(|d| TRUNCATED.find(d.as_bytes()).is_none())
}

/// Causes are often JSON text whose spacing differs between writers.
fn same_json_text(a: &Value, b: &Value) -> bool {
    let parse = |v: &Value| {
        v.as_str()
            .and_then(|s| serde_json::from_str::<Value>(s).ok())
    };
    matches!((parse(a), parse(b)), (Some(x), Some(y)) if x == y)
}

/// A payload with what differs between runs masked: task tokens and the run's ARNs.
fn normalised(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, v)| {
                    if k.ends_with("Token") || k.ends_with("token") {
                        (k, Value::String("<token>".into()))
                    } else {
                        (k, normalised(v))
                    }
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(normalised).collect()),
        Value::String(s) if s.contains(":execution:") || s.contains(":express:") => {
            Value::String("<execution-arn>".into())
        }
        other => other,
    }
}

/// An event in a line: its type, state and the details that matter, shortened.
pub fn describe(e: &RecordedEvent) -> String {
    let d = e.details_value();
    let mut line = e.event_type.to_string();
    if let Some(name) = d["name"].as_str() {
        line.push_str(&format!(" {name}"));
    }
    for field in ["resource", "error", "cause"] {
        if let Some(text) = d[field].as_str() {
            line.push_str(&format!(" {field} {}", shorten(text)));
        }
    }
    for field in PAYLOADS {
        if let Some(text) = d[*field].as_str() {
            line.push_str(&format!(" {field} {}", shorten(text)));
        }
    }
    line
}

fn shorten(text: &str) -> String {
    const MAX: usize = 300;
    match text.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replayer::history::parse_history;

    /// A Parallel of two Pass branches, as sfn-local records it.
    fn history() -> Vec<RecordedEvent> {
        let events = [
            (
                0,
                "ExecutionStarted",
                r#""executionStartedEventDetails":{"input":"{}"}"#,
            ),
            (
                0,
                "ParallelStateEntered",
                r#""stateEnteredEventDetails":{"name":"Both","input":"{}"}"#,
            ),
            (2, "ParallelStateStarted", ""),
            (
                3,
                "PassStateEntered",
                r#""stateEnteredEventDetails":{"name":"L","input":"{}"}"#,
            ),
            (
                3,
                "PassStateEntered",
                r#""stateEnteredEventDetails":{"name":"R","input":"{}"}"#,
            ),
            (
                4,
                "PassStateExited",
                r#""stateExitedEventDetails":{"name":"L","output":"1"}"#,
            ),
            (
                5,
                "PassStateExited",
                r#""stateExitedEventDetails":{"name":"R","output":"2"}"#,
            ),
            (7, "ParallelStateSucceeded", ""),
            (
                8,
                "ParallelStateExited",
                r#""stateExitedEventDetails":{"name":"Both","output":"[1,2]"}"#,
            ),
            (
                9,
                "ExecutionSucceeded",
                r#""executionSucceededEventDetails":{"output":"[1,2]"}"#,
            ),
        ];
        let text: Vec<String> = (1..)
            .zip(events)
            .map(|(id, (previous, ty, details))| {
                let details = if details.is_empty() { String::new() } else { format!(",{details}") };
                format!(r#"{{"id":{id},"previousEventId":{previous},"type":"{ty}","timestamp":0{details}}}"#)
            })
            .collect();
        parse_history(&format!(r#"{{"events":[{}]}}"#, text.join(","))).unwrap()
    }

    /// Events found by the hash of their place are the events found by the place itself,
    /// which is what the re-run's events are found by when two of its places hash alike.
    #[test]
    fn events_found_by_hash_are_the_events_found_by_place() {
        let (recorded, rerun) = (history(), history());
        let recorded_places = Places::of(recorded.as_slice());
        let mut rerun_places = Places::of(rerun.as_slice());
        let found = |rerun_places: &Places<'_>| {
            let recording = Side {
                events: &recorded,
                places: &recorded_places,
            };
            let rerun = Side {
                events: &rerun,
                places: rerun_places,
            };
            let by_place = ByPlace::of(&rerun);
            let exact = matches!(by_place, ByPlace::Exact(_));
            let found: Vec<_> = (0..recorded.len())
                .map(|i| by_place.find(&rerun, &recording, i))
                .collect();
            let verdict = first_divergence(&recording, &rerun, &by_place, &mut Vec::new());
            (exact, found, verdict)
        };
        let (exact, by_hash, verdict) = found(&rerun_places);
        assert!(!exact);
        assert_eq!(by_hash, (0..recorded.len()).map(Some).collect::<Vec<_>>());
        assert_eq!(verdict, None);
        // Two of the re-run's places hash alike: its events are found by place.
        let hash = rerun_places.hash(3);
        rerun_places.set_hash(4, hash);
        assert_eq!(found(&rerun_places), (true, by_hash, None));
    }

    /// A recorded place that hashes as another place of the re-run is not found there: the
    /// event the re-run has at that hash is not taken for it.
    #[test]
    fn a_place_that_hashes_as_another_is_not_found_by_it() {
        let (recorded, rerun) = (history(), history());
        let mut recorded_places = Places::of(recorded.as_slice());
        let rerun_places = Places::of(rerun.as_slice());
        // Event 5 (R entered) hashes as the re-run's event 4 (L entered).
        recorded_places.set_hash(4, rerun_places.hash(3));
        let recording = Side {
            events: &recorded,
            places: &recorded_places,
        };
        let rerun = Side {
            events: &rerun,
            places: &rerun_places,
        };
        let by_place = ByPlace::of(&rerun);
        assert_eq!(by_place.find(&rerun, &recording, 3), Some(3));
        assert_eq!(by_place.find(&rerun, &recording, 4), None);
    }
}
