//! A history file read in one pass: what `get-execution-history` prints (sfn-local's and the
//! AWS CLI's, one page or several, or a bare list), each event's few fields and its details
//! object, checked as JSON and made compact in the same pass over its bytes.
//!
//! The typed reading ([`super::history::read_typed`], through serde_json) is the reference:
//! it reads every file and tells every error. This pass takes only what it can read exactly
//! as that reading does, and gives up on anything else (a syntax error, an escape in a key or
//! a type, a `\uD...` escape, a number with an exponent or of more than 300 digits, an event
//! field given twice, a timestamp given as a number, an event the typed reading would refuse),
//! leaving the file to the typed reading; its tests hold the two readings to the same events
//! on the corpus's histories, on generated ones and on broken ones. It exists for speed:
//! the typed reading checked each details object as a raw value and then scanned it again to
//! make it compact, two passes over most of the file. On the 3.1 MB, 10,006-event history of
//! `benches/replay.sh` it took 82 million instructions (callgrind), this pass 54 million;
//! reading the file was the longer of a replay's two threads.

use super::history::{events_in, RecordedEvent};
use crate::depth::needs_escape;

/// The pass gave up: the typed reading reads the file.
#[derive(Debug)]
pub(super) struct GiveUp;

type Step<T> = Result<T, GiveUp>;

/// Nesting deeper than this is left to the typed reading (serde_json stops at 128).
const MAX_DEPTH: usize = 100;
/// A run of digits longer than this is left to the typed reading, which checks its range.
const MAX_DIGITS: usize = 300;

/// The events of `text` in the order of the file, or [`GiveUp`].
pub(super) fn read(text: &str) -> Step<Vec<RecordedEvent>> {
    let mut reader = Reader {
        bytes: text.as_bytes(),
        text,
        at: 0,
        compact: None,
        scratch: String::new(),
    };
    let mut events = Vec::with_capacity(events_in(text.len()));
    let mut documents = 0;
    loop {
        reader.whitespace();
        match reader.peek() {
            None if documents > 0 => return Ok(events),
            Some(b'[') => reader.events(&mut events)?,
            Some(b'{') => reader.page(&mut events)?,
            _ => return Err(GiveUp),
        }
        documents += 1;
    }
}

/// Where the pass is in the file.
struct Reader<'a> {
    bytes: &'a [u8],
    text: &'a str,
    at: usize,
    /// While a details object is read: it made compact so far.
    compact: Option<Compact>,
    /// Where details are made compact, reused from event to event.
    scratch: String,
}

/// A value being made compact: the text up to `from` is written to `out` without the
/// whitespace between its tokens ([`Reader::whitespace`] is the one place that skips any).
struct Compact {
    out: String,
    from: usize,
}

/// An event's fields as read.
#[derive(Default)]
struct Fields<'a> {
    id: Option<i64>,
    previous_event_id: Option<i64>,
    event_type: Option<&'a str>,
    timestamp: Option<&'a str>,
    details: Option<String>,
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    /// Skips whitespace (most tokens have none before them: only a run is looked at twice).
    #[inline]
    fn whitespace(&mut self) {
        if self.peek().is_some_and(is_whitespace) {
            self.skip_whitespace();
        }
    }

    /// Skips a run of whitespace; what a value being made compact held before it is written.
    fn skip_whitespace(&mut self) {
        let start = self.at;
        let rest = &self.bytes[start..];
        self.at += rest
            .iter()
            .position(|&b| !is_whitespace(b))
            .unwrap_or(rest.len());
        if let Some(compact) = &mut self.compact {
            compact.out.push_str(&self.text[compact.from..start]);
            compact.from = self.at;
        }
    }

    /// Skips whitespace, then takes `byte`.
    fn expect(&mut self, byte: u8) -> Step<()> {
        self.whitespace();
        if self.peek() != Some(byte) {
            return Err(GiveUp);
        }
        self.at += 1;
        Ok(())
    }

    /// After an item of a list or object: whether another follows (`,`) or it ends (`close`).
    fn another(&mut self, close: u8) -> Step<bool> {
        self.whitespace();
        match self.peek() {
            Some(b',') => {
                self.at += 1;
                Ok(true)
            }
            Some(b) if b == close => {
                self.at += 1;
                Ok(false)
            }
            _ => Err(GiveUp),
        }
    }

    /// Whether a list or object opened with `open` ends at once (`[]`, `{}`).
    fn empty(&mut self, open: u8, close: u8) -> Step<bool> {
        self.expect(open)?;
        self.whitespace();
        let empty = self.peek() == Some(close);
        self.at += usize::from(empty);
        Ok(empty)
    }

    /// A page: `{"events": [...], ...}`, its other keys' values checked and skipped.
    fn page(&mut self, events: &mut Vec<RecordedEvent>) -> Step<()> {
        let mut listed = false;
        if self.empty(b'{', b'}')? {
            return Err(GiveUp);
        }
        loop {
            let key = self.key()?;
            if key == "events" {
                // Two lists in one page: the typed reading says which it reads.
                if listed {
                    return Err(GiveUp);
                }
                listed = true;
                self.whitespace();
                self.events(events)?;
            } else {
                self.value(1)?;
            }
            if !self.another(b'}')? {
                return if listed { Ok(()) } else { Err(GiveUp) };
            }
        }
    }

    /// A list of events.
    fn events(&mut self, events: &mut Vec<RecordedEvent>) -> Step<()> {
        if self.empty(b'[', b']')? {
            return Ok(());
        }
        loop {
            events.push(self.event()?);
            if !self.another(b']')? {
                return Ok(());
            }
        }
    }

    /// One event: `id`, `previousEventId`, `type`, `timestamp` and its first `*EventDetails`
    /// object, made compact; any other key's value checked and skipped.
    fn event(&mut self) -> Step<RecordedEvent> {
        let mut f = Fields::default();
        if self.empty(b'{', b'}')? {
            return Err(GiveUp);
        }
        loop {
            let key = self.key()?;
            self.whitespace();
            match key {
                "id" => once(&mut f.id, self.integer()?)?,
                "previousEventId" => once(&mut f.previous_event_id, self.integer()?)?,
                "type" => once(&mut f.event_type, self.plain_string()?)?,
                "timestamp" => once(&mut f.timestamp, self.plain_string()?)?,
                k if k.ends_with("EventDetails") && f.details.is_none() => {
                    f.details = self.details()?;
                }
                _ => self.value(3)?,
            }
            if !self.another(b'}')? {
                break;
            }
        }
        let (Some(id), Some(event_type), Some(at)) = (f.id, f.event_type, f.timestamp) else {
            return Err(GiveUp);
        };
        let timestamp_ms = super::history::timestamp_text(at).ok_or(GiveUp)?;
        Ok(RecordedEvent::read(
            id,
            f.previous_event_id.unwrap_or(0),
            event_type,
            timestamp_ms,
            f.details,
        ))
    }

    /// A details value: an object, made compact; anything else is checked and not kept.
    fn details(&mut self) -> Step<Option<String>> {
        if self.peek() != Some(b'{') {
            self.value(3)?;
            return Ok(None);
        }
        let mut out = std::mem::take(&mut self.scratch);
        out.clear();
        self.compact = Some(Compact { out, from: self.at });
        let read = self.value(3);
        let Compact { mut out, from } = self.compact.take().ok_or(GiveUp)?;
        read?;
        out.push_str(&self.text[from..self.at]);
        let details = out.as_str().to_owned();
        self.scratch = out;
        Ok(Some(details))
    }

    /// A key without escapes, and its `:`.
    fn key(&mut self) -> Step<&'a str> {
        self.whitespace();
        let key = self.plain_string()?;
        self.expect(b':')?;
        Ok(key)
    }

    /// A string without escapes, as it is in the file.
    fn plain_string(&mut self) -> Step<&'a str> {
        let start = self.at + 1;
        match self.string()? {
            (end, false) => Ok(&self.text[start..end - 1]),
            (_, true) => Err(GiveUp),
        }
    }

    /// An integer that fits an i64, not negative (ids are counted from 1).
    fn integer(&mut self) -> Step<i64> {
        let start = self.at;
        self.whole()?;
        if matches!(self.peek(), Some(b'.' | b'e' | b'E')) {
            return Err(GiveUp);
        }
        self.text[start..self.at].parse().map_err(|_| GiveUp)
    }

    /// A string, checked (`self.at` is its opening quote): the index past its closing quote,
    /// and whether it holds an escape.
    fn string(&mut self) -> Step<(usize, bool)> {
        if self.peek() != Some(b'"') {
            return Err(GiveUp);
        }
        let (mut i, mut escaped) = (self.at + 1, false);
        loop {
            i += plain_run(self.bytes.get(i..).ok_or(GiveUp)?);
            match self.bytes.get(i) {
                Some(b'"') => break,
                Some(b'\\') => {
                    escaped = true;
                    i += match self.bytes.get(i + 1) {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => 2,
                        Some(b'u') => unicode_escape(self.bytes.get(i + 2..i + 6))?,
                        _ => return Err(GiveUp),
                    }
                }
                _ => return Err(GiveUp),
            }
        }
        self.at = i + 1;
        Ok((self.at, escaped))
    }

    /// Any value, checked; `depth` is how deep it is.
    fn value(&mut self, depth: usize) -> Step<()> {
        self.whitespace();
        match self.peek().ok_or(GiveUp)? {
            b'{' | b'[' if depth >= MAX_DEPTH => Err(GiveUp),
            b'{' => self.object(depth),
            b'[' => self.list(depth),
            b'"' => self.string().map(drop),
            b'-' | b'0'..=b'9' => self.number(),
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            _ => Err(GiveUp),
        }
    }

    fn object(&mut self, depth: usize) -> Step<()> {
        if self.empty(b'{', b'}')? {
            return Ok(());
        }
        loop {
            self.whitespace();
            self.string()?;
            self.expect(b':')?;
            self.value(depth + 1)?;
            if !self.another(b'}')? {
                return Ok(());
            }
        }
    }

    fn list(&mut self, depth: usize) -> Step<()> {
        if self.empty(b'[', b']')? {
            return Ok(());
        }
        loop {
            self.value(depth + 1)?;
            if !self.another(b']')? {
                return Ok(());
            }
        }
    }

    /// A number without an exponent: `-?(0|[1-9][0-9]*)(\.[0-9]+)?`, no run of digits longer
    /// than [`MAX_DIGITS`].
    fn number(&mut self) -> Step<()> {
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        self.whole()?;
        if self.peek() == Some(b'.') {
            self.at += 1;
            self.digits()?;
        }
        match self.peek() {
            Some(b'e' | b'E') => Err(GiveUp),
            _ => Ok(()),
        }
    }

    /// A number's whole part: `0` or digits not led by one.
    fn whole(&mut self) -> Step<()> {
        let start = self.at;
        if self.digits()? > 1 && self.bytes[start] == b'0' {
            return Err(GiveUp);
        }
        Ok(())
    }

    /// One or more digits, at most [`MAX_DIGITS`]: how many.
    fn digits(&mut self) -> Step<usize> {
        let start = self.at;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.at += 1;
        }
        match self.at - start {
            0 => Err(GiveUp),
            n if n > MAX_DIGITS => Err(GiveUp),
            n => Ok(n),
        }
    }

    fn literal(&mut self, word: &str) -> Step<()> {
        if !self.text[self.at..].starts_with(word) {
            return Err(GiveUp);
        }
        self.at += word.len();
        Ok(())
    }
}

/// The length of a `\uXXXX` escape whose hex digits are `hex`; a `\uD...` escape (a
/// surrogate's range, which only a full parse checks) is left to the typed reading.
fn unicode_escape(hex: Option<&[u8]>) -> Step<usize> {
    match hex {
        Some(h) if h.iter().all(u8::is_ascii_hexdigit) && !matches!(h[0], b'd' | b'D') => Ok(6),
        _ => Err(GiveUp),
    }
}

/// JSON's whitespace.
fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | b'\t')
}

/// Sets a field read once; a field given twice is left to the typed reading.
fn once<T>(field: &mut Option<T>, value: T) -> Step<()> {
    if field.replace(value).is_some() {
        return Err(GiveUp);
    }
    Ok(())
}

/// How many bytes at the start of `text` a string holds as they are: up to a quote, a
/// backslash or a control character. Eight at a time (a payload is JSON text in a string,
/// most of a history's bytes).
fn plain_run(text: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // Per byte: the high bit set where it is zero (the lowest such byte is exact).
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    let mut i = 0;
    while let Some(chunk) = text.get(i..i + 8) {
        let x = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
        let below_space = x.wrapping_sub(ONES * 0x20) & !x & HIGHS;
        let found =
            zero(x ^ (ONES * u64::from(b'"'))) | zero(x ^ (ONES * u64::from(b'\\'))) | below_space;
        if found != 0 {
            return i + (found.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    i + text[i..]
        .iter()
        .position(|&b| needs_escape(b))
        .unwrap_or(text.len() - i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replayer::history::read_typed;
    use proptest::prelude::*;
    use serde_json::{json, Value};

    /// An event's fields as both readings give them.
    type Read = (i64, i64, String, i64, Option<String>);

    fn fields(events: &[RecordedEvent]) -> Vec<Read> {
        events
            .iter()
            .map(|e| {
                let ty = e.event_type.to_string();
                (
                    e.id,
                    e.previous_event_id,
                    ty,
                    e.timestamp_ms,
                    e.details.clone(),
                )
            })
            .collect()
    }

    /// What the one pass reads, the typed reading reads the same; whether it read it.
    fn agrees(text: &str) -> bool {
        let Ok(events) = read(text) else {
            return false;
        };
        let typed =
            read_typed(text).unwrap_or_else(|e| panic!("{e}: the typed reading refuses {text}"));
        assert_eq!(fields(&events), fields(&typed), "{text}");
        true
    }

    /// `history` as compact JSON, indented by two (sfn-local) and by four (the AWS CLI).
    fn written(history: &Value) -> [String; 3] {
        let mut four = Vec::new();
        let formatter = serde_json::ser::PrettyFormatter::with_indent(b"    ");
        let mut serializer = serde_json::Serializer::with_formatter(&mut four, formatter);
        serde::Serialize::serialize(history, &mut serializer).unwrap();
        [
            history.to_string(),
            serde_json::to_string_pretty(history).unwrap(),
            String::from_utf8(four).unwrap(),
        ]
    }

    /// The recorded executions of the conformance corpus, each as a history file with ISO
    /// timestamps, are read alike by both readings, and nearly all in one pass.
    #[test]
    fn the_corpus_histories_read_alike() {
        let (mut files, mut taken) = (0, 0);
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/corpora/conformance/cases"
        );
        for entry in walk(std::path::Path::new(dir)) {
            let text = std::fs::read_to_string(&entry).unwrap();
            let Ok(case) = serde_json::from_str::<Value>(&text) else {
                continue;
            };
            let Some(events) = case["events"].as_array() else {
                continue;
            };
            let events: Vec<Value> = (0..)
                .zip(events)
                .map(|(i, e): (i64, &Value)| {
                    let mut out = json!({
                        "timestamp": format!("2024-01-01T00:00:{:02}.{:03}Z", i / 1000 % 60, i % 1000),
                        "type": e["type"], "id": e["id"], "previousEventId": e["previousEventId"],
                    });
                    if let Some(key) = e["detailsKey"].as_str() {
                        let mut details = e["details"].clone();
                        for field in ["input", "output", "parameters", "cause"] {
                            if let Some(v) = details.get_mut(field).filter(|v| !v.is_string()) {
                                *v = json!(v.to_string());
                            }
                        }
                        out[key] = details;
                    }
                    out
                })
                .collect();
            for text in written(&json!({ "events": events })) {
                files += 1;
                taken += usize::from(agrees(&text));
            }
        }
        assert!(files > 300, "{files} files");
        assert!(
            taken * 10 >= files * 9,
            "{taken} of {files} read in one pass"
        );
    }

    fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
        let mut found = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                found.extend(walk(&path));
            } else if path.extension().is_some_and(|e| e == "json") {
                found.push(path);
            }
        }
        found
    }

    /// A details value: any JSON, strings with quotes, escapes, controls and any character.
    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            "[a-z\"\\\\/\t\n\u{0}é😀 ]{0,8}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::btree_map("[a-z\"\\\\]{0,4}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// A small history whose events carry `details`.
    fn history(details: &[Value]) -> Value {
        let events: Vec<Value> = (1..)
            .zip(details)
            .map(|(id, d): (i64, &Value)| {
                json!({"timestamp": "2024-01-01T00:00:00.000Z", "type": "PassStateEntered",
                       "id": id, "previousEventId": id - 1, "stateEnteredEventDetails": d})
            })
            .collect();
        json!({ "events": events })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Eight bytes at a time, a string's plain run ends where a byte at a time it does.
        #[test]
        fn a_plain_run_ends_at_the_first_quote_backslash_or_control(
            text in prop::collection::vec(any::<u8>(), 0..40),
        ) {
            let one_at_a_time = text
                .iter()
                .position(|&b| needs_escape(b))
                .unwrap_or(text.len());
            prop_assert_eq!(plain_run(&text), one_at_a_time);
        }

        /// Histories of any details, written any of the three ways, read alike.
        #[test]
        fn any_details_read_alike(details in prop::collection::vec(value(), 1..4)) {
            for text in written(&history(&details)) {
                agrees(&text);
            }
        }

        /// A history with one byte changed, added or taken out: what the one pass still reads,
        /// the typed reading reads the same (the one pass never takes what serde refuses).
        #[test]
        fn a_broken_history_is_never_read_otherwise(
            details in prop::collection::vec(value(), 1..3),
            which in 0usize..3,
            at in any::<prop::sample::Index>(),
            byte in prop::sample::select(b" \t\n{}[]:,\"\\/0123456789-.eEtrufalsn".to_vec()),
            how in 0u8..3,
        ) {
            let mut bytes = written(&history(&details))[which].clone().into_bytes();
            let i = at.index(bytes.len());
            match how {
                0 => { bytes.remove(i); }
                1 => bytes.insert(i, byte),
                _ => bytes[i] = byte,
            }
            if let Ok(text) = String::from_utf8(bytes) {
                agrees(&text);
            }
        }
    }
}
