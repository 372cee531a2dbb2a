//! History events: what the engine appends, what `history` reads back, and the SQL for both.
//!
//! The engine assigns ids and `previousEventId` (it knows what caused what); the store checks that
//! ids continue the history without gaps and never rewrites an event.

use rusqlite::{params, Connection};

/// A history event as the engine submits it. Details are already serialized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEvent {
    /// `id`: 1, 2, 3... within the execution.
    pub id: i64,
    /// `previousEventId`: 0 or an earlier id.
    pub previous_event_id: i64,
    /// `timestamp`, ms since the Unix epoch.
    pub timestamp_ms: i64,
    /// `type`, e.g. `PassStateEntered`.
    pub event_type: String,
    /// The JSON of the `<camelType>EventDetails` object; `None` for types without one.
    pub details: Option<String>,
}

/// A history event as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRecord {
    /// `id`.
    pub id: i64,
    /// `previousEventId`.
    pub previous_event_id: i64,
    /// `timestamp`, ms since the Unix epoch.
    pub timestamp_ms: i64,
    /// `type`.
    pub event_type: String,
    /// The details object's JSON, exactly as the engine wrote it; `None` for types without one.
    pub details: Option<String>,
}

impl EventRecord {
    /// The key AWS puts the details under: `PassStateEntered` → `stateEnteredEventDetails`,
    /// `TaskScheduled` → `taskScheduledEventDetails`. State-level `*StateEntered`/`*StateExited`
    /// share one shape; everything else is the type with a lower-case first letter.
    pub fn details_key(&self) -> String {
        details_key(&self.event_type)
    }
}

/// See [`EventRecord::details_key`].
pub fn details_key(event_type: &str) -> String {
    if event_type.ends_with("StateEntered") {
        return "stateEnteredEventDetails".to_owned();
    }
    if event_type.ends_with("StateExited") {
        return "stateExitedEventDetails".to_owned();
    }
    let mut chars = event_type.chars();
    let mut key = String::with_capacity(event_type.len() + 12);
    if let Some(first) = chars.next() {
        key.extend(first.to_lowercase());
    }
    key.push_str(chars.as_str());
    key.push_str("EventDetails");
    key
}

/// Why a batch of events cannot follow `last_event_id`; checked before anything is written.
pub(crate) fn check_contiguous(last_event_id: i64, events: &[NewEvent]) -> Result<(), Violation> {
    let mut expected = last_event_id + 1;
    for event in events {
        if event.id != expected {
            return Err(Violation::NotContiguous {
                expected,
                found: event.id,
            });
        }
        if event.previous_event_id < 0 || event.previous_event_id >= event.id {
            return Err(Violation::Invalid(format!(
                "event {} has previousEventId {}, which is not an earlier event",
                event.id, event.previous_event_id
            )));
        }
        if event.event_type.is_empty() {
            return Err(Violation::Invalid(format!(
                "event {} has no type",
                event.id
            )));
        }
        expected += 1;
    }
    Ok(())
}

/// A reason to refuse events, before any write.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Violation {
    NotContiguous { expected: i64, found: i64 },
    Invalid(String),
}

// ---- writer side -------------------------------------------------------------------------------

/// Inserts events (already checked) for one execution.
pub(crate) fn insert(
    conn: &Connection,
    execution_id: i64,
    events: &[NewEvent],
) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare_cached(
        "INSERT INTO events (execution_id, event_id, previous_event_id, timestamp, event_type, details) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    for e in events {
        stmt.execute(params![
            execution_id,
            e.id,
            e.previous_event_id,
            e.timestamp_ms,
            e.event_type,
            e.details
        ])?;
    }
    Ok(())
}

// ---- reader side -------------------------------------------------------------------------------

/// The whole history of one execution, oldest first or (`reverse`) newest first.
pub(crate) fn history(
    conn: &Connection,
    execution_id: i64,
    reverse: bool,
) -> rusqlite::Result<Vec<EventRecord>> {
    let sql = if reverse {
        "SELECT event_id, previous_event_id, timestamp, event_type, details FROM events \
         WHERE execution_id = ?1 ORDER BY event_id DESC"
    } else {
        "SELECT event_id, previous_event_id, timestamp, event_type, details FROM events \
         WHERE execution_id = ?1 ORDER BY event_id ASC"
    };
    let mut stmt = conn.prepare_cached(sql)?;
    let rows = stmt.query_map([execution_id], |row| {
        Ok(EventRecord {
            id: row.get(0)?,
            previous_event_id: row.get(1)?,
            timestamp_ms: row.get(2)?,
            event_type: row.get(3)?,
            details: row.get(4)?,
        })
    })?;
    rows.collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(id: i64, prev: i64) -> NewEvent {
        NewEvent {
            id,
            previous_event_id: prev,
            timestamp_ms: 0,
            event_type: "PassStateEntered".into(),
            details: None,
        }
    }

    #[test]
    fn details_keys_follow_aws() {
        assert_eq!(details_key("PassStateEntered"), "stateEnteredEventDetails");
        assert_eq!(details_key("TaskStateExited"), "stateExitedEventDetails");
        assert_eq!(
            details_key("ExecutionStarted"),
            "executionStartedEventDetails"
        );
        assert_eq!(
            details_key("MapIterationStarted"),
            "mapIterationStartedEventDetails"
        );
        assert_eq!(details_key(""), "EventDetails");
    }

    #[test]
    fn contiguity_is_checked_before_writing() {
        assert_eq!(
            check_contiguous(0, &[event(1, 0), event(2, 0), event(3, 2)]),
            Ok(())
        );
        assert_eq!(
            check_contiguous(3, &[event(5, 0)]),
            Err(Violation::NotContiguous {
                expected: 4,
                found: 5
            })
        );
        assert_eq!(
            check_contiguous(3, &[event(4, 3), event(4, 3)]),
            Err(Violation::NotContiguous {
                expected: 5,
                found: 4
            })
        );
        assert!(matches!(
            check_contiguous(0, &[event(1, 1)]),
            Err(Violation::Invalid(_))
        ));
        assert!(matches!(
            check_contiguous(0, &[event(1, -1)]),
            Err(Violation::Invalid(_))
        ));
    }
}
