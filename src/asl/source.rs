//! Definition text: parsing it the way AWS reports failures, and mapping JSON pointers back to
//! places in it.
//!
//! Two jobs live here because both need to read the raw text rather than a `serde_json::Value`:
//!
//! - [`parse_json`] parses with serde_json and, when that fails, re-reads the text with a small
//!   hand-written scanner that explains the first problem twice: once for a person
//!   ([`SyntaxError::message`], positioned at the offending token) and once the way AWS's Jackson
//!   parser words it ([`SyntaxErrorKind::InvalidJson`]), so `--format json` can match AWS's
//!   `ValidateStateMachineDefinition` response. [`syntax_diagnostic`] turns either into a
//!   [`Diagnostic`].
//! - [`SpanIndex`] runs the same scanner over valid text and records, for every JSON pointer, the
//!   byte span of its key and of its value, plus every duplicate key (serde_json silently keeps
//!   the last one). Reporters build it only when they have something to report.
//!
//! The scanner is a single linear pass with an explicit stack: no recursion, so no input can
//! overflow the stack, and every byte string is handled without panicking. The index is a tree
//! of (parent, token) links rather than a map of full pointer strings, so its size stays linear
//! in the text however deep the nesting goes.

use crate::asl::diagnostic::{Code, Diagnostic, Diagnostics, JsonPointer, Location, Severity};
use serde_json::Value;
use std::collections::HashMap;
use std::fmt;
use std::ops::Range;

/// AWS's message when the definition is empty or is JSON but not an object.
pub const NOT_AN_OBJECT_MESSAGE: &str = "Definition must be a valid JSON object";

/// What kind of unusable text a [`SyntaxError`] describes; decides AWS's code and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyntaxErrorKind {
    /// Empty or only whitespace. AWS: `SCHEMA_VALIDATION_FAILED`, [`NOT_AN_OBJECT_MESSAGE`].
    Empty,
    /// Valid JSON, but not an object (`[]`, `3`, `"x"`). AWS: as for [`SyntaxErrorKind::Empty`].
    NotAnObject,
    /// Not JSON. AWS: `INVALID_JSON_DESCRIPTION` with a Jackson parser message.
    InvalidJson {
        /// The message AWS would give: Jackson's wording, then `\n at ` and the location.
        aws_message: String,
        /// AWS's `location`: `[Source: (String)"…"; line: L, column: C]`, where Jackson's column is
        /// just past the offending token.
        aws_location: String,
    },
    /// Objects and arrays nested deeper than the parser goes ([`MAX_NESTING`]). AWS:
    /// `TOO_DEEPLY_NESTED`.
    TooDeeplyNested,
}

/// How deep objects and arrays may nest in a definition (serde_json's recursion limit, which
/// keeps every later recursive walk of the definition within the stack; see [`crate::depth`]).
pub const MAX_NESTING: usize = crate::depth::VALUE_DEPTH;

/// Why a definition's text cannot be used as a definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    /// 1-based line of the offending token.
    pub line: usize,
    /// 1-based column of the offending token, in characters.
    pub column: usize,
    /// What is wrong, for a person.
    pub message: String,
    /// Byte span of the offending token (empty at end of input), for underlining.
    pub span: Range<usize>,
    /// How AWS classifies it.
    pub kind: SyntaxErrorKind,
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.column, self.message
        )
    }
}

impl std::error::Error for SyntaxError {}

/// Parses a definition: the text must be one JSON object (a leading UTF-8 byte-order mark is
/// skipped). Anything else is a [`SyntaxError`] that [`syntax_diagnostic`] turns into AWS's
/// diagnostic.
///
/// sfn-local is stricter than AWS in one way: Jackson ignores anything after the first value,
/// while this rejects trailing content, which is almost always a bad merge or a paste error.
pub fn parse_json(text: &str) -> Result<Value, SyntaxError> {
    let body_start = bom_len(text);
    let body = &text[body_start..];
    if body.bytes().all(is_json_whitespace) {
        let lines = Lines::new(text);
        let (line, column) = lines.line_col(text, text.len());
        return Err(SyntaxError {
            line,
            column,
            message: "the definition is empty; it must be a JSON object".to_owned(),
            span: text.len()..text.len(),
            kind: SyntaxErrorKind::Empty,
        });
    }
    match serde_json::from_str::<Value>(body) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(other) => {
            let start = body_start + (body.len() - body.trim_start_matches(is_json_ws_char).len());
            let end = body_start + body.trim_end_matches(is_json_ws_char).len();
            let (line, column) = Lines::new(text).line_col(text, start);
            Err(SyntaxError {
                line,
                column,
                message: format!(
                    "the definition is {}; it must be a JSON object",
                    describe_value(&other)
                ),
                span: start..end,
                kind: SyntaxErrorKind::NotAnObject,
            })
        }
        Err(serde_error) => Err(match Scanner::checking(text).run() {
            Err(scan_error) => scan_error.into_syntax_error(text),
            // The scanner accepts what serde_json refuses only in corners (nesting deeper than
            // serde_json's 127 levels, numbers beyond f64, lone surrogate escapes): report
            // serde_json's own words at its position.
            Ok(_) if serde_error.to_string().starts_with("recursion limit exceeded") => {
                SyntaxError {
                    kind: SyntaxErrorKind::TooDeeplyNested,
                    message: format!(
                        "the definition nests objects and arrays more than {MAX_NESTING} levels deep"
                    ),
                    ..serde_syntax_error(text, body_start, &serde_error)
                }
            }
            Ok(_) => serde_syntax_error(text, body_start, &serde_error),
        }),
    }
}

/// The diagnostic AWS gives for a [`SyntaxError`]: `SCHEMA_VALIDATION_FAILED` "Definition must
/// be a valid JSON object" (no location) for empty text or a non-object, else
/// `INVALID_JSON_DESCRIPTION` with Jackson's message and a [`Location::Text`] at the offending
/// token (the Jackson location stays at the end of the message, as AWS has it).
pub fn syntax_diagnostic(_text: &str, error: &SyntaxError) -> Diagnostic {
    match &error.kind {
        SyntaxErrorKind::Empty | SyntaxErrorKind::NotAnObject => Diagnostic {
            severity: Severity::Error,
            code: Code::SchemaValidationFailed,
            message: NOT_AN_OBJECT_MESSAGE.to_owned(),
            location: Location::None,
            related: Vec::new(),
        },
        SyntaxErrorKind::TooDeeplyNested => Diagnostic {
            severity: Severity::Error,
            code: Code::TooDeeplyNested,
            message: format!(
                "The definition is too deeply nested: objects and arrays nest more than {MAX_NESTING} levels deep"
            ),
            location: Location::Text {
                line: error.line,
                column: error.column,
            },
            related: Vec::new(),
        },
        SyntaxErrorKind::InvalidJson { aws_message, .. } => Diagnostic {
            severity: Severity::Error,
            code: Code::InvalidJsonDescription,
            message: aws_message.clone(),
            location: Location::Text {
                line: error.line,
                column: error.column,
            },
            related: Vec::new(),
        },
    }
}

/// Splits a Jackson-style message into its text and its `[Source: …; line: L, column: C]`
/// location, when it ends with one (`"…\n at [Source: …]"`).
pub fn split_aws_location(message: &str) -> (&str, Option<&str>) {
    const MARKER: &str = "\n at [Source: ";
    match message.rfind(MARKER) {
        Some(i) if message.ends_with(']') => (&message[..i], Some(&message[i + 5..])),
        _ => (message, None),
    }
}

/// Every duplicate key in the text: the pointer and the byte span of each repeated occurrence
/// (the one serde_json keeps). Stops quietly at the first syntax error.
pub fn duplicate_keys(text: &str) -> Vec<(JsonPointer, Range<usize>)> {
    let mut scanner = Scanner::new(text);
    let _ = scanner.run();
    scanner.out.duplicates
}

/// [`duplicate_keys`] as `DUPLICATE_JSON_KEY` errors, one per repeated occurrence.
pub fn duplicate_key_diagnostics(text: &str) -> Diagnostics {
    let mut diags = Diagnostics::default();
    for (pointer, _) in duplicate_keys(text) {
        let key = pointer.tokens().last().unwrap_or_default();
        diags.error(
            Code::DuplicateJsonKey,
            &pointer,
            format!("Duplicate key '{key}': only the last value is used"),
        );
    }
    diags
}

/// The byte spans of one JSON value and, for an object member, of its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSpans {
    /// The quoted key, for object members.
    pub key: Option<Range<usize>>,
    /// The whole value: a scalar token, or `{`…`}` / `[`…`]` inclusive.
    pub value: Range<usize>,
}

/// Maps JSON pointers to places in a definition's text. Built in one linear pass; for a
/// duplicate key it describes the last occurrence, the one serde_json keeps.
#[derive(Debug, Clone)]
pub struct SpanIndex<'t> {
    text: &'t str,
    tree: Tree,
    duplicates: Vec<(JsonPointer, Range<usize>)>,
    lines: Lines,
    /// For a YAML text, the spans its reader recorded (the JSON scanner has nothing to say).
    yaml: Option<HashMap<JsonPointer, NodeSpans>>,
}

impl<'t> SpanIndex<'t> {
    /// Indexes `text`. Never fails: on a syntax error it keeps what it saw before it.
    pub fn new(text: &'t str) -> Self {
        let mut scanner = Scanner::new(text);
        let _ = scanner.run();
        SpanIndex {
            text,
            tree: scanner.out.tree,
            duplicates: scanner.out.duplicates,
            lines: Lines::new(text),
            yaml: None,
        }
    }

    /// Indexes a YAML text (an unreadable one indexes nothing: diagnostics land at line 1).
    pub fn new_yaml(text: &'t str) -> Self {
        SpanIndex {
            text,
            tree: Scanner::new("").out.tree,
            duplicates: Vec::new(),
            lines: Lines::new(text),
            yaml: Some(
                crate::asl::yaml::parse(text)
                    .map(|d| d.spans)
                    .unwrap_or_default(),
            ),
        }
    }

    /// The text this index describes.
    pub fn text(&self) -> &'t str {
        self.text
    }

    /// The spans recorded for exactly this pointer.
    pub fn node(&self, pointer: &JsonPointer) -> Option<&NodeSpans> {
        if let Some(yaml) = &self.yaml {
            return yaml.get(pointer);
        }
        self.tree.find(pointer)
    }

    /// The byte span of the quoted key of an object member.
    pub fn key_span(&self, pointer: &JsonPointer) -> Option<Range<usize>> {
        self.node(pointer)?.key.clone()
    }

    /// The byte span of the value at the pointer.
    pub fn value_span(&self, pointer: &JsonPointer) -> Option<Range<usize>> {
        self.node(pointer).map(|n| n.value.clone())
    }

    /// Where to point for a diagnostic at `pointer`: its key, else its value, else the nearest
    /// ancestor that exists (a missing field is reported at its object's key). The root is the
    /// opening `{`; an empty span at 0 when there is nothing at all.
    pub fn span(&self, pointer: &JsonPointer) -> Range<usize> {
        let mut at = pointer.clone();
        loop {
            if at.as_str().is_empty() {
                return match self.node(&at) {
                    Some(root) if root.value.start < root.value.end => {
                        let start = root.value.start;
                        start..start + char_len_at(self.text, start)
                    }
                    _ => 0..0,
                };
            }
            if let Some(node) = self.node(&at) {
                return node.key.clone().unwrap_or_else(|| node.value.clone());
            }
            at = at.parent();
        }
    }

    /// Where, in the text, byte `offset` of the decoded string value at `pointer` is written:
    /// escapes (`\n`, `\u00e9`, ...) take more room in the text than in the string.
    pub fn string_offset(&self, pointer: &JsonPointer, offset: usize) -> Option<usize> {
        let value = self.value_span(pointer)?;
        let raw = self.text.get(value.clone())?;
        let mut chars = raw.char_indices();
        if chars.next()?.1 != '"' {
            return None;
        }
        let mut decoded = 0;
        while let Some((i, c)) = chars.next() {
            if decoded >= offset || c == '"' {
                return Some(value.start + i);
            }
            decoded += match c {
                '\\' => match chars.next()?.1 {
                    'u' => {
                        let hex: String = (0..4)
                            .filter_map(|_| chars.next().map(|(_, h)| h))
                            .collect();
                        u32::from_str_radix(&hex, 16)
                            .ok()
                            .and_then(char::from_u32)
                            .map_or(3, char::len_utf8)
                    }
                    _ => 1,
                },
                c => c.len_utf8(),
            };
        }
        None
    }

    /// Pointers of repeated keys (the later occurrences), in text order.
    pub fn duplicate_keys(&self) -> Vec<JsonPointer> {
        self.duplicates.iter().map(|(p, _)| p.clone()).collect()
    }

    /// Repeated keys with the byte span of each later occurrence's key.
    pub fn duplicate_key_spans(&self) -> &[(JsonPointer, Range<usize>)] {
        &self.duplicates
    }

    /// 1-based line and column (in characters) of a byte offset; offsets past the end or inside
    /// a character are clamped.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        self.lines.line_col(self.text, offset)
    }

    /// The byte offset of a 1-based line and column (in characters); clamped to the text.
    pub fn offset(&self, line: usize, column: usize) -> usize {
        self.lines.offset(self.text, line, column)
    }

    /// Where a diagnostic's location starts: 1-based line and column. Pointers use
    /// [`SpanIndex::span`]; text locations are taken as they are; no location is line 1, column 1.
    pub fn location_line_col(&self, location: &Location) -> (usize, usize) {
        match location {
            Location::Pointer(p) => self.line_col(self.span(p).start),
            Location::InString { pointer, offset } => match self.string_offset(pointer, *offset) {
                Some(at) => self.line_col(at),
                None => self.line_col(self.span(pointer).start),
            },
            Location::Field { pointer, key } => self.line_col(self.span(&pointer.key(key)).start),
            Location::Text { line, column } => (*line, *column),
            Location::None => (1, 1),
        }
    }
}

/// Line starts of a text, for offset ↔ line/column. Lines end at `\n`.
#[derive(Debug, Clone)]
struct Lines {
    starts: Vec<usize>,
}

impl Lines {
    fn new(text: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(
            text.bytes()
                .enumerate()
                .filter(|&(_, b)| b == b'\n')
                .map(|(i, _)| i + 1),
        );
        Lines { starts }
    }

    fn line_col(&self, text: &str, offset: usize) -> (usize, usize) {
        let offset = floor_char_boundary(text, offset);
        let line = self.starts.partition_point(|&s| s <= offset).max(1);
        let start = self.starts[line - 1];
        (line, text[start..offset].chars().count() + 1)
    }

    fn offset(&self, text: &str, line: usize, column: usize) -> usize {
        let Some(&start) = self.starts.get(line.max(1) - 1) else {
            return text.len();
        };
        let mut offset = start;
        for c in text[start..].chars().take(column.max(1) - 1) {
            if c == '\n' {
                break;
            }
            offset += c.len_utf8();
        }
        offset
    }
}

fn floor_char_boundary(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

fn char_len_at(text: &str, offset: usize) -> usize {
    text[offset..].chars().next().map_or(0, char::len_utf8)
}

fn bom_len(text: &str) -> usize {
    if text.starts_with('\u{feff}') {
        '\u{feff}'.len_utf8()
    } else {
        0
    }
}

fn is_json_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

fn is_json_ws_char(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

fn describe_value(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A [`SyntaxError`] from serde_json's error, for the rare text only serde_json refuses.
fn serde_syntax_error(text: &str, body_start: usize, error: &serde_json::Error) -> SyntaxError {
    let lines = Lines::new(text);
    // serde_json counts columns in bytes; turn its position into a byte offset of `text`.
    let line_start = lines
        .starts
        .get(error.line().max(1) - 1)
        .copied()
        .unwrap_or(text.len());
    let line_start = if error.line() <= 1 {
        body_start
    } else {
        line_start
    };
    let offset = floor_char_boundary(text, line_start + error.column().saturating_sub(1));
    let (line, column) = lines.line_col(text, offset);
    let full = error.to_string();
    let message = match full.rfind(" at line ") {
        Some(i) => full[..i].to_owned(),
        None => full,
    };
    let jackson = JacksonPosition::of(text, offset);
    let aws_location = jackson.location(text);
    SyntaxError {
        line,
        column,
        message: message.clone(),
        span: offset..offset + char_len_at(text, offset),
        kind: SyntaxErrorKind::InvalidJson {
            aws_message: format!("{message}\n at {aws_location}"),
            aws_location,
        },
    }
}

// ---------------------------------------------------------------------------------------------
// Jackson emulation: how AWS words and locates JSON errors.

/// Jackson's error position: 1-based row, and a column counted in UTF-16 units from the row
/// start, just past the offending character (Jackson reports where its input pointer is).
#[derive(Debug, Clone, Copy)]
struct JacksonPosition {
    row: usize,
    column: usize,
}

impl JacksonPosition {
    /// Position of a byte offset counting `\n`, `\r\n` and lone `\r` as line breaks. Used where
    /// the scanner's own row tracking is not available.
    fn of(text: &str, offset: usize) -> Self {
        let offset = floor_char_boundary(text, offset);
        let bytes = text.as_bytes();
        let (mut row, mut row_start) = (1, 0);
        let mut i = 0;
        while i < offset {
            match bytes[i] {
                b'\n' => (row, row_start) = (row + 1, i + 1),
                b'\r' if bytes.get(i + 1) != Some(&b'\n') => (row, row_start) = (row + 1, i + 1),
                _ => {}
            }
            i += 1;
        }
        JacksonPosition {
            row,
            column: utf16_len(&text[row_start..offset]) + 1,
        }
    }

    /// `[Source: (String)"…"; line: L, column: C]`, Jackson's `JsonLocation` text, which quotes
    /// at most 500 UTF-16 units of the source.
    fn location(self, text: &str) -> String {
        format!(
            "[Source: {}; line: {}, column: {}]",
            jackson_source_description(text),
            self.row,
            self.column
        )
    }
}

fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

fn jackson_source_description(text: &str) -> String {
    const MAX_CONTENT_SNIPPET: usize = 500;
    let total = utf16_len(text);
    let mut shown = String::new();
    let mut units = 0;
    for c in text.chars() {
        if units + c.len_utf16() > MAX_CONTENT_SNIPPET {
            break;
        }
        units += c.len_utf16();
        shown.push(c);
    }
    let mut out = format!("(String)\"{shown}\"");
    if total > units {
        out.push_str(&format!("[truncated {} chars]", total - units));
    }
    out
}

/// Jackson's `_getCharDesc`.
fn jackson_char_desc(c: char) -> String {
    let code = u32::from(c);
    if code < 0x20 || (0x7f..=0x9f).contains(&code) {
        format!("(CTRL-CHAR, code {code})")
    } else if code > 255 {
        format!("'{c}' (code {code} / 0x{code:x})")
    } else {
        format!("'{c}' (code {code})")
    }
}

/// What Jackson lists as acceptable when it expected a value.
const JACKSON_VALUE_LIST: &str =
    "(JSON String, Number, Array, Object or token 'null', 'true' or 'false')";

/// Jackson's cap on the length of an unrecognized token it quotes.
const MAX_ERROR_TOKEN_LENGTH: usize = 256;

/// Java's `Character.isJavaIdentifierStart`, closely enough for error messages.
fn is_identifier_start(c: char) -> bool {
    c.is_alphabetic() || c == '_' || c == '$'
}

/// Java's `Character.isJavaIdentifierPart`, closely enough for error messages.
fn is_identifier_part(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

// ---------------------------------------------------------------------------------------------
// The scanner.

/// The first problem in the text, worded for a person and for AWS.
#[derive(Debug)]
struct ScanError {
    /// Bytes of the offending token, for the person.
    span: Range<usize>,
    /// What a person should fix.
    human: String,
    /// Jackson's message (without location).
    jackson: String,
    /// Where Jackson's input pointer stands.
    jackson_at: JacksonPosition,
}

impl ScanError {
    fn into_syntax_error(self, text: &str) -> SyntaxError {
        let (line, column) = Lines::new(text).line_col(text, self.span.start);
        let aws_location = self.jackson_at.location(text);
        SyntaxError {
            line,
            column,
            message: self.human,
            span: self.span,
            kind: SyntaxErrorKind::InvalidJson {
                aws_message: format!("{}\n at {aws_location}", self.jackson),
                aws_location,
            },
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Container {
    Object,
    Array,
}

impl Container {
    fn name(self) -> &'static str {
        match self {
            Container::Object => "Object",
            Container::Array => "Array",
        }
    }

    fn closer(self) -> char {
        match self {
            Container::Object => '}',
            Container::Array => ']',
        }
    }
}

/// Index of a node in a [`Tree`].
type NodeId = usize;

/// The root's [`NodeId`].
const ROOT: NodeId = 0;

/// One JSON value seen by the scanner.
#[derive(Debug, Clone)]
struct TreeNode {
    parent: NodeId,
    /// The unescaped key, or the array index as text (as in a pointer).
    token: String,
    spans: NodeSpans,
    /// Whether the value has started (the root exists before anything is read).
    present: bool,
}

/// The JSON values of a text as (parent, token) links: linear in the text at any depth.
#[derive(Debug, Clone)]
struct Tree {
    nodes: Vec<TreeNode>,
    /// The current child of a node for a token; a duplicate key replaces the earlier child,
    /// which, with its whole subtree, becomes unreachable (serde_json keeps the last one).
    children: HashMap<(NodeId, String), NodeId>,
}

impl Default for Tree {
    fn default() -> Self {
        Tree {
            nodes: vec![TreeNode {
                parent: ROOT,
                token: String::new(),
                spans: NodeSpans {
                    key: None,
                    value: 0..0,
                },
                present: false,
            }],
            children: HashMap::new(),
        }
    }
}

impl Tree {
    /// Adds a child; returns its id and whether it replaced a child with the same token.
    fn add_child(
        &mut self,
        parent: NodeId,
        token: String,
        key: Option<Range<usize>>,
    ) -> (NodeId, bool) {
        let id = self.nodes.len();
        let at = key.as_ref().map_or(0, |k| k.end);
        self.nodes.push(TreeNode {
            parent,
            token: token.clone(),
            spans: NodeSpans { key, value: at..at },
            present: false,
        });
        let replaced = self.children.insert((parent, token), id).is_some();
        (id, replaced)
    }

    fn find(&self, pointer: &JsonPointer) -> Option<&NodeSpans> {
        let mut id = ROOT;
        for token in pointer.tokens() {
            id = *self.children.get(&(id, token))?;
        }
        let node = &self.nodes[id];
        (node.present || node.spans.key.is_some()).then_some(&node.spans)
    }

    fn pointer(&self, mut id: NodeId) -> JsonPointer {
        let mut tokens = Vec::new();
        while id != ROOT {
            let node = &self.nodes[id];
            tokens.push(node.token.as_str());
            id = node.parent;
        }
        tokens
            .iter()
            .rev()
            .fold(JsonPointer::root(), |pointer, token| pointer.key(token))
    }
}

/// An open object or array.
struct Frame {
    container: Container,
    /// Byte offset of its `{` or `[`.
    open: usize,
    /// Jackson's row bookkeeping at the opener; its column is computed only for an error,
    /// since counting it for every opener would be quadratic in deep nesting.
    open_row: usize,
    open_row_start: usize,
    node: NodeId,
    next_index: usize,
}

impl Frame {
    /// Jackson's position of the opener: the column of the opener itself.
    fn open_at(&self, text: &str) -> JacksonPosition {
        let start = floor_char_boundary(text, self.open_row_start).min(self.open);
        JacksonPosition {
            row: self.open_row,
            column: utf16_len(text.get(start..self.open).unwrap_or_default()) + 1,
        }
    }
}

/// What the scanner expects next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    /// A value (the root, after `:` or after `,` in an array).
    Value,
    /// A key or `}` right after `{`.
    KeyOrEnd,
    /// A key after `,`.
    Key,
    /// The `:` after a key.
    Colon,
    /// A value or `]` right after `[`.
    ElementOrEnd,
    /// `,` or a closer after a value; end of input at the root.
    AfterValue,
}

/// What the scanner collects.
#[derive(Debug, Default)]
struct ScanOutput {
    tree: Tree,
    duplicates: Vec<(JsonPointer, Range<usize>)>,
}

struct Scanner<'t> {
    text: &'t str,
    bytes: &'t [u8],
    pos: usize,
    /// Jackson's row bookkeeping: rows advance only in whitespace between tokens, as in Jackson.
    row: usize,
    row_start: usize,
    stack: Vec<Frame>,
    /// The node of the value about to be read.
    pending: NodeId,
    out: ScanOutput,
    /// Whether to build the index (pointers, spans, duplicates); finding the first syntax
    /// error needs none of it.
    index: bool,
}

type Scan<T> = Result<T, ScanError>;

impl<'t> Scanner<'t> {
    fn new(text: &'t str) -> Self {
        Scanner {
            text,
            bytes: text.as_bytes(),
            pos: 0,
            row: 1,
            row_start: 0,
            stack: Vec::new(),
            pending: ROOT,
            out: ScanOutput::default(),
            index: true,
        }
    }

    /// A scanner that only checks the syntax: linear at any depth without an index's
    /// allocations (a megabyte of nesting that serde_json refuses is explained at once).
    fn checking(text: &'t str) -> Self {
        Scanner {
            index: false,
            ..Scanner::new(text)
        }
    }

    fn run(&mut self) -> Scan<()> {
        self.pos = bom_len(self.text);
        self.row_start = self.pos;
        let mut want = Want::Value;
        let mut root_was_number = false;
        loop {
            let before_ws = self.pos;
            self.skip_whitespace()?;
            let Some(c) = self.peek_char() else {
                return self.end_of_input(want);
            };
            want = match want {
                Want::Value => {
                    let is_root = self.stack.is_empty();
                    let next = self.value(c)?;
                    root_was_number = is_root && (c == '-' || c.is_ascii_digit());
                    next
                }
                Want::ElementOrEnd => match c {
                    ']' => self.close(Container::Array)?,
                    '}' => return Err(self.mismatched_close(c)),
                    _ => {
                        self.begin_element();
                        self.value(c)?
                    }
                },
                Want::KeyOrEnd => match c {
                    '}' => self.close(Container::Object)?,
                    ']' => return Err(self.mismatched_close(c)),
                    _ => self.key(c)?,
                },
                Want::Key => self.key(c)?,
                Want::Colon => {
                    if c != ':' {
                        return Err(self.unexpected_char(
                            c,
                            "was expecting a colon to separate field name and value",
                            format!("expected `:` after the key, found {}", show(c)),
                        ));
                    }
                    self.pos += 1;
                    Want::Value
                }
                Want::AfterValue => match self.stack.last().map(|f| f.container) {
                    None => {
                        return Err(self.trailing(c, root_was_number && before_ws == self.pos));
                    }
                    Some(container) => match c {
                        ',' => {
                            self.pos += 1;
                            match container {
                                Container::Object => Want::Key,
                                Container::Array => {
                                    self.begin_element();
                                    Want::Value
                                }
                            }
                        }
                        '}' | ']' if c == container.closer() => self.close(container)?,
                        '}' | ']' => return Err(self.mismatched_close(c)),
                        _ => {
                            let (expected, what) = match container {
                                Container::Object => ("`,` or `}`", "object members"),
                                Container::Array => ("`,` or `]`", "array elements"),
                            };
                            return Err(self.unexpected_char(
                                c,
                                &format!(
                                    "was expecting comma to separate {} entries",
                                    container.name()
                                ),
                                format!(
                                    "expected {expected} after a value, found {}; is a comma missing between {what}?",
                                    show(c)
                                ),
                            ));
                        }
                    },
                },
            };
        }
    }

    // --- whitespace and end of input ---------------------------------------------------------

    fn skip_whitespace(&mut self) -> Scan<()> {
        while let Some(&b) = self.bytes.get(self.pos) {
            match b {
                b' ' | b'\t' => self.pos += 1,
                b'\n' => {
                    self.pos += 1;
                    self.row += 1;
                    self.row_start = self.pos;
                }
                b'\r' => {
                    self.pos += 1;
                    if self.bytes.get(self.pos) == Some(&b'\n') {
                        self.pos += 1;
                    }
                    self.row += 1;
                    self.row_start = self.pos;
                }
                b'/' => {
                    let at = self.pos;
                    self.pos += 1;
                    return Err(self.error_at(
                        at..at + 1,
                        "Unexpected character ('/' (code 47)): maybe a (non-standard) comment? (not recognized as one since Feature 'ALLOW_COMMENTS' not enabled for parser)".to_owned(),
                        "JSON does not allow comments".to_owned(),
                    ));
                }
                0x00..=0x1f => {
                    let at = self.pos;
                    self.pos += 1;
                    return Err(self.error_at(
                        at..at + 1,
                        format!(
                            "Illegal character ({}): only regular white space (\\r, \\n, \\t) is allowed between tokens",
                            jackson_char_desc(char::from(b))
                        ),
                        format!("control character U+{:04X} is not allowed here", b),
                    ));
                }
                _ => break,
            }
        }
        Ok(())
    }

    fn end_of_input(&mut self, want: Want) -> Scan<()> {
        let at = self.pos;
        let Some(top) = self.stack.last() else {
            // Only reachable with nothing but whitespace, which `parse_json` handles first.
            return if want == Want::AfterValue {
                Ok(())
            } else {
                Err(self.error_at(
                    at..at,
                    "No content to map due to end-of-input".to_owned(),
                    "the definition is empty; it must be a JSON object".to_owned(),
                ))
            };
        };
        let (container, open, open_at) = (top.container, top.open, top.open_at(self.text));
        let (line, column) = Lines::new(self.text).line_col(self.text, open);
        match want {
            Want::Key | Want::Colon | Want::Value => Err(self.error_at(
                at..at,
                format!(
                    "Unexpected end-of-input within/between {} entries",
                    container.name()
                ),
                format!(
                    "unexpected end of input inside the {} opened at line {line}, column {column}",
                    container.name().to_lowercase()
                ),
            )),
            _ => Err(self.error_at(
                at..at,
                format!(
                    "Unexpected end-of-input: expected close marker for {} (start marker at {})",
                    container.name(),
                    open_at.location(self.text)
                ),
                format!(
                    "`{}` opened at line {line}, column {column} is never closed",
                    match container {
                        Container::Object => '{',
                        Container::Array => '[',
                    }
                ),
            )),
        }
    }

    // --- values ------------------------------------------------------------------------------

    fn value(&mut self, c: char) -> Scan<Want> {
        let start = self.pos;
        match c {
            '{' | '[' => {
                let container = if c == '{' {
                    Container::Object
                } else {
                    Container::Array
                };
                self.pos += 1;
                let node = self.pending;
                self.record_value(node, start..self.text.len());
                self.stack.push(Frame {
                    container,
                    open: start,
                    open_row: self.row,
                    open_row_start: self.row_start,
                    node,
                    next_index: 0,
                });
                Ok(match container {
                    Container::Object => Want::KeyOrEnd,
                    Container::Array => Want::ElementOrEnd,
                })
            }
            '"' => {
                self.pos += 1;
                self.string(false)?;
                self.finish_scalar(start);
                Ok(Want::AfterValue)
            }
            't' => self.literal(start, "true"),
            'f' => self.literal(start, "false"),
            'n' => self.literal(start, "null"),
            '-' | '0'..='9' => {
                self.number(start)?;
                self.finish_scalar(start);
                Ok(Want::AfterValue)
            }
            '}' => {
                self.pos += 1;
                Err(self.error_at(
                    start..self.pos,
                    "Unexpected character ('}' (code 125)): expected a value".to_owned(),
                    "expected a value before `}`".to_owned(),
                ))
            }
            c if is_identifier_start(c) => Err(self.invalid_token(start, start)),
            c => {
                let human = match c {
                    '\'' => "JSON strings use double quotes, not `'`".to_owned(),
                    ']' => "expected a value before `]`; is there a trailing comma?".to_owned(),
                    ',' => "expected a value before `,`".to_owned(),
                    '#' => "JSON does not allow comments".to_owned(),
                    c => format!("expected a JSON value, found {}", show(c)),
                };
                Err(self.unexpected_char(
                    c,
                    &format!("expected a valid value {JACKSON_VALUE_LIST}"),
                    human,
                ))
            }
        }
    }

    /// Records a finished scalar at the pending node.
    fn finish_scalar(&mut self, start: usize) {
        self.record_value(self.pending, start..self.pos);
    }

    fn literal(&mut self, start: usize, word: &'static str) -> Scan<Want> {
        for (i, expected) in word.bytes().enumerate() {
            if self.bytes.get(start + i) != Some(&expected) {
                self.pos = start + i;
                return Err(self.invalid_token(start, start + i));
            }
        }
        self.pos = start + word.len();
        if self.peek_char().is_some_and(is_identifier_part) {
            return Err(self.invalid_token(start, self.pos));
        }
        self.finish_scalar(start);
        Ok(Want::AfterValue)
    }

    /// Jackson's "Unrecognized token": the text from `start`, continued over identifier
    /// characters from `from`.
    fn invalid_token(&mut self, start: usize, from: usize) -> ScanError {
        self.pos = from;
        let mut token = self.text[start..from].to_owned();
        let mut length = token.chars().count();
        let mut truncated = false;
        while let Some(c) = self.peek_char() {
            if !is_identifier_part(c) {
                break;
            }
            self.pos += c.len_utf8();
            token.push(c);
            length += 1;
            if length >= MAX_ERROR_TOKEN_LENGTH {
                truncated = true;
                break;
            }
        }
        if token.is_empty() {
            // Cannot happen (callers start at an identifier character); keep the span non-empty.
            self.pos = (start + char_len_at(self.text, start)).max(self.pos);
            token = self.text[start..self.pos].to_owned();
        }
        let jackson = format!(
            "Unrecognized token '{token}{}': was expecting {JACKSON_VALUE_LIST}",
            if truncated { "..." } else { "" }
        );
        let human = match token.as_str() {
            "True" | "TRUE" | "False" | "FALSE" | "Null" | "NULL" | "None" => format!(
                "`{token}` is not a JSON value; JSON literals are lowercase `true`, `false` and `null`"
            ),
            "NaN" | "Infinity" => format!("`{token}` is not a JSON number"),
            _ => format!(
                "expected a JSON value, found `{token}`; strings need double quotes"
            ),
        };
        self.error_at(start..self.pos, jackson, human)
    }

    fn number(&mut self, start: usize) -> Scan<()> {
        self.pos = start;
        if self.peek_byte() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek_byte() {
            Some(b'0') => {
                self.pos += 1;
                if self.peek_byte().is_some_and(|b| b.is_ascii_digit()) {
                    return Err(self.error_at(
                        start..self.pos + 1,
                        "Invalid numeric value: Leading zeroes not allowed".to_owned(),
                        "numbers cannot have leading zeros".to_owned(),
                    ));
                }
            }
            Some(b'1'..=b'9') => self.digits(),
            _ => {
                return Err(self.number_char_error(
                    start,
                    "expected digit (0-9) to follow minus sign, for valid numeric value",
                    "expected a digit after `-`",
                ))
            }
        }
        if self.peek_byte() == Some(b'.') {
            self.pos += 1;
            if !self.peek_byte().is_some_and(|b| b.is_ascii_digit()) {
                return Err(self.number_char_error(
                    start,
                    "Decimal point not followed by a digit",
                    "expected a digit after the decimal point",
                ));
            }
            self.digits();
        }
        if matches!(self.peek_byte(), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.peek_byte(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if !self.peek_byte().is_some_and(|b| b.is_ascii_digit()) {
                return Err(self.number_char_error(
                    start,
                    "Exponent indicator not followed by a digit",
                    "expected a digit in the exponent",
                ));
            }
            self.digits();
        }
        Ok(())
    }

    fn digits(&mut self) {
        while self.peek_byte().is_some_and(|b| b.is_ascii_digit()) {
            self.pos += 1;
        }
    }

    /// A number broken by the character at `self.pos` (or by the end of input).
    fn number_char_error(&mut self, start: usize, jackson: &str, human: &str) -> ScanError {
        match self.peek_char() {
            None => self.error_at(
                start..self.pos,
                "Unexpected end-of-input in a Number value".to_owned(),
                format!("{human}, found the end of input"),
            ),
            Some(c) => {
                self.pos += c.len_utf8();
                self.error_at(
                    start..self.pos,
                    format!(
                        "Unexpected character ({}) in numeric value: {jackson}",
                        jackson_char_desc(c)
                    ),
                    format!("{human}, found {}", show(c)),
                )
            }
        }
    }

    /// Scans a string whose opening quote is consumed; returns the decoded text for keys.
    fn string(&mut self, is_key: bool) -> Scan<String> {
        let open = self.pos - 1;
        let mut decoded = String::new();
        let mut run_start = self.pos;
        loop {
            let Some(&b) = self.bytes.get(self.pos) else {
                let at = self.pos;
                return Err(self.error_at(
                    open..at,
                    if is_key {
                        "Unexpected end-of-input in field name".to_owned()
                    } else {
                        "Unexpected end-of-input: was expecting closing quote for a string value"
                            .to_owned()
                    },
                    "this string is never closed: the closing `\"` is missing".to_owned(),
                ));
            };
            match b {
                b'"' => {
                    if is_key {
                        decoded.push_str(&self.text[run_start..self.pos]);
                    }
                    self.pos += 1;
                    return Ok(decoded);
                }
                b'\\' => {
                    if is_key {
                        decoded.push_str(&self.text[run_start..self.pos]);
                    }
                    self.pos += 1;
                    let c = self.escape()?;
                    if is_key {
                        decoded.push(c);
                    }
                    run_start = self.pos;
                }
                0x00..=0x1f => {
                    let at = self.pos;
                    self.pos += 1;
                    let c = char::from(b);
                    return Err(self.error_at(
                        at..at + 1,
                        format!(
                            "Illegal unquoted character ({}): has to be escaped using backslash to be included in {}",
                            jackson_char_desc(c),
                            if is_key { "name" } else { "string value" }
                        ),
                        match c {
                            '\n' => "a string cannot span lines: write a line break as `\\n`; or is the closing `\"` missing?".to_owned(),
                            '\t' => "a tab inside a string must be written as `\\t`".to_owned(),
                            _ => format!("control character U+{:04X} must be escaped inside a string", b),
                        },
                    ));
                }
                _ => self.pos += 1,
            }
        }
    }

    /// Decodes the escape after a backslash (already consumed).
    fn escape(&mut self) -> Scan<char> {
        let backslash = self.pos - 1;
        let Some(c) = self.peek_char() else {
            let at = self.pos;
            return Err(self.error_at(
                backslash..at,
                "Unexpected end-of-input in character escape sequence".to_owned(),
                "the input ends inside an escape sequence".to_owned(),
            ));
        };
        self.pos += c.len_utf8();
        if let Some(simple) = simple_escape(c) {
            return Ok(simple);
        }
        Ok(match c {
            'u' => {
                let high = self.hex4(backslash)?;
                if !(0xD800..0xDC00).contains(&high) {
                    // A lone low surrogate is not a char; serde_json rejects it anyway.
                    return Ok(char::from_u32(high).unwrap_or('\u{fffd}'));
                }
                // A high surrogate: combine with a following `\uDC00`-`\uDFFF` if present.
                if self.bytes.get(self.pos) == Some(&b'\\')
                    && self.bytes.get(self.pos + 1) == Some(&b'u')
                {
                    let save = self.pos;
                    self.pos += 2;
                    let low = self.hex4(save)?;
                    if (0xDC00..0xE000).contains(&low) {
                        let code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
                        return Ok(char::from_u32(code).unwrap_or('\u{fffd}'));
                    }
                    // Not a low surrogate: leave it to be decoded on its own.
                    self.pos = save;
                }
                '\u{fffd}'
            }
            other => {
                let at = self.pos;
                return Err(self.error_at(
                    backslash..at,
                    format!("Unrecognized character escape {}", jackson_char_desc(other)),
                    format!(
                        "`\\{other}` is not a JSON escape; use one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX (write `\\\\` for a backslash)"
                    ),
                ));
            }
        })
    }

    fn hex4(&mut self, escape_start: usize) -> Scan<u32> {
        let mut code = 0;
        for _ in 0..4 {
            let Some(c) = self.peek_char() else {
                let at = self.pos;
                return Err(self.error_at(
                    escape_start..at,
                    "Unexpected end-of-input in character escape sequence".to_owned(),
                    "the input ends inside a `\\u` escape".to_owned(),
                ));
            };
            self.pos += c.len_utf8();
            let Some(digit) = c.to_digit(16) else {
                let at = self.pos;
                return Err(self.error_at(
                    escape_start..at,
                    format!(
                        "Unexpected character ({}): expected a hex-digit for character escape sequence",
                        jackson_char_desc(c)
                    ),
                    "a `\\u` escape needs four hex digits".to_owned(),
                ));
            };
            code = code * 16 + digit;
        }
        Ok(code)
    }

    // --- containers --------------------------------------------------------------------------

    /// Reads a key (at `c`) and prepares the pointer of its value.
    fn key(&mut self, c: char) -> Scan<Want> {
        if c != '"' {
            let human = match c {
                '}' => "expected a key after `,`; JSON does not allow a trailing comma".to_owned(),
                '\'' => "keys need double quotes, not `'`".to_owned(),
                c if is_identifier_start(c) => {
                    "expected a key in double quotes; keys must be quoted".to_owned()
                }
                c => format!("expected a key in double quotes, found {}", show(c)),
            };
            return Err(self.unexpected_char(
                c,
                "was expecting double-quote to start field name",
                human,
            ));
        }
        let start = self.pos;
        self.pos += 1;
        let key = self.string(true)?;
        let key_span = start..self.pos;
        let Some(frame) = self.stack.last().filter(|_| self.index) else {
            return Ok(Want::Colon);
        };
        let (node, replaced) = self
            .out
            .tree
            .add_child(frame.node, key, Some(key_span.clone()));
        if replaced {
            let pointer = self.out.tree.pointer(node);
            self.out.duplicates.push((pointer, key_span));
        }
        self.pending = node;
        Ok(Want::Colon)
    }

    /// Prepares the pointer of the next array element.
    fn begin_element(&mut self) {
        if !self.index {
            return;
        }
        if let Some(frame) = self.stack.last_mut() {
            let (node, _) = self
                .out
                .tree
                .add_child(frame.node, frame.next_index.to_string(), None);
            frame.next_index += 1;
            self.pending = node;
        }
    }

    /// Consumes the closer of the innermost container, which the caller checked matches.
    fn close(&mut self, container: Container) -> Scan<Want> {
        self.pos += 1;
        if let Some(frame) = self.stack.pop() {
            debug_assert_eq!(frame.container, container);
            if let Some(node) = self.out.tree.nodes.get_mut(frame.node) {
                node.spans.value.end = self.pos;
            }
        }
        Ok(Want::AfterValue)
    }

    fn record_value(&mut self, node: NodeId, span: Range<usize>) {
        if let Some(node) = self.out.tree.nodes.get_mut(node) {
            node.spans.value = span;
            node.present = true;
        }
    }

    // --- errors ------------------------------------------------------------------------------

    fn mismatched_close(&mut self, c: char) -> ScanError {
        let at = self.pos;
        self.pos += 1;
        match self.stack.last() {
            Some(frame) => {
                let (line, column) = Lines::new(self.text).line_col(self.text, frame.open);
                let jackson = format!(
                    "Unexpected close marker '{c}': expected '{}' (for {} starting at {})",
                    frame.container.closer(),
                    frame.container.name(),
                    frame.open_at(self.text).location(self.text)
                );
                let human = format!(
                    "`{c}` does not match the `{}` opened at line {line}, column {column}; expected `{}`",
                    match frame.container {
                        Container::Object => '{',
                        Container::Array => '[',
                    },
                    frame.container.closer()
                );
                self.error_at(at..at + 1, jackson, human)
            }
            None => self.error_at(
                at..at + 1,
                format!("Unexpected close marker '{c}': expected '}}' (for root starting at [Source: {}; line: 1, column: 0])", jackson_source_description(self.text)),
                format!("unexpected {} with nothing open", show(c)),
            ),
        }
    }

    /// Content after the root value.
    fn trailing(&mut self, c: char, glued_to_root_number: bool) -> ScanError {
        let at = self.pos;
        if glued_to_root_number {
            self.pos += c.len_utf8();
            return self.error_at(
                at..self.pos,
                format!(
                    "Unexpected character ({}): Expected space separating root-level values",
                    jackson_char_desc(c)
                ),
                format!("unexpected {} after the number", show(c)),
            );
        }
        if is_identifier_start(c) {
            let mut error = self.invalid_token(at, at);
            error.human = format!(
                "unexpected `{}` after the end of the definition",
                &self.text[error.span.clone()]
            );
            return error;
        }
        self.pos += c.len_utf8();
        self.error_at(
            at..self.pos,
            format!(
                "Unexpected character ({}): expected end-of-input after the definition",
                jackson_char_desc(c)
            ),
            format!(
                "unexpected {} after the end of the definition; only one JSON object is allowed",
                show(c)
            ),
        )
    }

    /// Jackson's `_reportUnexpectedChar`: consumes the character.
    fn unexpected_char(&mut self, c: char, comment: &str, human: String) -> ScanError {
        let at = self.pos;
        self.pos += c.len_utf8();
        self.error_at(
            at..self.pos,
            format!("Unexpected character ({}): {comment}", jackson_char_desc(c)),
            human,
        )
    }

    /// An error at `span` with Jackson's pointer at the current position.
    fn error_at(&self, span: Range<usize>, jackson: String, human: String) -> ScanError {
        ScanError {
            span,
            human,
            jackson,
            jackson_at: self.jackson_position_of(self.pos),
        }
    }

    /// Jackson's position of an offset on the current row.
    fn jackson_position_of(&self, offset: usize) -> JacksonPosition {
        let offset = floor_char_boundary(self.text, offset).max(self.row_start);
        JacksonPosition {
            row: self.row,
            column: utf16_len(&self.text[self.row_start..offset]) + 1,
        }
    }

    fn peek_byte(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn peek_char(&self) -> Option<char> {
        self.text.get(self.pos..)?.chars().next()
    }
}

/// A character quoted for a person.
fn show(c: char) -> String {
    if c.is_control() {
        format!("control character U+{:04X}", u32::from(c))
    } else {
        format!("`{c}`")
    }
}

/// The character a one-letter JSON escape (`\n` is `n` here) stands for; `None` for `u` and
/// anything that is no escape. The scanner and the language server's map of string-encoded
/// definitions read escapes by it.
pub(crate) fn simple_escape(c: char) -> Option<char> {
    Some(match c {
        '"' => '"',
        '\\' => '\\',
        '/' => '/',
        'b' => '\u{8}',
        'f' => '\u{c}',
        'n' => '\n',
        'r' => '\r',
        't' => '\t',
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn syntax(text: &str) -> SyntaxError {
        parse_json(text).expect_err("should not parse")
    }

    fn aws(text: &str) -> (String, String) {
        match syntax(text).kind {
            SyntaxErrorKind::InvalidJson {
                aws_message,
                aws_location,
            } => (aws_message, aws_location),
            other => panic!("expected InvalidJson, got {other:?}"),
        }
    }

    fn p(tokens: &[&str]) -> JsonPointer {
        tokens
            .iter()
            .fold(JsonPointer::root(), |p, t| match t.parse::<usize>() {
                Ok(i) => p.index(i),
                Err(_) => p.key(t),
            })
    }

    #[test]
    fn not_a_definition_matches_aws_exactly() {
        let text = "not a definition";
        let error = syntax(text);
        assert_eq!((error.line, error.column, error.span.clone()), (1, 1, 0..3));
        let diag = syntax_diagnostic(text, &error);
        assert_eq!(diag.code, Code::InvalidJsonDescription);
        assert_eq!(diag.severity, Severity::Error);
        assert_eq!(
            diag.message,
            "Unrecognized token 'not': was expecting (JSON String, Number, Array, Object or token 'null', 'true' or 'false')\n at [Source: (String)\"not a definition\"; line: 1, column: 4]"
        );
        assert_eq!(diag.location, Location::Text { line: 1, column: 1 });
        let (_, location) = aws(text);
        assert_eq!(
            location,
            "[Source: (String)\"not a definition\"; line: 1, column: 4]"
        );
        assert_eq!(
            split_aws_location(&diag.message),
            (
                "Unrecognized token 'not': was expecting (JSON String, Number, Array, Object or token 'null', 'true' or 'false')",
                Some(location.as_str())
            )
        );
    }

    #[test]
    fn empty_and_non_object_text_is_schema_validation_failed_without_location() {
        for text in [
            "",
            " ",
            "\n\t \r\n",
            "\u{feff}",
            "[]",
            "3",
            "\"x\"",
            "null",
            " [1, 2] ",
        ] {
            let error = syntax(text);
            let diag = syntax_diagnostic(text, &error);
            assert_eq!(diag.code, Code::SchemaValidationFailed, "{text:?}");
            assert_eq!(diag.message, "Definition must be a valid JSON object");
            assert_eq!(diag.location, Location::None);
        }
        assert_eq!(syntax(" ").kind, SyntaxErrorKind::Empty);
        let array = syntax(" [1, 2] ");
        assert_eq!(array.kind, SyntaxErrorKind::NotAnObject);
        assert_eq!(array.span, 1..7);
        assert_eq!(
            array.message,
            "the definition is an array; it must be a JSON object"
        );
    }

    #[test]
    fn objects_parse_and_keep_order() {
        let value = parse_json("\u{feff}{\"b\": 1, \"a\": [true, null]}").unwrap();
        assert_eq!(value, json!({"b": 1, "a": [true, null]}));
        assert_eq!(
            value.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["b", "a"]
        );
    }

    #[test]
    fn jackson_wording_for_common_mistakes() {
        let cases: &[(&str, &str, &str, (usize, usize))] = &[
            (
                "{\"a\": 1,}",
                "Unexpected character ('}' (code 125)): was expecting double-quote to start field name",
                "line: 1, column: 10",
                (1, 9),
            ),
            (
                "{\"a\": 1 \"b\": 2}",
                "Unexpected character ('\"' (code 34)): was expecting comma to separate Object entries",
                "line: 1, column: 10",
                (1, 9),
            ),
            (
                "[1 2]",
                "Unexpected character ('2' (code 50)): was expecting comma to separate Array entries",
                "line: 1, column: 5",
                (1, 4),
            ),
            (
                "{\"a\" 1}",
                "Unexpected character ('1' (code 49)): was expecting a colon to separate field name and value",
                "line: 1, column: 7",
                (1, 6),
            ),
            (
                "{a: 1}",
                "Unexpected character ('a' (code 97)): was expecting double-quote to start field name",
                "line: 1, column: 3",
                (1, 2),
            ),
            (
                "{\n  \"a\": {\n    \"b\": 1\n",
                "Unexpected end-of-input: expected close marker for Object (start marker at [Source: (String)\"{\n  \"a\": {\n    \"b\": 1\n\"; line: 2, column: 8])",
                "line: 4, column: 1",
                (4, 1),
            ),
            (
                "{\"a\": \"b",
                "Unexpected end-of-input: was expecting closing quote for a string value",
                "line: 1, column: 9",
                (1, 7),
            ),
            (
                "{\"a\": tru}",
                "Unrecognized token 'tru': was expecting (JSON String, Number, Array, Object or token 'null', 'true' or 'false')",
                "line: 1, column: 10",
                (1, 7),
            ),
            (
                "{\"a\": True}",
                "Unrecognized token 'True': was expecting (JSON String, Number, Array, Object or token 'null', 'true' or 'false')",
                "line: 1, column: 11",
                (1, 7),
            ),
            (
                "{\"a\": 'b'}",
                "Unexpected character (''' (code 39)): expected a valid value (JSON String, Number, Array, Object or token 'null', 'true' or 'false')",
                "line: 1, column: 8",
                (1, 7),
            ),
            (
                "{\"a\": [1,]}",
                "Unexpected character (']' (code 93)): expected a valid value (JSON String, Number, Array, Object or token 'null', 'true' or 'false')",
                "line: 1, column: 11",
                (1, 10),
            ),
            (
                "{\"a\": }",
                "Unexpected character ('}' (code 125)): expected a value",
                "line: 1, column: 8",
                (1, 7),
            ),
            (
                "{\"a\": [1}",
                "Unexpected close marker '}': expected ']' (for Array starting at [Source: (String)\"{\"a\": [1}\"; line: 1, column: 7])",
                "line: 1, column: 10",
                (1, 9),
            ),
            (
                "{\"a\": \"x\\qy\"}",
                "Unrecognized character escape 'q' (code 113)",
                "line: 1, column: 11",
                (1, 9),
            ),
            (
                "{\"a\": \"x\ny\"}",
                "Illegal unquoted character ((CTRL-CHAR, code 10)): has to be escaped using backslash to be included in string value",
                "line: 1, column: 10",
                (1, 9),
            ),
            (
                "{\"a\": 01}",
                "Invalid numeric value: Leading zeroes not allowed",
                "line: 1, column: 8",
                (1, 7),
            ),
            (
                "{\"a\": 1} // done",
                "Unexpected character ('/' (code 47)): maybe a (non-standard) comment? (not recognized as one since Feature 'ALLOW_COMMENTS' not enabled for parser)",
                "line: 1, column: 11",
                (1, 10),
            ),
            (
                "{\"a\": 1,",
                "Unexpected end-of-input within/between Object entries",
                "line: 1, column: 9",
                (1, 9),
            ),
            (
                "{\"é\": ü}",
                "Unrecognized token 'ü': was expecting (JSON String, Number, Array, Object or token 'null', 'true' or 'false')",
                "line: 1, column: 8",
                (1, 7),
            ),
        ];
        for (text, message, position, (line, column)) in cases {
            let error = syntax(text);
            let (aws_message, aws_location) = aws(text);
            let (jackson, location) = split_aws_location(&aws_message);
            assert_eq!(jackson, *message, "{text:?}");
            assert_eq!(location, Some(aws_location.as_str()), "{text:?}");
            assert!(
                aws_location.ends_with(&format!("; {position}]")),
                "{text:?}: {aws_location}"
            );
            assert_eq!(
                (error.line, error.column),
                (*line, *column),
                "{text:?}: {}",
                error.message
            );
            assert!(!error.message.is_empty());
        }
    }

    #[test]
    fn human_messages_say_what_to_fix() {
        assert_eq!(
            syntax("{\"a\": 1,}").message,
            "expected a key after `,`; JSON does not allow a trailing comma"
        );
        assert_eq!(
            syntax("{\"a\": 1 \"b\": 2}").message,
            "expected `,` or `}` after a value, found `\"`; is a comma missing between object members?"
        );
        assert_eq!(
            syntax("{\n\"a\": [1,\n").message,
            "unexpected end of input inside the array opened at line 2, column 6"
        );
        assert_eq!(
            syntax("{\"a\": 1}}").message,
            "unexpected `}` after the end of the definition; only one JSON object is allowed"
        );
        assert_eq!(
            syntax("{\"a\": True}").message,
            "`True` is not a JSON value; JSON literals are lowercase `true`, `false` and `null`"
        );
    }

    #[test]
    fn jackson_source_is_truncated_at_500_units() {
        let text = format!("{{\"a\": x{}}}", " ".repeat(600));
        let (_, location) = aws(&text);
        assert!(
            location.contains("\"[truncated 108 chars]; line: 1, column: 8]"),
            "{location}"
        );
    }

    #[test]
    fn jackson_columns_count_utf16_units() {
        // 😀 is two UTF-16 units in Jackson's column, one character for people.
        let text = "{\"😀\": x}";
        let error = syntax(text);
        assert_eq!((error.line, error.column), (1, 7));
        assert!(aws(text).1.ends_with("line: 1, column: 9]"));
    }

    #[test]
    fn spans_of_keys_values_and_fallbacks() {
        let text = "{\n  \"States\": {\n    \"A\": {\"Type\": \"Pass\", \"End\": true},\n    \"B\": [1, {\"x\": null}]\n  }\n}";
        let index = SpanIndex::new(text);
        let slice = |r: Range<usize>| &text[r];
        let a = p(&["States", "A"]);
        assert_eq!(slice(index.key_span(&a).unwrap()), "\"A\"");
        assert_eq!(
            slice(index.value_span(&a).unwrap()),
            "{\"Type\": \"Pass\", \"End\": true}"
        );
        assert_eq!(slice(index.span(&a.key("Type"))), "\"Type\"");
        // A missing field points at its object's key.
        assert_eq!(slice(index.span(&a.key("Next"))), "\"A\"");
        assert_eq!(slice(index.span(&a.key("Next").key("deeper"))), "\"A\"");
        // Array elements have no key: their value.
        assert_eq!(
            slice(index.span(&p(&["States", "B", "1"]))),
            "{\"x\": null}"
        );
        assert_eq!(slice(index.span(&p(&["States", "B", "1", "x"]))), "\"x\"");
        assert_eq!(
            index.value_span(&p(&["States", "B", "1", "x"])).map(slice),
            Some("null")
        );
        // The root is the opening brace.
        assert_eq!(index.span(&JsonPointer::root()), 0..1);
        assert_eq!(index.line_col(index.span(&a).start), (3, 5));
        assert!(index.duplicate_keys().is_empty());
    }

    #[test]
    fn line_col_counts_characters_and_clamps() {
        let text = "{\"é\": \"😀\",\n \"b\": 1}";
        let index = SpanIndex::new(text);
        let b = index.key_span(&p(&["b"])).unwrap();
        assert_eq!(index.line_col(b.start), (2, 2));
        let smile = index.value_span(&p(&["é"])).unwrap();
        assert_eq!(index.line_col(smile.start), (1, 7));
        assert_eq!(index.line_col(smile.start + 2), (1, 8)); // inside 😀: clamped back
        assert_eq!(index.line_col(10_000), (2, 9));
        assert_eq!(index.offset(2, 2), b.start);
        assert_eq!(index.offset(1, 7), smile.start);
        assert_eq!(index.offset(99, 1), text.len());
        assert_eq!(index.offset(1, 999), text.find('\n').unwrap());
        assert_eq!(SpanIndex::new("").line_col(0), (1, 1));
    }

    #[test]
    fn escaped_keys_match_decoded_pointers() {
        let text =
            r#"{"a\"b": 1, "\u00e9": 2, "\ud83d\ude00": 3, "x/y~z": 4, "t\tab\\": 5, "\/": 6}"#;
        let value = parse_json(text).unwrap();
        let index = SpanIndex::new(text);
        for (key, expected) in value.as_object().unwrap() {
            let pointer = JsonPointer::root().key(key);
            let span = index
                .value_span(&pointer)
                .unwrap_or_else(|| panic!("{pointer}"));
            assert_eq!(
                &serde_json::from_str::<Value>(&text[span]).unwrap(),
                expected
            );
            let key_span = index.key_span(&pointer).unwrap();
            assert_eq!(
                &serde_json::from_str::<String>(&text[key_span]).unwrap(),
                key
            );
        }
        assert!(index.node(&JsonPointer::root().key("é")).is_some());
        assert!(index.node(&JsonPointer::root().key("😀")).is_some());
        assert_eq!(
            index
                .node(&JsonPointer::root().key("x/y~z"))
                .map(|n| n.value.clone()),
            index.value_span(&p(&["x/y~z"]))
        );
    }

    #[test]
    fn duplicate_keys_are_reported_and_the_last_one_is_indexed() {
        let text = r#"{"A": {"x": 1, "y": 2}, "B": {"c": 1, "c": 2}, "A": {"y": 3}}"#;
        let index = SpanIndex::new(text);
        assert_eq!(index.duplicate_keys(), vec![p(&["B", "c"]), p(&["A"])]);
        let spans = index.duplicate_key_spans();
        assert_eq!(&text[spans[1].1.clone()], "\"A\"");
        assert_eq!(spans[1].1.start, text.rfind("\"A\"").unwrap());
        assert_eq!(&text[index.value_span(&p(&["A"])).unwrap()], "{\"y\": 3}");
        assert_eq!(&text[index.value_span(&p(&["A", "y"])).unwrap()], "3");
        assert_eq!(
            index.node(&p(&["A", "x"])),
            None,
            "stale child of the first A"
        );
        assert_eq!(&text[index.value_span(&p(&["B", "c"])).unwrap()], "2");
        // serde_json agrees about which one wins.
        let value = parse_json(text).unwrap();
        assert_eq!(value["A"], json!({"y": 3}));

        assert_eq!(duplicate_keys(text), spans.to_vec());
        let diags = duplicate_key_diagnostics(text);
        assert_eq!(diags.len(), 2);
        assert_eq!(diags.0[0].code, Code::DuplicateJsonKey);
        assert_eq!(
            diags.0[0].message,
            "Duplicate key 'c': only the last value is used"
        );
        assert_eq!(diags.0[0].pointer(), Some(&p(&["B", "c"])));
        // Keys that differ only by escaping are the same key.
        assert_eq!(duplicate_keys(r#"{"é": 1, "\u00e9": 2}"#).len(), 1);
        // Same key in different objects is fine.
        assert!(
            duplicate_keys(r#"{"a": {"k": 1}, "b": {"k": 1}, "c": [{"k": 1}, {"k": 2}]}"#)
                .is_empty()
        );
    }

    #[test]
    fn deep_nesting_does_not_overflow() {
        let deep = format!("{{\"a\": {}{}}}", "[".repeat(200_000), "]".repeat(200_000));
        let error = syntax(&deep); // serde_json's recursion limit
        assert!(matches!(error.kind, SyntaxErrorKind::TooDeeplyNested));
        assert!(
            error.message.contains("more than 127 levels deep"),
            "{}",
            error.message
        );
        let index = SpanIndex::new(&deep);
        assert!(index.value_span(&p(&["a", "0", "0"])).is_some());
        let unclosed = "[".repeat(100_000);
        let _ = syntax(&unclosed);
        let _ = SpanIndex::new(&unclosed);
    }

    #[test]
    fn serde_only_failures_are_still_reported() {
        let text = "{\"a\": 1e999}";
        let error = syntax(text);
        assert_eq!(error.line, 1);
        assert!(matches!(error.kind, SyntaxErrorKind::InvalidJson { .. }));
        let diag = syntax_diagnostic(text, &error);
        assert_eq!(diag.code, Code::InvalidJsonDescription);
        assert!(split_aws_location(&diag.message).1.is_some());
    }

    /// Tiny deterministic generator for the no-panic checks.
    struct XorShift(u64);

    impl XorShift {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n.max(1) as u64) as usize
        }
    }

    /// Every function of this module on `text`, checking the invariants that must hold.
    fn exercise(text: &str) {
        let parsed = parse_json(text);
        let scanned = Scanner::new(text).run();
        match &parsed {
            Ok(_) => assert!(scanned.is_ok(), "scanner refused valid {text:?}"),
            Err(error) => {
                let _ = syntax_diagnostic(text, error);
                assert!(error.span.start <= error.span.end && error.span.end <= text.len());
                assert!(
                    text.is_char_boundary(error.span.start)
                        && text.is_char_boundary(error.span.end)
                );
                if error.kind == SyntaxErrorKind::NotAnObject {
                    assert!(scanned.is_ok(), "scanner refused valid {text:?}");
                }
            }
        }
        let index = SpanIndex::new(text);
        for (id, node) in index.tree.nodes.iter().enumerate() {
            let pointer = index.tree.pointer(id);
            let node = &node.spans;
            for span in node.key.iter().chain([&node.value]) {
                assert!(
                    span.start <= span.end && span.end <= text.len(),
                    "{pointer}"
                );
                assert!(text.is_char_boundary(span.start) && text.is_char_boundary(span.end));
            }
            let span = index.span(&pointer);
            let _ = index.line_col(span.start);
        }
        let _ = index.span(&p(&["nope", "0"]));
        for offset in [0, 1, text.len() / 2, text.len(), text.len() + 3] {
            let (line, column) = index.line_col(offset);
            let _ = index.offset(line, column);
        }
    }

    #[test]
    fn arbitrary_text_never_panics() {
        let sample = r#"{"Comment": "é😀\n", "StartAt": "A", "States": {"A": {"Type": "Pass", "Result": [1, -2.5e3, true, null, {"k": "\u00e9\ud83d\ude00"}], "End": true}}}"#;
        let alphabet: Vec<char> =
            "{}[]:,\"\\/ \n\r\tabenlrstu0123456789-+.eE'é😀\u{0}\u{1f}\u{feff}"
                .chars()
                .collect();
        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
        exercise(sample);
        for _ in 0..3000 {
            // Mutations of a valid definition: the interesting errors are near-misses.
            let mut chars: Vec<char> = sample.chars().collect();
            for _ in 0..=rng.below(3) {
                let at = rng.below(chars.len());
                match rng.below(3) {
                    0 => {
                        chars.remove(at);
                    }
                    1 => chars.insert(at, alphabet[rng.below(alphabet.len())]),
                    _ => chars[at] = alphabet[rng.below(alphabet.len())],
                }
                if chars.is_empty() {
                    break;
                }
            }
            exercise(&chars.iter().collect::<String>());
            // And short random strings.
            let random: String = (0..rng.below(12))
                .map(|_| alphabet[rng.below(alphabet.len())])
                .collect();
            exercise(&random);
        }
        let bytes: Vec<u8> = (0..=255).collect();
        exercise(&String::from_utf8_lossy(&bytes));
    }

    /// Every pointer of `value` with the value it names.
    fn pointers<'v>(
        pointer: JsonPointer,
        value: &'v Value,
        out: &mut Vec<(JsonPointer, &'v Value)>,
    ) {
        match value {
            Value::Object(map) => {
                for (k, v) in map {
                    pointers(pointer.key(k), v, out);
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    pointers(pointer.index(i), v, out);
                }
            }
            _ => {}
        }
        out.push((pointer, value));
    }

    fn assert_spans_reparse(text: &str, what: &str) {
        let value = parse_json(text).unwrap_or_else(|e| panic!("{what}: {e}"));
        let index = SpanIndex::new(text);
        assert!(index.duplicate_keys().is_empty(), "{what}");
        let mut all = Vec::new();
        pointers(JsonPointer::root(), &value, &mut all);
        for (pointer, expected) in all {
            let span = index
                .value_span(&pointer)
                .unwrap_or_else(|| panic!("{what}: no span for {pointer}"));
            let reparsed: Value = serde_json::from_str(&text[span.clone()])
                .unwrap_or_else(|e| panic!("{what}: {pointer} span {span:?}: {e}"));
            assert_eq!(&reparsed, expected, "{what}: {pointer}");
            if let Some(key) = pointer
                .tokens()
                .last()
                .filter(|_| index.key_span(&pointer).is_some())
            {
                let key_span = index.key_span(&pointer).unwrap();
                assert_eq!(
                    serde_json::from_str::<String>(&text[key_span]).unwrap(),
                    key
                );
            }
        }
    }

    #[test]
    fn every_pointer_of_the_conformance_definitions_has_a_span_that_reparses() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/corpora/conformance/cases/pure");
        let entries = std::fs::read_dir(&dir).expect("the corpus is in the repository");
        let mut checked = 0;
        for entry in entries {
            let path = entry.expect("readable directory").path();
            if path.extension().and_then(|e| e.to_str()) != Some("json") {
                continue;
            }
            let case: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let Some(definition @ Value::Object(_)) = case.get("definition") else {
                continue;
            };
            let what = path.file_name().unwrap().to_string_lossy();
            assert_spans_reparse(&serde_json::to_string_pretty(definition).unwrap(), &what);
            assert_spans_reparse(&serde_json::to_string(definition).unwrap(), &what);
            checked += 1;
        }
        assert!(checked > 0, "no definitions found in {}", dir.display());
    }
}
