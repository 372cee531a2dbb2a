//! Diagnostics in the shape of AWS's `ValidateStateMachineDefinition` response.
//!
//! A diagnostic names its place with a [`JsonPointer`] (`/States/A/Next`), as AWS does; the CLI
//! turns pointers into lines and columns with [`crate::asl::source::SpanIndex`] only when it
//! reports, so validation itself never pays for spans.

use serde::Serialize;
use std::fmt;

/// How bad a diagnostic is. AWS's `severity`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Severity {
    /// The definition is rejected.
    Error,
    /// Accepted, but probably not what was meant.
    Warning,
}

/// AWS's diagnostic codes (the `code` field), plus the few sfn-local adds where AWS has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Code {
    /// The text is not JSON.
    InvalidJsonDescription,
    /// The definition is empty.
    MissingDescription,
    /// A field is unknown, missing, mistyped or out of range.
    SchemaValidationFailed,
    /// A Task `Resource` is not a resource ARN sfn-local understands.
    InvalidResource,
    /// A scope has no state that ends it.
    MissingEndState,
    /// Two states share a name.
    DuplicateStateName,
    /// A state name is too long or has forbidden characters.
    InvalidStateName,
    /// A transition names a state that is not there, or a state is unreachable.
    MissingTransitionTarget,
    /// Nesting deeper than AWS allows.
    TooDeeplyNested,
    /// A path-looking value under a key without `.$` (WARNING).
    NoDollar,
    /// A path-looking value in a field whose name does not end in `Path` (WARNING).
    NoPath,
    /// A path-looking string inside a Pass state's static `Result` (WARNING).
    PassResultIsStatic,
    /// A `.waitForTaskToken` task whose parameters never pass `$$.Task.Token` (WARNING; the worker
    /// could never answer). sfn-local's own code: AWS has none for this.
    MissingTaskToken,
    /// A duplicate key in a JSON object. sfn-local's own code: AWS's parser keeps the last one.
    DuplicateJsonKey,
    /// A JSONata expression reads a variable no state in reach assigns (WARNING: AWS accepts
    /// the definition and the expression yields nothing at run time). sfn-local's own code.
    UnassignedVariable,
    /// A `${Name}` placeholder (SAM/CloudFormation `DefinitionSubstitutions`) with no value:
    /// WARNING for `validate` (checked with a stand-in), ERROR for `run`. sfn-local's own code.
    UnresolvedSubstitution,
    /// A `States.`-prefixed error name that is not one of AWS's documented names (WARNING:
    /// deployed definitions use such names and AWS accepts them). sfn-local's own code.
    UnknownStatesError,
    /// A JSONPath that Jayway (AWS's evaluator) may not read as its author meant (WARNING:
    /// AWS accepts such definitions). sfn-local's own code.
    JsonPathDialect,
    /// A template's state machine whose definition cannot be read (a missing `DefinitionUri`
    /// file, an S3 location): an ERROR, so a renamed file never passes. sfn-local's own code.
    UnreadableDefinition,
    /// A template's state machine whose definition is in S3 (WARNING: valid, but nothing here
    /// checks it). sfn-local's own code.
    NotChecked,
    /// A template intrinsic (`!Ref`, `!GetAtt`, `!Sub`) naming a resource or parameter the
    /// template does not declare: an ERROR, as CloudFormation rejects the template.
    /// sfn-local's own code.
    UnresolvedReference,
    /// A template's `DefinitionSubstitutions` entry that no placeholder uses (WARNING: a
    /// misspelt placeholder is the usual reason). sfn-local's own code.
    UnusedSubstitution,
}

impl Code {
    /// The code as AWS spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::InvalidJsonDescription => "INVALID_JSON_DESCRIPTION",
            Code::MissingDescription => "MISSING_DESCRIPTION",
            Code::SchemaValidationFailed => "SCHEMA_VALIDATION_FAILED",
            Code::InvalidResource => "INVALID_RESOURCE",
            Code::MissingEndState => "MISSING_END_STATE",
            Code::DuplicateStateName => "DUPLICATE_STATE_NAME",
            Code::InvalidStateName => "INVALID_STATE_NAME",
            Code::MissingTransitionTarget => "MISSING_TRANSITION_TARGET",
            Code::TooDeeplyNested => "TOO_DEEPLY_NESTED",
            Code::NoDollar => "NO_DOLLAR",
            Code::NoPath => "NO_PATH",
            Code::PassResultIsStatic => "PASS_RESULT_IS_STATIC",
            Code::MissingTaskToken => "MISSING_TASK_TOKEN",
            Code::DuplicateJsonKey => "DUPLICATE_JSON_KEY",
            Code::UnassignedVariable => "UNASSIGNED_VARIABLE",
            Code::UnresolvedSubstitution => "UNRESOLVED_SUBSTITUTION",
            Code::UnknownStatesError => "UNKNOWN_STATES_ERROR",
            Code::JsonPathDialect => "JSONPATH_DIALECT",
            Code::UnreadableDefinition => "UNREADABLE_DEFINITION",
            Code::NotChecked => "NOT_CHECKED",
            Code::UnresolvedReference => "UNRESOLVED_REFERENCE",
            Code::UnusedSubstitution => "UNUSED_SUBSTITUTION",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A JSON pointer into the definition (RFC 6901 escaping), e.g. `/States/A/Retry/0/ErrorEquals`.
/// The root is the empty pointer, shown as `/` as AWS does.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JsonPointer(String);

impl JsonPointer {
    /// The root of the document.
    pub fn root() -> Self {
        JsonPointer(String::new())
    }

    /// This pointer extended by an object key.
    pub fn key(&self, key: &str) -> Self {
        let mut s = String::with_capacity(self.0.len() + key.len() + 1);
        s.push_str(&self.0);
        s.push('/');
        for c in key.chars() {
            match c {
                '~' => s.push_str("~0"),
                '/' => s.push_str("~1"),
                c => s.push(c),
            }
        }
        JsonPointer(s)
    }

    /// This pointer extended by an array index.
    pub fn index(&self, index: usize) -> Self {
        JsonPointer(format!("{}/{}", self.0, index))
    }

    /// The RFC 6901 text (empty for the root).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The unescaped tokens of the pointer.
    pub fn tokens(&self) -> impl Iterator<Item = String> + '_ {
        self.0
            .split('/')
            .skip(1)
            .map(|t| t.replace("~1", "/").replace("~0", "~"))
    }

    /// The pointer without its last token (the root stays the root).
    pub fn parent(&self) -> Self {
        match self.0.rfind('/') {
            Some(i) => JsonPointer(self.0[..i].to_owned()),
            None => JsonPointer::root(),
        }
    }
}

impl fmt::Display for JsonPointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            f.write_str("/")
        } else {
            f.write_str(&self.0)
        }
    }
}

impl Serialize for JsonPointer {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Where a diagnostic points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A place in a JSON document.
    Pointer(JsonPointer),
    /// A place inside the string value at a pointer (a JSONata expression's syntax error):
    /// `offset` is a byte offset into the decoded string.
    InString {
        /// The string value's pointer.
        pointer: JsonPointer,
        /// Byte offset into the decoded string.
        offset: usize,
    },
    /// A field of an object: AWS names the object (`pointer`, the `location` of its
    /// response); a person is shown the field itself (`key`).
    Field {
        /// The object's pointer, AWS's `location`.
        pointer: JsonPointer,
        /// The key of the field the problem is in.
        key: String,
    },
    /// A place in text that did not parse as JSON (1-based line and column).
    Text {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
    },
    /// Nowhere in particular (AWS omits `location`).
    None,
}

/// One problem in a definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// ERROR or WARNING.
    pub severity: Severity,
    /// AWS's code.
    pub code: Code,
    /// A message a person can act on.
    pub message: String,
    /// Where the problem is.
    pub location: Location,
    /// Other places worth showing (a pointer and what it is), e.g. the `TimeoutSeconds` that a
    /// `HeartbeatSeconds` must stay below.
    pub related: Vec<(JsonPointer, String)>,
}

impl Diagnostic {
    /// An ERROR at a pointer.
    pub fn error(code: Code, at: &JsonPointer, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            code,
            message: message.into(),
            location: Location::Pointer(at.clone()),
            related: Vec::new(),
        }
    }

    /// A WARNING at a pointer.
    pub fn warning(code: Code, at: &JsonPointer, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(code, at, message)
        }
    }

    /// Shows a diagnostic at a pointer on the field `key` of that object instead, keeping the
    /// object as AWS's `location`.
    pub fn on_field(mut self, key: &str) -> Self {
        if let Location::Pointer(pointer) = self.location {
            self.location = Location::Field {
                pointer,
                key: key.to_owned(),
            };
        }
        self
    }

    /// The pointer a person is shown: the field's own for [`Location::Field`], else
    /// [`Diagnostic::pointer`].
    pub fn focus(&self) -> Option<JsonPointer> {
        match &self.location {
            Location::Field { pointer, key } => Some(pointer.key(key)),
            _ => self.pointer().cloned(),
        }
    }

    /// Adds a related place to show beside the main one.
    pub fn with_related(mut self, at: JsonPointer, label: impl Into<String>) -> Self {
        self.related.push((at, label.into()));
        self
    }

    /// The pointer, when the diagnostic has one.
    pub fn pointer(&self) -> Option<&JsonPointer> {
        match &self.location {
            Location::Pointer(p)
            | Location::InString { pointer: p, .. }
            | Location::Field { pointer: p, .. } => Some(p),
            _ => None,
        }
    }

    /// AWS's `location` text: the pointer, or nothing.
    pub fn location_text(&self) -> Option<String> {
        match &self.location {
            Location::Pointer(p)
            | Location::InString { pointer: p, .. }
            | Location::Field { pointer: p, .. } => Some(p.to_string()),
            Location::Text { line, column } => Some(format!("line: {line}, column: {column}")),
            Location::None => None,
        }
    }
}

/// The diagnostics of one definition, in the order they were found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    /// Records a diagnostic.
    pub fn push(&mut self, d: Diagnostic) {
        self.0.push(d);
    }

    /// Records an ERROR.
    pub fn error(&mut self, code: Code, at: &JsonPointer, message: impl Into<String>) {
        self.push(Diagnostic::error(code, at, message));
    }

    /// Records a SCHEMA_VALIDATION_FAILED error, the most common kind.
    pub fn schema(&mut self, at: &JsonPointer, message: impl Into<String>) {
        self.error(Code::SchemaValidationFailed, at, message);
    }

    /// Records a WARNING.
    pub fn warning(&mut self, code: Code, at: &JsonPointer, message: impl Into<String>) {
        self.push(Diagnostic::warning(code, at, message));
    }

    /// Whether any diagnostic is an ERROR.
    pub fn has_errors(&self) -> bool {
        self.0.iter().any(|d| d.severity == Severity::Error)
    }

    /// The diagnostics, in order.
    pub fn iter(&self) -> impl Iterator<Item = &Diagnostic> {
        self.0.iter()
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointer_escapes_and_displays_root_as_slash() {
        let p = JsonPointer::root().key("States").key("a/b~c").index(0);
        assert_eq!(p.as_str(), "/States/a~1b~0c/0");
        assert_eq!(p.tokens().collect::<Vec<_>>(), ["States", "a/b~c", "0"]);
        assert_eq!(JsonPointer::root().to_string(), "/");
        assert_eq!(p.parent().parent().as_str(), "/States");
    }
}
