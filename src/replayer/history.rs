//! Reading a recorded history: what `aws stepfunctions get-execution-history --output json`
//! prints (`{"events": [...]}`, one page or several pages concatenated in one file, as
//! `--no-paginate` loops write them), a bare list of events, or sfn-local's own
//! `get-execution-history`. Events come back sorted by id (`--reverse-order` pages too), each
//! checked for the fields replay reads.
//!
//! The file is read typed, not as a tree of values: an event's few fields, and its details
//! object as the text it is in the file, made compact (a 10,000-event history is 3 MB, and
//! most of its details are only ever compared as text).

use super::ReplayError;
use crate::clock::Millis;
use crate::engine::history::{EventType, HistoryEvent};
use crate::engine::visits::{EventList, EventView};
use once_cell::race::OnceBox;
use serde::de::{Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;
use std::io::Read;
use std::marker::PhantomData;
use std::path::Path;

/// One recorded event, its details kept as JSON text as the engine writes them.
#[derive(Debug)]
pub struct RecordedEvent {
    /// `id`.
    pub id: i64,
    /// `previousEventId` (0 for none).
    pub previous_event_id: i64,
    /// `type` (borrowed for a re-run's events: the engine's types are static).
    pub event_type: Cow<'static, str>,
    /// `timestamp`, ms since the Unix epoch.
    pub timestamp_ms: Millis,
    /// The `*EventDetails` object as compact JSON text, when the event has one (a re-run's
    /// as the engine wrote it: made exact, it was copied).
    pub details: Option<String>,
    /// The same, parsed once, when first asked for (an empty object when there are none):
    /// details the comparison finds the same as text are never parsed (boxed: most never are,
    /// and an empty cell then takes one word, not a whole Value).
    parsed: OnceBox<Value>,
}

impl Clone for RecordedEvent {
    /// The details parsed are not copied: they are parsed again if asked for.
    fn clone(&self) -> Self {
        RecordedEvent {
            id: self.id,
            previous_event_id: self.previous_event_id,
            event_type: self.event_type.clone(),
            timestamp_ms: self.timestamp_ms,
            details: self.details.clone(),
            parsed: OnceBox::new(),
        }
    }
}

impl RecordedEvent {
    /// An event read from a file: its type kept as the engine's static name when it is one
    /// of AWS's (not copied), its details compact.
    pub(super) fn read(
        id: i64,
        previous_event_id: i64,
        event_type: &str,
        timestamp_ms: Millis,
        details: Option<String>,
    ) -> RecordedEvent {
        let event_type = match EventType::parse(event_type) {
            Some(known) => Cow::Borrowed(known.as_str()),
            None => Cow::Owned(event_type.to_owned()),
        };
        RecordedEvent {
            id,
            previous_event_id,
            event_type,
            timestamp_ms,
            details,
            parsed: OnceBox::new(),
        }
    }

    /// The view the visit tree reads.
    pub fn view(&self) -> EventView<'_> {
        EventView {
            id: self.id,
            previous_event_id: self.previous_event_id,
            event_type: &self.event_type,
            timestamp_ms: self.timestamp_ms,
            details: self.details.as_deref(),
            replay_key: None,
        }
    }

    /// The details, parsed (an empty object when there are none).
    pub fn details_value(&self) -> &Value {
        self.parsed.get_or_init(|| {
            Box::new(
                self.details
                    .as_deref()
                    .and_then(|d| serde_json::from_str(d).ok())
                    .unwrap_or_else(empty),
            )
        })
    }
}

impl EventList for [RecordedEvent] {
    fn at(&self, i: usize) -> EventView<'_> {
        self[i].view()
    }
    fn count(&self) -> usize {
        self.len()
    }
}

impl From<HistoryEvent> for RecordedEvent {
    /// Moves the details text: a re-run's events are not needed after.
    fn from(e: HistoryEvent) -> Self {
        RecordedEvent {
            id: e.id,
            previous_event_id: e.previous_event_id,
            event_type: Cow::Borrowed(e.event_type.as_str()),
            timestamp_ms: e.timestamp,
            details: e.details,
            parsed: OnceBox::new(),
        }
    }
}

// The same size as the engine's events, so that a re-run's history becomes a list of these
// in the memory it takes (collected in place) instead of 10,000 events' worth of new pages.
const _: () = assert!(std::mem::size_of::<RecordedEvent>() == std::mem::size_of::<HistoryEvent>());

/// Reads a history file's text: one or more JSON documents, each `{"events": [...]}` or a bare
/// list of events. Every page is read; the events are returned sorted by id. The file is read
/// in one pass (`one_pass`) where that pass can; otherwise, and for every error, it is
/// read typed (`read_typed`).
pub fn parse_history(text: &str) -> Result<Vec<RecordedEvent>, ReplayError> {
    let mut events = match super::one_pass::read(text) {
        Ok(events) => events,
        Err(super::one_pass::GiveUp) => read_typed(text)?,
    };
    events.sort_by_key(|e| e.id);
    check_ids(&events)?;
    Ok(events)
}

/// Reads a history file's text typed, through serde_json: its events in the order of the
/// file, or what is wrong with it.
pub(super) fn read_typed(text: &str) -> Result<Vec<RecordedEvent>, ReplayError> {
    FIRST_PAGE_EVENTS.set(events_in(text.len()));
    let mut events = Vec::new();
    let stream = serde_json::Deserializer::from_str(text).into_iter::<Page>();
    for (page, document) in stream.enumerate() {
        let at = || format!("page {}", page + 1);
        let document = document.map_err(|e| not_json(page, &e))?;
        if document.refused {
            return Err(as_values(text));
        }
        let mut list = match document.kind {
            PageKind::List(list) | PageKind::Object(Some(list)) => list,
            PageKind::Object(None) => return Err(ReplayError::History {
                at: at(),
                why:
                    "an object without an \"events\" list (expected get-execution-history's output)"
                        .into(),
            }),
            PageKind::Other => {
                return Err(ReplayError::History {
                    at: at(),
                    why: "neither {\"events\": [...]} nor a list of events".into(),
                })
            }
        };
        if let Some((i, why)) = list.problem {
            return Err(ReplayError::History {
                at: format!("page {}, event {}", page + 1, i + 1),
                why,
            });
        }
        if events.is_empty() {
            events = list.events; // one page, as most files are: not copied
        } else {
            events.append(&mut list.events);
        }
    }
    Ok(events)
}

/// Reads the history file at `path` ([`parse_history`]).
pub fn read_history(path: &Path) -> Result<Vec<RecordedEvent>, ReplayError> {
    let unreadable = |e: std::io::Error| ReplayError::Unreadable {
        path: path.display().to_string(),
        why: e.to_string(),
    };
    let file = std::fs::File::open(path).map_err(unreadable)?;
    match mapped(&file) {
        Some(map) => match std::str::from_utf8(&map) {
            Ok(text) => parse_history(text),
            // Told as reading it says it (std's words for text that is not UTF-8).
            Err(_) => Err(unreadable(
                std::io::read_to_string(&map[..])
                    .err()
                    .unwrap_or_else(|| std::io::ErrorKind::InvalidData.into()),
            )),
        },
        None => parse_history(&std::io::read_to_string(file).map_err(unreadable)?),
    }
}

/// A regular file that is not empty, mapped: read without copying it into new memory, whose
/// pages the system gave one fault at a time (3 MB of history, 2–4 ms of a replay's reading).
/// `None` for anything else, which is read.
fn mapped(file: &std::fs::File) -> Option<memmap2::Mmap> {
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() == 0 {
        return None;
    }
    // SAFETY: the map is read while the history is parsed, then dropped. Should another
    // process cut the file short meanwhile, reading past its new end is a SIGBUS, as it is for
    // ripgrep, which maps the files it searches alike; a file changed in place reads as
    // whatever it holds, which the parse checks like any text.
    unsafe { memmap2::Mmap::map(file) }.ok()
}

/// [`execution_started`] of the file at `path`, read from its first 64 KiB alone: a replay
/// starts the re-run from it while another thread reads the whole file. `None` when the
/// first event does not end there or the file cannot be read (the whole read tells why).
pub fn execution_started_in(path: &Path) -> Option<RecordedEvent> {
    const HEAD_BYTES: u64 = 64 * 1024;
    let mut head = Vec::with_capacity(HEAD_BYTES as usize);
    let file = std::fs::File::open(path).ok()?;
    file.take(HEAD_BYTES).read_to_end(&mut head).ok()?;
    // The head may end inside a character: what comes before it is read.
    let valid = match std::str::from_utf8(&head) {
        Ok(text) => text,
        Err(e) => std::str::from_utf8(&head[..e.valid_up_to()]).ok()?,
    };
    execution_started(valid)
}

/// The history's first event read alone, when it is the execution's start (event 1): the
/// first event of the first page, as most files hold it. A replay starts the re-run from it
/// while the rest of the file is read; the file's errors are [`parse_history`]'s to tell.
pub fn execution_started(text: &str) -> Option<RecordedEvent> {
    let mut first = None;
    // Reading stops with an error once the first event is read: the rest is not looked at.
    let _ = FirstEvent(&mut first).deserialize(&mut serde_json::Deserializer::from_str(text));
    first.filter(|e| e.id == 1 && e.event_type == "ExecutionStarted")
}

/// How many events a history file of `bytes` may hold, at most but for the smallest: sized
/// for them, a list of events is not copied as it grows (a page left untouched costs nothing).
pub fn events_in(bytes: usize) -> usize {
    // An event's four fields and details, indented or not, take more than this.
    const LEAST_EVENT_BYTES: usize = 128;
    bytes / LEAST_EVENT_BYTES
}

thread_local! {
    /// How many events the first page read on this thread is sized for ([`events_in`] of the
    /// whole text): serde_json tells a list's length to no one, and a 10,000-event list
    /// grown by doubling spent a fifth of its reading on copies and page faults.
    static FIRST_PAGE_EVENTS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A page that is not JSON.
fn not_json(page: usize, e: &serde_json::Error) -> ReplayError {
    ReplayError::History {
        at: format!("page {}", page + 1),
        why: format!("not JSON: {e}"),
    }
}

/// What reading the file as values says of it: the error of a page that a full parse refuses
/// though its syntax is sound (see [`refused`]).
fn as_values(text: &str) -> ReplayError {
    let stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let mut pages = stream.enumerate();
    match pages.find_map(|(page, document)| document.err().map(|e| (page, e))) {
        Some((page, e)) => not_json(page, &e),
        None => ReplayError::History {
            at: "the file".into(),
            why: "not JSON".into(),
        },
    }
}

/// The ids must run 1, 2, 3, ... with no gap or repeat: a missing page is named, not guessed.
fn check_ids(events: &[RecordedEvent]) -> Result<(), ReplayError> {
    if events.is_empty() {
        return Err(ReplayError::History {
            at: "the file".into(),
            why: "it holds no events".into(),
        });
    }
    for (i, e) in events.iter().enumerate() {
        let want = i as i64 + 1;
        if e.id != want {
            let why = if e.id < want {
                format!("event {} appears twice (a page given twice?)", e.id)
            } else {
                format!(
                    "events {want} to {} are missing (a page left out?)",
                    e.id - 1
                )
            };
            return Err(ReplayError::History {
                at: format!("event {}", e.id),
                why,
            });
        }
    }
    // Every event follows an earlier one, or none (0): the chain a replay compares.
    if let Some(e) = events
        .iter()
        .find(|e| !(0..e.id).contains(&e.previous_event_id))
    {
        return Err(ReplayError::History {
            at: format!("event {}", e.id),
            why: format!(
                "its previousEventId {} names no earlier event",
                e.previous_event_id
            ),
        });
    }
    if events[0].event_type != "ExecutionStarted" {
        return Err(ReplayError::History {
            at: "event 1".into(),
            why: format!("it is {}, not ExecutionStarted", events[0].event_type),
        });
    }
    Ok(())
}

/// One event in AWS's shape: `id`, `previousEventId`, `type`, `timestamp` and one
/// `*EventDetails` object.
/// `scratch` is where details are made compact, reused from event to event.
fn event(fields: Fields<'_>, scratch: &mut Scratch) -> Result<RecordedEvent, String> {
    let details = fields.details.map(|d| scratch.keep(d));
    let id = fields
        .id
        .as_ref()
        .and_then(Value::as_i64)
        .ok_or("an event without a numeric \"id\"")?;
    let Some(Scalar::Text(event_type)) = fields.event_type else {
        return Err(format!("event {id} has no \"type\""));
    };
    let previous_event_id = fields
        .previous_event_id
        .as_ref()
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let timestamp_ms = match fields.timestamp.map(Scalar::into_value) {
        Some(t) => timestamp(&t).ok_or_else(|| format!("event {id}: unreadable timestamp {t}"))?,
        None => return Err(format!("event {id} has no \"timestamp\"")),
    };
    Ok(RecordedEvent::read(
        id,
        previous_event_id,
        &event_type,
        timestamp_ms,
        details,
    ))
}

fn empty() -> Value {
    Value::Object(Default::default())
}

/// An ISO 8601 timestamp (the AWS CLI's and ours) or epoch seconds (the CLI with
/// `cli_timestamp_format = none`, the SDKs' raw JSON).
fn timestamp(t: &Value) -> Option<Millis> {
    match t {
        Value::Number(n) => n.as_f64().map(|s| (s * 1000.0).round() as Millis),
        Value::String(s) => timestamp_text(s),
        _ => None,
    }
}

/// A timestamp written as text (ISO 8601).
pub(super) fn timestamp_text(s: &str) -> Option<Millis> {
    utc_millis(s).or_else(|| {
        chrono::DateTime::parse_from_rfc3339(s)
            .ok()
            .map(|d| d.timestamp_millis())
    })
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ`, as the AWS CLI and sfn-local write every timestamp, read
/// without chrono's general RFC 3339 parser (which took a fourteenth of reading a 10,000-event
/// history); anything else, a leap second included, is left to that parser.
fn utc_millis(s: &str) -> Option<Millis> {
    let b = s.as_bytes();
    let shape = b.len() == 24
        && [
            (4, b'-'),
            (7, b'-'),
            (10, b'T'),
            (13, b':'),
            (16, b':'),
            (19, b'.'),
            (23, b'Z'),
        ]
        .iter()
        .all(|&(at, c)| b[at] == c);
    if !shape {
        return None;
    }
    let digits = |from: usize, to: usize| {
        b[from..to].iter().try_fold(0u32, |n, &c| {
            c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
        })
    };
    let date =
        chrono::NaiveDate::from_ymd_opt(digits(0, 4)? as i32, digits(5, 7)?, digits(8, 10)?)?;
    let time = (
        digits(11, 13)?,
        digits(14, 16)?,
        digits(17, 19)?,
        digits(20, 23)?,
    );
    let at = date.and_hms_milli_opt(time.0, time.1, time.2, time.3)?;
    Some(at.and_utc().timestamp_millis())
}

/// One document of a history file, as replay reads it (typed, so the events' details are
/// borrowed text instead of values built only to be written back to text).
struct Page {
    kind: PageKind,
    /// Whether a full parse refuses a value read as text (see [`refused`]).
    refused: bool,
}

/// What a document is.
enum PageKind {
    /// A bare list of events.
    List(Events),
    /// An object: its `events` list, if it has one.
    Object(Option<Events>),
    /// Anything else.
    Other,
}

/// A list of events read: each one, until the first that is not one (its index and why);
/// the rest of the list is still read, so a page that is not JSON says so first.
#[derive(Default)]
struct Events {
    events: Vec<RecordedEvent>,
    problem: Option<(usize, String)>,
}

/// One item of a list of events: the fields replay reads, or `None` when it is no object.
struct Item<'a> {
    fields: Option<Fields<'a>>,
    /// Whether a full parse refuses a value read as text (see [`refused`]).
    refused: bool,
}

/// Where [`event`] makes details compact (reused from event to event, so the text kept takes
/// no more memory than it needs), and whether a full parse refuses any of them.
#[derive(Default)]
struct Scratch {
    text: String,
    refused: bool,
}

impl Scratch {
    /// The details `raw` as compact text.
    fn keep(&mut self, raw: &RawValue) -> String {
        self.refused |= refused(raw.get(), &mut self.text);
        self.text.as_str().to_owned()
    }
}

/// An event's fields as written; [`event`] checks them in the order it always did.
#[derive(Default)]
struct Fields<'a> {
    id: Option<Value>,
    previous_event_id: Option<Value>,
    event_type: Option<Scalar<'a>>,
    timestamp: Option<Scalar<'a>>,
    /// The first `*EventDetails` key's object, as it is in the file.
    details: Option<&'a RawValue>,
}

/// A key, borrowed from the text unless it has escapes.
struct Key<'a>(Cow<'a, str>);

/// A field's value that is text where it is well formed (an event's type and timestamp):
/// borrowed from the file unless it has escapes, not made a [`Value`] (a 10,000-event history
/// made 20,000 strings only to read them once).
enum Scalar<'a> {
    /// A string.
    Text(Cow<'a, str>),
    /// Anything else, as it is.
    Other(Value),
}

impl Scalar<'_> {
    /// The value as JSON.
    fn into_value(self) -> Value {
        match self {
            Scalar::Text(text) => Value::String(text.into_owned()),
            Scalar::Other(value) => value,
        }
    }
}

/// What a value becomes by its kind: [`Page`] and [`Item`] read lists and objects and take
/// anything else as what it is not.
trait Shape<'de>: Sized {
    /// A value that is neither a list nor an object.
    fn other() -> Self;
    /// A list.
    fn list<A: SeqAccess<'de>>(seq: A) -> Result<Self, A::Error>;
    /// An object.
    fn object<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error>;
}

/// The visitor of a [`Shape`].
struct Shaped<T>(PhantomData<T>);

impl<'de, T: Shape<'de>> Visitor<'de> for Shaped<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<T, E> {
        Ok(T::other())
    }
    fn visit_i64<E>(self, _: i64) -> Result<T, E> {
        Ok(T::other())
    }
    fn visit_u64<E>(self, _: u64) -> Result<T, E> {
        Ok(T::other())
    }
    fn visit_f64<E>(self, _: f64) -> Result<T, E> {
        Ok(T::other())
    }
    fn visit_str<E>(self, _: &str) -> Result<T, E> {
        Ok(T::other())
    }
    fn visit_unit<E>(self) -> Result<T, E> {
        Ok(T::other())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
        T::list(seq)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::object(map)
    }
}

impl<'de> Shape<'de> for Page {
    fn other() -> Self {
        Page {
            kind: PageKind::Other,
            refused: false,
        }
    }
    fn list<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        let mut list = Events {
            events: Vec::with_capacity(FIRST_PAGE_EVENTS.take()),
            problem: None,
        };
        let mut scratch = Scratch::default();
        while let Some(Item { fields, refused }) = seq.next_element()? {
            scratch.refused |= refused;
            if list.problem.is_some() {
                // Not read, but a page a full parse refuses is still "not JSON" first.
                let details = fields.and_then(|f| f.details);
                scratch.refused |= details.is_some_and(skipped);
                continue;
            }
            let read = fields.ok_or_else(|| "an event that is not an object".to_owned());
            match read.and_then(|fields| event(fields, &mut scratch)) {
                Ok(e) => list.events.push(e),
                Err(why) => list.problem = Some((list.events.len(), why)),
            }
        }
        Ok(Page {
            kind: PageKind::List(list),
            refused: scratch.refused,
        })
    }
    fn object<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let (mut events, mut refused) = (None, false);
        while let Some(Key(key)) = map.next_key()? {
            if key == "events" {
                let page: Page = map.next_value()?;
                refused |= page.refused;
                events = match page.kind {
                    PageKind::List(list) => Some(list),
                    _ => None,
                };
            } else {
                refused |= skipped(map.next_value()?);
            }
        }
        Ok(Page {
            kind: PageKind::Object(events),
            refused,
        })
    }
}

impl<'de> Shape<'de> for Item<'de> {
    fn other() -> Self {
        Item {
            fields: None,
            refused: false,
        }
    }
    fn list<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        let mut refused = false;
        while let Some(raw) = seq.next_element()? {
            refused |= skipped(raw);
        }
        Ok(Item {
            fields: None,
            refused,
        })
    }
    fn object<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let (mut f, mut refused) = (Fields::default(), false);
        while let Some(Key(key)) = map.next_key()? {
            match &*key {
                "id" => f.id = Some(map.next_value()?),
                "previousEventId" => f.previous_event_id = Some(map.next_value()?),
                "type" => f.event_type = Some(map.next_value()?),
                "timestamp" => f.timestamp = Some(map.next_value()?),
                k if k.ends_with("EventDetails") => {
                    let raw: &RawValue = map.next_value()?;
                    if f.details.is_none() && raw.get().starts_with('{') {
                        f.details = Some(raw);
                    } else {
                        refused |= skipped(raw);
                    }
                }
                _ => refused |= skipped(map.next_value()?),
            }
        }
        Ok(Item {
            fields: Some(f),
            refused,
        })
    }
}

/// Reads the first event of a document ([`execution_started`]): the first item of a bare
/// list or of an object's `events`.
struct FirstEvent<'o>(&'o mut Option<RecordedEvent>);

impl<'de> DeserializeSeed<'de> for FirstEvent<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for FirstEvent<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of events")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        if let Some(Item {
            fields: Some(fields),
            ..
        }) = seq.next_element()?
        {
            *self.0 = event(fields, &mut Scratch::default()).ok();
        }
        Err(serde::de::Error::custom("read no further"))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(Key(key)) = map.next_key()? {
            if key == "events" {
                return map.next_value_seed(self);
            }
            map.next_value::<serde::de::IgnoredAny>()?;
        }
        Ok(())
    }
}

impl<'de> Deserialize<'de> for Page {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Shaped(PhantomData))
    }
}

impl<'de> Deserialize<'de> for Item<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Shaped(PhantomData))
    }
}

impl<'de> Deserialize<'de> for Scalar<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ScalarVisitor;
        impl<'de> Visitor<'de> for ScalarVisitor {
            type Value = Scalar<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Scalar<'de>, E> {
                Ok(Scalar::Text(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Scalar<'de>, E> {
                Ok(Scalar::Text(Cow::Owned(s.to_owned())))
            }
            fn visit_bool<E>(self, b: bool) -> Result<Scalar<'de>, E> {
                Ok(Scalar::Other(b.into()))
            }
            fn visit_i64<E>(self, n: i64) -> Result<Scalar<'de>, E> {
                Ok(Scalar::Other(n.into()))
            }
            fn visit_u64<E>(self, n: u64) -> Result<Scalar<'de>, E> {
                Ok(Scalar::Other(n.into()))
            }
            fn visit_f64<E>(self, n: f64) -> Result<Scalar<'de>, E> {
                Ok(Scalar::Other(n.into()))
            }
            fn visit_unit<E>(self) -> Result<Scalar<'de>, E> {
                Ok(Scalar::Other(Value::Null))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Scalar<'de>, A::Error> {
                let value = Value::deserialize(serde::de::value::SeqAccessDeserializer::new(seq));
                value.map(Scalar::Other)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Scalar<'de>, A::Error> {
                let value = Value::deserialize(serde::de::value::MapAccessDeserializer::new(map));
                value.map(Scalar::Other)
            }
        }
        d.deserialize_any(ScalarVisitor)
    }
}

impl<'de> Deserialize<'de> for Key<'de> {
    /// A [`Scalar`]'s text: JSON's keys are strings, read as one.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Scalar::deserialize(d)? {
            Scalar::Text(text) => Ok(Key(text)),
            Scalar::Other(_) => Err(serde::de::Error::custom("a key that is not text")),
        }
    }
}

/// Whether a full parse refuses `json`, text whose syntax serde_json checked while reading
/// it as text or skipping it: that check leaves out a `\u` escape's surrogate pairing and a
/// number's range, which reading the file as values checked (and replay said "not JSON").
/// Only text that holds such an escape or number is parsed again to know. `out` receives the
/// text made compact (see [`compact`]).
fn refused(json: &str, out: &mut String) -> bool {
    compact(json, out) && serde_json::from_str::<Value>(json).is_err()
}

/// [`refused`] of a value replay skips.
fn skipped(raw: &RawValue) -> bool {
    refused(raw.get(), &mut String::new())
}

/// Writes `json` into `out` without the whitespace outside its strings, as the engine writes
/// details (the AWS CLI and `get-execution-history` indent them). Escapes stay as written: a
/// recording that escapes otherwise (`\u00e9` for `é`) differs in text and is compared by
/// value. Returns whether the text holds what only a full parse checks: a `\uD...` escape
/// (a surrogate's range) or a number with an exponent or of more than 300 digits.
fn compact(json: &str, out: &mut String) -> bool {
    const MAX_DIGITS: usize = 300;
    let bytes = json.as_bytes();
    out.clear();
    let (mut run, mut i, mut digits, mut unsure) = (0, 0, 0, false);
    while i < bytes.len() {
        let b = bytes[i];
        if b.is_ascii_digit() {
            digits += 1;
            unsure |= digits > MAX_DIGITS;
        } else {
            unsure |= digits > 0 && matches!(b, b'e' | b'E');
            digits = 0;
        }
        match b {
            b'"' => {
                let (end, surrogate) = after_string(bytes, i + 1);
                unsure |= surrogate;
                i = end;
            }
            b' ' | b'\n' | b'\r' | b'\t' => {
                out.push_str(&json[run..i]);
                while i < bytes.len() && matches!(bytes[i], b' ' | b'\n' | b'\r' | b'\t') {
                    i += 1;
                }
                run = i;
            }
            _ => i += 1,
        }
    }
    out.push_str(&json[run..]);
    unsure
}

/// The index past the closing quote of the string whose text starts at `i` (an escape's
/// second byte is ASCII, so it is skipped whole), and whether it holds a `\uD...` escape.
fn after_string(bytes: &[u8], mut i: usize) -> (usize, bool) {
    let mut surrogate = false;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => {
                surrogate |= bytes.get(i + 1) == Some(&b'u')
                    && matches!(bytes.get(i + 2), Some(b'd' | b'D'));
                i += 2;
            }
            b'"' => return (i + 1, surrogate),
            _ => i += 1,
        }
    }
    (bytes.len(), surrogate)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The timestamps read without chrono's parser read as chrono reads them; what is not
    /// their exact shape, or no date, is chrono's to read or refuse.
    #[test]
    fn timestamps_read_alone_read_as_chrono_reads_them() {
        for text in [
            "2026-12-05T15:58:33.856Z",
            "2024-02-29T23:59:59.999Z",
            "1970-01-01T00:00:00.000Z",
            "1969-12-31T23:59:59.001Z",
            "2023-02-29T00:00:00.000Z",
            "2026-12-05T24:00:00.000Z",
            "2026-12-05T15:58:60.000Z",
            "2026-12-05t15:58:33.856z",
            "2026-12-05T15:58:33.856+01:00",
            "2026-12-05T15:58:33Z",
            "2026-1a-05T15:58:33.856Z",
        ] {
            let chrono = chrono::DateTime::parse_from_rfc3339(text).ok();
            let chrono = chrono.map(|d| d.timestamp_millis());
            assert_eq!(timestamp(&Value::String(text.into())), chrono, "{text}");
            if let Some(ms) = utc_millis(text) {
                assert_eq!(Some(ms), chrono, "{text}");
            }
        }
        assert_eq!(
            utc_millis("2026-12-05T15:58:33.856Z"),
            Some(1_796_486_313_856)
        );
    }

    #[test]
    fn pages_concatenated_are_read_whole_and_sorted() {
        let text = r#"{"events":[{"id":2,"previousEventId":1,"type":"PassStateEntered","timestamp":"2024-01-01T00:00:01.500000+00:00","stateEnteredEventDetails":{"name":"P"}}]}
{"events":[{"id":1,"previousEventId":0,"type":"ExecutionStarted","timestamp":1704067200.25,"executionStartedEventDetails":{"input":"{}"}}]}"#;
        let events = parse_history(text).unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].event_type, "ExecutionStarted");
        assert_eq!(events[0].timestamp_ms, 1_704_067_200_250);
        assert_eq!(events[1].timestamp_ms, 1_704_067_201_500);
    }

    #[test]
    fn details_are_made_compact_outside_strings_only() {
        let text = r#"[{"id": 1, "type": "ExecutionStarted", "timestamp": 0,
            "executionStartedEventDetails": {
                "input": "{\"a b\": \"\\\" x\"}",
                "inputDetails": { "truncated" : false }
            }}]"#;
        let events = parse_history(text).unwrap();
        assert_eq!(
            events[0].details.as_deref(),
            Some(r#"{"input":"{\"a b\": \"\\\" x\"}","inputDetails":{"truncated":false}}"#)
        );
        assert_eq!(events[0].details_value()["input"], r#"{"a b": "\" x"}"#);
    }

    #[test]
    fn an_event_that_is_not_one_is_named_after_the_page_is_read_whole() {
        let at = |text: &str| parse_history(text).unwrap_err().to_string();
        let second_not_object =
            r#"{"events":[{"id":1,"type":"ExecutionStarted","timestamp":0},[1]]}"#;
        assert_eq!(
            at(second_not_object),
            "the history, at page 1, event 2: an event that is not an object"
        );
        let bad_timestamp = r#"[{"id":1,"type":"ExecutionStarted","timestamp":{"at": 1}}]"#;
        assert_eq!(
            at(bad_timestamp),
            r#"the history, at page 1, event 1: event 1: unreadable timestamp {"at":1}"#
        );
        let then_not_json = r#"[{"type":"ExecutionStarted","timestamp":0},{"id":]"#;
        assert!(at(then_not_json).starts_with("the history, at page 1: not JSON:"));
        assert_eq!(
            at(r#"{"events":{"events":[]}}"#),
            "the history, at page 1: an object without an \"events\" list (expected get-execution-history's output)"
        );
        assert_eq!(
            at("[] 3"),
            "the history, at page 2: neither {\"events\": [...]} nor a list of events"
        );
    }

    /// What serde_json checks only when it builds values (a surrogate escape's pairing, a
    /// number's range) is refused as it was when the file was read as values, with the same
    /// message; the same escapes and numbers, well formed, are read.
    #[test]
    fn what_only_a_full_parse_refuses_is_still_not_json() {
        let page = |extra: &str, details: &str| {
            format!(
                r#"{{"events":[{{"id":1,"type":"ExecutionStarted","timestamp":0{extra},"executionStartedEventDetails":{details}}}]}}"#
            )
        };
        for text in [
            page("", r#"{"input":"\ud800 x"}"#),
            page("", r#"{"input":"{}","n":1e999}"#),
            page(r#","other":[1e999]"#, "{}"),
            format!("{} {}", page("", "{}"), page("", r#"{"n":[-1e400]}"#)),
        ] {
            let as_values = serde_json::Deserializer::from_str(&text)
                .into_iter::<Value>()
                .enumerate()
                .find_map(|(p, d)| d.err().map(|e| format!("page {}: not JSON: {e}", p + 1)))
                .unwrap();
            let e = parse_history(&text).unwrap_err().to_string();
            assert_eq!(e, format!("the history, at {as_values}"), "{text}");
        }
        let fine = page("", r#"{"input":"\ud83e\udd50 \u00e9","n":1.5e3}"#);
        let events = parse_history(&fine).unwrap();
        assert_eq!(events[0].details_value()["input"], "🥐 é");
    }

    #[test]
    fn a_missing_page_is_named() {
        let text = r#"[{"id":1,"type":"ExecutionStarted","timestamp":0},{"id":3,"type":"X","timestamp":0}]"#;
        let e = parse_history(text).unwrap_err().to_string();
        assert!(e.contains("events 2 to 2 are missing"), "{e}");
    }

    /// A history file is mapped, not read into new memory: it reads as its text does, and an
    /// empty file, a folder and text that is not UTF-8 are told as reading them told.
    #[test]
    fn a_history_file_mapped_reads_as_its_text() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.json");
        let text = r#"{"events":[{"id":1,"previousEventId":0,"type":"ExecutionStarted",
            "timestamp":"2024-01-01T00:00:00.000Z",
            "executionStartedEventDetails":{"input":"{\"a\": 1}"}}]}"#;
        std::fs::write(&path, text).unwrap();
        let (read, parsed) = (read_history(&path).unwrap(), parse_history(text).unwrap());
        let fields = |e: &RecordedEvent| (e.id, e.timestamp_ms, e.details.clone());
        assert_eq!(fields(&read[0]), fields(&parsed[0]));
        let told = |path: &Path| read_history(path).unwrap_err().to_string();
        std::fs::write(&path, "").unwrap();
        assert!(
            told(&path).ends_with("it holds no events"),
            "{}",
            told(&path)
        );
        std::fs::write(&path, b"{\"events\":[\xff]}").unwrap();
        let not_utf8 = std::fs::read_to_string(&path).unwrap_err();
        assert_eq!(
            told(&path),
            format!("cannot read {}: {not_utf8}", path.display())
        );
        let folder = std::fs::read_to_string(dir.path()).unwrap_err();
        assert_eq!(
            told(dir.path()),
            format!("cannot read {}: {folder}", dir.path().display())
        );
    }

    /// An event that follows no earlier event is refused by name (its place in the chain was
    /// looked up, and a replay stopped on a panic).
    #[test]
    fn an_event_that_follows_no_earlier_event_is_named() {
        for (previous, id) in [(99, 2), (-5, 2), (2, 2)] {
            let text = format!(
                r#"[{{"id":1,"type":"ExecutionStarted","timestamp":0}},
                    {{"id":2,"previousEventId":{previous},"type":"X","timestamp":0}}]"#
            );
            let e = parse_history(&text).unwrap_err().to_string();
            let said = format!("event {id}: its previousEventId {previous} names no earlier event");
            assert!(e.ends_with(&said), "{e}");
        }
    }
}
