//! History events in AWS's shape, with ids and `previousEventId` assigned here.
//!
//! Events are buffered and handed to a [`HistorySink`] in batches (the store commits each batch
//! in one transaction); [`History::flush`] waits until everything pushed so far is committed,
//! which the engine does before any effect leaves the process.

use crate::asl::error::StatesError;
use crate::clock::Millis;
use crate::store::ReplayKey;
use serde_json::{Map, Value};
use std::future::Future;
use std::pin::Pin;

/// The id of a history event (1-based, contiguous per execution; 0 means "none").
pub type EventId = i64;

/// AWS's cap on events in one execution's history.
pub const MAX_HISTORY_EVENTS: i64 = 25_000;

macro_rules! event_types {
    ($($name:ident),* $(,)?) => {
        /// A history event type, spelled as AWS spells it.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[allow(missing_docs)]
        pub enum EventType { $($name),* }

        impl EventType {
            /// AWS's spelling.
            pub fn as_str(self) -> &'static str {
                match self { $(EventType::$name => stringify!($name)),* }
            }

            /// Parses AWS's spelling.
            pub fn parse(s: &str) -> Option<EventType> {
                match s { $(stringify!($name) => Some(EventType::$name),)* _ => None }
            }
        }
    };
}

event_types!(
    ActivityFailed,
    ActivityScheduled,
    ActivityScheduleFailed,
    ActivityStarted,
    ActivitySucceeded,
    ActivityTimedOut,
    ChoiceStateEntered,
    ChoiceStateExited,
    ExecutionAborted,
    ExecutionFailed,
    ExecutionStarted,
    ExecutionSucceeded,
    ExecutionTimedOut,
    FailStateEntered,
    LambdaFunctionFailed,
    LambdaFunctionScheduled,
    LambdaFunctionScheduleFailed,
    LambdaFunctionStarted,
    LambdaFunctionStartFailed,
    LambdaFunctionSucceeded,
    LambdaFunctionTimedOut,
    MapIterationAborted,
    MapIterationFailed,
    MapIterationStarted,
    MapIterationSucceeded,
    MapStateAborted,
    MapStateEntered,
    MapStateExited,
    MapStateFailed,
    MapStateStarted,
    MapStateSucceeded,
    ParallelStateAborted,
    ParallelStateEntered,
    ParallelStateExited,
    ParallelStateFailed,
    ParallelStateStarted,
    ParallelStateSucceeded,
    PassStateEntered,
    PassStateExited,
    SucceedStateEntered,
    SucceedStateExited,
    TaskFailed,
    TaskScheduled,
    TaskStarted,
    TaskStartFailed,
    TaskStateAborted,
    TaskStateEntered,
    TaskStateExited,
    TaskSubmitFailed,
    TaskSubmitted,
    TaskSucceeded,
    TaskTimedOut,
    WaitStateAborted,
    WaitStateEntered,
    WaitStateExited,
    MapRunAborted,
    MapRunFailed,
    MapRunStarted,
    MapRunSucceeded,
    ExecutionRedriven,
    MapRunRedriven,
    EvaluationFailed,
);

impl EventType {
    /// The `*StateEntered` type for a state type (`Pass` → `PassStateEntered`).
    pub fn entered(state_type: &str) -> EventType {
        match state_type {
            "Pass" => EventType::PassStateEntered,
            "Task" => EventType::TaskStateEntered,
            "Choice" => EventType::ChoiceStateEntered,
            "Wait" => EventType::WaitStateEntered,
            "Succeed" => EventType::SucceedStateEntered,
            "Fail" => EventType::FailStateEntered,
            "Parallel" => EventType::ParallelStateEntered,
            _ => EventType::MapStateEntered,
        }
    }

    /// The `*StateExited` type for a state type (Fail has none).
    pub fn exited(state_type: &str) -> EventType {
        match state_type {
            "Pass" => EventType::PassStateExited,
            "Task" => EventType::TaskStateExited,
            "Choice" => EventType::ChoiceStateExited,
            "Wait" => EventType::WaitStateExited,
            "Succeed" => EventType::SucceedStateExited,
            "Parallel" => EventType::ParallelStateExited,
            _ => EventType::MapStateExited,
        }
    }

    /// The `*StateAborted` type, for the state types that have one.
    pub fn aborted(state_type: &str) -> Option<EventType> {
        match state_type {
            "Task" => Some(EventType::TaskStateAborted),
            "Wait" => Some(EventType::WaitStateAborted),
            "Parallel" => Some(EventType::ParallelStateAborted),
            "Map" => Some(EventType::MapStateAborted),
            _ => None,
        }
    }

    /// The details key AWS uses for this type (`stateEnteredEventDetails`, ...), if it has one.
    pub fn details_key(self) -> Option<&'static str> {
        use EventType::*;
        Some(match self {
            PassStateEntered | TaskStateEntered | ChoiceStateEntered | WaitStateEntered
            | SucceedStateEntered | FailStateEntered | ParallelStateEntered | MapStateEntered => {
                "stateEnteredEventDetails"
            }
            PassStateExited | TaskStateExited | ChoiceStateExited | WaitStateExited
            | SucceedStateExited | ParallelStateExited | MapStateExited => {
                "stateExitedEventDetails"
            }
            ExecutionStarted => "executionStartedEventDetails",
            ExecutionSucceeded => "executionSucceededEventDetails",
            ExecutionFailed => "executionFailedEventDetails",
            ExecutionAborted => "executionAbortedEventDetails",
            ExecutionTimedOut => "executionTimedOutEventDetails",
            ExecutionRedriven => "executionRedrivenEventDetails",
            TaskScheduled => "taskScheduledEventDetails",
            TaskStarted => "taskStartedEventDetails",
            TaskSubmitted => "taskSubmittedEventDetails",
            TaskSucceeded => "taskSucceededEventDetails",
            TaskFailed => "taskFailedEventDetails",
            TaskTimedOut => "taskTimedOutEventDetails",
            TaskStartFailed => "taskStartFailedEventDetails",
            TaskSubmitFailed => "taskSubmitFailedEventDetails",
            ActivityScheduled => "activityScheduledEventDetails",
            ActivityStarted => "activityStartedEventDetails",
            ActivitySucceeded => "activitySucceededEventDetails",
            ActivityFailed => "activityFailedEventDetails",
            ActivityTimedOut => "activityTimedOutEventDetails",
            ActivityScheduleFailed => "activityScheduleFailedEventDetails",
            LambdaFunctionScheduled => "lambdaFunctionScheduledEventDetails",
            LambdaFunctionSucceeded => "lambdaFunctionSucceededEventDetails",
            LambdaFunctionFailed => "lambdaFunctionFailedEventDetails",
            LambdaFunctionTimedOut => "lambdaFunctionTimedOutEventDetails",
            LambdaFunctionScheduleFailed => "lambdaFunctionScheduleFailedEventDetails",
            LambdaFunctionStartFailed => "lambdaFunctionStartFailedEventDetails",
            MapStateStarted => "mapStateStartedEventDetails",
            MapIterationStarted => "mapIterationStartedEventDetails",
            MapIterationSucceeded => "mapIterationSucceededEventDetails",
            MapIterationFailed => "mapIterationFailedEventDetails",
            MapIterationAborted => "mapIterationAbortedEventDetails",
            MapRunStarted => "mapRunStartedEventDetails",
            MapRunFailed => "mapRunFailedEventDetails",
            MapRunRedriven => "mapRunRedrivenEventDetails",
            EvaluationFailed => "evaluationFailedEventDetails",
            _ => return None,
        })
    }
}

/// One event, ready to store: details already serialized (AWS's `*EventDetails` object).
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryEvent {
    /// 1-based, contiguous.
    pub id: EventId,
    /// The event that caused this one (0 for none).
    pub previous_event_id: EventId,
    /// When it happened.
    pub timestamp: Millis,
    /// What happened.
    pub event_type: EventType,
    /// The details object as JSON text (`None` for types without details).
    pub details: Option<String>,
    /// Where the engine wrote it (see `engine::replay`); `None` for execution-level events.
    pub replay_key: Option<ReplayKey>,
}

impl HistoryEvent {
    /// The event as AWS's GetExecutionHistory prints it.
    pub fn to_aws_json(&self) -> Value {
        let mut m = Map::new();
        m.insert(
            "timestamp".into(),
            Value::String(crate::clock::iso8601(self.timestamp)),
        );
        m.insert("type".into(), self.event_type.as_str().into());
        m.insert("id".into(), self.id.into());
        m.insert("previousEventId".into(), self.previous_event_id.into());
        if let (Some(key), Some(details)) = (self.event_type.details_key(), &self.details) {
            let v = serde_json::from_str(details).unwrap_or(Value::Null);
            m.insert(key.into(), v);
        }
        Value::Object(m)
    }
}

/// Builds a details object in AWS's field names, writing JSON text directly (this runs for
/// every event, so it avoids building a `Value` first). Payloads (input, output, parameters) are
/// JSON text inside a string, as AWS stores them, with their `*Details: {"truncated": false}`.
#[derive(Debug)]
pub struct Details(String);

impl Default for Details {
    fn default() -> Self {
        Details::new()
    }
}

impl Details {
    /// An empty details object.
    pub fn new() -> Self {
        let mut s = String::with_capacity(160);
        s.push('{');
        Details(s)
    }

    /// Keys are AWS's field names: plain ASCII that needs no escaping.
    fn key(&mut self, key: &str) {
        if self.0.len() > 1 {
            self.0.push(',');
        }
        self.0.push('"');
        self.0.push_str(key);
        self.0.push_str("\":");
    }

    /// A string field.
    pub fn str(mut self, key: &str, value: impl AsRef<str>) -> Self {
        self.key(key);
        escape_into(&mut self.0, value.as_ref());
        self
    }

    /// An integer field.
    pub fn int(mut self, key: &str, value: i64) -> Self {
        self.key(key);
        self.0.push_str(itoa::Buffer::new().format(value));
        self
    }

    /// A field holding any JSON value.
    pub fn value(mut self, key: &str, value: Value) -> Self {
        self.key(key);
        self.0.push_str(&value.to_string());
        self
    }

    /// A payload field: `key` holds the JSON text, `{key}Details` says it is not truncated.
    pub fn payload(self, key: &str, json_text: String) -> Self {
        self.payload_text(key, &json_text)
    }

    /// A payload field from JSON text the caller keeps.
    pub fn payload_text(mut self, key: &str, json_text: &str) -> Self {
        self.key(key);
        escape_into(&mut self.0, json_text);
        self.0.push_str(",\"");
        self.0.push_str(key);
        self.0.push_str("Details\":{\"truncated\":false}");
        self
    }

    /// A payload field from a [`Payload`] serialized earlier (the same value is often a state's
    /// output and the next state's input: it is serialized once for both events).
    pub fn payload_of(mut self, key: &str, payload: &Payload) -> Self {
        self.key(key);
        self.0.push_str(&payload.escaped);
        self.0.push_str(",\"");
        self.0.push_str(key);
        self.0.push_str("Details\":{\"truncated\":false}");
        self
    }

    /// `error` and `cause` of a failure, each only when present, and never longer than AWS
    /// keeps them (256 and 32,768 characters).
    pub fn error(mut self, e: &StatesError) -> Self {
        use crate::limits::{head_chars, CAUSE_CHARS, ERROR_CHARS};
        if let Some(err) = &e.error {
            self = self.str("error", head_chars(err, ERROR_CHARS));
        }
        if let Some(cause) = &e.cause {
            self = self.str("cause", head_chars(cause, CAUSE_CHARS));
        }
        self
    }

    /// The JSON text.
    pub fn build(mut self) -> String {
        self.0.push('}');
        self.0
    }
}

/// A JSON value serialized once, already escaped as a JSON string literal for a details object.
#[derive(Debug, Clone)]
pub struct Payload {
    escaped: String,
    /// The size of the JSON text (before escaping), for AWS's payload quota.
    pub len: usize,
}

impl Payload {
    /// Serializes a value and escapes the text as a JSON string literal; a value nested past
    /// [`crate::depth::VALUE_DEPTH`] is refused (no reader of the history could read it back).
    pub fn of(value: &Value) -> Result<Payload, crate::depth::TooDeep> {
        // Serialized already escaped (see `depth::write_json_escaped`) into the thread's own
        // buffer, kept between calls, then copied at its size: escaping the serialized text in
        // a second scan was a twentieth of a 10,000-item Map's engine time, and a new buffer
        // for each payload two of a Map iteration's allocations.
        SCRATCH.with_borrow_mut(|raw| {
            raw.clear();
            let len = crate::depth::write_json_escaped(value, raw)?;
            // SAFETY: serde_json writes only valid UTF-8 (its own `to_string` relies on it the
            // same way) and the escaping adds ASCII. Checking it again was a seventieth of a
            // 10,000-item Map's engine time.
            let escaped = String::from(unsafe { std::str::from_utf8_unchecked(raw) });
            if raw.capacity() > SCRATCH_KEPT {
                *raw = Vec::new();
            }
            Ok(Payload { escaped, len })
        })
    }

    /// [`Payload::of`], also giving the serialized text (an execution's output is both the
    /// last state's exit payload and the text `ExecutionSucceeded` and the caller read).
    pub fn with_text(value: &Value) -> Result<(Payload, String), crate::depth::TooDeep> {
        let text = crate::depth::to_json_string(value)?;
        let mut escaped = String::with_capacity(text.len() + text.len() / 4 + 2);
        escape_into(&mut escaped, &text);
        let len = text.len();
        Ok((Payload { escaped, len }, text))
    }
}

thread_local! {
    /// [`Payload::of`]'s serialized text before it is escaped.
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The most [`SCRATCH`] keeps after a call: a large payload's buffer is let go.
const SCRATCH_KEPT: usize = 64 * 1024;

/// Appends `s` as a JSON string literal.
fn escape_into(out: &mut String, s: &str) {
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut buf = [0u8; 6];
    for (i, &b) in bytes.iter().enumerate() {
        // Most bytes need nothing: the common path is one short comparison chain.
        if !crate::depth::needs_escape(b) {
            continue;
        }
        out.push_str(&s[start..i]);
        out.push_str(crate::depth::escape_of(b, &mut buf));
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// Where committed events go. The store implements it; tests use an in-memory sink.
pub trait HistorySink {
    /// Takes a batch of events to commit, in order. Must not block.
    fn submit(&mut self, events: Vec<HistoryEvent>);

    /// Takes the last batch of an execution together with how it ended, to commit both at once.
    /// By default the batch is submitted like any other.
    fn finish(&mut self, events: Vec<HistoryEvent>, outcome: &crate::engine::Outcome) {
        let _ = outcome;
        self.submit(events);
    }

    /// A future that resolves when everything submitted so far is committed. It must not
    /// borrow the sink: the engine awaits it while other branches keep writing.
    fn flush(&mut self) -> Pin<Box<dyn Future<Output = Result<(), String>>>>;
}

/// Keeps events in memory (tests and the conformance harness); clones share the same list.
#[derive(Debug, Default, Clone)]
pub struct MemorySink {
    /// Everything submitted.
    pub events: std::rc::Rc<std::cell::RefCell<Vec<HistoryEvent>>>,
}

impl HistorySink for MemorySink {
    fn submit(&mut self, events: Vec<HistoryEvent>) {
        self.events.borrow_mut().extend(events);
    }

    fn flush(&mut self) -> Pin<Box<dyn Future<Output = Result<(), String>>>> {
        Box::pin(async { Ok(()) })
    }
}

/// How many events to buffer before handing them to the sink.
const BATCH: usize = 2048;

/// The history being written: assigns ids, buffers events, enforces the event cap.
pub struct History {
    next_id: EventId,
    buffer: Vec<HistoryEvent>,
    sink: Box<dyn HistorySink>,
    max_events: i64,
    full: bool,
    compat: crate::asl::Compat,
}

/// An event's details as Step Functions Local writes them (`serve --compat
/// stepfunctions-local`):
///
/// - an `aws-sdk` task's `resourceType` is `aws-sdk` and its `resource` `SERVICE:ACTION` (AWS:
///   `aws-sdk:SERVICE` and `ACTION`), as the history of AWS's own sample for Step Functions
///   Local shows (aws-samples/aws-stepfunctions-examples, sam/app-local-testing-mock-config);
/// - the JSON payloads (`input`, `output`, `parameters`) are written as Step Functions Local, a
///   Java program, writes them: numbers with a fraction or exponent in `Double.toString`'s
///   form, object members in the order they have (see `engine::java_json`).
fn step_functions_local_details(details: String) -> String {
    let Ok(Value::Object(mut m)) = serde_json::from_str::<Value>(&details) else {
        return details;
    };
    if let Some(Value::String(t)) = m.get("resourceType") {
        if let Some(service) = t.strip_prefix("aws-sdk:") {
            let service = service.to_owned();
            let action = m.get("resource").and_then(Value::as_str).unwrap_or("");
            let resource = format!("{service}:{action}");
            m.insert("resourceType".into(), Value::String("aws-sdk".into()));
            m.insert("resource".into(), Value::String(resource));
        }
    }
    for key in ["input", "output", "parameters"] {
        if let Some(Value::String(text)) = m.get_mut(key) {
            if let Some(java) = crate::engine::java_json::java_json_text(text) {
                *text = java;
            }
        }
    }
    Value::Object(m).to_string()
}

/// The error raised when the history reaches its cap, as AWS words it.
pub fn history_limit_error(max: i64) -> StatesError {
    StatesError::runtime(format!(
        "The execution reached the maximum number of history events ({max})."
    ))
}

impl History {
    /// A history whose next event gets `next_id`, writing to `sink`. `max_events` is AWS's
    /// 25,000 unless configured otherwise (0 means no cap).
    pub fn new(next_id: EventId, sink: Box<dyn HistorySink>, max_events: i64) -> Self {
        History {
            next_id,
            buffer: Vec::with_capacity(64),
            sink,
            max_events,
            full: false,
            compat: crate::asl::Compat::Aws,
        }
    }

    /// The id the next event will get.
    pub fn next_id(&self) -> EventId {
        self.next_id
    }

    /// Appends an event. Fails with AWS's `States.Runtime` once the next event would be the
    /// last one the cap allows: that slot is kept for the execution's terminal event.
    pub fn push(
        &mut self,
        previous_event_id: EventId,
        timestamp: Millis,
        event_type: EventType,
        details: Option<String>,
    ) -> Result<EventId, StatesError> {
        self.push_keyed(previous_event_id, timestamp, event_type, details, None)
    }

    /// [`History::push`] with the event's replay key.
    pub fn push_keyed(
        &mut self,
        previous_event_id: EventId,
        timestamp: Millis,
        event_type: EventType,
        details: Option<String>,
        replay_key: Option<ReplayKey>,
    ) -> Result<EventId, StatesError> {
        if self.full || (self.max_events > 0 && self.next_id >= self.max_events) {
            self.full = true;
            return Err(history_limit_error(self.max_events));
        }
        Ok(self.append(
            previous_event_id,
            timestamp,
            event_type,
            details,
            replay_key,
        ))
    }

    /// Appends an event even past the cap (the execution's terminal event).
    pub fn push_unchecked(
        &mut self,
        previous_event_id: EventId,
        timestamp: Millis,
        event_type: EventType,
        details: Option<String>,
    ) -> EventId {
        self.append(previous_event_id, timestamp, event_type, details, None)
    }

    fn append(
        &mut self,
        previous_event_id: EventId,
        timestamp: Millis,
        event_type: EventType,
        details: Option<String>,
        replay_key: Option<ReplayKey>,
    ) -> EventId {
        let id = self.next_id;
        self.next_id += 1;
        let details = match self.compat {
            crate::asl::Compat::Aws => details,
            crate::asl::Compat::StepFunctionsLocal => details.map(step_functions_local_details),
        };
        self.buffer.push(HistoryEvent {
            id,
            previous_event_id,
            timestamp,
            event_type,
            details,
            replay_key,
        });
        if self.buffer.len() >= BATCH {
            self.submit();
        }
        id
    }

    /// Writes events as `compat` does (Step Functions Local names `aws-sdk` resources its own
    /// way).
    pub fn with_compat(mut self, compat: crate::asl::Compat) -> Self {
        self.compat = compat;
        self
    }

    /// Whose behaviour the events reproduce.
    pub fn compat(&self) -> crate::asl::Compat {
        self.compat
    }

    /// Whether the cap was reached.
    pub fn is_full(&self) -> bool {
        self.full
    }

    /// Hands buffered events to the sink without waiting.
    pub fn submit(&mut self) {
        if !self.buffer.is_empty() {
            // A full batch is followed by more: room for the next one at once (grown by
            // doubling, the buffer was copied and page-faulted eleven times a batch). A flush
            // before a wait leaves no room: an execution waiting for days should not hold
            // 64 events' worth (5 KB; 50 MB at 10,000 waiting).
            let next = if self.buffer.len() >= BATCH {
                Vec::with_capacity(BATCH)
            } else {
                Vec::new()
            };
            let batch = std::mem::replace(&mut self.buffer, next);
            self.sink.submit(batch);
        }
    }

    /// Hands the last events to the sink together with the execution's outcome.
    pub fn finish(&mut self, outcome: &crate::engine::Outcome) {
        let batch = std::mem::take(&mut self.buffer);
        self.sink.finish(batch, outcome);
    }

    /// Hands buffered events to the sink; the future resolves when they are committed.
    pub fn flush(&mut self) -> Pin<Box<dyn Future<Output = Result<(), String>>>> {
        self.submit();
        self.sink.flush()
    }

    /// Gives the sink back (tests read a [`MemorySink`] through it).
    pub fn into_sink(mut self) -> Box<dyn HistorySink> {
        self.submit();
        self.sink
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn details_are_valid_json_with_escapes() {
        let text = Details::new()
            .str("name", "A \"quoted\"\\ name\u{1}\n")
            .payload("input", r#"{"a":"b\"c"}"#.to_owned())
            .value("index", 3.into())
            .build();
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["name"], "A \"quoted\"\\ name\u{1}\n");
        assert_eq!(v["input"], r#"{"a":"b\"c"}"#);
        assert_eq!(v["inputDetails"]["truncated"], false);
        assert_eq!(v["index"], 3);
    }

    #[test]
    fn payloads_escape_like_strings() {
        let value = serde_json::json!({"a": "q\"b\\c\nd", "é": [1, null]});
        let p = Payload::of(&value).unwrap();
        let text = Details::new().payload_of("output", &p).build();
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["output"], value.to_string());
        assert_eq!(p.len, value.to_string().len());
    }

    /// A payload serialized already escaped is byte for byte the serialized text escaped
    /// afterwards (what every stored history before it holds), with the same length counted.
    #[test]
    fn payloads_escaped_in_one_pass_are_the_text_escaped_after() {
        let values = [
            serde_json::json!({"a": "q\"b\\c\nd", "é": [1, null, 2.5, -0.0, true]}),
            serde_json::json!("tab\tcr\rbs\u{8}ff\u{c}nul\u{0}us\u{1f}del\u{7f}/"),
            serde_json::json!({"k\"ey\\": {"\n": ["\u{1}", "\"\"", "", {}]}}),
            serde_json::json!([1e300, 12345678901234567890u64, -9223372036854775808i64]),
            serde_json::json!("日本語 😀 \u{2028}"),
            Value::Null,
        ];
        for value in values {
            let text = crate::depth::to_json_string(&value).unwrap();
            let mut expected = String::new();
            escape_into(&mut expected, &text);
            let p = Payload::of(&value).unwrap();
            assert_eq!(p.escaped, expected, "{value}");
            assert_eq!(p.len, text.len(), "{value}");
            assert_eq!(Payload::with_text(&value).unwrap().0.escaped, expected);
        }
        let mut deep = Value::Null;
        for _ in 0..crate::depth::VALUE_DEPTH + 1 {
            deep = Value::Array(vec![deep]);
        }
        assert!(Payload::of(&deep).is_err());
    }
}
