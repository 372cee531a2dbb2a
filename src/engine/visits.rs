//! One reading of an execution's history as a tree of state visits: the execution's top level
//! is a [`Lane`] of [`Visit`]s, a Parallel visit holds a lane per branch and a Map visit a lane
//! per iteration, each holding visits of its own, three or more levels deep.
//!
//! Coverage, "why", the history table, the console and the graph overlay all read this tree
//! instead of walking the events themselves. It is built from the events' own links
//! (`previousEventId`, and the branch and iteration events that open lanes), never from their
//! order: Parallel branches and Map iterations interleave on AWS, and a branch's events may
//! sit anywhere between its Parallel's `ParallelStateStarted` and `ParallelStateSucceeded`.
//! A history recorded on AWS (which has no replay keys) reads the same way as one of ours.
//!
//! Which visit an event belongs to is decided from the event it points at:
//!
//! - a `*StateEntered` opens a visit in its predecessor's lane, or a new branch lane when it
//!   points at a `ParallelStateStarted`, or the iteration lane a `MapIterationStarted` opened;
//! - a `Parallel*`/`Map*`/`MapIteration*` event belongs to the nearest Parallel (Map) visit
//!   found walking up from its predecessor that is still at a point where that event can come
//!   (a branch's last `ParallelStateExited` points *out* of the branch to the outer Parallel);
//! - anything else belongs to the visit its predecessor belongs to.
//!
//! ```
//! use sfn_local::engine::visits::{EventView, Tree, Ending};
//! let ev = |id, prev, ty, d| EventView { id, previous_event_id: prev, event_type: ty,
//!     timestamp_ms: 0, details: d, replay_key: None };
//! let events = [
//!     ev(1, 0, "ExecutionStarted", None),
//!     ev(2, 1, "TaskStateEntered", Some(r#"{"name":"Charge"}"#)),
//!     ev(3, 2, "TaskScheduled", None),
//!     ev(4, 3, "TaskFailed", Some(r#"{"error":"Boom"}"#)),
//!     ev(5, 4, "TaskStateExited", Some(r#"{"name":"Charge"}"#)),
//!     ev(6, 5, "PassStateEntered", Some(r#"{"name":"Recover"}"#)),
//! ];
//! let tree = Tree::build(&events);
//! let charge = &tree.visits[0];
//! assert_eq!(charge.failure.as_ref().unwrap().error.as_deref(), Some("Boom"));
//! assert_eq!(charge.ending, Ending::Exited); // caught: the execution went on
//! assert_eq!(tree.next(0).map(|v| v.state.as_str()), Some("Recover"));
//! assert_eq!(tree.owner(2).map(|v| v.state.as_str()), Some("Charge"));
//! ```

use foldhash::HashMapExt;
use serde::Deserialize;
use std::borrow::Cow;

/// One history event, from the store or from an in-memory run.
#[derive(Debug, Clone, Copy)]
pub struct EventView<'a> {
    /// `id`.
    pub id: i64,
    /// `previousEventId` (0 for none).
    pub previous_event_id: i64,
    /// `type`, e.g. `TaskFailed`.
    pub event_type: &'a str,
    /// `timestamp`, ms since the Unix epoch.
    pub timestamp_ms: i64,
    /// The details object's JSON.
    pub details: Option<&'a str>,
    /// The engine's replay key, when it wrote one (not read here: the links say it all).
    pub replay_key: Option<&'a str>,
}

impl<'a> From<&'a crate::store::EventRecord> for EventView<'a> {
    fn from(e: &'a crate::store::EventRecord) -> Self {
        EventView {
            id: e.id,
            previous_event_id: e.previous_event_id,
            event_type: &e.event_type,
            timestamp_ms: e.timestamp_ms,
            details: e.details.as_deref(),
            replay_key: e.replay_key.as_deref(),
        }
    }
}

impl<'a> From<&'a crate::engine::history::HistoryEvent> for EventView<'a> {
    fn from(e: &'a crate::engine::history::HistoryEvent) -> Self {
        EventView {
            id: e.id,
            previous_event_id: e.previous_event_id,
            event_type: e.event_type.as_str(),
            timestamp_ms: e.timestamp,
            details: e.details.as_deref(),
            replay_key: e.replay_key.as_deref(),
        }
    }
}

/// Events by id. Ids are numbers the history holds, so foldhash's speed costs no safety that
/// SipHash would give.
type IdMap = foldhash::HashMap<i64, usize>;

/// Where each event id is among the events given. Histories from AWS and from sfn-local number
/// their events 1, 2, 3, ... in order, and then an id is its index plus one: no map is built
/// (a replay reads two histories of 10,000 events, and the map was a tenth of reading each).
/// The first event out of that order turns it into a map.
#[derive(Debug, Clone)]
enum IdIndex {
    /// The first `n` events, event `i` with id `i + 1`.
    Dense(usize),
    /// Any ids.
    Map(IdMap),
}

impl Default for IdIndex {
    fn default() -> Self {
        IdIndex::Dense(0)
    }
}

impl IdIndex {
    /// The index of the event with `id`.
    fn get(&self, id: i64) -> Option<usize> {
        match self {
            IdIndex::Dense(n) => dense_index(id).filter(|i| i < n),
            IdIndex::Map(map) => map.get(&id).copied(),
        }
    }

    /// Records that the event at `index` has `id`: events are recorded in index order.
    fn insert(&mut self, id: i64, index: usize) {
        if let IdIndex::Dense(n) = self {
            if index == *n && dense_index(id) == Some(index) {
                *n += 1;
                return;
            }
            let mut map = IdMap::with_capacity(index + 1);
            map.extend((0..*n).map(|i| (i as i64 + 1, i)));
            *self = IdIndex::Map(map);
        }
        if let IdIndex::Map(map) = self {
            map.insert(id, index);
        }
    }
}

/// The index of the event with `id` in a history numbered 1, 2, 3, ... in order, as AWS and
/// sfn-local number theirs (none for 0, "no event", or a negative id).
pub fn dense_index(id: i64) -> Option<usize> {
    usize::try_from(id).ok()?.checked_sub(1)
}

/// An index or none, in four bytes instead of sixteen: a tree keeps one per event (its
/// owner, and while it is read, what the event leaves open), and a replay reads two trees of
/// 10,000 events, whose memory is faulted in page by page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Packed(u32);

impl Packed {
    const NONE: Packed = Packed(u32::MAX);

    fn new(index: Option<usize>) -> Packed {
        // An index past u32 would need a history of billions of events, which no memory holds.
        index.map_or(Packed::NONE, |i| {
            Packed(u32::try_from(i).unwrap_or(u32::MAX))
        })
    }

    fn get(self) -> Option<usize> {
        (self != Packed::NONE).then_some(self.0 as usize)
    }
}

/// Index of a visit in [`Tree::visits`].
pub type VisitId = usize;
/// Index of a lane in [`Tree::lanes`].
pub type LaneId = usize;

/// What a lane is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaneKind {
    /// The execution's top level.
    Root,
    /// One branch of a Parallel attempt.
    Branch,
    /// One Map iteration, with its index.
    Iteration(u64),
}

/// How a Map iteration ended, by its `MapIteration*` event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IterationEnd {
    /// `MapIterationSucceeded`.
    Succeeded,
    /// `MapIterationFailed`.
    Failed,
    /// `MapIterationAborted`.
    Aborted,
}

/// One sequential flow of visits: the top level, a branch or an iteration.
#[derive(Debug, Clone)]
pub struct Lane {
    /// What it is.
    pub kind: LaneKind,
    /// The Parallel or Map visit it belongs to (none for the top level).
    pub parent: Option<VisitId>,
    /// Its visits, in the order they were entered.
    pub visits: Vec<VisitId>,
    /// For an iteration, how it ended (none while it runs).
    pub iteration_end: Option<IterationEnd>,
}

/// A failure a visit recorded: the error event, or for a Parallel or Map the failure that came
/// up from one of its branches or iterations.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// Index (in the events given to [`Tree::build`]) of the event that holds the error.
    pub event: usize,
    /// That event's type (`TaskFailed`, `FailStateEntered`, ...).
    pub event_type: String,
    /// Its error name (none for a Fail state, whose error is the definition's).
    pub error: Option<String>,
    /// Its cause.
    pub cause: Option<String>,
    /// When it was recorded, ms since the epoch.
    pub at_ms: i64,
}

impl Failure {
    /// Whether it is a `States.Timeout` (`*TimedOut`, or the error's name).
    pub fn timed_out(&self) -> bool {
        self.event_type.ends_with("TimedOut")
            || self.error.as_deref() == Some(crate::asl::error::names::TIMEOUT)
    }
}

/// One attempt of a Task (`*Scheduled`), a Parallel or a Map (`*StateStarted`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Attempt {
    /// When it started, ms since the epoch.
    pub started_ms: i64,
    /// The Task's `timeoutInSeconds`, as scheduled.
    pub timeout_s: Option<f64>,
    /// The Task's `heartbeatInSeconds`, as scheduled.
    pub heartbeat_s: Option<f64>,
    /// How it failed, if it did (boxed, as few do, see [`Visit::failure`]).
    pub failure: Option<Box<Failure>>,
}

impl Attempt {
    /// Whether a timeout at `at_ms` was its heartbeat's: it declared HeartbeatSeconds, and
    /// either no TimeoutSeconds or it came before TimeoutSeconds (scaled by the execution's
    /// `--time-scale`, asked only when needed) had passed. Decided from the history's own
    /// timestamps, so a replayed or virtual-clock history reads the same.
    pub fn heartbeat_ran_out(&self, at_ms: i64, time_scale: &mut dyn FnMut() -> f64) -> bool {
        if self.heartbeat_s.is_none() {
            return false;
        }
        let Some(timeout) = self.timeout_s else {
            return true;
        };
        let elapsed = (at_ms - self.started_ms) as f64;
        elapsed < timeout * 1000.0 * time_scale()
    }
}

/// How a visit ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Still running when the history ends (or the execution stopped around it).
    Open,
    /// `*StateExited`: it went on normally, or through a Catch when it has a failure.
    Exited,
    /// `*StateAborted`: a sibling branch or iteration failed (or, with a failure, its own
    /// failure ended its branch: AWS aborts the failed state too).
    Aborted,
    /// A Fail state.
    Fail,
}

/// What the visit is doing, to tell whose a `Parallel*`/`Map*` event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Entered,
    Running,
    AttemptEnded,
    Closed,
}

/// One visit of one state.
#[derive(Debug, Clone)]
pub struct Visit {
    /// The state's name.
    pub state: String,
    /// Its type as the events spell it (`Task`, `Parallel`, ...).
    pub state_type: Cow<'static, str>,
    /// The lane it runs in.
    pub lane: LaneId,
    /// Index of its `*StateEntered` event.
    pub entered: usize,
    /// When it was entered, ms since the epoch.
    pub entered_ms: i64,
    /// When it ended, if it did.
    pub ended_ms: Option<i64>,
    /// Its attempts, in order.
    pub attempts: Vec<Attempt>,
    /// The failure it ended with or was caught with (none once a retry succeeded). Boxed: few
    /// visits fail, and unboxed it was two fifths of every visit's size (a replay reads two
    /// trees of thousands of visits).
    pub failure: Option<Box<Failure>>,
    /// How it ended.
    pub ending: Ending,
    /// A Parallel's branches (of every attempt) or a Map's iterations.
    pub lanes: Vec<LaneId>,
    phase: Phase,
}

impl Visit {
    /// Its recorded input (its Entered event's, in `events`, the events the tree was read
    /// from): read when asked for, as most readers of a tree never ask.
    pub fn input<E: EventList + ?Sized>(&self, events: &E) -> Option<String> {
        #[derive(Deserialize)]
        struct Entered {
            input: Option<serde_json::Value>,
        }
        let details = events.at(self.entered).details?;
        text(serde_json::from_str::<Entered>(details).ok()?.input)
    }

    /// Whether it failed and a Catch sent the execution on.
    pub fn caught(&self) -> bool {
        self.failure.is_some() && self.ending == Ending::Exited
    }
}

/// An execution's history read as visits.
#[derive(Debug, Clone)]
pub struct Tree {
    /// Every visit, in the order they were entered.
    pub visits: Vec<Visit>,
    /// Every lane; the first is the top level.
    pub lanes: Vec<Lane>,
    /// Per event, the visit it belongs to.
    owners: Vec<Packed>,
}

/// The fields of event details the tree reads, names borrowed from the details' text where
/// they hold no escapes (a replay reads two trees of 10,000 events).
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Details<'a> {
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    /// `EvaluationFailed` names its state here.
    #[serde(borrow)]
    state: Option<Cow<'a, str>>,
    error: Option<String>,
    /// Text as the engine writes it; any JSON is taken (recorded histories may hold it parsed).
    cause: Option<serde_json::Value>,
    index: Option<u64>,
    timeout_in_seconds: Option<f64>,
    heartbeat_in_seconds: Option<f64>,
}

/// A details field as text: a string as it is, anything else as JSON.
fn text(value: Option<serde_json::Value>) -> Option<String> {
    value.map(|v| match v {
        serde_json::Value::String(s) => s,
        other => other.to_string(),
    })
}

/// The state type an Entered event's type names (`Pass` for `PassStateEntered`): for one of
/// AWS's Entered types, part of its static name (not copied); another as written.
fn state_type_of(entered: &str) -> Cow<'static, str> {
    let known = crate::engine::history::EventType::parse(entered);
    if let Some(state_type) = known.and_then(|t| t.as_str().strip_suffix("StateEntered")) {
        return Cow::Borrowed(state_type);
    }
    // Not trim_end_matches: its substring searcher, set up anew for each visit, was a tenth
    // of a replay's tree.
    let mut state_type = entered;
    while let Some(trimmed) = state_type.strip_suffix("StateEntered") {
        state_type = trimmed;
    }
    Cow::Owned(state_type.to_owned())
}

/// What the head of an event's details says when it is written as the engine and AWS write
/// it: the name first, without escapes, then for a Map iteration's events its index
/// (`{"name":"Charge","input":...}`, `{"name":"Each","index":3}`). Read so, the rest of the
/// details (an Entered event's input, most of a history's text) is not parsed: a replay reads
/// two trees of 10,000 events. Of details that say a field twice, or that serde refuses for
/// another field, the head is read.
struct Head<'a> {
    name: &'a str,
    /// The index, when it comes right after the name.
    index: Option<u64>,
}

impl<'a> Head<'a> {
    /// The head of `details`, or `None` when it does not start with a name so written.
    fn of(details: &'a str) -> Option<Head<'a>> {
        let rest = details.strip_prefix(r#"{"name":""#)?;
        // The name's end, unless an escape or a control character (serde refuses it) is first.
        let end = rest
            .bytes()
            .position(crate::depth::needs_escape)
            .filter(|&end| rest.as_bytes()[end] == b'"')?;
        let index = rest[end + 1..]
            .strip_prefix(r#","index":"#)
            .and_then(json_u64);
        Some(Head {
            name: &rest[..end],
            index,
        })
    }
}

/// The JSON integer at the start of `text`, when it is one that fits a u64 and a `,` or `}`
/// ends it.
fn json_u64(text: &str) -> Option<u64> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let leading_zero = digits > 1 && text.starts_with('0');
    let ended = matches!(text.as_bytes().get(digits), Some(b',' | b'}'));
    (digits > 0 && !leading_zero && ended)
        .then(|| text[..digits].parse().ok())
        .flatten()
}

/// The state an event's details name (an Entered event's, a Map's or Parallel's): read from
/// the head of its details ([`Head`]), otherwise parsed.
fn state_name<'a>(event: &EventView<'a>) -> Option<Cow<'a, str>> {
    match event.details.and_then(Head::of) {
        Some(head) => Some(Cow::Borrowed(head.name)),
        None => details(event).name,
    }
}

/// The name and index a container event's details hold: read from their head when both are
/// there ([`Head`]), otherwise parsed.
fn name_and_index<'a>(event: &EventView<'a>) -> (Option<Cow<'a, str>>, Option<u64>) {
    match event.details.and_then(Head::of) {
        Some(Head {
            name,
            index: Some(index),
        }) => (Some(Cow::Borrowed(name)), Some(index)),
        _ => {
            let Details { name, index, .. } = details(event);
            (name, index)
        }
    }
}

/// `index` of a `MapIteration*` event (AWS's `mapIterationStartedEventDetails.index`): read
/// from the head of its details (`Head`), otherwise parsed.
pub fn iteration_index(event: &EventView<'_>) -> Option<u64> {
    name_and_index(event).1
}

fn details<'a>(event: &EventView<'a>) -> Details<'a> {
    event
        .details
        .and_then(|d| serde_json::from_str(d).ok())
        .unwrap_or_default()
}

/// Where an event leaves things, for the events that point at it.
#[derive(Debug, Clone, Copy)]
struct Context {
    lane: LaneId,
    /// The visit the event belongs to.
    visit: Option<VisitId>,
    /// The lane it opened (a `MapIterationStarted`'s iteration).
    opens: Option<LaneId>,
}

/// A [`Context`] as a tree being read keeps one per event, in a quarter of the memory.
#[derive(Debug, Clone, Copy)]
struct PackedContext {
    /// The lane; none while the event is not read yet.
    lane: Packed,
    visit: Packed,
    opens: Packed,
}

impl PackedContext {
    const UNSET: PackedContext = PackedContext {
        lane: Packed::NONE,
        visit: Packed::NONE,
        opens: Packed::NONE,
    };

    fn new(context: Context) -> PackedContext {
        PackedContext {
            lane: Packed::new(Some(context.lane)),
            visit: Packed::new(context.visit),
            opens: Packed::new(context.opens),
        }
    }

    fn get(self) -> Option<Context> {
        Some(Context {
            lane: self.lane.get()?,
            visit: self.visit.get(),
            opens: self.opens.get(),
        })
    }
}

/// The family of a `Parallel*` or `Map*` event, to find its visit by walking up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Parallel,
    Map,
}

impl Tree {
    /// Reads a history (events in any order of ids; each must point at an earlier one).
    pub fn build(events: &[EventView<'_>]) -> Tree {
        Tree::read(events)
    }

    /// [`Tree::build`] of events read by index, without a view of each made first (a replay
    /// reads two histories of 10,000 events).
    pub fn read<E: EventList + ?Sized>(events: &E) -> Tree {
        let count = events.count();
        let mut by_id = IdIndex::default();
        (0..count).for_each(|i| by_id.insert(events.at(i).id, i));
        // Read in id order (a stable sort: of two events with one id, the map keeps the later,
        // as it is read last).
        let order = matches!(by_id, IdIndex::Map(_)).then(|| {
            let mut order: Vec<usize> = (0..count).collect();
            order.sort_by_key(|&i| events.at(i).id);
            order
        });
        let mut tree = Tree::empty();
        tree.owners = vec![Packed::NONE; count];
        // Sized once: a large Map's visits, grown by doubling, were copied and faulted in again.
        let types = || (0..count).map(|i| events.at(i).event_type);
        let entered = types().filter(|t| t.ends_with("StateEntered")).count();
        tree.visits.reserve_exact(entered);
        let iterations = types().filter(|&t| t == "MapIterationStarted").count();
        tree.lanes.reserve(iterations);
        let mut builder = Builder {
            events,
            by_id,
            tree,
            contexts: vec![PackedContext::UNSET; count],
        };
        match order {
            Some(order) => order.into_iter().for_each(|i| builder.event(i)),
            None => (0..count).for_each(|i| builder.event(i)),
        }
        builder.tree
    }

    /// A tree of no events: the top-level lane alone.
    fn empty() -> Tree {
        Tree {
            visits: Vec::new(),
            lanes: vec![Lane {
                kind: LaneKind::Root,
                parent: None,
                visits: Vec::new(),
                iteration_end: None,
            }],
            owners: Vec::new(),
        }
    }

    /// Reads a stored history.
    pub fn from_records(events: &[crate::store::EventRecord]) -> Tree {
        let views: Vec<EventView<'_>> = events.iter().map(EventView::from).collect();
        Tree::build(&views)
    }

    /// The visit an event (by its index in the events given) belongs to.
    pub fn owner(&self, event: usize) -> Option<&Visit> {
        self.owner_id(event).map(|v| &self.visits[v])
    }

    /// The id of the visit an event (by its index in the events given) belongs to.
    pub fn owner_id(&self, event: usize) -> Option<VisitId> {
        self.owners.get(event).and_then(|o| o.get())
    }

    /// The visit entered after `visit` in its lane.
    pub fn next(&self, visit: VisitId) -> Option<&Visit> {
        let lane = &self.lanes[self.visits[visit].lane].visits;
        let at = lane.iter().position(|&v| v == visit)?;
        lane.get(at + 1).map(|&v| &self.visits[v])
    }

    /// The visit entered before `visit` in its lane.
    pub fn previous(&self, visit: VisitId) -> Option<VisitId> {
        let lane = &self.lanes[self.visits[visit].lane].visits;
        let at = lane.iter().position(|&v| v == visit)?;
        at.checked_sub(1).map(|k| lane[k])
    }

    /// The visits of the top level, in order.
    pub fn top(&self) -> &[VisitId] {
        &self.lanes[0].visits
    }

    /// The visit whose failure `visit`'s came from: itself, or for a Parallel or Map the
    /// visit inside that recorded the error (found through the failure's event).
    pub fn origin(&self, visit: VisitId) -> VisitId {
        let mut at = visit;
        for _ in 0..self.visits.len() {
            let Some(failure) = &self.visits[at].failure else {
                return at;
            };
            match self.owners[failure.event].get() {
                Some(inner) if inner != at => at = inner,
                _ => return at,
            }
        }
        at
    }
}

/// A tree read while its history grows (a run in progress): each event is read once, when
/// it is first given, so reading a history event by event costs what reading it whole does.
#[derive(Debug, Clone)]
pub struct GrowingTree {
    tree: Tree,
    contexts: Vec<PackedContext>,
    by_id: IdIndex,
}

impl Default for GrowingTree {
    fn default() -> Self {
        GrowingTree {
            tree: Tree::empty(),
            contexts: Vec::new(),
            by_id: Default::default(),
        }
    }
}

impl GrowingTree {
    /// Reads the events of `events` past those given before (which must come first in it,
    /// unchanged; new events in id order) and returns the tree of them all.
    pub fn extend<E: EventList + ?Sized>(&mut self, events: &E) -> &Tree {
        let start = self.contexts.len().min(events.count());
        let mut builder = Builder {
            events,
            by_id: std::mem::take(&mut self.by_id),
            tree: std::mem::replace(&mut self.tree, Tree::empty()),
            contexts: std::mem::take(&mut self.contexts),
        };
        builder.tree.owners.resize(events.count(), Packed::NONE);
        builder
            .contexts
            .resize(events.count(), PackedContext::UNSET);
        for i in start..events.count() {
            builder.by_id.insert(events.at(i).id, i);
            builder.event(i);
        }
        self.by_id = builder.by_id;
        self.tree = builder.tree;
        self.contexts = builder.contexts;
        &self.tree
    }
}

/// Events read by index: views already made, or the engine's own events (a run in progress
/// is read without making views of its whole history at each look).
pub trait EventList {
    /// The event at `i`.
    fn at(&self, i: usize) -> EventView<'_>;
    /// How many there are.
    fn count(&self) -> usize;
}

impl EventList for [EventView<'_>] {
    fn at(&self, i: usize) -> EventView<'_> {
        self[i]
    }
    fn count(&self) -> usize {
        self.len()
    }
}

impl EventList for [crate::engine::history::HistoryEvent] {
    fn at(&self, i: usize) -> EventView<'_> {
        EventView::from(&self[i])
    }
    fn count(&self) -> usize {
        self.len()
    }
}

struct Builder<'e, E: EventList + ?Sized> {
    events: &'e E,
    by_id: IdIndex,
    tree: Tree,
    contexts: Vec<PackedContext>,
}

impl<E: EventList + ?Sized> Builder<'_, E> {
    /// The index of the event with `id`.
    fn index_of(&self, id: i64) -> Option<usize> {
        self.by_id.get(id)
    }

    /// The context the event at `i` points at (the top level for none).
    fn before(&self, i: usize) -> (Option<usize>, Context) {
        let root = Context {
            lane: 0,
            visit: None,
            opens: None,
        };
        let prev = self.index_of(self.events.at(i).previous_event_id);
        let context = prev.and_then(|p| self.contexts[p].get()).unwrap_or(root);
        (prev, context)
    }

    fn event(&mut self, i: usize) {
        let ty = self.events.at(i).event_type;
        let (prev, before) = self.before(i);
        let context = if ty.starts_with("Execution") {
            Context {
                lane: 0,
                visit: None,
                opens: None,
            }
        } else if ty.ends_with("StateEntered") {
            self.entered(i, prev, before)
        } else if ty == "EvaluationFailed" {
            let before = self.evaluating(i).unwrap_or(before);
            self.own_event(i, before)
        } else if let Some(family) = family(ty) {
            self.container_event(i, prev, before, family)
        } else {
            self.own_event(i, before)
        };
        self.tree.owners[i] = Packed::new(context.visit);
        self.contexts[i] = PackedContext::new(context);
    }

    /// The visit an `EvaluationFailed` is about: AWS points it at what its state's Entered
    /// points at, and names the state.
    fn evaluating(&self, i: usize) -> Option<Context> {
        let event = self.events.at(i);
        let state = details(&event).state?;
        let v = (0..self.tree.visits.len()).rev().find(|&v| {
            let visit = &self.tree.visits[v];
            let entered = self.events.at(visit.entered);
            visit.state == *state
                && visit.phase != Phase::Closed
                && entered.previous_event_id == event.previous_event_id
        })?;
        Some(Context {
            lane: self.tree.visits[v].lane,
            visit: Some(v),
            opens: None,
        })
    }

    /// A state entered: a new visit in the lane its predecessor leaves it in.
    fn entered(&mut self, i: usize, prev: Option<usize>, before: Context) -> Context {
        let event = self.events.at(i);
        let name = state_name(&event);
        let prev_type = prev.map(|p| self.events.at(p).event_type);
        let lane = match (prev_type, before.opens) {
            (_, Some(opened)) => opened,
            (Some("ParallelStateStarted"), _) => match before.visit {
                Some(parallel) => self.open_lane(parallel, LaneKind::Branch),
                None => before.lane,
            },
            _ => before.lane,
        };
        let state_type = state_type_of(event.event_type);
        let fail = state_type == "Fail";
        let id = self.tree.visits.len();
        self.tree.visits.push(Visit {
            state: name.map(Cow::into_owned).unwrap_or_default(),
            state_type,
            lane,
            entered: i,
            entered_ms: event.timestamp_ms,
            ended_ms: fail.then_some(event.timestamp_ms),
            attempts: Vec::new(),
            failure: fail.then(|| {
                Box::new(Failure {
                    event: i,
                    event_type: event.event_type.to_owned(),
                    error: None,
                    cause: None,
                    at_ms: event.timestamp_ms,
                })
            }),
            ending: if fail { Ending::Fail } else { Ending::Open },
            lanes: Vec::new(),
            phase: if fail { Phase::Closed } else { Phase::Entered },
        });
        self.tree.lanes[lane].visits.push(id);
        Context {
            lane,
            visit: Some(id),
            opens: None,
        }
    }

    fn open_lane(&mut self, parent: VisitId, kind: LaneKind) -> LaneId {
        let id = self.tree.lanes.len();
        self.tree.lanes.push(Lane {
            kind,
            parent: Some(parent),
            visits: Vec::new(),
            iteration_end: None,
        });
        self.tree.visits[parent].lanes.push(id);
        id
    }

    /// An event of a Task, Pass, Choice, Wait or Succeed visit: its predecessor's visit's.
    fn own_event(&mut self, i: usize, before: Context) -> Context {
        let Some(v) = before
            .visit
            .filter(|&v| self.tree.visits[v].phase != Phase::Closed)
        else {
            return Context {
                opens: None,
                ..before
            };
        };
        let event = self.events.at(i);
        let ty = event.event_type;
        if ty.ends_with("Scheduled") {
            let d = details(&event);
            let visit = &mut self.tree.visits[v];
            visit.failure = None;
            visit.attempts.push(Attempt {
                started_ms: event.timestamp_ms,
                timeout_s: d.timeout_in_seconds,
                heartbeat_s: d.heartbeat_in_seconds,
                failure: None,
            });
        } else if is_failure(ty) {
            let failure = self.failure_at(i);
            let visit = &mut self.tree.visits[v];
            if let Some(attempt) = visit.attempts.last_mut() {
                attempt.failure = Some(Box::new(failure.clone()));
            }
            visit.failure = Some(Box::new(failure));
        } else {
            self.closing(v, i);
        }
        Context {
            lane: self.tree.visits[v].lane,
            visit: Some(v),
            opens: None,
        }
    }

    /// `*StateExited` and `*StateAborted` close a visit.
    fn closing(&mut self, v: VisitId, i: usize) {
        let ty = self.events.at(i).event_type;
        let ending = if ty.ends_with("StateExited") {
            Ending::Exited
        } else if ty.ends_with("StateAborted") {
            Ending::Aborted
        } else {
            return;
        };
        let visit = &mut self.tree.visits[v];
        visit.ending = ending;
        visit.ended_ms = Some(self.events.at(i).timestamp_ms);
        visit.phase = Phase::Closed;
    }

    /// The failure recorded by the event at `i`: its own error, or for a Parallel, Map or
    /// iteration failure (which carry none) the failure it points at.
    fn failure_at(&self, i: usize) -> Failure {
        let mut at = i;
        for _ in 0..self.events.count() {
            let event = self.events.at(at);
            let d = details(&event);
            let carries_none = d.error.is_none()
                && event.event_type != "FailStateEntered"
                && family(event.event_type).is_some();
            let prev = self.index_of(event.previous_event_id);
            match (carries_none, prev) {
                (true, Some(p)) => at = p,
                _ => {
                    return Failure {
                        event: at,
                        event_type: event.event_type.to_owned(),
                        error: d.error,
                        cause: text(d.cause),
                        at_ms: event.timestamp_ms,
                    }
                }
            }
        }
        unreachable!("previousEventId always points at an earlier event")
    }
}

impl<E: EventList + ?Sized> Builder<'_, E> {
    /// A `Parallel*`, `Map*` or `MapIteration*` event: the nearest visit of its family,
    /// walking up from its predecessor, that can take it now.
    fn container_event(
        &mut self,
        i: usize,
        prev: Option<usize>,
        before: Context,
        family: Family,
    ) -> Context {
        let event = self.events.at(i);
        let ty = event.event_type;
        // Only an iteration's events need their index: a Map's own (its Exited holds the
        // output of every iteration) are not parsed for one.
        let (name, index) = match lifecycle(ty) {
            Lifecycle::Inside => name_and_index(&event),
            _ => (state_name(&event), None),
        };
        let start = match before.visit {
            // A closed visit (its Exited) sends what follows to its lane's parent.
            Some(v) if self.tree.visits[v].phase != Phase::Closed => Some(v),
            _ => self.tree.lanes[before.lane].parent,
        };
        let mut candidate = start;
        let found = loop {
            let Some(v) = candidate else { break None };
            if self.takes(v, ty, family, name.as_deref(), prev) {
                break Some(v);
            }
            candidate = self.tree.lanes[self.tree.visits[v].lane].parent;
        };
        let Some(v) = found else {
            return Context {
                opens: None,
                ..before
            };
        };
        let opens = self.container_effect(v, i, ty, index);
        Context {
            lane: self.tree.visits[v].lane,
            visit: Some(v),
            opens,
        }
    }

    /// Whether visit `v` is the one a container event of this type belongs to.
    fn takes(
        &self,
        v: VisitId,
        ty: &str,
        family: Family,
        name: Option<&str>,
        prev: Option<usize>,
    ) -> bool {
        let visit = &self.tree.visits[v];
        let type_matches = match family {
            Family::Parallel => visit.state_type == "Parallel",
            Family::Map => visit.state_type == "Map",
        };
        if !type_matches || name.is_some_and(|n| n != visit.state) {
            return false;
        }
        // A retry's `*StateStarted` points at the failure inside the previous attempt; the
        // first attempt's at the Entered event.
        let from_own_entered = prev.is_some_and(|p| p == visit.entered);
        match (visit.phase, lifecycle(ty)) {
            (Phase::Closed, _) => false,
            (_, Lifecycle::Start) => from_own_entered || visit.phase == Phase::Running,
            (Phase::Running, Lifecycle::Inside | Lifecycle::AttemptEnd) => true,
            // A JSONata `Items` or `Arguments` that failed before any attempt started.
            (Phase::Entered, Lifecycle::AttemptEnd) => visit.failure.is_some(),
            (Phase::AttemptEnded, Lifecycle::Close) => true,
            (Phase::Running | Phase::Entered, Lifecycle::Close) => ty.ends_with("Aborted"),
            _ => false,
        }
    }

    /// What a container event does to its visit; returns the lane it opens, if any.
    /// `index` is the event's `index` detail (a Map iteration's).
    fn container_effect(
        &mut self,
        v: VisitId,
        i: usize,
        ty: &str,
        index: Option<u64>,
    ) -> Option<LaneId> {
        let event = self.events.at(i);
        match lifecycle(ty) {
            Lifecycle::Start => {
                let (at_ms, previous) = (event.timestamp_ms, self.tree.visits[v].phase);
                let retry_of = (previous == Phase::Running).then(|| {
                    // The previous attempt failed without a `*StateFailed` (AWS writes none
                    // when a retry follows): its failure is the one this event points at.
                    let prev = self.index_of(event.previous_event_id);
                    prev.map(|p| self.failure_at(p))
                });
                let visit = &mut self.tree.visits[v];
                if let (Some(Some(failure)), Some(last)) = (retry_of, visit.attempts.last_mut()) {
                    last.failure = Some(Box::new(failure));
                }
                visit.failure = None;
                visit.phase = Phase::Running;
                visit.attempts.push(Attempt {
                    started_ms: at_ms,
                    ..Attempt::default()
                });
                None
            }
            Lifecycle::Inside => self.iteration_event(v, ty, index.unwrap_or_default()),
            Lifecycle::AttemptEnd => {
                let failure = ty.ends_with("Failed").then(|| Box::new(self.failure_at(i)));
                let visit = &mut self.tree.visits[v];
                visit.phase = Phase::AttemptEnded;
                if let (Some(f), Some(last)) = (&failure, visit.attempts.last_mut()) {
                    last.failure = Some(f.clone());
                }
                if failure.is_some() {
                    visit.failure = failure;
                }
                None
            }
            Lifecycle::Close => {
                self.closing(v, i);
                None
            }
        }
    }

    /// `MapIterationStarted` opens an iteration lane; the others end one.
    fn iteration_event(&mut self, v: VisitId, ty: &str, index: u64) -> Option<LaneId> {
        if ty == "MapIterationStarted" {
            return Some(self.open_lane(v, LaneKind::Iteration(index)));
        }
        let end = match ty {
            "MapIterationSucceeded" => IterationEnd::Succeeded,
            "MapIterationFailed" => IterationEnd::Failed,
            "MapIterationAborted" => IterationEnd::Aborted,
            _ => return None,
        };
        let lanes = &self.tree.visits[v].lanes;
        // The latest lane of that index: a retried Map runs its iterations again.
        let lane = lanes
            .iter()
            .rev()
            .copied()
            .find(|&l| self.tree.lanes[l].kind == LaneKind::Iteration(index));
        if let Some(l) = lane {
            self.tree.lanes[l].iteration_end = Some(end);
        }
        None
    }
}

/// Where an event of a Parallel or Map visit falls in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lifecycle {
    /// `*StateStarted`: an attempt begins.
    Start,
    /// `MapIteration*`, `MapRun*`: inside an attempt.
    Inside,
    /// `*StateSucceeded`, `*StateFailed`: the attempt ended.
    AttemptEnd,
    /// `*StateExited`, `*StateAborted`: the visit ended.
    Close,
}

fn lifecycle(ty: &str) -> Lifecycle {
    if ty.ends_with("StateStarted") {
        Lifecycle::Start
    } else if ty.ends_with("StateSucceeded") || ty.ends_with("StateFailed") {
        Lifecycle::AttemptEnd
    } else if ty.ends_with("StateExited") || ty.ends_with("StateAborted") {
        Lifecycle::Close
    } else {
        Lifecycle::Inside
    }
}

fn family(ty: &str) -> Option<Family> {
    if ty.starts_with("Parallel") {
        Some(Family::Parallel)
    } else if ty.starts_with("Map") {
        Some(Family::Map)
    } else {
        None
    }
}

/// Whether an event type records a state's error (not the execution's).
fn is_failure(ty: &str) -> bool {
    !ty.starts_with("Execution")
        && (ty.ends_with("Failed") || ty.ends_with("TimedOut") || ty == "EvaluationFailed")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// `(id, previousEventId, type, details)` as views.
    fn views<'a>(events: &'a [(i64, i64, &'a str, String)]) -> Vec<EventView<'a>> {
        events
            .iter()
            .map(|(id, prev, ty, d)| EventView {
                id: *id,
                previous_event_id: *prev,
                event_type: ty,
                timestamp_ms: *id,
                details: Some(d.as_str()),
                replay_key: None,
            })
            .collect()
    }

    fn named(name: &str) -> String {
        format!(r#"{{"name":"{name}"}}"#)
    }

    /// An Entered event's name read from the head of its details is the name the full parse
    /// reads, escapes, control characters and other orders included; of two names, the first.
    #[test]
    fn an_entered_name_read_from_the_head_is_the_name_parsed() {
        let same = [
            r#"{"name":"Charge","input":"{\"name\":\"x\"}"}"#,
            r#"{"name":"Say \"hi\"","input":"{}"}"#,
            r#"{"name":"caf\u00e9"}"#,
            r#"{"input":"{}","name":"Later"}"#,
            r#"{"name":"","input":"{}"}"#,
            r#"{"name":7}"#,
            "{\"name\":\"Tab\there\"}",
            r#"{}"#,
        ];
        let entered = |details| EventView {
            id: 2,
            previous_event_id: 1,
            event_type: "PassStateEntered",
            timestamp_ms: 0,
            details: Some(details),
            replay_key: None,
        };
        for details in same {
            let parsed = super::details(&entered(details)).name;
            assert_eq!(state_name(&entered(details)), parsed, "{details}");
        }
        let twice = entered(r#"{"name":"First","name":"Second"}"#);
        assert_eq!(state_name(&twice).as_deref(), Some("First"));
    }

    /// A Map iteration's name and index read from the head of its details are what the full
    /// parse reads, whatever the head holds.
    #[test]
    fn a_name_and_index_read_from_the_head_are_the_ones_parsed() {
        let same = [
            r#"{"name":"Each","index":3}"#,
            r#"{"name":"Each","index":0,"extra":1}"#,
            r#"{"name":"Each","index":18446744073709551615}"#,
            r#"{"name":"Each","index":18446744073709551616}"#,
            r#"{"name":"Each","index":01}"#,
            r#"{"name":"Each","index":-1}"#,
            r#"{"name":"Each","index":1.5}"#,
            r#"{"name":"Each","index":2e1}"#,
            r#"{"name":"Each"}"#,
            r#"{"index":4,"name":"Each"}"#,
            r#"{"name":"E\"ach","index":5}"#,
            r#"{"length":2}"#,
        ];
        for details in same {
            let event = EventView {
                id: 3,
                previous_event_id: 2,
                event_type: "MapIterationStarted",
                timestamp_ms: 0,
                details: Some(details),
                replay_key: None,
            };
            let Details { name, index, .. } = super::details(&event);
            assert_eq!(name_and_index(&event), (name, index), "{details}");
        }
    }

    #[test]
    fn interleaved_branches_are_told_apart_by_their_links() {
        let none = String::from("{}");
        // Branch A (Work, fails with Boom) and branch B (Note, then Ship), written interleaved.
        let events = [
            (1, 0, "ExecutionStarted", none.clone()),
            (2, 1, "ParallelStateEntered", named("P")),
            (3, 2, "ParallelStateStarted", none.clone()),
            (4, 3, "PassStateEntered", named("Note")),
            (5, 3, "TaskStateEntered", named("Work")),
            (6, 4, "PassStateExited", named("Note")),
            (7, 5, "TaskScheduled", none.clone()),
            (8, 6, "TaskStateEntered", named("Ship")),
            (9, 8, "TaskScheduled", none.clone()),
            (10, 7, "TaskFailed", r#"{"error":"Boom"}"#.to_owned()),
            (11, 9, "TaskStateAborted", none.clone()),
            (12, 10, "TaskStateAborted", none.clone()),
            (13, 10, "ParallelStateFailed", none.clone()),
            (14, 13, "ParallelStateExited", named("P")),
            (15, 14, "PassStateEntered", named("Recovered")),
        ];
        let events = views(&events);
        let tree = Tree::build(&events);
        let owner = |id: i64| tree.owner(id as usize - 1).map(|v| v.state.clone());
        for (id, state) in [
            (7, "Work"),
            (9, "Ship"),
            (10, "Work"),
            (11, "Ship"),
            (13, "P"),
        ] {
            assert_eq!(owner(id).as_deref(), Some(state), "event {id}");
        }
        let p = &tree.visits[0];
        assert_eq!(p.lanes.len(), 2);
        assert!(p.caught());
        assert_eq!(p.failure.as_ref().unwrap().error.as_deref(), Some("Boom"));
        assert_eq!(tree.visits[tree.origin(0)].state, "Work");
        let ship = tree.visits.iter().find(|v| v.state == "Ship").unwrap();
        assert_eq!(
            (ship.ending, ship.failure.is_none()),
            (Ending::Aborted, true)
        );
        // The same history in another order of its lines reads the same.
        let mut shuffled = events.clone();
        shuffled.reverse();
        let again = Tree::build(&shuffled);
        assert_eq!(again.visits.len(), tree.visits.len());
        assert!(again.visits.iter().any(|v| v.state == "P" && v.caught()));
    }

    /// Ids numbered 1, 2, 3, ... in order are read without a map of them; other numberings
    /// (gaps, another start, a growing history that leaves that order part way) read the same.
    #[test]
    fn ids_in_order_and_otherwise_read_alike() {
        let none = String::from("{}");
        let events = [
            (1, 0, "ExecutionStarted", none.clone()),
            (2, 1, "ParallelStateEntered", named("P")),
            (3, 2, "ParallelStateStarted", none.clone()),
            (4, 3, "PassStateEntered", named("A")),
            (5, 3, "PassStateEntered", named("B")),
            (6, 5, "PassStateExited", named("B")),
            (7, 4, "PassStateExited", named("A")),
            (8, 7, "ParallelStateSucceeded", none.clone()),
            (9, 8, "ParallelStateExited", named("P")),
        ];
        let owners = |tree: &Tree| -> Vec<Option<String>> {
            (0..events.len())
                .map(|i| tree.owner(i).map(|v| v.state.clone()))
                .collect()
        };
        let dense = owners(&Tree::build(&views(&events)));
        assert_eq!(dense[5].as_deref(), Some("B"));
        assert_eq!(dense[7].as_deref(), Some("P"));
        let renumbered: Vec<_> = events
            .iter()
            .map(|(id, prev, ty, d)| {
                (
                    id * 10 + 3,
                    if *prev == 0 { 0 } else { prev * 10 + 3 },
                    *ty,
                    d.clone(),
                )
            })
            .collect();
        assert_eq!(owners(&Tree::build(&views(&renumbered))), dense);
        // Grown: in order for the first five, then the rest renumbered (ids 6 on).
        let mut grown: Vec<_> = events.to_vec();
        for e in &mut grown[5..] {
            e.0 += 100;
            if e.1 > 5 {
                e.1 += 100;
            }
        }
        let grown = views(&grown);
        let mut growing = GrowingTree::default();
        growing.extend(&grown[..5]);
        assert_eq!(owners(growing.extend(&grown[..])), dense);
    }

    /// The executions recorded on AWS in the conformance corpus (491 histories, Map and
    /// Parallel nested, retries, catches): every event that names its state, and every Task
    /// event the corpus attributes to a state, belongs to a visit of that state.
    #[test]
    fn aws_recorded_histories_read_as_aws_attributes_their_events() {
        let root = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/corpora/conformance/cases"
        );
        let mut read = 0;
        for bucket in ["pure", "aws_task"] {
            for entry in std::fs::read_dir(format!("{root}/{bucket}")).unwrap() {
                let case: Value =
                    serde_json::from_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap())
                        .unwrap();
                let reordered = case["parallel_branch_events_reordered"] == true;
                if case["kind"] != "execution_history" || reordered {
                    continue;
                }
                check_case(&case);
                read += 1;
            }
        }
        assert!(read > 400, "{read}");
    }

    fn check_case(case: &Value) {
        let recorded = case["events"].as_array().unwrap();
        let texts: Vec<(i64, i64, String, String)> = recorded
            .iter()
            .map(|e| {
                (
                    e["id"].as_i64().unwrap(),
                    e["previousEventId"].as_i64().unwrap(),
                    e["type"].as_str().unwrap().to_owned(),
                    e["details"].to_string(),
                )
            })
            .collect();
        let events: Vec<EventView<'_>> = texts
            .iter()
            .map(|(id, prev, ty, d)| EventView {
                id: *id,
                previous_event_id: *prev,
                event_type: ty,
                timestamp_ms: 0,
                details: Some(d),
                replay_key: None,
            })
            .collect();
        let tree = Tree::build(&events);
        let mut task_results = case["task_results"].as_array().into_iter().flatten();
        for (i, event) in recorded.iter().enumerate() {
            let ty = event["type"].as_str().unwrap();
            let owner = tree.owner(i).map(|v| v.state.as_str());
            let expected = if ty.starts_with("Execution") || ty.starts_with("MapRun") {
                continue;
            } else if let Some(name) = event["details"]["name"].as_str() {
                Some(name)
            } else if ["Task", "LambdaFunction", "Activity"]
                .iter()
                .any(|p| ty.starts_with(p))
                && !ty.contains("State")
            {
                task_results.next().and_then(|r| r["state"].as_str())
            } else {
                None
            };
            match expected {
                Some(state) => assert_eq!(owner, Some(state), "{} event {i} {ty}", case["id"]),
                None => assert!(
                    owner.is_some(),
                    "{} event {i} {ty} has no visit",
                    case["id"]
                ),
            }
        }
    }
}
