//! YAML definitions and templates: read into the same `serde_json::Value` a JSON definition
//! gives, keeping where each value was written so diagnostics land at YAML line and column.
//!
//! Built on yaml-rust2's event parser (not a serde deserializer) because the events carry the
//! source position of every node and keep the tags: CloudFormation's short forms (`!Ref X`,
//! `!GetAtt A.B`, `!Sub ...`) become their long forms (`{"Ref": "X"}`, `{"Fn::GetAtt": ["A",
//! "B"]}`, `{"Fn::Sub": ...}`), as CloudFormation itself reads them.
//!
//! Scalars follow YAML 1.2's core schema: plain `null`/`~`/empty, `true`/`false`, integers and
//! floats are typed; anything quoted or block-styled is a string. Aliases are expanded, with a
//! bound on the expanded size so no input can exhaust memory.
//!
//! One leniency of libyaml's (which PyYAML, the SAM CLI and CloudFormation read templates
//! with) is kept: a multi-line quoted scalar whose continuation lines are indented no deeper
//! than its key (`Value: "{` ... `}"` at the key's column). YAML 1.2 and yaml-rust2 refuse it;
//! published templates hold it. Such a scalar is re-read with its continuation lines indented
//! (leading blanks of those lines are not part of a quoted scalar's value, so the value is the
//! same), and positions are mapped back to the text as written.

use crate::asl::diagnostic::JsonPointer;
use crate::asl::source::NodeSpans;
use serde_json::{Map, Number, Value};
use std::collections::HashMap;
use std::ops::Range;
use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

/// Most nodes a document may expand to (aliases included): far above any real definition,
/// far below what would exhaust memory.
const MAX_NODES: usize = 1_000_000;
/// Deepest nesting accepted (the JSON reader's limit is of the same order).
const MAX_DEPTH: usize = 256;

/// A YAML document read as JSON, with where each value was written.
#[derive(Debug, Clone)]
pub struct YamlDocument {
    /// The value, as the same document written in JSON would give.
    pub value: Value,
    /// Byte spans of every node, by JSON pointer (keys of mapping entries included).
    pub spans: HashMap<JsonPointer, NodeSpans>,
}

/// Why a text is not a YAML document we can read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {message}")]
pub struct YamlError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

/// Whether a file name says YAML (`.yaml`, `.yml`).
pub fn is_yaml_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.ends_with(".yaml") || lower.ends_with(".yml")
}

/// Whether text that is not named is more likely YAML than JSON: its first significant
/// character does not open a JSON object or array.
pub fn looks_like_yaml(text: &str) -> bool {
    let body = text.trim_start_matches('\u{feff}');
    let first = body
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'));
    !matches!(first.and_then(|l| l.chars().next()), Some('{' | '[') | None)
}

/// Parses one YAML document (a stream holding more than one is an error).
pub fn parse(text: &str) -> Result<YamlDocument, YamlError> {
    let mut indented: Option<Indented> = None;
    loop {
        let current = indented.as_ref().map_or(text, |i| i.text.as_str());
        let failure = match parse_exact(current) {
            Ok(mut doc) => {
                if let Some(i) = &indented {
                    i.map_spans_back(&mut doc.spans);
                }
                return Ok(doc);
            }
            Err(failure) => failure,
        };
        let repairable = failure.error.message == QUOTED_SCALAR_INDENTATION
            && indented.as_ref().map_or(0, |i| i.repairs) < MAX_REPAIRS;
        let repaired = repairable
            && indented
                .get_or_insert_with(|| Indented::new(text))
                .indent_quoted_scalar(failure.at);
        if !repaired {
            let mut error = failure.error;
            if let Some(i) = &indented {
                error.column = i.column_back(error.line, error.column);
            }
            return Err(error);
        }
    }
}

/// yaml-rust2's message for a quoted scalar's continuation line indented too little.
const QUOTED_SCALAR_INDENTATION: &str = "invalid indentation in quoted scalar";
/// Most quoted scalars of one document re-read with their lines indented.
const MAX_REPAIRS: usize = 64;

/// A parse error with the byte offset of the marker yaml-rust2 reported.
struct Failure {
    error: YamlError,
    at: usize,
}

/// Parses `text` exactly as yaml-rust2 reads it.
fn parse_exact(text: &str) -> Result<YamlDocument, Failure> {
    let mut reader = Reader {
        parser: Parser::new_from_str(text),
        offsets: CharOffsets::new(text),
        text,
        spans: HashMap::new(),
        anchors: HashMap::new(),
        nodes: 0,
        failed_at: 0,
    };
    reader.document().map_err(|error| Failure {
        error,
        at: reader.failed_at,
    })
}

/// The text with the continuation lines of some quoted scalars indented (libyaml's leniency,
/// see the module's overview), and where blanks were inserted.
struct Indented {
    original: String,
    text: String,
    /// (byte offset in the original text, blanks inserted there), sorted by offset.
    inserted: Vec<(usize, usize)>,
    repairs: usize,
}

impl Indented {
    fn new(original: &str) -> Self {
        Indented {
            original: original.to_owned(),
            text: original.to_owned(),
            inserted: Vec::new(),
            repairs: 0,
        }
    }

    /// The original offset of an offset in the indented text (inserted blanks map to where
    /// they were inserted).
    fn offset_back(&self, at: usize) -> usize {
        let mut shift = 0;
        for &(orig, count) in &self.inserted {
            let start = orig + shift;
            if at < start {
                break;
            }
            if at < start + count {
                return orig;
            }
            shift += count;
        }
        at - shift
    }

    fn map_spans_back(&self, spans: &mut HashMap<JsonPointer, NodeSpans>) {
        let back = |r: &Range<usize>| self.offset_back(r.start)..self.offset_back(r.end);
        for node in spans.values_mut() {
            node.key = node.key.as_ref().map(back);
            node.value = back(&node.value);
        }
    }

    /// A 1-based column on `line` (1-based) of the indented text, in the original text.
    fn column_back(&self, line: usize, column: usize) -> usize {
        let line_start = self
            .original
            .split_inclusive('\n')
            .take(line.saturating_sub(1))
            .map(str::len)
            .sum::<usize>();
        let added: usize = self
            .inserted
            .iter()
            .filter(|(orig, _)| *orig == line_start)
            .map(|(_, n)| n)
            .sum();
        column.saturating_sub(added).max(1)
    }

    /// Indents the continuation lines of the quoted scalar that opens at `at` (an offset in
    /// the indented text) past its opening quote's column. False when `at` opens no
    /// terminated quoted scalar.
    fn indent_quoted_scalar(&mut self, at: usize) -> bool {
        let bytes = self.text.as_bytes();
        let Some(&quote) = bytes.get(at).filter(|b| matches!(b, b'"' | b'\'')) else {
            return false;
        };
        let line_start = self.text[..at].rfind('\n').map_or(0, |i| i + 1);
        let needed = self.text[line_start..at].chars().count() + 1;
        let mut short_lines = Vec::new();
        let mut i = at + 1;
        let closed = loop {
            match bytes.get(i) {
                None => break false,
                Some(b'\\') if quote == b'"' => i += 2,
                Some(b'\'') if quote == b'\'' && bytes.get(i + 1) == Some(&b'\'') => i += 2,
                Some(&b) if b == quote => break true,
                Some(b'\n') => {
                    let start = i + 1;
                    let blanks = bytes[start..]
                        .iter()
                        .take_while(|b| matches!(b, b' ' | b'\t'))
                        .count();
                    let blank_line =
                        matches!(bytes.get(start + blanks), Some(b'\n' | b'\r') | None);
                    if blanks < needed && !blank_line {
                        short_lines.push((start, needed - blanks));
                    }
                    i = start + blanks;
                }
                Some(_) => i += 1,
            }
        };
        if !closed || short_lines.is_empty() {
            return false;
        }
        // Offsets in the current text, mapped back before any of this repair's insertions.
        let short_lines: Vec<(usize, usize)> = short_lines
            .into_iter()
            .map(|(start, count)| (self.offset_back(start), count))
            .collect();
        for (orig, count) in short_lines {
            match self.inserted.iter_mut().find(|(o, _)| *o == orig) {
                Some(existing) => existing.1 += count,
                None => self.inserted.push((orig, count)),
            }
        }
        self.inserted.sort_unstable();
        let mut text = String::with_capacity(self.original.len() + self.inserted.len() * 8);
        let mut from = 0;
        for &(orig, count) in &self.inserted {
            text.push_str(&self.original[from..orig]);
            text.extend(std::iter::repeat_n(' ', count));
            from = orig;
        }
        text.push_str(&self.original[from..]);
        self.text = text;
        self.repairs += 1;
        true
    }
}

/// Char index → byte offset (yaml-rust2's markers count characters).
struct CharOffsets {
    /// Byte offset of every char, only built when the text is not ASCII.
    table: Option<Vec<usize>>,
    len: usize,
}

impl CharOffsets {
    fn new(text: &str) -> Self {
        CharOffsets {
            table: (!text.is_ascii()).then(|| text.char_indices().map(|(i, _)| i).collect()),
            len: text.len(),
        }
    }

    fn byte(&self, char_index: usize) -> usize {
        match &self.table {
            None => char_index.min(self.len),
            Some(t) => t.get(char_index).copied().unwrap_or(self.len),
        }
    }
}

struct Reader<'t> {
    parser: Parser<std::str::Chars<'t>>,
    offsets: CharOffsets,
    text: &'t str,
    spans: HashMap<JsonPointer, NodeSpans>,
    anchors: HashMap<usize, Value>,
    nodes: usize,
    /// Byte offset of the marker of the last parse error.
    failed_at: usize,
}

impl Reader<'_> {
    fn error_at(&self, mark: &Marker, message: impl Into<String>) -> YamlError {
        YamlError {
            line: mark.line().max(1),
            column: mark.col() + 1,
            message: message.into(),
        }
    }

    fn next(&mut self) -> Result<(Event, Marker), YamlError> {
        self.parser.next_token().map_err(|e| {
            self.failed_at = self.offsets.byte(e.marker().index());
            YamlError {
                line: e.marker().line().max(1),
                column: e.marker().col() + 1,
                message: e.info().to_owned(),
            }
        })
    }

    fn document(&mut self) -> Result<YamlDocument, YamlError> {
        let mut value = None;
        loop {
            let (event, mark) = self.next()?;
            match event {
                Event::StreamStart | Event::DocumentStart | Event::DocumentEnd | Event::Nothing => {
                }
                Event::StreamEnd => break,
                event => {
                    if value.is_some() {
                        return Err(self.error_at(
                            &mark,
                            "more than one YAML document: a definition is one document",
                        ));
                    }
                    value = Some(self.node(event, mark, &JsonPointer::root(), None, 0)?);
                }
            }
        }
        Ok(YamlDocument {
            value: value.unwrap_or(Value::Null),
            spans: std::mem::take(&mut self.spans),
        })
    }

    fn count(&mut self, mark: &Marker, n: usize) -> Result<(), YamlError> {
        self.nodes = self.nodes.saturating_add(n);
        if self.nodes > MAX_NODES {
            return Err(self.error_at(mark, "the document expands to too many values (aliases?)"));
        }
        Ok(())
    }

    /// Reads the node that `event` starts; `key` is the span of its mapping key, if any.
    fn node(
        &mut self,
        event: Event,
        mark: Marker,
        at: &JsonPointer,
        key: Option<Range<usize>>,
        depth: usize,
    ) -> Result<Value, YamlError> {
        if depth > MAX_DEPTH {
            return Err(self.error_at(&mark, "nested too deeply"));
        }
        self.count(&mark, 1)?;
        let start = self.offsets.byte(mark.index());
        let (value, end, anchor) = match event {
            Event::Scalar(text, style, anchor, tag) => {
                let len = text.len()
                    + match style {
                        TScalarStyle::SingleQuoted | TScalarStyle::DoubleQuoted => 2,
                        _ => 0,
                    };
                let tag = tag.map(|t| (t.handle, t.suffix));
                let value = scalar(text, style, tag.as_ref());
                (value, (start + len).min(self.text.len()), anchor)
            }
            Event::SequenceStart(anchor, tag) => {
                let mut items = Vec::new();
                let end = loop {
                    let (event, mark) = self.next()?;
                    if let Event::SequenceEnd = event {
                        break self.offsets.byte(mark.index());
                    }
                    let item_at = at.index(items.len());
                    items.push(self.node(event, mark, &item_at, None, depth + 1)?);
                };
                (
                    tagged(Value::Array(items), tag.map(|t| (t.handle, t.suffix))),
                    end,
                    anchor,
                )
            }
            Event::MappingStart(anchor, tag) => {
                let mut map = Map::new();
                let end = loop {
                    let (event, mark) = self.next()?;
                    let name = match event {
                        Event::MappingEnd => break self.offsets.byte(mark.index()),
                        Event::Scalar(text, ..) => text,
                        Event::Alias(id) => match self.anchors.get(&id) {
                            Some(Value::String(s)) => s.clone(),
                            _ => return Err(self.error_at(&mark, "a mapping key must be a string")),
                        },
                        _ => return Err(self.error_at(&mark, "a mapping key must be a string")),
                    };
                    let key_start = self.offsets.byte(mark.index());
                    let key_span = key_start..(key_start + name.len()).min(self.text.len());
                    let (event, vmark) = self.next()?;
                    let member_at = at.key(&name);
                    let value = self.node(event, vmark, &member_at, Some(key_span), depth + 1)?;
                    // The last of a repeated key wins, as in JSON.
                    map.insert(name, value);
                };
                (
                    tagged(Value::Object(map), tag.map(|t| (t.handle, t.suffix))),
                    end,
                    anchor,
                )
            }
            Event::Alias(id) => {
                let Some(value) = self.anchors.get(&id).cloned() else {
                    return Err(self.error_at(&mark, "an alias names no anchor"));
                };
                self.count(&mark, approximate_size(&value))?;
                (value, start, 0)
            }
            other => {
                return Err(self.error_at(&mark, format!("unexpected YAML event {other:?}")));
            }
        };
        if anchor > 0 {
            self.anchors.insert(anchor, value.clone());
        }
        self.spans.insert(
            at.clone(),
            NodeSpans {
                key,
                value: start..end.max(start),
            },
        );
        Ok(value)
    }
}

fn approximate_size(v: &Value) -> usize {
    match v {
        Value::Array(items) => 1 + items.iter().map(approximate_size).sum::<usize>(),
        Value::Object(map) => 1 + map.values().map(approximate_size).sum::<usize>(),
        _ => 1,
    }
}

/// A scalar's value: typed when plain and untagged, else a string (or what its tag says).
fn scalar(text: String, style: TScalarStyle, tag: Option<&(String, String)>) -> Value {
    if let Some(tag) = tag {
        let standard = tag.0 == "!!" || tag.0 == "tag:yaml.org,2002:";
        return match (standard, tag.1.as_str()) {
            (true, "str") => Value::String(text),
            (true, _) => plain(text),
            (false, _) => tagged(Value::String(text), Some(tag.clone())),
        };
    }
    match style {
        TScalarStyle::Plain => plain(text),
        _ => Value::String(text),
    }
}

/// YAML 1.2 core schema for a plain scalar.
fn plain(text: String) -> Value {
    match text.as_str() {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        _ => {}
    }
    let digits = text.strip_prefix(['-', '+']).unwrap_or(&text);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(i) = text.parse::<i64>() {
            return Value::Number(i.into());
        }
    }
    let numeric = digits
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+'))
        && digits.bytes().any(|b| b.is_ascii_digit());
    if numeric {
        if let Some(n) = text.parse::<f64>().ok().and_then(Number::from_f64) {
            return Value::Number(n);
        }
    }
    Value::String(text)
}

/// Applies a CloudFormation short-form tag: `!Ref x` is `{"Ref": x}`, `!GetAtt a.b` is
/// `{"Fn::GetAtt": ["a", "b"]}`, `!Condition c` is `{"Condition": c}`, any other `!Name v`
/// is `{"Fn::Name": v}`. Other tags leave the value as it is.
fn tagged(value: Value, tag: Option<(String, String)>) -> Value {
    let Some((handle, suffix)) = tag else {
        return value;
    };
    if handle != "!" || suffix.is_empty() {
        return value;
    }
    let (name, value) = match suffix.as_str() {
        "Ref" | "Condition" => (suffix.clone(), value),
        "GetAtt" => match value {
            Value::String(s) => match s.split_once('.') {
                Some((res, attr)) => ("Fn::GetAtt".to_owned(), serde_json::json!([res, attr])),
                None => ("Fn::GetAtt".to_owned(), Value::String(s)),
            },
            other => ("Fn::GetAtt".to_owned(), other),
        },
        _ => (format!("Fn::{suffix}"), value),
    };
    let mut map = Map::new();
    map.insert(name, value);
    Value::Object(map)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_a_definition_with_types_and_positions() {
        let text = "StartAt: A\nStates:\n  A:\n    Type: Pass\n    Result: {n: 1, f: 1.5, b: true, z: ~, s: '1'}\n    End: true\n";
        let doc = parse(text).unwrap();
        assert_eq!(
            doc.value,
            json!({"StartAt": "A", "States": {"A": {"Type": "Pass", "Result": {"n": 1, "f": 1.5, "b": true, "z": null, "s": "1"}, "End": true}}})
        );
        let at = JsonPointer::root().key("States").key("A").key("Type");
        let node = &doc.spans[&at];
        assert_eq!(&text[node.key.clone().unwrap()], "Type");
        assert_eq!(&text[node.value.clone()], "Pass");
    }

    #[test]
    fn cloudformation_short_forms_become_long_forms() {
        let doc = parse(
            "a: !Ref X\nb: !GetAtt Fn.Arn\nc: !Sub 'arn:${AWS::Region}'\nd: !Join ['', [a, b]]\n",
        )
        .unwrap();
        assert_eq!(
            doc.value,
            json!({"a": {"Ref": "X"}, "b": {"Fn::GetAtt": ["Fn", "Arn"]}, "c": {"Fn::Sub": "arn:${AWS::Region}"}, "d": {"Fn::Join": ["", ["a", "b"]]}})
        );
    }

    #[test]
    fn bad_yaml_and_alias_bombs_are_errors() {
        assert!(parse("a: [1, 2\n").is_err());
        assert!(parse("a: 1\n---\nb: 2\n").is_err());
        let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            bomb.push_str(&format!(
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n",
                p = i - 1
            ));
        }
        assert!(parse(&bomb).is_err());
    }

    /// Regression: text-processing-sqs-express/template.yaml (AWS's workflows collection)
    /// holds a double-quoted scalar whose last line is indented as far as its key; libyaml
    /// reads it, and so do we, with positions in the text as written.
    #[test]
    fn a_quoted_scalar_indented_as_far_as_its_key_is_read_as_libyaml_reads_it() {
        let text = "Outputs:\n  Sample:\n    Value: \"{\n      \\\"input\\\": \\\"x\\\"\n    }\"\n    After: 'a\n    b'\n  Next: !Ref Q\n";
        let doc = parse(text).unwrap();
        assert_eq!(
            doc.value,
            json!({"Outputs": {"Sample": {"Value": "{ \"input\": \"x\" }", "After": "a b"}, "Next": {"Ref": "Q"}}})
        );
        let at = JsonPointer::root().key("Outputs").key("Next");
        let node = &doc.spans[&at];
        assert_eq!(&text[node.key.clone().unwrap()], "Next");
        assert_eq!(&text[node.value.clone()], "Q");
        let at = JsonPointer::root()
            .key("Outputs")
            .key("Sample")
            .key("After");
        assert_eq!(&text[doc.spans[&at].key.clone().unwrap()], "After");
        // A quoted scalar that never closes is still an error, at its place.
        let e = parse("a:\n  b: \"x\n  y\n").unwrap_err();
        assert_eq!(e.line, 2, "{e}");
    }

    #[test]
    fn detects_yaml_by_content() {
        assert!(!looks_like_yaml("  {\"a\": 1}"));
        assert!(looks_like_yaml("# c\nStartAt: A\n"));
    }
}
