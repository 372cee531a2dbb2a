//! Choice rules (JSONPath): a boolean tree of data tests.
//!
//! A [`Rule`] is compiled once: `And`/`Or`/`Not` nodes over data tests, each a `Variable` path
//! and one [`Comparator`] whose operand is already type-checked (a timestamp literal is parsed,
//! a `StringMatches` pattern split into pieces, a `…Path` operand compiled).
//!
//! Evaluation follows AWS (spec §3.9): a type mismatch is simply false; `IsPresent` on a
//! missing path is false; any other test on a missing `Variable` (or a `…Path` operand that finds
//! nothing) fails with `States.Runtime`.

use crate::asl::diagnostic::{Diagnostics, JsonPointer};
use crate::asl::error::StatesError;
use crate::asl::eval::Env;
use crate::asl::path::{Found, Path};
use chrono::{DateTime, FixedOffset};
use serde_json::Value;
use std::cmp::Ordering;

/// What kind of values a comparison compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `String*`: code-point order.
    String,
    /// `Numeric*`: numbers.
    Numeric,
    /// `BooleanEquals`.
    Boolean,
    /// `Timestamp*`: RFC 3339 instants.
    Timestamp,
}

/// How two values must relate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relation {
    /// `…Equals`.
    Equals,
    /// `…LessThan`.
    LessThan,
    /// `…GreaterThan`.
    GreaterThan,
    /// `…LessThanEquals`.
    LessThanEquals,
    /// `…GreaterThanEquals`.
    GreaterThanEquals,
}

impl Relation {
    fn holds(self, o: Ordering) -> bool {
        match self {
            Relation::Equals => o == Ordering::Equal,
            Relation::LessThan => o == Ordering::Less,
            Relation::GreaterThan => o == Ordering::Greater,
            Relation::LessThanEquals => o != Ordering::Greater,
            Relation::GreaterThanEquals => o != Ordering::Less,
        }
    }
}

/// The type tests, `Is…`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeTest {
    /// `IsNull`.
    Null,
    /// `IsPresent`.
    Present,
    /// `IsNumeric`.
    Numeric,
    /// `IsString`.
    String,
    /// `IsBoolean`.
    Boolean,
    /// `IsTimestamp`.
    Timestamp,
}

/// The right-hand side of a comparison.
#[derive(Debug, Clone)]
pub enum Operand {
    /// A literal, already checked against the comparison's kind.
    Literal(Value),
    /// A `…Path` operand.
    Path(Path),
}

/// One piece of a `StringMatches` pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Literal text.
    Text(String),
    /// `*`: any run of characters.
    Star,
}

/// A data test's operator with its operand.
#[derive(Debug, Clone)]
pub enum Comparator {
    /// `String*`, `Numeric*`, `BooleanEquals`, `Timestamp*` and their `…Path` twins.
    Compare(Kind, Relation, Operand),
    /// `StringMatches`.
    Matches(Vec<Piece>),
    /// `Is…: true|false`.
    Is(TypeTest, bool),
}

#[derive(Debug, Clone)]
enum Node {
    And(Vec<Node>),
    Or(Vec<Node>),
    Not(Box<Node>),
    Test {
        variable: Path,
        comparator: Comparator,
    },
    /// A rule that did not compile (already reported); evaluates to false.
    Invalid,
}

/// A compiled Choice rule, without its `Next` (the model keeps that).
#[derive(Debug, Clone)]
pub struct Rule {
    raw: Value,
    node: Node,
}

const COMPARISONS: [(&str, Kind, Relation); 16] = [
    ("StringEquals", Kind::String, Relation::Equals),
    ("StringLessThan", Kind::String, Relation::LessThan),
    ("StringGreaterThan", Kind::String, Relation::GreaterThan),
    (
        "StringLessThanEquals",
        Kind::String,
        Relation::LessThanEquals,
    ),
    (
        "StringGreaterThanEquals",
        Kind::String,
        Relation::GreaterThanEquals,
    ),
    ("NumericEquals", Kind::Numeric, Relation::Equals),
    ("NumericLessThan", Kind::Numeric, Relation::LessThan),
    ("NumericGreaterThan", Kind::Numeric, Relation::GreaterThan),
    (
        "NumericLessThanEquals",
        Kind::Numeric,
        Relation::LessThanEquals,
    ),
    (
        "NumericGreaterThanEquals",
        Kind::Numeric,
        Relation::GreaterThanEquals,
    ),
    ("BooleanEquals", Kind::Boolean, Relation::Equals),
    ("TimestampEquals", Kind::Timestamp, Relation::Equals),
    ("TimestampLessThan", Kind::Timestamp, Relation::LessThan),
    (
        "TimestampGreaterThan",
        Kind::Timestamp,
        Relation::GreaterThan,
    ),
    (
        "TimestampLessThanEquals",
        Kind::Timestamp,
        Relation::LessThanEquals,
    ),
    (
        "TimestampGreaterThanEquals",
        Kind::Timestamp,
        Relation::GreaterThanEquals,
    ),
];

const TYPE_TESTS: [(&str, TypeTest); 6] = [
    ("IsNull", TypeTest::Null),
    ("IsPresent", TypeTest::Present),
    ("IsNumeric", TypeTest::Numeric),
    ("IsString", TypeTest::String),
    ("IsBoolean", TypeTest::Boolean),
    ("IsTimestamp", TypeTest::Timestamp),
];

/// Whether a key names a data-test operator.
fn is_operator(key: &str) -> bool {
    key == "StringMatches"
        || TYPE_TESTS.iter().any(|(n, _)| *n == key)
        || COMPARISONS
            .iter()
            .any(|(n, _, _)| *n == key || key.strip_suffix("Path") == Some(n))
}

impl Rule {
    /// Compiles a top-level rule object (one element of `Choices`).
    ///
    /// `Next`, `Assign`, `Comment` and `Output` keys are left for the caller and not reported
    /// here; nested rules (inside `And`/`Or`/`Not`) must not have `Next`, and that is reported.
    pub fn compile(value: &Value, at: &JsonPointer, diags: &mut Diagnostics) -> Rule {
        Rule {
            raw: value.clone(),
            node: compile_node(value, at, diags, true),
        }
    }

    /// The rule as written.
    pub fn raw(&self) -> &Value {
        &self.raw
    }

    /// Evaluates the rule against the state's effective input.
    pub fn evaluate(&self, env: &Env<'_>) -> Result<bool, StatesError> {
        evaluate_node(&self.node, env)
    }
}

fn compile_node(value: &Value, at: &JsonPointer, diags: &mut Diagnostics, top: bool) -> Node {
    let Value::Object(map) = value else {
        diags.schema(at, "A choice rule must be an object");
        return Node::Invalid;
    };
    let mut ok = true;
    for key in map.keys() {
        let known = is_operator(key)
            || matches!(key.as_str(), "And" | "Or" | "Not" | "Variable" | "Comment")
            || (top && matches!(key.as_str(), "Next" | "Assign" | "Output"));
        if !known {
            ok = false;
            let msg = if key == "Next" {
                "Nested choice rules must not have 'Next'".to_owned()
            } else {
                format!("Field '{key}' is not supported in a choice rule")
            };
            diags.schema(&at.key(key), msg);
        }
    }
    let booleans: Vec<&str> = ["And", "Or", "Not"]
        .into_iter()
        .filter(|k| map.contains_key(*k))
        .collect();
    let operators: Vec<&String> = map.keys().filter(|k| is_operator(k)).collect();

    if let Some(first) = booleans.first() {
        if booleans.len() > 1 || !operators.is_empty() || map.contains_key("Variable") {
            diags.schema(
                at,
                "A choice rule must have exactly one of 'And', 'Or', 'Not' or a comparison with 'Variable'",
            );
            return Node::Invalid;
        }
        let here = at.key(first);
        let inner = &map[*first];
        let node = match *first {
            "Not" => Node::Not(Box::new(compile_node(inner, &here, diags, false))),
            op => match inner.as_array() {
                Some(items) if !items.is_empty() => {
                    let nodes = items
                        .iter()
                        .enumerate()
                        .map(|(i, r)| compile_node(r, &here.index(i), diags, false))
                        .collect();
                    if op == "And" {
                        Node::And(nodes)
                    } else {
                        Node::Or(nodes)
                    }
                }
                _ => {
                    diags.schema(
                        &here,
                        format!("'{op}' must be a non-empty array of choice rules"),
                    );
                    return Node::Invalid;
                }
            },
        };
        return if ok { node } else { Node::Invalid };
    }

    let variable = match map.get("Variable") {
        None => {
            diags.schema(at, "A choice rule must have 'Variable' and one comparison operator, or 'And', 'Or' or 'Not'");
            return Node::Invalid;
        }
        Some(Value::String(s)) => match Path::parse(s) {
            Ok(p) => Some(p),
            Err(e) => {
                diags.schema(
                    &at.key("Variable"),
                    format!("The field 'Variable' must be a valid JSONPath: {e}"),
                );
                None
            }
        },
        Some(_) => {
            diags.schema(
                &at.key("Variable"),
                "The field 'Variable' must be a string holding a JSONPath",
            );
            None
        }
    };
    let [op] = operators.as_slice() else {
        diags.schema(
            at,
            if operators.is_empty() {
                "A choice rule with 'Variable' must have one comparison operator".to_owned()
            } else {
                format!(
                    "A choice rule must have exactly one comparison operator, found {}",
                    operators
                        .iter()
                        .map(|s| format!("'{s}'"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            },
        );
        return Node::Invalid;
    };
    let comparator = compile_comparator(op, &map[op.as_str()], &at.key(op), diags);
    match (variable, comparator) {
        (Some(variable), Some(comparator)) if ok => Node::Test {
            variable,
            comparator,
        },
        _ => Node::Invalid,
    }
}

fn compile_comparator(
    op: &str,
    operand: &Value,
    at: &JsonPointer,
    diags: &mut Diagnostics,
) -> Option<Comparator> {
    let mut bad = |what: &str| {
        diags.schema(at, format!("The value of '{op}' must be {what}"));
        None
    };
    if let Some((_, test)) = TYPE_TESTS.iter().find(|(n, _)| *n == op) {
        return match operand {
            Value::Bool(b) => Some(Comparator::Is(*test, *b)),
            _ => bad("a boolean"),
        };
    }
    if op == "StringMatches" {
        return match operand.as_str().map(pattern) {
            Some(Ok(pieces)) => Some(Comparator::Matches(pieces)),
            Some(Err(e)) => bad(&format!("a valid pattern ({e})")),
            None => bad("a string"),
        };
    }
    if let Some((_, kind, rel)) = COMPARISONS.iter().find(|(n, _, _)| *n == op) {
        let fits = match kind {
            Kind::String => operand.is_string(),
            Kind::Numeric => operand.is_number(),
            Kind::Boolean => operand.is_boolean(),
            Kind::Timestamp => operand.as_str().and_then(timestamp).is_some(),
        };
        return if fits {
            Some(Comparator::Compare(
                *kind,
                *rel,
                Operand::Literal(operand.clone()),
            ))
        } else {
            bad(match kind {
                Kind::String => "a string",
                Kind::Numeric => "a number",
                Kind::Boolean => "a boolean",
                Kind::Timestamp => "an RFC 3339 timestamp string (e.g. 2016-03-14T01:59:00Z)",
            })
        };
    }
    let base = op.strip_suffix("Path")?;
    let (_, kind, rel) = COMPARISONS.iter().find(|(n, _, _)| *n == base)?;
    match operand.as_str().map(Path::parse) {
        Some(Ok(p)) => Some(Comparator::Compare(*kind, *rel, Operand::Path(p))),
        Some(Err(e)) => bad(&format!("a valid JSONPath ({e})")),
        None => bad("a string holding a JSONPath"),
    }
}

/// Splits a `StringMatches` pattern: `*` is any run of characters; `\*` and `\\` are literal.
fn pattern(p: &str) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut chars = p.chars();
    while let Some(c) = chars.next() {
        match c {
            '*' => {
                if !text.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(&mut text)));
                }
                if pieces.last() != Some(&Piece::Star) {
                    pieces.push(Piece::Star);
                }
            }
            '\\' => match chars.next() {
                Some(e @ ('*' | '\\')) => text.push(e),
                Some(other) => {
                    text.push('\\');
                    text.push(other);
                }
                None => return Err("it ends with an open backslash".into()),
            },
            c => text.push(c),
        }
    }
    if !text.is_empty() {
        pieces.push(Piece::Text(text));
    }
    Ok(pieces)
}

/// Whether `s` matches the pattern. A `*` matches any run, so the leftmost place of each text
/// between stars is always a right choice, and no choice is ever undone: time linear in the
/// pattern times the string. (Trying every split point instead took exponential time on
/// `*a*a*a…*b` against a run of `a`s: found by fuzzing.)
fn matches(pieces: &[Piece], s: &str) -> bool {
    let mut rest = s;
    let mut pieces = pieces;
    // A text before the first star is anchored at the start.
    if let Some((Piece::Text(t), tail)) = pieces.split_first() {
        let Some(r) = rest.strip_prefix(t.as_str()) else {
            return false;
        };
        rest = r;
        pieces = tail;
    }
    if pieces.is_empty() {
        return rest.is_empty();
    }
    // A text after the last star is anchored at the end.
    let middle = match pieces.split_last() {
        Some((Piece::Text(t), init)) => {
            let Some(r) = rest.strip_suffix(t.as_str()) else {
                return false;
            };
            rest = r;
            init
        }
        _ => pieces,
    };
    for piece in middle {
        if let Piece::Text(t) = piece {
            let Some(at) = rest.find(t.as_str()) else {
                return false;
            };
            rest = &rest[at + t.len()..];
        }
    }
    true
}

/// An RFC 3339 timestamp with a `T` separator, as AWS requires.
fn timestamp(s: &str) -> Option<DateTime<FixedOffset>> {
    if !matches!(s.as_bytes().get(10), Some(b'T')) {
        return None;
    }
    DateTime::parse_from_rfc3339(s).ok()
}

fn compare_numbers(a: &serde_json::Number, b: &serde_json::Number) -> Option<Ordering> {
    match (a.as_i64(), b.as_i64()) {
        (Some(x), Some(y)) => Some(x.cmp(&y)),
        _ => a.as_f64()?.partial_cmp(&b.as_f64()?),
    }
}

fn compare(kind: Kind, rel: Relation, left: &Value, right: &Value) -> bool {
    let ordering = match (kind, left, right) {
        (Kind::String, Value::String(a), Value::String(b)) => Some(a.as_str().cmp(b.as_str())),
        (Kind::Numeric, Value::Number(a), Value::Number(b)) => compare_numbers(a, b),
        (Kind::Boolean, Value::Bool(a), Value::Bool(b)) => {
            return rel == Relation::Equals && a == b;
        }
        (Kind::Timestamp, Value::String(a), Value::String(b)) => match (timestamp(a), timestamp(b))
        {
            (Some(a), Some(b)) => Some(a.cmp(&b)),
            _ => None,
        },
        _ => None,
    };
    ordering.is_some_and(|o| rel.holds(o))
}

fn condition_path_error(path: &Path) -> StatesError {
    StatesError::runtime(format!(
        "Invalid path '{}': The choice state's condition path references an invalid value.",
        path.text()
    ))
}

fn evaluate_node(node: &Node, env: &Env<'_>) -> Result<bool, StatesError> {
    match node {
        Node::Invalid => Ok(false),
        Node::And(rules) => {
            for r in rules {
                if !evaluate_node(r, env)? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
        Node::Or(rules) => {
            for r in rules {
                if evaluate_node(r, env)? {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        Node::Not(r) => Ok(!evaluate_node(r, env)?),
        Node::Test {
            variable,
            comparator,
        } => {
            let found = variable.select_ref(env);
            let owned;
            let value: Option<&Value> = match found {
                None => None,
                Some(Found::One(v)) => Some(v),
                Some(found) => {
                    owned = found.into_value();
                    Some(&owned)
                }
            };
            if let Comparator::Is(TypeTest::Present, want) = comparator {
                return Ok(value.is_some() == *want);
            }
            let Some(value) = value else {
                return Err(condition_path_error(variable));
            };
            Ok(match comparator {
                Comparator::Is(test, want) => {
                    let is = match test {
                        TypeTest::Null => value.is_null(),
                        TypeTest::Present => true,
                        TypeTest::Numeric => value.is_number(),
                        TypeTest::String => value.is_string(),
                        TypeTest::Boolean => value.is_boolean(),
                        TypeTest::Timestamp => value.as_str().and_then(timestamp).is_some(),
                    };
                    is == *want
                }
                Comparator::Matches(pieces) => value.as_str().is_some_and(|s| matches(pieces, s)),
                Comparator::Compare(kind, rel, Operand::Literal(right)) => {
                    compare(*kind, *rel, value, right)
                }
                Comparator::Compare(kind, rel, Operand::Path(p)) => {
                    let right = p.select(env).ok_or_else(|| condition_path_error(p))?;
                    compare(*kind, *rel, value, &right)
                }
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asl::eval::NoVariables;
    use serde_json::json;

    fn eval(rule: Value, input: Value) -> Result<bool, StatesError> {
        let mut d = Diagnostics::default();
        let r = Rule::compile(&rule, &JsonPointer::root(), &mut d);
        assert!(!d.has_errors(), "{rule}: {d:?}");
        let ctx = json!({"Execution": {"Input": input.clone()}});
        r.evaluate(&Env {
            input: &input,
            context: &ctx,
            variables: &NoVariables,
        })
    }

    #[test]
    fn evaluates_operators() {
        let table: &[(Value, Value, bool)] = &[
            (
                json!({"Variable": "$.v", "StringEquals": "a"}),
                json!({"v": "a"}),
                true,
            ),
            (
                json!({"Variable": "$.v", "StringEquals": "a"}),
                json!({"v": 1}),
                false,
            ),
            (
                json!({"Variable": "$.v", "StringLessThan": "b"}),
                json!({"v": "a"}),
                true,
            ),
            (
                json!({"Variable": "$.v", "StringGreaterThanEquals": "A"}),
                json!({"v": "AB"}),
                true,
            ),
            (
                json!({"Variable": "$.v", "StringEqualsPath": "$.w"}),
                json!({"v": "x", "w": "x"}),
                true,
            ),
            (
                json!({"Variable": "$.v", "NumericEquals": 1}),
                json!({"v": 1.0}),
                true,
            ),
            (
                json!({"Variable": "$.v", "NumericEquals": 0}),
                json!({"v": "0"}),
                false,
            ),
            (
                json!({"Variable": "$.v", "NumericLessThan": 2.5}),
                json!({"v": 2}),
                true,
            ),
            (
                json!({"Variable": "$.v", "NumericGreaterThanPath": "$.w"}),
                json!({"v": 3, "w": 2}),
                true,
            ),
            (
                json!({"Variable": "$.v", "NumericEquals": 9007199254740993_i64}),
                json!({"v": 9007199254740992_i64}),
                false,
            ),
            (
                json!({"Variable": "$.v", "BooleanEquals": true}),
                json!({"v": true}),
                true,
            ),
            (
                json!({"Variable": "$.v", "BooleanEquals": true}),
                json!({"v": "true"}),
                false,
            ),
            (
                json!({"Variable": "$.v", "TimestampEquals": "2012-10-09T19:00:55Z"}),
                json!({"v": "2012-10-09T21:00:55+02:00"}),
                true,
            ),
            (
                json!({"Variable": "$.v", "TimestampLessThan": "2012-10-09T19:00:56Z"}),
                json!({"v": "2012-10-09T19:00:55.5Z"}),
                true,
            ),
            (
                json!({"Variable": "$.v", "TimestampEquals": "2012-10-09T19:00:55Z"}),
                json!({"v": "2012-10-09 19:00:55Z"}),
                false,
            ),
            (
                json!({"Variable": "$.v", "StringMatches": "log-*.txt"}),
                json!({"v": "log-2024.txt"}),
                true,
            ),
            (
                json!({"Variable": "$.v", "StringMatches": "*"}),
                json!({"v": ""}),
                true,
            ),
            (
                json!({"Variable": "$.v", "StringMatches": "a\\*b"}),
                json!({"v": "a*b"}),
                true,
            ),
            (
                json!({"Variable": "$.v", "StringMatches": "a\\*b"}),
                json!({"v": "axb"}),
                false,
            ),
            (
                json!({"Variable": "$.v", "StringMatches": "*.é*"}),
                json!({"v": "x.éé"}),
                true,
            ),
            (
                json!({"Variable": "$.v", "IsNull": true}),
                json!({"v": null}),
                true,
            ),
            (
                json!({"Variable": "$.v", "IsPresent": true}),
                json!({}),
                false,
            ),
            (
                json!({"Variable": "$.v", "IsPresent": false}),
                json!({}),
                true,
            ),
            (
                json!({"Variable": "$.v", "IsNumeric": true}),
                json!({"v": 1.5}),
                true,
            ),
            (
                json!({"Variable": "$.v", "IsString": false}),
                json!({"v": 1}),
                true,
            ),
            (
                json!({"Variable": "$.v", "IsBoolean": true}),
                json!({"v": false}),
                true,
            ),
            (
                json!({"Variable": "$.v", "IsTimestamp": true}),
                json!({"v": "2016-03-14T01:59:00Z"}),
                true,
            ),
            (
                json!({"Variable": "$.v", "IsTimestamp": true}),
                json!({"v": "2016-03-14"}),
                false,
            ),
            (
                json!({"Variable": "$$.Execution.Input.v", "NumericLessThanEquals": 0}),
                json!({"v": 0}),
                true,
            ),
            (
                json!({"Variable": "$.v[*]", "IsPresent": true}),
                json!({}),
                true,
            ),
            (
                json!({"And": [{"Variable": "$.a", "IsPresent": true}, {"Variable": "$.a", "NumericEquals": 1}]}),
                json!({"a": 1}),
                true,
            ),
            // Short-circuit: the second test would fail on the missing path.
            (
                json!({"And": [{"Variable": "$.a", "IsPresent": true}, {"Variable": "$.a", "NumericEquals": 1}]}),
                json!({}),
                false,
            ),
            (
                json!({"Or": [{"Variable": "$.a", "IsPresent": false}, {"Variable": "$.a", "NumericEquals": 1}]}),
                json!({}),
                true,
            ),
            (
                json!({"Not": {"Variable": "$.a", "StringEquals": "x"}, "Next": "N"}),
                json!({"a": "y"}),
                true,
            ),
        ];
        for (rule, input, want) in table {
            match eval(rule.clone(), input.clone()) {
                Ok(got) => assert_eq!(got, *want, "{rule} on {input}"),
                Err(e) => panic!("{rule} on {input}: {e}"),
            }
        }
    }

    #[test]
    fn missing_paths_fail_at_runtime() {
        for (rule, input) in [
            (json!({"Variable": "$.v", "StringEquals": "a"}), json!({})),
            (json!({"Variable": "$.v", "IsNull": true}), json!({})),
            (
                json!({"Variable": "$.v", "NumericEqualsPath": "$.w"}),
                json!({"v": 1}),
            ),
        ] {
            let e = eval(rule.clone(), input).unwrap_err();
            assert_eq!(e.name(), "States.Runtime", "{rule}");
            assert!(e
                .cause
                .unwrap_or_default()
                .contains("condition path references an invalid value"));
        }
    }

    #[test]
    fn reports_bad_rules() {
        let table: &[(Value, &[&str])] = &[
            (json!({"StringEquals": "a", "Next": "X"}), &["/Choices/0"]),
            (json!({"Variable": "$.v", "Next": "X"}), &["/Choices/0"]),
            (
                json!({"Variable": "$.v", "StringEquals": "a", "NumericEquals": 1}),
                &["/Choices/0"],
            ),
            (
                json!({"Variable": "$.v", "NumericEquals": "1"}),
                &["/Choices/0/NumericEquals"],
            ),
            (
                json!({"Variable": "$.v", "BooleanEquals": 1}),
                &["/Choices/0/BooleanEquals"],
            ),
            (
                json!({"Variable": "$.v", "TimestampEquals": "yesterday"}),
                &["/Choices/0/TimestampEquals"],
            ),
            (
                json!({"Variable": "$.v", "IsNull": "true"}),
                &["/Choices/0/IsNull"],
            ),
            (
                json!({"Variable": "$.v", "StringEqualsPath": "nope"}),
                &["/Choices/0/StringEqualsPath"],
            ),
            (
                json!({"Variable": "v", "StringEquals": "a"}),
                &["/Choices/0/Variable"],
            ),
            (
                json!({"Variable": "$.v", "StringMatches": "a\\"}),
                &["/Choices/0/StringMatches"],
            ),
            (
                json!({"Variable": "$.v", "StringEquals": "a", "Bogus": 1}),
                &["/Choices/0/Bogus"],
            ),
            (json!({"And": []}), &["/Choices/0/And"]),
            (json!({"Or": {}}), &["/Choices/0/Or"]),
            (
                json!({"Not": {"Variable": "$.v", "IsNull": true, "Next": "X"}}),
                &["/Choices/0/Not/Next"],
            ),
            (
                json!({"And": [{"Variable": "$.v", "IsNull": true, "Next": "X"}]}),
                &["/Choices/0/And/0/Next"],
            ),
            (
                json!({"And": [{"Variable": "$.v", "IsNull": true}], "Variable": "$.v"}),
                &["/Choices/0"],
            ),
            (json!("rule"), &["/Choices/0"]),
        ];
        for (rule, at) in table {
            let mut d = Diagnostics::default();
            Rule::compile(rule, &JsonPointer::root().key("Choices").index(0), &mut d);
            let got: Vec<String> = d.iter().filter_map(|d| d.location_text()).collect();
            assert_eq!(got, *at, "{rule}: {d:?}");
        }
        let mut d = Diagnostics::default();
        Rule::compile(
            &json!({"Variable": "$.v", "IsNull": true, "Next": "X", "Assign": {}, "Comment": "c", "Output": {}}),
            &JsonPointer::root(),
            &mut d,
        );
        assert!(d.is_empty(), "{d:?}");
    }
}
