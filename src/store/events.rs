//! History events: what the engine appends, what `history` reads back, and the SQL for both.
//!
//! The engine assigns ids and `previousEventId` (it knows what caused what); the store checks that
//! ids continue the history without gaps and never rewrites an event.

use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{params, Connection};
use std::borrow::Cow;

/// A history event as the engine submits it. Details are already serialized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEvent {
    /// `id`: 1, 2, 3... within the execution.
    pub id: i64,
    /// `previousEventId`: 0 or an earlier id.
    pub previous_event_id: i64,
    /// `timestamp`, ms since the Unix epoch.
    pub timestamp_ms: i64,
    /// `type`, e.g. `PassStateEntered` (borrowed: the engine's types are constants).
    pub event_type: Cow<'static, str>,
    /// The event's replay key (see `engine::replay`), stored after the type and a
    /// [`KEY_SEPARATOR`]; readers get it back in [`EventRecord::replay_key`]. Kept apart until
    /// the writer's thread encodes the event: joining them was an allocation and a copy per
    /// event on the engine's thread, a fortieth of a large Map's.
    pub replay_key: Option<ReplayKey>,
    /// The JSON of the `<camelType>EventDetails` object; `None` for types without one.
    pub details: Option<String>,
}

/// An event's replay key, e.g. `r:6/3:2`. Kept inline up to 24 bytes (every key but those of
/// lanes nested deep): a `String` was an allocation on the engine's thread and a free on the
/// writer's for every event, a twentieth of a large Map's engine time.
pub type ReplayKey = compact_str::CompactString;

/// Separates an event's type from its replay key in [`NewEvent::event_type`] (U+001F, which
/// no event type or key contains).
pub const KEY_SEPARATOR: char = '\u{1f}';

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
    /// Where the engine wrote the event (lane and sequence), for resume; `None` for events
    /// written without one (ExecutionStarted, terminal events, older databases).
    pub replay_key: Option<String>,
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
    for (expected, event) in (last_event_id + 1..).zip(events) {
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

/// A chunk is closed once its text reaches this size, so a reader streaming a history (and
/// SQLite reading a row) never holds more than about this much of it at once.
const MAX_CHUNK_BYTES: usize = 1024 * 1024;

/// Chunks of at least this many bytes are stored compressed (see [`stored`]); a few events
/// gain little, and a one-state run stays as it was.
const COMPRESS_FROM_BYTES: usize = 2048;

/// The most a compressed chunk may say it holds: a chunk is closed past [`MAX_CHUNK_BYTES`], so
/// only one huge event makes it longer, and no event's details reach this. A damaged file that
/// claims more is malformed, not an allocation.
const MAX_STORED_CHUNK_BYTES: usize = 256 * 1024 * 1024;

/// A chunk's text as it is stored: as is under [`COMPRESS_FROM_BYTES`], else compressed with
/// LZ4 (block format, the text's length first as 4 bytes little-endian) as a BLOB. Histories
/// repeat themselves (a state's output is the next state's input, every Map iteration has the
/// same names and shapes): the Map of 10,000 items stores 11.3 MB of text in a ninth of it, and
/// the writer thread, whose B-tree pages and WAL frames cost per byte, commits that much less.
/// `lz4_flex` (pure Rust, safe) rather than zstd's C library: it compresses at several hundred
/// MB/s, fast enough to cost less than the bytes it saves.
fn stored<'a>(text: &'a str, compressor: &'a mut Compressor) -> ToSqlOutput<'a> {
    if text.len() < COMPRESS_FROM_BYTES {
        return ToSqlOutput::Borrowed(ValueRef::Text(text.as_bytes()));
    }
    let Compressor { blob, table } = compressor;
    blob.clear();
    blob.resize(4 + lz4_flex::block::get_maximum_output_size(text.len()), 0);
    blob[..4].copy_from_slice(&(text.len() as u32).to_le_bytes());
    match lz4_flex::block::compress_into_with_table(text.as_bytes(), &mut blob[4..], table) {
        Ok(len) => {
            blob.truncate(4 + len);
            // SQLite copies a bound BLOB: the buffer is the thread's to reuse.
            ToSqlOutput::Borrowed(ValueRef::Blob(blob))
        }
        // Cannot happen (the buffer has the worst case's room); TEXT reads back the same.
        Err(_) => ToSqlOutput::Borrowed(ValueRef::Text(text.as_bytes())),
    }
}

/// The buffers [`stored`] compresses into, kept by the writer's thread between chunks: a new
/// buffer for the worst case, given back at once and faulted in again for every chunk, was a
/// quarter of the writer's page faults in a 10,000-item Map (and LZ4's hash table was
/// allocated anew with it). Stored as it is, the spare room of each BLOB made a resumed Map
/// run of 4,000 children peak at 77 MiB instead of 31; now no BLOB outlives its statement.
#[derive(Default)]
pub(crate) struct Compressor {
    blob: Vec<u8>,
    table: lz4_flex::block::CompressTable,
}

impl Compressor {
    /// Lets go of a buffer grown past what usual chunks need (one huge event's).
    fn trim(&mut self) {
        if self.blob.capacity() > 2 * MAX_CHUNK_BYTES {
            self.blob = Vec::new();
        }
    }
}

/// A stored chunk's text (see [`stored`]): TEXT as it is (every chunk of an older build), a
/// BLOB decompressed. `None` when it is neither, or damaged.
fn chunk_text(value: ValueRef<'_>) -> Option<Cow<'_, str>> {
    match value {
        ValueRef::Text(text) => std::str::from_utf8(text).ok().map(Cow::Borrowed),
        ValueRef::Blob(blob) => {
            let size = u32::from_le_bytes(blob.get(..4)?.try_into().ok()?) as usize;
            if size > MAX_STORED_CHUNK_BYTES {
                return None;
            }
            let bytes = lz4_flex::block::decompress(blob.get(4..)?, size).ok()?;
            String::from_utf8(bytes).ok().map(Cow::Owned)
        }
        _ => None,
    }
}

/// Inserts events (already checked) as `(execution id, event)` pairs, in any mix of executions:
/// each run of one execution's consecutive events becomes one chunk row (several, past
/// [`MAX_CHUNK_BYTES`]).
pub(crate) fn insert_all(conn: &Connection, rows: &[(i64, &NewEvent)]) -> rusqlite::Result<()> {
    thread_local! {
        // The writer thread's chunk text, kept between batches: a fresh buffer of a megabyte
        // per batch was page-faulted in anew each time (a fifth of the writer's time in a
        // 10,000-item Map).
        static CHUNK: std::cell::RefCell<(String, Compressor)> =
            std::cell::RefCell::new(Default::default());
    }
    CHUNK.with_borrow_mut(|(text, compressor)| insert_chunks(conn, rows, text, compressor))
}

fn insert_chunks(
    conn: &Connection,
    rows: &[(i64, &NewEvent)],
    text: &mut String,
    compressor: &mut Compressor,
) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare_cached(
        "INSERT INTO event_chunks (execution_id, first_event_id, last_event_id, events) \
         VALUES (?1, ?2, ?3, ?4)",
    )?;
    let mut start = 0;
    while start < rows.len() {
        let execution_id = rows[start].0;
        text.clear();
        encode(text, rows[start].1);
        let mut end = start + 1;
        while end < rows.len()
            && rows[end].0 == execution_id
            && rows[end].1.id == rows[end - 1].1.id + 1
            && text.len() < MAX_CHUNK_BYTES
        {
            encode(text, rows[end].1);
            end += 1;
        }
        stmt.execute(params![
            execution_id,
            rows[start].1.id,
            rows[end - 1].1.id,
            stored(text, compressor)
        ])?;
        start = end;
    }
    // A chunk larger than usual (one huge event) is not kept for good.
    if text.capacity() > 2 * MAX_CHUNK_BYTES {
        *text = String::new();
    }
    compressor.trim();
    Ok(())
}

/// Appends a Map run child's events (consecutive, one batch) as one chunk of
/// `map_run_event_chunks`; events already stored (a batch submitted twice) are left out.
pub(crate) fn insert_child_chunk(
    conn: &Connection,
    execution_arn: &str,
    events: &[NewEvent],
) -> rusqlite::Result<()> {
    let (Some(first), Some(last)) = (events.first(), events.last()) else {
        return Ok(());
    };
    let mut text = String::new();
    for e in events {
        encode(&mut text, e);
    }
    conn.prepare_cached(
        "INSERT OR REPLACE INTO map_run_event_chunks
             (execution_arn, first_event_id, last_event_id, events)
         VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![
        execution_arn,
        first.id,
        last.id,
        stored(&text, &mut Compressor::default())
    ])?;
    Ok(())
}

/// Forgets a Map run child's history (it runs again from its start).
pub(crate) fn delete_child_history(conn: &Connection, execution_arn: &str) -> rusqlite::Result<()> {
    conn.prepare_cached("DELETE FROM map_run_event_chunks WHERE execution_arn = ?1")?
        .execute([execution_arn])?;
    Ok(())
}

/// A Map run child's history, oldest first or (`reverse`) newest first; empty when none is kept.
pub(crate) fn child_history(
    conn: &Connection,
    execution_arn: &str,
    reverse: bool,
) -> rusqlite::Result<Vec<EventRecord>> {
    let mut stmt = conn.prepare_cached(
        "SELECT first_event_id, events FROM map_run_event_chunks
         WHERE execution_arn = ?1 ORDER BY first_event_id ASC",
    )?;
    let mut rows = stmt.query([execution_arn])?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let first: i64 = row.get(0)?;
        let text = chunk_text(row.get_ref(1)?).ok_or_else(|| malformed(first))?;
        decode_all(&text, &mut out).ok_or_else(|| malformed(first))?;
    }
    if reverse {
        out.reverse();
    }
    Ok(out)
}

fn malformed(first: i64) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(
        1,
        rusqlite::types::Type::Text,
        format!("malformed history chunk starting at event {first}").into(),
    )
}

/// One event as a chunk line: `id TAB prev TAB timestamp TAB type TAB length TAB details NL`.
/// The details' byte length comes first, so any text can follow without escaping or scanning.
fn encode(out: &mut String, e: &NewEvent) {
    // itoa instead of `write!`: this runs for every event, and fmt's machinery dominated it.
    let mut n = itoa::Buffer::new();
    let details = e.details.as_deref();
    out.push_str(n.format(e.id));
    out.push('\t');
    out.push_str(n.format(e.previous_event_id));
    out.push('\t');
    out.push_str(n.format(e.timestamp_ms));
    out.push('\t');
    out.push_str(&e.event_type);
    if let Some(key) = &e.replay_key {
        out.push(KEY_SEPARATOR);
        out.push_str(key);
    }
    out.push('\t');
    out.push_str(n.format(details.map_or(-1, |d| d.len() as i64)));
    out.push('\t');
    out.push_str(details.unwrap_or(""));
    out.push('\n');
}

/// Parses the chunk text back into events.
fn decode_all(mut text: &str, out: &mut Vec<EventRecord>) -> Option<()> {
    while !text.is_empty() {
        let mut header = text.splitn(6, '\t');
        let id = header.next()?.parse().ok()?;
        let previous_event_id = header.next()?.parse().ok()?;
        let timestamp_ms = header.next()?.parse().ok()?;
        let raw_type = header.next()?;
        let (event_type, replay_key) = match raw_type.split_once(KEY_SEPARATOR) {
            Some((t, k)) => (t.to_owned(), Some(k.to_owned())),
            None => (raw_type.to_owned(), None),
        };
        let len: i64 = header.next()?.parse().ok()?;
        let rest = header.next()?;
        let n = len.max(0) as usize;
        let details = (len >= 0)
            .then(|| rest.get(..n).map(str::to_owned))
            .flatten();
        if len >= 0 && details.is_none() {
            return None;
        }
        text = rest.get(n..)?.strip_prefix('\n')?;
        out.push(EventRecord {
            id,
            previous_event_id,
            timestamp_ms,
            event_type,
            details,
            replay_key,
        });
    }
    Some(())
}

// ---- reader side -------------------------------------------------------------------------------

/// The whole history of one execution, oldest first or (`reverse`) newest first.
pub(crate) fn history(
    conn: &Connection,
    execution_id: i64,
    reverse: bool,
) -> rusqlite::Result<Vec<EventRecord>> {
    let mut stmt = conn.prepare_cached(
        "SELECT first_event_id, events FROM event_chunks \
         WHERE execution_id = ?1 ORDER BY first_event_id ASC",
    )?;
    let mut rows = stmt.query([execution_id])?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let first: i64 = row.get(0)?;
        let text = chunk_text(row.get_ref(1)?).ok_or_else(|| malformed(first))?;
        decode_all(&text, &mut out).ok_or_else(|| malformed(first))?;
    }
    if reverse {
        out.reverse();
    }
    Ok(out)
}

/// An execution's history one stored chunk at a time (oldest first, or newest first with
/// `reverse`, within chunks too), so a reader never holds more than a chunk: `each` gets the
/// events of each chunk in order and says whether to go on. One statement, so one snapshot.
pub(crate) fn for_each_chunk(
    conn: &Connection,
    execution_id: i64,
    reverse: bool,
    each: &mut dyn FnMut(&[EventRecord]) -> bool,
) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare_cached(if reverse {
        "SELECT first_event_id, events FROM event_chunks \
         WHERE execution_id = ?1 ORDER BY first_event_id DESC"
    } else {
        "SELECT first_event_id, events FROM event_chunks \
         WHERE execution_id = ?1 ORDER BY first_event_id ASC"
    })?;
    let mut rows = stmt.query([execution_id])?;
    let mut chunk = Vec::new();
    while let Some(row) = rows.next()? {
        let first: i64 = row.get(0)?;
        let text = chunk_text(row.get_ref(1)?).ok_or_else(|| malformed(first))?;
        chunk.clear();
        decode_all(&text, &mut chunk).ok_or_else(|| malformed(first))?;
        if reverse {
            chunk.reverse();
        }
        if !each(&chunk) {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_round_trip_any_details_text() {
        let events: Vec<NewEvent> = vec![
            NewEvent {
                details: Some("{\"a\":\"tab\there\nnewline\"}".into()),
                ..event(1, 0)
            },
            NewEvent {
                details: None,
                ..event(2, 1)
            },
            NewEvent {
                details: Some(String::new()),
                replay_key: Some("M/3:0".into()),
                ..event(3, 2)
            },
        ];
        let mut text = String::new();
        for e in &events {
            encode(&mut text, e);
        }
        let mut back = Vec::new();
        decode_all(&text, &mut back).expect("decodes");
        assert_eq!(back.len(), 3);
        for (a, b) in events.iter().zip(&back) {
            assert_eq!(
                (a.id, a.previous_event_id, &a.details),
                (b.id, b.previous_event_id, &b.details)
            );
            assert_eq!(
                (&*a.event_type, a.replay_key.as_deref()),
                (&*b.event_type, b.replay_key.as_deref())
            );
        }
        assert!(decode_all("1\t0\t5\tX\t10\tshort\n", &mut back).is_none());
    }

    /// Regression guard for the compressed chunks (schema V16): a long chunk is stored as a
    /// BLOB and reads back as the same text, a short one stays TEXT, and a damaged BLOB that
    /// claims 4 GiB is malformed without allocating it.
    #[test]
    fn chunks_are_stored_compressed_and_read_back_whole() {
        let text = "1\t0\t5\tPassStateEntered\t17\t{\"name\":\"A\",\"x\":1}\n".repeat(200);
        let mut compressor = Compressor::default();
        let ToSqlOutput::Borrowed(ValueRef::Blob(blob)) = stored(&text, &mut compressor) else {
            panic!("a long chunk is a BLOB");
        };
        let blob = blob.to_vec();
        assert!(
            blob.len() < text.len() / 5,
            "{} of {}",
            blob.len(),
            text.len()
        );
        assert_eq!(chunk_text(ValueRef::Blob(&blob)).unwrap(), text);
        let short = "1\t0\t5\tX\t-1\t\n";
        assert!(matches!(
            stored(short, &mut compressor),
            ToSqlOutput::Borrowed(ValueRef::Text(_))
        ));
        assert_eq!(chunk_text(ValueRef::Text(short.as_bytes())).unwrap(), short);
        let mut damaged = u32::MAX.to_le_bytes().to_vec();
        damaged.extend_from_slice(&blob[4..]);
        assert!(chunk_text(ValueRef::Blob(&damaged)).is_none());
        assert!(chunk_text(ValueRef::Blob(&blob[..blob.len() / 2])).is_none());
    }

    fn event(id: i64, prev: i64) -> NewEvent {
        NewEvent {
            id,
            previous_event_id: prev,
            timestamp_ms: 0,
            event_type: "PassStateEntered".into(),
            replay_key: None,
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
