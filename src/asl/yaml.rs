//! YAML definitions and templates: read into the same `serde_json::Value` a JSON definition
//! gives, keeping where each value was written so diagnostics land at YAML line and column.
//!
//! Read with libyaml's own parser, ported to safe Rust (`libyaml-safer`): CloudFormation, the
//! SAM CLI, cfn-lint and PyYAML all read templates with libyaml, so a template they accept is
//! accepted here, and one they refuse is refused with libyaml's words. (yaml-rust2, used
//! before, follows YAML 1.2 more strictly and refused published templates libyaml reads: a
//! flow mapping whose closing brace sits left of its content, a quoted scalar continued at its
//! key's column.) Its events carry the byte offsets of every node and keep the tags, so
//! CloudFormation's short forms (`!Ref X`, `!GetAtt A.B`, `!Sub ...`) become their long forms
//! (`{"Ref": "X"}`, `{"Fn::GetAtt": ["A", "B"]}`, `{"Fn::Sub": ...}`), as CloudFormation reads
//! them. Two short forms on one node (`!GetAZs !Ref ...`), which AWS's guide forbids, are an
//! error that says so.
//!
//! Scalars follow YAML 1.2's core schema: plain `null`/`~`/empty, `true`/`false`, integers and
//! floats are typed; anything quoted or block-styled is a string. Aliases are expanded, with a
//! bound on the expanded size so no input can exhaust memory.

use crate::asl::diagnostic::JsonPointer;
use crate::asl::source::NodeSpans;
use libyaml_safer::{Event, EventData, Mark, Parser, ScalarStyle};
use serde_json::{Map, Number, Value};
use std::collections::HashMap;
use std::io::Cursor;
use std::ops::Range;

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
    // libyaml skips a byte-order mark without counting it in its offsets.
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut parser = Parser::new();
    parser.set_input(Cursor::new(body.as_bytes()));
    let mut reader = Reader {
        parser,
        text: body,
        shift: text.len() - body.len(),
        spans: HashMap::new(),
        anchors: HashMap::new(),
        nodes: 0,
    };
    reader.document()
}

struct Reader<'t> {
    parser: Parser<Cursor<&'t [u8]>>,
    /// The text parsed (without a byte-order mark).
    text: &'t str,
    /// Bytes before `text` in the file (a byte-order mark), added to every span.
    shift: usize,
    spans: HashMap<JsonPointer, NodeSpans>,
    anchors: HashMap<String, Value>,
    nodes: usize,
}

impl Reader<'_> {
    fn error_at(&self, mark: Mark, message: impl Into<String>) -> YamlError {
        YamlError {
            line: mark.line as usize + 1,
            column: mark.column as usize + 1,
            message: message.into(),
        }
    }

    /// The byte offset of a mark in the file.
    fn offset(&self, mark: Mark) -> usize {
        (mark.index as usize).min(self.text.len()) + self.shift
    }

    fn next(&mut self) -> Result<Event, YamlError> {
        self.parser.parse().map_err(|e| {
            let mark = e.problem_mark().unwrap_or_default();
            let at = mark.index as usize;
            let mut message = match e.context() {
                Some(context) => format!("{} ({context})", e.problem()),
                None => e.problem().to_owned(),
            };
            if two_tags_at(self.text, at) {
                message = "two tags on one node: CloudFormation's short forms cannot be nested directly (`!GetAZs !Ref X`); write the inner one in full (`!GetAZs {Ref: X}`)".to_owned();
            }
            self.error_at(mark, message)
        })
    }

    fn document(&mut self) -> Result<YamlDocument, YamlError> {
        let mut value = None;
        loop {
            let event = self.next()?;
            match event.data {
                EventData::StreamStart { .. }
                | EventData::DocumentStart { .. }
                | EventData::DocumentEnd { .. } => {}
                EventData::StreamEnd => break,
                _ => {
                    if value.is_some() {
                        return Err(self.error_at(
                            event.start_mark,
                            "more than one YAML document: a definition is one document",
                        ));
                    }
                    value = Some(self.node(event, &JsonPointer::root(), None, 0)?);
                }
            }
        }
        Ok(YamlDocument {
            value: value.unwrap_or(Value::Null),
            spans: std::mem::take(&mut self.spans),
        })
    }

    fn count(&mut self, mark: Mark, n: usize) -> Result<(), YamlError> {
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
        at: &JsonPointer,
        key: Option<Range<usize>>,
        depth: usize,
    ) -> Result<Value, YamlError> {
        let mark = event.start_mark;
        if depth > MAX_DEPTH {
            return Err(self.error_at(mark, "nested too deeply"));
        }
        self.count(mark, 1)?;
        let start = self.offset(mark);
        let (value, end, anchor) = match event.data {
            EventData::Scalar {
                anchor,
                tag,
                value,
                style,
                ..
            } => (
                scalar(value, style, tag),
                self.offset(event.end_mark),
                anchor,
            ),
            EventData::SequenceStart { anchor, tag, .. } => {
                let mut items = Vec::new();
                let end = loop {
                    let event = self.next()?;
                    if let EventData::SequenceEnd = event.data {
                        break self.offset(event.end_mark);
                    }
                    let item_at = at.index(items.len());
                    items.push(self.node(event, &item_at, None, depth + 1)?);
                };
                (tagged(Value::Array(items), tag), end, anchor)
            }
            EventData::MappingStart { anchor, tag, .. } => {
                let (map, end) = self.mapping(at, depth)?;
                (tagged(Value::Object(map), tag), end, anchor)
            }
            EventData::Alias { anchor } => {
                let Some(value) = self.anchors.get(&anchor).cloned() else {
                    return Err(self.error_at(mark, format!("the alias *{anchor} names no anchor")));
                };
                self.count(mark, approximate_size(&value))?;
                (value, self.offset(event.end_mark), None)
            }
            other => {
                return Err(self.error_at(mark, format!("unexpected YAML event {other:?}")));
            }
        };
        if let Some(anchor) = anchor {
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

    /// The members of a mapping whose start event was just read, and where it ends.
    fn mapping(
        &mut self,
        at: &JsonPointer,
        depth: usize,
    ) -> Result<(Map<String, Value>, usize), YamlError> {
        let mut map = Map::new();
        loop {
            let event = self.next()?;
            let name = match event.data {
                EventData::MappingEnd => return Ok((map, self.offset(event.end_mark))),
                EventData::Scalar { value, .. } => value,
                EventData::Alias { ref anchor } => match self.anchors.get(anchor) {
                    Some(Value::String(s)) => s.clone(),
                    _ => {
                        return Err(
                            self.error_at(event.start_mark, "a mapping key must be a string")
                        )
                    }
                },
                _ => return Err(self.error_at(event.start_mark, "a mapping key must be a string")),
            };
            let key_span = self.offset(event.start_mark)..self.offset(event.end_mark);
            let value_event = self.next()?;
            let member_at = at.key(&name);
            let value = self.node(value_event, &member_at, Some(key_span), depth + 1)?;
            // The last of a repeated key wins, as in JSON.
            map.insert(name, value);
        }
    }
}

/// Whether a parse error at `at` is a second tag on a node: the error is on a tag, and the word
/// before it on the line is one too (`!GetAZs !Ref X`).
fn two_tags_at(text: &str, at: usize) -> bool {
    let (Some(before), Some(rest)) = (text.get(..at), text.get(at..)) else {
        return false;
    };
    let line = before.rsplit('\n').next().unwrap_or(before);
    rest.starts_with('!')
        && line
            .split_whitespace()
            .next_back()
            .is_some_and(|w| w.starts_with('!') && w.len() > 1)
}

fn approximate_size(v: &Value) -> usize {
    match v {
        Value::Array(items) => 1 + items.iter().map(approximate_size).sum::<usize>(),
        Value::Object(map) => 1 + map.values().map(approximate_size).sum::<usize>(),
        _ => 1,
    }
}

/// YAML's own tags (`!!str`, `!!int`, ...), as libyaml resolves them.
const CORE_TAG_PREFIX: &str = "tag:yaml.org,2002:";

/// A scalar's value: typed when plain and untagged, else a string (or what its tag says).
fn scalar(text: String, style: ScalarStyle, tag: Option<String>) -> Value {
    if let Some(tag) = tag {
        return match tag.strip_prefix(CORE_TAG_PREFIX) {
            Some("str") => Value::String(text),
            Some(_) => plain(text),
            None => tagged(Value::String(text), Some(tag)),
        };
    }
    match style {
        ScalarStyle::Plain | ScalarStyle::Any => plain(text),
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

/// Applies a CloudFormation short-form tag (`!Name`, as libyaml resolves it): `!Ref x` is
/// `{"Ref": x}`, `!GetAtt a.b` is `{"Fn::GetAtt": ["a", "b"]}`, `!Condition c` is
/// `{"Condition": c}`, any other `!Name v` is `{"Fn::Name": v}`. Other tags leave the value
/// as it is.
fn tagged(value: Value, tag: Option<String>) -> Value {
    let Some(suffix) = tag
        .as_deref()
        .and_then(|t| t.strip_prefix('!'))
        .filter(|s| !s.is_empty() && !s.starts_with('!'))
    else {
        return value;
    };
    let (name, value) = match suffix {
        "Ref" | "Condition" => (suffix.to_owned(), value),
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
        let at = JsonPointer::root()
            .key("States")
            .key("A")
            .key("Result")
            .key("s");
        assert_eq!(&text[doc.spans[&at].value.clone()], "'1'");
    }

    #[test]
    fn cloudformation_short_forms_become_long_forms() {
        let doc = parse(
            "a: !Ref X\nb: !GetAtt Fn.Arn\nc: !Sub 'arn:${AWS::Region}'\nd: !Join ['', [a, b]]\ne: !!str 1\nf: !Condition C\n",
        )
        .unwrap();
        assert_eq!(
            doc.value,
            json!({"a": {"Ref": "X"}, "b": {"Fn::GetAtt": ["Fn", "Arn"]}, "c": {"Fn::Sub": "arn:${AWS::Region}"}, "d": {"Fn::Join": ["", ["a", "b"]]}, "e": "1", "f": {"Condition": "C"}})
        );
    }

    /// What AWS's guide forbids stays an error that says so.
    #[test]
    fn two_short_forms_on_one_node_are_an_error_that_says_so() {
        let e = parse("Resources:\n  A:\n    Properties:\n      AZ: !GetAZs !Ref AWS::Region\n")
            .unwrap_err();
        assert!(e.message.contains("two tags on one node"), "{e}");
        assert_eq!(e.line, 4, "{e}");
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
        let deep = "[".repeat(100_000);
        assert!(parse(&deep).is_err());
        assert_eq!(
            parse("a: &x {b: 1}\nc: *x\n").unwrap().value,
            json!({"a": {"b": 1}, "c": {"b": 1}})
        );
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
        assert_eq!(&text[node.value.clone()], "!Ref Q");
        let at = JsonPointer::root()
            .key("Outputs")
            .key("Sample")
            .key("After");
        assert_eq!(&text[doc.spans[&at].key.clone().unwrap()], "After");
        // A quoted scalar that never closes is still an error, at its place.
        let e = parse("a:\n  b: \"x\n  y\n").unwrap_err();
        assert!(e.line >= 2, "{e}");
    }

    /// Regression (#30): published templates hold a flow mapping whose closing brace sits
    /// left of its content, even of its key; libyaml reads them, yaml-rust2 refused them
    /// (`invalid indentation`) and a folder walk left them out. (The shape of
    /// train-ml-model/template.yaml, CRLF line ends included, is read too.)
    #[test]
    fn a_flow_mapping_closed_left_of_its_content_is_read() {
        for eol in ["\n", "\r\n"] {
            let text = [
                "Statement:",
                "  - Effect: Allow",
                "    Condition: {",
                "      \"StringEquals\": {\"iam:PassedToService\": \"sagemaker.amazonaws.com\"}",
                "      }",
                "    Next: !Ref X",
                "",
            ]
            .join(eol);
            let doc = parse(&text).unwrap_or_else(|e| panic!("{eol:?}: {e}"));
            assert_eq!(
                doc.value["Statement"][0]["Condition"],
                json!({"StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}})
            );
            let at = JsonPointer::root().key("Statement").index(0).key("Next");
            assert_eq!(&text[doc.spans[&at].key.clone().unwrap()], "Next");
        }
        let text = "a:\n  b: {\n  c: 1\n }\n";
        assert_eq!(parse(text).unwrap().value, json!({"a": {"b": {"c": 1}}}));
    }

    #[test]
    fn offsets_count_bytes_after_a_byte_order_mark_and_wide_characters() {
        let text = "\u{feff}Comment: \"é😀\"\nStartAt: A\n";
        let doc = parse(text).unwrap();
        let at = JsonPointer::root().key("StartAt");
        assert_eq!(&text[doc.spans[&at].key.clone().unwrap()], "StartAt");
        assert_eq!(&text[doc.spans[&at].value.clone()], "A");
    }

    #[test]
    fn detects_yaml_by_content() {
        assert!(!looks_like_yaml("  {\"a\": 1}"));
        assert!(looks_like_yaml("# c\nStartAt: A\n"));
    }
}
