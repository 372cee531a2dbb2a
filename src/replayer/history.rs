//! Reading a recorded history: what `aws stepfunctions get-execution-history --output json`
//! prints (`{"events": [...]}`, one page or several pages concatenated in one file, as
//! `--no-paginate` loops write them), a bare list of events, or sfn-local's own
//! `get-execution-history`. Events come back sorted by id (`--reverse-order` pages too), each
//! checked for the fields replay reads.

use super::ReplayError;
use crate::clock::Millis;
use crate::engine::history::HistoryEvent;
use crate::engine::visits::EventView;
use serde_json::Value;
use std::sync::OnceLock;

/// One recorded event, its details kept as JSON text as the engine writes them.
#[derive(Debug, Clone)]
pub struct RecordedEvent {
    /// `id`.
    pub id: i64,
    /// `previousEventId` (0 for none).
    pub previous_event_id: i64,
    /// `type`.
    pub event_type: String,
    /// `timestamp`, ms since the Unix epoch.
    pub timestamp_ms: Millis,
    /// The `*EventDetails` object as compact JSON text, when the event has one.
    pub details: Option<String>,
    /// The same, parsed once, when first asked for (an empty object when there are none): a
    /// re-run's events whose text is the recording's are never parsed.
    parsed: OnceLock<Value>,
}

impl RecordedEvent {
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
            self.details
                .as_deref()
                .and_then(|d| serde_json::from_str(d).ok())
                .unwrap_or_else(empty)
        })
    }
}

impl From<&HistoryEvent> for RecordedEvent {
    fn from(e: &HistoryEvent) -> Self {
        RecordedEvent {
            id: e.id,
            previous_event_id: e.previous_event_id,
            event_type: e.event_type.as_str().to_owned(),
            timestamp_ms: e.timestamp,
            details: e.details.clone(),
            parsed: OnceLock::new(),
        }
    }
}

/// Reads a history file's text: one or more JSON documents, each `{"events": [...]}` or a bare
/// list of events. Every page is read; the events are returned sorted by id.
pub fn parse_history(text: &str) -> Result<Vec<RecordedEvent>, ReplayError> {
    let mut events = Vec::new();
    let stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    for (page, document) in stream.enumerate() {
        let document = document.map_err(|e| ReplayError::History {
            at: format!("page {}", page + 1),
            why: format!("not JSON: {e}"),
        })?;
        let list = match document {
            Value::Array(list) => list,
            Value::Object(mut m) => match m.remove("events") {
                Some(Value::Array(list)) => list,
                _ => {
                    return Err(ReplayError::History {
                        at: format!("page {}", page + 1),
                        why: "an object without an \"events\" list (expected get-execution-history's output)".into(),
                    })
                }
            },
            _ => {
                return Err(ReplayError::History {
                    at: format!("page {}", page + 1),
                    why: "neither {\"events\": [...]} nor a list of events".into(),
                })
            }
        };
        for (i, raw) in list.into_iter().enumerate() {
            let at = || format!("page {}, event {}", page + 1, i + 1);
            events.push(event(raw).map_err(|why| ReplayError::History { at: at(), why })?);
        }
    }
    events.sort_by_key(|e| e.id);
    check_ids(&events)?;
    Ok(events)
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
fn event(raw: Value) -> Result<RecordedEvent, String> {
    let Value::Object(mut m) = raw else {
        return Err("an event that is not an object".into());
    };
    let id = m
        .get("id")
        .and_then(Value::as_i64)
        .ok_or("an event without a numeric \"id\"")?;
    let event_type = m
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("event {id} has no \"type\""))?
        .to_owned();
    let previous_event_id = m
        .get("previousEventId")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let timestamp_ms = match m.get("timestamp") {
        Some(t) => timestamp(t).ok_or_else(|| format!("event {id}: unreadable timestamp {t}"))?,
        None => return Err(format!("event {id} has no \"timestamp\"")),
    };
    // Taken, not copied: the document is dropped page by page.
    let key = m
        .iter()
        .find(|(k, v)| k.ends_with("EventDetails") && v.is_object())
        .map(|(k, _)| k.clone());
    let parsed = key.and_then(|k| m.swap_remove(&k));
    Ok(RecordedEvent {
        id,
        previous_event_id,
        event_type,
        timestamp_ms,
        details: parsed.as_ref().map(Value::to_string),
        parsed: OnceLock::from(parsed.unwrap_or_else(empty)),
    })
}

fn empty() -> Value {
    Value::Object(Default::default())
}

/// An ISO 8601 timestamp (the AWS CLI's and ours) or epoch seconds (the CLI with
/// `cli_timestamp_format = none`, the SDKs' raw JSON).
fn timestamp(t: &Value) -> Option<Millis> {
    match t {
        Value::Number(n) => n.as_f64().map(|s| (s * 1000.0).round() as Millis),
        Value::String(s) => chrono::DateTime::parse_from_rfc3339(s)
            .ok()
            .map(|d| d.timestamp_millis()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_missing_page_is_named() {
        let text = r#"[{"id":1,"type":"ExecutionStarted","timestamp":0},{"id":3,"type":"X","timestamp":0}]"#;
        let e = parse_history(text).unwrap_err().to_string();
        assert!(e.contains("events 2 to 2 are missing"), "{e}");
    }
}
